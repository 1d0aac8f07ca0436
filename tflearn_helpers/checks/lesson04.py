"""Checks for lesson 04's exercises: exploring the other tf.distribute strategies."""

from __future__ import annotations

import os

import numpy as np

from . import exercise, watching

__all__ = ["MUTATIONS", "NAMES", "TOLERANCE", "same_as_one_device"]

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


def _scopes_problem(models):
    """A hint unless each model's variables, and its optimizer's, belong to its strategy."""
    if not isinstance(models, dict) or len(models) != len(NAMES):
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
    from ..cluster import tf_config
    from ..programs import events
    from ..topics import mirrored, multi_worker

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
    if [c["task"].get("index", 0) for c in configs] != [0, 1]:
        return "each worker's TF_CONFIG must name its own task, a different one for each"
    if not isinstance(outcomes, list | tuple) or len(outcomes) != 2:
        return "outcomes should hold (exit code, output) for each of the two workers"
    for index, (code, output) in enumerate(outcomes):
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
# Wrong answers derived from the solution (solutions/04_multi_worker.ipynb), one plausible
# mistake each: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "wrong". 04.4's cell
# starts two worker processes: its mistakes here are those whose workers end by themselves (a
# TF_CONFIG naming one task twice would leave a worker waiting for its peer until the timeout).
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
    ],
}
