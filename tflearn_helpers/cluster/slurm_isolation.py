"""How a local Slurm cluster keeps its nodes apart and leaves nothing behind (lesson 07).

``PID_NAMESPACE`` starts a program as the first process of its own PID namespace (when it
ends, the kernel ends everything it started); ``pid_namespaces()`` says whether this machine
allows it. ``NodeNetwork(nodes)`` gives each node its own network namespace, held open by a
sleeping process, with one address on a bridge (10.R.0.11, .12, ...); the bridge lives in a
namespace of its own, and this machine joins it as 10.R.0.1 through one veth pair. So two
tasks on two nodes can listen on the same port, and a node's name resolves to its address
inside the node (each node's ``/etc/hosts`` is a file bind-mounted in its own mount
namespace). Every device lives in a namespace held by a child of this process: when the
holders end (``close``, or a killed kernel through ``processes.start``) the kernel removes
the bridge, the veths and this machine's end of the link. It needs root and ``ip``
(iproute2); ``available()`` says. ``kill_strays(conf)`` ends what still points at a stopped
cluster; ``watch_folder(folder)`` removes a folder once its owner and the daemons are gone.
"""

from __future__ import annotations

import functools
import os
import random
import secrets
import shutil
import subprocess
import time
from pathlib import Path

from ..programs import processes

__all__ = ["PID_NAMESPACE", "NodeNetwork", "kill_strays", "pid_namespaces", "watch_folder"]

PID_NAMESPACE = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
_CLIENTS = {"srun", "sbatch", "salloc", "sinfo", "squeue", "scontrol", "scancel", "slurmstepd"}
# Waits for the owner to go (its end of a pipe closes), then for the daemons (the folder in
# a command line), then removes the folder. The [/] keeps grep from finding itself.
_WATCHER = r"""cat >/dev/null; n=0
while [ $n -lt 100 ] && grep -qs "[/]${FOLDER#/}" /proc/[0-9]*/cmdline
do sleep 0.1; n=$((n+1)); done
rm -rf "$FOLDER" """


