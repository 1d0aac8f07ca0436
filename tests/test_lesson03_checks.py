from helpers import run_python

from tflearn_helpers.checks import _evaluate


def test_bubble_answer_is_judged_without_revealing_it():
    right = _evaluate("03.2", 27)
    assert right.ok
    few, many = _evaluate("03.2", 9), _evaluate("03.2", 40)
    assert not few.ok and "more are needed" in few.message and "27" not in few.message
    assert not many.ok and "fewer would too" in many.message
    assert "whole number" in _evaluate("03.2", 2.5).message
    assert _evaluate("03.2", ...).status == "not attempted"


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
    return keras.Model(inp, keras.layers.Dense(4, "softmax", name="predictions")(h))

def place(model, cuts, devices):
    stages = []
    for segment, device in zip(model_parallel.segment_models(model, cuts), devices):
        with tf.device(device):
            stage = keras.models.clone_model(segment)
        stage.set_weights(segment.get_weights())
        stages.append(stage)
    return stages

def answer(model, stages, devices, forward_devices=None, whole_backward=False, lazy=False,
           under=None, chained=True):
    forward_devices = forward_devices or devices
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    opts = []
    for stage, device in zip(stages, devices):
        with tf.device(device if not lazy else "/CPU:0"):
            opts.append(keras.optimizers.SGD(0.1, momentum=0.9))
            if not lazy:
                opts[-1].build(stage.trainable_variables)

    def forward(x):
        for stage, device in zip(stages, forward_devices):
            with tf.device(device):
                x = stage(x, training=False)
        return x

    def one_tape(x, y):  # plausible and wrong: the whole backward pass on one device
        with tf.GradientTape() as tape:
            h = x
            for stage, device in zip(stages, devices):
                with tf.device(device):
                    h = stage(h, training=True)
            loss = loss_fn(y, h)
        variables = [s.trainable_variables for s in stages]
        with tf.device(under or "/CPU:0"):  # the default device, or the last stage's
            grads = tape.gradient(loss, [v for vs in variables for v in vs])
        for opt, vs, device in zip(opts, variables, devices):
            with tf.device(device):
                opt.apply_gradients(zip(grads[: len(vs)], vs))
            grads = grads[len(vs):]
        return loss

    def per_stage(x, y):  # right: each stage's backward pass and update on its device
        tapes, inputs, outputs = [], [x], []
        for s, (stage, device) in enumerate(zip(stages, devices)):
            with tf.device(device), tf.GradientTape() as tape:
                tape.watch(inputs[-1])
                out = stage(inputs[-1], training=True)
                if s == len(stages) - 1:
                    out = loss_fn(y, out)
            tapes.append(tape)
            outputs.append(out)
            inputs.append(out)
        out_grad = None
        for s in reversed(range(len(stages))):
            with tf.device(devices[s]):
                vs = stages[s].trainable_variables
                in_grad, *grads = tapes[s].gradient(  # unchained: each stage's own sum
                    outputs[s], [inputs[s], *vs], output_gradients=out_grad if chained else None)
                opts[s].apply_gradients(zip(grads, vs))
            out_grad = in_grad
        return outputs[-1]

    step = one_tape if whole_backward or under else per_stage
    return dict(model=model, stages=stages, optimizers=opts, forward=forward, train_step=step)


