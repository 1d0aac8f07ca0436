import pytest

from tflearn_helpers.runtime import scale


def test_keyword_wins_over_environment(monkeypatch):
    monkeypatch.setenv("TFLEARN_SCALE", "cpu")
    assert scale.resolve("smoke", has_gpu=True) == "smoke"


def test_environment_then_hardware(monkeypatch):
    monkeypatch.setenv("TFLEARN_SCALE", "SMOKE ")
    assert scale.resolve(None, has_gpu=True) == "smoke"
    monkeypatch.delenv("TFLEARN_SCALE")
    assert scale.resolve(None, has_gpu=True) == "gpu"
    assert scale.resolve(None, has_gpu=False) == "cpu"


def test_unknown_profile_names_the_choices(monkeypatch):
    monkeypatch.setenv("TFLEARN_SCALE", "huge")
    with pytest.raises(ValueError, match="smoke, cpu, gpu"):
        scale.resolve(None, has_gpu=False)


def test_pick_follows_the_current_profile(monkeypatch):
    monkeypatch.setattr(scale, "_current", None)
    # set_current exports the profile; let monkeypatch restore it for the notebooks that follow
    monkeypatch.setenv("TFLEARN_SCALE", "smoke")
    scale.set_current("smoke")
    assert scale.pick(smoke=1, cpu=2, gpu=3) == 1
    assert scale.current() == "smoke"
    scale.set_current("gpu")
    assert scale.pick(smoke=1, cpu=2, gpu=3) == 3
