"""Each lesson's sizes, and the peak bytes per device the memory model predicts for them.

The ``gpu`` profile runs wherever a GPU is found (Colab, Kaggle, a cloud box), so its
sizes are chosen from the memory model (``memory.py``, taught in lesson 00); ``doctor``
checks every lesson's predicted peak against the GPUs learners have. When one GPU is split
into a lesson's logical GPUs, each gets the lesson's ``gpu_memory_mb`` and together they
leave 10 % of the card to CUDA and cuDNN (``doctor.CARD_SHARE``). The sizes and device requests
are the lessons' own, read from ``taught.lessonNN`` (``SETUP``, ``SIZES``: generated from each
lesson's setup cell and ``pick`` lines): edit the lesson, run tools/save_taught.py.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..runtime import validate
from ..runtime.devices import DEFAULT_GPU_MEMORY_MB
from ..taught import lesson00, lesson01, lesson02, lesson03, lesson04, lesson06, lesson08, lesson09
from . import memory, models

__all__ = [
    "BN_PER_REPLICA_BATCH",
    "FRACTION",
    "LESSONS",
    "Lesson",
    "MICRO_BATCHES",
    "PER_REPLICA_BATCH",
    "PROBE_BATCH",
    "RESNET_IMAGE",
    "SMALL_MODELS",
    "STRONG_GLOBAL_BATCH",
    "by_number",
    "mlp",
    "pipeline_cuts",
    "pipeline_stages",
    "planner_case",
    "resnet50",
]

_BLOCK_END = re.compile(r"^conv\d+_block\d+_out$")
FRACTION = 0.7  # of a device's memory a lesson may plan to use at its peak


@dataclass(frozen=True)
class Lesson:
    """A lesson's device request and its predicted peak bytes per device, by profile."""

    number: str
    devices: int | None  # what its setup cell asks for
    gpu_memory_mb: int  # per logical GPU when one GPU is split
    setting: str  # the one setting to change when it does not fit
    peaks: Callable[[str, int], list[int]]  # (profile, devices) -> bytes per device


# The gpu-profile sizes: the largest that fit a T4's logical GPUs (tests/test_doctor.py checks).
RESNET_IMAGE = lesson02.SIZES["IMAGE"]
PER_REPLICA_BATCH = lesson02.SIZES["PER_REPLICA_BATCH"]  # global = this x N
BN_PER_REPLICA_BATCH = lesson02.SIZES["BN_BATCH / N"]  # lesson 02's BatchNorm comparison
# lesson 02's strong scaling: one device trains this whole global batch (smoke: a small net)
STRONG_GLOBAL_BATCH = lesson02.SIZES["STRONG_GLOBAL"]
PIPELINE_IMAGE = lesson03.SIZES["IMG"]
PIPELINE_BATCH = lesson03.SIZES["BATCH"]
MICRO_BATCHES = lesson03.SIZES["MICRO"]["gpu"]
TRANSFORMER_SHAPE = lesson06.SIZES["SHAPE"]  # lesson 06: the Transformer whose peak it measures
PROBE_BATCH = lesson06.SIZES["PROBE_BATCH"]["gpu"]  # lesson 06's batch for that measurement


@dataclass(frozen=True)
class SmallModel:
    """The small MLP a lesson trains (``models.mlp``) and one of its steps."""

    shape: tuple[int, int, int]  # features, hidden units, outputs
    batch: int  # examples of a step: per replica (01), global (04), per worker (08, 09)
    optimizer: str  # as ``memory.slots`` names it
    tasks: int | None = None  # its workers (04) or parameter servers (08, 09); 01: every device


#: The lessons' own models and steps: tests/test_lesson_sizes.py reads each figure from the
#: lesson's code, and fails when one drifts from it.
SMALL_MODELS = {
    "01": SmallModel((20, 128, 10), 32, "adam"),
    "04": SmallModel((16, 64, 1), 64, "momentum", tasks=2),
    "08": SmallModel((20, 32, 4), 128, "sgd", tasks=2),
    "09": SmallModel((8, 32, 1), 32, "sgd", tasks=2),
}


