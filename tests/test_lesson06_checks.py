import numpy as np

from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG, _evaluate
from tflearn_helpers.exercise_checks.lesson06 import NAMES


def results(gap=0.0, ms=1.5):
    base = [np.zeros((3, 2)), np.zeros(2)]
    out = {name: ([w.copy() for w in base], ms) for name in NAMES}
    out["CentralStorage"] = ([w + gap for w in base], ms)
    return out


def test_06_1_refuses_a_dict_with_other_keys():
    assert _evaluate("06.1", ...).status == NOT_ATTEMPTED
    assert _evaluate("06.1", {"OneDevice": 1}).status == WRONG


def test_06_2_accepts_results_and_explains_bad_ones():
    assert _evaluate("06.2", results()).status == RIGHT
    bad = results()
    bad["Mirrored"] = ...
    assert _evaluate("06.2", bad).status == NOT_ATTEMPTED  # a stub left in the answer
    bad["Mirrored"] = [np.zeros(2)]
    assert "Mirrored" in _evaluate("06.2", bad).message
    slow = results(ms=0.0)
    assert "positive" in _evaluate("06.2", slow).message
    other = results()
    other["OneDevice"] = ([np.zeros((4, 2))], 1.0)
    assert "same one" in _evaluate("06.2", other).message


def test_06_3_judges_against_the_learners_own_measurements_without_telling():
    far = results(gap=1e-2)
    right = {"OneDevice", "Mirrored", "MultiWorkerMirrored"}
    assert _evaluate("06.3", right, far).status == RIGHT
    assert _evaluate("06.3", right - {"OneDevice"}, far).status == RIGHT
    wrong = _evaluate("06.3", set(NAMES), far)
    assert wrong.status == WRONG and "CentralStorage" not in wrong.message
    assert _evaluate("06.3", set(NAMES), results()).status == RIGHT
    assert "not strategy names" in _evaluate("06.3", {"TPU"}, far).message
    assert "set" in _evaluate("06.3", "Mirrored", far).message
