"""TF1 parameter-server graphs: a worker's model and where its parts go (lesson 08).

Each worker builds its own ``tf.Graph`` (between-graph replication): ``replica_device_setter``
puts the variables on the ps tasks (round-robin in creation order) and the compute on that
worker's device. This module holds the graph lesson 08's worker program builds, reports its
placement (for lesson 08's exercises) and gives non-chief workers a session that polls
quickly for the chief (the program's class, reused by the exercise checks' programs).
:mod:`tflearn_helpers.topics.ps_workers` runs the workers and measures them.
"""

from __future__ import annotations

from ..taught.lesson08 import build_graph
from .placement import short_device

__all__ = ["build_graph", "placement", "quick_worker_session_creator"]


def quick_worker_session_creator(target: str, config):
    """A non-chief's session creator that checks for the chief's variables every 0.2 s
    (``MonitoredTrainingSession`` polls every 30 s and cannot be told otherwise): lesson 08's
    ``QuickWorkerSessionCreator``, for programs the course writes itself."""
    from ..taught.lesson08 import QuickWorkerSessionCreator

    return QuickWorkerSessionCreator(target, config)


def placement(num_ps: int, *, partitions: int = 0) -> list[tuple]:
    """(variable, shape, device, bytes) for worker 0's graph (:func:`build_graph`) on a
    cluster of ``num_ps`` ps tasks, as replica_device_setter placed it. ``partitions`` > 0
    adds an embedding table split into that many shards."""
    import tensorflow as tf

    v1 = tf.compat.v1
    if not isinstance(num_ps, int) or num_ps < 1:
        raise ValueError(f"need num_ps >= 1 ps tasks, got {num_ps!r}")
    if partitions < 0:
        raise ValueError(f"partitions must be >= 0, got {partitions}")
    ps = [f"localhost:{2222 + i}" for i in range(num_ps)]  # addresses only: nothing starts
    cluster = tf.train.ClusterSpec({"ps": ps, "worker": ["localhost:2221"]})
    graph = tf.Graph()
    with graph.as_default():
        build_graph(cluster, 0)
        if partitions:
            with v1.device(v1.train.replica_device_setter(cluster=cluster)):
                v1.get_variable(
                    "embedding", [1000, 16], partitioner=v1.fixed_size_partitioner(partitions)
                )
        return [
            (
                v.op.name,
                tuple(v.shape.as_list()),
                short_device(v.device),
                v.shape.num_elements() * v.dtype.size,
            )
            for v in v1.global_variables()
        ]