@functools.cache
def resnet50(image: int, policy: str = "float32") -> memory.ModelMemory:
    """The memory profile of ResNet-50 (``models.resnet``) at ``image`` pixels, 10 classes."""
    import keras

    keras.mixed_precision.set_global_policy(policy)
    try:
        return memory.profile(models.resnet(models.RESNET50_BLOCKS, (image, image, 3), 10))
    finally:
        keras.mixed_precision.set_global_policy("float32")


@functools.cache
def mlp(features: int, hidden: int, outputs: int) -> memory.ModelMemory:
    """The memory profile of ``models.mlp`` (lessons 01, 04, 08-09)."""
    return memory.profile(models.mlp(features, hidden, outputs))


def pipeline_cuts(mem: memory.ModelMemory, stages: int) -> list[str]:
    """Block-boundary cuts balancing parameters: the heaviest first stage any balance of
    ResNet-50 makes (early blocks have few parameters and most activations)."""
    from .model_parallel import balance

    names = [layer.name for layer in mem.layers if _BLOCK_END.match(layer.name)]
    segments = mem.split(names)
    last = balance([s.parameter_bytes for s in segments], stages)
    return [names[i] for i in last]


def pipeline_stages(
    mem: memory.ModelMemory,
    stages: int,
    batch: int,
    micro_batches: int = 8,
    schedule: str = "fill_drain",
    optimizer: str = "momentum",
) -> tuple[list[str], list[memory.Footprint]]:
    """The cuts ``pipeline_cuts`` makes (none for one stage) and each stage's Footprint under
    ``schedule`` (``memory.pipeline``): lesson 03's split, as lesson 06's planner asks for it."""
    validate.counts(stages=stages)
    cuts = pipeline_cuts(mem, stages) if stages > 1 else []
    return cuts, memory.pipeline(mem, cuts, batch, micro_batches, schedule, optimizer)


def _lesson00(profile: str, n: int) -> list[int]:
    side = lesson00.SIZES["MATMUL_SIZE"][profile]
    return [3 * side * side * 4] * n  # x, x + i and their product on every device


def _parameter_servers(number: str) -> list[int]:
    """Each ps task's bytes and a worker's (lessons 08 and 09)."""
    small = SMALL_MODELS[number]
    prints = memory.parameter_server(mlp(*small.shape), small.tasks, small.batch, small.optimizer)
    return [p.total for p in prints.values()]


def _lesson08(profile: str, n: int) -> list[int]:
    return _parameter_servers("08")


def _lesson09(profile: str, n: int) -> list[int]:
    return _parameter_servers("09")


def _lesson01(profile: str, n: int) -> list[int]:
    gradient = resnet50(32).trainable_bytes  # the all-reduce of a ResNet-50-sized gradient
    small = SMALL_MODELS["01"]
    replica = memory.mirrored(mlp(*small.shape), small.batch * n, n, small.optimizer)
    return [replica.total + 3 * gradient] * n  # input, output and one packed buffer


def _lesson02(profile: str, n: int) -> list[int]:
    """The worst of lesson 02's steps on its first device, with every model it keeps."""
    mem, per_replica = resnet50(RESNET_IMAGE[profile]), PER_REPLICA_BATCH[profile]
    steps = [
        memory.mirrored(mem, per_replica * n, n, "adam"),  # section 3: training
        memory.one_device(mem, BN_PER_REPLICA_BATCH[profile] * n, "sgd"),  # 4: 1-device grads
        memory.one_device(mem, STRONG_GLOBAL_BATCH[profile], "momentum"),  # 7: strong, 1 device
        memory.mirrored(mem, per_replica * n, n, "momentum"),  # 7: weak scaling, N devices
    ]
    # section 5's mixed-precision net (8x8 inputs, three convolutions) needs a few KiB: left out
    # alive meanwhile: section 3's ResNet and Adam's two slots, section 4's three copies
    kept = 6 * mem.parameter_bytes
    return [kept + max(step.total for step in steps)] * n


