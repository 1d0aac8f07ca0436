"""Checks for lesson 03's exercises (model-parallel ResNet-101, pipeline bubbles).

03.1 runs the learner's own code: it reads where the stages' parameters live (each
variable's device), counts each stage's peak memory in a training step with lesson 00's
memory model (the cuts read from the names of the stages' last layers), runs the learner's
forward function once, eagerly, and reads which devices executed its ops (TensorFlow's run
metadata), compares its output with the unsplit model, runs one training step the same way,
compares the gradients each optimizer was given with one tape.gradient over the whole model,
reads which devices ran gradient kernels (Conv2DBackpropFilter, FusedBatchNormGradV3,
ReluGrad, ...: every stage's device, and no other) and where the optimizers keep their
variables (slots). Nothing is traced: a tf.function answer runs as its Python function, with
the same device scopes. 03.3 runs the learner's fill-drain schedule (GPipe's order, without its
recomputation) on a small two-stage model, on a fresh batch and number of micro-batches,
compares its gradients with one full-batch tape.gradient and reads the order of its forward
and backward passes. 03.4 steps the learner's 1F1B order through time steps, in plain
Python: every stage one step per time step, once what it needs is done (no TensorFlow), for
several numbers of stages and micro-batches, and compares its time steps with fill-drain's.
Hints say what is wrong, never where to cut or what to write.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from ..measuring.timing import pipeline_bubble
from ..runtime import validate
from ..topics import memory
from ..topics.placement import (
    PLUMBING_OPS,
    executed_nodes,
    op_devices,
    parameters_per_device,
    short_device,
)
from . import exercise

__all__ = []

#: ResNet-101 has 3 + 4 + 23 + 3 residual blocks.
RESNET101_BLOCKS = 33
#: "Balanced": the stage with the highest modelled peak holds at most this many times the mean.
BALANCE_TOLERANCE = 1.1
#: The training step whose memory the stages balance (modelled: nothing runs it), and its optimizer.
MEMORY_BATCH, MEMORY_OPTIMIZER = 64, "momentum"
KEYS = ("model", "stages", "optimizers", "forward", "train_step")
#: The kernels only a backward pass runs: Conv2DBackpropFilter, FusedBatchNormGradV3, ReluGrad...
GRADIENT_KERNEL = re.compile(r"Backprop|Grad(V\d)?$")


@exercise("03.1")
def resnet101_split(answer):
    """answer: dict(model=ResNet-101, stages=[placed Keras models], optimizers=[one per
    stage], forward=fn, train_step=fn)."""
    if not isinstance(answer, dict) or set(answer) != set(KEYS):
        return f"answer with a dict whose keys are exactly {', '.join(KEYS)}"
    model, stages = answer["model"], list(answer["stages"])
    hint = _check_model(model) or _check_parameters(model, stages) or _check_memory(model, stages)
    if hint:
        return hint
    return (  # cheapest first; the optimizers again after training (built lazily in the step?)
        _check_optimizers(stages, answer["optimizers"])
        or _check_forward(model, stages, answer["forward"])
        or _check_training(stages, answer["train_step"], model, answer["optimizers"])
        or _check_optimizers(stages, answer["optimizers"])
    )


def _check_model(model):
    if not hasattr(model, "layers") or not hasattr(model, "count_params"):
        return "answer['model'] should be the unsplit Keras ResNet-101"
    n_blocks = sum(1 for layer in model.layers if layer.name.endswith("_out"))
    if n_blocks != RESNET101_BLOCKS:
        return f"the model has {n_blocks} residual blocks; ResNet-101 has {RESNET101_BLOCKS}"
    return None


def _check_parameters(model, stages):
    if len(stages) < 2 or not all(hasattr(s, "weights") for s in stages):
        return "answer['stages'] should be a list of at least two Keras models (the stages)"
    stage_devices = []
    for i, stage in enumerate(stages):
        found = parameters_per_device(stage.weights)
        if len(found) != 1:
            return (
                f"stage {i} has parameters on {sorted(found)}: a stage's variables should all "
                "be created on its own device (where is the stage built?)"
            )
        stage_devices.append(next(iter(found)))
    if len(set(stage_devices)) < len(stages):
        return f"two stages share a device ({stage_devices}): give each stage its own"
    per_device = parameters_per_device([v for s in stages for v in s.weights])
    total = int(model.count_params())
    if sum(per_device.values()) != total:
        return "the stages together do not hold exactly the model's parameters"
    return None


def _check_memory(model, stages):
    """Each stage's modelled peak in a training step of MEMORY_BATCH images; the cuts are read
    from the names of the stages' last layers (clone_model keeps the model's names)."""
    names = {layer.name for layer in model.layers}
    cuts = [stage.layers[-1].name for stage in stages[:-1]]
    if not all(cut in names for cut in cuts):
        return (
            f"the stages end at layers {cuts}, not all of them the model's: cut the model "
            "itself, at block outputs, and copy each segment (keras.models.clone_model)"
        )
    try:
        peaks = [
            f.total
            for f in memory.pipeline(
                memory.profile(model), cuts, MEMORY_BATCH, optimizer=MEMORY_OPTIMIZER
            )
        ]
    except ValueError:
        return f"the stages end at {cuts}: cut at distinct block outputs, in the model's order"
    mean = sum(peaks) / len(peaks)
    fullest = max(range(len(peaks)), key=peaks.__getitem__)
    if peaks[fullest] > BALANCE_TOLERANCE * mean:
        return (
            f"in a training step of {MEMORY_BATCH} images, stage {fullest}'s modelled peak is "
            f"{peaks[fullest] / mean:.2f} times the mean stage's (at most {BALANCE_TOLERANCE} "
            "is balanced): what does a stage hold besides its parameters? Move the cuts"
        )
    return None


def _check_forward(model, stages, forward):
    import numpy as np
    import tensorflow as tf

    x = tf.random.stateless_normal((2, *model.inputs[0].shape[1:]), seed=(5, 1))
    out, nodes = _eager_run(forward, x)
    got, want = np.asarray(out), model(x, training=False).numpy()
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-5):
        return (
            "forward(x) differs from the model's output on the same input: were the weights "
            "copied, does each stage start where the previous one ends, and is BatchNorm in "
            "inference mode (training=False)?"
        )
    stage_devices = {next(iter(parameters_per_device(s.weights))) for s in stages}
    ran = {device for op, device in nodes if op not in PLUMBING_OPS}
    if ran != stage_devices:
        return (
            f"forward(x) computed on {sorted(ran)}, but the stages live on "
            f"{sorted(stage_devices)}: call each stage inside its device scope"
        )
    return None


def _check_training(stages, train_step, model, optimizers):
    import numpy as np
    import tensorflow as tf

    x = tf.random.stateless_normal((4, *model.inputs[0].shape[1:]), seed=(6, 2))
    y = tf.constant([0, 1, 2, 3])
    before = [[v.numpy() for v in s.trainable_variables] for s in stages]
    want_loss, want = _one_device_gradients(stages, x, y)
    loss, got, nodes = _recorded_step(stages, optimizers, train_step, x, y)
    if not np.isfinite(loss):
        return f"train_step returned a loss of {loss}"
    for i, (stage, old) in enumerate(zip(stages, before, strict=True)):
        pairs = zip(stage.trainable_variables, old, strict=True)
        if all(np.array_equal(v.numpy(), o) for v, o in pairs):
            return f"after train_step, stage {i}'s weights did not change: is it updated?"
    if abs(loss - want_loss) > 1e-3 * max(1.0, abs(want_loss)):
        return (
            f"train_step returned {loss:.4f}, the mean sparse cross-entropy of the model's "
            f"outputs on that batch is {want_loss:.4f}: which loss does it compute?"
        )
    hint = _gradients_problem(stages, got, want)
    if hint:
        return hint
    stage_devices = {next(iter(parameters_per_device(s.weights))) for s in stages}
    return _backward_devices_problem(nodes, stage_devices)


def _one_device_gradients(stages, x, y):
    """The loss and each stage's gradients of the whole model on one device (the default),
    one tape over all stages; the stages' weights (BatchNorm's statistics too) are put back."""
    import keras
    import tensorflow as tf

    saved = [s.get_weights() for s in stages]
    try:
        with tf.GradientTape() as tape:
            h = x
            for stage in stages:
                h = stage(h, training=True)
            loss = keras.losses.SparseCategoricalCrossentropy()(y, h)
        grads = tape.gradient(loss, [s.trainable_variables for s in stages])
    finally:
        for stage, weights in zip(stages, saved, strict=True):
            stage.set_weights(weights)
    return float(loss), [[np.asarray(g) for g in gs] for gs in grads]


def _recorded_step(stages, optimizers, train_step, x, y):
    """Run train_step once, eagerly, recording the gradients ``optimizers`` were given (by the
    id of their variable): (its loss, each stage's gradients, None where none was given, the
    kernels it ran as in :func:`_eager_run`)."""
    seen: dict[int, np.ndarray] = {}
    originals = []

    def recording(apply):
        def apply_and_record(grads, trainable_variables=None, *args, **kwargs):
            grads = list(grads)
            variables = list(trainable_variables) if trainable_variables is not None else []
            for g, v in zip(grads, variables, strict=False):
                if g is not None:
                    seen[id(v)] = np.asarray(g)
            return apply(grads, variables or trainable_variables, *args, **kwargs)

        return apply_and_record

    for optimizer in {id(o): o for o in optimizers}.values():
        originals.append((optimizer, optimizer.__dict__.get("apply")))
        optimizer.apply = recording(optimizer.apply)
    try:
        loss, nodes = _eager_run(train_step, x, y)
        loss = float(loss)
    finally:
        for optimizer, before in originals:
            if before is None:
                del optimizer.apply
            else:
                optimizer.apply = before
    got = [[seen.get(id(v)) for v in s.trainable_variables] for s in stages]
    return loss, got, nodes


def _gradients_problem(stages, got, want):
    for i, (gs, ws) in enumerate(zip(got, want, strict=True)):
        if any(g is None for g in gs):
            return (
                f"stage {i}'s optimizer was not given a gradient for each of its trainable "
                "variables: apply every stage's gradients with its own optimizer"
            )
        diff = np.sqrt(sum(float(np.sum((g - w) ** 2)) for g, w in zip(gs, ws, strict=True)))
        size = np.sqrt(sum(float(np.sum(w**2)) for w in ws))
        if diff > 1e-3 * size:
            return (
                f"stage {i}'s gradients differ from one device's (one tape over the whole "
                f"model) by {diff / size:.0%}: what does its backward pass start from?"
            )
    return None


def _eager_run(fn, *args):
    """Call fn once, eagerly (a tf.function as its Python function: no tracing), and return
    (its result, [(op type, short device) of the kernels it ran]). The kernel cache is emptied
    first: TensorFlow records an eager op's kernel when it makes one, so every (type, device)
    that ran is listed, at least once; how many times each ran is not."""
    from tensorflow.python.eager import context

    fn, result = getattr(fn, "python_function", fn), []

    def run():
        context.context().clear_kernel_cache()
        result.append(fn(*args))

    nodes = executed_nodes(run)
    return result[0], [(n.op, short_device(n.device)) for n in nodes]


def _backward_devices_problem(nodes, stage_devices):
    """A hint unless gradient kernels ran on every stage's device and on no other."""
    ran = {device for op, device in nodes if GRADIENT_KERNEL.search(op)}
    elsewhere = sorted(ran - stage_devices)
    if elsewhere:
        return (
            f"train_step computed gradients on {elsewhere}, where no stage lives: where do the "
            "backward pass and the update of each stage run?"
        )
    missing = sorted(stage_devices - ran)
    if missing:
        return (
            f"the backward pass of the stage on {missing[0]} ran on {', '.join(sorted(ran))}: each "
            "stage's backward pass belongs on its own device, where is yours computed?"
        )
    return None


