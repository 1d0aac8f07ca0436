"""Plan and apply simulated devices (taught in lesson 00).

One CPU can pose as N logical CPUs and one GPU as N logical GPUs (each with a memory
limit). They show the *semantics* of multi-device training (replicas, placement,
all-reduce), never a speed-up: logical devices share the same cores or the same GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import validate

__all__ = [
    "ALGORITHMS",
    "DEFAULT_GPU_MEMORY_MB",
    "MAX_SIMULATED",
    "DevicePlan",
    "DevicesAlreadyInitializedError",
    "apply_plan",
    "cross_device_ops",
    "plan_devices",
]

MAX_SIMULATED = 16
DEFAULT_GPU_MEMORY_MB = 1024


class DevicesAlreadyInitializedError(RuntimeError):
    """TensorFlow initialised its devices before the course could configure them."""


#: name -> what it is; the order is the order lesson 01 shows them in.
ALGORITHMS = {
    "collective": "CollectiveAllReduce (MirroredStrategy's default): RING on CPUs and "
    "logical GPUs, NCCL on real GPUs",
    "hierarchical_copy": "HierarchicalCopyAllReduce: sum within two halves, then between "
    "them, copy back (built for the 8-GPU DGX-1)",
    "reduce_to_one": "ReductionToOneDevice: everyone sends to one device, it sums and "
    "sends the result back",
    "nccl": "NcclAllReduce: NVIDIA's NCCL library; real GPUs only",
}


def cross_device_ops(algorithm: str):
    """The ``cross_device_ops`` object for ``MirroredStrategy`` (None = its default)."""
    import tensorflow as tf

    factories = {
        "collective": lambda: None,
        "hierarchical_copy": tf.distribute.HierarchicalCopyAllReduce,
        "reduce_to_one": tf.distribute.ReductionToOneDevice,
        "nccl": tf.distribute.NcclAllReduce,
    }
    if algorithm not in factories:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {list(ALGORITHMS)}")
    return factories[algorithm]()


@dataclass(frozen=True)
class DevicePlan:
    """What to do with the hardware: ``kind`` is "CPU" or "GPU"; ``per_physical`` is the
    number of logical devices to make from each physical one (1 = use as it is)."""

    kind: str
    physical: int
    per_physical: int

    @property
    def total(self) -> int:
        return self.physical * self.per_physical

    @property
    def simulated(self) -> bool:
        return self.per_physical > 1

    @property
    def allreduce_algorithm(self) -> str:
        """The all-reduce MirroredStrategy uses on these devices (a name of
        ``ALGORITHMS``): "hierarchical_copy" between logical GPUs of one GPU, else
        the default "collective". NCCL is not the alternative there: TensorFlow's default
        already uses RING collectives between logical GPUs (``mirrored_strategy.py``,
        ``_make_collective_ops_with_fallbacks``); hierarchical copy is plain copies through
        one device, with no collective ops."""
        return "hierarchical_copy" if self.kind == "GPU" and self.simulated else "collective"


def plan_devices(requested: int | None, n_gpus: int) -> DevicePlan:
    """Decide how to provide ``requested`` devices given ``n_gpus`` real GPUs.

    Real GPUs are used as they are when there are enough; otherwise each GPU (or the CPU)
    is split into logical devices.
    """
    if requested is not None and not (
        validate.is_whole_number(requested) and 1 <= requested <= MAX_SIMULATED
    ):
        raise validate.WholeNumberError(
            f"devices={requested!r} is not possible here: ask for 1 to {MAX_SIMULATED} devices, "
            "a whole number (simulated devices share the same hardware, so more teach nothing "
            "new)."
        )
    validate.whole_number("n_gpus", n_gpus, minimum=0)
    if n_gpus == 0:
        return DevicePlan("CPU", 1, requested or 1)
    if requested is None or n_gpus >= requested:
        return DevicePlan("GPU", n_gpus, 1)
    return DevicePlan("GPU", n_gpus, math.ceil(requested / n_gpus))


def apply_plan(plan: DevicePlan, gpu_memory_mb: int = DEFAULT_GPU_MEMORY_MB) -> None:
    """Configure TensorFlow's logical devices; must run before TensorFlow's runtime initialises."""
    import tensorflow as tf

    if plan.kind == "CPU":
        physical = tf.config.list_physical_devices("CPU")[:1]
        configs = [tf.config.LogicalDeviceConfiguration()] * plan.per_physical
    else:
        physical = tf.config.list_physical_devices("GPU")
        configs = [tf.config.LogicalDeviceConfiguration(memory_limit=gpu_memory_mb)]
        configs = configs * plan.per_physical
    try:
        for device in physical:
            if plan.simulated or plan.kind == "CPU":
                tf.config.set_logical_device_configuration(device, configs)
            else:
                tf.config.experimental.set_memory_growth(device, True)
    except RuntimeError as err:
        if _already_matches(plan):
            return  # the setup cell ran twice with the same request: nothing to change
        raise DevicesAlreadyInitializedError(
            "TensorFlow has already initialised its devices, so the course cannot create "
            f"{plan.total} {plan.kind} device(s) now ({err}). Restart the kernel "
            "(Kernel > Restart, or Runtime > Restart session on Colab) and run the setup "
            "cell before any other TensorFlow code."
        ) from None


def _already_matches(plan: DevicePlan) -> bool:
    import tensorflow as tf

    return len(tf.config.list_logical_devices(plan.kind)) == plan.total
