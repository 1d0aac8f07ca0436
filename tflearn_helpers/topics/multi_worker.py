"""Reading what a multi-worker job reported (lesson 04: ``scripts/multi_worker_train.py``).

A worker program prints one ``TFLEARN_EVENT {json}`` line per event (:mod:`..programs.events`):
a ``step`` event after each training step, a ``done`` event with its final weights. Lesson 04
reads a worker's output with these functions; the exercise checks and the benchmarks reuse them
from here, generated from the lesson by tools/save_taught.py. Comparing weights:
``mirrored.max_abs_difference``.
"""

from __future__ import annotations

from ..taught.lesson04 import final_weights, median_step_s

__all__ = ["final_weights", "median_step_s"]