def _check_optimizers(stages, optimizers):
    optimizers = list(optimizers) if isinstance(optimizers, list | tuple) else [optimizers]
    if not optimizers or not all(hasattr(o, "variables") for o in optimizers):
        return "answer['optimizers'] should be the list of your stages' Keras optimizers"
    stage_devices = {next(iter(parameters_per_device(s.weights))) for s in stages}
    kept = parameters_per_device([v for o in optimizers for v in o.variables])
    elsewhere = sorted(set(kept) - stage_devices)
    if elsewhere:
        return (
            f"your optimizers keep variables (step counts or slots) on {elsewhere}, where no "
            "stage lives: where and when is each optimizer built?"
        )
    return None


@exercise("03.2")
def micro_batches_for_bubble(answer):
    """The fewest micro-batches that keep a 4-stage pipeline idle at most 10 % of the time."""
    if not validate.is_whole_number(answer) or answer < 1:
        return "answer with a whole number of micro-batches (at least 1)"
    bubble = pipeline_bubble(4, answer)
    if bubble > 0.10:
        return f"with {answer} micro-batches the bubble is still {bubble:.1%}: more are needed"
    if answer > 1 and pipeline_bubble(4, answer - 1) <= 0.10:
        return f"{answer} keeps the bubble under 10 %, but fewer would too"
    return None


