"""Synchronous data parallelism with MirroredStrategy (taught in lesson 01).

A custom training step with the loss scaled either the right way (by the global batch)
or the classic wrong way (per replica), and the comparisons lesson 01 and its exercise checks
make: whether every replica holds the same variables, how far two sets of weights are apart.
(Lesson 01's learnable synthetic data is ``datasets.teacher_data``.)
"""

from __future__ import annotations

import numpy as np

from . import validate

__all__ = [
    "make_train_step",
    "max_abs_difference",
    "per_replica_shapes",
    "replica_copies",
    "replica_count",
    "replica_divergence",
    "twin_model",
    "update_norm",
]

LOSS_SCALINGS = ("global", "per_replica")


def replica_copies(variable) -> list:
    """The per-replica components of a (Keras or TensorFlow) variable: one when not mirrored."""
    inner = getattr(variable, "value", None)
    if inner is None or callable(inner):  # tf.Variable.value is a method; Keras' a property
        inner = variable
    return list(getattr(inner, "values", [inner]))


def replica_count(variable) -> int:
    """How many copies of ``variable`` exist (1 when it is not mirrored)."""
    return len(replica_copies(variable))


def replica_divergence(variables) -> float:
    """Largest |copy on replica i - copy on replica 0| over all ``variables`` (0.0 = identical)."""
    variables = list(variables)
    if not variables:
        raise ValueError("no variables given: pass model.variables (build the model first)")
    worst = 0.0
    for v in variables:
        copies = [np.asarray(c) for c in replica_copies(v)]
        worst = max([worst] + [float(np.max(np.abs(c - copies[0]))) for c in copies[1:]])
    return worst


def per_replica_shapes(strategy, distributed) -> list[tuple[int, tuple[tuple, ...]]]:
    """(replica id, shape of each tensor) for one element of a distributed dataset."""
    import tensorflow as tf

    parts = [strategy.experimental_local_results(t) for t in tf.nest.flatten(distributed)]
    return [
        (i, tuple(tuple(p[i].shape) for p in parts)) for i in range(strategy.num_replicas_in_sync)
    ]


def make_train_step(strategy, model, optimizer, global_batch, loss_scaling="global"):
    """A ``tf.function`` training step on a distributed batch ``(x, y)``; it returns the mean
    loss. Defined in lesson 01 (notebooks/01_mirrored_strategy.ipynb, section 4), which
    explains it; lesson 02 copies it into a program file, lesson 04, exercises and the
    benchmarks reuse it from here. tests/test_mirrored.py checks that this is the code of
    both lessons (argument checks aside).

    ``loss_scaling="global"`` divides each replica's summed loss by the *global* batch and
    ``model.losses`` by the replicas; ``"per_replica"`` is the classic mistake (each
    replica's own mean and whole penalty: gradients ``num_replicas`` times too large).
    """
    import tensorflow as tf

    if loss_scaling not in LOSS_SCALINGS:
        raise ValueError(f"loss_scaling must be one of {LOSS_SCALINGS}, got {loss_scaling!r}")
    validate.counts(global_batch=global_batch)
    if global_batch < strategy.num_replicas_in_sync:
        raise ValueError(
            f"global_batch={global_batch} gives some of the "
            f"{strategy.num_replicas_in_sync} replicas no examples"
        )
    with strategy.scope():  # optimizer slots (Adam's moments) mirrored, made before tracing
        optimizer.build(model.trainable_variables)
    per_example_loss = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="none"
    )

    def replica_step(x, y):  # runs once per replica, on that replica's slice of the batch
        with tf.GradientTape() as tape:
            losses = per_example_loss(y, model(x, training=True))
            penalty = tf.add_n(model.losses) if model.losses else 0.0
            if loss_scaling == "global":  # right: sum / global batch, penalty / replicas
                loss = tf.nn.compute_average_loss(losses, global_batch_size=global_batch)
                loss += tf.nn.scale_regularization_loss(penalty)
            else:  # the classic mistake (section 4b): each replica's own mean, full penalty
                loss = tf.reduce_mean(losses) + penalty
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))  # sums
        return tf.nn.compute_average_loss(losses, global_batch_size=global_batch)

    @tf.function
    def step(distributed_batch):
        x, y = distributed_batch
        per_replica_loss = strategy.run(replica_step, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss, axis=None)

    return step


def twin_model(model, strategy=None):
    """A copy of a built Keras ``model`` with the same weights, created under ``strategy``."""
    import tensorflow as tf

    if not model.built:
        raise ValueError("build the model first (call it on a batch) so it has weights to copy")
    strategy = strategy or tf.distribute.get_strategy()
    with strategy.scope():
        twin = tf.keras.models.clone_model(model)
        twin.build(model.inputs[0].shape if model.inputs else None)
        twin.set_weights(model.get_weights())
    return twin


def max_abs_difference(weights_a, weights_b) -> float:
    """Largest elementwise |a - b| between two lists of arrays (e.g. ``get_weights()``).
    Defined in lesson 01 (section 4), as is :func:`update_norm`; lesson 04 and the exercise
    checks reuse them from here, and tests/test_mirrored.py checks that they are the lesson's."""
    if len(weights_a) != len(weights_b):
        raise ValueError(f"{len(weights_a)} arrays vs {len(weights_b)}: not the same model")
    return max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
        for a, b in zip(weights_a, weights_b, strict=True)
    )


def update_norm(before, after) -> float:
    """Euclidean norm of the change from ``before`` to ``after`` (lists of arrays)."""
    squares = (
        np.sum((np.asarray(b) - np.asarray(a)) ** 2) for a, b in zip(before, after, strict=True)
    )
    return float(np.sqrt(sum(squares)))