def _lesson03(profile: str, n: int) -> list[int]:
    mem, batch = resnet50(PIPELINE_IMAGE[profile]), PIPELINE_BATCH[profile]
    worst = [0] * n
    for k in sorted({2, min(4, n)}):
        for m, schedule in itertools.product(MICRO_BATCHES, memory.SCHEDULES):
            for i, stage in enumerate(pipeline_stages(mem, k, batch, m, schedule)[1]):
                worst[i] = max(worst[i], stage.total)
    return worst


def _lesson04(profile: str, n: int) -> list[int]:
    small = SMALL_MODELS["04"]
    step = memory.mirrored(mlp(*small.shape), small.batch, small.tasks, small.optimizer)
    return [step.total] * n


def _lesson06(profile: str, n: int) -> list[int]:
    """One training step of the measured Transformer (section 1), were it run on a device."""
    shape = memory.TransformerShape(**TRANSFORMER_SHAPE[profile])
    return [memory.transformer(shape, PROBE_BATCH, "adam").total] * n


def _lesson(module, setting: str, peaks) -> Lesson:
    setup = module.SETUP
    number = module.__name__.rsplit("lesson", 1)[1]
    memory_mb = setup.get("gpu_memory_mb", DEFAULT_GPU_MEMORY_MB)
    return Lesson(number, setup.get("devices"), memory_mb, setting, peaks)


LESSONS = (
    _lesson(lesson00, "the matrix size n", _lesson00),
    _lesson(lesson01, "PER_REPLICA_BATCH", _lesson01),
    _lesson(lesson02, "the per-replica batch (GLOBAL_BATCH = it x N)", _lesson02),
    _lesson(lesson03, "BATCH", _lesson03),
    _lesson(lesson04, "the global batch", _lesson04),
    _lesson(lesson06, "SHAPE and PROBE_BATCH", _lesson06),
    _lesson(lesson08, "BATCH", _lesson08),
    _lesson(lesson09, "the batch size", _lesson09),
)


@dataclass(frozen=True)
class PlannerCase:
    """A step lesson 02 or 03 predicts at its gpu profile, for lesson 06's planner to match."""

    lesson: str
    layout: str  # the planner's name for it
    model: object  # Keras' ResNet-50, built (for its layers), never trained
    memory: memory.ModelMemory
    batch: int  # global batch of one step
    optimizer: str
    limit: int  # bytes of the logical GPU the lesson carves from a T4
    predicted: memory.Footprint  # the lesson's prediction for its busiest device
    devices: int = 2
    fraction: float = FRACTION  # of ``limit`` the course plans to use


@functools.cache
def _keras_resnet50(image: int):
    import keras

    return keras.applications.ResNet50(weights=None, input_shape=(image, image, 3), classes=10)


@functools.cache
def planner_case(number: str) -> PlannerCase:
    """Lesson 02's data-parallel step (2 replicas, Adam) or lesson 03's two-stage fill-drain step
    (8 micro-batches, momentum SGD), on Keras' ResNet-50 at the gpu profile's sizes."""
    if number not in ("02", "03"):
        raise ValueError(f"the planner's cases are lessons '02' and '03', got {number!r}")
    model = _keras_resnet50((RESNET_IMAGE if number == "02" else PIPELINE_IMAGE)["gpu"])
    mem, limit = memory.profile(model), by_number(number).gpu_memory_mb * memory.MiB
    if number == "02":
        batch = 2 * PER_REPLICA_BATCH["gpu"]
        need = memory.mirrored(mem, batch, 2, "adam")
        return PlannerCase("02", "dp2 zero0 tp1 pp1", model, mem, batch, "adam", limit, need)
    batch = PIPELINE_BATCH["gpu"]
    need = max(pipeline_stages(mem, 2, batch)[1], key=lambda f: f.total)
    return PlannerCase("03", "dp1 zero0 tp1 pp2", model, mem, batch, "momentum", limit, need)


def by_number(number: str) -> Lesson:
    """The :data:`LESSONS` entry of lesson ``number`` ("02")."""
    return next(item for item in LESSONS if item.number == number)
