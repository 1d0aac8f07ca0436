"""Model parallelism plumbing: where to cut a Keras functional model (taught in lesson 03).

``segment_models`` cuts a functional model (e.g. ResNet-50/101 from ``keras.applications``)
at named layers such as ``"conv3_block1_out"`` into unplaced sub-models; lesson 03's ``balance``
(every way to cut tried) picks cuts that even out a per-segment cost (parameters or measured
time) for the benchmarks and the memory planner. Lesson 03 writes its own timing, the placement
of the stages on devices and the pipeline schedules.
"""

from __future__ import annotations

import re

from ..taught.lesson03 import balance, group_sums, segment_models

__all__ = ["balance", "block_boundaries", "group_sums", "segment_models"]

_BLOCK_OUT = re.compile(r"^conv\d+_block\d+_out$")


def block_boundaries(model) -> list[str]:
    """The names of a Keras ResNet's block outputs (``conv2_block1_out`` ...), in order."""
    names = [layer.name for layer in model.layers if _BLOCK_OUT.match(layer.name)]
    if not names:
        raise ValueError(f"model {model.name!r} has no layers named like 'conv3_block1_out'")
    return names
