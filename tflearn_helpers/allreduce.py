"""All-reduce: the algorithms MirroredStrategy can use, what each replica sends, and
how long each takes on this machine (taught in lesson 03).

The byte counts are a model of each algorithm as TensorFlow implements it (one packed
gradient of ``S`` bytes, ``n`` replicas); nothing here measures network traffic. On
simulated devices of one process a "send" is at most a memory copy, so the times show
the reduction work and synchronisation, not a network.
"""

from __future__ import annotations

from . import validate
from .measure import Timing, ring_allreduce_bytes, time_steps

__all__ = ["ALGORITHMS", "bytes_sent", "cross_device_ops", "time_allreduce", "unavailable_reasons"]

#: name -> what it is; the order is the order lesson 03 shows them in.
ALGORITHMS = {
    "collective": "CollectiveAllReduce (MirroredStrategy's default): RING on CPUs and "
    "logical GPUs, NCCL on real GPUs",
    "hierarchical_copy": "HierarchicalCopyAllReduce: sum within two halves, then between "
    "them, copy back (built for the 8-GPU DGX-1)",
    "reduce_to_one": "ReductionToOneDevice: everyone sends to one device, it sums and "
    "sends the result back",
    "nccl": "NcclAllReduce: NVIDIA's NCCL library; real GPUs only",
}


def bytes_sent(algorithm: str, size_bytes: float, n: int) -> list[float]:
    """Bytes each of ``n`` replicas sends to all-reduce one ``size_bytes`` tensor (model).

    collective / nccl: ring, 2(n-1)/n*S each. reduce_to_one: the root sends (n-1)*S,
    the others S. hierarchical_copy (TensorFlow's two-group tree): each group root sends
    (n/2)*S, the others S; it needs an even ``n``.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {list(ALGORITHMS)}")
    validate.whole_number("n (the number of replicas)", n, minimum=1)
    if size_bytes < 0:
        raise ValueError(f"size_bytes must be >= 0, got {size_bytes}")
    if n == 1:
        return [0.0]
    if algorithm in ("collective", "nccl"):
        return [ring_allreduce_bytes(size_bytes, n)] * n
    if algorithm == "reduce_to_one":
        return [(n - 1) * size_bytes] + [float(size_bytes)] * (n - 1)
    if n % 2:
        raise ValueError(f"hierarchical copy splits the replicas in two equal groups: n={n} is odd")
    half = n // 2
    return [half * size_bytes if i % half == 0 else float(size_bytes) for i in range(n)]


def unavailable_reasons(course) -> dict[str, str | None]:
    """name -> why the algorithm cannot run on ``course``'s devices, or None when it can."""
    plan = course.plan
    reasons = {name: None for name in ALGORITHMS}
    if plan.kind != "GPU":
        reasons["nccl"] = "NCCL runs on NVIDIA GPUs only"
    elif plan.simulated:
        reasons["nccl"] = (
            "NCCL cannot run between logical GPUs of one physical GPU (tensorflow/tensorflow#40735)"
        )
    elif len(course.devices) < 2:
        reasons["nccl"] = "NCCL needs at least two GPUs"
    return reasons


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


def time_allreduce(strategy, num_floats: int, steps: int = 3) -> Timing:
    """Time ``strategy``'s summing all-reduce of a ``num_floats`` float32 tensor per replica.

    Each replica holds a tensor filled with (its replica id + 1); the result is checked
    once (every element must equal 1 + 2 + ... + n) before timing, so a broken
    reduction raises instead of looking fast. Pass the strategy the lesson already has:
    two collective MirroredStrategy objects in one process clash (tensorflow/tensorflow#62790).
    """
    import tensorflow as tf

    validate.whole_number("num_floats", num_floats, minimum=1)
    if not isinstance(strategy, tf.distribute.Strategy):
        raise TypeError(f"strategy must be a tf.distribute.Strategy, got {type(strategy).__name__}")
    n = strategy.num_replicas_in_sync

    def fill():
        rid = tf.distribute.get_replica_context().replica_id_in_sync_group
        return tf.fill([num_floats], tf.cast(rid + 1, tf.float32))

    def reduce(x):
        total = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, x)
        return tf.stack([total[0], total[-1]])  # a small witness, so timing copies no bulk

    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")  # a new tf.function per call: its retracing warning is expected
    try:
        grads = tf.function(lambda: strategy.run(fill))()
        run = tf.function(
            lambda: strategy.experimental_local_results(strategy.run(reduce, (grads,)))
        )
        expected = n * (n + 1) / 2
        for witness in run():
            if not all(float(v) == expected for v in witness.numpy()):
                raise RuntimeError(f"the all-reduce gave {witness.numpy()}, not {expected}")
        return time_steps(run, steps=steps, warmup=0)
    finally:
        logger.setLevel(level)
