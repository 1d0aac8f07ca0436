from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG, _evaluate


# -- 04.5: a worker that resumes after a kill ------------------------------------------------
def _make_manager(checkpoint, directory, task_type, task_id, cluster):
    import os

    import tensorflow as tf

    chief = task_type in (None, "chief") or (
        task_type == "worker" and task_id == 0 and "chief" not in cluster
    )
    folder = directory if chief else os.path.join(directory, f"scratch-{task_type}-{task_id}")
    return tf.train.CheckpointManager(checkpoint, folder, max_to_keep=2)


def _restore_latest(checkpoint, directory):
    import tensorflow as tf

    checkpoint.restore(tf.train.latest_checkpoint(directory))


def _log(resumed, losses):
    import json

    lines = [json.dumps({"kind": "resumed", "step": resumed})]
    lines += [json.dumps({"kind": "step", "step": s, "loss": v}) for s, v in losses.items()]
    return "\n".join("TFLEARN_EVENT " + line for line in lines)


KILLED = [(3, _log(0, {s: 10.0 - s for s in range(1, 8)}))] * 2
RESUMED = [(0, _log(6, {7: 3.0, 8: 2.0, 9: 1.0}))] * 2


def _verdict(manager=_make_manager, restore=_restore_latest, killed=KILLED, resumed=RESUMED):
    def run_job(functions, folder, *extra):  # the two runs' logs, as the workers would print
        assert functions == (manager, restore) and folder.is_dir()
        return killed if extra == ("--crash-at", 7) else resumed

    return _evaluate("04.5", (manager, restore), run_job, 3, 7)


def test_04_5_accepts_the_chiefs_folder_and_the_newest_restore():
    assert _verdict().status == RIGHT


def test_04_5_waits_while_the_functions_are_stubs():
    def make_manager(checkpoint, directory, task_type, task_id, cluster): ...

    assert _verdict(manager=make_manager).status == NOT_ATTEMPTED


def test_04_5_refuses_managers_that_share_or_lose_the_chiefs_folder():
    import os

    import tensorflow as tf

    def everyone_in_one(checkpoint, directory, task_type, task_id, cluster):
        return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)

    def nobody_chief(checkpoint, directory, task_type, task_id, cluster):
        return tf.train.CheckpointManager(checkpoint, os.path.join(directory, str(task_id)), 2)

    def not_a_manager(checkpoint, directory, task_type, task_id, cluster):
        return directory

    shared, lost, wrong_type = (
        _verdict(manager=f) for f in (everyone_in_one, nobody_chief, not_a_manager)
    )
    assert "same files" in shared.message and shared.status == WRONG
    assert "worker 0" in lost.message and lost.status == WRONG
    assert "CheckpointManager" in wrong_type.message
    for verdict in (shared, lost):
        assert "scratch" not in verdict.message  # the folder's name is the learner's choice


def test_04_5_refuses_a_chief_read_from_the_index_alone():
    import os

    import tensorflow as tf

    def any_task_zero(checkpoint, directory, task_type, task_id, cluster):
        folder = directory if task_id == 0 else os.path.join(directory, f"scratch-{task_id}")
        return tf.train.CheckpointManager(checkpoint, folder, max_to_keep=2)

    def worker_zero_always(checkpoint, directory, task_type, task_id, cluster):
        chief = task_type == "chief" or (task_type == "worker" and task_id == 0)
        folder = directory if chief else os.path.join(directory, f"scratch-{task_id}")
        return tf.train.CheckpointManager(checkpoint, folder, max_to_keep=2)

    def four_arguments(checkpoint, directory, task_type, task_id):
        return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)

    def chief_job_first(checkpoint, directory, task_type, task_id, cluster):
        if "chief" in cluster:
            chief = task_type == "chief"
        else:
            chief = task_id == 0 and task_type in (None, "worker")
        folder = directory if chief else os.path.join(directory, f"{task_type}{task_id}")
        return tf.train.CheckpointManager(checkpoint, folder, max_to_keep=2)

    assert _verdict(manager=chief_job_first).status == RIGHT
    for manager in (any_task_zero, worker_zero_always):
        verdict = _verdict(manager=manager)
        assert verdict.status == WRONG and "worker 0 is not the chief" in verdict.message
    assert "five arguments" in _verdict(manager=four_arguments).message


