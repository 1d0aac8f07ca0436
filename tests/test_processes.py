"""The one process launcher: start/stop/with, the atexit registry, wait_until, PDEATHSIG."""

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from tflearn_helpers import cluster, programs


def _python(code: str, **options) -> programs.processes.Child:
    return programs.processes.start([sys.executable, "-u", "-c", textwrap.dedent(code)], **options)


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_with_stops_the_child_and_its_own_children():
    with _python(
        """
        import subprocess, sys, time
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print(grandchild.pid, flush=True)
        time.sleep(60)
        """
    ) as child:
        line = programs.processes.wait_until(
            child.output, 30, "the grandchild's pid", depends_on=[child]
        )
        grandchild = int(line.split()[0])
        assert child.running()
    assert not child.running() and child.returncode == -15  # SIGTERM first
    programs.processes.wait_until(lambda: _gone(grandchild), 10, "the grandchild to die")


def test_stop_kills_what_ignores_sigterm_after_the_grace():
    child = _python(
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    programs.processes.wait_until(lambda: "ready" in child.output(), 30, "ready")
    start = time.monotonic()
    assert child.stop(grace=0.5) == -9
    assert time.monotonic() - start < 10
    assert child.stop() == -9  # stopping again is harmless


def test_the_registry_stops_every_child_at_exit():
    first, second = _python("import time; time.sleep(60)"), _python("import time; time.sleep(60)")
    assert {first, second} <= programs.processes._LIVE
    programs.processes.stop_all(grace=0.5)
    assert not first.running() and not second.running()
    assert not {first, second} & programs.processes._LIVE


def test_environment_is_extended_and_can_lose_names(tmp_path, monkeypatch):
    monkeypatch.setenv("TFLEARN_DROP_ME", "1")
    child = _python(
        "import os; print(os.environ.get('EXTRA'), os.environ.get('TFLEARN_DROP_ME'))",
        env={"EXTRA": 5},
        unset=("TFLEARN_DROP_ME",),
        log_path=tmp_path / "a" / "log.txt",
    )
    assert child.wait(30) == 0
    assert child.output().strip() == "5 None" and (tmp_path / "a" / "log.txt").exists()


def test_wait_until_returns_the_value_or_times_out_saying_what_it_waited_for():
    calls = iter([0, 0, 7])
    assert programs.processes.wait_until(lambda: next(calls), 5, "x", poll=0.001) == 7
    with pytest.raises(TimeoutError, match="waited 0 s for nothing. If the machine is busy"):
        programs.processes.wait_until(lambda: False, 0.05, "nothing", poll=0.01)
    with pytest.raises(ValueError, match="timeout"):
        programs.processes.wait_until(lambda: True, 0, "x")


def test_wait_until_stops_early_when_a_child_it_depends_on_dies():
    child = _python("print('last words'); raise SystemExit(4)")
    start = time.monotonic()
    with pytest.raises(
        programs.processes.ProcessExitedError, match="(?s)while waiting for the moon.*last words"
    ):
        programs.processes.wait_until(lambda: False, 60, "the moon", depends_on=[child])
    assert time.monotonic() - start < 30 and child.returncode == 4
    other = _python("import time; time.sleep(0.5); print('done'); raise SystemExit(3)")
    with pytest.raises(programs.processes.ProcessExitedError, match="while waiting for the sun"):
        other.wait_until(lambda: False, 60, "the sun")  # the same, as the child's own method
    assert programs.start is programs.processes.start


@pytest.mark.parametrize(
    "command",
    ["[sys.executable, '-c', 'import time; time.sleep(60)']", "['sleep', '60']"],
    ids=["a fork of the fork server", "through setpriv"],
)
def test_a_child_dies_with_its_killed_parent(tmp_path, command):
    """A parent killed outright (no atexit) still takes its children with it (Linux)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux only")
    marker = tmp_path / "pid"
    parent = tmp_path / "parent.py"
    parent.write_text(
        textwrap.dedent(
            f"""
            import pathlib, sys, time
            from tflearn_helpers import programs
            child = programs.processes.start({command})
            pathlib.Path({str(marker)!r}).write_text(str(child.pid))
            time.sleep(60)
            """
        )
    )
    proc = psutil.Popen([sys.executable, str(parent)], env=os.environ.copy())
    try:
        programs.processes.wait_until(
            lambda: marker.exists() and marker.read_text(), 60, "the child pid"
        )
        child = int(marker.read_text())
    finally:
        proc.kill()
        proc.wait(10)
    gone, alive = psutil.wait_procs([psutil.Process(child)], timeout=10)
    assert gone and not alive


@pytest.mark.parametrize("bad", ["python -c pass", []])
def test_a_command_is_a_non_empty_list(bad):
    with pytest.raises(ValueError, match="list naming a program"):
        programs.processes.start(bad)


def test_the_log_folders_start_made_go_at_exit_and_named_logs_stay(tmp_path):
    named = tmp_path / "kept.log"
    program = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from tflearn_helpers.programs import processes
        made = processes.start([sys.executable, "-c", "print('hi')"])
        kept = processes.start([sys.executable, "-c", "print('hi')"], log_path={str(named)!r})
        made.wait(60), kept.wait(60)
        print(made.log_path.parent, processes.temporary_folder("tflearn-test-"))
        """
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    folders = [Path(f) for f in done.stdout.strip().splitlines()[-1].split()]
    assert folders[0].name.startswith("tflearn-proc-"), done
    assert folders[1].name.startswith("tflearn-test-"), done
    assert not any(f.exists() for f in folders), done
    assert named.read_text().strip() == "hi"


WAITING_TASK = [
    sys.executable,
    "-c",
    "import json, time; print('TFLEARN_EVENT ' + json.dumps({'kind': 'waiting'}), flush=True); "
    "time.sleep(60)",
]


def _task_env(spec, index):
    config = {"cluster": spec, "task": {"type": "worker", "index": index}}
    return {"TF_CONFIG": json.dumps(config)}


def test_a_task_waited_for_while_its_peer_runs_nowhere_is_stopped_within_seconds():
    """Worker 0 started and waited for before worker 1 was started: the start-up barrier can
    never open, so wait() stops it within seconds and says which peer was missing."""
    spec = cluster.local_cluster_spec(workers=2)
    worker_0 = programs.start(WAITING_TASK, env=_task_env(spec, 0))
    start = time.monotonic()
    code = worker_0.wait(timeout=60)
    assert time.monotonic() - start < 15 and code != 0
    assert programs.events.parse(worker_0.output(), "stopped")[0]["missing"] == "worker 1"
    assert "start-up barrier" in worker_0.output()


def test_a_task_whose_peer_is_running_is_waited_for_as_usual():
    spec = cluster.local_cluster_spec(workers=2)
    workers = [programs.start(WAITING_TASK, env=_task_env(spec, i)) for i in range(2)]
    try:
        with pytest.raises(TimeoutError):
            workers[0].wait(timeout=5)  # its peer runs: waiting for it is not a deadlock
        assert workers[0].running() and not programs.events.parse(workers[0].output(), "stopped")
    finally:
        for worker in workers:
            worker.stop(grace=0)


def test_starting_a_task_again_stops_its_earlier_copy_stuck_at_the_barrier():
    """A launch cell run again: the worker its last run left waiting for a missing peer goes."""
    spec = cluster.local_cluster_spec(workers=2)
    first = programs.start(WAITING_TASK, env=_task_env(spec, 0))
    programs.events.wait_for(first.output, "waiting", timeout=30, depends_on=[first])
    again = programs.start(WAITING_TASK, env=_task_env(cluster.local_cluster_spec(2), 0))
    try:
        assert not first.running()
        programs.events.wait_for(again.output, "waiting", timeout=30, depends_on=[again])
    finally:
        again.stop(grace=0)


def test_a_plain_child_starts_through_setpriv_and_a_missing_one_is_left_to_popen():
    """A child that only needs to die with its parent starts without a Python ``preexec_fn``
    (setpriv sets the death signal), so Popen need not copy this process's page tables."""
    if not shutil.which("setpriv") or not sys.platform.startswith("linux"):
        pytest.skip("no setpriv (util-linux) here")
    wrapped = programs.child_setup.dying_with_parent(["sleep", "1"])
    assert wrapped[1:4] == ["--pdeathsig", "KILL", "--"] and wrapped[4].endswith("/sleep")
    assert programs.child_setup.dying_with_parent(["no-such-program-here"]) is None
    with pytest.raises(FileNotFoundError):  # as before: Popen names the missing program
        programs.processes.start(["no-such-program-here"])


def test_listening_is_true_while_a_server_accepts_and_false_for_a_closed_or_bad_address():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"127.0.0.1:{server.getsockname()[1]}"
        assert programs.processes.listening(address)
    assert not programs.processes.listening(address)
    for bad in ("127.0.0.1:http", "no port", "127.0.0.1:"):
        assert not programs.processes.listening(bad)