class _CountingStage:
    """A stage for 03.3: a Keras model that logs each forward call ("F", its batch size) and
    each backward pass through its output ("B"), in the order they ran, in ``log``."""

    def __init__(self, model, log: list):
        self.model, self.log = model, log

    @property
    def calls(self) -> list[int]:
        return [size for kind, stage, size in self.log if kind == "F" and stage is self]

    @property
    def trainable_variables(self):
        return self.model.trainable_variables

    def __call__(self, x, training=False):
        import tensorflow as tf

        self.log.append(("F", self, int(x.shape[0])))

        @tf.custom_gradient
        def logged(y):
            def backward(dy):
                self.log.append(("B", self, int(dy.shape[0])))
                return dy

            return tf.identity(y), backward

        return logged(self.model(x, training=training))


@exercise("03.3")
def fill_drain_schedule(fill_drain_gradients, devices):
    """fill_drain_gradients(stages, devices, x, y, m) -> each stage's gradients, summed over the
    m micro-batches, of the mean loss over the whole batch (fill-drain: all F, then all B). Run
    with a fresh batch and m; judged by the gradients, the order of the forward and backward
    passes, and where the matrix products ran."""
    import numpy as np

    devices = list(devices)
    if len(devices) < 2:
        return "pass at least two devices for the two stages (the lesson's DEVICES)"
    rng = np.random.default_rng()
    for m in rng.permutation([2, 4]):  # both: an m written into the answer fits one at most
        problem = _fill_drain_problem(fill_drain_gradients, devices, rng, int(m))
        if problem:
            return problem
    return None