def test_04_5_refuses_restores_that_miss_the_newest_or_fail_on_a_fresh_start():
    import os

    def nothing(checkpoint, directory):
        return None

    def oldest(checkpoint, directory):
        import tensorflow as tf

        state = tf.train.get_checkpoint_state(directory)
        if state:  # a fresh start is handled; the rest is not
            checkpoint.restore(state.all_model_checkpoint_paths[0])

    def last_name(checkpoint, directory):  # ckpt-9 sorts after ckpt-12
        names = sorted(n[: -len(".index")] for n in os.listdir(directory) if n.endswith(".index"))
        if names:
            checkpoint.restore(os.path.join(directory, names[-1]))

    def raises_when_empty(checkpoint, directory):
        import tensorflow as tf

        checkpoint.restore(tf.train.latest_checkpoint(directory) or directory + "/ckpt-0")

    nothing_restored = _verdict(restore=lambda c, d: nothing(c, d))
    assert "restored nothing" in nothing_restored.message
    assert "older checkpoint" in _verdict(restore=oldest).message
    assert "older checkpoint" in _verdict(restore=last_name).message
    assert "fresh start" in _verdict(restore=raises_when_empty).message


def test_04_5_reads_the_runs_for_where_the_restart_resumed():
    from_zero = [(0, _log(0, {s: 10.0 - s for s in range(1, 10)}))] * 2
    drifted = [(0, _log(6, {7: 3.5, 8: 2.0, 9: 1.0}))] * 2
    not_killed = [(0, KILLED[0][1])] * 2
    assert "step 0" in _verdict(resumed=from_zero).message
    assert "did not repeat" in _verdict(resumed=drifted).message
    assert "exit code 0" in _verdict(killed=not_killed).message
    assert "(exit code, output)" in _verdict(resumed=RESUMED[:1]).message


def test_04_5_counts_the_checkpoints_the_chiefs_manager_keeps():
    import os

    import tensorflow as tf

    def five_kept(checkpoint, directory, task_type, task_id, cluster):
        folder = directory if task_id == 0 else os.path.join(directory, f"scratch-{task_id}")
        return tf.train.CheckpointManager(checkpoint, folder, max_to_keep=5)

    said = _verdict(manager=five_kept)
    assert said.status == WRONG and "kept 3 of 3" in said.message


def _tf_config_of(cluster):
    def tf_config(index):
        return {"cluster": cluster, "task": {"type": "worker", "index": index}}

    return tf_config


def test_04_4_refuses_a_launch_that_would_wait_for_a_missing_task_before_it_starts(capsys):
    from tflearn_helpers import checks

    two = {"worker": ["localhost:2001", "localhost:2002"]}
    three = {"worker": [*two["worker"], "localhost:2003"]}
    assert checks.ready("04.4", _tf_config_of(two))
    assert not checks.ready("04.4", _tf_config_of(three))  # worker 2 would never start
    assert "3 tasks" in capsys.readouterr().out
    said = _evaluate("04.4", _tf_config_of(three), None)  # the cell launched nothing
    assert said.status == WRONG and "3 tasks" in said.message
    chief = {"cluster": two, "task": {"type": "chief", "index": 0}}
    assert not checks.ready("04.4", lambda index: chief)
    assert "not a job of the cluster" in _evaluate("04.4", lambda index: chief, None).message
    assert checks.ready("04.4", _tf_config_of(two))  # fixed: the cell runs again


def test_04_4_names_the_barrier_when_a_worker_was_stopped_waiting_for_its_peer():
    stopped = 'TFLEARN_EVENT {"kind": "stopped", "missing": "worker 1", "task": "worker 0"}'
    two = {"worker": ["localhost:2001", "localhost:2002"]}
    said = _evaluate("04.4", _tf_config_of(two), [(-15, stopped), (0, "")])
    assert said.status == WRONG and "barrier" in said.message and "worker 1" in said.message


# -- 04.6: a preemption notice: save, exit, resume --------------------------------------------
def _steps_log(steps, trained=None, loss=lambda s: 1.0 / s, tail=""):
    from tflearn_helpers.programs import events

    lines = [
        events.line("step", step=s, trained=s if trained is None else trained(s), loss=loss(s))
        for s in steps
    ]
    return "\n".join([*lines, tail]) + "\n"


def _notice_runs(
    saved=6, codes=(42, 42), restart=None, restart_codes=(0, 0), on_disk=None, **changes
):
    from tflearn_helpers.checks import lesson04

    first = [_steps_log(range(1, saved + 1))] * 2
    second = [restart or _steps_log(range(saved + 1, lesson04.NOTICE_STEPS + 1))] * 2
    runs = {
        "stage": "noticed",
        "first": {"codes": list(codes), "logs": first, "running": None},
        "saved": on_disk or {"chief": saved, "anywhere": True},
        "second": {"codes": list(restart_codes), "logs": second, "running": None},
    }
    runs.update(changes)
    return runs


