"""Checks for exercises 02 (ResNet-50 data-parallel: input pipeline, checkpoints, BatchNorm,
gradient accumulation)."""

from __future__ import annotations

import tempfile

import numpy as np

from .. import validate
from ..checks import exercise
from ..datasets import generated_images
from ..input_pipeline import write_shards

__all__ = []


@exercise("02.1")
def file_sharded_pipeline(fn):
    if not callable(fn):
        return "pass the function itself, not a dataset it made"
    with tempfile.TemporaryDirectory() as directory:
        return _check_shards(fn, directory)


def _check_shards(fn, directory: str):
    files = write_shards(generated_images(48, 32, seed=7), directory, shards=8)
    workers, batch = 4, 2
    seen = []
    for w in range(workers):
        ds = fn(files, workers, w, batch)
        if "Prefetch" not in type(ds).__name__:
            return "the pipeline should end with prefetch, so input overlaps the training step"
        parts = list(ds)
        if not parts or any(len(p) != 3 for p in parts):
            return "each batch should be (images, labels, indices): parse with with_index=True"
        if any(int(p[0].shape[0]) != batch for p in parts):
            return "batches should hold batch_size images each"
        if parts[0][0].dtype.name != "float32":
            return "images should come out as float32 (use the course's record parser)"
        seen.append(np.concatenate([p[2].numpy() for p in parts]))
    everything = np.concatenate(seen)
    if len(np.unique(everything)) != len(everything):
        return "two workers got the same image: each needs its own share"
    if len(everything) != 48:
        return "together the workers should see every image exactly once"
    for w, idx in enumerate(seen):
        if not set((idx % 8).tolist()) <= {w, w + workers}:
            return "a worker saw images from other workers' files: shard the files, not the images"
    return None


@exercise("02.2")
def resume_from_checkpoint(fn):
    if not callable(fn):
        return "pass the function itself, not its result"
    with tempfile.TemporaryDirectory() as directory:
        return _check_resume(fn, directory)


def _check_resume(fn, directory: str):
    import keras
    import tensorflow as tf

    model, optimizer = _tiny(keras)
    ckpt = tf.train.Checkpoint(model=model, optimizer=optimizer)
    manager = tf.train.CheckpointManager(ckpt, directory, max_to_keep=3)
    for step in range(1, 6):
        _train_step(model, optimizer, seed=step)
        if step == 3:
            manager.save(checkpoint_number=step)
            saved = [w.copy() for w in model.get_weights()]
    fresh, fresh_opt = _tiny(keras)
    answer = fn(directory, fresh, fresh_opt)
    if not validate.is_whole_number(answer):
        return "return the restored step as an int (read it from the optimizer)"
    if int(fresh_opt.iterations.numpy()) != 3:
        return "the optimizer's step counter was not restored: put the optimizer in the checkpoint"
    if not all(np.array_equal(a, b) for a, b in zip(fresh.get_weights(), saved, strict=True)):
        return "the model's weights are not the saved ones: restore the latest checkpoint"
    if int(answer) != 3:
        return "the weights were restored, but the step you returned is not the restored one"
    return None


@exercise("02.3")
def synchronized_normalization(fn, strategy):
    """normalize(strategy, x) -> the replicas' BatchNorm outputs, as one device would give."""
    import keras
    import tensorflow as tf

    if not callable(fn):
        return "pass the function itself, not its result"
    if not isinstance(strategy, tf.distribute.Strategy) or strategy.num_replicas_in_sync < 2:
        return "pass a MirroredStrategy with at least two replicas as the second argument"
    n = strategy.num_replicas_in_sync
    rng = np.random.default_rng(9)
    x = rng.standard_normal((8 * n, 3)).astype(np.float32)
    x += np.repeat(np.arange(n, dtype=np.float32) * 2.0, 8)[:, None]  # each slice its own mean
    answer = fn(strategy, x)
    if answer is None:
        return "your function returns None: write its body"
    got = np.asarray(answer)
    if got.shape != x.shape:
        return f"return one array shaped like the batch {x.shape}, got {got.shape}"
    one_device = np.asarray(keras.layers.BatchNormalization()(x, training=True))
    if np.allclose(got, one_device, atol=1e-3):
        return None
    per_slice = np.concatenate(
        [np.asarray(keras.layers.BatchNormalization()(part, training=True))
         for part in np.split(x, n)]
    )  # fmt: skip
    if np.allclose(got, per_slice, atol=1e-3):
        return "each replica normalised with its own slice's statistics: synchronize them"
    return "not what one device gives: BatchNorm in training mode, on every replica, in order"


