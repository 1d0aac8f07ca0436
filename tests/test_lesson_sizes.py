import ast
import sys
from pathlib import Path

import pytest

from tflearn_helpers import lesson_sizes, memory
from tflearn_helpers.taught import lesson02, lesson03, lesson06

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import nbtools  # noqa: E402
import save_taught  # noqa: E402

# Where each lesson sets the batch and the task count of SMALL_MODELS: a name it binds to a
# literal, else the first positional argument of its first call of that name, else the first
# keyword of that name in any call.
WHERE = {
    "01": ("PER_REPLICA_BATCH", None),
    "04": ("GLOBAL_BATCH", "WORKERS"),
    "08": ("BATCH", "ps"),
    "09": ("regression_batches", "ps"),
}


def _lesson_code(number: str) -> list[str]:
    """The Python of a lesson's code cells, each ``%%writefile`` program's body included."""
    path = next((nbtools.ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    sources = [c.source for c in nbtools.read(path).cells if c.cell_type == "code"]
    programs = [s.split("\n", 1)[1] for s in sources if nbtools.is_program(s)]
    return [nbtools.python_of(s) for s in sources if not nbtools.is_program(s)] + programs


def _read(number: str):
    """(MLP shapes, optimizers, a function: name -> the value WHERE reads) of a lesson's code."""
    code = _lesson_code(number)
    constants = save_taught.lesson_constants(code)
    calls = []
    for source in code:
        try:
            calls += [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)]
        except SyntaxError:  # a program in another language (a Slurm batch script)
            pass

    def value(node):
        return constants.get(node.id) if isinstance(node, ast.Name) else ast.literal_eval(node)

    def name(call):
        return getattr(call.func, "attr", getattr(call.func, "id", ""))

    shapes, optimizers, kernels = set(), set(), []
    for node in calls:
        if name(node) == "Sequential" and isinstance(node.args[0], ast.List):
            layers = [c for c in node.args[0].elts if isinstance(c, ast.Call)]
            if [name(c) for c in layers] == ["Input", "Dense", "Dense"]:
                shape = layers[0].args[0] if layers[0].args else layers[0].keywords[0].value
                units = [value(c.args[0]) for c in layers[1:]]
                shapes.add((value(shape.elts[0]), *units))
        elif name(node) == "get_variable" and value(node.args[0]).endswith("/kernel"):
            kernels.append([value(e) for e in node.args[1].elts])
        elif name(node) in ("SGD", "GradientDescentOptimizer", "Adam"):
            momentum = any(k.arg == "momentum" for k in node.keywords)
            optimizers.add({"Adam": "adam"}.get(name(node), "momentum" if momentum else "sgd"))
        optimizers |= {k.value.value for k in node.keywords if k.arg == "optimizer"
                       and isinstance(k.value, ast.Constant)}  # fmt: skip
    for first, second in zip(kernels, kernels[1:], strict=False):
        if first[1] == second[0]:
            shapes.add((first[0], first[1], second[1]))

    def where(key):
        if key in constants:
            return constants[key]
        found = [n.args[0] for n in calls if name(n) == key and n.args]
        found += [k.value for n in calls for k in n.keywords if k.arg == key]
        return value(found[0])

    return shapes, optimizers, where


@pytest.mark.parametrize("number", sorted(lesson_sizes.SMALL_MODELS))
def test_each_small_model_is_the_one_its_lesson_trains(number):
    """lesson_sizes' model, batch, optimizer and tasks of a lesson, read from its code."""
    small = lesson_sizes.SMALL_MODELS[number]
    shapes, optimizers, where = _read(number)
    assert small.shape in shapes, (number, shapes)
    assert small.optimizer in optimizers, (number, optimizers)
    batch, tasks = WHERE[number]
    assert (small.batch, small.tasks) == (where(batch), tasks and where(tasks))


def test_a_drifted_model_is_caught():
    shapes, optimizers, where = _read("04")
    assert (20, 64, 10) not in shapes and "sgd" not in optimizers and where("GLOBAL_BATCH") != 32


def test_the_old_gpu_settings_of_lessons_02_and_03_did_not_fit():
    # lesson 02: 2 logical GPUs of 6,144 MiB, 64 images of 224x224 per replica, Adam
    resnet = lesson_sizes.resnet50(224)
    old_02 = memory.mirrored(resnet, 128, 2, "adam").total
    assert old_02 > lesson_sizes.FRACTION * 6144 * memory.MiB
    # lesson 03: 4 logical GPUs of 1,024 MiB, batch 64 at 224x224: fill-drain's first stage
    cuts = lesson_sizes.pipeline_cuts(resnet, 4)
    first = memory.pipeline(resnet, cuts, 64, 8, "fill_drain", "momentum")[0].total
    assert first > 1024 * memory.MiB


def test_pipeline_cuts_make_the_asked_number_of_stages():
    resnet = lesson_sizes.resnet50(32)
    for k in (2, 4):
        cuts = lesson_sizes.pipeline_cuts(resnet, k)
        assert len(cuts) == k - 1 and all(c.endswith("_out") for c in cuts)


def test_lesson_02_peak_is_its_worst_step_with_the_models_it_keeps():
    resnet = lesson_sizes.resnet50(224)
    strong = memory.one_device(resnet, lesson_sizes.STRONG_GLOBAL_BATCH["gpu"], "momentum").total
    training = memory.mirrored(resnet, 2 * lesson_sizes.PER_REPLICA_BATCH["gpu"], 2, "adam").total
    kept = 6 * resnet.parameter_bytes
    assert max(lesson_sizes.by_number("02").peaks("gpu", 2)) == kept + max(strong, training)
    # the old strong-scaling run (one device, 2 x 32 images) would not have fit
    old_strong = kept + memory.one_device(resnet, 64, "momentum").total
    assert (
        old_strong > lesson_sizes.FRACTION * lesson_sizes.by_number("02").gpu_memory_mb * memory.MiB
    )


def test_the_sizes_are_the_lessons_own_data():
    """lesson_sizes reads what tools/save_taught.py generated from the lessons (SETUP, SIZES);
    the model's steps assume these relations between a lesson's sizes."""
    assert lesson_sizes.by_number("02").gpu_memory_mb == lesson02.SETUP["gpu_memory_mb"]
    assert lesson_sizes.by_number("09").devices is None  # its setup asks for no devices
    scaling = lesson02.SIZES["SCALING_PER_REPLICA"]  # weak scaling: the training batch per replica
    assert {k: scaling[k] for k in ("cpu", "gpu")} == {
        k: lesson_sizes.PER_REPLICA_BATCH[k] for k in ("cpu", "gpu")
    }
    assert set(lesson06.SIZES["PROBE_BATCH"].values()) == {lesson_sizes.PROBE_BATCH}
    assert lesson03.SIZES["MICRO"]["gpu"] == lesson_sizes.MICRO_BATCHES


def test_lesson_02_sizes_at_smoke_and_cpu_are_the_lessons_own():
    for profile in ("smoke", "cpu"):
        assert (
            lesson_sizes.RESNET_IMAGE[profile] == 32
            and lesson_sizes.PER_REPLICA_BATCH[profile] == 16
        )
        assert lesson_sizes.BN_PER_REPLICA_BATCH[profile] == lesson_sizes.PER_REPLICA_BATCH[profile]
    assert lesson_sizes.STRONG_GLOBAL_BATCH == {"smoke": 2 * 64, "cpu": 2 * 16, "gpu": 32}


def test_planner_cases_are_what_lessons_02_and_03_predict():
    resnet = lesson_sizes.resnet50(224)
    case02, case03 = lesson_sizes.planner_case("02"), lesson_sizes.planner_case("03")
    assert case02.memory == resnet and case02.batch == 2 * lesson_sizes.PER_REPLICA_BATCH["gpu"]
    assert case02.predicted == memory.mirrored(resnet, case02.batch, 2, "adam")
    stages = memory.pipeline(
        resnet, lesson_sizes.pipeline_cuts(resnet, 2), case03.batch, 8, "fill_drain", "momentum"
    )
    assert case03.predicted.total == max(s.total for s in stages) and case03.optimizer == "momentum"
    assert case03.limit == lesson_sizes.by_number("03").gpu_memory_mb * memory.MiB
    with pytest.raises(ValueError, match="'02' and '03'"):
        lesson_sizes.planner_case("04")


def test_pipeline_stages_cut_like_pipeline_cuts_and_one_stage_is_the_whole_model():
    resnet = lesson_sizes.resnet50(32)
    cuts, stages = lesson_sizes.pipeline_stages(resnet, 2, 16, 4, "one_f_one_b", "adam")
    assert cuts == lesson_sizes.pipeline_cuts(resnet, 2)
    assert stages == memory.pipeline(resnet, cuts, 16, 4, "one_f_one_b", "adam")
    cuts, (whole,) = lesson_sizes.pipeline_stages(resnet, 1, 16)
    assert cuts == [] and whole == memory.pipeline(resnet, [], 16, 8, "fill_drain", "momentum")[0]
    with pytest.raises(ValueError, match="stages"):
        lesson_sizes.pipeline_stages(resnet, 0, 16)
