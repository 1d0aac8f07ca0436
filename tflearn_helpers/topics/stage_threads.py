"""Threads for pipeline stages (plumbing for lesson 03, whose cells write the schedules).

Lesson 03 runs one Python thread per stage; each walks its own list of forward and backward
passes. A stage's work is a ``tf.function`` call or a ``tape.gradient``, which run inside
TensorFlow's runtime without holding the GIL, so stages can really work at the same time.
"""

from __future__ import annotations

import threading

__all__ = ["run_concurrently"]


def run_concurrently(functions, timeout: float = 600) -> list:
    """Run each function in its own thread (one per pipeline stage), wait for all, and
    return their results in order; the first error raised in a thread is raised here.

    Plumbing for lesson 03's schedules: the schedule itself is the notebook's code. A
    thread still running after ``timeout`` seconds (e.g. waiting on a queue nobody fills)
    raises TimeoutError instead of hanging the notebook.
    """
    results, errors = [None] * len(functions), []

    def call(i, fn):
        try:
            results[i] = fn()
        except BaseException as err:  # reported in the caller's thread below
            errors.append(err)

    threads = [
        threading.Thread(target=call, args=(i, fn), daemon=True) for i, fn in enumerate(functions)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    if errors:
        raise errors[0]
    if any(thread.is_alive() for thread in threads):
        raise TimeoutError(f"a stage thread was still running after {timeout:.0f} s")
    return results
