"""All-reduce: the ``cross_device_ops`` MirroredStrategy can use, and how long each takes
to sum a tensor on this machine (taught in lesson 01, which writes both itself).

On simulated devices of one process a "send" is at most a memory copy, so the times show
the reduction work and synchronisation, not a network.
"""

from __future__ import annotations

import time

import numpy as np

from . import validate

__all__ = ["ALGORITHMS", "cross_device_ops", "time_allreduce"]

#: name -> what it is; the order is the order lesson 01 shows them in.
ALGORITHMS = {
    "collective": "CollectiveAllReduce (MirroredStrategy's default): RING on CPUs and "
    "logical GPUs, NCCL on real GPUs",
    "hierarchical_copy": "HierarchicalCopyAllReduce: sum within two halves, then between "
    "them, copy back (built for the 8-GPU DGX-1)",
    "reduce_to_one": "ReductionToOneDevice: everyone sends to one device, it sums and "
    "sends the result back",
    "nccl": "NcclAllReduce: NVIDIA's NCCL library; real GPUs only",
}


def cross_device_ops(algorithm: str):
    """The ``cross_device_ops`` object for ``MirroredStrategy`` (None = its default)."""
    import tensorflow as tf

    factories = {
        "collective": lambda: None,
        "hierarchical_copy": tf.distribute.HierarchicalCopyAllReduce,
        "reduce_to_one": tf.distribute.ReductionToOneDevice,
        "nccl": tf.distribute.NcclAllReduce,
    }
    if algorithm not in factories:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {list(ALGORITHMS)}")
    return factories[algorithm]()


def time_allreduce(strategy, num_floats, steps):
    """Time ``strategy``'s summing all-reduce of a float32 tensor of ``num_floats`` per replica:
    the seconds each of ``steps`` calls took. Defined in lesson 01
    (notebooks/01_mirrored_strategy.ipynb, section 5), which explains it; the benchmarks reuse
    it from here. tests/test_allreduce.py checks that this is the lesson's code (argument
    checks aside).

    The sum is checked once before timing (a broken reduction raises instead of looking
    fast). Pass the strategy the program already has: two collective MirroredStrategy
    objects in one process clash (tensorflow/tensorflow#62790).
    """
    import tensorflow as tf

    validate.counts(num_floats=num_floats, steps=steps)
    if not isinstance(strategy, tf.distribute.Strategy):
        raise TypeError(f"strategy must be a tf.distribute.Strategy, got {type(strategy).__name__}")

    def fill():  # replica r holds a tensor full of r + 1
        r = tf.distribute.get_replica_context().replica_id_in_sync_group
        return tf.fill([num_floats], tf.cast(r + 1, tf.float32))

    def reduce(x):  # the all-reduce; a small witness comes back, so timing copies no bulk
        total = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, x)
        return tf.stack([total[0], total[-1]])

    grads = tf.function(lambda: strategy.run(fill))()
    run = tf.function(lambda: strategy.experimental_local_results(strategy.run(reduce, (grads,))))
    expected = strategy.num_replicas_in_sync * (strategy.num_replicas_in_sync + 1) / 2
    for witness in run():
        if not np.all(witness.numpy() == expected):
            raise RuntimeError(f"the all-reduce gave {witness.numpy()}, not {expected}")
    seconds = []
    for _ in range(steps):
        start = time.perf_counter()
        [w.numpy() for w in run()]  # .numpy() waits until the all-reduce has finished
        seconds.append(time.perf_counter() - start)
    return seconds
