from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG, _evaluate


# -- 04.5: a worker that resumes after a kill ------------------------------------------------
def _make_manager(checkpoint, directory, task_type, task_id):
    import os

    import tensorflow as tf

    chief = task_type in (None, "chief") or (task_type == "worker" and task_id == 0)
    folder = directory if chief else os.path.join(directory, f"scratch-{task_id}")
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
    def make_manager(checkpoint, directory, task_type, task_id): ...

    assert _verdict(manager=make_manager).status == NOT_ATTEMPTED


def test_04_5_refuses_managers_that_share_or_lose_the_chiefs_folder():
    import os

    import tensorflow as tf

    def everyone_in_one(checkpoint, directory, task_type, task_id):
        return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)

    def nobody_chief(checkpoint, directory, task_type, task_id):
        return tf.train.CheckpointManager(checkpoint, os.path.join(directory, str(task_id)), 2)

    def not_a_manager(checkpoint, directory, task_type, task_id):
        return directory

    shared, lost, wrong_type = (
        _verdict(manager=f) for f in (everyone_in_one, nobody_chief, not_a_manager)
    )
    assert "same files" in shared.message and shared.status == WRONG
    assert "worker 0" in lost.message and lost.status == WRONG
    assert "CheckpointManager" in wrong_type.message
    for verdict in (shared, lost):
        assert "scratch" not in verdict.message  # the folder's name is the learner's choice


def test_04_5_refuses_restores_that_miss_the_newest_or_fail_on_a_fresh_start():
    import os

    def nothing(checkpoint, directory):
        return None

    def oldest(checkpoint, directory):
        import tensorflow as tf

        if tf.train.latest_checkpoint(directory):  # a fresh start is handled; the rest is not
            checkpoint.restore(os.path.join(directory, "ckpt-1"))

    def raises_when_empty(checkpoint, directory):
        import tensorflow as tf

        checkpoint.restore(tf.train.latest_checkpoint(directory) or directory + "/ckpt-0")

    nothing_restored = _verdict(restore=lambda c, d: nothing(c, d))
    assert "restored nothing" in nothing_restored.message
    assert "older checkpoint" in _verdict(restore=oldest).message
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

    def five_kept(checkpoint, directory, task_type, task_id):
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
