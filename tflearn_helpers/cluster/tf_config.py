"""TF_CONFIG: build it and validate it (taught in lessons 04, 08 and 09).

TF_CONFIG is the JSON every task of a TensorFlow cluster reads to learn the cluster's
addresses and its own role: ``{"cluster": {"worker": ["host:port", ...], ...},
"task": {"type": "worker", "index": 0}}``.
"""

from __future__ import annotations

import json
import re

from ..runtime.validate import is_whole_number

__all__ = ["TFConfigError", "build", "validate"]

JOBS = ("chief", "worker", "ps", "evaluator")
_ADDRESS = re.compile(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


class TFConfigError(ValueError):
    """A TF_CONFIG that TensorFlow would misread; the message names the field."""


def build(cluster: dict[str, list[str]], task_type: str, index: int) -> dict:
    """The TF_CONFIG of one task, validated."""
    return validate({"cluster": cluster, "task": {"type": task_type, "index": index}})


def validate(config) -> dict:
    """Return TF_CONFIG as a dict, or raise TFConfigError naming the field that is wrong."""
    if isinstance(config, (str, bytes)):
        try:
            config = json.loads(config)
        except json.JSONDecodeError as err:
            raise TFConfigError(f"TF_CONFIG is not valid JSON: {err}") from None
    if not isinstance(config, dict):
        raise TFConfigError(f"TF_CONFIG must be a JSON object, got {type(config).__name__}")
    unknown = set(config) - {"cluster", "task", "environment", "rpc_layer"}
    if unknown:
        raise TFConfigError(f"TF_CONFIG has unknown keys {sorted(unknown)}")
    cluster = config.get("cluster")
    if not isinstance(cluster, dict) or not cluster:
        raise TFConfigError('TF_CONFIG["cluster"] must be a non-empty object of job -> addresses')
    seen = {}
    for job, addresses in cluster.items():
        where = f'TF_CONFIG["cluster"]["{job}"]'
        if job not in JOBS:
            raise TFConfigError(f"{where}: unknown job; jobs are {', '.join(JOBS)}")
        if not isinstance(addresses, list) or not addresses:
            raise TFConfigError(f"{where} must be a non-empty list of 'host:port' strings")
        if job in ("chief", "evaluator") and len(addresses) != 1:
            raise TFConfigError(f"{where} must have exactly one address, has {len(addresses)}")
        for i, address in enumerate(addresses):
            match = _ADDRESS.match(address) if isinstance(address, str) else None
            if not match or not 0 < int(match.group(2)) < 65536:
                raise TFConfigError(f"{where}[{i}] = {address!r} is not 'host:port'")
            if address in seen:
                raise TFConfigError(f"{where}[{i}] = {address!r} is also {seen[address]}")
            seen[address] = f"{job}[{i}]"
    task = config.get("task")
    if not isinstance(task, dict):
        raise TFConfigError('TF_CONFIG["task"] must be an object with "type" and "index"')
    task_type, index = task.get("type"), task.get("index", 0)
    if task_type == "evaluator" and task_type not in cluster:
        # TensorFlow allows it (multi_worker_util): the evaluator is not part of training
        cluster = {**cluster, "evaluator": ["(outside the training cluster)"]}
    if task_type not in cluster:
        raise TFConfigError(
            f'TF_CONFIG["task"]["type"] = {task_type!r} is not a job of the cluster '
            f"({', '.join(cluster)})"
        )
    if not is_whole_number(index):
        raise TFConfigError(f'TF_CONFIG["task"]["index"] must be an integer, got {index!r}')
    if not 0 <= index < len(cluster[task_type]):
        raise TFConfigError(
            f'TF_CONFIG["task"]["index"] = {index} but cluster["{task_type}"] has '
            f"{len(cluster[task_type])} address(es)"
        )
    return config
