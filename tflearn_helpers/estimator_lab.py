"""Running old programs and reading what they leave behind (taught in lab 01b).

Lab 01b runs the seed's Estimator program on TensorFlow 2.15, fixes it one error at a
time and reads the evidence: the exception each version raises, Estimator's
``loss = ..., step = N`` log lines, the checkpoints in a model_dir. Its programs run as
processes started by ``cluster.processes`` and report with ``cluster.events``. Nothing here imports
TensorFlow, so it works in both the main and the legacy environment.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from . import placement

__all__ = ["apply_fix", "checkpoint_steps", "logged_steps", "placement_lines", "run_source"]

_LOSS_LINE = re.compile(r"loss = ([-+0-9.eE]+|nan|inf), step = (\d+)")
_CHECKPOINT = re.compile(r"^model\.ckpt-(\d+)\.index$")


def apply_fix(source: str, old: str, new: str) -> str:
    """``source`` with the one occurrence of ``old`` replaced by ``new``."""
    count = source.count(old)
    if count != 1:
        raise ValueError(f"expected exactly one {old!r} in the source, found {count}")
    return source.replace(old, new)


def run_source(source: str, name: str = "<program>", namespace: dict | None = None):
    """Execute a program's text; return the exception it raised, or None if it finished."""
    code = compile(source, name, "exec")
    try:
        exec(code, {"__name__": "__main__"} if namespace is None else namespace)
    except Exception as err:  # the error is the result being studied
        return err
    return None


def logged_steps(log: str) -> list[tuple[float, int]]:
    """The (loss, global step) pairs of Estimator's ``loss = ..., step = N`` log lines."""
    return [(float(m[1]), int(m[2])) for m in _LOSS_LINE.finditer(log)]


def placement_lines(log: str) -> list[str]:
    """The lines of a log that are TensorFlow's device-placement log (``node: (Op): /job:...``)."""
    return [line for line in log.splitlines() if placement.PLACEMENT_LOG_LINE.match(line.strip())]


def checkpoint_steps(model_dir: str | os.PathLike) -> list[int]:
    """The global steps of the checkpoints in ``model_dir`` (``model.ckpt-N.index``), sorted."""
    path = Path(model_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"no model_dir at {path}")
    steps = (_CHECKPOINT.match(p.name) for p in path.iterdir())
    return sorted(int(m[1]) for m in steps if m)
