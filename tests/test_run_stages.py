"""Lesson 03's stage runner (generated into taught/lesson03.py): a failing stage fails the step
at once with its own error, and the stages waiting on it leave instead of waiting out a queue."""

import queue
import threading
import time

import pytest

from tflearn_helpers.taught.lesson03 import from_neighbour, run_stages


def test_every_stage_runs_and_hands_over_through_its_queue():
    link, got = queue.Queue(), []

    def work(s, stop):
        if s == 0:
            link.put("activation")
        else:
            got.append(from_neighbour(link, stop))

    run_stages(work, 2, timeout=10)
    assert got == ["activation"]


def test_a_failing_stage_raises_its_error_at_once_and_the_waiting_stage_leaves():
    left = threading.Event()

    def work(s, stop):
        if s == 0:
            time.sleep(0.2)
            raise ValueError("stage 0 broke")
        try:
            from_neighbour(queue.Queue(), stop)  # nothing will ever come
        finally:
            left.set()

    start = time.monotonic()
    with pytest.raises(ValueError, match="stage 0 broke"):
        run_stages(work, 2, timeout=60)
    assert time.monotonic() - start < 5
    assert left.wait(2), "the waiting stage is still waiting"


def test_a_stuck_step_raises_timeout_and_releases_its_stages():
    left = threading.Event()

    def work(s, stop):
        try:
            from_neighbour(queue.Queue(), stop)
        finally:
            left.set()

    with pytest.raises(TimeoutError, match="2 stage"):
        run_stages(work, 2, timeout=0.3)
    assert left.wait(2)
