"""Find processes and listening ports a notebook left behind (used by the tests and the
course runner; lessons 04, 08 and 09 promise to leave none), and the course's folders left
in the temp folder (make test, before and after its jobs):

    python tools/leftovers.py temp --save FILE    # the tflearn-* entries there now
    python tools/leftovers.py temp --since FILE   # those added since: exit 1 if any
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = ["TAG_ENV", "Snapshot", "kill", "leftovers", "snapshot", "temp_entries"]

#: Set in this process's environment, so every process started from it (a kernel, and the
#: workers the kernel starts) inherits it. An orphan counts as ours only when it carries it:
#: another program's background job on the same machine is never reported or killed.
TAG_ENV = "TFLEARN_LEFTOVERS_TAG"


@dataclass(frozen=True)
class Snapshot:
    pids: frozenset[int]
    ports: frozenset[int]


def snapshot() -> Snapshot:
    """The processes and listening TCP ports on this machine right now (call it before
    starting the kernel: from here on, what this process starts is tagged as ours)."""
    os.environ.setdefault(TAG_ENV, str(os.getpid()))
    return Snapshot(frozenset(psutil.pids()), frozenset(_listening_ports()))


def leftovers(before: Snapshot, wait: float = 10.0) -> list[str]:
    """What appeared since ``before`` and is still there after up to ``wait`` seconds.

    A new Python process counts when it descends from this process, or was orphaned (its
    parent gone, adopted by init) and carries this process's tag: what a notebook's kernel
    started and did not stop. Other people's processes on the same machine never count. A
    new listening port counts when one of those processes holds it.
    """
    deadline = time.monotonic() + wait
    while True:
        found = _new_since(before)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def kill(items_before: Snapshot) -> None:
    """Kill the Python processes that appeared since ``items_before`` (cleanup after a leak)."""
    for proc in _new_python_processes(items_before):
        try:
            proc.kill()
        except psutil.Error:
            pass


def _new_since(before: Snapshot) -> list[str]:
    procs = list(_new_python_processes(before))
    pids = {p.pid for p in procs}
    found = [f"process {p.pid}: {' '.join(p.info['cmdline'] or [])[:160]}" for p in procs]
    found += [
        f"listening port {port} (process {pid})"
        for port, pid in sorted(_listeners().items())
        if port not in before.ports and pid in pids
    ]
    return found


def _new_python_processes(before: Snapshot):
    me = os.getpid()
    mine = {p.pid for p in psutil.Process(me).children(recursive=True)}
    # A fresh Process per pid, not process_iter(): its cache keeps a dead process's object
    # under a pid the system has given out again (pid_max is 32768 here, and a CI run wraps
    # it), and its first pass after that skips the new process as gone.
    for pid in sorted(set(psutil.pids()) - before.pids - {me}):
        try:
            proc = psutil.Process(pid)
            proc.info = proc.as_dict(["ppid", "name", "cmdline", "status"])
        except psutil.Error:  # gone already
            continue
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if proc.pid not in mine and not (proc.info["ppid"] == 1 and _tagged(proc)):
            continue
        if "python" in (proc.info["name"] or "").lower():
            yield proc


def _tagged(proc: psutil.Process) -> bool:
    try:
        return proc.environ().get(TAG_ENV) == os.environ.get(TAG_ENV)
    except psutil.Error:  # another user's process, or gone
        return False


def _listeners() -> dict[int, int | None]:
    """Listening TCP port -> the pid holding it (None when the system does not say)."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        return {}
    return {c.laddr.port: c.pid for c in conns if c.status == psutil.CONN_LISTEN}


def _listening_ports() -> set[int]:
    return set(_listeners())


def temp_entries() -> set[str]:
    """The names of the course's entries (``tflearn-*``) in the temp folder."""
    return {path.name for path in Path(tempfile.gettempdir()).glob("tflearn-*")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/leftovers.py")
    parser.add_argument("what", choices=("temp",))
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path, help="write the entries there now to this file")
    group.add_argument("--since", type=Path, help="list those added since --save wrote FILE")
    args = parser.parse_args(argv)
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text("\n".join(sorted(temp_entries())))
        return 0
    added = sorted(temp_entries() - set(args.since.read_text().split()))
    where = tempfile.gettempdir()
    print(f"== temp folder ({where}): {len(added)} tflearn-* entries left behind {added[:20]}")
    return 1 if added else 0


if __name__ == "__main__":
    sys.exit(main())
