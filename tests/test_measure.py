import pytest

from tflearn_helpers import measure


def test_time_steps_runs_warmup_untimed():
    calls = []
    timing = measure.time_steps(lambda: calls.append(1), steps=3, warmup=2)
    assert len(calls) == 5 and len(timing.samples) == 3
    assert timing.median >= 0 and timing.rate(10) > 0


def test_time_steps_rejects_bad_counts():
    with pytest.raises(ValueError):
        measure.time_steps(lambda: None, steps=0)


def test_models():
    assert measure.ring_allreduce_bytes(100, 1) == 0
    assert measure.ring_allreduce_bytes(100, 4) == 150
    assert measure.pipeline_bubble(2, 1) == 0.5
    assert measure.pipeline_bubble(4, 5) == pytest.approx(3 / 8)
    for bad in (
        lambda: measure.ring_allreduce_bytes(1, 0),
        lambda: measure.pipeline_bubble(0, 1),
    ):
        with pytest.raises(ValueError):
            bad()
