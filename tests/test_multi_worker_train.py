import os
import signal
import statistics
import sys
import time

import numpy as np
import pytest

from tflearn_helpers import scripts
from tflearn_helpers.programs import events
from tflearn_helpers.taught.lesson04 import final_weights, median_step_s


def test_script_is_in_the_package():
    assert scripts.path("multi_worker_train.py").name == "multi_worker_train.py"


def test_median_step_time_leaves_out_the_first_steps():
    steps = [{"step": s, "loss": 1.0 / s, "time": 10.0 + 0.5 * s} for s in range(1, 7)]
    steps[1]["time"] += 3.0  # the second step traced: slow, and left out by skip=2
    assert median_step_s(steps) == pytest.approx(0.5)
    assert median_step_s(steps, skip=0) == pytest.approx(0.5)


def test_median_step_time_needs_two_steps():
    with pytest.raises(statistics.StatisticsError):
        median_step_s([{"time": 1.0}, {"time": 2.0}], skip=1)


def test_final_weights_are_those_of_the_last_done_event():
    arrays = [np.ones((2, 3), np.float32), np.zeros(3, np.float32)]
    log = "\n".join(
        [
            events.line("done", step=1, weights=[[0.5]]),  # an earlier run of the worker
            "some TensorFlow noise",
            events.line("done", step=2, weights=[a.tolist() for a in arrays]),
        ]
    )
    loaded = final_weights(log)
    assert [a.dtype for a in loaded] == [np.float32, np.float32]
    assert [a.tolist() for a in loaded] == [a.tolist() for a in arrays]


def test_final_weights_of_a_worker_that_never_finished():
    with pytest.raises(IndexError):
        final_weights(events.line("step", step=1, loss=1.0, time=0.0))


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
        events.wait_for(
            lambda: job.logs("worker", 0),
            "waiting",
            timeout=240,
            depends_on=job.procs.values(),
        )
        time.sleep(2)  # inside the barrier now
        chief = job.procs[("worker", 0)].pid
        os.kill(chief, signal.SIGSTOP)
        time.sleep(14)
        os.kill(chief, signal.SIGCONT)
        job.start(worker, args, tasks=[("worker", 1)])
        codes = job.wait(timeout=120)
        log = job.logs("worker", 0)
    assert codes == {("worker", 0): 0, ("worker", 1): 0}, log[-2000:]
    assert [e["step"] for e in events.parse(log, "step")] == [1, 2, 3]
    assert events.parse(log, "done")[-1]["step"] == 3