def _fill_drain_problem(fill_drain_gradients, devices, rng, m):
    """What is wrong with one fill-drain step of ``m`` micro-batches on a fresh batch, or None."""
    import keras
    import tensorflow as tf

    size = int(rng.integers(2, 4))
    log: list = []
    stages = _two_stages(devices[:2], log)
    x = tf.constant(rng.standard_normal((m * size, 8)), tf.float32)
    y = tf.constant(rng.integers(0, 5, m * size), tf.int32)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        loss = loss_fn(y, stages[1].model(stages[0].model(x)))
    want = tape.gradient(loss, [s.trainable_variables for s in stages])
    got = fill_drain_gradients(stages, devices[:2], x, y, m)
    sizes = [s.calls for s in stages]
    if sizes != [[size] * m, [size] * m]:
        return (
            f"the stages saw batches of {sizes[0]} and {sizes[1]} examples; with m={m} and "
            f"{m * size} examples each stage should run {m} micro-batches of {size}"
        )
    hint = _compare_gradients(got, want, m) or _schedule_problem(log)
    if hint:
        return hint
    ran = op_devices(fill_drain_gradients, stages, devices[:2], x, y, m)
    matmuls = {device for op, device in ran if "MatMul" in op}  # forward and backward alike
    wanted = {next(iter(parameters_per_device(s.model.weights))) for s in stages}
    if matmuls != wanted:
        return (
            f"your schedule multiplied matrices on {sorted(matmuls)}, but the stages live on "
            f"{sorted(wanted)}: where do the forward and the backward passes run?"
        )
    return None


