"""Run TF1 parameter-server training and measure it (taught in lesson 08).

Lesson 08's workers (and ``benchmarks/ps_async_vs_sync.py``'s) are processes running the
worker program the lesson writes: :class:`WorkerProcesses` starts them and reads their
event lines (``programs.events``). Worker 0 is the chief. Every step records the global
step read before computing and the one seen after applying, which gives the *staleness* of
its update: how many updates other workers applied in between.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

import numpy as np

from .. import cluster
from ..programs import events, processes

__all__ = [
    "WorkerLog",
    "WorkerProcesses",
    "parse_worker_log",
    "summarize",
]


@dataclass
class WorkerLog:
    """What one worker saw, step by step."""

    task_index: int
    before: list[int] = field(default_factory=list)
    after: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    ready_at: float = float("nan")  # wall-clock time its session was ready
    trace: dict = field(default_factory=dict)  # device -> op types its traced step ran

    @property
    def staleness(self) -> list[int]:
        """Updates by *other* workers between this worker's read and its own update."""
        return [a - b - 1 for b, a in zip(self.before, self.after, strict=False)]


def summarize(logs: list[WorkerLog], warmup: int = 2) -> dict:
    """Totals, rates and staleness over the workers' logs.

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
    }


# -- worker processes running the lesson's own worker program --------------------------
def parse_worker_log(task_index: int, text: str) -> WorkerLog:
    """A WorkerLog from a worker program's output: its events, ``ready`` (``t``) when its
    session is ready, ``step`` (``before``, ``after``, ``loss``, ``t``) per step, and
    ``trace`` (``ran``: device -> op types) after its traced step."""
    log = WorkerLog(task_index)
    for event in events.parse(text):
        if event["kind"] == "ready":
            log.ready_at = float(event["t"])
        elif event["kind"] == "step":
            log.before.append(int(event["before"]))
            log.after.append(int(event["after"]))
            log.losses.append(float(event["loss"]))
            log.times.append(float(event["t"]))
        elif event["kind"] == "trace":
            log.trace = event["ran"]
    return log


class WorkerProcesses:
    """``workers`` processes running ``program`` as worker tasks 0..workers-1 of ``spec``.

    Each gets its TF_CONFIG from :class:`cluster.LocalCluster` (so it dies with the kernel)
    and ``--go-file``: the program creates its session, reports ``ready`` and waits
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
        self.procs = cluster.LocalCluster(spec, env={"CUDA_VISIBLE_DEVICES": "", **(env or {})})
        self.go_file = self.procs.log_dir / "go"
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
