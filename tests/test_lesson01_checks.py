"""Exercise checks 01: right answers pass, wrong ones get a hint without the answer."""

import json

from tflearn_helpers.checks import RIGHT, WRONG, _evaluate

CLUSTER = {
    "chief": ["localhost:2222"],
    "worker": ["localhost:2223", "localhost:2224"],
    "ps": ["localhost:2225"],
    "evaluator": ["localhost:2226"],
}


def test_01_1_placement():
    assert _evaluate("01.1", "ps:0").status == RIGHT
    wrong = _evaluate("01.1", "ps:1")
    assert wrong.status == WRONG and "ps:0" not in wrong.message
    assert _evaluate("01.1", 3).status == WRONG


def test_01_2_staleness():
    def right(before, after):
        return [a - b - 1 for b, a in zip(before, after, strict=True)]

    def off_by_one(before, after):
        return [a - b for b, a in zip(before, after, strict=True)]

    assert _evaluate("01.2", right).status == RIGHT
    assert "own update" in _evaluate("01.2", off_by_one).message
    assert _evaluate("01.2", [0, 1]).status == WRONG


def test_01_3_evaluator_tf_config():
    right = json.dumps({"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0}})
    assert _evaluate("01.3", right).status == RIGHT
    chief = json.dumps({"cluster": CLUSTER, "task": {"type": "chief", "index": 0}})
    assert "task type" in _evaluate("01.3", chief).message
    assert "not valid" in _evaluate("01.3", "{not json").message
    no_eval = {k: v for k, v in CLUSTER.items() if k != "evaluator"}
    bad = json.dumps({"cluster": no_eval, "task": {"type": "chief", "index": 0}})
    assert _evaluate("01.3", bad).status == WRONG