model = chain(33)
names = model_parallel.block_boundaries(model)
devs = ["/CPU:1", "/CPU:2"]
good = place(model, [names[15]], devs)
verdict = _evaluate("03.1", answer(model, good, devs))
assert verdict.ok, verdict
assert "33" in _evaluate("03.1", answer(chain(5), good, devs)).message
assert "at least two" in _evaluate("03.1", answer(model, good[:1], devs)).message
same = place(model, [names[15]], ["/CPU:1", "/CPU:1"])
assert "share a device" in _evaluate("03.1", answer(model, same, devs)).message
lopsided = place(model, [names[2]], devs)
hint = _evaluate("03.1", answer(model, lopsided, devs)).message
assert "stage 1's modelled peak" in hint and names[15] not in hint, hint
renamed = place(model, [names[15]], devs)
renamed[0] = keras.Model(renamed[0].inputs, renamed[0].outputs)  # ends at a layer of its own
renamed[0].layers[-1].name = "my_cut"
hint = _evaluate("03.1", answer(model, renamed, devs)).message
assert "not all of them the model's" in hint, hint
other = place(chain(33), [names[15]], devs)
assert "differs from the model" in _evaluate("03.1", answer(model, other, devs)).message
fresh = place(model, [names[15]], devs)  # the good answer's training step moved its weights
hint = _evaluate("03.1", answer(model, fresh, devs, forward_devices=["/CPU:0", "/CPU:0"])).message
assert "computed on" in hint, hint
frozen = answer(model, place(model, [names[15]], devs), devs)
frozen["train_step"] = lambda x, y: tf.constant(1.0)
assert "did not change" in _evaluate("03.1", frozen).message
hint = _evaluate("03.1", answer(model, place(model, [names[15]], devs), devs,
                                whole_backward=True)).message
assert "where do the backward pass" in hint and "CPU:0" in hint, hint
hint = _evaluate("03.1", answer(model, place(model, [names[15]], devs), devs,
                                under=devs[-1])).message
assert "backward pass of the stage on CPU:1 ran on CPU:2" in hint, hint
hint = _evaluate("03.1", answer(model, place(model, [names[15]], devs), devs,
                                chained=False)).message
assert "stage 0's gradients differ from one device's" in hint, hint
hint = _evaluate("03.1", answer(model, place(model, [names[15]], devs), devs, lazy=True)).message
assert "optimizers keep variables" in hint and "CPU:0" in hint, hint
stub = dict(model=..., stages=..., optimizers=..., forward=..., train_step=...)
assert _evaluate("03.1", stub).status == "not attempted"
print("ok")
"""
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_fill_drain_check_runs_the_learners_schedule_and_explains_wrong_answers():
    done = run_python(
        """
from tflearn_helpers import setup_course
setup_course(devices=3, verbose=False)
import keras
import tensorflow as tf
from tflearn_helpers.checks import _evaluate

def make(scale=True, split=True, place_backward=True, pass_grad=True):
    def fill_drain(stages, devices, x, y, m):
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        m_used = m if split else 1
        with tf.device(devices[0]):
            xs = tf.split(x, m_used)
        with tf.device(devices[-1]):
            ys = tf.split(y, m_used)
        kept = [[] for _ in stages]
        for xi, yi in zip(xs, ys):
            h = xi
            for s, (stage, device) in enumerate(zip(stages, devices)):
                with tf.device(device), tf.GradientTape() as tape:
                    tape.watch(h)
                    out = stage(h, training=True)
                    if s == len(stages) - 1:
                        out = loss_fn(yi, out) / (m_used if scale else 1)
                kept[s].append((tape, h, out))
                h = out
        sums = [None] * len(stages)
        for i in range(m_used):
            out_grad = None
            for s in reversed(range(len(stages))):
                tape, h, out = kept[s][i]
                with tf.device(devices[s] if place_backward else "/CPU:0"):
                    h_grad, *grads = tape.gradient(
                        out, [h, *stages[s].trainable_variables],
                        output_gradients=out_grad if pass_grad else None)
                    sums[s] = grads if sums[s] is None else [a + g for a, g in zip(sums[s], grads)]
                out_grad = h_grad
        return sums
    return fill_drain

devs = ["/CPU:1", "/CPU:2"]
assert _evaluate("03.3", make(), devs).ok, _evaluate("03.3", make(), devs)
assert "m times" in _evaluate("03.3", make(scale=False), devs).message
assert "micro-batches of" in _evaluate("03.3", make(split=False), devs).message
hint = _evaluate("03.3", make(place_backward=False), devs).message
assert "CPU:0" in hint and "backward" in hint, hint
hint = _evaluate("03.3", make(pass_grad=False), devs).message
assert "gradient of its output" in hint, hint
def one_at_a_time(stages, devices, x, y, m):  # right gradients, not fill-drain's order
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    sums = None
    for xi, yi in zip(tf.split(x, m), tf.split(y, m)):
        with tf.GradientTape() as tape:
            h = xi
            for stage, device in zip(stages, devices):
                with tf.device(device):
                    h = stage(h, training=True)
            loss = loss_fn(yi, h) / m
        grads = tape.gradient(loss, [s.trainable_variables for s in stages])
        sums = grads if sums is None else [
            [a + g for a, g in zip(sa, ga)] for sa, ga in zip(sums, grads)]
    return sums

