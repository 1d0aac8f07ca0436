import os
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from tflearn_helpers import cluster, programs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import leftovers  # noqa: E402


def test_spec_has_distinct_free_ports():
    spec = cluster.local_cluster_spec(workers=2, ps=2, chief=True)
    addresses = [a for job in spec.values() for a in job]
    assert len(set(addresses)) == 5 and list(spec) == ["chief", "worker", "ps"]


@pytest.mark.parametrize("kwargs", [{"workers": -1}, {"workers": 0}, {"workers": 1.5}])
def test_bad_counts_are_rejected(kwargs):
    with pytest.raises(ValueError):
        cluster.local_cluster_spec(**kwargs)


def test_a_malformed_cluster_is_rejected_before_anything_starts():
    with pytest.raises(cluster.tf_config.TFConfigError):
        cluster.LocalCluster({"worker": ["localhost:nope"]})


def _script(tmp_path, body):
    path = tmp_path / "task.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_scripts_get_their_own_tf_config_and_logs(tmp_path):
    script = _script(
        tmp_path,
        """
        import json, os
        task = json.loads(os.environ["TF_CONFIG"])["task"]
        print("I am", task["type"], task["index"])
    """,
    )
    spec = cluster.local_cluster_spec(workers=2)
    with cluster.LocalCluster(spec, log_dir=tmp_path) as c:
        c.start(script)
        assert c.wait(timeout=60) == {("worker", 0): 0, ("worker", 1): 0}
        assert "I am worker 1" in c.logs("worker", 1)


def test_wait_times_out_instead_of_hanging(tmp_path):
    script = _script(tmp_path, "import time; time.sleep(60)")
    with cluster.LocalCluster(cluster.local_cluster_spec(workers=1)) as c:
        c.start(script)
        with pytest.raises(TimeoutError, match="still running"):
            c.wait(timeout=0.5)


def test_wait_until_returns_the_condition_or_stops_when_a_task_exits(tmp_path):
    script = _script(tmp_path, "import sys; sys.exit(3)")
    with cluster.LocalCluster(cluster.local_cluster_spec(workers=1)) as c:
        assert c.wait_until(lambda: "ready", 5, "nothing") == "ready"
        c.start(script)
        with pytest.raises(programs.processes.ProcessExitedError, match="worker:0 exited"):
            c.wait_until(lambda: False, 60, "a step that never comes")
        with pytest.raises(ValueError, match="timeout"):
            c.wait_until(lambda: True, 0, "bad timeout")


def test_teardown_leaves_no_process_or_port_even_after_an_exception():
    before = leftovers.snapshot()
    spec = cluster.local_cluster_spec(workers=1, ps=1)
    with pytest.raises(KeyError):
        with cluster.LocalCluster(spec) as c:
            c.start("server", ready_timeout=90)
            assert all(cluster.port_is_listening(a) for j in spec.values() for a in j)
            pids = [p.pid for p in c.procs.values()]
            raise KeyError("boom")
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in pids)
    assert not any(cluster.port_is_listening(a) for j in spec.values() for a in j)
    programs.fork_server.stop_all()  # this test process's fork server: not the cluster's
    assert leftovers.leftovers(before, wait=5) == []


def test_kill_and_restart_a_server_task():
    spec = cluster.local_cluster_spec(workers=1)
    with cluster.LocalCluster(spec) as c:
        c.start("server", ready_timeout=90)
        c.kill("worker", 0)
        assert not c.alive("worker", 0)
        c.restart("worker", 0, ready_timeout=90)
        assert c.alive("worker", 0) and cluster.port_is_listening(spec["worker"][0])


def test_a_task_server_starts_tensorflow_without_keras():
    """Keras's eager import is skipped in a bare server (1.5 of a start's 6 CPU-s); the real
    servers of the tests above serve and restart with it skipped."""
    import json

    from helpers import run_python

    code = """
    import json, sys
    from tflearn_helpers.cluster import task_server

    def report(cluster, job, index):
        import tensorflow as tf

        print(json.dumps({"keras": "keras" in sys.modules, "sum": int(tf.constant(1) + 1)}))
        sys.exit(0)

    task_server.start_server = report  # the server's TensorFlow, without serving
    task_server.main()
    """
    config = {"cluster": {"ps": ["localhost:1"]}, "task": {"type": "ps", "index": 0}}
    got = run_python(code, env={"TF_CONFIG": json.dumps(config)})
    assert got.returncode == 0, got.stderr[-2000:]
    assert json.loads(got.stdout.splitlines()[-1]) == {"keras": False, "sum": 2}


def test_a_task_that_dies_at_start_reports_its_log(tmp_path):
    spec = cluster.local_cluster_spec(workers=1)
    with cluster.LocalCluster(spec, env={"TF_CONFIG_BROKEN": "1"}) as c:
        c._command = lambda target, args: [sys.executable, "-c", "raise SystemExit('no luck')"]
        with pytest.raises(RuntimeError, match="no luck"):
            c.start("server")


def test_children_die_with_their_parent(tmp_path):
    """The kernel killed outright (no atexit) still takes its cluster with it."""
    marker = tmp_path / "pid"
    parent = _script(
        tmp_path,
        f"""
        from tflearn_helpers import cluster
        import pathlib, time
        c = cluster.LocalCluster(cluster.local_cluster_spec(workers=1))
        c.start(pathlib.Path({str(tmp_path)!r}) / "sleeper.py")
        pathlib.Path({str(marker)!r}).write_text(str(c.procs[("worker", 0)].pid))
        time.sleep(60)
    """,
    )
    (tmp_path / "sleeper.py").write_text("import time; time.sleep(60)")
    proc = psutil.Popen([sys.executable, str(parent)], env=os.environ.copy())
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int(marker.read_text())
    proc.kill()
    proc.wait(10)
    gone, alive = psutil.wait_procs([psutil.Process(child)], timeout=10)
    assert gone and not alive


def test_leftovers_sees_an_orphaned_server_and_its_port(tmp_path):
    """A process whose parent exited without stopping it is reported, then killed."""
    before = leftovers.snapshot()
    spec = cluster.local_cluster_spec(workers=1)
    launcher = _script(
        tmp_path,
        f"""
        import json, os, subprocess, sys
        env = dict(os.environ, TF_CONFIG=json.dumps({{"cluster": {spec!r},
                   "task": {{"type": "worker", "index": 0}}}}))
        subprocess.Popen([sys.executable, "-m", "tflearn_helpers.cluster.task_server"], env=env,
                         start_new_session=True)
    """,
    )
    psutil.Popen([sys.executable, str(launcher)]).wait(30)
    port = spec["worker"][0]
    deadline = time.monotonic() + 90
    while not cluster.port_is_listening(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    found = leftovers.leftovers(before, wait=0)
    leftovers.kill(before)
    assert any("task_server" in f for f in found), found
    assert any(f.startswith(f"listening port {port.split(':')[1]}") for f in found), found


def test_start_server_without_waiting_returns_before_it_listens(monkeypatch):
    launched, waited = [], []
    monkeypatch.setattr(
        cluster.LocalCluster, "_launch", lambda self, task, cmd: launched.append(task)
    )
    monkeypatch.setattr(cluster.LocalCluster, "wait_listening", lambda self, *a: waited.append(a))
    spec = cluster.local_cluster_spec(workers=2, ps=1)
    cluster.LocalCluster(spec).start("server", wait=False)
    assert launched == [("worker", 0), ("worker", 1), ("ps", 0)] and waited == []
    cluster.LocalCluster(spec).start("server", tasks=[("ps", 0)])
    assert len(waited) == 1