def test_04_6_a_save_an_exit_and_a_restart_that_resumes_after_it_pass():
    from tflearn_helpers.checks import lesson04

    assert lesson04._notice_problem(_notice_runs()) is None


def test_04_6_tells_apart_the_ways_a_notice_goes_wrong():
    from tflearn_helpers.checks import lesson04

    end = lesson04.NOTICE_STEPS
    trained_on = {"codes": [0, 0], "logs": [_steps_log(range(1, end + 1))] * 2, "running": None}
    nothing = {"chief": None, "anywhere": False}
    said = {
        "ignored": lesson04._notice_problem(_notice_runs(first=trained_on, on_disk=nothing)),
        "no exit": lesson04._notice_problem(_notice_runs(first=trained_on)),
        "code 0": lesson04._notice_problem(_notice_runs(codes=(0, 0))),
        "no save": lesson04._notice_problem(_notice_runs(codes=(1, 42), on_disk=nothing)),
        "elsewhere": lesson04._notice_problem(
            _notice_runs(on_disk={"chief": None, "anywhere": True})
        ),
        "other code": lesson04._notice_problem(_notice_runs(codes=(42, 1))),
    }
    assert "nothing was saved" in said["ignored"] and "to the end" in said["ignored"]
    assert "went on training" in said["no exit"]
    assert "code 0" in said["code 0"] and "finished" in said["code 0"]
    assert "no checkpoint was saved" in said["no save"] and "[1, 42]" in said["no save"]
    assert "chief's folder" in said["elsewhere"]
    assert "worker 1 exited with code 1" in said["other code"]
    for hint in said.values():  # the answer's calls are never named
        assert "handler.run" not in hint and "sys.exit" not in hint


def test_04_6_reads_the_restart_for_steps_lost_or_done_twice():
    from tflearn_helpers.checks import lesson04

    end = lesson04.NOTICE_STEPS
    from_one = _steps_log(range(1, end + 1), trained=lambda s: s + 6)
    lost = _steps_log(range(8, end + 1))
    again = _steps_log(range(6, end + 1))
    assert "from step 1 again" in lesson04._notice_problem(_notice_runs(restart=from_one))
    assert "none may be lost" in lesson04._notice_problem(_notice_runs(restart=lost))
    assert "8-40" in lesson04._notice_problem(_notice_runs(restart=lost))
    assert "6-40" in lesson04._notice_problem(_notice_runs(restart=again))
    shifted = _steps_log(range(7, end + 1), trained=lambda s: s + 1)
    assert "disagree" in lesson04._notice_problem(_notice_runs(restart=shifted))
    failed = _notice_runs(restart_codes=(0, 1))
    assert "worker 1 ended with exit code 1" in lesson04._notice_problem(failed)


def test_04_6_a_worker_that_failed_early_or_a_job_that_hung_is_named():
    from tflearn_helpers.checks import lesson04

    trace = (
        'Traceback (most recent call last):\n  File "/x/preempt_train.py", line 21, in train\n'
        "ValueError: no such thing\n"
    )
    early = {"codes": [1, -15], "logs": [trace, ""], "running": None}
    said = lesson04._notice_problem(_notice_runs(stage="before", first=early))
    header = lesson04._NOTICE_HEADER.count("\n")
    assert f"line {21 - header} of your function" in said and "ValueError" in said
    assert "worker 0 stopped before the notice" in said
    returned = {"codes": [0, 0], "logs": [_steps_log([1])] * 2, "running": None}
    said = lesson04._notice_problem(_notice_runs(stage="before", first=returned))
    assert "after 1 of 40 steps" in said
    hung = {"codes": None, "logs": ["", ""], "running": [0]}
    said = lesson04._notice_problem(_notice_runs(first=hung))
    assert "still ran" in said and "[0]" in said
    hung_restart = _notice_runs()
    hung_restart["second"] = {"codes": None, "logs": ["", ""], "running": [0, 1]}
    assert "restarted job still ran" in lesson04._notice_problem(hung_restart)


def test_04_6_waits_for_a_stub_and_refuses_what_it_cannot_run():
    def train(strategy, checkpoint, directory, train_step, steps, exit_code): ...

    assert _evaluate("04.6", train, "worker.py").status == NOT_ATTEMPTED
    said = _evaluate("04.6", len, "worker.py")
    assert said.status == WRONG and "def" in said.message


