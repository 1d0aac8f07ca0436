"""LocalSlurm: a real multi-node Slurm cluster on this machine, used and torn down for certain.

The tests that need Slurm skip where it is not installed (``apt-get install slurm-wlm munge``).
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from helpers import run_python

from tflearn_helpers.cluster import port_is_listening, slurm
from tflearn_helpers.programs import processes

# A job that runs until stopped: one sleep task on each of two nodes
SLEEPER = ["sbatch", "--parsable", "-N2", "--output=/dev/null", "--wrap", "srun sleep 120"]
TASK = ("sleep 120", "/usr/bin/sleep 120", "/bin/sleep 120")  # its tasks, not its srun
needs_slurm = pytest.mark.skipif(
    bool(slurm.missing_programs()), reason=f"Slurm is not installed ({slurm.INSTALL_COMMAND})"
)


@pytest.fixture(scope="module")
def cluster():
    if slurm.missing_programs():
        pytest.skip(f"Slurm is not installed ({slurm.INSTALL_COMMAND})")
    with slurm.LocalSlurm(nodes=2) as started:
        yield started


def _ours(folder, conf) -> list[str]:
    """Live processes of one cluster: its daemons (the folder in their command line) and
    anything carrying its SLURM_CONF (slurmstepd, job tasks, clients); zombies are gone."""
    found = []
    tag = f"SLURM_CONF={conf}\0".encode()  # read raw: slurmstepd blanks the start of its block
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE or proc.pid == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{proc.pid}/environ").read_bytes() + b"\0"
        except OSError:
            environ = b""
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(folder) in cmdline or tag in environ:
            found.append(f"{proc.pid}: {cmdline[:120]}")
    return found


def _tasks(folder, conf) -> int:
    """How many of SLEEPER's tasks run now (its srun processes not counted)."""
    return sum(found.split(": ", 1)[1].startswith(TASK) for found in _ours(folder, conf))


def _nothing_left(folder, conf, ports, timeout=15.0) -> None:
    def clean():
        return not _ours(folder, conf) and not any(
            port_is_listening(f"127.0.0.1:{p}") for p in ports
        )

    try:
        processes.wait_until(clean, timeout, "the cluster's processes, ports and folder to go")
    except TimeoutError:
        pytest.fail(f"left behind: {_ours(folder, conf)}, ports {ports}, {folder.exists()=}")


@needs_slurm
def test_every_node_comes_up_idle_on_its_own_port(cluster):
    assert cluster.node_states() == {"node1": "idle", "node2": "idle"}
    conf = cluster.conf.read_text()
    for node, port in zip(cluster.node_names, cluster.ports[1:], strict=True):
        assert f"NodeName={node} " in conf and f"Port={port} " in conf
        assert f"NodeAddr={cluster.addresses[node]} " in conf
        assert port_is_listening(f"{cluster.addresses[node]}:{port}")
    assert len(set(cluster.ports)) == 3 and 6817 not in cluster.ports
    assert "CPUs=1 " in conf and "ProctrackType=proctrack/linuxproc" in conf
    assert cluster.start_seconds < 30


@needs_slurm
def test_srun_runs_one_task_on_each_of_two_nodes(cluster):
    done = cluster.run(
        ["srun", "-N2", "-n2", "sh", "-c", "echo $SLURM_PROCID $SLURM_NODEID $SLURMD_NODENAME"],
        timeout=60,
    )
    tasks = sorted(line.split() for line in done.stdout.splitlines())
    assert tasks == [["0", "0", "node1"], ["1", "1", "node2"]], done.stdout + done.stderr


@needs_slurm
def test_sbatch_runs_a_batch_script_on_two_nodes(cluster, tmp_path):
    script = tmp_path / "job.sh"
    output = tmp_path / "job.out"
    script.write_text(
        "#!/bin/sh\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --time=1\n"
        f"#SBATCH --output={output}\nsrun sh -c 'echo task $SLURM_PROCID on $SLURMD_NODENAME'\n"
    )
    job = cluster.run(["sbatch", "--parsable", str(script)]).stdout.strip()
    assert job.isdigit()
    assert cluster.run(["squeue", "--noheader", "--jobs", job], check=False).returncode == 0
    assert cluster.wait_job(job, timeout=60) == "COMPLETED"
    lines = sorted(output.read_text().splitlines())
    assert lines == ["task 0 on node1", "task 1 on node2"], output.read_text()


