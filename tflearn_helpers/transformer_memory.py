"""Lesson 06's Transformer counted from its shape: the bytes one device holds training it,
with activation recomputation, ZeRO stages 1-3, Megatron's tensor, sequence and vocabulary
parallelism and mixed precision, and the units a
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
_BLOCK_SPLIT, _ATTENTION_SPLIT, _SCORES, _SCORE_GRADIENTS = 13, 5, 2, 1


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
    sequence_parallel: bool = False,
    vocab_parallel: bool = False,
    precision: str = "float32",
) -> Footprint:
    """Bytes one device holds training ``shape`` on ``batch`` examples per replica.

    ``recompute``: each block keeps only its input (``tf.recompute_grad``) and recomputes
    the rest in its backward pass, where the peak is its attention part. ``zero`` (stage
    1/2/3 over ``replicas``): optimizer state / gradients / parameters held 1/N each.
    ``tensor_parallel``: blocks' matrices and heads split over that many devices;
    ``sequence_parallel``: the LayerNorm and residual activations split by token too (all but
    the gathered LayerNorm output); ``vocab_parallel``: the embedding, the head and its logits
    split by vocabulary (Megatron-LM). ``precision="mixed"``: 16-bit weights, gradients and
    activations, and a float32 master copy of the weights counted with the optimizer state:
    2 + 2 + 12 bytes per parameter with Adam (Rajbhandari et al. 2020).
    """
    validate.counts(batch=batch, replicas=replicas, tensor_parallel=tensor_parallel)
    if zero not in (0, 1, 2, 3):
        raise ValueError(f"zero is a ZeRO stage, 0 (plain data parallel) to 3, got {zero!r}")
    if shape.heads % tensor_parallel:
        raise ValueError(f"{shape.heads} heads do not split over {tensor_parallel} devices")
    if precision not in _BYTES:
        raise ValueError(f"precision is one of {sorted(_BYTES)}, got {precision!r}")
    t, vocab_split = tensor_parallel, tensor_parallel if vocab_parallel else 1
    if (sequence_parallel and shape.seq % t) or shape.vocab % vocab_split:
        raise ValueError(f"seq {shape.seq} or vocab {shape.vocab} does not split over {t} devices")
    d, v = shape.width, shape.vocab
    params = shape.blocks * shape.block_parameters // t + 2 * d + (2 * v * d + v) // vocab_split
    share = [1 if zero < stage else replicas for stage in (3, 2, 1)]
    width, master = _BYTES[precision]  # bytes per weight, gradient and activation; master copy
    kept = _activations(shape, t, recompute, t if sequence_parallel else 1, vocab_split)
    return Footprint(
        parameters=width * -(-params // share[0]),
        gradients=width * -(-params // share[1]),
        optimizer=(master + 4 * slots(optimizer)) * -(-params // share[2]),
        activations=width * batch * kept,
        inputs=4 * batch * shape.seq,
    )


# precision: (bytes of a weight, a gradient and an activation; bytes of the master weight)
_BYTES = {"float32": (4, 0), "mixed": (2, 4)}


def _activations(shape, t, recompute, sequence_split, vocab_split) -> int:
    """Activation elements one example keeps at the peak (see the table above ``_SCORES``)."""
    vec, scores = shape.seq * shape.width, shape.heads * shape.seq**2
    # sequence parallelism: each LayerNorm's input and two internals split by token, its
    # output is all-gathered and kept whole (1 of its 4)
    norm = 3 * vec // sequence_split + vec
    block = 2 * norm + (_BLOCK_SPLIT * vec + _SCORES * scores) // t
    attention = norm + (_ATTENTION_SPLIT * vec + _SCORES * scores) // t
    kept = shape.blocks * vec // sequence_split + attention if recompute else shape.blocks * block
    kept += norm + 2 * shape.seq * shape.vocab // vocab_split  # final LayerNorm; logits, softmax
    return kept + _SCORE_GRADIENTS * scores // t + 8 * vec // t


def zero_transient(
    shape: TransformerShape, tensor_parallel: int = 1, vocab_parallel: bool = False
) -> int:
    """Bytes a data-parallel step holds on top of :func:`transformer`'s footprint at its peak:
    three float32 copies of its largest unit (a block, the embedding or the head), each split
    over ``tensor_parallel`` devices (the embedding and the head only if ``vocab_parallel``).

    Lesson 06's ZeRO-3 gathers one unit's weights just before use, and in the backward pass
    holds them with their whole gradient and the buffer the reduce-scatter receives into;
    its other stages hold a unit's reduced gradient with Adam's temporaries. Measured in
    two worker processes (lesson 06, ``benchmarks/zero_memory.py``), not derived from FSDP.
    """
    validate.counts(tensor_parallel=tensor_parallel)
    d, v, t = shape.width, shape.vocab, tensor_parallel
    vocab_split = t if vocab_parallel else 1
    ends = max(v * d, d * v + v) // vocab_split + 2 * d  # the embedding; the head, its LayerNorm
    return 3 * 4 * max(shape.block_parameters // t, ends)
