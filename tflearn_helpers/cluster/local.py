"""Short-lived TensorFlow clusters on localhost (lessons 04, 08 and 09).

``LocalCluster`` starts one real process per task, each with its own TF_CONFIG, and
guarantees teardown: on ``with`` exit (success, exception or kernel interrupt), at
interpreter exit, and, through the kernel's death signal, even when the kernel is killed.

TensorFlow's gRPC servers have no authentication or encryption and accept connections
from any machine that reaches the port (TensorFlow's SECURITY.md). Keep each cluster
alive only as long as its demo, and never on a network you do not trust.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import portpicker

from ..programs import processes
from ..runtime import validate
from ..taught.lesson09 import port_is_listening
from . import tf_config

__all__ = [
    "LocalCluster",
    "in_process_servers",
    "local_cluster_spec",
    "port_is_listening",
    "start_server",
]

SECURITY_NOTE = (
    "Security: TensorFlow's gRPC servers accept unauthenticated, unencrypted connections "
    "from anyone who can reach these ports. This cluster lives only for this demo and is "
    "torn down when it ends."
)
_warned = False


def _pick_ports(n: int) -> list[int]:
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
        validate.whole_number(f"{job} count", n, minimum=0)
    if workers < 1 and not chief:
        raise ValueError("a cluster needs at least one worker or a chief")
    ports = iter(_pick_ports(sum(counts.values())))
    return {job: [f"localhost:{next(ports)}" for _ in range(n)] for job, n in counts.items() if n}


def start_server(cluster: dict[str, list[str]], job: str, index: int):
    """A started ``tf.distribute.Server`` for task ``job:index`` of ``cluster``.

    Every server gets ``inter_op_parallelism_threads = workers + 1``. Servers started in one
    process (``in_process_servers``) share one inter-op pool (``ComputePool``, a static in
    tensorflow/core/common_runtime/process_util.cc: the first server sizes it) with each other
    and with a coordinator there: with one thread, a step holds it while it waits for a value
    another server must produce on the same pool, and never finishes. The same one-thread
    servers in separate processes ran the step (lesson 09, section 7, shows both).
    ``workers + 1`` follows TensorFlow's parameter-server tutorial; TensorFlow's own default
    (one thread per core) can be fewer.
    """
    import tensorflow as tf

    threads = len(cluster.get("worker", [])) + 1
    return tf.distribute.Server(
        tf.train.ClusterSpec(cluster),
        job_name=job,
        task_index=index,
        protocol="grpc",
        config=tf.compat.v1.ConfigProto(inter_op_parallelism_threads=threads),
        start=True,
    )


def in_process_servers(cluster: dict[str, list[str]], jobs=("worker", "ps")) -> list:
    """Start a server (:func:`start_server`) in this process for every task of ``jobs``.

    They stop only when the process (the kernel) exits: TensorFlow has no call to stop them.
    """
    _warn_once()
    return [start_server(cluster, job, i) for job in jobs for i in range(len(cluster.get(job, [])))]


class LocalCluster:
    """Real processes on localhost, one per task; use as a context manager.

    ``start(target)`` runs ``target`` in every task (a script path, or "server" for a bare
    gRPC server), each with its own TF_CONFIG. ``tasks`` limits which tasks start. Each task
    is a :class:`processes.Child` in ``procs``, stopped with the cluster or the kernel. Its
    logs go to ``log_dir`` (default: a temporary folder, removed when the interpreter exits).
    ``namespaces`` (``(pid, kinds)``, see :func:`processes.start`) runs every task inside
    another process's namespaces; ``cores`` pins the i-th task to ``cores[i]``.
    """

    def __init__(
        self,
        cluster: dict[str, list[str]],
        *,
        log_dir: str | None = None,
        env: dict[str, str] | None = None,
        namespaces: tuple | None = None,
        cores: list[int] | None = None,
    ):
        for job in cluster:  # validate the whole cluster once, via any task of it
            tf_config.build(cluster, job, 0)
        self.cluster = cluster
        self.log_dir = Path(log_dir or processes.temporary_folder("tflearn-cluster-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.env = dict(env or {})
        self.namespaces = namespaces  # lesson 05's shaped network
        self.cores = cores  # the i-th task (in cluster order) runs on cores[i]
        self.procs: dict[tuple[str, int], processes.Child] = {}
        self._targets: dict[tuple[str, int], list[str]] = {}

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
        if task in self.procs and self.procs[task].running():
            raise RuntimeError(f"task {task[0]}:{task[1]} is already running")
        env = dict(self.env, TF_CONFIG=json.dumps(tf_config.build(self.cluster, *task)))
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        order = [(j, i) for j, a in self.cluster.items() for i in range(len(a))]
        core = self.cores[order.index(task) % len(self.cores)] if self.cores else None
        self.procs[task] = processes.start(
            command,
            log_path=self.log_path(*task),
            env=env,
            name=f"{task[0]}:{task[1]}",
            core=core,
            namespaces=self.namespaces,
        )
        self._targets[task] = command

    def wait_listening(self, tasks, timeout: float = 60.0) -> None:
        """Wait until each task's port accepts connections, or raise with its log."""
        chosen = [tuple(task) for task in tasks]
        addresses = [self.cluster[job][i] for job, i in chosen]
        processes.wait_until(
            lambda: all(map(port_is_listening, addresses)),
            timeout,
            f"tasks {[f'{j}:{i}' for j, i in chosen]} to listen on {addresses}",
            depends_on=[self.procs[task] for task in chosen],
        )

    def wait_until(self, condition, timeout: float, what: str):
        """``processes.wait_until(condition, ...)`` that also stops, with the log, as soon as
        any task of this cluster has exited."""
        return processes.wait_until(condition, timeout, what, depends_on=self.procs.values())

    # -- observing and failing ------------------------------------------------
    def log_path(self, job: str, index: int) -> Path:
        return self.log_dir / f"{job}-{index}.log"

    def logs(self, job: str, index: int) -> str:
        path = self.log_path(job, index)
        return path.read_text(errors="replace") if path.exists() else ""

    def alive(self, job: str, index: int) -> bool:
        proc = self.procs.get((job, index))
        return proc is not None and proc.running()

    def kill(self, job: str, index: int) -> None:
        """Kill one task at once (SIGKILL), as a crashed machine would vanish."""
        self.procs[(job, index)].stop(grace=0)

    def restart(self, job: str, index: int, ready_timeout: float = 60.0) -> None:
        """Start a killed task again with the same command and TF_CONFIG."""
        task = (job, index)
        self._launch(task, self._targets[task])
        if self._targets[task][1:3] == ["-m", "tflearn_helpers.cluster.task_server"]:
            self.wait_listening([task], ready_timeout)

    def wait(self, tasks=None, timeout: float = 300.0) -> dict[tuple[str, int], int]:
        """Wait for tasks to exit; return their exit codes. Raises TimeoutError (with the
        tail of an unfinished task's log) rather than hanging."""
        chosen = [tuple(task) for task in (tasks or list(self.procs))]
        try:
            processes.wait_until(
                lambda: not any(self.procs[task].running() for task in chosen),
                timeout,
                f"tasks {[f'{j}:{i}' for j, i in chosen]} to finish",
            )
        except TimeoutError:
            running = [self.procs[task] for task in chosen if self.procs[task].running()]
            names = ", ".join(child.name for child in running)
            tails = "\n".join(child.tail() for child in running)
            raise TimeoutError(f"{names} still running after {timeout:.0f} s.\n{tails}") from None
        return {task: self.procs[task].wait(timeout=10) for task in chosen}

    # -- teardown ---------------------------------------------------------------
    def close(self, grace: float = 5.0) -> None:
        """Stop every task (SIGTERM, then SIGKILL after ``grace`` s) and wait for its ports."""
        for proc in self.procs.values():
            if proc.running():
                proc.send(signal.SIGTERM)
        for proc in self.procs.values():
            proc.stop(grace=grace)
        addresses = [self.cluster[job][index] for job, index in self.procs]  # not in-process
        try:
            processes.wait_until(
                lambda: not any(map(port_is_listening, addresses)), 10, "the ports to close"
            )
        except TimeoutError:
            pass  # the processes are gone; a port in TIME_WAIT closes by itself

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
