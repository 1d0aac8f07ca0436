"""Start Python programs as forks of a process that has already imported TensorFlow.

A fresh ``python worker.py`` spends 3-7 CPU-seconds in ``import tensorflow`` (with the Keras
it imports) before it runs a line of its own, and the lessons and tests start hundreds of
such programs (docs/MEASURED.md). So on Linux :func:`processes.start` hands a command of the
form ``python [-u] (SCRIPT | -c CODE | -m MODULE) ARGS`` to a *fork server*: a process of
the same interpreter and the same environment that imported TensorFlow once, and forks one
child per command.

Each child is still a process of its own: its own TensorFlow runtime, devices, gRPC servers
and memory (the runtime starts at the first op or device query, after the fork), its own
session, output files, working directory and ``os.environ`` (the command's, exactly).
What differs from a fresh interpreter: the modules the server imported are imported already,
with the settings they read at import time. That is why a server only takes commands whose
environment equals its own, apart from the names TensorFlow reads later (``TF_CONFIG``,
``CUDA_VISIBLE_DEVICES``) and the course's ``TFLEARN_*``. A child's output is unbuffered,
as with ``python -u``; numpy's global random state is reseeded, as a fresh process would be.

A server exits when the process that started it closes its pipe (at exit, or killed: the
kernel closes it), and its children die with it (Linux's death signal).
``TFLEARN_FORK_SERVER=0`` turns it off: every command then starts a fresh interpreter.
"""

from __future__ import annotations

import collections
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

from .child_setup import child_setup

__all__ = ["Forked", "prepare", "serve", "spawn", "stop_all"]

SWITCH_ENV = "TFLEARN_FORK_SERVER"
LATE_NAMES = ("TF_CONFIG", "CUDA_VISIBLE_DEVICES")  # read after import: may differ per child
# What importing TensorFlow writes into os.environ (tensorflow/__init__.py, its tpu and its
# bundled keras modules; None: whatever was there before): a parent that has imported it holds
# these, and so does its server once it has
SET_BY_IMPORT = {
    "TF2_BEHAVIOR": None,
    "TPU_ML_PLATFORM": None,
    "TPU_ML_PLATFORM_VERSION": None,
    "HDF5_PLUGIN_PATH": None,
    "ENABLE_RUNTIME_UPTIME_TELEMETRY": "1",
}
START_TIMEOUT = 300.0  # s for a server to import TensorFlow on a busy machine
MAX_SERVERS = 3  # a server holds ~0.4 GB: past this many, an idle one makes room, or none forks
_SERVERS: collections.OrderedDict[tuple, _Server | None] = collections.OrderedDict()
_LOCK = threading.Lock()  # one thread at a time talks to the servers (a check's thread pool)


class Forked:
    """A child of a fork server, with the part of ``subprocess.Popen`` that Child uses."""

    def __init__(self, server: _Server, pid: int):
        self.server, self.pid = server, pid

    def poll(self) -> int | None:
        with _LOCK:
            return self.server.exit_code(self.pid)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"process {self.pid}", timeout)
            time.sleep(0.02)
        return code


def spawn(command, *, env, cwd, stdout, stderr, setup) -> Forked | None:
    """Start ``command`` as a fork of the server for its interpreter and environment, or
    return None when it cannot be (not a plain Python command, not Linux, switched off)."""
    if not sys.platform.startswith("linux") or os.environ.get(SWITCH_ENV) == "0":
        return None
    program = _program(command)
    if program is None:
        return None
    key = _key(command[0], env)
    request = {"program": program, "env": env, "cwd": os.path.abspath(cwd or os.getcwd())}
    request.update(stdout=str(stdout), stderr=stderr and str(stderr), setup=setup)
    with _LOCK:
        if key not in _SERVERS and not _make_room():
            return None
        if key not in _SERVERS:
            _SERVERS[key] = _Server(command[0], env)
        _SERVERS.move_to_end(key)  # the most recently used last
        server = _SERVERS[key]
        if server is None:
            return None
        try:
            return Forked(server, server.fork(request))
        except (OSError, TimeoutError) as err:  # the server died or never came up
            print(f"fork server for {command[0]} failed ({err}); starting fresh", file=sys.stderr)
            server.stop()
            _SERVERS[key] = None
            return None