@needs_slurm
def test_a_requeued_job_runs_again_within_seconds(cluster):
    """A requeue waits cred_expire (120 s by default) and a scheduling pass (60 s): both
    short here."""
    job = cluster.run([*SLEEPER[:4], "--requeue", "--wrap", "srun true"]).stdout.strip()
    assert cluster.wait_job(job, timeout=60) == "COMPLETED"
    began = time.monotonic()
    cluster.run(["scontrol", "requeue", job])
    processes.wait_until(
        lambda: "Restarts=1" in cluster.run(["scontrol", "show", "job", job]).stdout,
        10,
        "the requeue to count",
    )
    assert cluster.wait_job(job, timeout=60) == "COMPLETED"
    assert time.monotonic() - began < 30


@needs_slurm
def test_on_a_private_network_two_nodes_are_two_hosts(cluster):
    """Each node its own address: a task on each node listens on the same port and reaches
    the other by its node name (on a shared loopback the second bind would fail)."""
    if cluster.network != "private":
        pytest.skip(f"no private network here (root, ip, nsenter, unshare): {cluster.network}")
    assert len(set(cluster.addresses.values())) == 2
    code = textwrap.dedent(
        """
        import os, socket, time
        me, port = int(os.environ["SLURM_PROCID"]), 18888
        server = socket.create_server(("", port))
        other = "node%d" % (2 - me)
        deadline = time.monotonic() + 20
        while True:
            try:
                peer = socket.create_connection((other, port), timeout=2).getpeername()[0]
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        print(os.environ["SLURMD_NODENAME"], "reached", other, "at", peer, flush=True)
        time.sleep(2)  # stay up until the other task has reached this one
        """
    )
    done = cluster.run(["srun", "-N2", "-n2", sys.executable, "-c", code], timeout=60)
    lines = sorted(done.stdout.splitlines())
    a, b = cluster.addresses["node1"], cluster.addresses["node2"]
    assert lines == [f"node1 reached node2 at {b}", f"node2 reached node1 at {a}"], done


@needs_slurm
def test_slurm_cluster_resolver_sees_two_workers_on_two_hosts(cluster):
    """TensorFlow's SlurmClusterResolver, in each task of an srun step (one TF import each);
    on a private network, MultiWorkerMirroredStrategy built from it all-reduces across them.

    On a CPU machine it needs GPU numbers: left out, it runs nvidia-smi (absent: an error);
    gpus_per_node=0 is an error (a range step of 0); and a node gets at most
    gpus_per_node // gpus_per_task tasks. So one "GPU" per task, and auto_set_gpu=False leaves
    CUDA_VISIBLE_DEVICES alone.
    """
    code = textwrap.dedent(
        """
        import json, os
        import tensorflow as tf
        resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
            gpus_per_node=1, gpus_per_task=1, auto_set_gpu=False
        )
        spec = resolver.cluster_spec().as_dict()
        report = {"spec": spec, "task": resolver.task_id, "node": os.environ["SLURMD_NODENAME"]}
        if PRIVATE:  # two servers on node1:8888 and node2:8888: only where they are two hosts
            strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
            mine = strategy.run(lambda: tf.constant(resolver.task_id + 1.0))
            report["sum"] = float(strategy.reduce("SUM", mine, axis=None))
        print(json.dumps(report), flush=True)
        """
    ).replace("PRIVATE", str(cluster.network == "private"))
    done = cluster.run(["srun", "-N2", "-n2", sys.executable, "-c", code], timeout=240)
    reports = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(reports) == 2, done.stdout + done.stderr[-2000:]
    assert all(r["spec"] == {"worker": ["node1:8888", "node2:8888"]} for r in reports)
    assert sorted((r["task"], r["node"]) for r in reports) == [(0, "node1"), (1, "node2")]
    if cluster.network == "private":
        assert [r["sum"] for r in reports] == [3.0, 3.0]  # 1 + 2, on both workers


