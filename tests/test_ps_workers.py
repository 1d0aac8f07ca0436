"""ps_workers: running TF1 parameter-server training and measuring it (lesson 08).

The training itself needs a cluster and runs in the lesson; these tests cover the
bookkeeping and the input checks.
"""

import time

import numpy as np
import pytest

from tflearn_helpers import ps_workers
from tflearn_helpers.programs import events

SPEC = {"ps": ["localhost:1"], "worker": ["localhost:2", "localhost:3"]}


def _log(index, before, after, start=0.0, dt=0.1):
    times = [start + dt * (i + 1) for i in range(len(before))]
    return ps_workers.WorkerLog(
        index, before=before, after=after, losses=[1.0] * len(before), times=times
    )


def test_staleness_counts_other_workers_updates():
    log = _log(0, before=[0, 2, 5], after=[1, 4, 6])
    assert log.staleness == [0, 1, 0]


def test_summarize_async_and_sync_logs():
    async_logs = [_log(0, [0, 2, 4, 6], [1, 3, 5, 7]), _log(1, [0, 1, 3, 5], [2, 4, 6, 8])]
    s = ps_workers.summarize(async_logs, warmup=1)
    assert s["worker_steps"] == 8 and s["updates"] == 8 and s["steps_per_update"] == 1
    assert s["mean_staleness"] == pytest.approx(
        sum(x for log in async_logs for x in log.staleness) / 8
    )
    assert s["updates_per_s"] > 0
    sync_logs = [_log(0, [0, 1, 2], [1, 2, 3]), _log(1, [0, 1, 2], [1, 2, 3])]
    s = ps_workers.summarize(sync_logs, warmup=1)
    assert s["steps_per_update"] == 2 and s["max_staleness"] == 0


def test_summarize_empty_logs():
    s = ps_workers.summarize([ps_workers.WorkerLog(1)])
    assert s["worker_steps"] == 0 and s["updates"] == 0


def test_parse_worker_log_reads_events_and_skips_noise():
    text = "\n".join(
        [
            "I0000 tensorflow says hello",
            '{"before": 9, "after": 9, "loss": 9.0, "t": 9.0}',  # JSON, but not an event
            events.line("ready", t=12.5),
            events.line("step", before=0, after=2, loss=1.5, t=13.0),
            events.line("trace", ran={"/job:ps/replica:0/task:0/device:CPU:0": ["ReadVariableOp"]}),
            events.line("step", before=2, after=3, loss=1.0, t=13.1),
            events.line("other", before=5, after=6, loss=0.5, t=13.2),  # another kind
            events.line("step", before=3, after=4, loss=1.0, t=13.3)[:-12],  # cut short by a kill
        ]
    )
    log = ps_workers.parse_worker_log(1, text)
    assert log.task_index == 1 and log.ready_at == 12.5
    assert log.before == [0, 2] and log.after == [2, 3] and log.staleness == [1, 0]
    assert log.losses == [1.5, 1.0] and log.times == [13.0, 13.1]
    assert log.trace == {"/job:ps/replica:0/task:0/device:CPU:0": ["ReadVariableOp"]}


def test_parse_worker_log_of_a_silent_worker_is_empty():
    log = ps_workers.parse_worker_log(0, "Traceback (most recent call last):\n")
    assert np.isnan(log.ready_at) and log.times == [] and log.trace == {}


@pytest.mark.parametrize("workers", [0, 3])
def test_worker_processes_reject_more_workers_than_the_cluster_has(workers):
    with pytest.raises(ValueError, match="worker"):
        ps_workers.WorkerProcesses(SPEC, "program.py", workers)


FAKE_WORKER = """
import argparse, json, os, time
p = argparse.ArgumentParser()
p.add_argument("--steps", type=int)
p.add_argument("--go-file")
args = p.parse_args()
task = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
def emit(kind, **fields):
    print("TFLEARN_EVENT", json.dumps({"kind": kind, **fields}), flush=True)
emit("ready", t=time.time())
while not os.path.exists(args.go_file):
    time.sleep(0.01)
for step in range(args.steps):
    before = 2 * step + task
    emit("step", before=before, after=before + 1, loss=1.0, t=time.time())
    time.sleep(0.01)
time.sleep(60 if task == 1 else 0)  # worker 1 hangs at the end, as a sync worker can
"""


def test_worker_processes_start_together_report_steps_and_stop(tmp_path):
    program = tmp_path / "fake_worker.py"
    program.write_text(FAKE_WORKER)
    spec = {"ps": ["localhost:1"], "worker": ["localhost:2", "localhost:3"]}
    with ps_workers.WorkerProcesses(spec, program, 2, ["--steps", 20]) as run:
        assert run.global_step() == 0  # nobody steps before go()
        run.go(timeout_s=60)
        assert run.wait_for_worker_steps(1, 5, timeout_s=60)
        assert run.wait_for_step(30, timeout_s=60)
        assert not run.wait_for_step(10**6, timeout_s=0.5)  # a bounded wait says False
        logs = run.finish(grace_s=1.0)
        assert not run.alive(0) and not run.alive(1)  # the hanging worker was stopped
    assert [len(log.times) for log in logs] == [20, 20]
    assert max(logs[1].after) == 40


def test_worker_processes_report_a_worker_that_dies_before_it_is_ready(tmp_path):
    program = tmp_path / "crash.py"
    program.write_text("raise SystemExit('no TensorFlow here')\n")
    spec = {"ps": ["localhost:1"], "worker": ["localhost:2"]}
    with (
        ps_workers.WorkerProcesses(spec, program, 1) as run,
        pytest.raises(RuntimeError, match="exited"),
    ):
        run.go(timeout_s=30)


def test_a_frozen_worker_is_alive_silent_and_stopped_by_finish(tmp_path):
    program = tmp_path / "fake_worker.py"
    program.write_text(FAKE_WORKER)
    spec = {"ps": ["localhost:1"], "worker": ["localhost:2"]}
    with ps_workers.WorkerProcesses(spec, program, 1, ["--steps", 10**6]) as run:
        run.go(timeout_s=60)
        assert run.wait_for_step(5, timeout_s=60)
        run.freeze(0)
        time.sleep(0.3)
        frozen_at = run.global_step()
        assert run.alive(0) and not run.wait_for_step(frozen_at + 1, timeout_s=0.5)
        run.finish(grace_s=0)
        assert not run.alive(0)
