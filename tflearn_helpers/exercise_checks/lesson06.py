"""Checks for lesson 06's exercises: exploring the other tf.distribute strategies."""

from __future__ import annotations

from ..checks import exercise

__all__ = [
    "NAMES",
    "TOLERANCE",
    "same_as_one_device",
    "strategies_built",
    "strategies_trained",
    "two_workers_trained_as_one_job",
]

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


@exercise("06.1")
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


@exercise("06.2")
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


@exercise("06.3")
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


@exercise("06.4")
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
            *(multi_worker.weights(f"{out_dir}/weights-custom-worker-{i}.npz") for i in (0, 1))
        )
    except (OSError, ValueError) as err:
        return f"could not compare the two workers' final weights: {err}"
    if gap != 0.0:
        return f"the workers' final weights differ by up to {gap:.2e}: they should be identical"
    return None
