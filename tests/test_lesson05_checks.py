from helpers import run_python

from tflearn_helpers.checks import _evaluate


def test_bubble_answer_is_judged_without_revealing_it():
    right = _evaluate("05.2", 27)
    assert right.ok
    few, many = _evaluate("05.2", 9), _evaluate("05.2", 40)
    assert not few.ok and "more are needed" in few.message and "27" not in few.message
    assert not many.ok and "fewer would too" in many.message
    assert "whole number" in _evaluate("05.2", 2.5).message
    assert _evaluate("05.2", ...).status == "not attempted"


def test_split_check_accepts_a_placed_split_and_explains_wrong_ones():
    done = run_python(
        """
from tflearn_helpers import setup_course
setup_course(devices=3, verbose=False)
import keras
import tensorflow as tf
from tflearn_helpers import model_parallel as mp
from tflearn_helpers.checks import _evaluate

def chain(blocks):  # a tiny stand-in with ResNet-101's 33 block outputs
    inp = h = keras.Input((4,))
    for i in range(blocks):
        name = f"conv{2 + i // 10}_block{i % 10 + 1}_out"
        h = keras.layers.Dense(4, activation="tanh", name=name)(h)
    return keras.Model(inp, keras.layers.Dense(2, name="predictions")(h))

model = chain(33)
names = mp.block_boundaries(model)
good = mp.split_model(model, [names[15]], ["/CPU:1", "/CPU:2"])
assert _evaluate("05.1", good, model).ok, _evaluate("05.1", good, model)
hint = _evaluate("05.1", good, chain(5)).message
assert "33" in hint, hint
assert "at least two" in _evaluate("05.1", good[:1], model).message
same = mp.split_model(model, [names[15]], ["/CPU:1", "/CPU:1"])
assert "share a device" in _evaluate("05.1", same, model).message
unplaced = mp.split_model(model, [names[15]], ["/CPU:1", "/CPU:2"])
unplaced[1].device = "/CPU:0"
assert "build the stage inside its device scope" in _evaluate("05.1", unplaced, model).message
other = mp.split_model(chain(33), [names[15]], ["/CPU:1", "/CPU:2"])
assert "outputs differ" in _evaluate("05.1", other, model).message
short = mp.split_model(model, [names[15], names[20]], ["/CPU:0", "/CPU:1", "/CPU:2"])[:2]
assert "exactly the model's parameters" in _evaluate("05.1", short, model).message
"""
    )
    assert done.returncode == 0, done.stderr[-3000:]
