"""Timing and the figures derived from it: steps timed with their repeats, a ring all-reduce's
bytes, a pipeline's bubble (for lesson 00, the checks of lessons 01 and 03, benchmarks/).

Rules kept here once: warm-up steps (tracing, first allocation) are never timed, the
result of every timed step is forced to the host so asynchronous execution is not
mistaken for speed, and each measurement keeps its repeats so the spread can be shown.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from ..runtime import validate

__all__ = ["Timing", "pipeline_bubble", "ring_allreduce_bytes", "time_steps"]


@dataclass(frozen=True)
class Timing:
    """Seconds per step over ``len(samples)`` timed steps."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def stdev(self) -> float:
        return statistics.stdev(self.samples) if len(self.samples) > 1 else 0.0

    def rate(self, items_per_step: float) -> float:
        """Items (images, steps) per second, from the median step time."""
        return items_per_step / self.median

    def __str__(self) -> str:
        return f"{self.median * 1e3:.1f} ms/step (± {self.stdev * 1e3:.1f}, n={len(self.samples)})"


def time_steps(step, steps: int, warmup: int = 1) -> Timing:
    """Call ``step()`` ``warmup`` times untimed, then ``steps`` times, timing each call."""
    validate.counts(steps=steps)
    validate.whole_number("warmup", warmup, minimum=0)
    for _ in range(warmup):
        _block(step())
    samples = []
    for _ in range(steps):
        start = time.perf_counter()
        _block(step())
        samples.append(time.perf_counter() - start)
    return Timing(tuple(samples))


def ring_allreduce_bytes(size_bytes: float, n: int) -> float:
    """Bytes each replica sends in a ring all-reduce of ``size_bytes``: 2(n-1)/n * S."""
    validate.whole_number("n (the number of replicas)", n, minimum=1)
    return 2 * (n - 1) / n * size_bytes


def pipeline_bubble(stages: int, micro_batches: int) -> float:
    """Idle fraction of a GPipe-style pipeline: (K-1)/(M+K-1)."""
    validate.counts(stages=stages, micro_batches=micro_batches)
    return (stages - 1) / (micro_batches + stages - 1)


def _block(result) -> None:
    """Wait for TensorFlow's asynchronous work behind ``result`` to finish."""
    if result is None:
        return
    import tensorflow as tf

    for leaf in tf.nest.flatten(result):
        if hasattr(leaf, "numpy"):
            leaf.numpy()
