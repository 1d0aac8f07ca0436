"""Run TF1 parameter-server training and measure it (taught in lesson 01).

Lesson 01's workers are processes running the worker program the lesson writes
(:class:`WorkerProcesses` starts them and reads their JSON lines); the benchmark's workers
are threads (:class:`Training`), each with its own graph and ``MonitoredSession``. Worker 0
is the chief. Every step records the global step read before computing and the one seen
after applying, which gives the *staleness* of its update: how many updates other workers
applied in between.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import between_graph, cluster
from .cluster import processes

__all__ = [
    "MODES",
    "Training",
    "WorkerLog",
    "WorkerProcesses",
    "parse_worker_log",
    "release",
    "rollbacks",
    "summarize",
]

MODES = ("async", "sync")


@dataclass
class WorkerLog:
    """What one worker saw, step by step."""

    task_index: int
    before: list[int] = field(default_factory=list)
    after: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    ready_after_s: float = float("nan")
    ready_at: float = float("nan")  # wall-clock time its session was ready (worker processes)
    error: str = ""

    @property
    def staleness(self) -> list[int]:
        """Updates by *other* workers between this worker's read and its own update."""
        return [a - b - 1 for b, a in zip(self.before, self.after, strict=False)]


class Training:
    """Train until the global step reaches ``updates``, with ``workers`` worker threads.

    ``cluster`` is a TF_CONFIG cluster dict whose ps and worker servers are running.
    ``crash_after={1: 10}`` makes worker 1 vanish after 10 steps, as a crashed machine
    would (no goodbye, no token released). Use ``start()``, then ``join()``.
    """

    def __init__(
        self,
        cluster: dict,
        workers: int,
        updates: int,
        *,
        mode: str,
        container: str,
        batch: int = 32,
        timeout_s: float = 20.0,
        checkpoint_dir: str | None = None,
        checkpoint_steps: int = 20,
        crash_after: dict | None = None,
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        available = len(cluster.get("worker", []))
        if not cluster.get("ps") or not 1 <= workers <= available:
            raise ValueError(
                f"asked for {workers} workers; the cluster has {available} "
                f"worker(s) and {len(cluster.get('ps', []))} ps task(s)"
            )
        if updates < 1 or batch < 1:
            raise ValueError(f"need updates >= 1 and batch >= 1, got {updates}, {batch}")
        self.cluster, self.workers, self.updates, self.mode = cluster, workers, updates, mode
        self.container, self.batch, self.timeout_s = container, batch, timeout_s
        self.checkpoint_dir, self.checkpoint_steps = checkpoint_dir, checkpoint_steps
        self.crash_after = dict(crash_after or {})
        self.logs = [WorkerLog(i) for i in range(workers)]
        self.stop = threading.Event()
        self._all_ready = threading.Barrier(workers)  # everyone steps from the same moment
        self._threads = [
            threading.Thread(target=self._work, args=(i,), daemon=True) for i in range(workers)
        ]

    def target(self, index: int = 0) -> str:
        return f"grpc://{self.cluster['worker'][index]}"

    def start(self) -> Training:
        if self.mode == "sync":
            _quiet_cancelled_queue_runners()
        for thread in self._threads:
            thread.start()
        return self

    def join(self, timeout_s: float = 120.0) -> list[WorkerLog]:
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in self._threads):
            self.stop.set()
            raise TimeoutError(f"{self.mode} training did not finish in {timeout_s:.0f} s")
        return self.logs

    def _work(self, index: int) -> None:
        import tensorflow as tf

        log = self.logs[index]
        started = time.perf_counter()
        sync = self.workers if self.mode == "sync" else 0
        graph = tf.Graph()
        try:
            with graph.as_default(), graph.container(self.container):
                model = between_graph.build_model(
                    index, len(self.cluster["ps"]), sync_replicas=sync
                )
                config = between_graph.session_config(index, self.timeout_s)
                session = _monitored_session(
                    self.target(index),
                    index,
                    model,
                    config,
                    self.checkpoint_dir,
                    self.checkpoint_steps,
                )
                log.ready_after_s = time.perf_counter() - started
                fetches = [
                    model["train_op"],
                    model["loss"],
                    model["step_before"],
                    model["step_after"],
                ]
                with session:
                    self._all_ready.wait(timeout=self.timeout_s)
                    self._steps(index, session, model, fetches, log)
                    if model["release"] is not None and index not in self.crash_after:
                        session.run(model["release"])
        except Exception as err:  # noqa: BLE001 - kept in the log and shown by the lesson
            if isinstance(err, tf.errors.CancelledError) and self.stop.is_set():
                return  # a step cancelled while the others shut down: how a sync run ends
            self._all_ready.abort()  # the others must not wait for this worker to start
            log.error = f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"
        finally:
            if index not in self.crash_after:  # a crashed worker tells no one
                self.stop.set()

    def _steps(self, index, session, model, fetches, log) -> None:
        step = 0
        while not self.stop.is_set():
            if step == self.crash_after.get(index):
                return
            x, y = between_graph.make_data(seed=100_000 * index + step, batch=self.batch)
            _, loss, before, after = session.run(fetches, {model["x"]: x, model["y"]: y})
            log.before.append(int(before))
            log.after.append(int(after))
            log.losses.append(float(loss))
            log.times.append(time.perf_counter())
            step += 1
            if after >= self.updates:
                return


