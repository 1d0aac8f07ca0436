"""Lesson 02's training step (its ``%%writefile train_step.py`` program, read from the lesson)
under ``mixed_float16`` with a ``LossScaleOptimizer``: the loss is scaled, the step runs, the
float32 variables move as a float32 step moves them."""

import importlib.util
import sys
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nbtools  # noqa: E402

LESSON = ROOT / "notebooks" / "02_resnet50_data_parallel.ipynb"


def lesson_make_train_step(folder):
    """``make_train_step`` as the lesson writes it: its train_step.py, written and imported."""
    marker = "%%writefile {workdir}/train_step.py"
    cells = [c.source for c in nbtools.read(LESSON).cells if c.source.startswith(marker)]
    assert len(cells) == 1, f"one {marker!r} cell expected, found {len(cells)}"
    path = folder / "train_step.py"
    path.write_text(cells[0].split("\n", 1)[1])
    spec = importlib.util.spec_from_file_location("lesson02_train_step", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # a file, as in the lesson: autograph reads its source
    return module.make_train_step


def tiny_net():
    return keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(8, activation="relu"),
            keras.layers.Dense(3, dtype="float32"),  # float32 logits, as the lesson's networks
        ]
    )


def one_step(make_train_step, policy, weights, batch):
    """The variables and optimizer after one step of the lesson's code under `policy`."""
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    keras.mixed_precision.set_global_policy(policy)
    try:
        with strategy.scope():
            net = tiny_net()
            net.set_weights(weights)
            optimizer = keras.optimizers.SGD(0.1)
            if policy == "mixed_float16":  # as the lesson does: float16 needs loss scaling
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=2.0**10)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    step = make_train_step(strategy, net, optimizer, global_batch=len(batch[0]))
    loss = float(step(batch))
    return net, optimizer, loss


def test_the_lessons_step_scales_the_loss_under_mixed_float16(monkeypatch, tmp_path):
    make_train_step = lesson_make_train_step(tmp_path)
    scaled = []  # the losses handed to scale_loss (recorded when the step is traced)
    original = keras.optimizers.LossScaleOptimizer.scale_loss

    def recording(self, loss):
        scaled.append(loss)
        return original(self, loss)

    monkeypatch.setattr(keras.optimizers.LossScaleOptimizer, "scale_loss", recording)
    rng = np.random.default_rng(0)
    batch = (tf.constant(rng.normal(size=(8, 6)), tf.float32), tf.constant(rng.integers(0, 3, 8)))
    start = tiny_net().get_weights()

    net, optimizer, loss = one_step(make_train_step, "mixed_float16", start, batch)
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    assert len(scaled) == 1, "the step scales its loss once (when traced)"
    assert np.isfinite(loss) and float(optimizer.dynamic_scale.numpy()) == 2.0**10  # no overflow
    assert int(optimizer.iterations.numpy()) == 1, "the step was applied, not skipped"
    assert net.layers[0](batch[0][:1]).dtype == tf.float16  # computes in float16
    assert {v.dtype for v in net.trainable_variables} == {"float32"}
    after = net.get_weights()
    assert all(not np.array_equal(a, b) for a, b in zip(after, start, strict=True))

    # apply_gradients unscaled the gradients: the update is float32's, to float16's precision
    reference, _, reference_loss = one_step(make_train_step, "float32", start, batch)
    assert abs(loss - reference_loss) < 1e-2 * abs(reference_loss)
    for mixed, plain, before in zip(after, reference.get_weights(), start, strict=True):
        np.testing.assert_allclose(mixed - before, plain - before, rtol=0.05, atol=1e-3)
