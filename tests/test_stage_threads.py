"""run_concurrently: the threads lesson 03's schedules run on."""


def test_run_concurrently_returns_results_raises_errors_and_times_out():
    import queue
    import time

    import pytest

    from tflearn_helpers.topics.stage_threads import run_concurrently

    handoff = queue.Queue()
    assert run_concurrently([lambda: handoff.get(timeout=5), lambda: handoff.put(7)]) == [7, None]

    def fail():
        raise ValueError("stage broke")

    with pytest.raises(ValueError, match="stage broke"):
        run_concurrently([fail, lambda: 1])
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        run_concurrently([lambda: time.sleep(3)], timeout=0.2)
    assert time.monotonic() - start < 2
