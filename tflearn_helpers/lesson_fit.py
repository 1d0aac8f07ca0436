"""Does every lesson fit? Each lesson's predicted peak (``lesson_sizes``) against the GPUs
learners have (:data:`SHAPES`) and this machine's memory (issue 13).

For every lesson and every :data:`SHAPES` entry, the predicted peak per device must stay
within ``lesson_sizes.FRACTION`` of that device's memory (``tests/test_lesson_fit.py``
checks it, no GPU needed). ``doctor`` prints the same table for the machine it runs on.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from . import memory
from .lesson_sizes import FRACTION, Lesson
from .runtime.devices import plan_devices

__all__ = [
    "GpuShape",
    "HEADERS",
    "SHAPES",
    "available_ram",
    "fit_on_gpus",
    "fit_on_shared_memory",
    "gpu_memory_mib",
    "rows",
]

CARD_SHARE = 0.9  # of a card the logical GPUs carved from it may take together


@dataclass(frozen=True)
class GpuShape:
    """A machine learners use: how many GPUs, and MiB per GPU as ``nvidia-smi`` reports."""

    name: str
    gpus: int
    memory_mib: int


SHAPES = (
    GpuShape("Colab/Kaggle 1x T4 16 GB", 1, 15_360),
    GpuShape("Kaggle 2x T4 16 GB", 2, 15_360),
    GpuShape("1x L4 24 GB", 1, 23_034),
    GpuShape("8x A100/H100 80 GB", 8, 81_920),
)


@dataclass(frozen=True)
class Fit:
    """One lesson on one machine: bytes per device predicted and available."""

    lesson: str
    machine: str
    devices: int
    peak: int  # the largest predicted peak over the lesson's devices
    limit: int  # bytes per device
    card_ok: bool  # the logical GPUs carved from one card leave it room

    @property
    def share(self) -> float:
        return self.peak / self.limit

    @property
    def fits(self) -> bool:
        return self.card_ok and self.share <= FRACTION


def fit_on_gpus(lesson: Lesson, shape: GpuShape, profile: str = "gpu") -> Fit:
    """How ``lesson`` lays out on ``shape`` (as ``setup_course`` would) and whether it fits."""
    plan = plan_devices(lesson.devices, shape.gpus)
    if plan.simulated:
        limit_mib = lesson.gpu_memory_mb
        card_ok = plan.per_physical * limit_mib <= CARD_SHARE * shape.memory_mib
    else:
        limit_mib, card_ok = shape.memory_mib, True
    peak = max(lesson.peaks(profile, plan.total))
    return Fit(lesson.number, shape.name, plan.total, peak, limit_mib * memory.MiB, card_ok)


def fit_on_shared_memory(lesson: Lesson, devices: int, available: int, profile: str) -> Fit:
    """Logical CPUs share one memory: the lesson fits when all its devices' peaks do."""
    peaks = lesson.peaks(profile, lesson.devices or devices)
    return Fit(lesson.number, "RAM, all devices together", len(peaks), sum(peaks), available, True)


def rows(fits: list[Fit]) -> list[tuple]:
    """Rows for a table with :data:`HEADERS`."""
    return [
        (f.lesson, f.machine, f.devices, f"{f.peak / memory.MiB:,.0f}",
         f"{f.limit / memory.MiB:,.0f}", f"{100 * f.share:.0f} %",
         "yes" if f.fits else "NO" + ("" if f.card_ok else " (card over-split)"))
        for f in fits
    ]  # fmt: skip


HEADERS = ("lesson", "machine", "devices", "peak MiB/device", "limit MiB", "share", "fits")


def gpu_memory_mib() -> int | None:
    """MiB of the first GPU as nvidia-smi reports it (None without nvidia-smi)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    query = [smi, "--query-gpu=memory.total", "--format=csv,noheader,nounits"]
    done = subprocess.run(query, capture_output=True, text=True, timeout=30)
    lines = done.stdout.split()
    return int(lines[0]) if done.returncode == 0 and lines else None


def available_ram() -> int:
    """Bytes of memory available to new work (psutil: Linux's MemAvailable, macOS, Windows)."""
    import psutil

    return psutil.virtual_memory().available
