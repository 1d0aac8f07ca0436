"""The one way the course starts, waits for and stops other processes.

``start(command)`` runs a program in its own session (so stopping it stops everything it
started), writes its output to a log file that can be read while it runs, and registers it
in one teardown registry. A child is stopped on ``with`` exit, by ``stop()``, when this
interpreter exits (``atexit``), and, on Linux, by the kernel's death signal
(``PR_SET_PDEATHSIG``) even when this process is killed. Linux sends that signal when the
*thread* that started the child ends: start children from the main thread, as notebook
cells do. ``wait_until`` is the one poll loop: it always has a timeout and says what it
waited for. What a child reports travels as events (:mod:`.events`). On Linux a Python
command (``python [-u] SCRIPT | -c CODE | -m MODULE ...``) starts as a fork of a process
that has imported TensorFlow already (:mod:`.fork_server`), seconds sooner than a fresh one.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

from . import fork_server
from .child_setup import check_namespaces, child_setup, dying_with_parent

__all__ = [
    "KEEP_LOGS_ENV",
    "Child",
    "ProcessExitedError",
    "listening",
    "recently_started",
    "start",
    "stop_all",
    "temporary_folder",
    "wait_until",
]

_LIVE: set[Child] = set()  # the one teardown registry (emptied by stop_all at exit)
_RECENT: deque[Child] = deque(maxlen=32)  # the latest started, running or not
_FOLDERS: list[Path] = []  # made by temporary_folder: removed at exit
TIMEOUT_HINT = "If the machine is busy, give it a longer timeout; otherwise read the log above."
PEER_GRACE = 3.0  # s a task waits at start-up for a peer that no process runs before it stops
_EVENT_TAG = "TFLEARN_EVENT "  # the events' line prefix (programs.events imports this module)


class ProcessExitedError(RuntimeError):
    """A process that a wait depends on exited before the wait was over."""


class Child:
    """One started program (see :func:`start`); a context manager that stops it on exit."""

    def __init__(
        self,
        command,
        *,
        log_path=None,
        merge_stderr=True,
        env=None,
        unset=(),
        cwd=None,
        core=None,
        namespaces=None,
        name=None,
        fresh=False,
    ):
        if isinstance(command, str) or not command:
            raise ValueError(f"command must be a list naming a program to run, got {command!r}")
        self.command = [str(part) for part in command]
        self.name = name or " ".join(self.command)[-80:]
        if not log_path:  # a folder of its own only when the caller names no log file
            log_path = temporary_folder("tflearn-proc-") / "output.log"
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.err_path = None if merge_stderr else self.log_path.with_suffix(".stderr.log")
        environment = _environment(env, unset)
        self.environment = environment  # what it was started with (a check reads it)
        self.task = _task_of(environment.get("TF_CONFIG"))  # (address, peers, name) or None
        check_namespaces(namespaces)
        for earlier in list(_LIVE):  # a launch run again: its stuck copy of this task goes
            if (
                self.task
                and earlier.command == self.command
                and earlier.stuck_at_barrier(self.task)
            ):
                earlier.stop(grace=1.0)
        self.log_path.touch()  # both files exist once start() returns, forked or not
        if self.err_path:
            self.err_path.write_text("")
        files = {"stdout": self.log_path, "stderr": self.err_path}
        setup = {"core": core, "namespaces": namespaces}  # for child_setup, in the child
        forked = not fresh and fork_server.spawn(  # None: not a command a fork can run
            self.command, env=environment, cwd=cwd, setup=setup, **files
        )
        self.process = forked or self._popen(environment, cwd, setup)
        _LIVE.add(self)
        _RECENT.append(self)

    def _popen(self, environment, cwd, setup) -> subprocess.Popen:
        unset = all(value is None for value in setup.values())  # core 0 is a core
        plain = unset and dying_with_parent(self.command, environment.get("PATH"))
        options = {} if plain else {"preexec_fn": lambda: child_setup(**setup)}
        with open(self.log_path, "a") as out, open(self.err_path or os.devnull, "w") as err:
            return subprocess.Popen(
                plain or self.command,
                stdout=out,
                stderr=err if self.err_path else subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=environment,
                cwd=cwd,
                start_new_session=True,  # its own process group: stop() reaches its children
                **options,
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.poll()

    def running(self) -> bool:
        return self.process.poll() is None

    def output(self) -> str:
        """Everything it has written so far (stdout, and stderr unless kept apart)."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def errors(self) -> str:
        """What it wrote to stderr (the same as ``output()`` when they are merged)."""
        return self.err_path.read_text(errors="replace") if self.err_path else self.output()

    def tail(self, lines: int = 15) -> str:
        """Its last ``lines`` lines of output, labelled with its name and state."""
        state = "running" if self.running() else f"exited with code {self.returncode}"
        text = "\n".join(self.output().rstrip().splitlines()[-lines:])
        return f"--- {self.name} ({state}), last lines of {self.log_path} ---\n{text}"

    def wait_until(self, condition, timeout: float, what: str):
        """:func:`wait_until` ``condition`` that stops, with its log, if this process exits."""
        return wait_until(condition, timeout, what, depends_on=[self])

    def send(self, sig: int) -> None:
        """Send ``sig`` to its whole process group (nothing if it is gone)."""
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass

    def wait(self, timeout: float) -> int:
        """Wait for it to exit; its exit code. TimeoutError (with its log) if it does not.

        A task of a TF_CONFIG cluster whose last event is ``waiting`` (at the start-up barrier
        every task must reach) while a peer of its cluster has no running process here and no
        listening port, for ``PEER_GRACE`` s, can never go on: it is stopped, a ``stopped``
        event saying which peer was missing is added to its log, and its exit code returned.
        """
        deadline, absent_since = time.monotonic() + timeout, None
        try:
            while True:
                try:
                    return self.process.wait(
                        timeout=min(0.5, max(0.01, deadline - time.monotonic()))
                    )
                except subprocess.TimeoutExpired:
                    pass
                if time.monotonic() >= deadline:
                    raise TimeoutError(
                        f"{self.name} still running after {timeout:.0f} s. {TIMEOUT_HINT}\n"
                        f"{self.tail()}"
                    ) from None
                missing = self._missing_peer()
                absent_since = (absent_since or time.monotonic()) if missing else None
                if missing and time.monotonic() - absent_since >= PEER_GRACE:
                    return self._stop_waiting_for(missing)
        finally:
            if not self.running():
                _LIVE.discard(self)

    def stuck_at_barrier(self, same_task=None) -> bool:
        """Running, its last event ``waiting``, and a peer of its cluster nowhere running
        (only for the task ``same_task`` names, when given)."""
        if not self.task or (same_task and same_task[2] != self.task[2]):
            return False
        return self.running() and self._missing_peer() is not None

    def _missing_peer(self) -> str | None:
        """The name of a peer this task waits for at start-up that nothing runs, or None."""
        if not self.task or _last_event_kind(self.output()) != "waiting":
            return None
        _, peers, _ = self.task
        running = {c.task[0] for c in _LIVE if c is not self and c.task and c.running()}
        for name, address in peers.items():
            if address not in running and not listening(address):
                return name
        return None

    def _stop_waiting_for(self, peer: str) -> int:
        code = self.stop(grace=1.0)
        me = self.task[2]
        note = {"kind": "stopped", "task": me, "missing": peer, "reason": "barrier"}
        with open(self.log_path, "a") as log:
            log.write(
                f"\n[stopped] {me} waited at the start-up barrier of its cluster for {peer}, "
                "which no process was running: every task must be started before any is "
                f"waited for.\n{_EVENT_TAG}{json.dumps(note)}\n"
            )
        return code

    def stop(self, grace: float = 3.0) -> int:
        """SIGTERM its group, SIGKILL after ``grace`` s; reap it and return its exit code."""
        if self.running():
            self.send(signal.SIGTERM if grace > 0 else signal.SIGKILL)
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.send(signal.SIGKILL)
        self.send(signal.SIGKILL)  # anything it started that outlived it
        code = self.process.wait(timeout=10)
        _LIVE.discard(self)
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def start(command, **options) -> Child:
    """Start ``command`` (a list: program and arguments) as a :class:`Child`.

    Options: ``log_path`` (default: a temporary file, removed when this interpreter exits),
    ``merge_stderr`` (True), ``env`` (added to this process's environment), ``unset`` (names
    left out of it), ``cwd``, ``core`` (pin it to one CPU), ``namespaces`` (``(pid, kinds)``:
    run inside the namespaces of process ``pid``, e.g. ``(holder, ["user", "net"])``: lesson
    05's shaped network), ``name`` (for messages), ``fresh`` (a new interpreter even for a
    Python command that a fork server could start: a program that observes its own
    ``import tensorflow``).
    """
    return Child(command, **options)


