import pytest

from tflearn_helpers import lesson_sizes as ls
from tflearn_helpers import memory


@pytest.mark.parametrize("shape", ls.SHAPES, ids=lambda s: s.name)
@pytest.mark.parametrize("lesson", ls.LESSONS, ids=lambda lesson: lesson.number)
def test_every_lesson_fits_every_gpu_learners_have(lesson, shape):
    fit = ls.fit_on_gpus(lesson, shape)
    assert fit.card_ok, f"lesson {lesson.number}: logical GPUs take over 90 % of {shape.name}"
    assert fit.share <= ls.FRACTION, (
        f"lesson {lesson.number} on {shape.name}: predicted {fit.peak / memory.MiB:,.0f} MiB "
        f"per device, {fit.share:.0%} of {fit.limit / memory.MiB:,.0f} MiB: change {lesson.setting}"
    )


def test_the_old_gpu_settings_of_lessons_04_and_05_did_not_fit():
    # lesson 04: 2 logical GPUs of 6,144 MiB, 64 images of 224x224 per replica, Adam
    resnet = ls.resnet50(224)
    old_04 = memory.mirrored(resnet, 128, 2, "adam").total
    assert old_04 > ls.FRACTION * 6144 * memory.MiB
    # lesson 05: 4 logical GPUs of 1,024 MiB, batch 64 at 224x224: GPipe's first stage
    cuts = ls.pipeline_cuts(resnet, 4)
    first = memory.pipeline(resnet, cuts, 64, 8, "gpipe", "momentum")[0].total
    assert first > 1024 * memory.MiB


def test_pipeline_cuts_make_the_asked_number_of_stages():
    resnet = ls.resnet50(32)
    for k in (2, 4):
        cuts = ls.pipeline_cuts(resnet, k)
        assert len(cuts) == k - 1 and all(c.endswith("_out") for c in cuts)


def test_shared_memory_fit_adds_every_device():
    lesson = ls.LESSONS[0]
    fit = ls.fit_on_shared_memory(lesson, 4, 10 * memory.MiB, "smoke")
    assert fit.devices == 4 and fit.peak == sum(lesson.peaks("smoke", 4))
    assert not fit.fits  # 4 x 12 MiB of matrices in 10 MiB
    assert ls.rows([fit])[0][-1] == "NO"


def test_explain_says_peak_limit_and_setting():
    text = ls.explain("04", 2, 6912)
    assert "45%" in text and "6,912 MiB" in text and "per-replica batch" in text


def test_device_limits():
    assert ls.device_limit_bytes("GPU", True, 3328, 4) == 3328 * memory.MiB
    assert 0 < ls.device_limit_bytes("CPU", True, 1024, 4) <= ls.available_ram() // 4 + 2**20
    assert ls.gpu_memory_mib() is None or ls.gpu_memory_mib() > 0
