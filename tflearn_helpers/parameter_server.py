"""ParameterServerStrategy plumbing (taught in lesson 02).

Builds a strategy and its ClusterCoordinator from a cluster dict (lesson 02 writes the same
code inline first; its throughput section reuses this), tags scheduled steps with the
worker that ran them, measures steps/s with 1..n workers and audits a step counter after
failures. The lesson's data is in ``datasets``; its processes and their event lines are
``cluster.processes`` and ``cluster.events``.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass

from . import validate
from .cluster import pick_ports

__all__ = [
    "StepAudit",
    "make_strategy",
    "measure_workers",
    "shard_rows",
    "sub_cluster",
    "worker_ids",
]


def make_strategy(cluster: dict[str, list[str]], *, shards: int = 0):
    """A ParameterServerStrategy driven from this process (the cluster's "chief").

    shards: split each large variable into this many pieces over the ps tasks (0: none).
    Returns ``(strategy, coordinator)``.
    """
    _check_cluster(cluster)
    validate.whole_number("shards", shards, minimum=0)
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type="chief", task_id=0, rpc_layer="grpc"
    )
    partitioner = None
    if shards:
        partitioner = tf.distribute.experimental.partitioners.FixedShardsPartitioner(shards)
    strategy = tf.distribute.ParameterServerStrategy(resolver, variable_partitioner=partitioner)
    return strategy, tf.distribute.coordinator.ClusterCoordinator(strategy)


def sub_cluster(cluster: dict[str, list[str]], workers: int) -> dict[str, list[str]]:
    """The same ps tasks with only the first ``workers`` workers and a fresh chief port.

    A process that connects again (to measure 1, 2, 4 workers) needs a new chief address:
    the chief's own gRPC server keeps its port until the process exits.
    """
    _check_cluster(cluster)
    validate.whole_number("workers", workers, minimum=1, maximum=len(cluster["worker"]))
    out = {job: list(addresses) for job, addresses in cluster.items()}
    out["worker"] = out["worker"][:workers]
    out["chief"] = [f"localhost:{pick_ports(1)[0]}"]
    return out


def worker_ids(coordinator):
    """A value that each worker sees as its own index, to pass to ``schedule(args=...)``.

    ClusterCoordinator offers no public way for a step to know where it runs, so this
    creates one small resource per worker, the way ``create_per_worker_dataset`` does
    (through the coordinator's internal worker list). Like a per-worker dataset, it is
    rebuilt when a failed worker comes back.
    """
    workers = getattr(getattr(coordinator, "_cluster", None), "workers", None)
    if workers is None:
        raise TypeError(f"expected a ClusterCoordinator, got {type(coordinator).__name__}")
    import tensorflow as tf

    ident = tf.function(tf.identity)
    values = tuple(
        w.create_resource(ident, args=(tf.constant(i, tf.int32),)) for i, w in enumerate(workers)
    )
    return tf.distribute.experimental.coordinator.PerWorkerValues(values)


def shard_rows(variable) -> list[tuple[str, str, str]]:
    """(name, shape, device) of each piece of a (possibly sharded) variable."""
    pieces = getattr(variable, "variables", None) or [variable]
    return [(v.name, str(tuple(v.shape)), v.device) for v in pieces]


def measure_workers(cluster, workers: int, *, steps: int, work: int = 64, warmup: int = 4):
    """Steps/s of a compute-only step scheduled on the first ``workers`` workers.

    Connects this process to ``sub_cluster(cluster, workers)`` (servers already running).
    Returns ``(steps_per_second, steps_each_worker_ran)``.
    """
    if steps < 1 or warmup < 0 or work < 1:
        raise ValueError(f"need steps >= 1, warmup >= 0, work >= 1; got {steps}, {warmup}, {work}")
    sub = sub_cluster(cluster, workers)
    import tensorflow as tf

    # Free what the current connection no longer uses while it can still be told to: after
    # the reconnection TensorFlow would log errors about functions the servers forgot.
    gc.collect()
    strategy, coordinator = make_strategy(sub)
    with strategy.scope():
        w = tf.Variable(tf.random.stateless_normal([128, 128], seed=[0, 0]) * 0.05)
        per_worker = tf.Variable(tf.zeros([workers], tf.int64))
    ids = worker_ids(coordinator)

    @tf.function
    def step(worker_id):
        local_w = w.read_value()  # one read from the ps per step; the loop runs on the worker
        h = tf.random.normal([128, 128])
        for _ in tf.range(work):
            h = tf.tanh(tf.matmul(h, local_w))
        w.assign_add(1e-6 * tf.reduce_mean(h) * tf.ones_like(local_w))
        per_worker.assign_add(tf.one_hot(worker_id, workers, dtype=tf.int64))

    for _ in range(warmup):
        coordinator.schedule(step, args=(ids,))
    coordinator.join()
    before = per_worker.numpy()
    start = time.perf_counter()
    for _ in range(steps):
        coordinator.schedule(step, args=(ids,))
    coordinator.join()
    elapsed = time.perf_counter() - start
    return steps / elapsed, [int(n) for n in per_worker.numpy() - before]


@dataclass(frozen=True)
class StepAudit:
    """A step counter checked against the steps the coordinator was asked to run.

    Every scheduled function adds 1 to ``applied`` on a ps. ``join()`` returning means
    each one finished at least once; a function cut off on a dying worker after its
    increment runs again elsewhere, so ``applied`` may exceed ``scheduled``.
    """

    scheduled: int
    applied: int
    in_flight_bound: int

    def __post_init__(self):
        for name in ("scheduled", "applied", "in_flight_bound"):
            validate.whole_number(name, getattr(self, name), minimum=0)

    @property
    def lost(self) -> int:
        """Scheduled steps that never ran (0 is what fault tolerance promises)."""
        return max(0, self.scheduled - self.applied)

    @property
    def extra(self) -> int:
        """Executions beyond one per scheduled step (re-runs of interrupted functions)."""
        return max(0, self.applied - self.scheduled)

    @property
    def within_bound(self) -> bool:
        return self.extra <= self.in_flight_bound


def _check_cluster(cluster) -> None:
    if not isinstance(cluster, dict):
        raise TypeError(f"cluster must be a dict of job -> addresses, got {type(cluster).__name__}")
    missing = [job for job in ("chief", "worker", "ps") if not cluster.get(job)]
    if missing:
        raise ValueError(
            f"a ParameterServerStrategy cluster needs chief, worker and ps tasks; "
            f"missing {missing} (use cluster.local_cluster_spec(workers=.., ps=.., chief=True))"
        )
