"""Checks for lesson 04's exercises: exploring the other tf.distribute strategies."""

from __future__ import annotations

import os

import numpy as np

from . import before_running, exercise, watching

__all__ = ["MUTATIONS", "NAMES", "RIGHT_ANSWERS", "TOLERANCE", "same_as_one_device"]

NAMES = ("OneDevice", "Mirrored", "CentralStorage", "MultiWorkerMirrored")
TOLERANCE = 1e-5


def _classes():
    import tensorflow as tf

    return {
        "OneDevice": tf.distribute.OneDeviceStrategy,
        "Mirrored": tf.distribute.MirroredStrategy,
        "CentralStorage": tf.distribute.experimental.CentralStorageStrategy,
        "MultiWorkerMirrored": tf.distribute.MultiWorkerMirroredStrategy,
    }


def _local_devices() -> int:
    import tensorflow as tf

    return len(tf.config.list_logical_devices("GPU")) or len(tf.config.list_logical_devices("CPU"))


def _first_device() -> str:
    import tensorflow as tf

    return (tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU"))[0].name


def _device_key(name: str) -> tuple[str, int]:
    import tensorflow as tf

    spec = tf.DeviceSpec.from_string(name)
    return spec.device_type, spec.device_index


def _gpus() -> int:
    import tensorflow as tf

    return len(tf.config.list_logical_devices("GPU"))


@exercise("04.1")
def strategies_built(answer):
    if not isinstance(answer, dict) or set(answer) != set(NAMES):
        return f"answer with a dict whose keys are exactly {', '.join(NAMES)}"
    for name, cls in _classes().items():
        strategy = answer[name]
        if strategy is ...:
            return f"{name} is still `...`: create that strategy"
        if not isinstance(strategy, cls):
            return f"{name} is not the strategy its name says; look at tf.distribute's classes"
    if answer["OneDevice"].num_replicas_in_sync != 1:
        return "OneDevice should run exactly one replica"
    if _device_key(answer["OneDevice"].extended.worker_devices[0]) != _device_key(_first_device()):
        return "OneDevice should run on the first of the notebook's devices"
    for name in ("Mirrored", "CentralStorage"):
        if answer[name].num_replicas_in_sync != _local_devices():
            return f"{name} should use every device the setup cell created"
    mwms_expected = _gpus() or 1  # without TF_CONFIG: the local GPUs, else one CPU
    if answer["MultiWorkerMirrored"].num_replicas_in_sync != mwms_expected:
        return "MultiWorkerMirrored without TF_CONFIG should run on this machine's local devices"
    if mwms_expected > 1:  # on logical GPUs its all-reduce runs: NCCL cannot (tensorflow#40735)
        return _allreduce_problem(answer["MultiWorkerMirrored"])
    return None


def _allreduce_problem(strategy):
    """A hint unless the strategy's replicas can all-reduce a float, as its training step will."""
    import tensorflow as tf

    def replica_sum():
        context = tf.distribute.get_replica_context()
        return context.all_reduce("SUM", tf.cast(context.replica_id_in_sync_group, tf.float32))

    try:
        strategy.experimental_local_results(strategy.run(tf.function(replica_sum)))
    except Exception as err:  # the all-reduce cannot run on these devices: a hint, no traceback
        first = (str(err).strip().splitlines() or [""])[0][:160]
        return (
            f"MultiWorkerMirrored cannot all-reduce between these devices ({type(err).__name__}: "
            f"{first}): which communication implementation runs between logical GPUs?"
        )
    return None


@exercise("04.2")
def strategies_trained(build_and_warm_up, results, models):
    """build_and_warm_up(strategy) -> the compiled model; results: name -> (weights, ms per
    step); models: strategy -> the model trained under it. Judged by the variables: the
    model's and its optimizer's, created by that strategy."""
    if not callable(build_and_warm_up):
        return "pass your function build_and_warm_up itself"
    if not isinstance(results, dict) or set(results) != set(NAMES):
        return f"results needs exactly the keys {', '.join(NAMES)}"
    shapes = None
    for name, value in results.items():
        if value is ... or not isinstance(value, tuple) or len(value) != 2:
            return f"results[{name!r}] should be the (weights, ms per step) train() returns"
        weights, ms = value
        if (
            not isinstance(weights, list)
            or not weights
            or not all(hasattr(w, "shape") for w in weights)
        ):
            return f"the weights for {name} should be the list model.get_weights() returns"
        if not isinstance(ms, float) or ms <= 0:
            return f"the time per step for {name} should be a positive number of milliseconds"
        these = [tuple(w.shape) for w in weights]
        if shapes is not None and these != shapes:
            return f"{name} trained a different model: every strategy must train the same one"
        shapes = these
    return _scopes_problem(models)


@before_running("04.2")
def warm_up_tried(strategies, build_and_warm_up):
    """Before the cell trains: the learner's build_and_warm_up run on the check's own
    OneDeviceStrategy (its warm-up epoch against the one the text asks for, from the
    notebook's make_model, x, y and BATCH) and on the answer's MirroredStrategy (its
    variables, created by that strategy)."""
    import tensorflow as tf

    if not callable(build_and_warm_up):
        return "pass your function build_and_warm_up itself"
    one = tf.distribute.OneDeviceStrategy(_first_device())
    models = {}
    for strategy in (one, strategies.get("Mirrored") if isinstance(strategies, dict) else None):
        if strategy is None:
            continue
        try:
            models[strategy] = build_and_warm_up(strategy)
        except Exception as err:  # the learner's code: say where to look, not Keras' traceback
            return _warm_up_raised(err, type(strategy).__name__)
        if not hasattr(models[strategy], "get_weights"):
            return "build_and_warm_up should return the compiled, warmed-up model"
    return _scopes_problem(models, len(models)) or _warm_up_problem(
        build_and_warm_up, list(models.values())
    )


def _warm_up_raised(err: Exception, name: str) -> str:
    text = str(err).strip().splitlines()
    said = f"{type(err).__name__}" + (f": {text[0][:160]}" if text else "")
    return (
        f"your build_and_warm_up raised {said} under {name}: were the model and its optimizer "
        "(compile) made in that strategy's scope, and fit called as the text says?"
    )


_REFERENCE: dict = {}  # (ids of make_model, x, y, BATCH) -> (steps, weights) of one epoch


def _warm_up_problem(build_and_warm_up, models: list):
    """A hint unless each warm-up epoch took the steps the text asks for: SGD 0.05, mean squared
    error, the global batch BATCH whatever the replicas, the examples in order (compared with a
    reference epoch on one device: the steps of every model, the weights of the first)."""
    import keras
    import tensorflow as tf

    given = build_and_warm_up.__globals__
    if not all(name in given for name in ("make_model", "x", "y", "BATCH")):
        return None  # the notebook's own names are gone: nothing to compare with
    key = tuple(id(given[name]) for name in ("make_model", "x", "y", "BATCH"))
    if key not in _REFERENCE:  # the reference epoch, once per notebook data
        with tf.distribute.OneDeviceStrategy(_first_device()).scope():
            reference = given["make_model"]()
            reference.compile(keras.optimizers.SGD(0.05), "mse")
        batch = given["BATCH"]
        reference.fit(given["x"], given["y"], batch_size=batch, epochs=1, shuffle=False, verbose=0)
        _REFERENCE.clear()
        _REFERENCE[key] = (int(reference.optimizer.iterations.numpy()), reference.get_weights())
    wanted, reference_weights = _REFERENCE[key]
    for model in models:
        steps = int(model.optimizer.iterations.numpy()) if getattr(model, "optimizer", None) else 0
        if steps != wanted:
            return (
                f"your warm-up epoch took {steps} steps, not one per global batch of BATCH "
                f"examples ({wanted}): what batch size does fit get, whatever the replicas?"
            )
    gap = max(
        float(np.abs(a - b).max())
        for a, b in zip(models[0].get_weights(), reference_weights, strict=True)
    )
    if gap > TOLERANCE:
        return (
            f"after your warm-up epoch the weights differ from the epoch the text asks for by "
            f"up to {gap:.1e}: is it SGD at 0.05 on the mean squared error, over the examples "
            "in the same order every time?"
        )
    return None


def _scopes_problem(models, count: int = len(NAMES)):  # noqa: B008 - a constant
    """A hint unless each model's variables, and its optimizer's, belong to its strategy."""
    if not isinstance(models, dict) or len(models) != count:
        return "pass the models train() kept (one per strategy) as the second argument"
    for strategy, model in models.items():
        name = type(strategy).__name__
        created_here = strategy.extended.variable_created_in_scope
        optimizer = getattr(model, "optimizer", None)
        if not all(created_here(getattr(v, "value", v)) for v in model.weights):
            return (
                f"the model trained under {name} was not created by that strategy: its "
                "variables are plain ones on one device. Where was the model built?"
            )
        if optimizer is None or not all(
            created_here(getattr(v, "value", v)) for v in optimizer.variables
        ):
            return (
                f"the model trained under {name} has an optimizer whose variables that "
                "strategy did not create: where was the optimizer made and the model compiled?"
            )
    return None


@exercise("04.3")
def same_as_one_device(fn, results):
    """fn(results) -> the names whose weights are within TOLERANCE of OneDevice's; run on the
    learner's results, then on copies in which the check moves one value of one strategy's
    weights (which strategy, which value, by how much and which way: its choice)."""
    if not callable(fn):
        return "pass your function itself: it picks the names from any results it is given"
    rng = np.random.default_rng()
    for trial in [results, *_moved_results(results, rng)]:
        answer = fn(trial)
        if not isinstance(answer, (set, frozenset, list, tuple)):
            return "your function should return a set of strategy names"
        unknown = set(answer) - set(NAMES)
        if unknown:
            return f"these are not strategy names of this exercise: {sorted(unknown)}"
        if set(answer) - {"OneDevice"} != _within_tolerance(trial) - {"OneDevice"}:
            mine = "your own results" if trial is results else "results the check changed"
            return (
                f"on {mine}, at least one strategy is in the wrong group: compare every value "
                f"of every weight with OneDevice's; the largest |w - w_OneDevice| decides "
                f"(at most {TOLERANCE})"
            )
    return None


def _within_tolerance(results) -> set:
    base = results["OneDevice"][0]
    return {
        name
        for name, (weights, _) in results.items()
        if max(float(np.abs(a - b).max()) for a, b in zip(weights, base, strict=True)) <= TOLERANCE
    }


def _moved_results(results, rng) -> list[dict]:
    """One copy per other strategy, in a random order: that strategy's weights moved down by
    2e-5 to 5e-4 in one value of a large weight array after the first; the rest as they were."""
    copies = []
    for name in rng.permutation([n for n in NAMES if n != "OneDevice"]):
        base = results["OneDevice"][0]
        moved = {n: ([np.array(w, copy=True) for w in base], ms) for n, (_, ms) in results.items()}
        weights = moved[str(name)][0]
        # an array of over 50 values, so that one moved value leaves its mean under TOLERANCE
        large = [i for i, w in enumerate(weights) if i > 0 and w.size > 50] or [0]
        k = int(rng.choice(large))
        flat = weights[k].reshape(-1)
        flat[int(rng.integers(flat.size))] -= rng.uniform(2 * TOLERANCE, 50 * TOLERANCE)
        copies.append(moved)
    return copies


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


_ONE_DEVICE = "tf.distribute.OneDeviceStrategy(course.devices[0])"
_CENTRAL = "tf.distribute.experimental.CentralStorageStrategy(course.devices)"
_SCOPE = """    with strategy.scope():
        model = make_model()
        model.compile(keras.optimizers.SGD(0.05), "mse")
"""
_TF_CONFIG = 'return {"cluster": two_workers, "task": {"type": "worker", "index": index}}'
_ENV = 'env={"TF_CONFIG": json.dumps(tf_config(i)), "CUDA_VISIBLE_DEVICES": "-1"}'
_RESTORE = "checkpoint.restore(tf.train.latest_checkpoint(directory))"
_WARM_UP = "model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)"
_LAUNCH = """    workers = [
        programs.start(
            program, env={"TF_CONFIG": json.dumps(tf_config(i)), "CUDA_VISIBLE_DEVICES": "-1"}
        )
        for i in range(2)
    ]
    outcomes = [(worker.wait(timeout=240), worker.output()) for worker in workers]
"""
_SAME = """    return {
        name
        for name, (weights, _) in results.items()
        if max(float(np.abs(w - b).max()) for w, b in zip(weights, base, strict=True)) <= 1e-5
    }"""
# Wrong answers derived from the solution (solutions/04_multi_worker.ipynb), one plausible
# mistake each: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "wrong". 04.4's cell
# starts two worker processes: a TF_CONFIG that would leave a worker waiting for a peer is
# refused before the launch (``ready``), and a worker waited for before its peer was started is
# stopped within seconds by its process handle's wait (both are mutations below).
MUTATIONS: dict[str, list[tuple[str, str, str]]] = {
    "04.1": [
        ("OneDevice on the last device", _ONE_DEVICE, _ONE_DEVICE.replace("[0]", "[-1]")),
        ("the default strategy as OneDevice", _ONE_DEVICE, "tf.distribute.get_strategy()"),
        (
            "Mirrored on one device",
            "course.mirrored_strategy(len(course.devices))",
            "course.mirrored_strategy(1)",
        ),
        (
            "a MirroredStrategy as CentralStorage",
            _CENTRAL,
            "tf.distribute.MirroredStrategy(course.devices)",
        ),
        ("CentralStorage on one device", _CENTRAL, _CENTRAL.replace("devices)", "devices[:1])")),
    ],
    "04.2": [
        (
            "built and compiled outside strategy.scope()",
            _SCOPE,
            _SCOPE.replace("with strategy.scope():", "if True:"),
        ),
        (
            "compiled outside strategy.scope()",
            _SCOPE,
            _SCOPE.replace("        model.compile", "    model.compile"),
        ),
        (
            "every model built under OneDevice",
            "with strategy.scope():",
            'with strategies["OneDevice"].scope():',
        ),
        (
            "built outside strategy.scope(), compiled inside",
            "    with strategy.scope():\n        model = make_model()\n",
            "    model = make_model()\n    with strategy.scope():\n",
        ),
        ("shuffled", _WARM_UP, _WARM_UP.replace(", shuffle=False", "")),
        (
            "the per-replica batch",
            _WARM_UP,
            _WARM_UP.replace(
                "batch_size=BATCH", "batch_size=BATCH // strategy.num_replicas_in_sync"
            ),
        ),
        ("Keras' default batch size", _WARM_UP, _WARM_UP.replace("batch_size=BATCH, ", "")),
        ("the mean absolute error", '"mse")', '"mae")'),
    ],
    "04.3": [
        (
            "the four names typed in",
            "    base = results[",
            '    return {"OneDevice", "Mirrored", "CentralStorage", "MultiWorkerMirrored"}\n'
            "    base = results[",
        ),
        ("the mean difference, not the largest", "np.abs(w - b).max()", "np.abs(w - b).mean()"),
        ("the signed difference", "np.abs(w - b).max()", "(w - b).max()"),
        (
            "the first weight array only",
            "zip(weights, base, strict=True)",
            "zip(weights[:1], base)",
        ),
        ("a looser tolerance", ") <= 1e-5", ") <= 1e-3"),
        ("compared with Mirrored", 'results["OneDevice"][0]', 'results["Mirrored"][0]'),
    ],
    "04.4": [
        (
            "each worker a cluster of its own",
            _TF_CONFIG,
            'return {"cluster": {"worker": [two_workers["worker"][index]]}, '
            '"task": {"type": "worker", "index": 0}}',
        ),
        (
            "the course's TF_CONFIG builder",
            _TF_CONFIG,
            'return cluster.tf_config.build(two_workers, "worker", index)',
        ),
        ("TF_CONFIG left out of the environment", _ENV, 'env={"CUDA_VISIBLE_DEVICES": "-1"}'),
        ("TF_CONFIG as Python's str, not JSON", "json.dumps(tf_config(i))", "str(tf_config(i))"),
        ("a task type the cluster lacks", '"type": "worker"', '"type": "chief"'),
        ("both workers task 0", '"index": index', '"index": 0'),
        (
            "a cluster of three workers",
            '"cluster": two_workers',
            '"cluster": {"worker": two_workers["worker"] + ["localhost:1"]}',
        ),
        (
            "worker 1 started after waiting for worker 0",
            _LAUNCH,
            "    outcomes = []\n    for i in range(2):\n"
            "        worker = programs.start(\n"
            "            program, " + _ENV + "\n        )\n"
            "        outcomes.append((worker.wait(timeout=240), worker.output()))\n",
        ),
    ],
    "04.5": [
        (
            "every worker saves into the chief's folder",
            'folder = directory if chief else os.path.join(directory, f"scratch-worker-{task_id}")',
            "folder = directory",
        ),
        (
            "no chief among the workers",
            'chief = task_type in (None, "chief") or (task_type == "worker" and task_id == 0)',
            'chief = task_type in (None, "chief")',
        ),
        ("one scratch folder for all the others", 'f"scratch-worker-{task_id}"', '"scratch"'),
        ("nothing restored", _RESTORE, "tf.train.latest_checkpoint(directory)"),
        (
            "the oldest checkpoint restored",
            _RESTORE,
            "state = tf.train.get_checkpoint_state(directory)\n"
            "    checkpoint.restore(state.all_model_checkpoint_paths[0] if state else None)",
        ),
        (
            "a restore that insists on a checkpoint",
            _RESTORE,
            _RESTORE + ".assert_consumed()",
        ),
        ("five kept", "max_to_keep=2", "max_to_keep=5"),
    ],
}

# Right answers written differently from the solution, as a learner allowed by the exercise's
# text would write them: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "right".
RIGHT_ANSWERS: dict[str, list[tuple[str, str, str]]] = {
    "04.1": [
        (
            "MultiWorkerMirrored with its defaults",
            "tf.distribute.MultiWorkerMirroredStrategy(\n"
            "        communication_options=tf.distribute.experimental.CommunicationOptions(\n"
            "            implementation="
            "tf.distribute.experimental.CommunicationImplementation.RING\n"
            "        )\n    )",
            "tf.distribute.MultiWorkerMirroredStrategy()",
        ),
        (
            "Mirrored written out, reducing to one device",
            "course.mirrored_strategy(len(course.devices))",
            "tf.distribute.MirroredStrategy(\n"
            "        course.devices, cross_device_ops=tf.distribute.ReductionToOneDevice()\n    )",
        ),
    ],
    "04.2": [
        (
            "compiled with keywords and names",
            'model.compile(keras.optimizers.SGD(0.05), "mse")',
            "model.compile(\n"
            "            optimizer=keras.optimizers.SGD(learning_rate=0.05), "
            'loss="mean_squared_error"\n        )',
        ),
        (
            "a dataset of global batches",
            _WARM_UP,
            "model.fit(\n            tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH), "
            "epochs=1, verbose=0\n        )",
        ),
        ("the loss object", '"mse")', "keras.losses.MeanSquaredError())"),
    ],
    "04.3": [
        ("a list of names", _SAME, _SAME.replace("{", "[", 1)[:-1] + "]"),
        (
            "a tolerance function",
            _SAME,
            """    def close(weights):
        return all(np.all(np.abs(w - b) <= 1e-5) for w, b in zip(weights, base))

    return {name for name, (weights, _) in results.items() if close(weights)}""",
        ),
        (
            "a loop",
            _SAME,
            """    same = set()
    for name, (weights, _) in results.items():
        largest = max(np.max(np.abs(np.asarray(w) - np.asarray(b))) for w, b in zip(weights, base))
        if largest <= 1e-5:
            same.add(name)
    return same""",
        ),
    ],
    "04.4": [
        (
            "the cluster copied, the task's keys in another order",
            _TF_CONFIG,
            'return {"cluster": dict(two_workers), "task": {"index": index, "type": "worker"}}',
        ),
        (
            "started in a loop, then waited for in a loop",
            _LAUNCH,
            """    workers = []
    for i in range(2):
        env = {"TF_CONFIG": json.dumps(tf_config(i)), "CUDA_VISIBLE_DEVICES": "-1"}
        workers.append(programs.start(program, env=env))
    outcomes = []
    for worker in workers:
        code = worker.wait(timeout=300)
        outcomes.append((code, worker.output()))
""",
        ),
    ],
    "04.5": [
        (
            "an `if latest:` guard",
            _RESTORE,
            "latest = tf.train.latest_checkpoint(directory)\n"
            "    if latest:\n        checkpoint.restore(latest)",
        ),
        (
            "scratch folders beside the chief's, 2 kept given by position",
            "folder = directory if chief else "
            'os.path.join(directory, f"scratch-worker-{task_id}")\n'
            "    return tf.train.CheckpointManager(checkpoint, folder, max_to_keep=2)",
            'folder = directory if chief else f"{directory}-scratch-{task_type}-{task_id}"\n'
            "    return tf.train.CheckpointManager(checkpoint, folder, 2)",
        ),
    ],
}
