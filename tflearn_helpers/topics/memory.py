"""Where training memory goes: the bytes each device holds during a step (lesson 00).

A training step keeps on the device that runs it:

- **parameters**: every variable, in its own dtype (float32 master weights even under
  mixed precision);
- **gradients**: one per trainable variable, in the variable's dtype;
- **optimizer state**: Adam keeps 2 slots per trainable variable, momentum SGD 1, SGD 0;
- **activations**: the layer outputs the backward pass needs, for every example in flight,
  in the layer's compute dtype (``mixed_float16`` halves them, but BatchNorm, which Keras
  computes in float32, keeps a float32 copy of its input instead of the 16-bit input); the
  gradients of
  activations the backward pass holds at a time (out of and into the layer it is at, the
  largest such pair; one buffer through elementwise layers, and no input gradient before
  the first trainable layer); and the half-precision copies of the weights that mixed
  precision computes with;
- **inputs**: the batch itself.

``profile(model)`` reads a Keras model's variables and layer outputs once; ``one_device``,
``mirrored``, ``pipeline`` and ``parameter_server`` turn it into a :class:`Footprint` per
device, checked against TensorFlow's allocator by lesson 00 and
``benchmarks/memory_vs_model.py``.

Lesson 06's Transformer is counted from its shape instead (``transformer``): attention keeps
tensors inside one Keras layer (the score matrix) that ``profile`` cannot see. That count
covers activation recomputation, ZeRO stages 1-3, Megatron's tensor, sequence and vocabulary
parallelism and mixed precision, and the units a sharded step holds whole for a moment
(``zero_transient``); ``benchmarks/sharding_memory.py`` and ``benchmarks/zero_memory.py``
check it against measured peaks.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..runtime import validate
from ..taught.lesson00 import read_by_backward

__all__ = [
    "Footprint",
    "MiB",
    "ModelMemory",
    "SCHEDULES",
    "TransformerShape",
    "dtype_bytes",
    "mirrored",
    "one_device",
    "parameter_server",
    "pipeline",
    "profile",
    "read_by_backward",
    "slots",
    "transformer",
    "zero_transient",
]

MiB = 2**20
SLOTS = {"sgd": 0, "momentum": 1, "rmsprop": 1, "adagrad": 1, "adam": 2, "adamw": 2}
SCHEDULES = ("fill_drain", "one_f_one_b")  # the orders of lesson 03's schedules
_DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int32": 4, "int64": 8}
# Which tensors TensorFlow's gradient functions read: Conv2DBackpropFilter and MatMul read the
# layer's input, FusedBatchNormGradV3 its input, ReluGrad the output, MaxPoolGrad both. A layer
# in no list is assumed to need its input (erring on the high side).
_NEEDS_OUTPUT = {"ReLU", "Activation", "Softmax", "MaxPooling1D", "MaxPooling2D", "MaxPooling3D"}
_NEEDS_NO_INPUT = {
    "Add", "ZeroPadding1D", "ZeroPadding2D", "GlobalAveragePooling1D", "GlobalAveragePooling2D",
    "AveragePooling2D", "Flatten", "Reshape", "Rescaling", "ReLU", "Activation", "Softmax",
}  # fmt: skip
# Layers Keras computes in float32 under mixed precision (keras/src/layers/normalization/
# batch_normalization.py casts the input up): their gradient reads a float32 copy of the input,
# and the 16-bit input itself is then kept only if another layer's gradient reads it (the Cast's
# gradient, _CastGrad in tensorflow/python/ops/math_grad.py, needs only its dtype).
_UPCAST_TO_FLOAT32 = {"BatchNormalization"}
# Layers whose backward pass is elementwise: TensorFlow writes the input's gradient into the
# buffer of the output's (buffer forwarding), so one gradient is alive through them, not two.
_ELEMENTWISE = {"BatchNormalization", "ReLU", "Activation", "Add", "Rescaling", "Dropout"}


@dataclass(frozen=True)
class LayerMemory:
    """One layer: its variables as (bytes, trainable), and activation bytes kept per example."""

    name: str
    variables: tuple[tuple[int, bool], ...]
    kept_per_example: int
    output_per_example: int
    compute_bytes: int  # bytes per element it computes in (2 under mixed_float16)
    backward_per_example: int  # activation gradients alive while backpropagating through it
    float32_copy_per_example: int  # the float32 copy of its input a 16-bit layer keeps

    @property
    def trainable_bytes(self) -> int:
        return sum(size for size, trainable in self.variables if trainable)


@dataclass(frozen=True)
class ModelMemory:
    """What a model needs before a batch or devices are chosen (see :func:`profile`)."""

    layers: tuple[LayerMemory, ...]
    input_per_example: int

    @property
    def variable_sizes(self) -> list[tuple[int, bool]]:
        return [v for layer in self.layers for v in layer.variables]

    @property
    def parameter_bytes(self) -> int:
        return sum(size for size, _ in self.variable_sizes)

    @property
    def trainable_bytes(self) -> int:
        return sum(layer.trainable_bytes for layer in self.layers)

    @property
    def kept_per_example(self) -> int:
        return sum(layer.kept_per_example for layer in self.layers)

    @property
    def float32_copy_per_example(self) -> int:
        """Float32 copies of inputs kept by layers Keras computes in float32 (BatchNorm)."""
        return sum(layer.float32_copy_per_example for layer in self.layers)

    @property
    def backward_per_example(self) -> int:
        """Activation gradients alive at once: the gradients of the output and (when a
        trainable layer comes before it, and it is not elementwise) the input of the layer
        where they are largest."""
        return max((layer.backward_per_example for layer in self.layers), default=0)

    @property
    def weight_copy_bytes(self) -> int:
        """Half-precision copies of the weights that mixed-precision layers compute with."""
        return sum(
            layer.trainable_bytes * layer.compute_bytes // 4
            for layer in self.layers
            if layer.compute_bytes < 4
        )

    def split(self, cuts: list[str]) -> list[ModelMemory]:
        """The stages made by cutting after each layer named in ``cuts`` (in order)."""
        names = [layer.name for layer in self.layers]
        missing = [c for c in cuts if c not in names]
        if missing:
            raise ValueError(f"no layers named {missing}")
        ends = [names.index(c) + 1 for c in cuts]
        if ends != sorted(set(ends)) or len(names) in ends:
            raise ValueError(f"cuts must be distinct, in order, and before the last layer: {cuts}")
        stages, first, inputs = [], 0, self.input_per_example
        for end in [*ends, len(names)]:
            stages.append(ModelMemory(self.layers[first:end], inputs))
            first, inputs = end, self.layers[end - 1].output_per_example
        return stages


@dataclass(frozen=True)
class Footprint:
    """Bytes one device holds at the peak of a training step."""

    parameters: int
    gradients: int
    optimizer: int
    activations: int
    inputs: int

    @property
    def total(self) -> int:
        return self.parameters + self.gradients + self.optimizer + self.activations + self.inputs

    def rows(self) -> list[tuple[str, str]]:
        """(part, MiB) rows for a table."""
        parts = ("parameters", "gradients", "optimizer", "activations", "inputs", "total")
        return [(p, f"{getattr(self, p) / MiB:,.1f}") for p in parts]


def dtype_bytes(dtype) -> int:
    """Bytes per element of a dtype given by name or as a TF/NumPy/Keras dtype."""
    name = getattr(dtype, "name", str(dtype)).split(".")[-1]
    if name not in _DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; known: {sorted(_DTYPE_BYTES)}")
    return _DTYPE_BYTES[name]


def profile(model) -> ModelMemory:
    """Read a built Keras functional or Sequential model: variables and kept activations."""
    layers = [layer for layer in model.layers if type(layer).__name__ != "InputLayer"]
    read_by_gradient = {id(t) for t in _tensors(model.outputs)}  # the loss reads the logits
    for layer in layers:  # a layer that casts its input up reads its copy, not the input
        if type(layer).__name__ not in _NEEDS_NO_INPUT and not _upcasts(layer):
            read_by_gradient.update(id(t) for t in _tensors(layer.input))
    out, after_trainable = [], set()  # tensors computed from trainable variables
    for layer in layers:
        inputs, outputs = _tensors(layer.input), _tensors(layer.output)
        input_gradient = any(id(t) in after_trainable for t in inputs)
        if input_gradient or any(trainable for _, trainable in _variable_sizes(layer)):
            after_trainable.update(id(t) for t in outputs)
        size = sum(_per_example(t) for t in outputs)
        keeps = type(layer).__name__ in _NEEDS_OUTPUT or any(
            id(t) in read_by_gradient for t in outputs
        )
        copy = sum(_count(t.shape[1:]) * 4 for t in inputs) if _upcasts(layer) else 0
        backward = size
        if input_gradient and type(layer).__name__ not in _ELEMENTWISE:
            backward += sum(_per_example(t) for t in inputs)
        compute = dtype_bytes(layer.compute_dtype)
        kept = size if keeps else 0
        variables = _variable_sizes(layer)
        out.append(LayerMemory(layer.name, variables, kept, size, compute, backward, copy))
    return ModelMemory(tuple(out), sum(_per_example(t) for t in model.inputs))


def one_device(
    mem: ModelMemory, batch: int, optimizer: str = "adam", examples_kept: int | None = None
) -> Footprint:
    """One device holding the whole model and ``batch`` examples (``examples_kept`` of
    them with activations alive, default all)."""
    validate.counts(batch=batch)
    kept = batch if examples_kept is None else examples_kept
    return Footprint(
        parameters=mem.parameter_bytes,
        gradients=mem.trainable_bytes,
        optimizer=slots(optimizer) * mem.trainable_bytes,
        activations=kept
        * (mem.kept_per_example + mem.float32_copy_per_example + mem.backward_per_example)
        + mem.weight_copy_bytes,
        inputs=batch * mem.input_per_example,
    )


def mirrored(mem: ModelMemory, global_batch: int, replicas: int, optimizer="adam") -> Footprint:
    """Each MirroredStrategy replica: a full copy of the model and optimizer state, and
    ``global_batch / replicas`` examples."""
    validate.counts(global_batch=global_batch, replicas=replicas)
    if global_batch % replicas:
        raise ValueError(f"global batch {global_batch} does not split over {replicas} replicas")
    return one_device(mem, global_batch // replicas, optimizer)


def pipeline(
    mem: ModelMemory,
    cuts: list[str],
    batch: int,
    micro_batches: int = 1,
    schedule: str = "fill_drain",
    optimizer: str = "adam",
    recompute: bool = False,
) -> list[Footprint]:
    """Each stage of a model split after ``cuts`` (``micro_batches=1``: plain model
    parallelism). Fill-drain (GPipe's order) runs every forward first, so a stage keeps all M
    micro-batches' activations; 1F1B starts backwards early, so stage s (of K) keeps at most
    K - s. ``recompute``: each stage keeps only its input of every micro-batch and runs its
    forward pass again in each backward pass (GPipe as published, Huang et al. 2019,
    section 2.3), so it holds one micro-batch's activations at a time and the inputs of all
    those in flight."""
    validate.counts(batch=batch, micro_batches=micro_batches)
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if batch % micro_batches:
        raise ValueError(f"batch {batch} does not split into {micro_batches} micro-batches")
    stages = mem.split(cuts)
    micro = batch // micro_batches
    prints = []
    for s, stage in enumerate(stages):
        alive = micro_batches if schedule == "fill_drain" else min(micro_batches, len(stages) - s)
        held = batch if s == 0 else alive * micro  # stage 0 holds the whole input batch
        kept = micro if recompute else alive * micro  # activations alive at once
        prints.append(one_device(stage, held, optimizer, examples_kept=kept))
    return prints


def parameter_server(
    mem: ModelMemory, ps_tasks: int, worker_batch: int, optimizer: str = "adam"
) -> dict[str, Footprint]:
    """Each ps task (whole variables dealt round-robin, as ``replica_device_setter`` and
    ParameterServerStrategy without a partitioner do; the optimizer update and its slots
    live with the variable) and each worker (reads every variable, computes gradients)."""
    validate.counts(ps_tasks=ps_tasks, worker_batch=worker_batch)
    shards = [[] for _ in range(ps_tasks)]
    for i, variable in enumerate(mem.variable_sizes):
        shards[i % ps_tasks].append(variable)
    result = {}
    for task, shard in enumerate(shards):
        trainable = sum(size for size, t in shard if t)
        result[f"ps:{task}"] = Footprint(
            sum(size for size, _ in shard), trainable, slots(optimizer) * trainable, 0, 0
        )
    result["worker"] = one_device(mem, worker_batch, "sgd")
    return result


def slots(optimizer: str) -> int:
    """Slot variables per trainable variable of an optimizer named like Keras' ("adam")."""
    if optimizer.lower() not in SLOTS:
        raise ValueError(f"unknown optimizer {optimizer!r}; known: {sorted(SLOTS)}")
    return SLOTS[optimizer.lower()]


def _variable_sizes(layer) -> tuple[tuple[int, bool], ...]:
    return tuple((_count(v.shape) * dtype_bytes(v.dtype), bool(v.trainable)) for v in layer.weights)


def _upcasts(layer) -> bool:
    """Does Keras compute this 16-bit layer in float32 (see ``_UPCAST_TO_FLOAT32``)?"""
    return type(layer).__name__ in _UPCAST_TO_FLOAT32 and dtype_bytes(layer.compute_dtype) < 4


def _tensors(value) -> list:
    return list(value) if isinstance(value, list | tuple) else [value]


def _per_example(tensor) -> int:
    return _count(tensor.shape[1:]) * dtype_bytes(tensor.dtype)


def _count(shape) -> int:
    size = 1
    for d in shape:
        size *= int(d)
    return size


# ---- Lesson 06's Transformer, counted from its shape ----------------------------------------
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
    split by vocabulary (Megatron-LM). ``precision="mixed"``: 16-bit weights and gradients,
    and a float32 master copy of the weights counted with the optimizer state: 2 + 2 + 12
    bytes per parameter with Adam (Rajbhandari et al. 2020); 16-bit activations but for those
    Keras 3's mixed policies keep in float32 (each LayerNorm's input cast up and its two
    internals, the softmax of the attention scores, the logits cast up for the loss and the
    loss's softmax, the scores' gradient), as lesson 06's traced step shows them.
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
    wide, narrow = _activations(shape, t, recompute, t if sequence_parallel else 1, vocab_split)
    return Footprint(
        parameters=width * -(-params // share[0]),
        gradients=width * -(-params // share[1]),
        optimizer=(master + 4 * slots(optimizer)) * -(-params // share[2]),
        activations=batch * (4 * wide + width * narrow),
        inputs=4 * batch * shape.seq,
    )


# precision: (bytes of a weight, a gradient and an activation; bytes of the master weight)
_BYTES = {"float32": (4, 0), "mixed": (2, 4)}


def _activations(shape, t, recompute, sequence_split, vocab_split) -> tuple[int, int]:
    """Activation elements one example keeps at the peak (see the table above ``_SCORES``):
    those Keras 3 keeps in float32 under a mixed policy, and the rest."""
    vec, scores = shape.seq * shape.width, shape.heads * shape.seq**2
    # each LayerNorm: its input cast to float32 and two internals (split by token under
    # sequence parallelism), and its output cast back (all-gathered and kept whole)
    norm_wide, norm_narrow = 3 * vec // sequence_split, vec
    # the score matrices: softmax's output in float32, the copy the second einsum reads cast back
    wide = norm_wide + scores // t
    narrow = norm_narrow + (_ATTENTION_SPLIT * vec + (_SCORES - 1) * scores) // t
    if recompute:  # the blocks' inputs, and one block's attention part recomputed
        narrow += shape.blocks * vec // sequence_split
    else:  # every block: its two LayerNorms, attention and the MLP's 4D hidden layer
        wide, narrow = (
            shape.blocks * (wide + norm_wide),
            shape.blocks * (narrow + norm_narrow + (_BLOCK_SPLIT - _ATTENTION_SPLIT) * vec // t),
        )
    wide += norm_wide + 2 * shape.seq * shape.vocab // vocab_split  # logits, softmax: float32
    wide += _SCORE_GRADIENTS * scores // t  # the softmax's gradient, in float32
    return wide, narrow + norm_narrow + 8 * vec // t


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
