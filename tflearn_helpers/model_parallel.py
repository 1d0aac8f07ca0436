"""Model parallelism plumbing: where to cut a Keras functional model (taught in lesson 05).

``segment_models`` cuts a functional model (e.g. ResNet-50/101 from ``keras.applications``)
at named layers such as ``"conv3_block1_out"`` into unplaced sub-models; ``time_segments``
and ``balance`` pick cuts that even out a per-segment cost (parameters or measured time);
``activation_bytes`` sizes what a stage sends on and keeps. Placing the stages on devices and
the pipeline schedules are the lesson's own code.
"""

from __future__ import annotations

import re
from itertools import pairwise

__all__ = [
    "activation_bytes",
    "balance",
    "block_boundaries",
    "group_sums",
    "segment_models",
    "time_segments",
]

_BLOCK_OUT = re.compile(r"^conv\d+_block\d+_out$")


def block_boundaries(model) -> list[str]:
    """The names of a Keras ResNet's block outputs (``conv2_block1_out`` ...), in order."""
    names = [layer.name for layer in model.layers if _BLOCK_OUT.match(layer.name)]
    if not names:
        raise ValueError(f"model {model.name!r} has no layers named like 'conv3_block1_out'")
    return names


def segment_models(model, cuts: list[str]) -> list:
    """Unplaced sub-models between consecutive cuts (sharing ``model``'s layers and weights):
    to measure what each segment costs, and to place as stages (lesson 05 clones each one
    inside its device scope). Each cut must be a layer whose output is the only tensor later
    layers need (a block output in ResNet); anything else is refused with a clear error."""
    import keras

    cuts = list(cuts)
    order = {layer.name: i for i, layer in enumerate(model.layers)}
    missing = [c for c in cuts if c not in order]
    if missing:
        hint = ", ".join(n for n in order if _BLOCK_OUT.match(n))[:200]
        raise ValueError(f"no layer named {missing} in {model.name!r}; cut candidates: {hint}")
    if [order[c] for c in cuts] != sorted(order[c] for c in cuts) or len(set(cuts)) < len(cuts):
        raise ValueError(f"cuts must be distinct and in the model's layer order, got {cuts}")
    ends = [model.get_layer(c).output for c in cuts] + list(model.outputs)
    starts = list(model.inputs) + ends[:-1]
    segments = []
    for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
        try:
            segments.append(keras.Model(start, end))
        except ValueError as err:
            raise ValueError(
                f"cannot cut at {cuts[i - 1] if i else 'the input'!r} -> "
                f"{cuts[i] if i < len(cuts) else 'the output'!r}: layers after the cut need "
                f"other tensors too, so it is not a clean cut ({err})"
            ) from None
    return segments


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