def recently_started() -> list[Child]:
    """The children started last (up to 32), oldest first, whether they still run or not:
    a check reads what a learner's launch gave them (``Child.environment``)."""
    return list(_RECENT)


def wait_until(
    condition: Callable[[], object],
    timeout: float,
    what: str,
    *,
    depends_on: Iterable[Child] = (),
    poll: float = 0.05,
    hint: str = TIMEOUT_HINT,
):
    """Call ``condition()`` until it returns something truthy, and return that.

    Raises ProcessExitedError as soon as one of ``depends_on`` has exited, and
    TimeoutError after ``timeout`` s; both say what was awaited and show the last log lines
    of the processes it depended on.
    """
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    children = list(depends_on)
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        dead = [c for c in children if not c.running()]
        if dead:
            tails = "\n".join(c.tail() for c in dead)
            raise ProcessExitedError(f"{dead[0].name} exited while waiting for {what}.\n{tails}")
        if time.monotonic() > deadline:
            tails = "".join("\n" + c.tail() for c in children)
            raise TimeoutError(f"waited {timeout:.0f} s for {what}. {hint}{tails}")
        time.sleep(poll)


def temporary_folder(prefix: str) -> Path:
    """A fresh folder for the logs and files of a run, removed when this interpreter exits
    (after its children are stopped)."""
    _FOLDERS.append(Path(tempfile.mkdtemp(prefix=prefix)))
    return _FOLDERS[-1]


