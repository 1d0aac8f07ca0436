"""Checks for lesson 05's exercises (model-parallel ResNet-101, pipeline bubbles).

05.1 runs the learner's own code: it reads where the stages' parameters live (each
variable's device), runs the learner's forward function and reads which devices executed
its ops (the per-device graphs TensorFlow ran), compares its output with the unsplit
model, and runs one training step. Hints say what is wrong, never where to cut.
"""

from __future__ import annotations

from .. import validate
from ..checks import exercise
from ..measure import pipeline_bubble
from ..placement import compute_op_counts, parameters_per_device

__all__ = [
    "BALANCE_TOLERANCE",
    "KEYS",
    "RESNET101_BLOCKS",
    "micro_batches_for_bubble",
    "resnet101_split",
]

#: ResNet-101 has 3 + 4 + 23 + 3 residual blocks.
RESNET101_BLOCKS = 33
#: "Balanced": the fullest device holds at most this many times an equal share of parameters.
BALANCE_TOLERANCE = 1.25
KEYS = ("model", "stages", "forward", "train_step")


@exercise("05.1")
def resnet101_split(answer):
    """answer: dict(model=ResNet-101, stages=[placed Keras models], forward=fn, train_step=fn)."""
    if not isinstance(answer, dict) or set(answer) != set(KEYS):
        return f"answer with a dict whose keys are exactly {', '.join(KEYS)}"
    model, stages = answer["model"], list(answer["stages"])
    hint = _check_model(model) or _check_parameters(model, stages)
    if hint:
        return hint
    return _check_forward(model, stages, answer["forward"]) or _check_training(
        stages, answer["train_step"], model
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
    fullest, share = max(per_device.values()), total / len(stages)
    if fullest > BALANCE_TOLERANCE * share:
        return (
            f"the fullest device holds {fullest / share:.2f} times an equal share of the "
            f"parameters (at most {BALANCE_TOLERANCE} is balanced): move the cuts"
        )
    return None


def _check_forward(model, stages, forward):
    import numpy as np
    import tensorflow as tf

    x = tf.random.stateless_normal((2, *model.inputs[0].shape[1:]), seed=(5, 1))
    got, want = np.asarray(forward(x)), model(x, training=False).numpy()
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-5):
        return (
            "forward(x) differs from the model's output on the same input: were the weights "
            "copied, does each stage start where the previous one ends, and is BatchNorm in "
            "inference mode (training=False)?"
        )
    stage_devices = {next(iter(parameters_per_device(s.weights))) for s in stages}
    ran = set(compute_op_counts(forward, x))
    if ran != stage_devices:
        return (
            f"forward(x) computed on {sorted(ran)}, but the stages live on "
            f"{sorted(stage_devices)}: call each stage inside its device scope"
        )
    return None


def _check_training(stages, train_step, model):
    import numpy as np
    import tensorflow as tf

    x = tf.random.stateless_normal((4, *model.inputs[0].shape[1:]), seed=(6, 2))
    y = tf.constant([0, 1, 2, 3])
    before = [[v.numpy() for v in s.trainable_variables] for s in stages]
    loss = float(train_step(x, y))
    if not np.isfinite(loss):
        return f"train_step returned a loss of {loss}"
    for i, (stage, old) in enumerate(zip(stages, before, strict=True)):
        pairs = zip(stage.trainable_variables, old, strict=True)
        if all(np.array_equal(v.numpy(), o) for v, o in pairs):
            return f"after train_step, stage {i}'s weights did not change: is it updated?"
    return None


@exercise("05.2")
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
