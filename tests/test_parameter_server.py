"""Unit tests for tflearn_helpers.parameter_server (no TensorFlow cluster: lesson 09 runs it),
and the check that the package's copies of lesson 09's code are that code."""

import sys
from pathlib import Path

import pytest

from tflearn_helpers import datasets, models, parameter_server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import nbtools  # noqa: E402
import taught  # noqa: E402

LESSON_09 = nbtools.ROOT / "notebooks" / "09_parameter_server_strategy.ipynb"
SPEC = {
    "chief": ["localhost:1000"],
    "worker": ["localhost:1001", "localhost:1002"],
    "ps": ["localhost:1003"],
}


@pytest.mark.parametrize(
    "bad", [None, [], {"worker": ["localhost:1"]}, {"chief": ["a:1"], "ps": ["b:2"]}]
)
def test_measure_workers_needs_chief_worker_and_ps(bad):
    with pytest.raises((TypeError, ValueError), match="cluster"):
        parameter_server.measure_workers(bad, 1, steps=4, work=1)


@pytest.mark.parametrize(
    ("n", "kwargs", "name"),
    [
        (0, {"steps": 4, "work": 1}, "n"),
        (3, {"steps": 4, "work": 1}, "n"),
        (1, {"steps": 0, "work": 1}, "steps"),
        (1, {"steps": 4, "work": 0}, "work"),
        (1, {"steps": 2.5, "work": 1}, "steps"),
    ],
)
def test_measure_workers_rejects_bad_sizes(n, kwargs, name):
    with pytest.raises(ValueError, match=name):
        parameter_server.measure_workers(SPEC, n, **kwargs)


# -- one source: the package's copies of code lesson 09 teaches ------------------------------
@pytest.mark.parametrize(
    "helper",
    [parameter_server.measure_workers, datasets.regression_batches, models.regression_model],
)
def test_helpers_are_the_code_lesson_09_teaches(helper):
    assert taught.differs_from_taught(helper, LESSON_09) is None, "change both, or neither"
    assert "lesson 09 defines it" in helper.__doc__.lower()


# -- lesson 09's exercise checks (tflearn_helpers/exercise_checks/lesson09.py) --------------
class _Piece:
    def __init__(self, rows, task):
        self.shape = (rows, 4)
        self.device = f"/job:{task}/device:CPU:0"


class _Sharded:
    def __init__(self, pieces, shape=(12, 4)):
        self.shape, self.variables = shape, pieces


def _verdict(exercise_id, *args):
    from tflearn_helpers.checks import _evaluate

    return _evaluate(exercise_id, *args)


def test_check_09_1_accepts_one_piece_per_ps_and_hints_otherwise():
    good = _Sharded([_Piece(4, f"ps/replica:0/task:{i}") for i in range(3)])
    assert _verdict("09.1", good).ok
    two = _Sharded([_Piece(6, "ps/replica:0/task:0"), _Piece(6, "ps/replica:0/task:1")])
    same = _Sharded([_Piece(4, "ps/replica:0/task:0")] * 3)
    worker = _Sharded([_Piece(4, f"worker/replica:0/task:{i}") for i in range(3)])
    for bad, words in [
        (two, "pieces"),
        (same, "share"),
        (worker, "not on a parameter server"),
        (_Sharded([], (12, 4)), "one piece"),
        (_Sharded([], (3, 3)), "12 x 4"),
        ("embedding", "variable itself"),
    ]:
        verdict = _verdict("09.1", bad)
        assert verdict.status == "wrong" and words in verdict.message


def test_check_09_2_rejects_what_is_not_a_pair_of_functions_or_a_coordinator():
    assert "pair" in _verdict("09.2", (len,), object(), {}).message
    assert "functions themselves" in _verdict("09.2", (1, 2), object(), {}).message
    assert "ClusterCoordinator" in _verdict("09.2", (len, len), object(), {}).message


def test_check_09_3_hints_never_contain_the_answer():
    assert _verdict("09.3", 3).ok
    assert _verdict("09.3", ...).status == "not attempted"
    for wrong in (0, 2, 5, 7, "3", 3.0):
        verdict = _verdict("09.3", wrong)
        assert verdict.status == "wrong" and "3" not in verdict.message