assert "before every forward pass" in _evaluate("03.3", one_at_a_time, devs).message
flat = lambda *a: [g for stage in make()(*a) for g in stage]  # noqa: E731
assert "one list per stage" in _evaluate("03.3", flat, devs).message
assert _evaluate("03.3", None, devs).status == "not attempted"  # (a ... body: test_checks)
print("ok")
"""
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _warming(warm_of):
    """A schedule shaped like 1F1B: ``warm_of(k, s, m)`` forward passes, then one forward and
    one backward in turn, then the backward passes left."""

    def schedule(k, m):
        orders = []
        for s in range(k):
            warm = warm_of(k, s, m)
            order = [("F", i) for i in range(warm)]
            for i in range(warm, m):
                order += [("F", i), ("B", i - warm)]
            orders.append(order + [("B", i) for i in range(m - warm, m)])
        return orders

    return schedule


ONE_F_ONE_B = _warming(lambda k, s, m: min(k - s, m) - 1)


def test_one_f_one_b_takes_fill_drains_time_and_no_warm_up_can_be_shorter():
    """The check's bound: 1F1B takes fill-drain's 2(M + K - 1) time steps within K - s alive
    on stage s, and one forward pass fewer before the first backward pass takes longer."""
    from tflearn_helpers.checks import lesson03

    for k in range(2, 8):
        for m in range(1, 13):
            steps, peaks = lesson03._run_steps(ONE_F_ONE_B(k, m))
            assert all(p <= k - s for s, p in enumerate(peaks)), (k, m)
            fill = [[("F", i) for i in range(m)] + [("B", i) for i in range(m)]] * k
            assert lesson03._run_steps(fill)[0] == 2 * (m + k - 1) == steps, (k, m)
            if m > 1:
                shorter = _warming(lambda k, s, m: max(min(k - s, m) - 2, 0))(k, m)
                assert lesson03._run_steps(shorter)[0] > steps, (k, m)


def test_one_f_one_b_check_steps_the_schedule_and_explains_wrong_answers():
    right = _evaluate("03.4", ONE_F_ONE_B)
    assert right.ok, right.message

    def fill_drain(k, m):
        return [[("F", i) for i in range(m)] + [("B", i) for i in range(m)] for _ in range(k)]

    assert "alive at once" in _evaluate("03.4", fill_drain).message
    slow = _warming(lambda k, s, m: max(min(k - s, m) - 2, 0))
    assert "fill-drain" in _evaluate("03.4", slow).message
    backwards = _warming(lambda k, s, m: min(s + 1, m) - 1)  # the last stage ahead
    assert "stalls" in _evaluate("03.4", backwards).message

    def skipping(k, m):
        orders = ONE_F_ONE_B(k, m)
        orders[-1] = [step for step in orders[-1] if step != ("F", m - 1)]
        return orders

    assert "never" in _evaluate("03.4", skipping).message

    def backward_first(k, m):
        orders = ONE_F_ONE_B(k, m)
        orders[-1][:2] = orders[-1][1::-1]  # the last stage: B0 before F0
        return orders

    assert "before its forward" in _evaluate("03.4", backward_first).message
    flat = _evaluate("03.4", lambda k, m: [s for order in ONE_F_ONE_B(k, m) for s in order])
    assert "one list per stage" in flat.message
    hard_coded = _evaluate("03.4", lambda k, m: ONE_F_ONE_B(4, 8))
    assert not hard_coded.ok and "k=" in hard_coded.message
    assert "raised ZeroDivisionError" in _evaluate("03.4", lambda k, m: 1 / 0).message
    assert _evaluate("03.4", None).status == "not attempted"
    for wrong in (fill_drain, slow, backwards, skipping, backward_first):
        assert "min(k - s" not in _evaluate("03.4", wrong).message
