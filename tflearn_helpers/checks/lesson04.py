"""Checks for lesson 04's exercises: a multi-worker job's TF_CONFIGs, a worker that resumes
after a kill, a job that answers a preemption notice (save, exit, resume), a stalled peer that
ends in an error, and Keras ``fit`` that resumes from its ``BackupAndRestore`` backup (the other
strategies of one machine are lesson 01's, checks 01.7-01.9)."""

from __future__ import annotations

import os
from contextlib import contextmanager

from . import before_running, exercise, watching

__all__ = []


@exercise("04.4")
def two_workers_trained_as_one_job(learner_tf_config, outcomes):
    """learner_tf_config(index) -> a TF_CONFIG; outcomes: [(exit code, output)] of both
    workers, whose outputs hold their events (programs.events lines)."""
    from ..programs import events
    from ..taught.lesson04 import final_weights
    from ..topics import mirrored

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
        gap = mirrored.max_abs_difference(*(final_weights(output) for _, output in outcomes))
    except (IndexError, KeyError, TypeError, ValueError) as err:
        return f"could not compare the two workers' final weights: {err!r}"
    if gap != 0.0:
        return f"the workers' final weights differ by up to {gap:.2e}: they should be identical"
    return _gpus_visible_problem(learner_tf_config(0)["cluster"], outcomes)


def _gpus_visible_problem(cluster, outcomes):
    """A hint if a worker process ran with this machine's GPUs visible: read from the
    environment each was started with (the processes this launch started, found by the
    cluster in their TF_CONFIG; a launch made another way is not judged on this)."""
    import json

    from ..programs import processes

    cluster = json.loads(json.dumps(cluster))
    started: dict[int, list] = {0: [], 1: []}
    for child in processes.recently_started():
        try:
            config = json.loads(child.environment.get("TF_CONFIG") or "")
            task = config["task"]
            if config["cluster"] == cluster and task["type"] == "worker":
                started[int(task.get("index", 0))].append(child)
        except (ValueError, TypeError, KeyError, AttributeError):
            continue
    for index, children in started.items():
        if not children or index >= len(outcomes):
            continue
        ran = [c for c in children if c.output() == outcomes[index][1]] or children
        visible = ran[-1].environment.get("CUDA_VISIBLE_DEVICES")
        if visible is None or visible.strip() not in ("-1", ""):  # either hides every GPU
            return (
                f"worker {index} ran with this machine's GPUs visible to it (its environment "
                "did not hide them): on a GPU machine the local workers would compete for one "
                "GPU's memory. What does the lesson add to every local worker's environment?"
            )
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


@exercise("04.5", pass_answers=True)  # its stubs are `...`: `pass` is an answer
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


# two clusters on which "the chief" parts ways with "task 0": without a chief task, worker 0
# is the chief; beside a chief task, worker 0 is a worker like any other
_WORKERS_ONLY = {"worker": ["localhost:2001", "localhost:2002", "localhost:2003"]}
_WITH_CHIEF = {"chief": ["localhost:2000"], "worker": ["localhost:2001", "localhost:2002"]}


def _manager_problem(make_manager):
    import inspect
    import tempfile

    import tensorflow as tf

    try:
        inspect.signature(make_manager).bind(None, None, None, None, None)
    except (TypeError, ValueError):
        return (
            "make_manager takes five arguments: (checkpoint, directory, task_type, task_id, "
            "cluster)"
        )
    checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
    folders = {}
    with tempfile.TemporaryDirectory(prefix="tflearn-ex045-") as directory:
        for cluster in (_WORKERS_ONLY, _WITH_CHIEF):
            for job, addresses in cluster.items():
                for index in range(len(addresses)):
                    manager = make_manager(checkpoint, directory, job, index, dict(cluster))
                    if not isinstance(manager, tf.train.CheckpointManager):
                        return "make_manager should return a tf.train.CheckpointManager"
                    key = ("chief" in cluster, job, index)
                    folders[key] = os.path.normpath(manager.directory)
        kept = _kept_of_three(make_manager(checkpoint, directory, "worker", 0, _WORKERS_ONLY))
        return _folders_problem(folders, os.path.normpath(directory), kept)