# -- 04.7: a stalled peer ends in an error ----------------------------------------------------
def _stall_log(steps=4, replicas=2, error=None):
    from tflearn_helpers.programs import events

    lines = [events.line("ready", replicas=replicas)]
    lines += [events.line("step", step=s, loss=1.0) for s in range(1, steps + 1)]
    if error:
        lines.append(events.line("error", error=error[0], lines=[error[1]]))
    return "\n".join(lines) + "\n"


TIMED_OUT = ("DeadlineExceededError", "Collective has timed out during execution.")


def _stall(stage="stalled", code=1, seconds=5.2, log=None, steps_before=3, error_seconds=4.9):
    log = _stall_log(error=TIMED_OUT) if log is None else log
    return {"stage": stage, "code": code, "seconds": seconds, "steps_before": steps_before,
            "error_seconds": error_seconds, "logs": [log, ""]}  # fmt: skip


def test_04_7_an_error_from_the_collective_timeout_after_the_stall_passes():
    from tflearn_helpers.checks import lesson04

    assert lesson04._stall_problem(_stall()) is None


def test_04_7_tells_a_hang_a_lone_worker_and_an_early_failure_apart():
    from tflearn_helpers.checks import lesson04

    hung = lesson04._stall_problem(_stall(code=None, seconds=None, log=_stall_log()))
    assert "still waited" in hung and "25 s" in hung and "timeout_seconds" not in hung
    alone = lesson04._stall_problem(_stall(code=None, seconds=None, log=_stall_log(steps=40)))
    assert "went on training alone" in alone
    one = lesson04._stall_problem(_stall(code=None, log=_stall_log(replicas=1)))
    assert "1 replica(s)" in one
    early = lesson04._stall_problem(_stall(stage="before", log=_stall_log(2, error=TIMED_OUT)))
    assert "before any peer stalled" in early and "5 s" in early
    crashed = _stall_log(0, error=("ValueError", "cluster_resolver must be ..."))
    said = lesson04._stall_problem(_stall(stage="before", log=crashed))
    assert "before its peer stalled" in said and "ValueError" in said
    other = _stall_log(error=("UnavailableError", "tasks are unhealthy"))
    said = lesson04._stall_problem(_stall(log=other, seconds=20.0))
    assert "not the collective's timeout" in said and "UnavailableError" in said


def test_04_7_a_timeout_that_ends_the_wait_far_sooner_than_asked_is_wrong():
    """Seconds read as milliseconds (5 ms): every healthy collective may end within 5 ms, and
    the stalled one errs at once; in a make test run that answer passed the other branches."""
    from tflearn_helpers.checks import lesson04

    said = lesson04._stall_problem(_stall(seconds=1.4, error_seconds=0.3))
    assert "sooner than the 5 s" in said and "unit" in said and "1000" not in said
    assert lesson04._stall_problem(_stall(seconds=4.6, error_seconds=4.2)) is None  # began early


def test_04_7_waits_for_a_stub():
    def make_strategy(timeout): ...

    assert _evaluate("04.7", make_strategy, "worker.py").status == NOT_ATTEMPTED


# -- 04.8: Keras fit resumes from its backup --------------------------------------------------
def _fit_seen(start_step=None, made=("/b",), epochs=(1, 2), iterations=None, left=(), **changes):
    """What the check's callback saw in the two calls: the second began from the weights of
    the first call's ``start_step`` (None: the fresh model's)."""
    import numpy as np

    from tflearn_helpers.checks import lesson04

    weights = [np.full(5, float(s)) for s in range(1, lesson04.BACKUP_STOP + 1)]
    first = {"began": True, "raised": "interrupted", "weights": weights, "made": list(made)}
    initial = np.full(5, -1.0)
    start = initial if start_step is None else weights[start_step - 1]
    second = {"began": True, "raised": None, "initial": initial, "start": start}
    second.update(epochs=list(epochs), made=list(made), left=list(left), folder_at_start=["f"])
    second["iterations"] = start_step if iterations is None else iterations
    second.update(changes)
    return first, second


def test_04_8_a_resume_from_the_newest_backup_passes():
    from tflearn_helpers.checks import lesson04

    first, second = _fit_seen(start_step=lesson04.BACKUP_NEWEST)
    assert lesson04._run_problem(first, "first") is None
    assert lesson04._run_problem(second, "second") is None
    assert lesson04._resume_problem(first, second, ["b/latest.weights.h5"], "/b") is None


