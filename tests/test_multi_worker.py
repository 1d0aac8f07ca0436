import json
import os
import signal
import sys
import time

import numpy as np
import pytest

from tflearn_helpers import multi_worker, scripts


def write_progress(tmp_path, lines, task="worker-0", torn=False):
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (tmp_path / f"progress-fit-{task}.jsonl").write_text(text + ('{"step": 9' if torn else ""))


def test_script_is_in_the_package():
    assert scripts.path("multi_worker_train.py").name == "multi_worker_train.py"


def test_progress_steps_and_timing(tmp_path):
    lines = [{"step": s, "loss": 1.0 / s, "time": 10.0 + 0.5 * s} for s in range(1, 7)]
    write_progress(tmp_path, lines, torn=True)
    assert [p["step"] for p in multi_worker.progress(tmp_path, "fit")] == [1, 2, 3, 4, 5, 6]
    assert multi_worker.median_step_s(tmp_path, "fit") == pytest.approx(0.5)
    assert multi_worker.progress(tmp_path, "custom") == []


def test_weights_round_trip(tmp_path):
    arrays = [np.ones((2, 3), np.float32), np.zeros(3, np.float32)]
    np.savez(tmp_path / "w.npz", *arrays)
    loaded = multi_worker.worker_weights(tmp_path / "w.npz")
    assert [a.tolist() for a in loaded] == [a.tolist() for a in arrays]


def test_the_worker_refuses_an_unknown_loop():
    import subprocess

    run = subprocess.run(
        [sys.executable, scripts.path("multi_worker_train.py"), "--out", ".", "--loop", "keras"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "invalid choice: 'keras'" in run.stderr


def test_a_chief_stalled_at_the_barrier_is_not_declared_dead(tmp_path):
    """The CI caught it: worker 0, stalled ~10 s on a busy machine while waiting for its peer,
    was declared dead by its own coordination service (heartbeat timeout, 10 s by default).
    Lesson 04's worker sets 60 s; a 14 s stall (SIGSTOP) must not end the job."""
    from tflearn_helpers import cluster

    spec = cluster.local_cluster_spec(workers=2)
    args = ["--out", tmp_path, "--steps", 3, "--save-every", 3, "--collective-timeout", 30]
    with cluster.LocalCluster(spec, env={"CUDA_VISIBLE_DEVICES": "-1"}) as job:
        worker = scripts.path("multi_worker_train.py")
        job.start(worker, args, tasks=[("worker", 0)])
        cluster.processes.wait_until(
            lambda: "waiting for every worker" in job.logs("worker", 0),
            240,
            "worker 0 to create its strategy",
            depends_on=job.procs.values(),
        )
        time.sleep(2)  # inside the barrier now
        chief = job.procs[("worker", 0)].pid
        os.kill(chief, signal.SIGSTOP)
        time.sleep(14)
        os.kill(chief, signal.SIGCONT)
        job.start(worker, args, tasks=[("worker", 1)])
        codes = job.wait(timeout=120)
    assert codes == {("worker", 0): 0, ("worker", 1): 0}, job.logs("worker", 0)[-2000:]
    assert multi_worker.progress(tmp_path, "custom")[-1]["step"] == 3