@functools.cache
def pid_namespaces() -> bool:
    """Whether ``PID_NAMESPACE`` works here (root, or unprivileged user namespaces)."""
    if not shutil.which("unshare"):
        return False
    try:
        done = subprocess.run([*PID_NAMESPACE, "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def watch_folder(folder: Path) -> tuple[subprocess.Popen, int]:
    """Start a watcher that removes ``folder`` once this process has gone (a killed kernel
    included) and no process names the folder; the watcher and the pipe end to close (it
    leaves at once when that closes)."""
    read, write = os.pipe()
    watcher = subprocess.Popen(
        ["sh", "-c", _WATCHER], stdin=read, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, env={"FOLDER": str(folder), "PATH": "/usr/bin:/bin"},
        start_new_session=True,  # a kernel's process group killed whole spares it
    )  # fmt: skip
    os.close(read)
    return watcher, write


def kill_strays(conf: str) -> None:
    """Kill what outlived a cluster's daemons and points at it (``SLURM_CONF=conf``): a
    ``slurmstepd`` or job task without PID namespaces, a Slurm client left waiting. Again
    until a pass finds none: a step may start a task while the first pass runs."""
    import psutil

    for _ in range(10):
        found = []
        for proc in psutil.process_iter(["name"]):
            environ = _environ(proc.pid)  # raw: slurmstepd blanks the start of its block
            job = b"\0SLURM_JOB_ID=" in environ or proc.info["name"] in _CLIENTS
            if f"\0SLURM_CONF={conf}\0".encode() in environ and job and proc.pid != os.getpid():
                found.append(proc)
        for proc in found:
            try:
                proc.kill()
            except psutil.Error:
                pass
        if not found:
            return
        time.sleep(0.1)


def _environ(pid: int) -> bytes:
    """A process's environment block as it is now (b"" if unreadable), wrapped in NULs."""
    try:
        return b"\0" + Path(f"/proc/{pid}/environ").read_bytes() + b"\0"
    except OSError:
        return b""


def _ip(*args: str, inside: int | None = None) -> None:
    """Run ``ip ARGS`` here, or inside the network namespace of process ``inside``."""
    prefix = ["nsenter", f"--net=/proc/{inside}/ns/net"] if inside else []
    done = subprocess.run([*prefix, "ip", *args], capture_output=True, text=True, timeout=20)
    if done.returncode != 0:
        raise OSError(f"ip {' '.join(args)}: {done.stderr.strip()}")


class NodeNetwork:
    """One network namespace and address per node, on a bridge this machine joins."""

    def __init__(self, nodes: int):
        self.nodes = nodes
        self.subnet = _free_subnet()
        self.host_address = f"{self.subnet}.1"
        self.addresses = [f"{self.subnet}.{10 + k}" for k in range(1, nodes + 1)]
        self.link = f"tfl{secrets.token_hex(4)}"  # this machine's end, <= 15 characters
        self.holders: list[processes.Child] = []

    @staticmethod
    def available() -> bool:
        """Root, with ``ip``, ``nsenter`` and ``unshare`` installed."""
        tools = all(shutil.which(t) for t in ("ip", "nsenter", "unshare"))
        return os.geteuid() == 0 and tools

    def start(self) -> NodeNetwork:
        """Make the namespaces and links; on any failure, undo them and raise OSError."""
        try:
            switch = self._holder("switch")
            _ip("link", "add", self.link, "type", "veth", "peer", "name", "up0", "netns",
                str(switch))  # fmt: skip
            _ip("link", "add", "br0", "type", "bridge", inside=switch)
            for device in ("lo", "br0", "up0"):
                _ip("link", "set", device, "up", inside=switch)
            _ip("link", "set", "up0", "master", "br0", inside=switch)
            _ip("addr", "add", f"{self.host_address}/24", "dev", self.link)
            _ip("link", "set", self.link, "up")
            for k, address in enumerate(self.addresses, start=1):
                self._add_node(switch, f"n{k}", address)
        except BaseException:
            self.close()
            raise
        return self

    def _holder(self, name: str) -> int:
        holder = processes.start(["unshare", "--net", "sleep", "infinity"], name=f"{name} netns")
        self.holders.append(holder)
        processes.wait_until(  # unshare has made the namespace once it has become sleep
            lambda: _command(holder.pid)[:1] == ["sleep"], 10, f"the {name} namespace",
            depends_on=[holder],
        )  # fmt: skip
        return holder.pid

    def _add_node(self, switch: int, name: str, address: str) -> None:
        node = self._holder(name)
        _ip("link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", str(node),
            inside=switch)  # fmt: skip
        _ip("link", "set", name, "master", "br0", inside=switch)
        _ip("link", "set", name, "up", inside=switch)
        _ip("addr", "add", f"{address}/24", "dev", "eth0", inside=node)
        for device in ("lo", "eth0"):
            _ip("link", "set", device, "up", inside=node)

    def namespace(self, index: int) -> tuple[int, list[str]]:
        """``processes.start(namespaces=...)`` for node ``index`` (0-based)."""
        return (self.holders[1 + index].pid, ["net"])

    def hosts(self, names: list[str], host: str) -> str:
        """An ``/etc/hosts`` for the nodes: each name at its address, this machine's too."""
        lines = ["127.0.0.1 localhost", f"{self.host_address} {host}"]
        lines += [f"{a} {n}" for a, n in zip(self.addresses, names, strict=True)]
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        """End the holders: the kernel removes the namespaces and every link with them."""
        for holder in self.holders:
            holder.stop(grace=0)
        self.holders = []
        processes.wait_until(
            lambda: not os.path.exists(f"/sys/class/net/{self.link}"), 10, f"{self.link} to go"
        )


def _command(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [part.decode() for part in f.read().split(b"\0") if part]
    except OSError:
        return []


def _free_subnet() -> str:
    """A 10.R.0 prefix that no route on this machine uses."""
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True, timeout=10)
    used = routes.stdout if routes.returncode == 0 else ""
    choices = [r for r in range(100, 250) if f"10.{r}." not in used]
    return f"10.{random.choice(choices)}.0"
