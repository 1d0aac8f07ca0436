"""ParameterServerStrategy throughput, for the benchmark (lesson 09 defines it).

``measure_workers`` is lesson 09's section 8 function, the same code
(tests/test_parameter_server.py compares the two by their syntax trees); the lesson's data
and model are in ``datasets``, its processes and their event lines in ``cluster``.
"""

from __future__ import annotations

import gc
import time

import portpicker

from . import validate

__all__ = ["measure_workers"]


def measure_workers(spec, n, *, steps, work):
    """(steps/s, steps each worker ran) of a compute-only step on the first n workers.

    Lesson 09 defines it (section 8); benchmarks/ps_strategy_workers.py runs it.
    """
    _check_cluster(spec)
    validate.whole_number("n", n, minimum=1, maximum=len(spec["worker"]))
    validate.counts(steps=steps, work=work)
    import tensorflow as tf

    chief = [f"localhost:{portpicker.pick_unused_port()}"]  # a fresh chief port for each connection
    sub = {**spec, "worker": spec["worker"][:n], "chief": chief}
    gc.collect()  # free the old connection's functions while its servers still know them
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(sub), task_type="chief", task_id=0, rpc_layer="grpc"
    )
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        w = tf.Variable(tf.random.stateless_normal([128, 128], seed=[0, 0]) * 0.05)
        per_worker = tf.Variable(tf.zeros([n], tf.int64))

    @tf.function
    def step():
        local_w = w.read_value()  # one read from the ps per step; the loop runs on the worker
        h = tf.random.normal([128, 128])
        for _ in tf.range(work):
            h = tf.tanh(tf.matmul(h, local_w))
        w.assign_add(1e-6 * tf.reduce_mean(h) * tf.ones_like(local_w))
        worker = tf.distribute.coordinator.experimental_get_current_worker_index()
        per_worker.assign_add(tf.one_hot(worker, n, dtype=tf.int64))

    for _ in range(4):  # warm up: trace the step, build each worker's function
        coordinator.schedule(step)
    coordinator.join()
    before, start = per_worker.numpy(), time.perf_counter()
    for _ in range(steps):
        coordinator.schedule(step)
    coordinator.join()
    elapsed = time.perf_counter() - start
    return steps / elapsed, [int(k) for k in per_worker.numpy() - before]


def _check_cluster(spec) -> None:
    if not isinstance(spec, dict):
        raise TypeError(
            f"spec must be a cluster dict of job -> addresses, got {type(spec).__name__}"
        )
    missing = [job for job in ("chief", "worker", "ps") if not spec.get(job)]
    if missing:
        raise ValueError(
            f"a ParameterServerStrategy cluster needs chief, worker and ps tasks; "
            f"missing {missing} (use cluster.local_cluster_spec(workers=.., ps=.., chief=True))"
        )
