import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from tflearn_helpers import cluster
from tflearn_helpers.cluster import network

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


def _ours(tmp_path) -> list[int]:
    """Processes this test started: its workers and the namespace holder."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or [])
        if str(tmp_path) in line or "exec sleep 86400" in line:
            found.append(proc.pid)
    return found


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
    mine = os.stat("/proc/self/ns/net").st_ino
    inodes = {int(text.split()[1]) for text in lines}
    assert len(inodes) == 1 and mine not in inodes, lines
    if len(os.sched_getaffinity(0)) >= 2:
        assert "{" + str(sorted(os.sched_getaffinity(0))[0]) + "}" in lines[0], lines


def test_forced_fallback_is_the_plain_loopback(monkeypatch, capsys):
    monkeypatch.setenv(network.FORCE_PLAIN, "plain")
    with network.Network(None) as net:
        assert not net.shaped and net.prefix() == []
        assert net.measure(megabytes=2) > 10
        with pytest.raises(RuntimeError, match="plain loopback"):
            net.set_rate(100)
    assert "plain loopback, unshaped" in capsys.readouterr().out


@needs_namespaces
@pytest.mark.parametrize(
    "rate, burst, match",
    [(0, None, "rate_mbit"), ("fast", None, "rate_mbit"), (100, 1000, "below the loopback MTU")],
)
def test_bad_rates_and_bursts_are_rejected(rate, burst, match):
    with network.Network(None) as net, pytest.raises(ValueError, match=match):
        net.set_rate(rate, burst=burst)


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
        assert len(_namespaces() - before_ns) == 1 and len(_ours(tmp_path)) >= 3
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    cluster.processes.wait_until(
        lambda: not (_namespaces() - before_ns) and not _ours(tmp_path),
        20,
        "the namespace and every process to go",
    )


def test_lesson07_runs_all_on_the_plain_loopback(monkeypatch):
    """Without namespaces (forced), Run All of lesson 07 passes and says what it cannot show."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv(network.FORCE_PLAIN, "plain")
    monkeypatch.setenv("TFLEARN_SCALE", "smoke")
    path = Path(__file__).parents[1] / "notebooks" / "07_communication.ipynb"
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute()  # raises on error
    text = "".join(
        output.get("text", "") for cell in notebook.cells for output in cell.get("outputs", [])
    )
    assert "plain loopback, unshaped" in text and "cannot show" in text
    assert "not asserted" in text
