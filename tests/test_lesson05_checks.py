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


def test_split_check_runs_the_learners_code_and_explains_wrong_answers():
    done = run_python(
        """
from tflearn_helpers import setup_course
setup_course(devices=3, verbose=False)
import keras
import tensorflow as tf
from tflearn_helpers import model_parallel
from tflearn_helpers.checks import _evaluate

def chain(blocks):  # a tiny stand-in with ResNet-101's 33 block outputs
    inp = h = keras.Input((4,))
    for i in range(blocks):
        name = f"conv{2 + i // 10}_block{i % 10 + 1}_out"
        h = keras.layers.Dense(4, activation="tanh", name=name)(h)
    return keras.Model(inp, keras.layers.Dense(4, name="predictions")(h))

def place(model, cuts, devices):
    stages = []
    for segment, device in zip(model_parallel.segment_models(model, cuts), devices):
        with tf.device(device):
            stage = keras.models.clone_model(segment)
        stage.set_weights(segment.get_weights())
        stages.append(stage)
    return stages

def answer(model, stages, devices, forward_devices=None):
    forward_devices = forward_devices or devices
    opts = [keras.optimizers.SGD(0.1) for _ in stages]
    def forward(x):
        for stage, device in zip(stages, forward_devices):
            with tf.device(device):
                x = stage(x, training=False)
        return x
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, forward(x))
        variables = [s.trainable_variables for s in stages]
        grads = tape.gradient(loss, [v for vs in variables for v in vs])
        for opt, vs in zip(opts, variables):
            opt.apply_gradients(zip(grads[: len(vs)], vs))
            grads = grads[len(vs):]
        return loss
    return dict(model=model, stages=stages, forward=forward, train_step=train_step)

model = chain(33)
names = model_parallel.block_boundaries(model)
devs = ["/CPU:1", "/CPU:2"]
good = place(model, [names[15]], devs)
verdict = _evaluate("05.1", answer(model, good, devs))
assert verdict.ok, verdict
assert "33" in _evaluate("05.1", answer(chain(5), good, devs)).message
assert "at least two" in _evaluate("05.1", answer(model, good[:1], devs)).message
same = place(model, [names[15]], ["/CPU:1", "/CPU:1"])
assert "share a device" in _evaluate("05.1", answer(model, same, devs)).message
lopsided = place(model, [names[2]], devs)
hint = _evaluate("05.1", answer(model, lopsided, devs)).message
assert "equal share" in hint and names[15] not in hint, hint
other = place(chain(33), [names[15]], devs)
assert "differs from the model" in _evaluate("05.1", answer(model, other, devs)).message
fresh = place(model, [names[15]], devs)  # the good answer's training step moved its weights
hint = _evaluate("05.1", answer(model, fresh, devs, forward_devices=["/CPU:0", "/CPU:0"])).message
assert "computed on" in hint, hint
frozen = answer(model, place(model, [names[15]], devs), devs)
frozen["train_step"] = lambda x, y: tf.constant(1.0)
assert "did not change" in _evaluate("05.1", frozen).message
assert _evaluate("05.1", dict(model=..., stages=..., forward=..., train_step=...)).status == (
    "not attempted"
)
print("ok")
"""
    )
    assert done.returncode == 0, done.stderr[-3000:]
