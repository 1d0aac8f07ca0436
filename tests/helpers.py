"""Run a snippet in a fresh Python: TensorFlow's device setup happens once per process."""

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
