"""Checks for lesson 01's exercises (data parallelism with MirroredStrategy).

Each check runs the learner's code on its own small problem and compares it with what
one device would do; hints say what went wrong, never the code that is right.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager

import numpy as np

from ..measuring.timing import ring_allreduce_bytes
from ..topics import datasets, mirrored
from . import before_running, course_code, exercise, watching

__all__ = [
    "STRATEGY_NAMES",
    "TOLERANCE",
    "mirrored_strategy",
    "same_as_one_device",
    "train_step",
]


def _strategy_problem(strategy):
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.Strategy):
        return "pass your MirroredStrategy as the second argument of check()"
    if strategy.num_replicas_in_sync < 2:
        return "use a strategy with at least two replicas (the setup cell made several devices)"
    return None


@exercise("01.1")
def mirrored_strategy(strategy, devices):
    """A MirroredStrategy with one replica on each of ``devices``; it must run a reduction."""
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MirroredStrategy):
        return f"expected a tf.distribute.MirroredStrategy, got {type(strategy).__name__}"
    wanted = {_device_key(d) for d in devices}
    got = {_device_key(d) for d in strategy.extended.worker_devices}
    if got != wanted:
        return (
            f"your strategy has {len(got)} replica(s) on other devices than the {len(wanted)} "
            "the setup cell made: pass them (course.devices)"
        )
    n = strategy.num_replicas_in_sync
    ids = strategy.run(lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
    total = int(strategy.reduce(tf.distribute.ReduceOp.SUM, ids, axis=None))
    if total != n * (n - 1) // 2:
        return "the replicas of your strategy did not all run: check its devices"
    return _float_allreduce_problem(strategy, n)


def _float_allreduce_problem(strategy, n: int):
    """A hint unless the replicas can all-reduce a float tensor, as summing gradients does
    (strategy.reduce of a small value may take another path than the replicas' all-reduce)."""
    import tensorflow as tf

    def replica_sum():
        context = tf.distribute.get_replica_context()
        value = tf.cast(context.replica_id_in_sync_group, tf.float32) + tf.constant([0.25, 0.5])
        return context.all_reduce(tf.distribute.ReduceOp.SUM, value)

    try:
        sums = strategy.experimental_local_results(strategy.run(tf.function(replica_sum)))
    except Exception as err:  # an all-reduce that cannot run here: say so, not the traceback
        kind = _device_key(strategy.extended.worker_devices[0])[0]
        first = (str(err).strip().splitlines() or [""])[0][:160]
        return (
            f"your strategy cannot sum the replicas' gradients on these {kind} devices: its "
            f"all-reduce of a float raised {type(err).__name__} ({first}). Which cross-device "
            f"ops run on {kind}s?"
        )
    want = [n * 0.25 + n * (n - 1) / 2, n * 0.5 + n * (n - 1) / 2]
    if len(sums) != n or any(not np.allclose(np.asarray(s), want) for s in sums):
        return "your strategy's all-reduce did not give every replica the sum: check its options"
    return None


def _device_key(name: str) -> tuple[str, int]:
    import tensorflow as tf

    spec = tf.DeviceSpec.from_string(name)
    return spec.device_type, spec.device_index


@exercise("01.2")
def distributed_dataset(make_dataset, strategy):
    """make_dataset(strategy, x, y, global_batch) -> a distributed dataset of (x, y); run on
    fresh data: a random number of features, steps and examples per replica."""
    problem = _strategy_problem(strategy)
    if problem:
        return problem
    n, rng = strategy.num_replicas_in_sync, np.random.default_rng()
    for k in rng.choice(np.arange(2, 9), size=2, replace=False):  # a constant fits one at most
        problem = _one_pass_problem(make_dataset, strategy, rng, n * int(k))
        if problem:
            return problem
    return None


def _one_pass_problem(make_dataset, strategy, rng, global_batch):
    """What is wrong with one pass of ``make_dataset`` over fresh data, or None."""
    n, steps = strategy.num_replicas_in_sync, int(rng.integers(2, 6))
    x = rng.standard_normal((steps * global_batch, int(rng.integers(2, 6)))).astype(np.float32)
    y = rng.permutation(len(x)).astype(np.int32)  # each label names one example
    try:
        result = make_dataset(strategy, x, y, global_batch)
    except IndexError as err:  # TensorFlow reads the batch dimension of unbatched elements
        return (
            f"your make_dataset raised IndexError ({err}) when the strategy split its dataset: "
            "the strategy splits each batch between the replicas. Are its elements batches?"
        )
    except Exception as err:  # a learner's function can fail in any way: say where to look
        return _raised(err, "your make_dataset")
    problem = _distributed_dataset_problem(result)
    if problem:
        return problem
    elements, seen = list(itertools.islice(iter(result), steps + 1)), []
    x_of = np.empty_like(x)
    x_of[y] = x
    for element in elements:
        problem = _element_problem(strategy, element, x.shape[1:])
        if problem:
            return problem
        sizes = {s[0][0] for _, s in mirrored.per_replica_shapes(strategy, element)}
        if sizes != {global_batch // n}:
            return (
                f"each replica got {sorted(sizes)} examples per step; with {n} replicas and a "
                f"global batch of {global_batch}, is the dataset batched with the right size?"
            )
        local = [strategy.experimental_local_results(t) for t in element]
        for x_part, y_part in zip(*local, strict=True):
            labels = np.asarray(y_part)
            if not np.issubdtype(labels.dtype, np.integer) or x_part.shape[1:] != x.shape[1:]:
                return "each element should be an (x, y) pair: examples first, then labels"
            if not np.array_equal(np.asarray(x_part), x_of[labels]):
                return "the examples and labels of your batches no longer belong together"
            seen.extend(int(v) for v in labels)
    if len(elements) != steps:
        more = f"more than {steps}" if len(elements) > steps else str(len(elements))
        return f"one pass should take {steps} steps of {global_batch} examples, not {more}"
    if sorted(seen) != list(range(len(y))):
        return "one pass over your dataset does not see every example exactly once"
    return None


def _element_problem(strategy, element, features: tuple):
    """A hint unless one step's element is an (x, y) pair of batches (checked before its sizes
    are read, so a dataset that is not batched gets a hint, not an IndexError)."""
    if not isinstance(element, tuple | list) or len(element) != 2:
        return "each element should be an (x, y) pair: examples first, then labels"
    x_parts = strategy.experimental_local_results(element[0])
    if any(tuple(part.shape) == tuple(features) for part in x_parts):
        return (
            "each replica got one example per step, not a batch of them: a step holds "
            "global_batch examples in total. What groups the examples into batches?"
        )
    if any(len(part.shape) != 1 + len(features) for part in x_parts):
        return "each element should be an (x, y) pair: examples first, then labels"
    return None


def _distributed_dataset_problem(result):
    import tensorflow as tf

    if result is None:
        return "your function returns None: write its body"
    if isinstance(result, tf.data.Dataset):
        return "that is a plain tf.data.Dataset: the strategy has to split it between replicas"
    if not isinstance(result, tf.distribute.DistributedDataset):
        return f"expected a distributed dataset, got {type(result).__name__}"
    return None


@exercise("01.3")
def train_step(make_step, strategy):
    """make_step(strategy, model, optimizer, global_batch) -> step(distributed batch) -> loss."""
    import tensorflow as tf

    problem = _strategy_problem(strategy) or _course_step(make_step)
    if problem:
        return problem
    n, rng = strategy.num_replicas_in_sync, np.random.default_rng()
    global_batch = n * int(rng.integers(4, 13))
    x, y = datasets.teacher_data(global_batch, features=6, classes=4, seed=int(rng.integers(1e6)))
    l2 = tf.keras.regularizers.L2(0.05)
    reference = tf.keras.Sequential(
        [tf.keras.Input((6,)), tf.keras.layers.Dense(4, kernel_regularizer=l2)]
    )
    one = tf.distribute.get_strategy()
    expected = mirrored.twin_model(reference, one)
    one_step = mirrored.make_train_step(one, expected, tf.keras.optimizers.SGD(0.5), global_batch)
    data_loss = float(one_step((x, y)))
    penalty = float(tf.add_n(reference.losses))  # at the starting weights, as in the step
    model = mirrored.twin_model(reference, strategy)
    with strategy.scope():
        optimizer = tf.keras.optimizers.SGD(0.5)
    with watching(mirrored.make_train_step) as called:
        step = make_step(strategy, model, optimizer, global_batch)
    if not callable(step):
        return "make_step must return the step function (it returned no function)"
    problem = _course_step(step) or _course_step(mirrored.make_train_step if called else None)
    if problem:
        return problem
    batch = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
    try:
        loss = step(next(iter(strategy.experimental_distribute_dataset(batch))))
    except Exception as err:  # a learner's step can fail in any way: say where to look
        return _raised(err, "your step")
    if mirrored.replica_divergence(model.variables) != 0.0:
        return "after your step the replicas hold different weights: apply one summed gradient"
    w0 = reference.get_weights()
    ratio = mirrored.update_norm(w0, model.get_weights()) / mirrored.update_norm(
        w0, expected.get_weights()
    )
    if abs(ratio - n) < 0.01 * n:
        return f"your update is {n} times the single-device one: how is each replica's loss scaled?"
    if abs(ratio - 1 / n) < 0.01 / n:
        return f"your update is 1/{n} of the single-device one: how is each replica's loss scaled?"
    if mirrored.max_abs_difference(model.get_weights(), expected.get_weights()) > 1e-5:
        return (
            f"your step differs from one device's step on the same batch (update ratio "
            f"{ratio:.3g}): how does each replica scale its loss and the model.losses penalty?"
        )
    return _reported_loss_problem(loss, data_loss, penalty)


def _reported_loss_problem(loss, data_loss: float, penalty: float):
    """A hint unless the step returned the global batch's loss (with or without penalty)."""
    import tensorflow as tf

    if isinstance(loss, tf.distribute.DistributedValues):
        return "your step returns one loss per replica: combine them into one number"
    loss = np.asarray(loss)
    if loss.shape != () or not np.isfinite(loss):
        return "the step should return one number: the loss combined over the replicas"
    if min(abs(float(loss) - data_loss), abs(float(loss) - data_loss - penalty)) > 1e-4:
        return (
            f"your step returns {float(loss):.4g}, not the loss of the whole global batch "
            "(with or without the penalty): how does strategy.reduce combine the replicas' "
            "shares of it?"
        )
    return None


def _raised(err: Exception, what: str) -> str:
    """A hint for an error raised by the learner's distributed code (no traceback)."""
    text, kind = str(err), type(err).__name__
    if "PerReplica" in text:
        return (
            f"{what} raised {kind}: code written for one replica got every replica's values "
            "at once. Which call runs a function once per replica, each on its own share?"
        )
    if "non-DistributedValues" in text:
        return (
            f"{what} raised {kind}: strategy.reduce got one value, not one per replica. "
            "Did every replica run the step?"
        )
    last = text.strip().splitlines()[-1].strip()[:200] if text.strip() else ""
    return (
        f"{what} raised {kind} ({last}): were the model and the optimizer built in "
        "strategy.scope(), and does the step run on every replica?"
    )


def _course_step(fn):
    if fn is not None and course_code(fn):
        return "write the step yourself: the course's own training step is not your answer"
    return None


@exercise("01.4")
def trained_with_custom_loop(train, strategy):
    """train(strategy, x, y, global_batch, epochs) -> (model, loss of each epoch), on fresh
    examples of a fresh task; the course's own training step does not count."""
    problem = _strategy_problem(strategy)
    if problem:
        return problem
    n, epochs, rng = strategy.num_replicas_in_sync, 3, np.random.default_rng()
    teacher = int(rng.integers(1000))
    # 32 steps an epoch whatever the replicas: enough for Adam at its default learning rate
    # (held-out cross-entropy 1.48-1.65 measured; 1.83-1.92 with 16 steps, over _learned's 1.8)
    x, y = datasets.teacher_data(1024 * n, seed=int(rng.integers(1e6)), teacher=teacher)
    stepped: list[float] = []  # what the learner's steps returned, when train uses make_step
    try:
        with watching(mirrored.make_train_step) as called, _recording_steps(train, stepped):
            result = train(strategy, x, y, 32 * n, epochs)
    except Exception as err:  # a learner's loop can fail in any way: say where to look
        return _raised(err, "your train")
    if called:
        return "write the step yourself: the course's own training step is not your answer"
    if not isinstance(result, tuple) or len(result) != 2:
        return "return two things: the trained model and the list of epoch losses"
    model, losses = result
    problem = _mirrored_model_problem(model, n, "the first thing returned should be the model")
    if problem:
        return problem
    losses = [float(v) for v in np.ravel(np.asarray(losses, dtype=float))]
    if len(losses) != epochs or not all(np.isfinite(losses)):
        return f"return one finite loss per epoch ({epochs} epochs asked), got {len(losses)}"
    if stepped and len(stepped) % epochs == 0 and all(np.isfinite(stepped)):
        means = np.mean(np.reshape(stepped, (epochs, -1)), axis=1)
        if not np.allclose(losses, means, rtol=1e-3, atol=1e-6):
            return (
                "the loss you return for an epoch is not the mean of the losses your steps "
                "returned during that epoch (the check recorded them): one step's loss, or "
                "their sum, is not the epoch's"
            )
    if not losses[-1] < losses[0]:
        return "the loss did not fall from the first epoch to the last: is the model trained?"
    return _loss_problem(model, x, y, losses[-1], bool(stepped)) or _learned(
        model, x.shape[1], teacher
    )


@contextmanager
def _recording_steps(train, stepped: list):
    """While ``train`` runs, the notebook's ``make_step`` (01.3, which train calls) makes steps
    whose returned losses are appended to ``stepped``; nothing is recorded if train does not
    use it."""
    given = getattr(train, "__globals__", {})
    original = given.get("make_step")
    if not callable(original):
        yield
        return

    def make_step(*args, **kwargs):
        step = original(*args, **kwargs)
        if not callable(step):
            return step

        def recorded(*a, **k):
            loss = step(*a, **k)
            try:
                stepped.append(float(loss))
            except (TypeError, ValueError):
                stepped.append(float("nan"))
            return loss

        return recorded

    given["make_step"] = make_step
    try:
        yield
    finally:
        given["make_step"] = original


def _loss_problem(model, x, y, last: float, averaged: bool):
    """The last epoch's mean loss, against the trained model's loss on the same examples:
    a little above it (it fell during the epoch), never twice it nor well below it.
    ``averaged``: the epoch losses are known to be the means of what the steps returned."""
    import tensorflow as tf

    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    final = float(loss(y, model(x)))
    if last < 0.75 * final:
        return (
            f"your last epoch's loss is {last / final:.2f} times the trained model's loss on "
            "the same examples, below what the model reaches: is each epoch's loss the mean "
            "of the losses its steps computed?"
        )
    if last > 1.6 * final:
        return (
            f"your last epoch's loss is {last / final:.2f} times the trained model's loss on "
            "the same examples: does each step train on a distributed dataset (each replica its "
            "own share of the global batch, not all of it), and does each replica scale its "
            "loss by the global batch?"
            + ("" if averaged else " And is each epoch's loss the mean of its steps' losses?")
        )
    return None


@exercise("01.5")
def trained_with_fit(fit, strategy):
    """fit(strategy, x, y) -> the seed's Keras model trained with fit() on every replica of
    ``strategy``, on fresh examples of a fresh task."""
    problem = _strategy_problem(strategy)
    if problem:
        return problem
    rng, n = np.random.default_rng(), strategy.num_replicas_in_sync
    teacher = int(rng.integers(1000))  # 1024 examples a replica: the seed's 64 each, 16 steps
    x, y = datasets.teacher_data(1024 * n, seed=int(rng.integers(1e6)), teacher=teacher)
    model = fit(strategy, x, y)
    problem = _mirrored_model_problem(model, strategy.num_replicas_in_sync, "return the model")
    if problem:
        return problem
    return _learned(model, x.shape[1], teacher)


def _mirrored_model_problem(model, replicas: int, not_a_model: str):
    """A hint when ``model`` is not a Keras model mirrored, identically, on ``replicas``."""
    variables = list(getattr(model, "trainable_variables", []))
    if not variables:
        return f"{not_a_model}: the trained Keras model"
    if any(mirrored.replica_count(v) != replicas for v in variables):
        return (
            f"the model's variables are not mirrored on the {replicas} replicas: "
            "where was it built?"
        )
    if mirrored.replica_divergence(variables) != 0.0:
        return "after training, the replicas' copies of the weights differ"
    return None


def _learned(model, features: int, teacher: int):
    """A hint unless the model's logits beat chance on held-out examples of its task."""
    import tensorflow as tf

    x, y = datasets.teacher_data(2048, features=features, seed=10**7, teacher=teacher)
    logits = model(x)
    accuracy = float(np.mean(np.argmax(np.asarray(logits), axis=1) == y))
    if accuracy <= 2 / 10:
        return (
            f"held-out accuracy {accuracy:.2f} is near chance: is the model trained, for as many "
            "epochs as asked?"
        )
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    # chance: ln 10 = 2.3; the seed's recipe 1.53-1.59, from_logits left out 2.03-2.28, and
    # 01.4's loop with Adam's default 1.48-1.65, from_logits left out 1.99-2.24 (measured)
    cross_entropy = float(loss(y, logits))
    if cross_entropy > 1.8:
        return (
            f"held-out accuracy {accuracy:.2f}, but the model's outputs are poor logits (their "
            f"cross-entropy {cross_entropy:.2f} is near chance, ln 10 = 2.30): was it trained "
            "for as many epochs as asked, does your loss read the model's outputs as logits, "
            "and does your optimizer's learning rate train in a few epochs (Adam's default does)?"
        )
    return None


@exercise("01.6")
def ring_megabytes(answer):
    """MB each of 8 GPUs sends per step to all-reduce 25,557,032 float32 gradients (ring)."""
    size = 25_557_032 * 4
    right = ring_allreduce_bytes(size, 8) / 1e6
    value = float(answer)
    if abs(value - right) <= 0.01 * right:
        return None
    if abs(value / 1e6 - right) <= 0.01 * right:
        return "that looks like bytes: give megabytes (1 MB = 10**6 bytes)"
    if abs(value - size / 1e6) <= 0.01 * right:
        return "that is one copy of the gradient; the ring has two phases"
    return "not quite: apply the ring model of section 5 to this gradient's size in bytes"


STRATEGY_NAMES = ("OneDevice", "Mirrored", "CentralStorage")
TOLERANCE = 1e-5


def _classes():
    import tensorflow as tf

    return {
        "OneDevice": tf.distribute.OneDeviceStrategy,
        "Mirrored": tf.distribute.MirroredStrategy,
        "CentralStorage": tf.distribute.experimental.CentralStorageStrategy,
    }


def _local_devices() -> int:
    import tensorflow as tf

    return len(tf.config.list_logical_devices("GPU")) or len(tf.config.list_logical_devices("CPU"))


def _first_device() -> str:
    import tensorflow as tf

    return (tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU"))[0].name


@exercise("01.7")
def strategies_built(answer, strategy):
    """answer: name -> strategy, for the three strategies of one machine; strategy: 01.1's
    MirroredStrategy, which "Mirrored" must be (a second one over the same devices clashes)."""
    if not isinstance(answer, dict) or set(answer) != set(STRATEGY_NAMES):
        return f"answer with a dict whose keys are exactly {', '.join(STRATEGY_NAMES)}"
    for name, cls in _classes().items():
        if answer[name] is ...:
            return f"{name} is still `...`: create that strategy"
        if not isinstance(answer[name], cls):
            return f"{name} is not the strategy its name says; look at tf.distribute's classes"
    if answer["Mirrored"] is not strategy:
        return (
            "Mirrored is a second MirroredStrategy: two of them over the same devices clash "
            "when both run collectives (lesson 01, section 1). Which one does this notebook have?"
        )
    if answer["OneDevice"].num_replicas_in_sync != 1:
        return "OneDevice should run exactly one replica"
    if _device_key(answer["OneDevice"].extended.worker_devices[0]) != _device_key(_first_device()):
        return "OneDevice should run on the first of the notebook's devices"
    for name in ("Mirrored", "CentralStorage"):
        if answer[name].num_replicas_in_sync != _local_devices():
            return f"{name} should use every device the setup cell created"
    return None


@exercise("01.8")
def strategies_trained(build_and_warm_up, results, models):
    """build_and_warm_up(strategy) -> the compiled model; results: name -> (weights, ms per
    step); models: strategy -> the model trained under it. Judged by the variables: the
    model's and its optimizer's, created by that strategy."""
    if not callable(build_and_warm_up):
        return "pass your function build_and_warm_up itself"
    if not isinstance(results, dict) or set(results) != set(STRATEGY_NAMES):
        return f"results needs exactly the keys {', '.join(STRATEGY_NAMES)}"
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


@before_running("01.8")
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
        if steps == 0:
            return (
                "the model your build_and_warm_up returned has taken no training step: the "
                "text asks it to run one warm-up epoch of fit before it returns"
            )
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


def _scopes_problem(models, count: int = len(STRATEGY_NAMES)):  # noqa: B008 - a constant
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


@exercise("01.9")
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
        unknown = set(answer) - set(STRATEGY_NAMES)
        if unknown:
            return f"these are not strategy names of this exercise: {sorted(unknown)}"
        within = _within_tolerance(trial)
        if "OneDevice" not in set(answer) and set(answer) | {"OneDevice"} == within:
            return (
                "your set leaves out OneDevice: the exercise asks for every name whose weights "
                "lie within 1e-5 of OneDevice's. How far are OneDevice's weights from themselves?"
            )
        if set(answer) != within:
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
    for name in rng.permutation([n for n in STRATEGY_NAMES if n != "OneDevice"]):
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