def _schedule_problem(log: list):
    """Fill-drain runs every forward pass before the first backward pass."""
    order = "".join(kind for kind, _, _ in log)
    if "BF" in order:
        return (
            "a backward pass ran before every forward pass had: in fill-drain, when does the first "
            "backward pass start?"
        )
    return None


def _two_stages(devices, log: list):
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(7)
    stages = []
    for device, (inputs, width) in zip(devices, ((8, 16), (16, 5)), strict=True):
        with tf.device(device):
            stage = keras.Sequential([keras.layers.Dense(width, activation="tanh")])
            stage.build((None, inputs))
        stages.append(_CountingStage(stage, log))
    return stages


def _compare_gradients(got, want, m: int):
    import numpy as np

    try:
        got = [[np.asarray(g) for g in stage] for stage in got]
        pairs = [
            (g, w.numpy())
            for gs, ws in zip(got, want, strict=True)
            for g, w in zip(gs, ws, strict=True)
        ]
    except (TypeError, ValueError):
        return "return one list per stage, each with a gradient for every trainable variable"
    if any(g.shape != w.shape for g, w in pairs):
        return "return one list per stage, the gradients in the order of trainable_variables"
    if all(np.allclose(g, m * w, rtol=1e-4, atol=1e-6) for g, w in pairs):
        return "your gradients are m times the full-batch ones: what does each micro-batch weigh?"
    last = [(g, w.numpy()) for g, w in zip(got[-1], want[-1], strict=True)]
    if not all(np.allclose(g, w, rtol=1e-4, atol=1e-6) for g, w in last):
        return (
            "the last stage's gradients already differ from one full-batch tape.gradient, "
            "before any gradient passes between stages: does your loss read the last stage's "
            "outputs as logits, and does each micro-batch weigh its share of the whole batch?"
        )
    if not all(np.allclose(g, w, rtol=1e-4, atol=1e-6) for g, w in pairs):
        return (
            "your gradients differ from one full-batch tape.gradient: does each stage's "
            "backward pass receive the gradient of its output?"
        )
    return None


#: (stages k, micro-batches m): fewer micro-batches than stages, one micro-batch, more; with
#: one drawn at random, no list written for a few of them fits.
SCHEDULE_CASES = ((2, 1), (4, 3), (4, 8), (3, 5), (5, 7), (6, 2), (6, 10))
_PASS = {"F": "forward", "B": "backward"}


@exercise("03.4")
def one_f_one_b_schedule(schedule):
    """schedule(k, m) -> per stage, its steps in order: ("F", i) and ("B", i). Run for several
    k and m, a time step at a time (no TensorFlow): judged by the steps each stage runs,
    stalls, the micro-batches each stage keeps alive and the time steps taken."""
    if not callable(schedule):
        return "pass your function itself, one_f_one_b, not a schedule it returned"
    rng = np.random.default_rng()
    drawn = (int(rng.integers(2, 8)), int(rng.integers(1, 13)))
    for k, m in (*SCHEDULE_CASES, drawn):
        hint = _one_f_one_b_problem(schedule, k, m)
        if hint:
            return hint
    return None


