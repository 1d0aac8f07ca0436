"""Short-lived TensorFlow clusters on localhost (lessons 01, 02 and 06).

``LocalCluster`` starts one real process per task, each with its own TF_CONFIG, and
guarantees teardown: on ``with`` exit (success, exception or kernel interrupt), at
interpreter exit, and, through the kernel's death signal, even when the kernel is killed.

TensorFlow's gRPC servers have no authentication or encryption and accept connections
from any machine that reaches the port (TensorFlow's SECURITY.md). Keep each cluster
alive only as long as its demo, and never on a network you do not trust.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path

import portpicker

from . import tf_config

SECURITY_NOTE = (
    "Security: TensorFlow's gRPC servers accept unauthenticated, unencrypted connections "
    "from anyone who can reach these ports. This cluster lives only for this demo and is "
    "torn down when it ends."
)
_LIVE: weakref.WeakSet = weakref.WeakSet()
_warned = False


def pick_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on this machine."""
    ports: set[int] = set()
    while len(ports) < n:
        ports.add(portpicker.pick_unused_port())
    return sorted(ports)


def local_cluster_spec(
    workers: int = 1, ps: int = 0, chief: bool = False, evaluator: bool = False
) -> dict[str, list[str]]:
    """A cluster dict on localhost with fresh ports: {"worker": ["localhost:PORT", ...], ...}."""
    counts = {"chief": int(chief), "worker": workers, "ps": ps, "evaluator": int(evaluator)}
    for job, n in counts.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"{job} count must be a whole number >= 0, got {n!r}")
    if workers < 1 and not chief:
        raise ValueError("a cluster needs at least one worker or a chief")
    ports = iter(pick_ports(sum(counts.values())))
    return {job: [f"localhost:{next(ports)}" for _ in range(n)] for job, n in counts.items() if n}


def port_is_listening(address: str, timeout: float = 0.2) -> bool:
    host, port = address.rsplit(":", 1)
    with socket.socket() as s:
        s.settimeout(timeout)
        return s.connect_ex((host, int(port))) == 0


def in_process_servers(cluster: dict[str, list[str]], jobs=("worker", "ps")) -> list:
    """Start a tf.distribute.Server in this process for every task of ``jobs``.

    They stop only when the process (the kernel) exits: TensorFlow has no call to stop
    them. Workers get ``inter_op_parallelism_threads = workers + 1``: with 1 thread a
    worker can block on a remote value while holding its only thread (it deadlocks).
    """
    import tensorflow as tf

    _warn_once()
    spec = tf.train.ClusterSpec(cluster)
    config = tf.compat.v1.ConfigProto(
        inter_op_parallelism_threads=len(cluster.get("worker", [])) + 1
    )
    return [
        tf.distribute.Server(
            spec, job_name=job, task_index=i, config=config, protocol="grpc", start=True
        )
        for job in jobs
        for i in range(len(cluster.get(job, [])))
    ]


