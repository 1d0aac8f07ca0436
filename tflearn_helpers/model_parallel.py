"""Model parallelism: split a Keras functional model into placed stages (taught in lesson 05).

``split_model`` cuts a functional model (e.g. ResNet-50/101 from ``keras.applications``)
at named layers such as ``"conv3_block1_out"``. Each stage is a new functional model whose
variables are created inside its ``tf.device`` scope (a copy of the source weights), and
which is always called inside that scope. ``balance`` picks cuts that even out a per-segment
cost (parameters or measured time). The pipelined training step is in ``pipeline.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise

_BLOCK_OUT = re.compile(r"^conv\d+_block\d+_out$")


@dataclass
class Stage:
    """One placed piece of a split model; ``source_variables`` are the matching variables
    of the unsplit model (same order as ``model.trainable_variables``)."""

    index: int
    device: str
    model: object
    last_layer: str
    source_variables: list = field(repr=False, default_factory=list)

    def __call__(self, x, training=False):
        import tensorflow as tf

        with tf.device(self.device):
            return self.model(x, training=training)

    @property
    def trainable_variables(self):
        return self.model.trainable_variables

    def count_params(self) -> int:
        return int(sum(v.numpy().size for v in self.model.weights))

    def activation_bytes(self, batch: int) -> tuple[int, int]:
        """(bytes of the stage's output, bytes of all its layers' outputs) for ``batch``
        inputs in float32: what it sends on, and what its backward pass must keep."""
        return activation_bytes(self.model, batch)


def block_boundaries(model) -> list[str]:
    """The names of a Keras ResNet's block outputs (``conv2_block1_out`` ...), in order."""
    names = [layer.name for layer in model.layers if _BLOCK_OUT.match(layer.name)]
    if not names:
        raise ValueError(f"model {model.name!r} has no layers named like 'conv3_block1_out'")
    return names


def split_model(model, cuts: list[str], devices: list[str]) -> list[Stage]:
    """Split ``model`` after each layer named in ``cuts``; stage i lives on ``devices[i]``.

    Each cut must be a layer whose output is the only tensor that later layers need
    (a block output in ResNet). Weights are copied, so the split model starts equal to
    ``model``.
    """
    import keras
    import tensorflow as tf

    cuts = list(cuts)
    if len(cuts) + 1 > len(devices):
        raise ValueError(
            f"{len(cuts) + 1} stages need {len(cuts) + 1} devices, got {len(devices)}: "
            f"{list(devices)}"
        )
    order = {layer.name: i for i, layer in enumerate(model.layers)}
    missing = [c for c in cuts if c not in order]
    if missing:
        hint = ", ".join(n for n in order if _BLOCK_OUT.match(n))[:200]
        raise ValueError(f"no layer named {missing} in {model.name!r}; cut candidates: {hint}")
    if [order[c] for c in cuts] != sorted(order[c] for c in cuts) or len(set(cuts)) < len(cuts):
        raise ValueError(f"cuts must be distinct and in the model's layer order, got {cuts}")
    ends = [model.get_layer(c).output for c in cuts] + list(model.outputs)
    starts = list(model.inputs) + ends[:-1]
    stages = []
    for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
        try:
            piece = keras.Model(start, end)
        except ValueError as err:
            raise ValueError(
                f"cannot cut at {cuts[i - 1] if i else 'the input'!r} -> "
                f"{cuts[i] if i < len(cuts) else 'the output'!r}: layers after the cut need "
                f"other tensors too, so it is not a clean cut ({err})"
            ) from None
        with tf.device(devices[i]):
            placed = keras.models.clone_model(piece)  # variables created here, on devices[i]
        placed.set_weights(piece.get_weights())
        last = (cuts + [model.layers[-1].name])[i]
        stages.append(Stage(i, devices[i], placed, last, piece.trainable_variables))
    return stages


def segment_models(model, cuts: list[str]) -> list:
    """Unplaced sub-models between consecutive cuts (sharing ``model``'s layers and weights),
    for measuring what each segment costs before deciding where to split."""
    import keras

    ends = [model.get_layer(c).output for c in cuts] + list(model.outputs)
    starts = list(model.inputs) + ends[:-1]
    return [keras.Model(s, e) for s, e in zip(starts, ends, strict=True)]


def time_segments(segments, x, steps: int = 3) -> list[float]:
    """Median forward time (seconds, traced, inference mode) of each segment, feeding each
    the previous one's output; a cost to ``balance`` by."""
    import tensorflow as tf

    from .measure import time_steps

    seconds = []
    for segment in segments:
        forward = tf.function(lambda a, segment=segment: segment(a, training=False))
        seconds.append(time_steps(lambda f=forward, a=x: f(a), steps=steps).median)
        x = forward(x)
    return seconds


def balance(costs: list[float], stages: int) -> list[int]:
    """Split a sequence of segment costs into ``stages`` contiguous groups so that the
    largest group is as small as possible; returns the index of each group's last segment
    (except the final group's), i.e. which segment boundaries to cut at."""
    n = len(costs)
    if stages < 1 or stages > n:
        raise ValueError(f"cannot make {stages} stages out of {n} segments")
    if any(c < 0 for c in costs):
        raise ValueError("segment costs must be >= 0")
    prefix = [0.0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    inf = float("inf")
    # best[k][j]: smallest possible max-group cost of the first j segments in k groups
    best = [[inf] * (n + 1) for _ in range(stages + 1)]
    cut = [[0] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0.0
    for k in range(1, stages + 1):
        for j in range(k, n + 1):
            for i in range(k - 1, j):
                worst = max(best[k - 1][i], prefix[j] - prefix[i])
                if worst < best[k][j]:
                    best[k][j], cut[k][j] = worst, i
    bounds, j = [], n
    for k in range(stages, 0, -1):
        j = cut[k][j]
        bounds.append(j)
    return [b - 1 for b in reversed(bounds[:-1])]


def group_sums(costs: list[float], last_segments: list[int]) -> list[float]:
    """The total cost of each group given by ``balance``'s result."""
    edges = [-1] + list(last_segments) + [len(costs) - 1]
    return [sum(costs[a + 1 : b + 1]) for a, b in pairwise(edges)]


def activation_bytes(model, batch: int) -> tuple[int, int]:
    """(bytes of a functional model's output, bytes of all its layers' outputs) for ``batch``
    float32 inputs: what a stage sends on, and what its backward pass must keep."""
    out = _tensor_bytes(model.outputs[0].shape, batch)
    kept = sum(_tensor_bytes(layer.output.shape, batch) for layer in model.layers[1:])
    return out, kept


def _tensor_bytes(shape, batch: int) -> int:
    size = batch
    for d in shape[1:]:
        size *= int(d)
    return 4 * size
