"""Model parallelism plumbing: where to cut a Keras functional model (taught in lesson 03).

``segment_models`` cuts a functional model (e.g. ResNet-50/101 from ``keras.applications``)
at named layers such as ``"conv3_block1_out"`` into unplaced sub-models; ``time_segments``
and ``balance`` pick cuts that even out a per-segment cost (parameters or measured time) for
exercises, benchmarks and the memory planner. Lesson 03 writes its own timing and balancing,
the placement of the stages on devices and the pipeline schedules.
"""

from __future__ import annotations

import re

__all__ = [
    "balance",
    "block_boundaries",
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


def segment_models(model, cuts):
    """The sub-models between consecutive cut layers: from the input to the first cut's output,
    from there to the next, ..., from the last cut to the model's output. Unplaced; they share
    the model's layers and weights. Defined in lesson 03 (notebooks/03_resnet50_model_parallel
    .ipynb, section 3), which explains it; exercises and benchmarks reuse it from here, with
    clear errors for cuts that are not layers of the model or not in its order.
    tests/test_model_parallel.py checks that this is the lesson's code (argument checks aside).
    A cut that is not clean (later layers need other tensors too: inside a ResNet block) makes
    ``keras.Model`` raise."""
    import keras

    _check_cuts(model, cuts)
    ends = [model.get_layer(c).output for c in cuts] + list(model.outputs)
    starts = list(model.inputs) + ends[:-1]
    return [keras.Model(start, end) for start, end in zip(starts, ends, strict=True)]


def _check_cuts(model, cuts) -> None:
    if not all(isinstance(c, str) for c in cuts) or not hasattr(model, "get_layer"):
        raise TypeError("pass a Keras functional model and a list of layer names to cut after")
    order = {layer.name: i for i, layer in enumerate(model.layers)}
    if any(c not in order for c in cuts):
        raise ValueError(
            f"no layer named {[c for c in cuts if c not in order]} in {model.name!r}; cut "
            f"candidates: {', '.join(n for n in order if _BLOCK_OUT.match(n))[:200]}"
        )
    if [order[c] for c in cuts] != sorted(order[c] for c in cuts) or len(set(cuts)) < len(cuts):
        raise ValueError(f"cuts must be distinct and in the model's layer order, got {list(cuts)}")


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
