"""Checks for lesson 04's exercises: a multi-worker job's TF_CONFIGs, and a worker that resumes
after a kill (the other strategies of one machine are lesson 01's, checks 01.7-01.9)."""

from __future__ import annotations

import os

from . import before_running, exercise, watching

__all__ = []


@exercise("04.4")
def two_workers_trained_as_one_job(learner_tf_config, outcomes):
    """learner_tf_config(index) -> a TF_CONFIG; outcomes: [(exit code, output)] of both
    workers, whose outputs hold their events (programs.events lines)."""
    from ..programs import events
    from ..topics import mirrored, multi_worker

    problem = configs_before_launch(learner_tf_config)
    if problem:
        return problem
    if not isinstance(outcomes, list | tuple) or len(outcomes) != 2:
        return "outcomes should hold (exit code, output) for each of the two workers"
    for index, (code, output) in enumerate(outcomes):
        stopped = events.parse(output or "", "stopped")
        if stopped:
            return (
                f"worker {index} waited at the start-up barrier for {stopped[-1]['missing']}, "
                "which was not running, and was stopped: creating MultiWorkerMirroredStrategy "
                "waits until every worker of the cluster has started. Are all the workers "
                "started before you wait for any of them?"
            )
        if code != 0:
            last = (output or "").strip().splitlines()[-1:] or ["(no output)"]
            return f"worker {index} ended with exit code {code}; its last line: {last[0][:200]}"
    runs = [events.parse(output or "", "step") for _, output in outcomes]
    if not all(runs):
        return "a worker reported no training steps: did each process get its own TF_CONFIG?"
    if [e["loss"] for e in runs[0]] != [e["loss"] for e in runs[1]]:
        return "the two workers' losses differ: they did not train as one synchronous job"
    try:
        gap = mirrored.max_abs_difference(
            *(multi_worker.final_weights(output) for _, output in outcomes)
        )
    except (IndexError, KeyError, TypeError, ValueError) as err:
        return f"could not compare the two workers' final weights: {err!r}"
    if gap != 0.0:
        return f"the workers' final weights differ by up to {gap:.2e}: they should be identical"
    return None


@before_running("04.4")
def configs_before_launch(learner_tf_config):
    """Both workers' TF_CONFIGs, tested before any process starts: valid, written by the
    learner, the same cluster, and one task each, every task of that cluster named (a task
    that no process runs would leave the others waiting at the start-up barrier)."""
    from ..cluster import tf_config

    configs = []
    for index in (0, 1):
        with watching(tf_config.build) as called:
            written = learner_tf_config(index)
        if called:
            return "write the TF_CONFIG yourself: the course's own builder is not your answer"
        try:
            configs.append(tf_config.validate(written))
        except tf_config.TFConfigError as err:
            return f"tf_config({index}) is not a valid TF_CONFIG: {err}"
    if configs[0]["cluster"] != configs[1]["cluster"]:
        return "the two workers were given different clusters: every task must see the same one"
    named = [(c["task"]["type"], c["task"].get("index", 0)) for c in configs]
    if named != [("worker", 0), ("worker", 1)]:
        return "each worker's TF_CONFIG must name its own task, worker `index` of the cluster"
    tasks = sum(len(addresses) for addresses in configs[0]["cluster"].values())
    if tasks != 2:
        return (
            f"your cluster has {tasks} tasks but two processes will run: every task of the "
            "cluster needs its process, or the others wait for it at start-up"
        )
    return None


@exercise("04.5")
def resumes_after_a_kill(functions, run_job, save_every, crash_at):
    """functions: the learner's (make_manager, restore_latest), tested on their own first;
    then run_job(functions, folder, *extra) -> [(exit code, output)] of both workers runs the
    job twice in a fresh folder: killed after step ``crash_at``, then restarted."""
    import tempfile
    from pathlib import Path

    make_manager, restore_latest = functions
    problem = _manager_problem(make_manager) or _restore_problem(restore_latest)
    if problem:
        return problem
    with tempfile.TemporaryDirectory(prefix="tflearn-ex045-job-") as folder:
        killed = run_job(functions, Path(folder), "--crash-at", crash_at)
        resumed = run_job(functions, Path(folder))
    for name, outcomes, killed_run in (("killed", killed, True), ("restarted", resumed, False)):
        if not isinstance(outcomes, list | tuple) or len(outcomes) != 2:
            return f"the {name} run should give (exit code, output) for each of the two workers"
        for index, (got, output) in enumerate(outcomes):
            # killed: exit 3, or an error if its partner died during the last collective
            if (got == 0) if killed_run else (got != 0):
                last = (output or "").strip().splitlines()[-1:] or ["(no output)"]
                return (
                    f"in the {name} run worker {index} ended with exit code {got}: {last[0][:200]}"
                )
    return _runs_problem(
        [_steps(o) for _, o in killed], [_steps(o) for _, o in resumed], save_every
    )


