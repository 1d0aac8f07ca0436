"""A network you can measure on one machine (lesson 05): worker processes behind a shaped link.

``Network(rate_mbit)`` makes a fresh network namespace (``unshare -rn``: a user + network
namespace, unprivileged where the kernel allows it; ``unshare -n`` as root otherwise) held
open by one sleeping process. Its loopback gets an MTU and a token-bucket filter
(``tc qdisc ... tbf``) at the chosen rate; every worker started through ``cluster()`` runs in
it (it enters the namespace first, as ``nsenter`` would: :func:`child_setup.child_setup`), one
core each where the machine has the cores. All workers share that one loopback: one medium
that every byte they send crosses. ``limit_sender`` instead slows only what one worker's
server sends (an ``htb`` class fed by a ``u32`` filter on its port).

The namespace lives only as long as its processes: when the holder and the workers end (on
``close``, ``with`` exit, interpreter exit, or the kernel's death signal after a SIGKILL of
the notebook), the kernel removes the namespace and its qdisc with them. Nothing persists.

Where namespaces or ``tc`` are missing (Colab, macOS, a locked-down container), or when
``TFLEARN_NETWORK=plain`` is set, it says so in one line and uses the plain loopback,
unshaped (``shaped`` is False).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import psutil

from ..measuring import report
from ..programs import child_setup, processes
from ..runtime import validate
from .local import LocalCluster, local_cluster_spec

__all__ = ["FORCE_PLAIN", "Network", "free_cores"]

FORCE_PLAIN = "TFLEARN_NETWORK"  # set to "plain" to skip namespaces (tests, or by choice)
_TIMEOUT = 20.0
_TRANSFER = r"""
import socket, sys, threading, time
size = int(sys.argv[1]); server = socket.create_server(("127.0.0.1", 0)); got = [0, 0.0]
def receive():
    conn, _ = server.accept()
    while True:
        chunk = conn.recv(1 << 20)
        if not chunk:
            break
        got[0] += len(chunk); got[1] = time.perf_counter()
thread = threading.Thread(target=receive); thread.start()
client = socket.create_connection(server.getsockname()); block = b"x" * (1 << 20)
start = time.perf_counter(); sent = 0
while sent < size:
    client.sendall(block); sent += len(block)
client.close(); thread.join(); print(8 * got[0] / (got[1] - start) / 1e6)
"""


def free_cores(seconds: float = 0.5, busy_percent: float = 25.0) -> int:
    """How many of this process's cores were less than ``busy_percent`` busy over ``seconds``."""
    mine = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    loads = psutil.cpu_percent(interval=seconds, percpu=True)
    return sum(
        1 for i, load in enumerate(loads) if (mine is None or i in mine) and load < busy_percent
    )