def _folders_problem(folders: dict, directory: str, kept: int):
    """``folders``: (the cluster has a chief task, job, index) -> the manager's folder."""
    if kept != 2:
        return f"the chief's manager kept {kept} of 3 checkpoints saved in a row, not 2"
    if folders[(False, "worker", 0)] != directory:
        return (
            "in a cluster without a chief, worker 0 is the chief: its checkpoints are the real ones"
        )
    chiefs = {(False, "worker", 0), (True, "chief", 0)}
    for has_chief in (False, True):
        if has_chief and folders[(True, "chief", 0)] != directory:
            return (
                "in a cluster with a 'chief' task, that task is the chief: its checkpoints are "
                "the real ones"
            )
        if has_chief and folders[(True, "worker", 0)] == directory:
            return (
                "in a cluster with a 'chief' task, worker 0 is not the chief: your chief and "
                "worker 0 would both write the chief's files, at once"
            )
        others = [f for key, f in folders.items() if key[0] == has_chief and key not in chiefs]
        if directory in others or len(set(others)) < len(others):
            return (
                "two workers would write the same files at once: give every other worker its "
                "own folder"
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
        for number, saved in ((9, 3.0), (12, 6.0)):  # the newest is not the last name sorted
            value.assign(saved)
            manager.save(checkpoint_number=number)
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


# -- 04.6: a preemption notice: save, exit, resume -------------------------------------------
NOTICE_STEPS = 40  # the job's steps: the notice comes after NOTICE_AFTER, far from the end
NOTICE_AFTER = 3  # worker 0 has reported this many steps when worker 1 gets the notice
NOTICE_EXIT = 42  # the exit code after a preemption save: 'restart me'
NOTICE_DELAY = 0.1  # s of sleep per step: the handler polls its watcher about once a second
NOTICE_START_TIMEOUT = 180  # s for both workers to start and train NOTICE_AFTER steps
NOTICE_END_TIMEOUT = 60  # s for the job to end after the notice, and after the restart
_NOTICE_HEADER = (
    '"""Exercise 04.6: your function."""\nimport os\nimport signal\nimport sys\n'
    "import threading\n\nimport tensorflow as tf\n\n\n"
)
# below the learner's function: every CheckpointManager save reports the folder it writes,
# before it writes (which worker's checkpoint files went where: two workers writing one folder
# is the mistake, and their save may then fail, or not)
_SAVES_REPORTED = """


def _tflearn_reported(save):  # the check's own: reports each save of this worker
    import json

    def reported(self, *args, **kwargs):
        folder = os.path.abspath(str(self.directory))
        print("TFLEARN_EVENT " + json.dumps({"kind": "saving", "folder": folder}), flush=True)
        return save(self, *args, **kwargs)

    return reported


tf.train.CheckpointManager.save = _tflearn_reported(tf.train.CheckpointManager.save)
"""


@exercise("04.6")
def saves_exits_and_resumes_on_a_notice(train, program):
    """train(strategy, checkpoint, directory, train_step, steps, exit_code): the learner's
    loop; program: the exercise's worker program, which imports it. The job runs as lesson 04
    runs its jobs (``LocalCluster``); worker 1 gets a real SIGTERM after a few steps; the job
    must save and exit, and a restart must train every remaining step once."""
    return _run_learner_job(
        train, ("train", "the loop"), program, "046", _notice_runs, _notice_problem
    )


def _notice_runs(folder, program, source) -> dict:
    """Run the job, send worker 1 a SIGTERM, wait for the job to end, then restart it; what
    each run left: exit codes, each worker's output of that run, the checkpoints on disk."""
    import shutil
    import signal

    from ..cluster import local

    shutil.copy(program, folder / "preempt_worker.py")
    (folder / "preempt_train.py").write_text(_NOTICE_HEADER + source + _SAVES_REPORTED)
    directory = folder / "checkpoints"
    args = ["--dir", directory, "--steps", NOTICE_STEPS, "--exit-code", NOTICE_EXIT]
    args += ["--delay", NOTICE_DELAY]
    spec = local.local_cluster_spec(workers=2)
    runs = {"stage": "noticed", "first": None, "second": None, "directory": directory}
    job = local.LocalCluster(spec, log_dir=folder / "logs", env={"CUDA_VISIBLE_DEVICES": "-1"})
    with job:
        job.start(folder / "preempt_worker.py", args)
        try:
            job.wait_until(lambda: len(_run_steps(job.logs("worker", 0))) >= NOTICE_AFTER,
                           NOTICE_START_TIMEOUT, f"step {NOTICE_AFTER}")  # fmt: skip
        except (TimeoutError, RuntimeError):  # a worker ended, or never trained
            runs["stage"] = "before"
        else:
            job.procs[("worker", 1)].send(signal.SIGTERM)  # the preemption notice
        runs["first"] = _run_of(job, [0, 0])
        runs["saved"] = _saved_steps(directory, folder)
        if runs["first"]["codes"] is None or runs["stage"] == "before":
            return runs
        offsets = [len(job.logs("worker", i)) for i in (0, 1)]
        job.start(folder / "preempt_worker.py", args)  # the restart: both workers, as before
        runs["second"] = _run_of(job, offsets)
    return runs


def _run_of(job, offsets) -> dict:
    """The exit codes (None: still running after the timeout, then stopped) and each worker's
    output since ``offsets``."""
    try:
        codes = job.wait(timeout=NOTICE_END_TIMEOUT)
        codes = [codes[("worker", i)] for i in (0, 1)]
    except TimeoutError:
        codes = None
        running = [i for i in (0, 1) if job.alive("worker", i)]
        for i in running:
            job.kill("worker", i)
    logs = [job.logs("worker", i) for i in (0, 1)]
    run = {"codes": codes, "logs": [log[offsets[i] :] for i, log in enumerate(logs)]}
    run["running"] = None if codes is not None else running
    return run


def _run_steps(log: str) -> list[dict]:
    from ..programs import events

    return events.parse(log or "", "step")


def _saved_steps(directory, folder) -> dict:
    """The step held by the newest checkpoint in the chief's folder (None: no checkpoint),
    and whether any checkpoint was written under ``folder`` at all."""
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(str(directory))
    step = None
    if latest:
        reader = tf.train.load_checkpoint(latest)
        names = [n for n in reader.get_variable_to_shape_map() if n.startswith("optimizer/")]
        counters = [n for n in names if "iterations" in n]  # Keras' step counter
        step = int(reader.get_tensor(counters[0])) if counters else None
    anywhere = any(folder.rglob("*.index"))
    return {"chief": step, "anywhere": anywhere}


def _where_in_train(log: str) -> str:
    """Where the traceback in ``log`` last passed through the learner's function."""
    import re

    header = _NOTICE_HEADER.count("\n")
    found = re.findall(r'preempt_train\.py", line (\d+)', log or "")
    if not found:
        return "outside your function"
    return f"at line {int(found[-1]) - header} of your function (its `def` is line 1)"


def _last_line(log: str) -> str:
    lines = [ln for ln in (log or "").strip().splitlines() if ln.strip()]
    return (lines[-1:] or ["(no output)"])[0][:200]


def _notice_problem(runs) -> str | None:
    """The hint for what the job did with the notice and after the restart, or None."""
    first = runs["first"]
    if runs["stage"] == "before" and first["codes"] == [0, 0]:
        done = len(_run_steps(first["logs"][0]))
        return (
            f"both workers ended by themselves after {done} of {NOTICE_STEPS} steps, before the "
            "notice was sent: does your function train every step not trained yet?"
        )
    if runs["stage"] == "before":
        index = next((i for i in (0, 1) if first["codes"] and first["codes"][i] != 0), 0)
        log = first["logs"][index]
        code = first["codes"][index] if first["codes"] else None
        return (
            f"worker {index} stopped before the notice was sent (exit code {code}), "
            f"{_where_in_train(log)}: {_last_line(log)}"
        )
    shared = _shared_folder_problem(first, runs.get("directory"))
    if shared:  # first: their saves may have failed for it, or hung
        return shared
    if first["codes"] is None:
        return (
            f"{NOTICE_END_TIMEOUT} s after worker 1 got the notice, worker(s) {first['running']} "
            "still ran (then stopped by the check): a notice must end the job soon after a save"
        )
    steps = [[e["step"] for e in _run_steps(log)] for log in first["logs"]]
    saved = runs["saved"]["chief"]
    if first["codes"] == [0, 0] and max(steps[0], default=0) >= NOTICE_STEPS:
        if saved is None and not runs["saved"]["anywhere"]:
            return (
                "after the notice both workers trained on to the end and nothing was saved: "
                "the handler acts only where your loop gives it the chance"
            )
        return (
            "a checkpoint was saved after the notice, but the workers went on training to the "
            "end: a preempted worker is about to disappear; after its save it must exit"
        )
    return _exit_problem(first, steps, runs["saved"]) or _restart_problem(runs, saved)


def _shared_folder_problem(first, directory) -> str | None:
    """A hint if a worker other than the chief saved into the chief's folder (what each
    worker's CheckpointManager saves reported before they wrote, ``_SAVES_REPORTED``)."""
    from ..programs import events

    if directory is None:
        return None
    chief = os.path.abspath(str(directory))
    for index in (1,):
        saves = events.parse(first["logs"][index], "saving")
        if chief in {os.path.normpath(e["folder"]) for e in saves}:
            return (
                f"worker {index} saved its checkpoint into `directory` too, the chief's folder: "
                "two workers writing the same files at once corrupt them (on a cluster's shared "
                "storage; here too, at times). Where should every other worker save?"
            )
    return None


def _exit_problem(first, steps, saved) -> str | None:
    codes = first["codes"]
    if saved["chief"] is None:
        if saved["anywhere"]:
            return (
                "checkpoints were written after the notice, but none in the chief's folder "
                "(`directory`), the one a restarted job reads: worker 0 is the chief"
            )
        return (
            f"no checkpoint was saved after the notice, and the workers exited with codes "
            f"{codes}: a worker's exit comes after every worker's save, never instead of it"
        )
    if codes == [0, 0]:
        return (
            "after their save the workers exited with code 0, which whatever restarts the job "
            "reads as 'finished': use the exit code your function is given"
        )
    for index, code in enumerate(codes):
        if code != NOTICE_EXIT:
            return (
                f"after the notice worker {index} exited with code {code}, not the exit code "
                f"your function is given: {_last_line(first['logs'][index])}"
            )
    for index, done in enumerate(steps):
        if max(done, default=0) != saved["chief"]:
            return (
                f"the chief's checkpoint holds step {saved['chief']}, but worker {index}'s last "
                f"step before it exited was {max(done, default=0)}: save the step you exit at"
            )
    return None


def _restart_problem(runs, saved) -> str | None:
    second = runs["second"]
    if second["codes"] is None:
        return (
            f"the restarted job still ran {NOTICE_END_TIMEOUT} s later, worker(s) "
            f"{second['running']} (then stopped by the check)"
        )
    for index, code in enumerate(second["codes"]):
        if code != 0:
            return (
                f"after the restart worker {index} ended with exit code {code}: "
                f"{_last_line(second['logs'][index])}"
            )
    events = [_run_steps(log) for log in second["logs"]]
    steps = [e["step"] for e in events[0]]
    expected = list(range(saved + 1, NOTICE_STEPS + 1))
    if steps[:1] == [1] and saved > 0:
        return (
            f"the restart trained from step 1 again, though the checkpoint held step {saved}: "
            "the steps already saved must not be done twice"
        )
    if steps != expected:
        shown = f"{steps[0]}-{steps[-1]}" if steps else "none"
        return (
            f"the checkpoint held step {saved}, and the restart trained steps {shown} "
            f"({len(steps)} steps) of a job of {NOTICE_STEPS}: none may be lost or done twice"
        )
    if any(e["trained"] != e["step"] for e in events[0]):
        return "after the restart the optimizer's step count and the batches trained disagree"
    if [e["loss"] for e in events[0]] != [e["loss"] for e in events[1]]:
        return "the restarted workers' losses differ: they did not resume as one job"
    return None


# -- 04.7: a stalled peer ends in an error, within the collective timeout ---------------------
STALL_TIMEOUT = 5  # s: the collective timeout make_strategy is given
STALL_BOUND = 25  # s from the stall to worker 0's error: more is a hang
STALL_AFTER = 3  # worker 0 has reported this many steps when worker 1 is stopped (SIGSTOP)
# its error may come sooner than STALL_TIMEOUT after the stop (its last collective began a
# moment before it), never this much sooner: a 5 ms timeout (seconds read as milliseconds)
# errs at once, and sometimes not before (every healthy collective then ended within 5 ms)
STALL_SOONEST = 0.4


@exercise("04.7")
def a_stalled_peer_ends_in_an_error(make_strategy, program):
    """make_strategy(timeout) -> the job's strategy; program: the exercise's worker program,
    which imports it. Worker 1 is stopped with SIGSTOP (alive, silent: a hung machine) after a
    few steps; worker 0 must end with the collective's timeout error within STALL_BOUND s."""
    return _run_learner_job(
        make_strategy, ("make_strategy", "the function"), program, "047", _stall_run, _stall_problem
    )


def _run_learner_job(answer, names, program, tag, run, judge) -> str | None:
    """The learner's function (``names``: its name, what to call it) run as a job in a
    fresh folder by ``run(folder, program, source)``; ``judge`` says what went wrong."""
    import tempfile
    from pathlib import Path

    from . import course_code, learner_source

    name, what = names
    source, problem = learner_source(answer, name)
    if problem:
        return problem
    if course_code(answer):
        return f"write {what} yourself: the course's own code is not your answer"
    with tempfile.TemporaryDirectory(prefix=f"tflearn-ex{tag}-") as folder:
        return judge(run(Path(folder), Path(program), source))


def _stall_run(folder, program, source) -> dict:
    """Run the job, stop worker 1 after STALL_AFTER steps, wait STALL_BOUND s for worker 0;
    what happened: the stage reached, worker 0's exit code and seconds, both outputs."""
    import shutil
    import signal
    import time

    from ..cluster import local
    from ..programs import events, processes

    shutil.copy(program, folder / "stall_worker.py")
    (folder / "stall_strategy.py").write_text("import tensorflow as tf\n\n\n" + source)
    spec = local.local_cluster_spec(workers=2)
    run = {"stage": "stalled", "code": None, "seconds": None, "error_seconds": None}
    run["steps_before"] = 0
    job = local.LocalCluster(spec, log_dir=folder / "logs", env={"CUDA_VISIBLE_DEVICES": "-1"})
    with job:
        job.start(folder / "stall_worker.py", ["--timeout", STALL_TIMEOUT])
        try:
            job.wait_until(lambda: len(_run_steps(job.logs("worker", 0))) >= STALL_AFTER,
                           NOTICE_START_TIMEOUT, f"step {STALL_AFTER}")  # fmt: skip
        except (TimeoutError, RuntimeError):
            run["stage"] = "before"
        else:
            job.procs[("worker", 1)].send(signal.SIGSTOP)  # alive, but silent: a hung machine
            run["steps_before"] = len(_run_steps(job.logs("worker", 0)))
        began = time.monotonic()
        try:  # when worker 0 says it failed: a 5 s timeout cannot end a wait sooner than ~5 s
            processes.wait_until(
                lambda: events.parse(job.logs("worker", 0), "error") or not job.alive("worker", 0),
                STALL_BOUND,
                "worker 0's error",
            )
            run["error_seconds"] = time.monotonic() - began
            left = max(1.0, STALL_BOUND - run["error_seconds"])
            run["code"] = job.wait([("worker", 0)], timeout=left)[("worker", 0)]
            run["seconds"] = time.monotonic() - began
        except TimeoutError:
            pass
        for i in (0, 1):  # SIGKILL: a stopped process does not act on a SIGTERM
            if job.alive("worker", i):
                job.kill("worker", i)
        run["logs"] = [job.logs("worker", i) for i in (0, 1)]
    return run


def _stall_problem(run) -> str | None:
    from ..programs import events

    log = run["logs"][0]
    ready = events.parse(log, "ready")
    errors = events.parse(log, "error")
    said = (errors[-1]["error"] + ": " + " ".join(errors[-1]["lines"][:3])) if errors else ""
    if run["stage"] == "before":
        if errors and "timed out" in said:
            return (
                "a collective timed out before any peer stalled, in a healthy step: was the "
                f"timeout your function was given ({STALL_TIMEOUT} s) the one the strategy got?"
            )
        return f"worker 0 stopped before its peer stalled: {said or _last_line(log)}"[:400]
    if ready and ready[-1]["replicas"] != 2:
        return (
            f"each worker's strategy had {ready[-1]['replicas']} replica(s), not one per worker "
            "of the cluster: the two workers were not one job"
        )
    if len(_run_steps(log)) > run["steps_before"] + 2:
        return (
            "worker 0 went on training alone after its peer stalled: its strategy does not "
            "make the two workers one synchronous job"
        )
    if run["code"] is None:
        return (
            f"worker 0 still waited for its stalled peer {STALL_BOUND} s later (then stopped by "
            "the check): nothing bounded how long a collective waits for a peer that is alive "
            "but silent"
        )
    if run["code"] == 0 or "timed out" not in said:
        return (
            f"worker 0 ended {run['seconds']:.0f} s after its peer stalled with exit code "
            f"{run['code']}, {said or 'no error reported'}: not the collective's timeout"
        )[:400]
    if run["error_seconds"] < STALL_SOONEST * STALL_TIMEOUT:
        return (
            f"worker 0's collective timed out {run['error_seconds']:.1f} s after its peer "
            f"stalled, sooner than the {STALL_TIMEOUT} s your function was given: in what unit "
            "does the strategy read its timeout?"
        )
    return None


# -- 04.8: Keras fit resumes from its BackupAndRestore backup --------------------------------
BACKUP_EPOCHS = 3  # the job: 3 epochs of BACKUP_BATCHES batches each
BACKUP_BATCHES = 6
BACKUP_EVERY = 4  # steps between backups: one at step 8, inside epoch 2, none at its start
BACKUP_STOP = 10  # the first run is interrupted after this step: in epoch 2, after step 8's backup
BACKUP_NEWEST = BACKUP_STOP // BACKUP_EVERY * BACKUP_EVERY  # the step the restart resumes from


class _Interrupted(Exception):
    """What the check's callback raises to interrupt the first run (a crash, in this process)."""


@exercise("04.8")
def fit_resumes_from_its_backup(train):
    """train(model, dataset, epochs, backup_dir, save_every, callbacks): the learner's ``fit``.
    The first call is interrupted after step BACKUP_STOP (epoch 2 of 3) by the check's callback;
    the second, with the model built afresh as a restarted process would, must resume from the
    newest backup, and leave no backup behind once training has finished."""
    import tempfile

    if not callable(train):
        return "pass your function train itself, not its result"
    with tempfile.TemporaryDirectory(prefix="tflearn-ex048-") as folder:
        backup_dir = os.path.join(folder, "backup")
        os.mkdir(backup_dir)  # empty, as a job's storage before its first run
        with _backups_made() as made:
            first = _fit_run(train, backup_dir, interrupt_after=BACKUP_STOP)
            first["made"], left = list(made), _files(backup_dir)
            made.clear()
            second = _fit_run(train, backup_dir, interrupt_after=None)
            second["made"] = list(made)
        second["left"] = _files(backup_dir)
    return (
        _run_problem(first, "first")
        or _run_problem(second, "second")
        or _resume_problem(first, second, left, os.path.normpath(backup_dir))
    )


def _fit_run(train, backup_dir, interrupt_after) -> dict:
    """One call of the learner's ``train`` on a model built afresh, with the check's callback
    (it records each step, and raises after step ``interrupt_after``): what it saw."""
    import keras
    import numpy as np

    rows = np.random.default_rng(0)
    x = rows.normal(size=(8 * BACKUP_BATCHES, 4)).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [3.0], [0.5]], "float32")
    dataset = _dataset(x, y)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    fresh = np.random.default_rng(1 if interrupt_after else 2)  # two starts a restore tells apart
    model.set_weights([fresh.normal(size=w.shape).astype("float32") for w in model.get_weights()])
    model.compile(keras.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    seen = {"initial": _flat(model), "raised": None, "epochs": [], "weights": []}
    seen.update(start=None, iterations=None, folder_at_start=None, began=False)
    watcher = _watcher(keras, seen, backup_dir, interrupt_after)
    try:
        train(model, dataset, BACKUP_EPOCHS, backup_dir, BACKUP_EVERY, [watcher])
    except _Interrupted:
        seen["raised"] = "interrupted"
    except Exception as err:  # noqa: BLE001 - any failure of the learner's call is a hint
        first_line = (str(err).strip().splitlines() or [""])[0][:200]
        seen["raised"] = f"{type(err).__name__}: {first_line}"
    return seen


def _dataset(images, labels):
    import tensorflow as tf

    return tf.data.Dataset.from_tensor_slices((images, labels)).batch(8)


def _flat(model):
    import numpy as np

    return np.concatenate([w.ravel() for w in model.get_weights()])


def _watcher(keras, seen, backup_dir, interrupt_after):
    """The check's callback: the epochs run, the weights after each step, where the run began
    (weights, the optimizer's step, what was in the backup folder), and the interruption."""

    class Watcher(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            seen["began"], seen["folder_at_start"] = True, _files(backup_dir)

        def on_epoch_begin(self, epoch, logs=None):
            seen["epochs"].append(epoch)

        def on_train_batch_begin(self, batch, logs=None):
            if seen["start"] is None:  # after every callback's on_train_begin: restored by now
                seen["start"] = _flat(self.model)
                seen["iterations"] = int(self.model.optimizer.iterations.numpy())

        def on_train_batch_end(self, batch, logs=None):
            seen["weights"].append(_flat(self.model))
            if len(seen["weights"]) == interrupt_after:
                raise _Interrupted(f"the check interrupted training after step {interrupt_after}")

    return Watcher()


def _files(folder) -> list[str]:
    """Every file under ``folder`` (none when it does not exist)."""
    return sorted(os.path.join(d, n) for d, _, names in os.walk(folder) for n in names)


@contextmanager
def _backups_made():
    """Inside: the folder of every ``BackupAndRestore`` created, in the list it yields (to
    tell apart why a restart found no backup; the verdict itself is read from the runs)."""
    import keras

    kind = keras.callbacks.BackupAndRestore
    original = kind.__init__
    made: list[str] = []

    def recorded(self, backup_dir, *args, **kwargs):
        made.append(os.path.normpath(str(backup_dir)))
        original(self, backup_dir, *args, **kwargs)

    kind.__init__ = recorded
    try:
        yield made
    finally:
        kind.__init__ = original


def _run_problem(seen, name) -> str | None:
    """What went wrong in the call itself: the caller's callbacks not run, the interruption
    swallowed, or another error."""
    interrupted = name == "first"
    if not seen["began"]:
        if seen["raised"] and seen["raised"] != "interrupted":
            return f"the {name} call of train raised {seen['raised']}"
        return (
            "fit did not run the callbacks your function is given (the check's own, which "
            "watches the training and interrupts it): fit must run them as well as yours"
        )
    if interrupted and seen["raised"] is None and len(seen["weights"]) >= BACKUP_STOP:
        return (
            "your function caught the interruption and returned as if training had finished: "
            "whatever restarts a job reads a normal end as 'done'; let the error end the call"
        )
    if seen["raised"] not in (None, "interrupted") or (not interrupted and seen["raised"]):
        return f"the {name} call of train raised {seen['raised']}"
    if interrupted and seen["raised"] is None:
        return (
            f"the first call trained {len(seen['weights'])} steps and returned before the "
            f"interruption at step {BACKUP_STOP}: train every epoch it is given"
        )
    return None


def _resume_problem(first, second, left, backup_dir) -> str | None:
    """Where the restarted call began (the fresh model's weights, or those of a step of the
    first run), which epochs it ran, and what it left behind."""
    import numpy as np

    if second["start"] is None:
        return (
            f"the second call trained no step of the {BACKUP_EPOCHS} epochs it was given: the "
            "interrupted run had not finished them"
        )
    if np.array_equal(second["start"], second["initial"]):
        return _started_over(first, second, left, backup_dir)
    step = next(
        (i + 1 for i, w in enumerate(first["weights"]) if np.array_equal(second["start"], w)), None
    )
    if step is None:
        return (
            "the second call began from weights that are neither the fresh model's nor those "
            "of any step of the first call: restore the interrupted run's own backup"
        )
    if step == BACKUP_BATCHES:
        return (
            f"the second call resumed from the end of epoch 1 (step {step}), not from the newest "
            f"backup before the interruption at step {BACKUP_STOP}: how often does your run back "
            "up its state?"
        )
    if step != BACKUP_NEWEST:
        return (
            f"the second call resumed from step {step}, but with a backup every `save_every` "
            f"({BACKUP_EVERY}) steps the newest before the interruption at step {BACKUP_STOP} is "
            f"step {BACKUP_NEWEST}: how often does your run back up its state, in steps?"
        )
    if second["iterations"] != step:
        return (
            f"the second call began from step {step}'s weights, but its optimizer's step count "
            f"was {second['iterations']}: a restart restores the optimizer's state too"
        )
    if second["epochs"][:1] != [1]:
        return (
            f"the second call ran epochs {[e + 1 for e in second['epochs']]} (counting from 1); "
            "epoch 1 was finished before the interruption: a restart skips the epochs done"
        )
    if second["left"]:
        return (
            "training finished, yet a backup was still in `backup_dir`: a finished job leaves "
            "none behind, or the next job started with that folder would resume from it"
        )
    return None


def _started_over(first, second, left, backup_dir) -> str:
    """The hint for a second call that began from the fresh model's weights."""
    over = "the second call started over, from the fresh model's weights"
    if not first["made"] and not second["made"]:
        if left:
            return (
                f"the first call saved files in `backup_dir`, but {over}: saving is half of "
                "it; a restarted fit must restore that state, and skip the epochs already done"
            )
        return (
            f"nothing was backed up in `backup_dir` while the first call trained, and {over}: "
            "fit needs a callback that backs the training state up, and restores it on a restart"
        )
    if first["made"] != [backup_dir] or second["made"] != [backup_dir]:
        return (
            f"{over}: the two calls backed up into different folders, or not into `backup_dir`; "
            "a restarted run finds the backup only in the folder the interrupted run wrote it to"
        )
    if not left:
        return (
            f"a backup callback was created, but nothing was backed up while the first call "
            f"trained, and {over}: is it among the callbacks fit runs?"
        )
    if not second["folder_at_start"]:
        return (
            f"the interrupted call's backup was in `backup_dir`, but gone when the second call's "
            f"fit began, so {over}: a restart must find what the interrupted run left there"
        )
    return (
        f"the interrupted call's backup was in `backup_dir` when the second call began, but "
        f"{over}: does its fit run the callback that restores it?"
    )
