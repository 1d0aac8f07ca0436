"""Checks for lesson 01's exercises (data parallelism with MirroredStrategy).

Each check runs the learner's code on its own small problem and compares it with what
one device would do; hints say what went wrong, never the code that is right.
"""

from __future__ import annotations

import numpy as np

from .. import datasets, mirrored
from ..checks import exercise
from ..measure import ring_allreduce_bytes

__all__ = ["mirrored_strategy", "train_step"]


def _strategy_problem(strategy):
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.Strategy):
        return "pass your MirroredStrategy as the second argument of check()"
    if strategy.num_replicas_in_sync < 2:
        return "use a strategy with at least two replicas (the setup cell made several devices)"
    return None


@exercise("01.1")
def mirrored_strategy(strategy, devices):
    """A MirroredStrategy with one replica on each of ``devices``; it must run a reduction."""
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MirroredStrategy):
        return f"expected a tf.distribute.MirroredStrategy, got {type(strategy).__name__}"
    wanted = {_device_key(d) for d in devices}
    got = {_device_key(d) for d in strategy.extended.worker_devices}
    if got != wanted:
        return (
            f"your strategy has {len(got)} replica(s) on other devices than the {len(wanted)} "
            "the setup cell made: pass them (course.devices)"
        )
    n = strategy.num_replicas_in_sync
    ids = strategy.run(lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
    total = int(strategy.reduce(tf.distribute.ReduceOp.SUM, ids, axis=None))
    if total != n * (n - 1) // 2:
        return "the replicas of your strategy did not all run: check its devices"
    return None


def _device_key(name: str) -> tuple[str, int]:
    import tensorflow as tf

    spec = tf.DeviceSpec.from_string(name)
    return spec.device_type, spec.device_index


@exercise("01.2")
def distributed_dataset(make_dataset, strategy):
    """make_dataset(strategy, x, y, global_batch) -> a distributed dataset of (x, y)."""
    import tensorflow as tf

    problem = _strategy_problem(strategy)
    if problem:
        return problem
    n = strategy.num_replicas_in_sync
    global_batch = 4 * n
    x = np.arange(3 * global_batch * 2, dtype=np.float32).reshape(-1, 2)
    y = np.arange(3 * global_batch, dtype=np.int32)
    result = make_dataset(strategy, x, y, global_batch)
    if result is None:
        return "your function returns None: write its body"
    if isinstance(result, tf.data.Dataset):
        return "that is a plain tf.data.Dataset: the strategy has to split it between replicas"
    if not isinstance(result, tf.distribute.DistributedDataset):
        return f"expected a distributed dataset, got {type(result).__name__}"
    elements, seen = list(result), []
    for element in elements:
        shapes = mirrored.per_replica_shapes(strategy, element)
        sizes = {s[0][0] for _, s in shapes}
        if sizes != {global_batch // n}:
            return (
                f"each replica got {sorted(sizes)} examples per step; with {n} replicas and a "
                f"global batch of {global_batch}, is the dataset batched with the right size?"
            )
        seen.extend(
            int(v) for part in strategy.experimental_local_results(element[1]) for v in part
        )
    if len(elements) != 3:
        return f"one pass should take 3 steps of {global_batch} examples, not {len(elements)}"
    if sorted(seen) != list(range(len(y))):
        return "one pass over your dataset does not see every example exactly once"
    return None


@exercise("01.3")
def train_step(make_step, strategy):
    """make_step(strategy, model, optimizer, global_batch) -> step(distributed batch) -> loss."""
    import tensorflow as tf

    problem = _strategy_problem(strategy)
    if problem:
        return problem
    n = strategy.num_replicas_in_sync
    global_batch = 8 * n
    x, y = datasets.teacher_data(global_batch, features=6, classes=4, seed=3)
    l2 = tf.keras.regularizers.L2(0.05)
    reference = tf.keras.Sequential(
        [tf.keras.Input((6,)), tf.keras.layers.Dense(4, kernel_regularizer=l2)]
    )
    one = tf.distribute.get_strategy()
    expected = mirrored.twin_model(reference, one)
    one_step = mirrored.make_train_step(one, expected, tf.keras.optimizers.SGD(0.5), global_batch)
    data_loss = float(one_step((x, y)))
    penalty = float(tf.add_n(reference.losses))  # at the starting weights, as in the step
    model = mirrored.twin_model(reference, strategy)
    with strategy.scope():
        optimizer = tf.keras.optimizers.SGD(0.5)
    step = make_step(strategy, model, optimizer, global_batch)
    if not callable(step):
        return "make_step must return the step function (it returned no function)"
    batch = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
    loss = step(next(iter(strategy.experimental_distribute_dataset(batch))))
    if mirrored.replica_divergence(model.variables) != 0.0:
        return "after your step the replicas hold different weights: apply one summed gradient"
    w0 = reference.get_weights()
    ratio = mirrored.update_norm(w0, model.get_weights()) / mirrored.update_norm(
        w0, expected.get_weights()
    )
    if abs(ratio - n) < 0.01 * n:
        return f"your update is {n} times the single-device one: how is each replica's loss scaled?"
    if abs(ratio - 1 / n) < 0.01 / n:
        return f"your update is 1/{n} of the single-device one: how is each replica's loss scaled?"
    if mirrored.max_abs_difference(model.get_weights(), expected.get_weights()) > 1e-5:
        return (
            f"your step differs from one device's step on the same batch (update ratio "
            f"{ratio:.3g}): how does each replica scale its loss and the model.losses penalty?"
        )
    loss = np.asarray(loss)
    if loss.shape != () or not np.isfinite(loss):
        return "the step should return one number: the loss combined over the replicas"
    if min(abs(float(loss) - data_loss), abs(float(loss) - data_loss - penalty)) > 1e-4:
        return (
            f"your step returns {float(loss):.4g}, not the loss of the whole global batch "
            "(with or without the penalty): how does strategy.reduce combine the replicas' "
            "shares of it?"
        )
    return None


@exercise("01.4")
def trained_with_custom_loop(train, strategy):
    """train(strategy, x, y, global_batch, epochs) -> (model, loss of each epoch)."""
    problem = _strategy_problem(strategy)
    if problem:
        return problem
    n, epochs = strategy.num_replicas_in_sync, 3
    x, y = datasets.teacher_data(1024, seed=11)
    result = train(strategy, x, y, 32 * n, epochs)
    if not isinstance(result, tuple) or len(result) != 2:
        return "return two things: the trained model and the list of epoch losses"
    model, losses = result
    problem = _mirrored_model_problem(model, n, "the first thing returned should be the model")
    if problem:
        return problem
    losses = [float(v) for v in np.ravel(np.asarray(losses, dtype=float))]
    if len(losses) != epochs or not all(np.isfinite(losses)):
        return f"return one finite loss per epoch ({epochs} epochs asked), got {len(losses)}"
    if not losses[-1] < losses[0]:
        return "the loss did not fall from the first epoch to the last: is the model trained?"
    return _beats_chance(model, features=x.shape[1])


@exercise("01.5")
def trained_with_fit(model, strategy):
    """The seed's Keras model trained with fit() on every replica of ``strategy``."""
    problem = _strategy_problem(strategy)
    if problem:
        return problem
    problem = _mirrored_model_problem(model, strategy.num_replicas_in_sync, "pass the model")
    if problem:
        return problem
    return _beats_chance(model, features=model.trainable_variables[0].shape[0])


def _mirrored_model_problem(model, replicas: int, not_a_model: str):
    """A hint when ``model`` is not a Keras model mirrored, identically, on ``replicas``."""
    variables = list(getattr(model, "trainable_variables", []))
    if not variables:
        return f"{not_a_model}: the trained Keras model"
    if any(mirrored.replica_count(v) != replicas for v in variables):
        return (
            f"the model's variables are not mirrored on the {replicas} replicas: "
            "where was it built?"
        )
    if mirrored.replica_divergence(variables) != 0.0:
        return "after training, the replicas' copies of the weights differ"
    return None


def _beats_chance(model, features: int):
    x, y = datasets.teacher_data(2048, features=features, seed=123)
    accuracy = float(np.mean(np.argmax(np.asarray(model(x)), axis=1) == y))
    if accuracy <= 2 / 10:
        return f"held-out accuracy {accuracy:.2f} is near chance: train on teacher_data for longer"
    return None


@exercise("01.6")
def ring_megabytes(answer):
    """MB each of 8 GPUs sends per step to all-reduce 25,557,032 float32 gradients (ring)."""
    size = 25_557_032 * 4
    right = ring_allreduce_bytes(size, 8) / 1e6
    value = float(answer)
    if abs(value - right) <= 0.01 * right:
        return None
    if abs(value / 1e6 - right) <= 0.01 * right:
        return "that looks like bytes: give megabytes (1 MB = 10**6 bytes)"
    if abs(value - size / 1e6) <= 0.01 * right:
        return "that is one copy of the gradient; the ring has two phases"
    return "not quite: apply the ring model of section 5 to this gradient's size in bytes"
