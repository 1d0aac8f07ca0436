"""Each check against the wrong answers derived from its solution (its mutation table), and
against right answers written differently from the solution (its right-answer table).

``tests/answers/lessonNN.MUTATIONS`` (test data: kept out of the package, which holds only the
checks) lists, per exercise, plausible mistakes as edits of the exercise's cells in the solution
notebook (the cell that calls its check, and the solution cells just before it).
tests/mutation_runner.py runs the lesson's solution cells in a fresh process, each mutated
exercise beside the right one; these tests read what it recorded: every mutation is answered
"wrong" with a hint that does not give the answer away, every solution "right", the unfilled
exercises "not attempted", and no cell shows a question's answer above it. ``RIGHT_ANSWERS``
lists, per exercise, other ways of writing the answer that the exercise's text allows (a
learner's defaults, guards, other allowed sizes): each is "right".
"""

from __future__ import annotations

import json
import re

import pytest
from answers import (
    lesson00,
    lesson01,
    lesson02,
    lesson03,
    lesson04,
    lesson05,
    lesson06,
    lesson07,
    lesson08,
    lesson09,
)
from mutation_runner import checked_id, exercise_cells, mutate_cells, solution_cells, strip_code

from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG

TABLES = {
    "00": lesson00.MUTATIONS,
    "01": lesson01.MUTATIONS,
    "02": lesson02.MUTATIONS,
    "03": lesson03.MUTATIONS,
    "04": lesson04.MUTATIONS,
    "05": lesson05.MUTATIONS,
    "06": lesson06.MUTATIONS,
    "07": lesson07.MUTATIONS,
    "08": lesson08.MUTATIONS,
    "09": lesson09.MUTATIONS,
}
# lessons whose checks have a right-answer table (RIGHT_ANSWERS, at least 2 per check)
RIGHT_TABLES = {
    "00": lesson00.RIGHT_ANSWERS,
    "01": lesson01.RIGHT_ANSWERS,
    "02": lesson02.RIGHT_ANSWERS,
    "03": lesson03.RIGHT_ANSWERS,
    "04": lesson04.RIGHT_ANSWERS,
    "05": lesson05.RIGHT_ANSWERS,
    "06": lesson06.RIGHT_ANSWERS,
    "07": lesson07.RIGHT_ANSWERS,
    "08": lesson08.RIGHT_ANSWERS,
    "09": lesson09.RIGHT_ANSWERS,
}
# what a mutation's hint must say, and must not (tests/answers/lessonNN.HINTS and HINTS_WITHOUT:
# (exercise, mutation) -> words), where a unit test used to check that mistake's hint in a
# process of its own
_MODULES = (lesson00, lesson01, lesson02, lesson03, lesson04, lesson05, lesson06, lesson07,
            lesson08, lesson09)  # fmt: skip
HINTS = {k: v for m in _MODULES for k, v in getattr(m, "HINTS", {}).items()}
HINTS_WITHOUT = {k: v for m in _MODULES for k, v in getattr(m, "HINTS_WITHOUT", {}).items()}
CASES = [
    pytest.param(exercise_id, name, id=f"{exercise_id}: {name}")
    for table in TABLES.values()
    for exercise_id, mutations in table.items()
    for name, _, _ in mutations
]
RIGHT_CASES = [
    pytest.param(exercise_id, name, id=f"{exercise_id}: {name}")
    for table in RIGHT_TABLES.values()
    for exercise_id, answers in table.items()
    for name, _, _ in answers
]
# What a hint or a printed output must never contain, beyond the solution's own lines: the
# calls that are the answer, and (for the quick questions) the fact the question asks for.
SECRETS = {
    "00.1": ["list_logical_devices("],
    "00.2": ["tf.device(", "tf.matmul", "linalg"],
    "00.5": ["set_logical_device_configuration", "set_log_device_placement"],
    "01.2": ["experimental_distribute_dataset", "distribute_datasets_from_function"],
    "01.3": ["compute_average_loss", "scale_regularization_loss", "ReduceOp.SUM"],
    "01.6": ["44.7", "4.472e+07", "44727"],
    "01.8": ["with strategy.scope():"],
    "02.1": ["interleave(", "num_parallel_calls", "deterministic=True"],
    "02.2": ["latest_checkpoint(", ".iterations"],
    "02.3": ["synchronized=True", "experimental_distribute_dataset"],
    "02.4": ["compute_average_loss"],
    "03.2": ["M >= 27", "M ≥ 27", "27 micro-batches"],
    "04.4": ['"index": index', "json.dumps("],
    "04.8": ["save_freq=", "delete_checkpoint", "BackupAndRestore("],
    "05.1": ["tf.split(", "tf.concat("],
    "05.2": ["tf.cast(", "tf.bfloat16)"],
    "06.1": ["merge_call(", "reduce_to(", "experimental_local_results("],
    "06.2": ["tf.add_n(", "tf.split("],
    "06.3": ["custom_gradient", "recompute_grad", "merge_call(", "reduce_to(", "all_gather("],
    "08.1": ["replica_device_setter(", "worker_device="],
    "08.3": ["a - b - 1"],
    "08.5": ["SyncReplicasOptimizer", "make_session_run_hook", "replicas_to_aggregate"],
    "09.1": ["FixedShardsPartitioner", "variable_partitioner="],
    "09.2": [
        "create_per_worker_dataset(",
        "coordinator.schedule(",
        "coordinator.join(",
        "strategy.run(",
        "@tf.function",
        ".repeat(",
        "apply_gradients(",
    ],
}
SHOWN_ABOVE = {  # printed before the question, these would answer it
    "00.3": re.compile(r"kernel.*(CPU|GPU):\d"),
    "01.6": re.compile(r"44\.7|4\.47e"),
    # 01.9 (was 04.3): the table of each strategy's largest |w - w_OneDevice| used to print
    # above it. "04.3" stays for the test of the scan below, until that test is renamed.
    "01.9": re.compile(r"max \|w - w_one\||took the one-device step"),
    "04.3": re.compile(r"max \|w - w_one\||took the one-device step"),
    "08.4": re.compile(r"logits/kernel.*ps:\d"),
}