def test_04_8_tells_apart_why_a_restart_started_over():
    from tflearn_helpers.checks import lesson04

    def said(left, **seen):
        return lesson04._resume_problem(*_fit_seen(**seen), left, "/b")

    assert "needs a callback" in said([], made=())
    assert "saving is half" in said(["b/ckpt.weights.h5"], made=())
    assert "different folders" in said(["b/tmp/x"], made=("/b/tmp",))
    assert "among the callbacks fit runs" in said([])
    assert "gone" in said(["b/x"], folder_at_start=[])
    for hint in (said([], made=()), said([])):  # the answer's call is never named
        assert "BackupAndRestore(" not in hint and "save_freq" not in hint


def test_04_8_reads_which_backup_the_restart_resumed_from_and_what_it_left():
    from tflearn_helpers.checks import lesson04

    newest = lesson04.BACKUP_NEWEST

    def said(**seen):
        return lesson04._resume_problem(*_fit_seen(**seen), ["b/x"], "/b")

    assert "end of epoch 1" in said(start_step=lesson04.BACKUP_BATCHES)
    assert f"from step {lesson04.BACKUP_STOP}" in said(start_step=lesson04.BACKUP_STOP)
    assert "optimizer" in said(start_step=newest, iterations=0)
    assert "skips the epochs done" in said(start_step=newest, epochs=(0, 1, 2))
    assert "still in `backup_dir`" in said(start_step=newest, left=["b/latest.weights.h5"])


def test_04_8_names_callbacks_not_run_and_an_interruption_swallowed():
    from tflearn_helpers.checks import lesson04

    first, _ = _fit_seen()
    assert "callbacks your function is given" in lesson04._run_problem(
        {**first, "began": False, "raised": None}, "first"
    )
    assert "caught the interruption" in lesson04._run_problem({**first, "raised": None}, "first")
    said = lesson04._run_problem({**first, "raised": "ValueError: no"}, "first")
    assert "raised ValueError" in said


def test_04_8_waits_for_a_stub():
    def train(model, dataset, epochs, backup_dir, save_every, callbacks): ...

    assert _evaluate("04.8", train).status == NOT_ATTEMPTED


def test_04_6_names_a_worker_that_saved_into_the_chiefs_folder():
    from tflearn_helpers.checks import lesson04
    from tflearn_helpers.programs import events

    def saved_into(folder):
        return _steps_log(range(1, 7), tail=events.line("saving", folder=folder))

    logs = [saved_into("/job/checkpoints"), saved_into("/job/checkpoints/worker-1")]
    first = {"codes": [42, 42], "logs": logs, "running": None}
    runs = _notice_runs(first=first, directory="/job/checkpoints")
    assert lesson04._notice_problem(runs) is None
    first["logs"] = [logs[0], saved_into("/job/checkpoints/")]
    said = lesson04._notice_problem(runs)
    assert "worker 1 saved" in said and "chief's folder" in said
    first["codes"] = [1, 42]  # the two saves into one folder failed on worker 0: named the same
    assert lesson04._notice_problem(runs) == said


# -- 04.4: the environment the workers were started with --------------------------------------
def test_04_4_reads_whether_the_started_workers_had_their_gpus_hidden(monkeypatch):
    import json
    from types import SimpleNamespace

    from tflearn_helpers.checks import lesson04
    from tflearn_helpers.programs import processes

    two = {"worker": ["localhost:2001", "localhost:2002"]}

    def child(index, **env):
        config = json.dumps({"cluster": two, "task": {"type": "worker", "index": index}})
        return SimpleNamespace(environment={"TF_CONFIG": config, **env}, output=lambda: "")

    outcomes = [(0, ""), (0, "")]
    for hidden, verdict in (("-1", None), ("", None), ("0", "worker 1")):
        started = [child(0, CUDA_VISIBLE_DEVICES="-1"), child(1, CUDA_VISIBLE_DEVICES=hidden)]
        monkeypatch.setattr(processes, "recently_started", lambda s=started: s)
        said = lesson04._gpus_visible_problem(two, outcomes)
        assert (said is None) if verdict is None else (verdict in said and "GPUs" in said)
    monkeypatch.setattr(processes, "recently_started", lambda: [child(0), child(1)])
    assert "worker 0 ran with this machine's GPUs" in lesson04._gpus_visible_problem(two, outcomes)
    monkeypatch.setattr(processes, "recently_started", lambda: [])  # started another way
    assert lesson04._gpus_visible_problem(two, outcomes) is None
