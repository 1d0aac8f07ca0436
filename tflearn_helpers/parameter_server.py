"""ParameterServerStrategy plumbing (taught in lesson 02).

Builds a strategy and its ClusterCoordinator from a cluster dict (lesson 02 writes the same
code inline first; its throughput section reuses this), tags scheduled steps
with the worker that ran them, audits a step counter after failures, and follows the log
of a coordinator that runs as its own process (one process drives one cluster).
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from .cluster.local import _die_with_parent, pick_ports

EVENT_TAG = "PSDEMO"


def make_strategy(cluster: dict[str, list[str]], *, shards: int = 0):
    """A ParameterServerStrategy driven from this process (the cluster's "chief").

    shards: split each large variable into this many pieces over the ps tasks (0: none).
    Returns ``(strategy, coordinator)``.
    """
    _check_cluster(cluster)
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 0:
        raise ValueError(f"shards must be a whole number >= 0, got {shards!r}")
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
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise ValueError(f"workers must be a whole number, got {workers!r}")
    if not 1 <= workers <= len(cluster["worker"]):
        raise ValueError(f"workers must be 1..{len(cluster['worker'])}, got {workers}")
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
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")

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


# -- the lesson's model and data (shared by the notebook and its evaluator process) -------
def toy_dataset(batch: int, *, seed: int = 0, repeat: bool = True):
    """Batches of a noisy linear regression with 8 features (the same function every call)."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a whole number >= 1, got {batch!r}")
    import tensorflow as tf

    true_w = tf.linspace(-1.0, 1.0, 8)[:, None]
    x = tf.random.stateless_normal([1024, 8], seed=[seed, 1])
    y = x @ true_w + 0.1 * tf.random.stateless_normal([1024, 1], seed=[seed, 2])
    data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024, seed=seed)
    return (data.repeat() if repeat else data).batch(batch, drop_remainder=True)


def toy_model():
    """A small MLP for ``toy_dataset`` (tf.keras: tf_keras in lesson 02's processes)."""
    import tensorflow as tf

    return tf.keras.Sequential(
        [tf.keras.layers.Dense(32, activation="relu", input_shape=(8,)), tf.keras.layers.Dense(1)]
    )


# -- a coordinator in its own process ------------------------------------------------------
def emit(kind: str, **fields) -> None:
    """Print one machine-readable event line (used by the lesson's coordinator scripts)."""
    print(f"{EVENT_TAG} {json.dumps({'kind': kind, **fields}, sort_keys=True)}", flush=True)


def events(text: str) -> list[dict]:
    """The events ``emit`` printed, in order, from a log's text."""
    found = []
    for line in text.splitlines():
        if line.startswith(EVENT_TAG + " "):
            try:
                found.append(json.loads(line[len(EVENT_TAG) + 1 :]))
            except json.JSONDecodeError:
                continue  # a line cut short while the process was writing it
    return found


def wait_for_event(
    read_log: Callable[[], str],
    predicate: Callable[[dict], bool],
    *,
    timeout: float = 60.0,
    alive: Callable[[], bool] | None = None,
) -> dict:
    """The first event in the log for which ``predicate`` is true; wait for it.

    Raises TimeoutError after ``timeout`` s, or RuntimeError when ``alive()`` says the
    process has exited without it; both carry the log's tail.
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    deadline = time.monotonic() + timeout
    while True:
        text = read_log()
        for event in events(text):
            if predicate(event):
                return event
        if alive is not None and not alive():
            raise RuntimeError(f"the process exited before the event. Log tail:\n{text[-2000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no such event after {timeout:.0f} s. Log tail:\n{text[-2000:]}")
        time.sleep(0.1)


def start_script(args: list[str], *, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a command in the background (its own process group, killed with this process);
    collect it with :func:`finish_script`."""
    if not args:
        raise ValueError("args must name a program to run")
    return subprocess.Popen(
        [str(a) for a in args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ, **(env or {})),
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )


def finish_script(proc: subprocess.Popen, *, timeout: float):
    """Wait up to ``timeout`` s for ``proc``, then kill its process group.

    Returns ``(exit_code, output)``; ``exit_code`` is None when it was killed for time.
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=10)
        return None, out


def run_script(args: list[str], *, timeout: float, env: dict[str, str] | None = None):
    """Run a command to completion or until ``timeout`` s; see :func:`finish_script`."""
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    return finish_script(start_script(args, env=env), timeout=timeout)


def _check_cluster(cluster) -> None:
    if not isinstance(cluster, dict):
        raise TypeError(f"cluster must be a dict of job -> addresses, got {type(cluster).__name__}")
    missing = [job for job in ("chief", "worker", "ps") if not cluster.get(job)]
    if missing:
        raise ValueError(
            f"a ParameterServerStrategy cluster needs chief, worker and ps tasks; "
            f"missing {missing} (use cluster.local_cluster_spec(workers=.., ps=.., chief=True))"
        )
