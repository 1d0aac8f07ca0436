"""A real multi-node Slurm cluster on this one machine (lesson 07).

``LocalSlurm(nodes=2)`` is a context manager: it writes a munge key and a ``slurm.conf`` into
a temporary folder, starts ``munged``, ``slurmctld`` and one ``slurmd -N nodeK`` per node (each
node its own port and its share of the cores), and waits until ``sinfo`` shows every node
idle. ``cluster.env`` is what a program needs to call ``sbatch``, ``srun``, ``squeue`` or
``scontrol`` on it (``SLURM_CONF``; the munge socket is named in that file);
``cluster.run(cmd)`` runs one such command with a timeout.

Networks: as root, each node is a host of its own (``network="private"``, chosen by
``"auto"``): its ``slurmd``, steps and tasks live in a network namespace with one address on a
bridge that this machine joins (:mod:`.slurm_isolation`), and the node names resolve there. So
``SlurmClusterResolver``'s ``node1:8888`` and ``node2:8888`` are two servers on one port, as
on a real cluster. Otherwise (``"loopback"``) the nodes share this machine's loopback: real
nodes to the scheduler, but two tasks on two nodes cannot listen on the same port and the
node names do not resolve. Either way they share the cores and the memory of one machine.

Teardown is certain: on exit the daemons stop, their ports close and the folder goes. Each
``slurmd`` is the first process of its own PID namespace, so when it ends the kernel ends
every ``slurmstepd`` and job task it started; a killed kernel takes the daemons and the
network with it (``processes.start``) and a small watcher removes the folder. Where
``unshare`` cannot make a PID namespace, exit still kills every process that carries the
cluster's ``SLURM_CONF``, but a killed kernel may leave a running job's processes behind.
Tested as root on Debian 12 (Slurm 22.05).
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import portpicker

from ..measuring import report
from ..programs import child_setup, processes
from ..runtime import validate
from . import slurm_isolation

__all__ = [
    "ENDED_STATES",
    "INSTALL_COMMAND",
    "LocalSlurm",
    "SlurmNotInstalledError",
    "missing_programs",
]

INSTALL_COMMAND = "apt-get install slurm-wlm munge"
_PROGRAMS = ("munged", "slurmctld", "slurmd", "slurmstepd", "sinfo", "srun", "sbatch", "squeue",
             "scontrol", "scancel")  # fmt: skip
_SBIN = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENDED_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}  # fmt: skip  # a job ends in one
_NETWORKS = ("auto", "private", "loopback")
# A requeued job may start again cred_expire seconds after the requeue (120 by default), at
# the next scheduling pass (every 60 s by default): a requeue here takes seconds, not minutes
_CRED_EXPIRE, _SCHED_INTERVAL = 5, 1


class SlurmNotInstalledError(OSError):
    """Slurm or munge is not installed on this machine (an OSError, as a missing program is:
    ``except OSError`` also catches a machine without root or namespaces)."""


def _which(program: str) -> str | None:
    return shutil.which(program) or shutil.which(program, path=_SBIN)


def missing_programs() -> list[str]:
    """The Slurm and munge programs this machine lacks (empty: all installed)."""
    return [program for program in _PROGRAMS if not _which(program)]


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _check_port(port) -> int:
    port = validate.whole_number("port", port, minimum=1024, maximum=65535)
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is not taken
        try:
            probe.bind(("", port))
        except OSError:
            raise ValueError(
                f"port {port} is taken (another program listens on it): choose another, or "
                "leave the ports out and the cluster picks free ones"
            ) from None
    return port


def _ports(nodes: int, port, node_ports) -> list[int]:
    """The controller's port, then one per node: the ones given (checked free) or free ones."""
    if node_ports is not None and len(node_ports) != nodes:
        raise ValueError(f"node_ports needs one port per node ({nodes}), got {node_ports!r}")
    given = [port, *(node_ports if node_ports is not None else [None] * nodes)]
    given = [None if p is None else _check_port(p) for p in given]
    fixed = {p for p in given if p is not None}
    if len(fixed) != len(given) - given.count(None):
        raise ValueError(f"the ports must differ, got {given!r}")
    chosen = []
    for p in given:
        while p is None or p in chosen:
            p = portpicker.pick_unused_port()
            p = None if p in fixed else p
        chosen.append(p)
    return chosen