def prepare(env: dict[str, str] | None = None) -> None:
    """Start the server for this interpreter and ``env`` (default: this process's) now, without
    waiting: it imports TensorFlow while the caller goes on, and a later program started with
    that environment forks from it at once."""
    if not sys.platform.startswith("linux") or os.environ.get(SWITCH_ENV) == "0":
        return
    env = dict(os.environ if env is None else env)
    key = _key(sys.executable, env)
    with _LOCK:
        if key not in _SERVERS and _make_room():
            _SERVERS[key] = _Server(sys.executable, env)


def _key(executable: str, env: dict[str, str]) -> tuple:
    return (executable, *sorted(_import_time(env).items()))


def stop_all() -> None:
    """Stop every fork server (their children die with them); called at interpreter exit,
    after ``processes.stop_all`` has stopped the children it knows."""
    with _LOCK:
        for key, server in list(_SERVERS.items()):
            if server is not None:
                server.stop()
            del _SERVERS[key]


def _make_room() -> bool:
    """Stop the least recently used idle server if there are MAX_SERVERS; False if none is."""
    live = [(k, s) for k, s in _SERVERS.items() if s is not None]
    if len(live) < MAX_SERVERS:
        return True
    for key, server in live:
        if not server.busy():
            server.stop()
            del _SERVERS[key]
            return True
    return False


def _program(command: list[str]) -> list[str] | None:
    """``[SCRIPT | -c CODE | -m MODULE, ARGS...]`` of a plain Python command, else None."""
    if os.path.realpath(command[0]) != os.path.realpath(sys.executable):
        return None
    rest = command[2:] if command[1:2] == ["-u"] else command[1:]
    if not rest or (rest[0].startswith("-") and rest[0] not in ("-c", "-m")):
        return None
    if rest[0] in ("-c", "-m") and len(rest) < 2:
        return None
    return rest


def _import_time(env: dict[str, str]) -> dict[str, str]:
    """The part of ``env`` a process reads while it imports (what its server must share)."""
    kept = {
        k: v
        for k, v in env.items()
        if k not in LATE_NAMES
        and not k.startswith("TFLEARN_")
        and not (k in SET_BY_IMPORT and SET_BY_IMPORT[k] in (None, v))
    }
    if kept.get("TF_USE_LEGACY_KERAS") not in ("true", "True", "1"):  # TensorFlow's own test
        kept.pop("TF_USE_LEGACY_KERAS", None)
    return kept


class _Server:
    """The parent's handle on one fork server: JSON lines each way over two pipes."""

    def __init__(self, executable: str, env: dict[str, str]):
        requests_read, self.requests = os.pipe()
        self.replies, replies_write = os.pipe()
        self.log = tempfile.TemporaryFile()  # no name: nothing is left, even after a SIGKILL
        code = "from tflearn_helpers.programs import fork_server as f; f.serve({}, {})"
        self.popen = subprocess.Popen(
            [executable, "-c", code.format(requests_read, replies_write)],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=_import_time(env),
            pass_fds=(requests_read, replies_write),
            start_new_session=True,  # no death signal: it would follow the starting *thread*;
        )  # the server exits when its requests pipe closes, as it does when this process dies
        os.close(requests_read)
        os.close(replies_write)
        self.pending, self.codes, self.forked, self.children = b"", {}, [], []

    def fork(self, request: dict) -> int:
        os.write(self.requests, json.dumps(request).encode() + b"\n")
        deadline = time.monotonic() + START_TIMEOUT
        while not self.forked:
            if self.replies < 0:
                raise OSError(f"the fork server exited; its log:\n{self._log_tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no answer in {START_TIMEOUT:.0f} s")
            self.read(1.0)
        self.children.append(self.forked.pop(0))
        return self.children[-1]

    def busy(self) -> bool:
        """Does a child of this server still run?"""
        self.read(0)
        return self.replies >= 0 and any(pid not in self.codes for pid in self.children)

    def exit_code(self, pid: int) -> int | None:
        self.read(0)
        if self.replies < 0:  # the server is gone, and its children with it (death signal)
            return self.codes.get(pid, -signal.SIGKILL)
        return self.codes.get(pid)

    def read(self, timeout: float) -> None:
        """Take in what the server said within ``timeout`` s: a new pid, exit codes."""
        if self.replies < 0:
            return
        if select.select([self.replies], [], [], timeout)[0]:
            chunk = os.read(self.replies, 65536)
            if not chunk:  # the server exited
                self.close_replies()
                return
            self.pending += chunk
            *lines, self.pending = self.pending.split(b"\n")
            for said in map(json.loads, lines):
                if "exited" in said:
                    self.codes[said["exited"]] = said["code"]
                else:
                    self.forked.append(said["pid"])

    def close_replies(self) -> None:
        os.close(self.replies)
        self.replies = -1

    def stop(self) -> None:
        try:
            os.close(self.requests)  # the server kills what it still runs and exits
        except OSError:
            pass
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)
        if self.replies >= 0:
            self.close_replies()
        self.log.close()

    def _log_tail(self) -> str:
        self.log.seek(0)
        return "".join(self.log.read().decode(errors="replace").splitlines(True)[-15:])


