"""Shared test helpers: run a snippet in a fresh Python (TensorFlow's device setup happens once
per process); the TF_CONFIG a Kubernetes pod of a generated manifest would see."""

import re
import subprocess
import sys
import textwrap


def run_python(code: str, timeout: float = 120, env: dict | None = None):
    import os

    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})},
    )


def pod_tf_config(env: list[dict], index: int) -> dict:
    """The TF_CONFIG a pod with completion index ``index`` would see (validated)."""
    from tflearn_helpers.cluster import tf_config

    values = {"TASK_INDEX": str(index)}
    for item in env:
        if "value" in item:
            values[item["name"]] = re.sub(
                r"\$\((\w+)\)", lambda m: values.get(m[1], m[0]), item["value"]
            )
    if "TF_CONFIG" not in values:
        raise ValueError("this container env sets no TF_CONFIG")
    return tf_config.validate(values["TF_CONFIG"])