#: Where the course runner keeps the programs' logs of a notebook that may fail: the folders
#: above are removed at exit, and with them the one log that says why a worker refused a call.
KEEP_LOGS_ENV = "TFLEARN_KEEP_LOGS"


@atexit.register  # registered before stop_all, so it runs after it: the children are gone
def _remove_folders() -> None:
    keep = os.environ.get(KEEP_LOGS_ENV)
    for folder in _FOLDERS:
        if keep:
            for log in folder.rglob("*.log"):
                copy = Path(keep) / folder.name / log.relative_to(folder)
                try:
                    copy.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(log, copy)
                except OSError:  # a full disk or a folder gone: the cleanup still runs
                    pass
        shutil.rmtree(folder, ignore_errors=True)


@atexit.register
def stop_all(grace: float = 2.0) -> None:
    """Stop every child still running (called at interpreter exit)."""
    for child in list(_LIVE):
        child.stop(grace=grace)
    fork_server.stop_all()


def _task_of(tf_config: str | None):
    """(own address, {peer name: address}, own name) of a TF_CONFIG's task, or None."""
    try:
        config = json.loads(tf_config or "")
        cluster, task = config["cluster"], config["task"]
        me = (task["type"], int(task.get("index", 0)))
        tasks = {(job, i): a for job, addresses in cluster.items() for i, a in enumerate(addresses)}
        own = tasks.pop(me)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    peers = {f"{job} {i}": a for (job, i), a in tasks.items() if job != "evaluator"}
    return own, peers, f"{me[0]} {me[1]}"


def _last_event_kind(text: str) -> str | None:
    for line in reversed(text.splitlines()):
        if line.startswith(_EVENT_TAG):
            try:
                return json.loads(line[len(_EVENT_TAG) :]).get("kind")
            except (ValueError, AttributeError):
                return None
    return None


def listening(address: str) -> bool:
    """Whether something accepts TCP connections at ``address`` ("host:port") within 0.2 s.

    An IPv4 socket: a host name resolves to its IPv4 address. An address that cannot be probed
    (a host that does not resolve, a port that is not a number) is not listening: the loops
    that poll this wait on, they do not end in the probe's error. Lesson 09 writes a probe of
    its own (``cluster.port_is_listening``), taught code, which this layer does not import.
    """
    host, _, port = address.rpartition(":")
    with socket.socket() as s:
        s.settimeout(0.2)
        try:
            return s.connect_ex((host, int(port))) == 0
        except (OSError, ValueError):
            return False


def _environment(extra: dict | None, unset) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in set(unset)}
    env.update({k: str(v) for k, v in (extra or {}).items()})
    return env
