import numpy as np

from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG, _evaluate
from tflearn_helpers.checks.lesson01 import STRATEGY_NAMES as NAMES


def test_ring_megabytes_hints_without_the_answer():
    right = 2 * 7 / 8 * 25_557_032 * 4 / 1e6
    assert _evaluate("01.6", right).status == RIGHT
    assert "bytes" in _evaluate("01.6", right * 1e6).message
    assert "one copy" in _evaluate("01.6", 25_557_032 * 4 / 1e6).message
    wrong = _evaluate("01.6", 1.0)
    assert wrong.status == WRONG and f"{right:.0f}" not in wrong.message
    assert _evaluate("01.6", ...).status == NOT_ATTEMPTED


def test_what_is_not_an_answer_to_01_1_to_01_5_is_refused():
    """Every wrong answer to 01.1-01.5 is in tests/answers/lesson01.py (MUTATIONS, each with
    the words its hint must say in HINTS), the right ones in RIGHT_ANSWERS; here, no strategy:
    01.1 still its stub (None) makes every later answer wait, a string is not a strategy."""
    import tensorflow as tf

    def plain(s, x, y, b):
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(b)

    def no_penalty(s, model, opt, b):
        return tf.function(lambda batch: s.run(lambda x, y: model(x), args=batch))

    def fits(s, x, y, b, epochs):
        return tf.keras.Sequential([tf.keras.Input((20,)), tf.keras.layers.Dense(10)]), [1.0]

    def lone(s, x, y):
        return tf.keras.Sequential([tf.keras.Input((20,)), tf.keras.layers.Dense(10)])

    assert _evaluate("01.1", None, []).status == NOT_ATTEMPTED
    assert "MirroredStrategy" in _evaluate("01.2", plain, "nope").message
    answers = {"01.2": plain, "01.3": no_penalty, "01.4": fits, "01.5": lone}
    for later, answer in answers.items():
        waiting = _evaluate(later, answer, None)  # 01.1 still its stub: strategy = None
        assert waiting.status == NOT_ATTEMPTED, (later, waiting)


# -- 01.7-01.9: the other strategies of one machine ------------------------------------
def results(gap=0.0, ms=1.5):
    base = [np.zeros((3, 2)), np.zeros(2)]
    out = {name: ([w.copy() for w in base], ms) for name in NAMES}
    out["CentralStorage"] = ([w + gap for w in base], ms)
    return out


def test_01_7_refuses_a_dict_with_other_keys():
    mirrored = object()  # stands for 01.1's strategy
    assert _evaluate("01.7", ..., mirrored).status == NOT_ATTEMPTED
    assert _evaluate("01.7", {"OneDevice": 1}, mirrored).status == WRONG
    assert _evaluate("01.7", dict.fromkeys(NAMES, 1), None).status == NOT_ATTEMPTED  # 01.1 unfilled


def build_and_warm_up(strategy):
    return strategy  # written: 01.8's check reads the results and the models


def test_01_8_explains_bad_results():
    bad = results()
    bad["Mirrored"] = ...
    assert _evaluate("01.8", build_and_warm_up, bad, {}).status == WRONG
    assert _evaluate("01.8", build_and_warm_up, None, {}).status == NOT_ATTEMPTED  # 01.7 unfilled
    bad["Mirrored"] = [np.zeros(2)]
    assert "Mirrored" in _evaluate("01.8", build_and_warm_up, bad, {}).message
    slow = results(ms=0.0)
    assert "positive" in _evaluate("01.8", build_and_warm_up, slow, {}).message
    other = results()
    other["OneDevice"] = ([np.zeros((4, 2))], 1.0)
    assert "same one" in _evaluate("01.8", build_and_warm_up, other, {}).message
    assert "models" in _evaluate("01.8", build_and_warm_up, results(), {}).message


def test_01_9_judges_the_learners_function_on_results_it_cannot_know():
    far = results(gap=1e-2)

    def right(res):
        base = res["OneDevice"][0]
        return {
            name
            for name, (weights, _) in res.items()
            if max(float(np.abs(w - b).max()) for w, b in zip(weights, base, strict=True)) <= 1e-5
        }

    assert _evaluate("01.9", right, far).status == RIGHT
    assert _evaluate("01.9", right, results()).status == RIGHT
    left_out = _evaluate("01.9", lambda res: right(res) - {"OneDevice"}, far)
    assert left_out.status == WRONG and "leaves out OneDevice" in left_out.message
    typed_in = _evaluate("01.9", lambda res: set(NAMES), results())  # right on its own results
    assert typed_in.status == WRONG and "check changed" in typed_in.message
    assert "CentralStorage" not in typed_in.message
    assert "not strategy names" in _evaluate("01.9", lambda res: {"TPU"}, far).message
    assert "set" in _evaluate("01.9", lambda res: "Mirrored", far).message
    assert _evaluate("01.9", right, None).status == NOT_ATTEMPTED  # 01.8 not done yet
