import subprocess
import sys

import pytest

from tflearn_helpers import lesson_sizes, memory
from tflearn_helpers.runtime import doctor


def _doctor(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "tflearn_helpers", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_doctor_passes_on_this_machine():
    done = _doctor()
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "ok    2-replica MirroredStrategy step" in done.stdout
    assert "ok    loopback gRPC round trip" in done.stdout
    assert "ready" in done.stdout
    assert "local Slurm cluster (lesson 07): " in done.stdout
    assert "predicted peak memory per lesson" in done.stdout
    assert "every lesson fits" in done.stdout or "would not fit" in done.stdout


def test_doctor_fails_clearly_on_an_impossible_device_count():
    done = _doctor("--devices", "99")
    assert done.returncode == 1 and "devices=99 is not possible" in done.stderr


def test_doctor_gives_up_instead_of_hanging():
    done = _doctor("--timeout", "0.01")
    assert done.returncode == 2 and "did not finish within" in done.stderr


def test_memory_report_names_lessons_that_would_not_fit(monkeypatch, capsys):
    from types import SimpleNamespace

    from tflearn_helpers.runtime.devices import DevicePlan

    env = SimpleNamespace(plan=DevicePlan("CPU", 1, 4), devices=["a"] * 4, scale="cpu")
    monkeypatch.setattr(doctor, "available_ram", lambda: 64 * 2**20)
    doctor._memory_report(env)
    out = capsys.readouterr().out
    assert "warn  would not fit within 70% of memory: lessons 00" in out and "02" in out


def test_slurm_line_says_whether_lesson_07_can_start_its_cluster(monkeypatch):
    from tflearn_helpers.cluster import slurm

    if slurm.missing_programs():
        assert doctor._slurm_cluster()[0] == "warn"
    else:
        state, detail = doctor._slurm_cluster()
        assert state == "ok" and "2 nodes (" in detail and "came up idle in" in detail, detail
        too_many = doctor._slurm_cluster(nodes=1000)  # more nodes than cores: a reason
        assert too_many[0] == "warn" and "nodes=1000 is more than" in too_many[1]
    monkeypatch.setattr(slurm, "missing_programs", lambda: ["slurmctld"])
    state, detail = doctor._slurm_cluster()
    assert state == "warn" and "apt-get install slurm-wlm munge" in detail


# -- every lesson fits the GPUs learners have, and this machine --------------------------
@pytest.mark.parametrize("shape", doctor.SHAPES, ids=lambda s: s.name)
@pytest.mark.parametrize("lesson", lesson_sizes.LESSONS, ids=lambda lesson: lesson.number)
def test_every_lesson_fits_every_gpu_learners_have(lesson, shape):
    fit = doctor.fit_on_gpus(lesson, shape)
    assert fit.card_ok, f"lesson {lesson.number}: logical GPUs take over 90 % of {shape.name}"
    assert fit.share <= lesson_sizes.FRACTION, (
        f"lesson {lesson.number} on {shape.name}: predicted {fit.peak / memory.MiB:,.0f} MiB "
        f"per device, {fit.share:.0%} of {fit.limit / memory.MiB:,.0f} MiB: change {lesson.setting}"
    )


def test_shared_memory_fit_adds_every_device():
    lesson = lesson_sizes.LESSONS[0]
    fit = doctor.fit_on_shared_memory(lesson, 4, 10 * memory.MiB, "smoke")
    assert fit.devices == 4 and fit.peak == sum(lesson.peaks("smoke", 4))
    assert not fit.fits  # 4 x 12 MiB of matrices in 10 MiB
    assert doctor.rows([fit])[0][-1] == "NO"


def test_gpu_memory_is_nvidia_smis_figure_or_none():
    assert doctor.gpu_memory_mib() is None or doctor.gpu_memory_mib() > 0


def test_available_ram_is_psutils_figure_within_the_machine():
    import psutil

    got, total = doctor.available_ram(), psutil.virtual_memory().total
    assert 0 < got <= total