class LocalCluster:
    """Real processes on localhost, one per task; use as a context manager.

    ``start(target)`` runs ``target`` in every task (a script path, or "server" for a bare
    gRPC server), each with its own TF_CONFIG. ``tasks`` limits which tasks start.
    """

    def __init__(
        self,
        cluster: dict[str, list[str]],
        *,
        log_dir: str | None = None,
        env: dict[str, str] | None = None,
    ):
        for job in cluster:  # validate the whole cluster once, via any task of it
            tf_config.build(cluster, job, 0)
        self.cluster = cluster
        self.log_dir = Path(log_dir or tempfile.mkdtemp(prefix="tflearn-cluster-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.env = dict(env or {})
        self.procs: dict[tuple[str, int], subprocess.Popen] = {}
        self._targets: dict[tuple[str, int], list[str]] = {}
        _LIVE.add(self)

    # -- starting -------------------------------------------------------------
    def start(
        self, target: str, args=(), tasks=None, ready_timeout: float = 60.0, wait: bool = True
    ):
        """Start ``target`` for each task; wait until every server task listens (with
        ``wait=False`` return at once, and call ``wait_listening`` when it matters)."""
        _warn_once()
        chosen = tasks or [(j, i) for j, a in self.cluster.items() for i in range(len(a))]
        for task in chosen:
            self._launch(tuple(task), self._command(target, args))
        if target == "server" and wait:
            self.wait_listening(chosen, ready_timeout)
        return self

    def _command(self, target: str, args) -> list[str]:
        if target == "server":
            return [sys.executable, "-m", "tflearn_helpers.cluster.task_server", *map(str, args)]
        return [sys.executable, "-u", str(target), *map(str, args)]

    def _launch(self, task: tuple[str, int], command: list[str]) -> None:
        if task in self.procs and self.procs[task].poll() is None:
            raise RuntimeError(f"task {task[0]}:{task[1]} is already running")
        env = dict(os.environ, **self.env)
        env["TF_CONFIG"] = json.dumps(tf_config.build(self.cluster, *task))
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        log = open(self.log_path(*task), "a", buffering=1)
        self.procs[task] = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log.close()
        self._targets[task] = command

    def wait_listening(self, tasks, timeout: float = 60.0) -> None:
        """Wait until each task's port accepts connections, or raise with its log."""
        deadline = time.monotonic() + timeout
        for job, i in tasks:
            address = self.cluster[job][i]
            while not port_is_listening(address):
                proc = self.procs[(job, i)]
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"{job}:{i} exited with code {proc.returncode} before listening on "
                        f"{address}. Its log:\n{self.logs(job, i)[-2000:]}"
                    )
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{job}:{i} did not listen on {address} in {timeout:.0f} s")
                time.sleep(0.1)

    # -- observing and failing ------------------------------------------------
    def log_path(self, job: str, index: int) -> Path:
        return self.log_dir / f"{job}-{index}.log"

    def logs(self, job: str, index: int) -> str:
        path = self.log_path(job, index)
        return path.read_text(errors="replace") if path.exists() else ""

    def alive(self, job: str, index: int) -> bool:
        proc = self.procs.get((job, index))
        return proc is not None and proc.poll() is None

    def kill(self, job: str, index: int) -> None:
        """Kill one task at once (SIGKILL), as a crashed machine would vanish."""
        proc = self.procs[(job, index)]
        _signal_group(proc, signal.SIGKILL)
        proc.wait(timeout=10)

    def restart(self, job: str, index: int, ready_timeout: float = 60.0) -> None:
        """Start a killed task again with the same command and TF_CONFIG."""
        task = (job, index)
        self._launch(task, self._targets[task])
        if self._targets[task][1:3] == ["-m", "tflearn_helpers.cluster.task_server"]:
            self.wait_listening([task], ready_timeout)

    def wait(self, tasks=None, timeout: float = 300.0) -> dict[tuple[str, int], int]:
        """Wait for tasks to exit; return their exit codes. Raises TimeoutError (with the
        tail of each unfinished task's log) rather than hanging."""
        chosen = tasks or list(self.procs)
        deadline = time.monotonic() + timeout
        codes = {}
        for task in chosen:
            try:
                codes[task] = self.procs[task].wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                tail = self.logs(*task)[-1500:]
                raise TimeoutError(
                    f"{task[0]}:{task[1]} still running after {timeout:.0f} s. Log tail:\n{tail}"
                ) from None
        return codes

    # -- teardown ---------------------------------------------------------------
    def close(self, grace: float = 5.0) -> None:
        """Stop every task (SIGTERM, then SIGKILL after ``grace`` s) and wait for its ports."""
        for proc in self.procs.values():
            if proc.poll() is None:
                _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        for job, index in self.procs:  # only the tasks it started (others may be in-process)
            while port_is_listening(self.cluster[job][index]) and time.monotonic() < deadline:
                time.sleep(0.1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _warn_once() -> None:
    global _warned
    if not _warned:
        print(SECURITY_NOTE)
        _warned = True


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _die_with_parent() -> None:
    """In the child: ask Linux to SIGKILL it when its parent (the kernel) dies."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


@atexit.register
def _close_all() -> None:
    for cluster in list(_LIVE):
        cluster.close(grace=2.0)
