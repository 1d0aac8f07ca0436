"""Model parallelism plumbing: where to cut a Keras functional model (taught in lesson 03).

``segment_models`` cuts a functional model (e.g. ResNet-50/101 from ``keras.applications``)
at named layers such as ``"conv3_block1_out"`` into unplaced sub-models; ``balance`` picks
cuts that even out a per-segment cost (parameters or measured time) for exercises, benchmarks
and the memory planner. Lesson 03 writes its own timing and balancing,
the placement of the stages on devices and the pipeline schedules.
"""

from __future__ import annotations

import re

from ..taught.lesson03 import segment_models

__all__ = [
    "balance",
    "block_boundaries",
    "segment_models",
]

_BLOCK_OUT = re.compile(r"^conv\d+_block\d+_out$")


def block_boundaries(model) -> list[str]:
    """The names of a Keras ResNet's block outputs (``conv2_block1_out`` ...), in order."""
    names = [layer.name for layer in model.layers if _BLOCK_OUT.match(layer.name)]
    if not names:
        raise ValueError(f"model {model.name!r} has no layers named like 'conv3_block1_out'")
    return names


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