class Network:
    """A shaped loopback in its own namespace (or the plain loopback); a context manager."""

    def __init__(
        self, rate_mbit: float | None = None, *, mtu: int = 9000, burst: int | None = None
    ):
        self.mtu = validate.whole_number("mtu", mtu, minimum=576, maximum=65536)
        self.holder = None
        self.kind, self.reason = self._choose()
        self.rate_mbit = None
        self.senders: dict[int, float] = {}  # port -> Mbit/s (limit_sender)
        if self.kind != "plain":
            flag = "-rn" if self.kind == "user" else "-n"
            script = f"ip link set lo mtu {self.mtu} up && exec sleep 86400"
            self.holder = processes.start(["unshare", flag, "sh", "-c", script], name="netns")
            processes.wait_until(
                self._lo_ready,
                _TIMEOUT,
                "the namespace's loopback to come up",
                depends_on=[self.holder],
            )
        print(self.describe())
        if not self.shaped:  # the summary page lists it
            report.skipped("a shaped link (rates, a slowed or cut link)", self.reason)
        self.set_rate(rate_mbit, burst=burst)

    @property
    def shaped(self) -> bool:
        return self.kind != "plain"

    def describe(self) -> str:
        if not self.shaped:
            return f"network: the plain loopback, unshaped ({self.reason}); rates cannot be set"
        how = "user namespace (unshare -rn)" if self.kind == "user" else "network namespace (root)"
        return f"network: a {how}, loopback MTU {self.mtu} B, shaped with tc tbf"

    # -- inside the namespace ---------------------------------------------------
    def namespaces(self) -> tuple[int, list[str]] | None:
        """``(pid, kinds)``: the namespaces a program enters to run inside (None when plain)."""
        if not self.shaped:
            return None
        if not self.holder.running():
            raise RuntimeError("the network was closed: make a new Network")
        return self.holder.pid, (["user", "net"] if self.kind == "user" else ["net"])

    def run(self, command: list[str], timeout: float = _TIMEOUT) -> str:
        """Run ``command`` in the namespace; its stdout (RuntimeError with stderr if it fails)."""
        namespaces = self.namespaces()
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=timeout,
                preexec_fn=lambda: child_setup.child_setup(namespaces=namespaces),
            )
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"{' '.join(command)} took over {timeout:.0f} s") from None
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()}")
        return done.stdout

    def set_rate(self, rate_mbit: float | None, *, burst: int | None = None) -> None:
        """Limit the loopback to ``rate_mbit`` Mbit/s (None: unshaped). Burst: bytes, >= MTU."""
        if self.senders:
            raise RuntimeError(
                f"senders {sorted(self.senders)} are limited: lift them first "
                "(limit_sender(port, None)); one qdisc shapes the link at a time"
            )
        if rate_mbit is None:
            if self.shaped and self.rate_mbit is not None:
                self.run(["tc", "qdisc", "del", "dev", "lo", "root"])
            self.rate_mbit = None
            return
        if not self.shaped:
            raise RuntimeError(f"cannot set a rate on the plain loopback ({self.reason})")
        self._check_rate(rate_mbit)
        burst = self._burst(rate_mbit, burst)
        tbf = ["tbf", "rate", f"{rate_mbit}mbit", "burst", str(burst), "latency", "50ms"]
        self.run(["tc", "qdisc", "replace", "dev", "lo", "root", *tbf])
        self.rate_mbit = rate_mbit

    def limit_sender(self, port: int, rate_mbit: float | None) -> None:
        """Limit what the server listening on ``port`` sends to ``rate_mbit`` Mbit/s (None:
        lift it); the rest of the link stays unshaped. In a RING all-reduce over gRPC each
        worker pulls its peer's chunks from the peer's server, so these are the bytes that
        worker sends: one slow (or, at a trickle, cut) link. Needs ``set_rate(None)``."""
        validate.whole_number("port", port, minimum=1, maximum=65535)
        if rate_mbit is not None:
            self._check_rate(rate_mbit)
        if not self.shaped:
            raise RuntimeError(f"cannot limit a sender on the plain loopback ({self.reason})")
        if self.rate_mbit is not None:
            raise RuntimeError(
                f"the whole link is shaped to {self.rate_mbit} Mbit/s: set_rate(None) first"
            )
        senders = dict(self.senders)
        if rate_mbit is None:
            senders.pop(port, None)
        else:
            senders[port] = rate_mbit
        if self.senders:  # rebuilt whole: one htb with a class per limited sender
            self.run(["tc", "qdisc", "del", "dev", "lo", "root"])
        self.senders = {}
        if senders:
            self.run(["tc", "qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb"])
        for k, (sport, rate) in enumerate(sorted(senders.items()), start=1):
            rule = ["rate", f"{rate}mbit", "burst", str(self._burst(rate, None))]
            self.run(
                [
                    "tc",
                    "class",
                    "add",
                    "dev",
                    "lo",
                    "parent",
                    "1:",
                    "classid",
                    f"1:{k}",
                    "htb",
                    *rule,
                ]
            )
            for prio, (protocol, match) in enumerate((("ip", "ip"), ("ipv6", "ip6")), start=1):
                self.run(
                    ["tc", "filter", "add", "dev", "lo", "parent", "1:", "protocol", protocol,
                     "prio", str(prio), "u32", "match", match, "sport", str(sport), "0xffff",
                     "flowid", f"1:{k}"]
                )  # fmt: skip
        self.senders = senders

    @staticmethod
    def _check_rate(rate_mbit) -> None:
        if not isinstance(rate_mbit, (int, float)) or not 0.1 <= rate_mbit <= 100_000:
            raise ValueError(
                f"rate_mbit must be a number of Mbit/s in [0.1, 100000], got {rate_mbit!r}"
            )

    def _burst(self, rate_mbit: float, burst: int | None) -> int:
        """Bytes the shaper may send at once: 5 ms at the rate, at least 4 MTUs."""
        burst = burst if burst is not None else max(4 * self.mtu, int(rate_mbit * 1e6 / 8 * 0.005))
        if not isinstance(burst, int) or burst < self.mtu:
            raise ValueError(
                f"burst {burst!r} B is below the loopback MTU ({self.mtu} B): tbf would never "
                "send a full packet and every sender would stall. Use a burst >= the MTU."
            )
        return burst

    def measure(self, megabytes: float | None = None, timeout: float = 60.0) -> float:
        """Mbit/s of one raw TCP transfer across the link (no TensorFlow involved)."""
        if megabytes is None:  # about half a second at the set rate, 2..64 MB
            megabytes = min(64.0, max(2.0, (self.rate_mbit or 8000) / 16))
        size = str(int(megabytes * 1e6))
        return float(self.run([sys.executable, "-c", _TRANSFER, size], timeout=timeout))

    def cluster(self, workers: int, *, ports: list[int] | None = None, **options) -> LocalCluster:
        """A LocalCluster of ``workers`` tasks that start inside the namespace, one core each
        when this process has that many cores (``options`` go to LocalCluster)."""
        validate.counts(workers=workers)
        if ports is None:
            spec = local_cluster_spec(workers=workers)
        elif len(ports) < workers:
            raise ValueError(f"{workers} workers need {workers} ports, got {len(ports)}: {ports}")
        else:
            spec = {"worker": [f"localhost:{p}" for p in ports[:workers]]}
        mine = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        cores = mine[:workers] if len(mine) >= workers else None
        return LocalCluster(spec, namespaces=self.namespaces(), cores=cores, **options)

    # -- teardown -----------------------------------------------------------------
    def close(self) -> None:
        """Stop the holder: the namespace and its qdisc go with its last process."""
        if self.holder is not None:
            self.holder.stop(grace=0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- choosing -------------------------------------------------------------------
    def _lo_ready(self) -> bool:
        try:
            return f"mtu {self.mtu} " in self.run(["ip", "-o", "link", "show", "lo"], timeout=5)
        except RuntimeError:
            return False

    @staticmethod
    def _choose() -> tuple[str, str]:
        if os.environ.get(FORCE_PLAIN, "") == "plain":
            return "plain", f"{FORCE_PLAIN}=plain is set"
        if not sys.platform.startswith("linux"):
            return "plain", f"network namespaces are Linux only, this is {sys.platform}"
        missing = [t for t in ("unshare", "ip", "tc") if not shutil.which(t)]
        if missing:
            return (
                "plain",
                f"missing {', '.join(missing)} (Debian: apt-get install iproute2 util-linux)",
            )
        for kind, flag in (("user", "-rn"), ("root", "-n")):
            probe = subprocess.run(
                ["unshare", flag, "tc", "qdisc", "show", "dev", "lo"],
                capture_output=True,
                timeout=_TIMEOUT,
            )
            if probe.returncode == 0:
                return kind, ""
        return "plain", "this kernel or container allows no new network namespace"