def _manager_problem(make_manager):
    import tempfile

    import tensorflow as tf

    checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
    folders = {}
    with tempfile.TemporaryDirectory(prefix="tflearn-ex045-") as directory:
        for task in (("worker", 0), ("worker", 1), ("worker", 2)):
            manager = make_manager(checkpoint, directory, *task)
            if not isinstance(manager, tf.train.CheckpointManager):
                return "make_manager should return a tf.train.CheckpointManager"
            folders[task] = os.path.normpath(manager.directory)
        kept = _kept_of_three(make_manager(checkpoint, directory, "worker", 0))
    if kept != 2:
        return f"the chief's manager kept {kept} of 3 checkpoints saved in a row, not 2"
    if folders[("worker", 0)] != os.path.normpath(directory):
        return (
            "in a cluster without a chief, worker 0 is the chief: its checkpoints are the real ones"
        )
    others = [folders[("worker", 1)], folders[("worker", 2)]]
    if os.path.normpath(directory) in others or others[0] == others[1]:
        return (
            "two workers would write the same files at once: give every other worker its own folder"
        )
    return None


def _kept_of_three(manager) -> int:
    """How many of three checkpoints saved in a row ``manager`` keeps."""
    for _ in range(3):
        manager.save()
    return len(manager.checkpoints)


def _restore_problem(restore_latest):
    import tempfile

    import tensorflow as tf

    value = tf.Variable(0.0)
    checkpoint = tf.train.Checkpoint(v=value)
    with (
        tempfile.TemporaryDirectory(prefix="tflearn-ex045-empty-") as empty,
        tempfile.TemporaryDirectory(prefix="tflearn-ex045-") as directory,
    ):
        try:
            restore_latest(checkpoint, empty)
        except Exception as err:  # noqa: BLE001 - any failure on a fresh start is the learner's
            said = f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0][:160]}"
            return f"on a fresh start there is no checkpoint yet, and restore_latest raised {said}"
        manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=3)
        for saved in (3.0, 6.0):
            value.assign(saved)
            manager.save()
        value.assign(-1.0)
        restore_latest(checkpoint, directory)
    if float(value) == -1.0:
        return "restore_latest restored nothing from the chief's folder"
    if float(value) != 6.0:
        return "restore_latest restored an older checkpoint: a restart resumes from the newest"
    return None


def _steps(output: str) -> dict:
    """One worker's events: the step it resumed from, and each step's loss."""
    from ..programs import events

    found = {"resumed": None, "loss": {}}
    for event in events.parse(output or ""):
        if event.get("kind") == "resumed":
            found["resumed"] = event["step"]
        elif event.get("kind") == "step":
            found["loss"][event["step"]] = event["loss"]
    return found


def _runs_problem(killed, resumed, save_every):
    if not all(w["loss"] for w in killed + resumed):
        return "a worker reported no training steps: read its output above"
    crashed_at = max(max(w["loss"]) for w in killed)
    saved = crashed_at // save_every * save_every  # the newest checkpoint before the kill
    starts = {w["resumed"] for w in resumed}
    if starts == {0}:
        return "the restarted workers began again at step 0: they restored no checkpoint"
    if starts != {saved}:
        return f"the restarted workers resumed at step(s) {sorted(starts)}, not at the newest save"
    again = saved + 1
    first = next((w["loss"][again] for w in killed if again in w["loss"]), None)
    second = resumed[0]["loss"].get(again)
    if first is None or second is None or abs(first - second) > 1e-6 * max(1.0, abs(first)):
        return f"step {again} after the restart did not repeat the killed run's step {again}"
    if any(w["loss"] != resumed[0]["loss"] for w in resumed):
        return "the restarted workers' losses differ: they did not resume as one job"
    return None
