"""Reading what a multi-worker job wrote (lesson 04's workers, ``scripts/multi_worker_train.py``).

A worker program writes one JSON line per training step, ``progress-<loop>-<task>.jsonl``, and
its final weights. Defined in lesson 04 (notebooks/04_multi_worker.ipynb, section
2), which reads the files with these same functions; the exercise checks and the benchmarks
reuse them from here, and tests/test_multi_worker.py checks that they are the lesson's code
(argument checks aside). Comparing weights: ``mirrored.max_abs_difference``.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

__all__ = ["median_step_s", "progress", "worker_weights"]


def progress(out, loop: str, task: str = "worker-0") -> list[dict]:
    """The step lines ({"step", "loss", "time"}) worker ``task`` wrote for ``loop``."""
    if loop not in ("fit", "custom"):
        raise ValueError(f"loop is 'fit' or 'custom', got {loop!r}")
    path = Path(out) / f"progress-{loop}-{task}.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.endswith("}")]


def median_step_s(out, loop: str, task: str = "worker-0", skip: int = 2) -> float:
    """Median seconds between consecutive steps, leaving out the first ``skip`` (tracing)."""
    times = [p["time"] for p in progress(out, loop, task)][skip:]
    _check_timed(times, task, skip)
    return statistics.median(b - a for a, b in zip(times, times[1:], strict=False))


def _check_timed(times: list, task: str, skip: int) -> None:
    if len(times) < 2:
        raise ValueError(f"need at least {skip + 2} steps of {task} to time, found fewer")


def worker_weights(path) -> list:
    """The arrays a worker saved with ``numpy.savez`` (in the model's weight order)."""
    import numpy as np

    with np.load(path) as saved:
        return [saved[f"arr_{i}"] for i in range(len(saved.files))]
