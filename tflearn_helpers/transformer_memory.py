"""Lesson 06's Transformer counted from its shape: the bytes one device holds training it,
with activation recomputation, ZeRO stages 1-3 and tensor parallelism, and the units a
sharded step holds whole for a moment (``zero_transient``).

``memory.profile`` reads a Keras model layer by layer, but attention keeps tensors inside one
Keras layer (the score matrix) that it cannot see, so the Transformer is counted here from
its shape. ``benchmarks/sharding_memory.py`` checks it against measured peaks, and
``benchmarks/zero_memory.py`` each ZeRO stage's peak per worker, measured in two processes.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import validate
from .memory import Footprint, slots

__all__ = ["TransformerShape", "transformer", "zero_transient"]

# A pre-LayerNorm Transformer block keeps, per token, float32 vectors of the width D: each
# LayerNorm its input, two internals (x - mean and 1/std * gamma) and its output (4 + 4);
# attention q, k, v, the scaled q and the context (5); the MLP its 4D hidden layer before and
# after GELU (8). Of those, attention's 5 and the MLP's 8 split over tensor-parallel devices.
# Per head it keeps the score matrix twice (softmax's output, and the copy the second einsum
# transposes), and its backward holds one more T x T gradient per head at a time.
_BLOCK_REPLICATED, _BLOCK_SPLIT, _ATTENTION_SPLIT, _SCORES, _SCORE_GRADIENTS = 8, 13, 5, 2, 1


@dataclass(frozen=True)
class TransformerShape:
    """Lesson 06's model: token embedding, pre-LayerNorm blocks (attention, 4x MLP), head."""

    vocab: int
    seq: int
    width: int
    heads: int
    blocks: int

    def __post_init__(self):
        validate.counts(**vars(self))
        if self.width % self.heads:
            raise ValueError(f"width {self.width} does not split into {self.heads} heads")

    @property
    def block_parameters(self) -> int:
        d = self.width  # two LayerNorms, q/k/v/output projections, MLP up and down
        return 4 * d + 4 * (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)

    @property
    def parameters(self) -> int:
        d, v = self.width, self.vocab
        return v * d + self.blocks * self.block_parameters + 2 * d + d * v + v


def transformer(
    shape: TransformerShape,
    batch: int,
    optimizer: str = "adam",
    recompute: bool = False,
    replicas: int = 1,
    zero: int = 0,
    tensor_parallel: int = 1,
) -> Footprint:
    """Bytes one device holds training ``shape`` (float32) on ``batch`` examples per replica.

    ``recompute``: each block keeps only its input (``tf.recompute_grad``) and recomputes
    the rest in its backward pass, where the peak is its attention part. ``zero`` (stage
    1/2/3 over ``replicas``): optimizer state / gradients / parameters held 1/N each.
    ``tensor_parallel``: blocks' matrices and heads split over that many devices.
    """
    validate.counts(batch=batch, replicas=replicas, tensor_parallel=tensor_parallel)
    if zero not in (0, 1, 2, 3):
        raise ValueError(f"zero is a ZeRO stage, 0 (plain data parallel) to 3, got {zero!r}")
    if shape.heads % tensor_parallel:
        raise ValueError(f"{shape.heads} heads do not split over {tensor_parallel} devices")
    t, vec, scores = tensor_parallel, shape.seq * shape.width, shape.heads * shape.seq**2
    rest = shape.parameters - shape.blocks * shape.block_parameters
    params = rest + shape.blocks * shape.block_parameters // t
    block = _BLOCK_REPLICATED * vec + (_BLOCK_SPLIT * vec + _SCORES * scores) // t
    attention = (_BLOCK_REPLICATED // 2) * vec + (_ATTENTION_SPLIT * vec + _SCORES * scores) // t
    kept = shape.blocks * vec + attention if recompute else shape.blocks * block
    kept += 4 * vec + 2 * shape.seq * shape.vocab  # final LayerNorm; logits and softmax
    backward = _SCORE_GRADIENTS * scores // t + 8 * vec // t
    share = [1 if zero < stage else replicas for stage in (3, 2, 1)]
    return Footprint(
        parameters=4 * -(-params // share[0]),
        gradients=4 * -(-params // share[1]),
        optimizer=4 * slots(optimizer) * -(-params // share[2]),
        activations=4 * batch * (kept + backward),
        inputs=4 * batch * shape.seq,
    )


def zero_transient(shape: TransformerShape, tensor_parallel: int = 1) -> int:
    """Bytes a data-parallel step holds on top of :func:`transformer`'s footprint at its peak:
    three float32 copies of its largest unit (a block, the embedding or the head).

    Lesson 06's ZeRO-3 gathers one unit's weights just before use, and in the backward pass
    holds them with their whole gradient and the buffer the reduce-scatter receives into;
    its other stages hold a unit's reduced gradient with Adam's temporaries. Measured in
    two worker processes (lesson 06, ``benchmarks/zero_memory.py``), not derived from FSDP.
    """
    validate.counts(tensor_parallel=tensor_parallel)
    d, v = shape.width, shape.vocab
    return 3 * 4 * max(shape.block_parameters // tensor_parallel, v * d, d * v + v + 2 * d)