def _one_f_one_b_problem(schedule, k: int, m: int):
    try:
        returned = schedule(k, m)
    except Exception as err:  # a learner's function can fail in any way; say how
        return f"one_f_one_b({k}, {m}) raised {type(err).__name__}: {err}"
    try:
        orders = [[(str(kind), int(i)) for kind, i in stage] for stage in returned]
    except (TypeError, ValueError):
        return 'return one list per stage, each of its steps a pair ("F", i) or ("B", i)'
    where = f"with k={k} and m={m}"
    if len(orders) != k:
        return f"{where} your function returned {len(orders)} lists: one per stage, please"
    hint = _steps_problem(orders, m, where)
    if hint:
        return hint
    steps, peaks = _run_steps(orders)
    if steps is None:
        waiting = ", ".join(f"stage {s} at {kind}{i}" for s, kind, i in peaks)
        return (
            f"{where} the pipeline stalls ({waiting}): each stage waits for a step that "
            "another stage's list puts later"
        )
    for s, peak in enumerate(peaks):
        if peak > k - s:
            return (
                f"{where} stage {s} keeps {peak} micro-batches alive at once (forward pass "
                f"done, backward pass not yet); 1F1B keeps at most K - s = {k - s} there: "
                "when does its first backward pass come?"
            )
    fill_drain = [[("F", i) for i in range(m)] + [("B", i) for i in range(m)]] * k
    slowest, _ = _run_steps(fill_drain)
    if steps > slowest:
        return (
            f"{where} your schedule takes {steps} time steps, fill-drain {slowest}: 1F1B "
            "keeps less alive in the same time. Which stage waits when it could work?"
        )
    return None


def _steps_problem(orders, m: int, where: str):
    """Each stage runs each micro-batch's forward pass once, then its backward pass once."""
    for s, order in enumerate(orders):
        kinds = {kind for kind, _ in order} - set(_PASS)
        if kinds:
            return f'the steps are ("F", i) and ("B", i); stage {s} has {sorted(map(str, kinds))}'
        for kind, name in _PASS.items():
            count = Counter(i for step, i in order if step == kind)
            unknown = sorted(set(count) - set(range(m)))
            if unknown:
                return (
                    f"{where} stage {s} runs micro-batch {unknown[0]}: the micro-batches are "
                    f"0 to {m - 1}"
                )
            for i in range(m):
                if count[i] != 1:
                    times = f"{count[i]} times" if count[i] else "never"
                    return (
                        f"{where} stage {s} runs the {name} pass of micro-batch {i} {times}: "
                        "each stage runs every micro-batch's forward and backward pass once"
                    )
        for i in range(m):
            if order.index(("B", i)) < order.index(("F", i)):
                return f"{where} stage {s} runs micro-batch {i}'s backward pass before its forward"
    return None


def _run_steps(orders):
    """Step the stages through their orders, all at once, one step per stage and time step: a
    stage takes its next step once what it needs was done in an earlier time step (F of i on
    stage s after F of i on s - 1; B of i after F of i on s and B of i on s + 1). Returns
    (time steps, each stage's peak of micro-batches alive), or (None, the waiting steps)."""
    k = len(orders)
    done: set = set()
    position, alive, peaks, steps = [0] * k, [0] * k, [0] * k, 0
    while any(p < len(order) for p, order in zip(position, orders, strict=True)):
        moving = []
        for s in range(k):
            if position[s] == len(orders[s]):
                continue
            kind, i = orders[s][position[s]]
            if kind == "F":
                needs = [("F", s - 1, i)] if s > 0 else []
            else:
                needs = [("F", s, i)] + ([("B", s + 1, i)] if s < k - 1 else [])
            if all(need in done for need in needs):
                moving.append((kind, s, i))
        if not moving:
            return None, [(s, *orders[s][p]) for s, p in enumerate(position) if p < len(orders[s])]
        for kind, s, i in moving:
            done.add((kind, s, i))
            position[s] += 1
            alive[s] += 1 if kind == "F" else -1
            peaks[s] = max(peaks[s], alive[s])
        steps += 1
    return steps, peaks
