import pytest

from tflearn_helpers import cpu_speed


def test_unknown_settings_are_rejected_before_anything_runs():
    with pytest.raises(ValueError, match="course"):
        cpu_speed.compare(settings=("turbo",))


def test_compare_times_each_setting_in_its_own_process():
    runs = cpu_speed.compare(
        "small", image_size=16, batch=4, steps=2, settings=("course", "off"), timeout=300
    )
    assert runs["course"].onednn and not runs["off"].onednn
    assert all(len(r.timing.samples) == 2 and r.timing.median > 0 for r in runs.values())
