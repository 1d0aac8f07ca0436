"""tflearn_helpers.lesson_fit: every lesson fits the GPUs learners have, and this machine."""

import pytest

from tflearn_helpers import lesson_fit, lesson_sizes, memory


@pytest.mark.parametrize("shape", lesson_fit.SHAPES, ids=lambda s: s.name)
@pytest.mark.parametrize("lesson", lesson_sizes.LESSONS, ids=lambda lesson: lesson.number)
def test_every_lesson_fits_every_gpu_learners_have(lesson, shape):
    fit = lesson_fit.fit_on_gpus(lesson, shape)
    assert fit.card_ok, f"lesson {lesson.number}: logical GPUs take over 90 % of {shape.name}"
    assert fit.share <= lesson_sizes.FRACTION, (
        f"lesson {lesson.number} on {shape.name}: predicted {fit.peak / memory.MiB:,.0f} MiB "
        f"per device, {fit.share:.0%} of {fit.limit / memory.MiB:,.0f} MiB: change {lesson.setting}"
    )


def test_shared_memory_fit_adds_every_device():
    lesson = lesson_sizes.LESSONS[0]
    fit = lesson_fit.fit_on_shared_memory(lesson, 4, 10 * memory.MiB, "smoke")
    assert fit.devices == 4 and fit.peak == sum(lesson.peaks("smoke", 4))
    assert not fit.fits  # 4 x 12 MiB of matrices in 10 MiB
    assert lesson_fit.rows([fit])[0][-1] == "NO"


def test_gpu_memory_is_nvidia_smis_figure_or_none():
    assert lesson_fit.gpu_memory_mib() is None or lesson_fit.gpu_memory_mib() > 0


def test_available_ram_is_psutils_figure_within_the_machine():
    import psutil

    got, total = lesson_fit.available_ram(), psutil.virtual_memory().total
    assert 0 < got <= total