def _links() -> set[str]:
    """This machine's network interfaces (a private network adds one while it runs; other
    programs, make test's other jobs among them, add and remove their own meanwhile)."""
    return set(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else set()


def test_slurm_cluster_resolver_s_gpu_numbers_on_a_cpu_node():
    """What lesson 07 says of SlurmClusterResolver's GPU arguments, in a task's environment
    (two nodes, one task each): 0 GPUs per node is an error, not an empty spec."""
    code = """
        import json
        import tensorflow as tf
        found = {}
        for node, task in ((0, None), (0, 1), (1, 1)):
            try:
                resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
                    gpus_per_node=node, gpus_per_task=task, auto_set_gpu=False)
                found[f"{node},{task}"] = resolver.cluster_spec().as_dict()
            except Exception as err:
                found[f"{node},{task}"] = type(err).__name__
        print(json.dumps(found))
    """
    env = {
        "SLURM_PROCID": "0",
        "SLURM_STEP_NUM_TASKS": "2",
        "SLURM_STEP_NODELIST": "node[1-2]",
        "SLURM_STEP_TASKS_PER_NODE": "1(x2)",
        "CUDA_VISIBLE_DEVICES": "-1",
    }
    done = run_python(code, timeout=180, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "0,None": "ValueError",  # range(0, 0, 0)
        "0,1": "RuntimeError",  # more GPUs per node asked than it has
        "1,1": {"worker": ["node1:8888", "node2:8888"]},
    }


@needs_slurm
def test_exit_stops_everything_with_a_job_still_running():
    with slurm.LocalSlurm(nodes=2) as c:
        link = c._net.link if c._net else None  # this cluster's end of its private network
        assert (link in _links()) == (c.network == "private")
        job = c.run(SLEEPER).stdout.strip()
        processes.wait_until(lambda: c.job_state(job) == "RUNNING", 30, "the job to run")
        processes.wait_until(
            lambda: _tasks(c.folder, str(c.conf)) >= 2,
            30,
            "a sleep task on each node",
        )
        tops = [psutil.Process(d.pid) for d in c.daemons.values()]
        daemons = {p.name() for top in tops for p in [top, *top.children(recursive=True)]}
        assert {"munged", "slurmctld", "slurmd", "slurmstepd"} <= daemons
        folder, conf, ports = c.folder, str(c.conf), c.ports
    _nothing_left(folder, conf, ports, timeout=5)
    assert link not in _links()


@needs_slurm
def test_without_pid_namespaces_exit_still_ends_the_jobs(monkeypatch):
    """Where unshare cannot make a PID namespace, exit kills what carries the cluster's
    SLURM_CONF: each slurmstepd and job task (a killed owner has no such guarantee)."""
    monkeypatch.setattr(slurm.slurm_isolation, "pid_namespaces", lambda: False)
    with slurm.LocalSlurm(nodes=2) as c:
        assert not any("unshare" in " ".join(d.command) for d in c.daemons.values())
        assert c.network == "loopback" and set(c.addresses.values()) == {"127.0.0.1"}
        c.run(SLEEPER)
        processes.wait_until(
            lambda: _tasks(c.folder, str(c.conf)) >= 2,
            30,
            "a sleep task on each node",
        )
        folder, conf, ports = c.folder, str(c.conf), c.ports
    _nothing_left(folder, conf, ports, timeout=5)


@needs_slurm
def test_a_killed_owner_leaves_nothing_behind(tmp_path):
    """kill -9 of the Python that owns a cluster (a killed kernel): its daemons, the job's
    slurmstepd and tasks, its ports and its folder all go."""
    owner = tmp_path / "owner.py"
    owner.write_text(
        textwrap.dedent(
            """
            import json, sys, time
            from tflearn_helpers.cluster import slurm
            from tflearn_helpers.programs import processes
            SLEEPER = {sleeper!r}
            c = slurm.LocalSlurm(nodes=2).start()
            job = c.run(SLEEPER).stdout.strip()
            processes.wait_until(lambda: c.job_state(job) == "RUNNING", 30, "the job to run")
            link = c._net.link if c._net else None
            print(json.dumps([str(c.folder), str(c.conf), c.ports, link]), flush=True)
            time.sleep(120)
            """
        ).replace("{sleeper!r}", repr(SLEEPER))
    )
    proc = subprocess.Popen(
        [sys.executable, str(owner)], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    try:
        folder, conf, ports, link = json.loads(proc.stdout.readline())
        processes.wait_until(
            lambda: _tasks(folder, conf) >= 2,
            30,
            "the job's tasks",
        )
    finally:
        proc.kill()
        proc.wait(10)
    _nothing_left(Path(folder), conf, ports, timeout=20)
    processes.wait_until(lambda: link not in _links(), 10, "the private network's link to go")


def test_slurm_not_installed_says_the_apt_line_and_lists_the_skipped_runs(monkeypatch, capsys):
    monkeypatch.setattr(slurm, "_which", lambda program: None)
    with pytest.raises(slurm.SlurmNotInstalledError, match="apt-get install slurm-wlm munge"):
        slurm.LocalSlurm(nodes=1)
    printed = capsys.readouterr().out  # outside a notebook report.skipped prints its line
    assert "the Slurm jobs (scripts shown, not run): not shown (no munged, slurmctld" in printed


@needs_slurm
def test_a_private_network_that_fails_falls_back_to_loopback_or_raises(monkeypatch):
    def broken(self):
        raise OSError("ip link add: Operation not permitted")

    monkeypatch.setattr(slurm.slurm_isolation.NodeNetwork, "start", broken)
    with slurm.LocalSlurm(nodes=2) as c:  # "auto": the loopback, and it works
        assert c.network == "loopback" and c.node_states() == {"node1": "idle", "node2": "idle"}
    c = slurm.LocalSlurm(nodes=2, network="private")
    with pytest.raises(OSError, match="Operation not permitted"):
        c.start()
    assert not c.daemons and not c.folder.exists()


def test_a_network_is_auto_private_or_loopback():
    with pytest.raises(ValueError, match="network must be one of"):
        slurm.LocalSlurm(nodes=1, network="ethernet")


@pytest.mark.parametrize("nodes", [0, -1, 1.5, "2"])
def test_a_node_count_is_a_whole_number(nodes):
    with pytest.raises(ValueError, match="nodes must be"):
        slurm.LocalSlurm(nodes=nodes)


def test_more_nodes_than_cores_is_refused():
    cores = len(os.sched_getaffinity(0))
    with pytest.raises(ValueError, match=f"more than this machine's {cores} cores"):
        slurm.LocalSlurm(nodes=cores + 1)
    with pytest.raises(ValueError, match="cpus_per_node must be"):
        slurm.LocalSlurm(nodes=1, cpus_per_node=cores + 1)


@needs_slurm
def test_a_taken_port_is_refused_before_anything_starts():
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ValueError, match=f"port {port} is taken"):
            slurm.LocalSlurm(nodes=2, port=port)
        with pytest.raises(ValueError, match=f"port {port} is taken"):
            slurm.LocalSlurm(nodes=2, node_ports=[None, port])
    with pytest.raises(ValueError, match="one port per node"):
        slurm.LocalSlurm(nodes=2, node_ports=[port])
    free = slurm.LocalSlurm(nodes=2).ports  # chosen, not started
    with pytest.raises(ValueError, match="the ports must differ"):
        slurm.LocalSlurm(nodes=2, port=free[0], node_ports=[free[0], None])
    mixed = slurm.LocalSlurm(nodes=2, port=free[0], node_ports=[None, free[1]]).ports
    assert mixed[0] == free[0] and mixed[2] == free[1] and len(set(mixed)) == 3


@needs_slurm
def test_a_daemon_that_dies_at_start_is_quoted_and_cleaned_up():
    c = slurm.LocalSlurm(nodes=1, extra_config="NoSuchSetting=1")
    began = time.monotonic()
    with pytest.raises(processes.ProcessExitedError, match="slurmctld exited") as caught:
        c.start()
    assert "NoSuchSetting" in str(caught.value)  # its log's last lines, quoted
    assert time.monotonic() - began < 20
    _nothing_left(c.folder, str(c.conf), c.ports, timeout=5)


@needs_slurm
def test_a_job_of_the_urgent_partition_preempts_one_of_debug(tmp_path):
    """preemption_grace: two partitions over the same nodes; an urgent job takes the nodes,
    the debug job's tasks get SIGTERM, and one still running after the grace time is
    SIGKILLed and requeued by Slurm itself (a job that exits within it is not requeued)."""
    out = tmp_path / "low.out"
    task = "trap 'echo TERM $SLURM_PROCID' TERM; while true; do sleep 0.2; done"  # ignores it
    with slurm.LocalSlurm(nodes=2, preemption_grace=2) as c:
        assert c.partitions == ["debug", "urgent"]
        assert "PreemptMode=REQUEUE" in c.conf.read_text()
        wrap = f"srun sh -c {task!r}"
        low = c.run(["sbatch", "--parsable", "-N2", "--requeue", f"--output={out}",
                     "--open-mode=append", "--wrap", wrap]).stdout.strip()  # fmt: skip
        processes.wait_until(lambda: c.job_state(low) == "RUNNING", 30, "the debug job to run")
        time.sleep(1)  # its tasks have installed their trap
        urgent = c.run(["sbatch", "--parsable", "-N2", "--partition=urgent", "--output=/dev/null",
                        "--wrap", "srun true"]).stdout.strip()  # fmt: skip
        assert c.wait_job(urgent, timeout=60) == "COMPLETED"
        shown = c.run(["scontrol", "show", "job", low]).stdout
        assert "Restarts=1" in shown and "Partition=debug" in shown, shown
        lines = out.read_text().splitlines()
        assert "TERM 0" in lines, lines  # the tasks heard it (a killed step may lose a line)
        c.run(["scancel", low])


def test_a_grace_time_is_a_whole_number_of_seconds():
    with pytest.raises(ValueError, match="preemption_grace must be"):
        slurm.LocalSlurm(nodes=1, preemption_grace=-1)


def test_a_teardown_timeout_names_who_listens_on_the_ports():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert f"{port}: python" in slurm._listeners([port])
    assert slurm._listeners([port]) == "nobody"
