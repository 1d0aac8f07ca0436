"""Find processes and listening ports a notebook left behind (used by the tests and the
course runner; lessons 01, 02 and 06 promise to leave none)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class Snapshot:
    pids: frozenset[int]
    ports: frozenset[int]


def snapshot() -> Snapshot:
    """The processes and listening TCP ports on this machine right now."""
    return Snapshot(frozenset(psutil.pids()), frozenset(_listening_ports()))


def leftovers(before: Snapshot, wait: float = 10.0) -> list[str]:
    """What appeared since ``before`` and is still there after up to ``wait`` seconds.

    Only Python processes and listening ports count, and this process's own descendants
    that are still expected to run (none, once a notebook's kernel is shut down) count too.
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
    found = [
        f"process {p.pid}: {' '.join(p.info['cmdline'] or [])[:160]}"
        for p in _new_python_processes(before)
    ]
    found += [f"listening port {port}" for port in sorted(_listening_ports() - before.ports)]
    return found


def _new_python_processes(before: Snapshot):
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "name", "cmdline", "status"]):
        if proc.pid in before.pids or proc.pid == me:
            continue
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if "python" in (proc.info["name"] or "").lower():
            yield proc


def _listening_ports() -> set[int]:
    try:
        conns = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        return set()
    return {c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN}
