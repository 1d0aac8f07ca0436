from helpers import run_python
from test_model_parallel import TINY


def test_pipelined_gradients_equal_the_full_batch_and_training_stays_placed():
    done = run_python(
        TINY
        + """
import threading
from tflearn_helpers.pipeline import Pipeline
from tflearn_helpers.timeline import Timeline

model = tiny_resnet()
stages = mp.split_model(model, ["conv2_block1_out"], ["/CPU:1", "/CPU:2"])
loss = keras.losses.SparseCategoricalCrossentropy()
pipe = Pipeline(stages, loss, lambda: keras.optimizers.SGD(0.1, momentum=0.9))
x = tf.random.normal((8, 8, 8, 3))
y = tf.constant([0, 1, 2, 0, 1, 2, 0, 1])
with tf.GradientTape() as tape:
    full = loss(y, model(x, training=False))
ref = dict(zip([id(v) for v in model.trainable_variables],
               tape.gradient(full, model.trainable_variables)))
for m in (1, 2, 4):
    tl = Timeline()
    value, grads = pipe.gradients(x, y, m, training=False, timeline=tl)
    assert abs(value - float(full)) < 1e-5
    for stage, g in zip(stages, grads):
        for v, gv in zip(stage.source_variables, g):
            np.testing.assert_allclose(gv.numpy(), ref[id(v)].numpy(), rtol=1e-4, atol=1e-6)
    assert len(tl.events) == 2 * 2 * m and len(tl.lanes) == 2
for stage, opt in zip(stages, pipe.optimizers):
    assert {d for _, _, d in placement.variable_devices(opt.momentums)} == {stage.device[1:]}
before = [v.numpy().copy() for v in stages[0].trainable_variables]
pipe.train_step(x, y, 2)
assert any(not np.allclose(a, v.numpy()) for a, v in zip(before, stages[0].trainable_variables))
assert np.isfinite(float(pipe.graph_step(x, y)))
assert np.isfinite(float(pipe.graph_step(x, y, 2)))
counts = placement.compute_op_counts(pipe.graph_step, x, y)
assert counts["CPU:1"] > 0 and counts["CPU:2"] > 0, counts
assert threading.active_count() == 1
"""
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_bad_input_fails_fast_and_leaves_no_thread():
    done = run_python(
        TINY
        + """
import threading
from tflearn_helpers.pipeline import Pipeline

model = tiny_resnet()
stages = mp.split_model(model, ["conv2_block1_out"], ["/CPU:1", "/CPU:2"])
pipe = Pipeline(stages, keras.losses.SparseCategoricalCrossentropy())
x, y = tf.random.normal((6, 8, 8, 3)), tf.zeros((6,), tf.int32)
for m, match in ((4, "does not split"), (0, "whole number"), (True, "whole number")):
    try:
        pipe.gradients(x, y, m)
    except ValueError as err:
        assert match in str(err), err
    else:
        raise AssertionError(m)
    try:
        Pipeline(stages, None, lambda: keras.optimizers.SGD()).graph_step(x, y, m)
    except ValueError as err:
        assert match in str(err), err
    else:
        raise AssertionError(m)
try:
    pipe.train_step(x, y)
except ValueError as err:
    assert "make_optimizer" in str(err)
try:  # wrong label shape: the last stage fails, every other stage stops too
    pipe.gradients(x, tf.zeros((6, 5, 5)), 2)
except Exception as err:
    assert "Aborted" not in type(err).__name__, err
else:
    raise AssertionError("bad labels were accepted")
assert threading.active_count() == 1
try:
    Pipeline([], None)
except ValueError as err:
    assert "at least one stage" in str(err)
"""
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_run_concurrently_returns_results_raises_errors_and_times_out():
    import queue
    import time

    import pytest

    from tflearn_helpers.pipeline import run_concurrently

    handoff = queue.Queue()
    assert run_concurrently([lambda: handoff.get(timeout=5), lambda: handoff.put(7)]) == [7, None]

    def fail():
        raise ValueError("stage broke")

    with pytest.raises(ValueError, match="stage broke"):
        run_concurrently([fail, lambda: 1])
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        run_concurrently([lambda: time.sleep(3)], timeout=0.2)
    assert time.monotonic() - start < 2
