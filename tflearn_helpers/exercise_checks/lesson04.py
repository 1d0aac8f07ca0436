"""Checks for lesson 04's exercises: exploring the other tf.distribute strategies."""

from __future__ import annotations

import os

from ..checks import exercise

__all__ = ["NAMES", "TOLERANCE", "same_as_one_device"]

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
    for name in ("Mirrored", "CentralStorage"):
        if answer[name].num_replicas_in_sync != _local_devices():
            return f"{name} should use every device the setup cell created"
    mwms_expected = _gpus() or 1  # without TF_CONFIG: the local GPUs, else one CPU
    if answer["MultiWorkerMirrored"].num_replicas_in_sync != mwms_expected:
        return "MultiWorkerMirrored without TF_CONFIG should run on this machine's local devices"
    return None


@exercise("04.2")
def strategies_trained(results):
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
    return None


@exercise("04.3")
def same_as_one_device(answer, results):
    if not isinstance(answer, (set, frozenset, list, tuple)):
        return "answer with a set of strategy names"
    unknown = set(answer) - set(NAMES)
    if unknown:
        return f"these are not strategy names of this exercise: {sorted(unknown)}"
    base = results["OneDevice"][0]
    truth = {
        name
        for name, (weights, _) in results.items()
        if max(float(abs(a - b).max()) for a, b in zip(weights, base, strict=True)) <= TOLERANCE
    }
    if set(answer) - {"OneDevice"} != truth - {"OneDevice"}:
        return (
            "at least one strategy is in the wrong group: compute the largest |w - w_OneDevice| "
            f"for each and keep those at or below {TOLERANCE}"
        )
    return None


@exercise("04.4")
def two_workers_trained_as_one_job(outcomes, out_dir, learner_tf_config):
    """outcomes: [(exit code, output)] of both workers; out_dir: where they wrote."""
    from .. import mirrored, multi_worker
    from ..cluster import tf_config

    configs = []
    for index in (0, 1):
        try:
            configs.append(tf_config.validate(learner_tf_config(index)))
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
    runs = [multi_worker.progress(out_dir, "custom", f"worker-{i}") for i in (0, 1)]
    if not all(runs):
        return "a worker wrote no training steps: did each process get its own TF_CONFIG?"
    if [p["loss"] for p in runs[0]] != [p["loss"] for p in runs[1]]:
        return "the two workers' losses differ: they did not train as one synchronous job"
    try:
        gap = mirrored.max_abs_difference(
            *(
                multi_worker.worker_weights(f"{out_dir}/weights-custom-worker-{i}.npz")
                for i in (0, 1)
            )
        )
    except (OSError, ValueError) as err:
        return f"could not compare the two workers' final weights: {err}"
    if gap != 0.0:
        return f"the workers' final weights differ by up to {gap:.2e}: they should be identical"
    return None


@exercise("04.5")
def resumes_after_a_kill(functions, killed, resumed, save_every):
    """functions: the learner's (make_manager, restore_latest); killed / resumed: [(exit code,
    output)] of both workers in the run killed after a step and in the restarted run."""
    make_manager, restore_latest = functions
    problem = _manager_problem(make_manager) or _restore_problem(restore_latest)
    if problem:
        return problem
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
    from ..cluster import events

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


MUTATIONS: dict[str, list[tuple[str, str, str]]] = {}
