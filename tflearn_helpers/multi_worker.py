"""Watching a multi-worker job from a notebook (taught in lesson 06).

A worker program (lesson 06's own, written from the notebook, or the package's
``scripts/multi_worker_train.py``) writes one JSON line per training step,
``progress-<loop>-<task>.jsonl``, and its final weights; these helpers read what a worker
wrote and pull the error out of a worker's log. Waiting for it is
``cluster.processes.wait_until``; comparing weights, ``mirrored.max_abs_difference``.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

__all__ = ["error_summary", "median_step_s", "progress", "steps", "weights"]

_ERROR_LINE = re.compile(r"^[\w.]*(Error|Exception)\b.*")


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
