"""What a child process does before its program runs: die with its parent, enter another
process's namespaces, take a core.

Both ways a child starts use it: the ``preexec_fn`` of a Popen (:mod:`.processes`,
:mod:`..cluster.network`) and a fork of :mod:`.fork_server`. A child that only needs to die
with its parent starts through util-linux's ``setpriv`` instead (:func:`dying_with_parent`).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys

__all__ = ["check_namespaces", "child_setup", "dying_with_parent"]

_NAMESPACE_FLAGS = {"user": 0x10000000, "net": 0x40000000}  # CLONE_NEWUSER, CLONE_NEWNET


def child_setup(core: int | None = None, namespaces: tuple | None = None) -> None:
    """In the child, before it runs: die with the parent (Linux); enter the namespaces
    ``(pid, kinds)`` of another process, as ``nsenter --target pid`` would; run on ``core``."""
    libc = ctypes.CDLL(None, use_errno=True)
    if sys.platform.startswith("linux"):
        libc.prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    pid, kinds = namespaces or (None, ())
    for kind in kinds:  # in the order given: "user" first, it grants the right to enter "net"
        fd = os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY)
        try:  # setns(2): a user namespace only lets in a single-threaded process, as this is,
            if os.fstat(fd).st_ino == os.stat(f"/proc/self/ns/{kind}").st_ino:
                continue  # and not one it is in already (nsenter skips it too)
            if libc.setns(fd, _NAMESPACE_FLAGS[kind]) != 0:
                code = ctypes.get_errno()
                raise OSError(code, f"cannot enter the {kind} namespace of process {pid}")
        finally:
            os.close(fd)
    if core is not None:
        os.sched_setaffinity(0, {core})


def dying_with_parent(command: list[str], path: str | None = None) -> list[str] | None:
    """``command`` run through ``setpriv --pdeathsig KILL``, which dies with its parent as
    :func:`child_setup` makes a child do, with no Python run in the child: Popen can then
    vfork. A ``preexec_fn`` makes it fork, copying the page tables of a process that has
    imported TensorFlow: 15 ms of CPU per start against 0.1 (docs/MEASURED.md), which a loop
    polling ``scontrol`` pays many times a second. None where there is no setpriv, or no
    such program on ``path`` (Popen then says so)."""
    setpriv = sys.platform.startswith("linux") and shutil.which("setpriv")
    found = setpriv and shutil.which(command[0], path=path)
    return [setpriv, "--pdeathsig", "KILL", "--", found, *command[1:]] if found else None


def check_namespaces(namespaces) -> None:
    if namespaces is None:
        return
    pid, kinds = namespaces
    for kind in kinds:
        if kind not in _NAMESPACE_FLAGS:
            raise ValueError(f"namespaces: kinds are {sorted(_NAMESPACE_FLAGS)}, got {kind!r}")
        if not os.path.exists(f"/proc/{pid}/ns/{kind}"):
            raise ValueError(
                f"namespaces: no {kind} namespace of process {pid} to enter (has it exited? "
                "Linux only): start the process that holds it first"
            )
