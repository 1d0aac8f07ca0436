import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import portpicker
import psutil
import pytest

from tflearn_helpers import programs
from tflearn_helpers.cluster import network
from tflearn_helpers.programs import fork_server

needs_namespaces = pytest.mark.skipif(
    network.Network._choose()[0] == "plain", reason="no network namespaces on this machine"
)


def _namespaces() -> set[int]:
    """The network namespaces any process on this machine is in (their inode numbers)."""
    found = set()
    for proc in psutil.process_iter():
        try:
            found.add(os.stat(f"/proc/{proc.pid}/ns/net").st_ino)
        except OSError:
            pass
    return found


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@needs_namespaces
def test_shaped_link_measures_near_its_rate_and_can_change():
    with network.Network(200) as net:
        assert net.shaped
        slow = net.measure()
        net.set_rate(800)
        fast = net.measure()
    assert 150 < slow < 215, slow
    assert fast > 2 * slow, (slow, fast)


@needs_namespaces
def test_workers_run_inside_the_namespace_on_their_own_core(tmp_path):
    script = tmp_path / "task.py"
    script.write_text(
        "import os; print('NS', os.stat('/proc/self/ns/net').st_ino, os.sched_getaffinity(0))\n"
    )
    with network.Network(None) as net, net.cluster(2) as job:
        job.start(script)
        job.wait(timeout=60)
        lines = [job.logs("worker", i) for i in range(2)]
        forked = [isinstance(c.process, fork_server.Forked) for c in job.procs.values()]
    assert forked == [True, True]  # setns after the fork, not an nsenter in front of python
    mine = os.stat("/proc/self/ns/net").st_ino
    inodes = {int(text.split()[1]) for text in lines}
    assert len(inodes) == 1 and mine not in inodes, lines
    if len(os.sched_getaffinity(0)) >= 2:
        assert "{" + str(sorted(os.sched_getaffinity(0))[0]) + "}" in lines[0], lines


def test_entering_a_namespace_that_is_gone_or_unknown_says_so():
    with network.Network(None) as net:
        pid, kinds = net.namespaces() or (os.getpid(), ["net"])
    with pytest.raises(ValueError, match="has it exited"):
        programs.processes.start([sys.executable, "-c", "pass"], namespaces=(pid + 10**7, kinds))
    with pytest.raises(ValueError, match="kinds are"):
        programs.processes.start([sys.executable, "-c", "pass"], namespaces=(os.getpid(), ["pid"]))


def test_forced_fallback_is_the_plain_loopback(monkeypatch, capsys):
    monkeypatch.setenv(network.FORCE_PLAIN, "plain")
    with network.Network(None) as net:
        assert not net.shaped and net.namespaces() is None
        assert net.measure(megabytes=2) > 10
        with pytest.raises(RuntimeError, match="plain loopback"):
            net.set_rate(100)
    printed = capsys.readouterr().out
    assert "plain loopback, unshaped" in printed
    assert (
        f"a shaped link (rates, a slowed or cut link): not shown ({network.FORCE_PLAIN}" in printed
    )


@needs_namespaces
@pytest.mark.parametrize(
    "rate, burst, match",
    [(0, None, "rate_mbit"), ("fast", None, "rate_mbit"), (100, 1000, "below the loopback MTU")],
)
def test_bad_rates_and_bursts_are_rejected(rate, burst, match):
    with network.Network(None) as net, pytest.raises(ValueError, match=match):
        net.set_rate(rate, burst=burst)


_SERVE = r"""
import socket, sys, threading, time
server = socket.create_server(("127.0.0.1", int(sys.argv[1])))
client = socket.create_connection(server.getsockname()); conn, _ = server.accept()
block, size, got = b"x" * (1 << 16), int(sys.argv[2]), 0
def send():  # from the server's port
    conn.sendall(block * (size // len(block))); conn.close()
start = time.perf_counter(); threading.Thread(target=send).start()
while chunk := client.recv(1 << 20):
    got += len(chunk)
print(8 * got / (time.perf_counter() - start) / 1e6)
"""


@needs_namespaces
def test_a_limited_sender_is_slow_and_the_rest_of_the_link_is_not():
    port = portpicker.pick_unused_port()
    with network.Network(None) as net:
        net.limit_sender(port, 50)
        limited = float(net.run([sys.executable, "-c", _SERVE, str(port), str(4 << 20)]))
        other = net.measure(megabytes=8)  # a transfer from another port
        rules = net.run(["tc", "filter", "show", "dev", "lo"])
        with pytest.raises(RuntimeError, match="lift them first"):
            net.set_rate(100)
        net.limit_sender(port, None)
        assert net.senders == {} and "htb" not in net.run(["tc", "qdisc", "show", "dev", "lo"])
    assert 35 < limited < 60, limited
    assert other > 5 * limited, (limited, other)
    assert f"{port:04x}" in rules, rules  # u32 shows the matched port in hex


@needs_namespaces
def test_limit_sender_rejects_bad_input():
    with network.Network(None) as net:
        with pytest.raises(ValueError, match="port"):
            net.limit_sender(70000, 10)
        with pytest.raises(ValueError, match="rate_mbit"):
            net.limit_sender(8000, 0)
        net.set_rate(100)
        with pytest.raises(RuntimeError, match="set_rate\\(None\\) first"):
            net.limit_sender(8000, 10)


def test_limit_sender_needs_a_namespace(monkeypatch):
    monkeypatch.setenv(network.FORCE_PLAIN, "plain")
    with network.Network(None) as net, pytest.raises(RuntimeError, match="plain loopback"):
        net.limit_sender(8000, 10)


def test_more_workers_than_ports_is_rejected(monkeypatch):
    monkeypatch.setenv(network.FORCE_PLAIN, "plain")
    with network.Network(None) as net, pytest.raises(ValueError, match="need 3 ports"):
        net.cluster(3, ports=[20001, 20002])


def test_bad_mtu_is_rejected():
    with pytest.raises(ValueError):
        network.Network(None, mtu=10)


def test_free_cores_is_a_count():
    assert 0 <= network.free_cores(seconds=0.1) <= os.cpu_count()


@needs_namespaces
def test_nothing_is_left_after_the_owner_is_killed(tmp_path):
    """A SIGKILLed kernel leaves no namespace, qdisc or process behind (death signal)."""
    before_ns = _namespaces()
    owner = tmp_path / "owner.py"
    owner.write_text(
        textwrap.dedent(
            f"""
            import sys, time
            sys.path.insert(0, {str(Path(__file__).parents[1])!r})
            from tflearn_helpers.cluster import network
            from tflearn_helpers.programs import fork_server
            net = network.Network(100)
            job = net.cluster(2)
            job.start({str(tmp_path / "sleep.py")!r})
            print("READY", flush=True)
            time.sleep(600)
            """
        )
    )
    (tmp_path / "sleep.py").write_text("import time; time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, str(owner)], stdout=subprocess.PIPE, text=True)
    try:
        assert any("READY" in proc.stdout.readline() for _ in range(3))
        time.sleep(0.5)
        ours = psutil.Process(proc.pid).children(recursive=True)  # holder, workers (and server)
        inside = [p for p in ours if os.stat(f"/proc/{p.pid}/ns/net").st_ino not in before_ns]
        # its own namespace only: a lesson beside this test (make -j2) may make one of its own
        mine = {os.stat(f"/proc/{p.pid}/ns/net").st_ino for p in inside}
        assert len(mine) == 1 and len(inside) >= 3, ours
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    programs.processes.wait_until(
        lambda: not (_namespaces() & mine) and not _alive(ours),
        20,
        "the namespace and every process to go",
    )