class LocalSlurm:
    """A Slurm cluster of ``nodes`` nodes on this machine; use as a context manager.

    ``cpus_per_node`` defaults to this machine's cores divided among the nodes (at least
    one each; more nodes than cores is an error). ``port`` (controller) and ``node_ports``
    default to free ports. ``network``: "auto", "private" or "loopback" (see the module).
    ``preemption_grace`` (seconds; None: no preemption) gives the cluster two partitions
    over the same nodes, ``debug`` (the default) and ``urgent`` (a higher ``PriorityTier``),
    with ``PreemptType=preempt/partition_prio`` and ``PreemptMode=REQUEUE``: a job submitted
    to ``urgent`` preempts the jobs of ``debug`` it needs the nodes of. Their tasks get SIGCONT
    and SIGTERM, and SIGKILL after ``GraceTime``; a job still running then is requeued.
    ``extra_config`` is appended to ``slurm.conf``. ``timeout`` bounds the start.
    Attributes once started: ``env``, ``conf``, ``folder``, ``node_names``, ``ports``,
    ``network`` (the one it got), ``addresses`` (node name -> address), ``start_seconds``.
    """

    def __init__(self, nodes=2, *, cpus_per_node=None, port=None, node_ports=None,
                 network: str = "auto", preemption_grace: int | None = None,
                 extra_config: str = "", timeout: float = 30.0):  # fmt: skip
        self.nodes = validate.whole_number("nodes", nodes, minimum=1)
        cores = _cores()
        if self.nodes > cores:
            raise ValueError(f"nodes={nodes} is more than this machine's {cores} cores: each "
                             "node needs at least one core of its own")  # fmt: skip
        most = cores // self.nodes
        per_node = most if cpus_per_node is None else cpus_per_node
        self.cpus_per_node = validate.whole_number(
            "cpus_per_node", per_node, minimum=1, maximum=most
        )
        missing = missing_programs()
        if missing:  # the summary page lists it; the lesson goes on without the runs
            report.skipped("the Slurm jobs (scripts shown, not run)", f"no {', '.join(missing)}")
            raise SlurmNotInstalledError(
                f"Slurm is not installed here (no {', '.join(missing)}). On Debian or Ubuntu, "
                f"as root: {INSTALL_COMMAND}"
            )
        self.ports = _ports(self.nodes, port, node_ports)
        self.extra_config, self.timeout = extra_config, timeout
        self.preemption_grace = (
            None
            if preemption_grace is None
            else validate.whole_number("preemption_grace", preemption_grace, minimum=0)
        )
        self.partitions = ["debug"] if preemption_grace is None else ["debug", "urgent"]
        self.node_names = [f"node{k}" for k in range(1, self.nodes + 1)]
        self.daemons: dict[str, processes.Child] = {}
        self.folder: Path | None = None
        self.conf: Path | None = None
        self.env: dict[str, str] = {}
        self.start_seconds: float | None = None
        self._watcher = None
        if network not in _NETWORKS:
            raise ValueError(f"network must be one of {_NETWORKS}, got {network!r}")
        self.network, self.addresses, self._net = network, {}, None

    # -- starting ---------------------------------------------------------------
    def start(self) -> LocalSlurm:
        """Write the files, start the daemons, wait until every node is idle."""
        if self.folder is not None:
            raise RuntimeError("this cluster has started already")
        began = time.perf_counter()
        self.folder = Path(tempfile.mkdtemp(prefix="tflearn-slurm-", dir=_open_temp()))
        self.folder.chmod(0o755)  # munged wants its socket's folders open to all (x)
        self._watcher, self._pipe = slurm_isolation.watch_folder(self.folder)
        try:
            self._network()
            self.conf = self._write_files()
            self.env = {"SLURM_CONF": str(self.conf)}
            self._start_daemons()
            self.wait_idle(self.timeout)
        except BaseException:
            self.close()
            raise
        self.start_seconds = time.perf_counter() - began
        return self

    def _network(self) -> None:
        """A namespace and address per node where possible ("auto"), else the loopback."""
        wanted = self.network != "loopback" and slurm_isolation.pid_namespaces()
        if wanted and slurm_isolation.NodeNetwork.available():
            try:
                self._net = slurm_isolation.NodeNetwork(self.nodes).start()
            except OSError:
                if self.network == "private":
                    raise
        elif self.network == "private":
            raise OSError("a private network needs root, ip (iproute2), nsenter and unshare")
        self.network = "private" if self._net else "loopback"
        where = self._net.addresses if self._net else ["127.0.0.1"] * self.nodes
        self.addresses = dict(zip(self.node_names, where, strict=True))

    def _write_files(self) -> Path:
        key = self.folder / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        for name in ("state", *(f"spool/{node}" for node in self.node_names)):
            (self.folder / name).mkdir(parents=True)
        conf = self.folder / "slurm.conf"
        conf.write_text(self._config())
        if self._net:
            hosts = self._net.hosts(self.node_names, _host())
            (self.folder / "hosts").write_text(hosts)
        return conf

    def _config(self) -> str:
        f, host = self.folder, _host()
        controller = self._net.host_address if self._net else "127.0.0.1"
        user = "root" if os.geteuid() == 0 else _user()
        lines = [
            "ClusterName=tflearn", f"SlurmctldHost={host}({controller})",
            f"SlurmctldPort={self.ports[0]}", f"SlurmUser={user}", f"SlurmdUser={user}",
            "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={f}/munge.socket,cred_expire={_CRED_EXPIRE}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
            "SlurmdParameters=config_overrides", "MpiDefault=none", "ReturnToService=2",
            f"SchedulerParameters=sched_interval={_SCHED_INTERVAL}",
            "JobCompType=jobcomp/none", "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none", "InactiveLimit=0", "KillWait=5",
            f"StateSaveLocation={f}/state", f"SlurmdSpoolDir={f}/spool/%n",
            f"SlurmctldPidFile={f}/slurmctld.pid", f"SlurmdPidFile={f}/slurmd-%n.pid",
            f"SlurmctldLogFile={f}/slurmctld.log", f"SlurmdLogFile={f}/slurmd-%n.log",
        ]  # fmt: skip
        lines += [
            f"NodeName={node} NodeHostname={host} NodeAddr={self.addresses[node]} Port={port} "
            f"CPUs={self.cpus_per_node} State=UNKNOWN"
            for node, port in zip(self.node_names, self.ports[1:], strict=True)
        ]
        lines += self._partitions()
        return "\n".join(lines) + "\n" + self.extra_config.strip() + "\n"

    def _partitions(self) -> list[str]:
        debug = "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
        if self.preemption_grace is None:
            return [debug]
        return [
            "PreemptType=preempt/partition_prio", "PreemptMode=REQUEUE",
            f"{debug} PriorityTier=1 GraceTime={self.preemption_grace}",
            "PartitionName=urgent Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2 "
            "PreemptMode=OFF",
        ]  # fmt: skip

    def _daemon(self, name: str, command: list[str], **options) -> processes.Child:
        child = processes.start(
            command, log_path=self.folder / f"{name}.out", name=name, env=self.env, **options
        )
        self.daemons[name] = child
        return child

    def _start_daemons(self) -> None:
        f, conf = self.folder, str(self.conf)
        munged = self._daemon("munged", [_which("munged"), "--foreground",
            f"--socket={f}/munge.socket", f"--key-file={f}/munge.key",
            f"--pid-file={f}/munged.pid", f"--seed-file={f}/munged.seed"])  # fmt: skip
        munged.wait_until((f / "munge.socket").exists, self.timeout, "munged's socket")
        self._daemon("slurmctld", [_which("slurmctld"), "-D", "-f", conf])
        for index, node in enumerate(self.node_names):
            command = [_which("slurmd"), "-D", "-N", node, "-f", conf]
            if self._net:  # its own /etc/hosts, in its own mount namespace
                bind = 'mount --bind "$0" /etc/hosts && exec "$@"'
                command = ["sh", "-c", bind, str(f / "hosts"), *command]
            if slurm_isolation.pid_namespaces():
                command = [*slurm_isolation.PID_NAMESPACE, *command]
            options = {"namespaces": self._net.namespace(index)} if self._net else {}
            self._daemon(node, command, **options)

    def node_states(self) -> dict[str, str]:
        """Each node's state as ``sinfo`` reports it, e.g. {"node1": "idle", ...}."""
        done = self.run(["sinfo", "--noheader", "--Node", "--format=%N %T"], 20, check=False)
        pairs = (line.split() for line in done.stdout.splitlines())
        return {pair[0]: pair[1] for pair in pairs if len(pair) == 2}

    def wait_idle(self, timeout: float = 30.0) -> dict[str, str]:
        """Wait until ``sinfo`` shows every node idle; raise with the daemons' logs if not."""

        def all_idle():
            states = self.node_states()
            return all(states.get(node) == "idle" for node in self.node_names) and states

        return processes.wait_until(
            all_idle,
            timeout,
            f"sinfo to show nodes {', '.join(self.node_names)} idle",
            depends_on=self.daemons.values(),
            poll=0.2,
        )

    # -- using --------------------------------------------------------------------
    def run(self, command, timeout: float = 60.0, check: bool = True):
        """Run a Slurm command (a list, or a string split like a shell) against this
        cluster; its CompletedProcess (text). ``check``: raise with its output if it fails."""
        args = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        dying = child_setup.dying_with_parent(args, self.env.get("PATH", os.environ.get("PATH")))
        options = {} if dying else {"preexec_fn": child_setup.child_setup}
        done = subprocess.run(
            dying or args, capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL, env={**os.environ, **self.env}, **options,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise RuntimeError(
                f"{shlex.join(args)} exited with code {done.returncode}:\n"
                f"{done.stdout}{done.stderr}"
            )
        return done

    def job_state(self, job_id) -> str:
        """A job's state from ``scontrol show job`` (e.g. PENDING, RUNNING, COMPLETED)."""
        shown = self.run(["scontrol", "--oneliner", "show", "job", str(job_id)], 20).stdout
        fields = dict(f.split("=", 1) for f in shown.split() if "=" in f)
        return fields.get("JobState", "UNKNOWN")

    def wait_job(self, job_id, timeout: float = 60.0) -> str:
        """Wait until job ``job_id`` has finished; its final state (e.g. COMPLETED)."""
        return processes.wait_until(
            lambda: (state := self.job_state(job_id)) in ENDED_STATES and state,
            timeout,
            f"Slurm job {job_id} to finish",
            depends_on=self.daemons.values(),
            poll=0.2,
        )

    # -- teardown -------------------------------------------------------------------
    def close(self, grace: float = 3.0) -> float:
        """Stop every daemon (its jobs with it), wait for the ports to close and remove the
        folder; the seconds it took. Calling it again does nothing."""
        if not self.daemons and self._watcher is None:
            return 0.0
        began = time.perf_counter()
        try:
            for child in self.daemons.values():
                child.send(signal.SIGTERM)  # SIGTERM to all at once, then wait for each
            for child in reversed(self.daemons.values()):  # nodes first, munged last
                child.stop(grace=grace)
            if self.env:
                slurm_isolation.kill_strays(self.env["SLURM_CONF"])
            try:
                processes.wait_until(
                    lambda: not any(processes.listening(f"127.0.0.1:{p}") for p in self.ports),
                    15,
                    "the cluster's ports to close",
                )
            except TimeoutError as err:  # whose? a stray of this cluster, or a new listener
                raise TimeoutError(f"{err} Listening now: {_listeners(self.ports)}") from None
        finally:  # the network, the watcher and the folder go even if a port stays open
            self.daemons = {}
            if self._net is not None:
                self._net, net = None, self._net
                net.close()
            if self._watcher is not None:
                os.close(self._pipe)
                self._watcher, watcher = None, self._watcher
                watcher.wait(timeout=20)
            shutil.rmtree(self.folder, ignore_errors=True)
        return time.perf_counter() - began

    def __enter__(self) -> LocalSlurm:
        return self.start()

    def __exit__(self, *exc) -> bool:
        self.close()
        return False


def _open_temp() -> Path:
    """Where the cluster's folder goes: munged refuses a socket below a folder that not every
    user may enter, and a session's temp folder is private (runtime.scratch); so the system's
    /tmp where it is the usual open one, else the temp folder. close() and the watcher remove
    what is made there."""
    system = Path("/tmp")
    if system.is_dir() and system.stat().st_mode & 0o1777 == 0o1777:
        return system
    return Path(tempfile.gettempdir())


def _host() -> str:
    return socket.gethostname().split(".")[0]


def _listeners(ports) -> str:
    """Who listens on ``ports`` now, as 'port: name (pid)', for an error message."""
    import psutil

    found = []
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port in ports:
            try:
                name = psutil.Process(conn.pid).name() if conn.pid else "?"
            except psutil.Error:
                name = "gone"
            found.append(f"{conn.laddr.port}: {name} ({conn.pid})")
    return ", ".join(sorted(found)) or "nobody"


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name