def _tiny(keras):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    optimizer = keras.optimizers.Adam(0.1)
    optimizer.build(model.trainable_variables)
    return model, optimizer


def _train_step(model, optimizer, seed: int) -> None:
    import tensorflow as tf

    x = tf.random.stateless_normal((8, 4), seed=(seed, 0))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))


@exercise("02.4")
def accumulated_update(fn, strategy):
    """accumulated_step(strategy, model, optimizer, micro_batches) -> None: one update that
    averages the gradients of K distributed micro-batches, as one large batch would give."""
    import tensorflow as tf

    if not callable(fn):
        return "pass the function itself, not its result"
    if not isinstance(strategy, tf.distribute.Strategy) or strategy.num_replicas_in_sync < 2:
        return "pass a MirroredStrategy with at least two replicas as the second argument"
    return _check_accumulation(fn, strategy)


_K, _MICRO = 4, 8  # micro-batches and the global examples in each


def _check_accumulation(fn, strategy):
    import keras
    import tensorflow as tf

    n = strategy.num_replicas_in_sync
    x = tf.random.stateless_normal((_K * _MICRO, 6), seed=(4, 4))
    y = tf.random.stateless_uniform((_K * _MICRO,), (4, 5), maxval=3, dtype=tf.int32)
    model, replicas_seen = _watched_model(keras, tf, strategy)
    start = [w.copy() for w in model.get_weights()]
    with strategy.scope():
        optimizer = keras.optimizers.SGD(0.5)
        optimizer.build(model.trainable_variables)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(_MICRO)
    micro_batches = list(strategy.experimental_distribute_dataset(data))
    replicas_seen.clear()
    fn(strategy, model, optimizer, micro_batches)
    applied = int(optimizer.iterations.numpy())
    if applied == 0:
        return "the weights were never updated: apply the accumulated gradients once at the end"
    if applied > 1:
        return (
            f"the optimizer took {applied} steps for {_K} micro-batches: add the gradients up "
            "and apply them once"
        )
    if set(replicas_seen) != set(range(n)):
        return "the micro-batches were not computed on every replica: use strategy.run"
    got = _update(start, model.get_weights())
    want = _update(start, _one_device_step(keras, tf, model, start, x, y))
    size = np.linalg.norm(want)
    if np.linalg.norm(got - want) <= 1e-4 * size:
        return None
    for factor, hint in (
        (_K, "one update, but too large by the number of micro-batches: average, do not sum"),
        (n, "too large by the number of replicas: divide each loss by the global micro-batch"),
        (_K * n, "too large: average over the micro-batches and over the global micro-batch"),
        (1 / _K, "too small by the number of micro-batches: each micro-batch counts once"),
    ):
        if np.linalg.norm(got - factor * want) <= 1e-3 * factor * size:
            return hint
    return "one update, but not the large batch's: the mean loss of each micro-batch, averaged"


def _watched_model(keras, tf, strategy):
    """A small classifier under ``strategy`` that records which replica ran its forward pass."""
    seen = []

    class Watch(keras.layers.Layer):
        def call(self, inputs):
            context = tf.distribute.get_replica_context()
            if context is not None and tf.distribute.has_strategy():
                seen.append(tf.get_static_value(context.replica_id_in_sync_group))
            return inputs

    keras.utils.set_random_seed(4)
    with strategy.scope():
        model = keras.Sequential(
            [keras.Input((6,)), Watch(), keras.layers.Dense(8, "tanh"), keras.layers.Dense(3)]
        )
    return model, seen


def _one_device_step(keras, tf, model, start, x, y):
    """The weights after one SGD step on the whole batch, on one device, from ``start``."""
    twin = keras.models.clone_model(model)
    twin.set_weights(start)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        loss = loss_fn(y, twin(x, training=True))
    grads = tape.gradient(loss, twin.trainable_variables)
    keras.optimizers.SGD(0.5).apply_gradients(zip(grads, twin.trainable_variables, strict=True))
    return twin.get_weights()


def _update(before, after) -> np.ndarray:
    return np.concatenate(
        [(np.asarray(b) - np.asarray(a)).ravel() for a, b in zip(before, after, strict=True)]
    )
