"""``python -m tflearn_helpers doctor``: is this machine ready for the course?

An instructor runs it on each workshop machine (lesson 00 shows its output). It prints
versions and devices, trains one step on 2 replicas with MirroredStrategy, makes one
gRPC round trip on loopback, and exits non-zero with the reason when anything fails.
It says whether lesson 07 can start its local Slurm cluster here (a warning, not a failure:
without Slurm the lesson shows its scripts and still runs).
It then prints each lesson's predicted peak memory per device on this machine (the
memory model of lesson 00, ``lesson_sizes``) and names the lessons that would not fit; the
same fit, against the GPUs learners have (:data:`SHAPES`), is what tests/test_doctor.py
holds every lesson to: within ``lesson_sizes.FRACTION`` of each device's memory.
Every check has a deadline: a stuck check ends the doctor, it never hangs it.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from ..topics import memory
from ..topics.lesson_sizes import FRACTION, Lesson
from . import startup_noise
from .devices import plan_devices

__all__ = [
    "HEADERS",
    "SHAPES",
    "available_ram",
    "fit_on_gpus",
    "fit_on_shared_memory",
    "gpu_memory_mib",
    "main",
    "rows",
]


class CheckFailed(RuntimeError):
    """A doctor check ran and found this machine not ready."""


def main(devices: int = 2, timeout: float = 120.0) -> int:
    print(f"tflearn doctor: Python {platform.python_version()} on {platform.machine()}")
    watchdog = threading.Timer(timeout, _give_up, args=(timeout,))
    watchdog.daemon = True
    watchdog.start()
    try:
        from .environment import setup_course

        env = setup_course(devices=max(devices, 2))
        for name, check in (
            ("2-replica MirroredStrategy step", _mirrored_step),
            ("loopback gRPC round trip", _grpc_round_trip),
        ):
            start = time.perf_counter()
            detail = check(env)
            print(f"ok    {name}: {detail} ({time.perf_counter() - start:.1f} s)")
        print(f"info  lab 08b kernel (tflearn-legacy): {_legacy_kernel()}")
        print("{:<6}local Slurm cluster (lesson 07): {}".format(*_slurm_cluster()))
        _memory_report(env)
    except Exception as err:  # any failure is the instructor's answer: say it plainly
        print(f"FAIL  {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    finally:
        watchdog.cancel()
    print("ready: this machine can run the course.")
    return 0


def _mirrored_step(env) -> str:
    import numpy as np
    import tensorflow as tf

    strategy = env.mirrored_strategy(2)
    with strategy.scope():
        w = tf.Variable(tf.zeros((4, 1)))
    data = tf.data.Dataset.from_tensors((tf.ones((8, 4)), tf.ones((8, 1))))
    batch = next(iter(strategy.experimental_distribute_dataset(data)))

    @tf.function
    def step(x, y):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(tf.square(x @ w - y), global_batch_size=8)
            w.assign_sub(0.1 * tape.gradient(loss, w))

        strategy.run(replica_step, args=(x, y))

    step(*batch)
    copies = [v.numpy() for v in strategy.experimental_local_results(w)]
    if not all(np.allclose(copies[0], c) for c in copies) or np.allclose(copies[0], 0):
        raise CheckFailed(f"replicas disagree or did not update after one step: {copies}")
    return f"{strategy.num_replicas_in_sync} replicas updated identically"


def _grpc_round_trip(env) -> str:
    import tensorflow as tf

    from ..cluster import local_cluster_spec, start_server

    spec = local_cluster_spec(workers=1)
    server = start_server(spec, "worker", 0)
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:0"):
            total = tf.reduce_sum(tf.range(10))
        with tf.compat.v1.Session(server.target) as session:
            value = session.run(total, options=tf.compat.v1.RunOptions(timeout_in_ms=30_000))
    if value != 45:
        raise CheckFailed(f"the server computed {value}, expected 45")
    return f"a server on {spec['worker'][0]} ran a graph (it stops when the doctor exits)"


def _memory_report(env) -> None:
    """Each lesson's predicted peak per device here, and the lessons that would not fit."""
    from ..measuring.report import format_table
    from ..topics import lesson_sizes

    gpu_mib = gpu_memory_mib() if env.plan.kind == "GPU" else None
    if gpu_mib:
        shape = GpuShape("this machine", env.plan.physical, gpu_mib)
        fits = [fit_on_gpus(lesson, shape, env.scale) for lesson in lesson_sizes.LESSONS]
    else:
        ram = available_ram()
        fits = [
            fit_on_shared_memory(lesson, len(env.devices), ram, env.scale)
            for lesson in lesson_sizes.LESSONS
        ]
    print(f"info  predicted peak memory per lesson ({env.scale} profile):")
    print(format_table(rows(fits), HEADERS))
    tight = [f"{f.lesson}" for f in fits if not f.fits]
    if tight:
        print(f"warn  would not fit within {lesson_sizes.FRACTION:.0%} of memory: lessons "
              f"{', '.join(tight)}")  # fmt: skip
    else:
        print(f"ok    every lesson fits within {lesson_sizes.FRACTION:.0%} of memory")


def _legacy_kernel() -> str:
    jupyter = shutil.which("jupyter", path=os.path.dirname(sys.executable))
    if not jupyter:
        return "jupyter not found in this environment"
    listing = subprocess.run(
        [jupyter, "kernelspec", "list"], capture_output=True, text=True, timeout=60
    )
    return "installed" if "tflearn-legacy" in listing.stdout else "missing (make legacy-env)"


def _slurm_cluster(nodes: int = 2) -> tuple[str, str]:
    """("ok" or "warn", why): can lesson 07 start its ``nodes``-node Slurm cluster here?"""
    from ..cluster import slurm

    missing = slurm.missing_programs()
    if missing:
        return "warn", (
            f"Slurm is not installed (no {', '.join(missing)}): lesson 07 shows its scripts "
            f"without running them. As root on Debian or Ubuntu: {slurm.INSTALL_COMMAND}"
        )
    try:
        with slurm.LocalSlurm(nodes=nodes, timeout=30) as cluster:
            seconds, network = cluster.start_seconds, cluster.network
        return "ok", f"{nodes} nodes ({network} network) came up idle in {seconds:.1f} s, stopped"
    except Exception as err:  # a reason, not a crash: the rest of the course runs without it
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        return "warn", f"installed, but {nodes} nodes did not start: {type(err).__name__}: {first}"


def _give_up(timeout: float) -> None:
    startup_noise.to_terminal(
        f"FAIL  a check did not finish within {timeout:.0f} s: this machine is stuck or "
        "far too slow for the course (see lesson 00).\n"
    )
    os._exit(2)


# -- does each lesson fit? (the predicted peak per device against a machine's memory) --
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