def _monitored_session(
    target: str, index: int, model: dict, config, checkpoint_dir, checkpoint_steps: int
):
    """The chief's MonitoredTrainingSession, or a non-chief's quick-polling session."""
    import tensorflow as tf

    v1 = tf.compat.v1
    if index == 0:
        return v1.train.MonitoredTrainingSession(
            master=target,
            is_chief=True,
            checkpoint_dir=checkpoint_dir,
            hooks=model["hooks"],
            config=config,
            save_checkpoint_steps=checkpoint_steps,
            save_checkpoint_secs=None,
            save_summaries_steps=None,
            save_summaries_secs=None,
            log_step_count_steps=None,
            stop_grace_period_secs=1,
        )
    creator = between_graph.quick_worker_session_creator(target, config)
    return v1.train.MonitoredSession(creator, hooks=model["hooks"], stop_grace_period_secs=1)


def release(cluster: dict, container: str, timeout_s: float = 10.0) -> None:
    """Free everything a run left on the ps tasks (its variables, queues, accumulators);
    pending ops on them (the sync chief's aggregation) are cancelled."""
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto(
        device_filters=["/job:ps"], operation_timeout_in_ms=int(timeout_s * 1000)
    )
    tf.compat.v1.Session.reset(f"grpc://{cluster['ps'][0]}", [container], config=config)


def summarize(logs: list[WorkerLog], warmup: int = 2) -> dict:
    """Totals, rates, staleness and errors over the workers' logs.

    Rates leave out each worker's first ``warmup`` steps (session start, graph
    registration): they are measured from the moment every worker is past them.
    """
    times = [t for log in logs for t in log.times]
    stale = [s for log in logs for s in log.staleness]
    first = min((b for log in logs for b in log.before), default=0)
    last = max((a for log in logs for a in log.after), default=0)
    warm = [log.times[warmup - 1] for log in logs if len(log.times) > warmup and warmup]
    start = max(warm, default=min(times, default=0.0))
    steps = [(t, a) for log in logs for t, a in zip(log.times, log.after, strict=True)]
    window = [(t, a) for t, a in steps if t > start]
    span = max((t for t, _ in window), default=start) - start
    updates_before = max((a for t, a in steps if t <= start), default=first)
    return {
        "worker_steps": len(times),
        "updates": last - first,
        "steps_per_update": len(times) / (last - first) if last > first else float("nan"),
        "updates_per_s": (last - updates_before) / span if span else float("nan"),
        "worker_steps_per_s": len(window) / span if span else float("nan"),
        "mean_staleness": float(np.mean(stale)) if stale else float("nan"),
        "max_staleness": max(stale, default=0),
        "errors": [f"worker {log.task_index}: {log.error}" for log in logs if log.error],
    }


_hook_installed = False


def _quiet_cancelled_queue_runners() -> None:
    """At shutdown the sync chief's aggregation thread is cancelled on purpose (its op
    waits for gradients that will never come); do not print that as a crash."""
    global _hook_installed
    if _hook_installed:
        return
    previous = threading.excepthook

    def hook(args):
        name = getattr(args.thread, "name", "")
        if name.startswith("QueueRunnerThread") and "Cancelled" in type(args.exc_value).__name__:
            return
        previous(args)

    threading.excepthook = hook
    _hook_installed = True


def rollbacks(log: WorkerLog) -> list[tuple[int, int]]:
    """(global step seen, global step read next) wherever the global step went *back*
    between two of this worker's steps: the chief restored an older checkpoint."""
    pairs = zip(log.after, log.before[1:], strict=False)
    return [(seen, read) for seen, read in pairs if read < seen]


