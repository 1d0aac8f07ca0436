import pytest

from tflearn_helpers import timing


def test_time_steps_runs_warmup_untimed():
    calls = []
    result = timing.time_steps(lambda: calls.append(1), steps=3, warmup=2)
    assert len(calls) == 5 and len(result.samples) == 3
    assert result.median >= 0 and result.rate(10) > 0


def test_time_steps_rejects_bad_counts():
    with pytest.raises(ValueError):
        timing.time_steps(lambda: None, steps=0)


def test_models():
    assert timing.ring_allreduce_bytes(100, 1) == 0
    assert timing.ring_allreduce_bytes(100, 4) == 150
    assert timing.pipeline_bubble(2, 1) == 0.5
    assert timing.pipeline_bubble(4, 5) == pytest.approx(3 / 8)
    for bad in (
        lambda: timing.ring_allreduce_bytes(1, 0),
        lambda: timing.pipeline_bubble(0, 1),
    ):
        with pytest.raises(ValueError):
            bad()
