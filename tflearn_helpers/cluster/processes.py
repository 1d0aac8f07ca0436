"""Read what a measuring child process printed (cpu_speed and memory_probe use it).

Such a child prints one JSON value on its last line of standard output. ``read`` waits
for it with a deadline, kills it when the deadline passes, and says what failed.
"""

from __future__ import annotations

import json
import subprocess


def read(proc: subprocess.Popen, timeout: float, what: str):
    """(the child's last stdout line as JSON, its stderr); TimeoutError / RuntimeError."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise TimeoutError(f"{what} took over {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{err[-2000:]}")
    return json.loads(out.strip().splitlines()[-1]), err