@pytest.fixture(scope="session")
def lesson_run(request):
    """The runner's record of a lesson: each lesson runs once per test session, in a process
    of its own (tests/conftest.py starts them all at the first call)."""
    request.config.mutation_runs.start()
    records = {}

    def run(lesson: str) -> dict:
        if lesson not in records:
            done, out = request.config.mutation_runs[lesson].result()
            assert done.returncode == 0, _crash_report(done.stderr)
            records[lesson] = json.loads(out.read_text())
        return records[lesson]

    return run


def _crash_report(stderr: str) -> str:
    """What a runner that died printed: from faulthandler's "Fatal Python error" on (the
    crashing thread's stack first), else the end of its standard error."""
    start = stderr.find("Fatal Python error")
    return stderr[start : start + 6000] if start >= 0 else stderr[-3000:]


def _cells(exercise_id: str) -> list[str]:
    """The exercise's solution cells (tests/mutation_runner.py: ``exercise_cells``)."""
    cells = solution_cells(exercise_id.split(".")[0])
    i = next(i for i, s in enumerate(cells) if checked_id(s) == exercise_id)
    return [cells[j] for j in exercise_cells(cells)[i]]


def _cell(exercise_id: str) -> str:
    return "\n".join(_cells(exercise_id))


def _answer_lines(exercise_id: str) -> list[str]:
    """The lines the learner writes (what the exercise notebook does not have)."""
    source = _cell(exercise_id)
    stub = set(strip_code(source).splitlines())
    return [
        line.strip()
        for line in source.splitlines()
        if line not in stub and len(line.strip()) > 12 and "SOLUTION" not in line
    ]


def _gives_away(exercise_id: str, text: str) -> list[str]:
    secrets = _answer_lines(exercise_id) + SECRETS.get(exercise_id, [])
    return [secret for secret in secrets if secret in text]


@pytest.mark.parametrize("lesson", sorted(TABLES))
def test_every_check_has_a_mutation_table_that_applies(lesson):
    import importlib

    from tflearn_helpers import checks

    importlib.import_module(f"tflearn_helpers.checks.lesson{lesson}")  # registers its checks
    registered = {k for k in checks._REGISTRY if k.startswith(lesson + ".")}
    asked = {checked_id(s) for s in solution_cells(lesson)} - {None}
    assert set(TABLES[lesson]) == registered == asked
    for exercise_id, mutations in TABLES[lesson].items():
        assert len(mutations) >= 3, exercise_id
        names = [name for name, _, _ in mutations]
        assert len(set(names)) == len(names), exercise_id
        for name, old, new in mutations:
            assert mutate_cells(_cells(exercise_id), old, new) != _cells(exercise_id), name


def test_every_expected_hint_names_a_mutation_of_the_table():
    for exercise_id, name in {*HINTS, *HINTS_WITHOUT}:
        assert name in {n for n, _, _ in TABLES[exercise_id.split(".")[0]][exercise_id]}, name