# -- the server side: runs in the fork server process -----------------------------------------
def serve(requests: int, replies: int) -> None:
    """Import TensorFlow, then fork a child for each request line until the pipe closes."""
    import gc
    import warnings

    import tensorflow  # noqa: F401  (the point: every child starts with it imported)

    warnings.filterwarnings("ignore", ".*fork", DeprecationWarning)  # Python 3.12: threads
    gc.freeze()  # what the import made is never collected again: a child's exit skips it
    children, pending = set(), b""
    while True:
        if select.select([requests], [], [], 0.05)[0]:
            chunk = os.read(requests, 65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                pid = os.fork()
                if pid == 0:
                    _run_child(json.loads(line), requests, replies)  # never returns
                children.add(pid)
                os.write(replies, json.dumps({"pid": pid}).encode() + b"\n")
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            children.discard(pid)
            code = os.waitstatus_to_exitcode(status)
            os.write(replies, json.dumps({"exited": pid, "code": code}).encode() + b"\n")
    for pid in children:  # the parent let go: nothing it started outlives the server
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    os._exit(0)  # at once: the server ran no program of its own that needs a clean exit


def _run_child(request: dict, *server_fds: int) -> None:
    """In a fresh fork: become the requested program, then exit as it would."""
    import io
    import runpy

    server = os.getppid()
    os.setsid()  # its own process group: stopping it stops what it starts
    for fd in server_fds:
        os.close(fd)
    out = os.open(request["stdout"], os.O_WRONLY | os.O_APPEND)  # start() made both; stdin
    # stays the server's /dev/null
    err = request["stderr"] and os.open(request["stderr"], os.O_WRONLY | os.O_TRUNC)
    os.dup2(out, 1)
    os.dup2(err or out, 2)
    for fd in {out, err or out}:
        os.close(fd)
    child_setup(**request["setup"])  # after the redirection: its errors land in the child's log
    if os.getppid() != server:  # the server died before the death signal was set
        os._exit(1)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, name in ((1, "stdout"), (2, "stderr")):  # unbuffered, as with python -u
        raw = io.FileIO(fd, "w", closefd=False)
        setattr(sys, name, io.TextIOWrapper(raw, errors="backslashreplace", write_through=True))
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()  # fresh entropy, as in a fresh process
    kind, *args = request["program"]
    if kind == "-c":
        sys.argv, sys.path[0] = ["-c", *args[1:]], ""
        main = type(sys)("__main__")
        sys.modules["__main__"] = main
        exec(compile(args[0], "<string>", "exec"), main.__dict__)
    elif kind == "-m":
        sys.argv, sys.path[0] = [args[0], *args[1:]], os.getcwd()
        runpy.run_module(args[0], run_name="__main__", alter_sys=True)
    else:
        sys.argv, sys.path[0] = [kind, *args], os.path.dirname(os.path.abspath(kind))
        runpy.run_path(kind, run_name="__main__")
    sys.exit(0)  # SystemExit leaves serve(): the interpreter exits as after a fresh run
