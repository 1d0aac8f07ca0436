import ast
import json
import pathlib
import re

import pytest

from tflearn_helpers import lesson_sizes, memory


def test_the_old_gpu_settings_of_lessons_02_and_03_did_not_fit():
    # lesson 02: 2 logical GPUs of 6,144 MiB, 64 images of 224x224 per replica, Adam
    resnet = lesson_sizes.resnet50(224)
    old_02 = memory.mirrored(resnet, 128, 2, "adam").total
    assert old_02 > lesson_sizes.FRACTION * 6144 * memory.MiB
    # lesson 03: 4 logical GPUs of 1,024 MiB, batch 64 at 224x224: GPipe's first stage
    cuts = lesson_sizes.pipeline_cuts(resnet, 4)
    first = memory.pipeline(resnet, cuts, 64, 8, "gpipe", "momentum")[0].total
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


def _assignments(cells: list[str]) -> dict[str, str]:
    found = {}
    for source in cells:
        for name, value in re.findall(r"^([A-Z_]+) = (.+)$", source, flags=re.MULTILINE):
            found.setdefault(name, value)
    return found


def _setup_and_sizes(notebook: str, number: str) -> dict[str, str]:
    """Check the setup cell asks for the lesson's devices and memory; return its sizes."""
    path = pathlib.Path(__file__).parents[1] / "notebooks" / notebook
    code = [
        "".join(cell["source"])
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
        if cell["cell_type"] == "code"
    ]
    limit = re.search(r"setup_course\(devices=(\d+), gpu_memory_mb=(\d+)[,)]", code[0])
    lesson = lesson_sizes.by_number(number)
    assert limit and (int(limit[1]), int(limit[2])) == (lesson.devices, lesson.gpu_memory_mb)
    return _assignments(code)


def _picked(sizes: dict[str, str], name: str) -> dict:
    """The keywords of a lesson's ``NAME = pick(smoke=..., cpu=..., gpu=...)`` line."""
    call = ast.parse(sizes[name].split("  #")[0]).body[0].value
    if isinstance(call, ast.BinOp):  # pick(...) * N
        call = call.left
    assert isinstance(call, ast.Call) and call.func.id == "pick", sizes[name]
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def test_lesson_02_writes_the_sizes_the_memory_model_checks():
    """Lesson 02 writes its sizes itself (issue 19); they must be the ones checked here."""
    sizes = _setup_and_sizes("02_resnet50_data_parallel.ipynb", "02")
    assert _picked(sizes, "IMAGE") == lesson_sizes.RESNET_IMAGE
    assert _picked(sizes, "PER_REPLICA_BATCH") == lesson_sizes.PER_REPLICA_BATCH
    assert sizes["GLOBAL_BATCH"] == "PER_REPLICA_BATCH * N"
    assert sizes["BN_BATCH"].split("  #")[0].endswith(" * N")
    assert _picked(sizes, "BN_BATCH") == lesson_sizes.BN_PER_REPLICA_BATCH
    assert _picked(sizes, "STRONG_GLOBAL") == lesson_sizes.STRONG_GLOBAL_BATCH
    scaling = _picked(sizes, "SCALING_PER_REPLICA")
    assert {k: scaling[k] for k in ("cpu", "gpu")} == {
        k: lesson_sizes.PER_REPLICA_BATCH[k] for k in ("cpu", "gpu")
    }
    assert int(sizes["GPU_MEMORY_MB"].split()[0]) == lesson_sizes.by_number("02").gpu_memory_mb


def test_lesson_02_sizes_at_smoke_and_cpu_are_the_lessons_own():
    for profile in ("smoke", "cpu"):
        assert (
            lesson_sizes.RESNET_IMAGE[profile] == 32
            and lesson_sizes.PER_REPLICA_BATCH[profile] == 16
        )
        assert lesson_sizes.BN_PER_REPLICA_BATCH[profile] == lesson_sizes.PER_REPLICA_BATCH[profile]
    assert lesson_sizes.STRONG_GLOBAL_BATCH == {"smoke": 2 * 64, "cpu": 2 * 16, "gpu": 32}


def test_lesson_03_writes_the_sizes_the_memory_model_checks():
    """Lesson 03 writes its sizes itself (issue 19); they must be the ones checked here."""
    sizes = _setup_and_sizes("03_resnet50_model_parallel.ipynb", "03")

    def picked(name):
        call = ast.parse(sizes[name].split("  #")[0]).body[0].value
        assert isinstance(call, ast.Call) and call.func.id == "pick", sizes[name]
        return {k.arg: ast.literal_eval(k.value) for k in call.keywords}

    assert picked("IMG") == lesson_sizes.PIPELINE_IMAGE
    assert picked("BATCH") == lesson_sizes.PIPELINE_BATCH
    assert picked("MICRO")["gpu"] == lesson_sizes.MICRO_BATCHES


def test_lesson_06_writes_the_sizes_the_memory_model_checks():
    """Lesson 06 writes its sizes itself; they must be the ones checked here."""
    path = pathlib.Path(__file__).parents[1] / "notebooks" / "06_sharding_and_memory.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    source = next("".join(c["source"]) for c in cells if "SHAPE = pick(" in "".join(c["source"]))
    picked = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            call = node.value
            if getattr(call.func, "id", None) == "pick":
                names = [ast.unparse(t) for t in node.targets]
                picked[names[0]] = {k.arg: eval(ast.unparse(k.value), {}) for k in call.keywords}
    assert picked["SHAPE"] == lesson_sizes.TRANSFORMER_SHAPE
    assert {b for b, _ in picked["(PROBE_BATCH, PROBE_STEPS)"].values()} == {
        lesson_sizes.PROBE_BATCH
    }
    assert "setup_course(devices=2)" in "".join(cells[1]["source"])
    assert lesson_sizes.by_number("06").devices == 2


def test_planner_cases_are_what_lessons_02_and_03_predict():
    resnet = lesson_sizes.resnet50(224)
    case02, case03 = lesson_sizes.planner_case("02"), lesson_sizes.planner_case("03")
    assert case02.memory == resnet and case02.batch == 2 * lesson_sizes.PER_REPLICA_BATCH["gpu"]
    assert case02.predicted == memory.mirrored(resnet, case02.batch, 2, "adam")
    stages = memory.pipeline(
        resnet, lesson_sizes.pipeline_cuts(resnet, 2), case03.batch, 8, "gpipe", "momentum"
    )
    assert case03.predicted.total == max(s.total for s in stages) and case03.optimizer == "momentum"
    assert case03.limit == lesson_sizes.by_number("03").gpu_memory_mb * memory.MiB
    with pytest.raises(ValueError, match="'02' and '03'"):
        lesson_sizes.planner_case("04")


def test_pipeline_stages_cut_like_pipeline_cuts_and_one_stage_is_the_whole_model():
    resnet = lesson_sizes.resnet50(32)
    cuts, stages = lesson_sizes.pipeline_stages(resnet, 2, 16, 4, "1f1b", "adam")
    assert cuts == lesson_sizes.pipeline_cuts(resnet, 2)
    assert stages == memory.pipeline(resnet, cuts, 16, 4, "1f1b", "adam")
    cuts, (whole,) = lesson_sizes.pipeline_stages(resnet, 1, 16)
    assert cuts == [] and whole == memory.pipeline(resnet, [], 16, 8, "gpipe", "momentum")[0]
    with pytest.raises(ValueError, match="stages"):
        lesson_sizes.pipeline_stages(resnet, 0, 16)
