"""Checks for lesson 05's exercises (model-parallel ResNet-101, pipeline bubbles).

Hints say what is wrong with the learner's split (placement, missing parameters, different
outputs), never where to cut.
"""

from __future__ import annotations

from ..checks import exercise
from ..measure import pipeline_bubble
from ..placement import compute_op_counts, short_device, variable_devices

#: ResNet-101 has 3 + 4 + 23 + 3 residual blocks.
RESNET101_BLOCKS = 33


@exercise("05.1")
def resnet101_split(stages, model):
    """stages: the placed pieces of ``model`` (a Keras ResNet-101), in order."""
    import numpy as np
    import tensorflow as tf

    if not hasattr(model, "layers") or not hasattr(model, "count_params"):
        return "pass the unsplit Keras ResNet-101 as the second argument of check()"
    n_blocks = sum(1 for layer in model.layers if layer.name.endswith("_out"))
    if n_blocks != RESNET101_BLOCKS:
        return f"the model has {n_blocks} residual blocks; ResNet-101 has {RESNET101_BLOCKS}"
    stages = list(stages)
    if len(stages) < 2:
        return "model parallelism needs at least two stages"
    if not all(hasattr(s, "device") and hasattr(s, "model") for s in stages):
        return "each stage needs a .device and a .model (split_model returns such stages)"
    devices = [short_device(tf.DeviceSpec.from_string(s.device).to_string()) for s in stages]
    if len(set(devices)) < len(devices):
        return "two stages share a device: give each stage its own"
    for i, stage in enumerate(stages):
        found = {d for _, _, d in variable_devices(stage.model)}
        if found != {devices[i]}:
            return (
                f"stage {i} should keep its variables on {devices[i]} but has them on "
                f"{sorted(found)}: build the stage inside its device scope"
            )
    if sum(int(s.model.count_params()) for s in stages) != model.count_params():
        return "the stages together do not hold exactly the model's parameters"
    shape = (2, *model.inputs[0].shape[1:])
    x = tf.random.stateless_normal(shape, seed=(5, 1))

    def split_forward(x):
        for stage in stages:
            x = stage(x, training=False)
        return x

    got, want = split_forward(x).numpy(), model(x, training=False).numpy()
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-5):
        return (
            "the split model's outputs differ from the model's on the same input: "
            "were the weights copied, and does each stage start where the previous one ends?"
        )
    ran = set(compute_op_counts(split_forward, x))
    if ran != set(devices):
        return (
            f"the forward pass computed on {sorted(ran)}, not on the stages' devices "
            f"{sorted(set(devices))}: call each stage inside its device scope"
        )
    return None


@exercise("05.2")
def micro_batches_for_bubble(answer):
    """The fewest micro-batches that keep a 4-stage pipeline idle at most 10 % of the time."""
    if isinstance(answer, bool) or not isinstance(answer, int) or answer < 1:
        return "answer with a whole number of micro-batches (at least 1)"
    bubble = pipeline_bubble(4, answer)
    if bubble > 0.10:
        return f"with {answer} micro-batches the bubble is still {bubble:.1%}: more are needed"
    if answer > 1 and pipeline_bubble(4, answer - 1) <= 0.10:
        return f"{answer} keeps the bubble under 10 %, but fewer would too"
    return None
