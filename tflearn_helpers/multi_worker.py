"""Watching a multi-worker job from a notebook (taught in lesson 06).

A worker program (lesson 06's own, written from the notebook, or the package's
``scripts/multi_worker_train.py``) writes one JSON line per training step,
``progress-<loop>-<task>.jsonl``, and its final weights; these helpers find the package's
script, read what a worker wrote, wait for it (always with a timeout) and pull the error
out of a worker's log.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path

_ERROR_LINE = re.compile(r"^[\w.]*(Error|Exception)\b.*")


def script_path() -> Path:
    """The training script every worker runs: ``tflearn_helpers/scripts/multi_worker_train.py``."""
    from . import scripts

    return scripts.path("multi_worker_train.py")


def progress(out, loop: str, task: str = "worker-0") -> list[dict]:
    """The step lines ({"step", "loss", "time"}) worker ``task`` wrote for ``loop``."""
    if loop not in ("fit", "custom"):
        raise ValueError(f"loop is 'fit' or 'custom', got {loop!r}")
    path = Path(out) / f"progress-{loop}-{task}.jsonl"
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]  # skip a torn last line


def steps(out, loop: str, task: str = "worker-0") -> list[int]:
    """The step counter after each step, in the order the worker wrote them."""
    return [p["step"] for p in progress(out, loop, task)]


def median_step_s(out, loop: str, task: str = "worker-0", skip: int = 2) -> float:
    """Median seconds between consecutive steps, leaving out the first ``skip`` (tracing)."""
    times = [p["time"] for p in progress(out, loop, task)][skip:]
    if len(times) < 2:
        raise ValueError(f"need at least {skip + 2} steps of {task} to time, found fewer")
    return statistics.median(b - a for a, b in zip(times, times[1:], strict=False))


def weights(path) -> list:
    """The arrays a worker saved with ``numpy.savez`` (in the model's weight order)."""
    import numpy as np

    with np.load(Path(path)) as data:
        return [data[f"arr_{i}"] for i in range(len(data.files))]


def max_abs_diff(a: list, b: list) -> float:
    """Largest absolute difference between two lists of same-shaped arrays."""
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b, strict=True)):
        raise ValueError("the two weight lists have different lengths or shapes")
    return max(float(abs(x - y).max()) for x, y in zip(a, b, strict=True))


def wait_until(condition, timeout: float, what: str, poll: float = 0.05, cluster=None):
    """Poll ``condition()`` until it is truthy and return its value; raise TimeoutError
    (with every task's log tail when ``cluster`` is given) after ``timeout`` seconds."""
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            tails = ""
            if cluster is not None:
                tails = "".join(
                    f"\n--- {job}:{i} ---\n{cluster.logs(job, i)[-800:]}"
                    for job, i in cluster.procs
                )
            raise TimeoutError(f"waited {timeout:.0f} s for {what}{tails}")
        time.sleep(poll)


def error_summary(log: str, width: int = 240) -> str:
    """The exception a worker died with: its first line (cut to ``width``) and, when the
    message ran over several lines, its last line."""
    lines = log.rstrip().splitlines()
    starts = [i for i, line in enumerate(lines) if _ERROR_LINE.match(line)]
    if not starts:
        return ""
    first = lines[starts[-1]]
    summary = first if len(first) <= width else first[:width] + " ..."
    last = lines[-1].strip()
    return summary if last == first.strip() else f"{summary}\n  ... {last[:width]}"
