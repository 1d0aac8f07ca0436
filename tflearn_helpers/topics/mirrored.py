"""Synchronous data parallelism with MirroredStrategy (taught in lesson 01).

A custom training step with the loss scaled either the right way (by the global batch)
or the classic wrong way (per replica), and the comparisons lesson 01 and its exercise checks
make: whether every replica holds the same variables, how far two sets of weights are apart.
(Lesson 01's learnable synthetic data is ``datasets.teacher_data``.)
"""

from __future__ import annotations

import numpy as np

from ..taught.lesson01 import make_train_step, max_abs_difference, update_norm

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
