"""The setup cell of every notebook: ``setup_course(...)`` (taught in lesson 00).

It sets the environment variables TensorFlow reads at import (log level, oneDNN, legacy
Keras, the CPU allocator), then imports TensorFlow, creates the simulated devices a lesson
needs and prints what the learner has.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field

from ..measuring.report import format_table
from . import keras_fit, scratch, startup_noise
from . import scale as scale_mod
from .devices import (
    DEFAULT_GPU_MEMORY_MB,
    DevicePlan,
    apply_plan,
    cross_device_ops,
    plan_devices,
)

__all__ = ["setup_course"]

ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"
LEGACY_KERAS_ENV = "TF_USE_LEGACY_KERAS"


@dataclass
class CourseEnv:
    """What ``setup_course`` configured; ``devices`` are the compute devices to train on."""

    tf_version: str
    keras_version: str
    scale: str
    plan: DevicePlan
    devices: list[str]
    onednn: bool | None
    legacy_keras: bool
    colab: bool
    _strategies: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def simulated(self) -> bool:
        return self.plan.simulated

    def mirrored_strategy(self, num_devices: int | None = None):
        """The MirroredStrategy over the first ``num_devices`` devices, with an all-reduce
        that works on them (``plan.allreduce_algorithm``).

        One strategy per device count, made once: two MirroredStrategy objects with the
        default collective all-reduce over the same devices clash in one process
        (tensorflow/tensorflow#62790).
        """
        import tensorflow as tf

        n = num_devices or len(self.devices)
        if n > len(self.devices):
            raise ValueError(
                f"asked for {n} devices but only {len(self.devices)} are set up: "
                f"call setup_course(devices={n}) in the setup cell"
            )
        if n not in self._strategies:
            ops = cross_device_ops(self.plan.allreduce_algorithm)
            self._strategies[n] = tf.distribute.MirroredStrategy(
                self.devices[:n], cross_device_ops=ops
            )
        return self._strategies[n]

    def table(self) -> str:
        rows = [
            ("TensorFlow", self.tf_version),
            ("Keras", self.keras_version + (" (tf_keras, legacy)" if self.legacy_keras else "")),
            ("scale profile", self.scale),
            ("devices", f"{len(self.devices)} x {self.plan.kind}" + _sim_note(self.plan)),
            ("oneDNN CPU kernels", {True: "on", False: "off"}.get(self.onednn, "TF default")),
            ("running on Colab", "yes" if self.colab else "no"),
        ]
        rows += [(d, _device_kind(d)) for d in self.devices]
        return format_table(rows, ("item", "value"))


def setup_course(
    devices: int | None = None,
    *,
    scale: str | None = None,
    legacy_keras: bool = False,
    onednn: bool | None = None,
    gpu_memory_mb: int = DEFAULT_GPU_MEMORY_MB,
    intra_op_threads: int | None = None,
    programs: bool = False,
    verbose: bool = True,
) -> CourseEnv:
    """Configure TensorFlow for a lesson and print a table of what the learner has.

    devices: how many devices the lesson needs (simulated when the hardware has fewer).
    scale: "smoke", "cpu" or "gpu" (default: ``$TFLEARN_SCALE``, else by hardware).
    legacy_keras: use tf_keras (Keras 2) for the strategies Keras 3 dropped.
    onednn: force oneDNN CPU kernels on or off (default: the course setting, see lesson 00).
    intra_op_threads: threads one op may use (default: all cores); 1 lets ops on two
        simulated CPU devices run side by side instead of each taking every core.
    programs: the lesson starts Python programs; a process that imports TensorFlow for them
        starts now, beside this one's import, and each program forks from it in a moment.
    """
    scratch.claim()  # every temporary file of this kernel and its children goes in there
    _set_import_time_env(legacy_keras, onednn)
    if programs:  # imported here: its exit hooks must be registered after scratch's
        from ..programs import fork_server

        fork_server.prepare()  # the children's environment is complete: the same as ours
    startup_noise.ignore_misleading_warnings()
    with startup_noise.filtered():  # loading TensorFlow and its devices prints noise
        import tensorflow as tf

        if not legacy_keras:
            keras_fit.install()  # Keras 3's fit under a strategy can crash TensorFlow
        gpus = tf.config.list_physical_devices("GPU")
        if (
            intra_op_threads
            and intra_op_threads != tf.config.threading.get_intra_op_parallelism_threads()
        ):
            tf.config.threading.set_intra_op_parallelism_threads(intra_op_threads)
        profile = scale_mod.resolve(scale, has_gpu=bool(gpus))
        scale_mod.set_current(profile)
        plan = plan_devices(devices, len(gpus))
        apply_plan(plan, gpu_memory_mb)
        names = [d.name for d in tf.config.list_logical_devices(plan.kind)]
    _set_table_display()
    env = CourseEnv(
        tf_version=tf.__version__,
        keras_version=_keras_version(legacy_keras),
        scale=profile,
        plan=plan,
        devices=names,
        onednn=_onednn_on(),
        legacy_keras=legacy_keras,
        colab="google.colab" in sys.modules,
    )
    if verbose:
        print(env.table())
    return env


def course_onednn_default() -> bool:
    """The course turns oneDNN on for x86-64 CPUs when no GPU does the work.

    Measured by benchmarks/cpu_onednn.py: a ResNet-50 training step several times faster
    on a 2-core AVX2 CPU, where TensorFlow leaves oneDNN off (it only turns it on by itself
    on CPUs with AVX-512 class features).
    """
    return platform.machine().lower() in ("x86_64", "amd64") and not _has_nvidia_gpu()


def _set_table_display() -> None:
    """The lessons' tables are DataFrames: figures to 4 significant digits, text uncut."""
    import pandas as pd

    from ..measuring.report import format_value

    pd.set_option("display.float_format", format_value)
    pd.set_option("display.max_colwidth", None)


def _set_import_time_env(legacy_keras: bool, onednn: bool | None) -> None:
    wanted = {LEGACY_KERAS_ENV: "1" if legacy_keras else "0"}
    if onednn is not None:
        wanted[ONEDNN_ENV] = "1" if onednn else "0"
    elif ONEDNN_ENV not in os.environ and course_onednn_default():
        wanted[ONEDNN_ENV] = "1"  # elsewhere TensorFlow's own default stands
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # CPU memory statistics (get_memory_info) for the memory model, also with oneDNN off;
    # benchmarks/memory_vs_model.py measured no consistent slowdown from it
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")
    if "tensorflow" in sys.modules:
        changed = [k for k, v in wanted.items() if os.environ.get(k, "0") != v]
        if changed:
            raise RuntimeError(
                f"TensorFlow was imported before setup_course, so {', '.join(changed)} can no "
                "longer take effect. Restart the kernel and run the setup cell first."
            )
    os.environ.update(wanted)


def _onednn_on() -> bool | None:
    """True/False when set for this process, None when TensorFlow's own default decides
    (on only for CPUs with AVX512-VNNI, AVX512-BF16 or AMX, per TensorFlow 2.9+ notes)."""
    flag = os.environ.get(ONEDNN_ENV)
    return None if flag is None else flag.strip().lower() in ("1", "true")


def _has_nvidia_gpu() -> bool:
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidia0")


def _keras_version(legacy: bool) -> str:
    """The version of the Keras behind ``tf.keras`` (tf_keras when legacy)."""
    if legacy:
        import tf_keras

        return tf_keras.__version__
    import tensorflow as tf

    version = getattr(tf.keras, "__version__", None)
    if not version and not hasattr(tf.keras, "version"):  # TF 2.15 (lab 08b): Keras 2
        import keras

        return keras.__version__
    return version or tf.keras.version()


def _sim_note(plan: DevicePlan) -> str:
    if not plan.simulated:
        return " (real)" if plan.kind == "GPU" else ""
    return f" (simulated: {plan.per_physical} per physical {plan.kind})"


def _device_kind(name: str) -> str:
    return "logical " + name.rsplit("/device:", 1)[-1]
