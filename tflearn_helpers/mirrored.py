"""Synchronous data parallelism with MirroredStrategy (taught in lesson 03).

A custom training step with the loss scaled either the right way (by the global batch)
or the classic wrong way (per replica), and the checks the lesson asserts: every replica
holds the same variables, and what each replica sees. (Lesson 03's learnable synthetic
data is ``datasets.teacher_data``.)
"""

from __future__ import annotations

import numpy as np

from . import validate

__all__ = [
    "LOSS_SCALINGS",
    "make_train_step",
    "max_abs_difference",
    "per_replica_shapes",
    "replica_copies",
    "replica_count",
    "replica_divergence",
    "twin_model",
    "update_norm",
    "warmup_lr",
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


def make_train_step(strategy, model, optimizer, global_batch_size: int, loss_scaling="global"):
    """A ``tf.function`` training step on a distributed batch ``(x, y)`` (the step lesson 03
    writes inline; lesson 04 and the benchmarks reuse it from here).

    ``loss_scaling="global"`` divides each replica's summed loss by the *global* batch
    (``tf.nn.compute_average_loss``), so the all-reduced (summed) gradients equal the
    gradient of the mean loss over the whole batch; ``model.losses`` (regularization) are
    divided by the replicas (``tf.nn.scale_regularization_loss``). ``"per_replica"`` takes
    each replica's own mean and whole penalty: the classic mistake (gradients
    ``num_replicas`` times too large).
    Returns the step; it returns the mean loss over the global batch.
    """
    import tensorflow as tf

    if loss_scaling not in LOSS_SCALINGS:
        raise ValueError(f"loss_scaling must be one of {LOSS_SCALINGS}, got {loss_scaling!r}")
    validate.whole_number("global_batch_size", global_batch_size, minimum=1)
    if global_batch_size < strategy.num_replicas_in_sync:
        raise ValueError(
            f"global_batch_size={global_batch_size} gives some of the "
            f"{strategy.num_replicas_in_sync} replicas no examples"
        )
    with strategy.scope():  # slots (e.g. Adam's) made now, not inside the replicated step
        optimizer.build(model.trainable_variables)
    per_example = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            losses = per_example(y, model(x, training=True))
            penalty = tf.add_n(model.losses) if model.losses else 0.0
            if loss_scaling == "global":
                loss = tf.nn.compute_average_loss(losses, global_batch_size=global_batch_size)
                loss += tf.nn.scale_regularization_loss(penalty)
            else:
                loss = tf.reduce_mean(losses) + penalty
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return tf.nn.compute_average_loss(losses, global_batch_size=global_batch_size)

    @tf.function
    def step(batch):
        x, y = batch
        per_replica = strategy.run(replica_step, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    return step


def warmup_lr(step: int, base_lr: float, replicas: int, warmup_steps: int) -> float:
    """Linear scaling with gradual warm-up (Goyal et al. 2017, arXiv:1706.02677).

    The target rate is ``base_lr * replicas``; it is reached linearly over the first
    ``warmup_steps`` steps, starting from ``base_lr * replicas / warmup_steps``.
    """
    if step < 0 or base_lr <= 0 or replicas < 1 or warmup_steps < 0:
        raise ValueError(
            "need step >= 0, base_lr > 0, replicas >= 1, warmup_steps >= 0; got "
            f"step={step}, base_lr={base_lr}, replicas={replicas}, warmup_steps={warmup_steps}"
        )
    target = base_lr * replicas
    if warmup_steps == 0:
        return target
    return target * min(1.0, (step + 1) / warmup_steps)


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
    """Largest elementwise |a - b| between two lists of arrays (e.g. ``get_weights()``)."""
    if len(weights_a) != len(weights_b):
        raise ValueError(f"{len(weights_a)} arrays vs {len(weights_b)}: not the same model")
    return max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
        for a, b in zip(weights_a, weights_b, strict=True)
    )


def update_norm(before, after) -> float:
    """Euclidean norm of the change from ``before`` to ``after`` (lists of arrays)."""
    return float(
        np.sqrt(
            sum(
                np.sum((np.asarray(b) - np.asarray(a)) ** 2)
                for a, b in zip(before, after, strict=True)
            )
        )
    )