# -- worker processes running the lesson's own worker program --------------------------
def parse_worker_log(task_index: int, text: str) -> WorkerLog:
    """A WorkerLog from a worker program's output: one JSON object per line, ``{"ready": t}``
    when its session is ready, then ``{"before", "after", "loss", "t"}`` per step."""
    log = WorkerLog(task_index)
    for line in text.splitlines():
        if not line.startswith("{"):
            continue  # TensorFlow's own messages
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short while the process was writing it
        if "ready" in record:
            log.ready_at = float(record["ready"])
        elif {"before", "after", "loss", "t"} <= set(record):
            log.before.append(int(record["before"]))
            log.after.append(int(record["after"]))
            log.losses.append(float(record["loss"]))
            log.times.append(float(record["t"]))
    return log


class WorkerProcesses:
    """``workers`` processes running ``program`` as worker tasks 0..workers-1 of ``spec``.

    Each gets its TF_CONFIG from :class:`cluster.LocalCluster` (so it dies with the kernel)
    and ``--go-file``: the program creates its session, prints ``{"ready": ...}`` and waits
    for that file, so all workers start stepping together. Use as a context manager.
    """

    def __init__(self, spec: dict, program, workers: int, args=(), *, env=None):
        available = len(spec.get("worker", []))
        if not spec.get("ps") or not 1 <= workers <= available:
            raise ValueError(
                f"asked for {workers} workers; the cluster has {available} worker(s) "
                f"and {len(spec.get('ps', []))} ps task(s)"
            )
        self.workers = workers
        self.tasks = [("worker", i) for i in range(workers)]
        self.go_file = Path(tempfile.mkdtemp(prefix="tflearn-go-")) / "go"
        self.procs = cluster.LocalCluster(spec, env={"CUDA_VISIBLE_DEVICES": "", **(env or {})})
        self.procs.start(str(program), args=[*args, "--go-file", self.go_file], tasks=self.tasks)

    def logs(self) -> list[WorkerLog]:
        return [parse_worker_log(i, self.procs.logs("worker", i)) for i in range(self.workers)]

    def global_step(self) -> int:
        """The highest global step any worker has seen so far."""
        return max((max(log.after, default=0) for log in self.logs()), default=0)

    def go(self, timeout_s: float = 120.0) -> float:
        """Wait until every worker's session is ready, then let them all start; return the
        seconds waited. Raises with a worker's log if one exits first."""
        started = time.monotonic()
        processes.wait_until(
            lambda: not any(np.isnan(log.ready_at) for log in self.logs()),
            timeout_s,
            "every worker to create its session",
            depends_on=[self.procs.procs[task] for task in self.tasks],
        )
        self.go_file.touch()
        return time.monotonic() - started

    def wait_for_step(self, step: int, timeout_s: float = 120.0) -> bool:
        """Wait until the global step reaches ``step``; False if it did not in ``timeout_s``
        (a bounded wait: a stalled run is reported, never waited for forever)."""
        return self._wait_or_false(
            lambda: self.global_step() >= step,
            lambda: not any(self.alive(i) for i in range(self.workers)),
            timeout_s,
            f"global step {step}",
        )

    def wait_for_worker_steps(self, index: int, steps: int, timeout_s: float = 60.0) -> bool:
        """Wait until worker ``index`` has taken ``steps`` steps; False after ``timeout_s``."""
        return self._wait_or_false(
            lambda: len(parse_worker_log(index, self.procs.logs("worker", index)).times) >= steps,
            lambda: not self.alive(index),
            timeout_s,
            f"{steps} steps of worker {index}",
        )

    def alive(self, index: int) -> bool:
        return self.procs.alive("worker", index)

    def kill(self, index: int) -> None:
        """SIGKILL one worker, as a crashed machine vanishes."""
        self.procs.kill("worker", index)

    def freeze(self, index: int) -> None:
        """SIGSTOP one worker: alive but silent, as a machine that hangs. ``finish`` or
        leaving the ``with`` block kills it."""
        os.kill(self.procs.procs[("worker", index)].pid, signal.SIGSTOP)

    def finish(self, grace_s: float = 3.0) -> list[WorkerLog]:
        """Give the workers ``grace_s`` to exit by themselves, stop the rest, return the logs.
        (A sync worker can wait forever at the end for a token no one will send.)"""
        if grace_s > 0:
            self._wait_or_false(
                lambda: not any(self.alive(i) for i in range(self.workers)),
                lambda: False,
                grace_s,
                "the workers to exit by themselves",
            )
        self.procs.close(grace=1.0)
        return self.logs()

    @staticmethod
    def _wait_or_false(done, hopeless, timeout_s: float, what: str) -> bool:
        """True once ``done()``; False when ``hopeless()`` or after ``timeout_s`` s."""
        try:
            processes.wait_until(lambda: done() or hopeless(), timeout_s, what)
        except TimeoutError:
            return False
        return bool(done())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.procs.close(grace=1.0)
        return False