@pytest.mark.parametrize("lesson", sorted(RIGHT_TABLES))
def test_every_check_has_a_right_answer_table_that_applies(lesson):
    table = RIGHT_TABLES[lesson]
    assert set(table) == set(TABLES[lesson])
    wrong = {(old, new) for mutations in TABLES[lesson].values() for _, old, new in mutations}
    for exercise_id, answers in table.items():
        assert len(answers) >= 2, exercise_id
        names = [name for name, _, _ in answers]
        assert len(set(names)) == len(names), exercise_id
        for name, old, new in answers:
            assert mutate_cells(_cells(exercise_id), old, new) != _cells(exercise_id), name
            assert (old, new) not in wrong, name  # one edit cannot be both right and wrong


@pytest.mark.parametrize(("exercise_id", "name"), RIGHT_CASES)
def test_right_answer_written_differently_is_answered_right(lesson_run, exercise_id, name):
    run = lesson_run(exercise_id.split(".")[0])["right_answers"][exercise_id][name]
    assert run["error"] is None, run["error"]
    assert run["status"] == RIGHT, run


@pytest.mark.parametrize(("exercise_id", "name"), CASES)
def test_mutation_is_answered_wrong_with_a_hint(lesson_run, exercise_id, name):
    run = lesson_run(exercise_id.split(".")[0])["mutations"][exercise_id][name]
    assert run["error"] is None, run["error"]  # the cell ran; the check said what is wrong
    assert run["status"] == WRONG, run
    assert run["message"] and len(run["message"]) > 20, run["message"]
    assert not _gives_away(exercise_id, run["message"]), run["message"]
    assert HINTS.get((exercise_id, name), "") in run["message"], run["message"]
    for words in HINTS_WITHOUT.get((exercise_id, name), []):
        assert words not in run["message"], (words, run["message"])


@pytest.mark.parametrize("lesson", sorted(TABLES))
def test_the_solutions_are_right(lesson_run, lesson):
    for exercise_id, run in lesson_run(lesson)["solution"].items():
        assert (run["status"], run["error"]) == (RIGHT, None), (exercise_id, run)


@pytest.mark.parametrize("lesson", sorted(TABLES))
def test_unfilled_answers_say_not_attempted_never_wrong(lesson_run, lesson):
    record = lesson_run(lesson)
    for exercise_id, run in record["unfilled"].items():  # the exercise notebook, untouched
        waiting = run["status"] is None and "[waiting] exercise" in run["output"]
        assert run["error"] is None and (waiting or run["status"] == NOT_ATTEMPTED), (
            exercise_id,
            run,
        )
    for exercise_id, run in record["filled_alone"].items():  # one answer, the earlier unfilled
        waiting = run["status"] is None and "[waiting] exercise" in run["output"]
        assert waiting or run["status"] in (NOT_ATTEMPTED, RIGHT), (exercise_id, run)


@pytest.mark.parametrize("lesson", sorted(TABLES))
def test_no_question_prints_its_answer_above_itself(lesson_run, lesson):
    shown = ""
    for cell in lesson_run(lesson)["outputs"]:
        exercise_id = cell["exercise"]
        before_verdict = cell["output"].split("[right] exercise")[0]
        if exercise_id:
            text = shown + before_verdict
            assert not _gives_away(exercise_id, text), (exercise_id, _gives_away(exercise_id, text))
            pattern = SHOWN_ABOVE.get(exercise_id)
            assert not (pattern and pattern.search(text)), (exercise_id, pattern.pattern)
        shown += cell["output"]


def test_the_scan_would_have_caught_the_printed_devices_of_00_3():
    """00.3's cell used to print the layer's variables and their devices above the question."""
    printed = "[('dense/kernel', '(4, 3)', 'CPU:0'), ('dense/bias', '(3,)', 'CPU:0')]"
    assert SHOWN_ABOVE["00.3"].search(printed)
    assert not SHOWN_ABOVE["00.3"].search("4 logical CPUs: /job:localhost/.../device:CPU:0")


def test_the_scan_would_have_caught_the_gaps_04_3_used_to_print_above_itself():
    """04.3's cell used to show each strategy's largest weight gap above the question."""
    printed = "strategy  replicas  first variable on  ms/step  max |w - w_one|\nMirrored  2  CPU:0"
    assert SHOWN_ABOVE["04.3"].search(printed)
    assert not SHOWN_ABOVE["04.3"].search("[right] exercise 04.2: well done.")


@pytest.mark.parametrize("lesson", sorted(TABLES))
def test_every_solution_cell_runs_without_an_error(lesson_run, lesson):
    """The runner runs every cell of the solution notebook, in order, as Run All would (on this
    stack it stands in for a kernel; the oldest stack's job runs the solutions in one)."""
    failed = [(i, c["error"]) for i, c in enumerate(lesson_run(lesson)["outputs"]) if c["error"]]
    assert not failed, failed
