import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from tflearn_helpers import memory
from tflearn_helpers.measuring.memory_probe import measure, result


def small_cnn(policy="float32"):
    keras.mixed_precision.set_global_policy(policy)
    try:
        return keras.Sequential(
            [
                keras.Input((16, 16, 3)),
                keras.layers.Conv2D(8, 3, padding="same", name="conv"),
                keras.layers.BatchNormalization(name="bn"),
                keras.layers.ReLU(name="relu"),
                keras.layers.GlobalAveragePooling2D(name="pool"),
                keras.layers.Dense(4, name="logits"),
            ]
        )
    finally:
        keras.mixed_precision.set_global_policy("float32")


def chain(widths=(32, 64, 128, 64, 10)):
    inputs = keras.Input((16,))
    x = inputs
    for i, w in enumerate(widths):
        x = keras.layers.Dense(w, name=f"d{i}")(x)
    return keras.Model(inputs, x)


def test_dtype_bytes_accepts_names_and_dtypes():
    assert memory.dtype_bytes("float16") == 2
    assert memory.dtype_bytes(tf.float32) == 4
    assert memory.dtype_bytes(np.dtype("float64")) == 8
    with pytest.raises(ValueError, match="unknown dtype"):
        memory.dtype_bytes("complex64")


def test_profile_counts_variables_and_the_activations_backward_reads():
    model = small_cnn()
    mem = memory.profile(model)
    assert mem.parameter_bytes == 4 * model.count_params()
    assert mem.trainable_bytes == 4 * sum(int(np.prod(v.shape)) for v in model.trainable_weights)
    kept = {layer.name: layer.kept_per_example for layer in mem.layers}
    feature_map = 16 * 16 * 8 * 4
    assert kept["conv"] == feature_map  # batch norm's gradient reads its input
    assert kept["bn"] == 0  # only ReLU reads it, and ReLU's gradient needs its own output
    assert kept["relu"] == feature_map
    assert kept["logits"] == 4 * 4  # the loss reads the logits
    assert mem.input_per_example == 16 * 16 * 3 * 4


def test_adam_state_is_four_times_the_parameters():
    mem = memory.profile(chain())
    f = memory.one_device(mem, 8, "adam")
    assert f.parameters + f.gradients + f.optimizer == 4 * mem.parameter_bytes
    assert memory.one_device(mem, 8, "sgd").optimizer == 0


def test_mixed_precision_halves_activations_not_master_weights():
    full, mixed = memory.profile(small_cnn()), memory.profile(small_cnn("mixed_float16"))
    assert mixed.parameter_bytes == full.parameter_bytes  # float32 master weights
    feature_map = 16 * 16 * 8 * 4  # the conv's output in float32
    # Keras computes BatchNorm in float32: its gradient keeps a float32 copy of its input, and
    # the float16 conv output it was cast from is read by no gradient (a Cast's needs only its
    # dtype), so it is not kept; every other kept output halves
    assert {layer.name: layer.kept_per_example for layer in mixed.layers}["conv"] == 0
    assert mixed.kept_per_example * 2 == full.kept_per_example - feature_map
    assert (full.float32_copy_per_example, mixed.float32_copy_per_example) == (0, feature_map)
    assert mixed.weight_copy_bytes == full.trainable_bytes // 2 and full.weight_copy_bytes == 0


def test_activations_grow_with_the_batch_and_the_rest_does_not():
    mem = memory.profile(small_cnn())
    a, b = memory.one_device(mem, 8), memory.one_device(mem, 16)
    assert b.activations == 2 * a.activations and b.inputs == 2 * a.inputs
    assert (a.parameters, a.gradients, a.optimizer) == (b.parameters, b.gradients, b.optimizer)
    assert a.total == a.parameters + a.gradients + a.optimizer + a.activations + a.inputs
    assert [name for name, _ in a.rows()][-1] == "total"


def test_mirrored_replicas_hold_everything_but_a_slice_of_the_batch():
    mem = memory.profile(small_cnn())
    assert memory.mirrored(mem, 32, 4) == memory.one_device(mem, 8)
    with pytest.raises(ValueError, match="does not split"):
        memory.mirrored(mem, 30, 4)
    with pytest.raises(ValueError, match="replicas"):
        memory.mirrored(mem, 32, 0)


def test_split_makes_stages_that_add_up():
    mem = memory.profile(chain())
    stages = mem.split(["d1", "d3"])
    assert [len(s.layers) for s in stages] == [2, 2, 1]
    assert sum(s.parameter_bytes for s in stages) == mem.parameter_bytes
    assert stages[1].input_per_example == 64 * 4  # what stage 0 sends on
    for bad in (["nope"], ["d3", "d1"], ["d4"]):
        with pytest.raises(ValueError):
            mem.split(bad)


def test_fill_drain_keeps_every_micro_batch_and_1f1b_at_most_k_minus_s():
    mem = memory.profile(chain())
    cuts = ["d0", "d1", "d2"]  # 4 stages
    naive = memory.pipeline(mem, cuts, 64, 1)
    fill_drain = memory.pipeline(mem, cuts, 64, 8, "fill_drain")
    ofob = memory.pipeline(mem, cuts, 64, 8, "one_f_one_b")
    stages = mem.split(cuts)
    for s, stage in enumerate(stages):
        per_example = stage.kept_per_example + stage.backward_per_example
        assert fill_drain[s].activations == naive[s].activations == 64 * per_example
        assert ofob[s].activations == min(8, 4 - s) * 8 * per_example
    # recomputation: one micro-batch's activations at a time, the inputs of all in flight
    recomputed = memory.pipeline(mem, cuts, 64, 8, "fill_drain", recompute=True)
    for s, stage in enumerate(stages):
        per_example = stage.kept_per_example + stage.backward_per_example
        assert recomputed[s].activations == 8 * per_example
        assert recomputed[s].inputs == fill_drain[s].inputs == 64 * stage.input_per_example
    # with M <= K - s micro-batches, 1F1B keeps as many as fill-drain
    assert (
        memory.pipeline(mem, cuts, 64, 2, "one_f_one_b")[:3]
        == memory.pipeline(mem, cuts, 64, 2)[:3]
    )
    with pytest.raises(ValueError, match="schedule"):
        memory.pipeline(mem, cuts, 64, 2, "zigzag")
    with pytest.raises(ValueError, match="micro-batches"):
        memory.pipeline(mem, cuts, 64, 3)


def test_parameter_servers_hold_variables_and_slots_workers_the_activations():
    mem = memory.profile(chain())
    prints = memory.parameter_server(mem, 2, 32, "adam")
    ps = [prints["ps:0"], prints["ps:1"]]
    assert sum(p.parameters for p in ps) == mem.parameter_bytes
    assert all(p.optimizer == 2 * p.gradients and p.activations == 0 for p in ps)
    worker = prints["worker"]
    assert worker.optimizer == 0 and worker.activations == memory.one_device(mem, 32).activations


def _cpu_stats_available(**env) -> bool:
    code = "import tensorflow as tf; tf.config.experimental.get_memory_info('CPU:0')"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **env)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return done.returncode == 0


def test_cpu_allocator_stats_need_bfc_or_onednn():
    # TensorFlow's default CPU allocator keeps no statistics; the BFC allocator does, and
    # so does oneDNN's CPU allocator (the course turns oneDNN on for x86-64 CPUs).
    assert not _cpu_stats_available(TF_ENABLE_ONEDNN_OPTS="0", TF_CPU_ALLOCATOR_USE_BFC="false")
    assert _cpu_stats_available(TF_ENABLE_ONEDNN_OPTS="0", TF_CPU_ALLOCATOR_USE_BFC="true")


def test_model_is_within_30_percent_of_a_measured_compiled_step():
    from tflearn_helpers.topics.models import small_cnn

    probe = result(measure(32, "small", 32, steps=1, timeout=300))
    guess = memory.one_device(memory.profile(small_cnn(32)), 32, "adam").total
    assert probe.peak and abs(guess / probe.peak - 1) <= 0.3, (guess, probe.peak)
    # what a forward pass under a tape keeps per example: measured, and counted by the rules
    mem = memory.profile(small_cnn(32))
    assert probe.kept_model == mem.kept_per_example + mem.float32_copy_per_example
    assert 0.7 <= probe.kept / probe.kept_model <= 1.6, (probe.kept, probe.kept_model)


def test_backward_holds_output_and_input_gradients_only_where_needed():
    mem = memory.profile(small_cnn())
    back = {layer.name: layer.backward_per_example for layer in mem.layers}
    conv = 16 * 16 * 8 * 4
    assert back["conv"] == conv  # the first trainable layer: no gradient for its input
    assert back["bn"] == back["relu"] == conv  # elementwise: the gradient's buffer is reused
    assert back["pool"] == conv + 8 * 4 and mem.backward_per_example == conv + 8 * 4


def test_sweep_has_one_deadline_and_reports_what_it_could_not_measure():
    from tflearn_helpers.measuring.memory_probe import sweep

    with pytest.raises(ValueError, match="budget"):
        sweep([("float32", 8)], 0)
    rows = sweep([("float32", 4), ("float32", 8)], 0.05, model="small", image_size=16, cores=[None])
    assert [r.status.split(" (")[0] for r in rows] == ["too slow here", "skipped"]
    assert rows[0].probe is None and rows[1].wall == 0.0
    # a batch of 10**8 would take hours: predicted from the first round, never started
    rows = sweep([("float32", 4)] * 2 + [("float32", 10**8)], 300, "small", 16, cores=[None, None])
    assert [r.status for r in rows[:2]] == ["measured", "measured"] and rows[0].probe.peak > 0
    from tflearn_helpers import models  # the child reports the model's view of its network

    small = memory.profile(models.small_cnn(16))
    assert rows[0].probe.predicted == memory.one_device(small, 4, "adam")
    assert rows[2].status.startswith("skipped (predicted") and rows[2].probe is None


SHAPE = memory.TransformerShape(vocab=256, seq=128, width=64, heads=4, blocks=2)


def test_transformer_parameters_match_keras():
    layers = keras.layers
    tokens = keras.Input((SHAPE.seq,), dtype="int32")
    x = layers.Embedding(SHAPE.vocab, SHAPE.width)(tokens)
    for _ in range(SHAPE.blocks):
        h = layers.LayerNormalization()(x)
        x = x + layers.MultiHeadAttention(SHAPE.heads, SHAPE.width // SHAPE.heads)(h, h)
        h = layers.Dense(4 * SHAPE.width, activation="gelu")(layers.LayerNormalization()(x))
        x = x + layers.Dense(SHAPE.width)(h)
    logits = layers.Dense(SHAPE.vocab)(layers.LayerNormalization()(x))
    assert keras.Model(tokens, logits).count_params() == SHAPE.parameters


def test_transformer_terms():
    base = memory.transformer(SHAPE, 8)
    assert base.parameters == base.gradients == 4 * SHAPE.parameters
    assert base.optimizer == 2 * base.parameters
    scores = 4 * 8 * SHAPE.heads * SHAPE.seq**2  # one float32 score matrix per head, batch 8
    longer = memory.transformer(memory.TransformerShape(256, 256, 64, 4, 2), 8)
    assert longer.activations > 2.5 * base.activations  # twice the tokens: T x T grows 4x
    assert memory.transformer(SHAPE, 16).activations == 2 * base.activations
    deeper = memory.transformer(memory.TransformerShape(256, 128, 64, 4, 3), 8)
    assert deeper.activations - base.activations > 2 * scores  # each block keeps its scores
    recomputed = memory.transformer(SHAPE, 8, recompute=True)
    assert recomputed.activations < base.activations and recomputed.parameters == base.parameters


def test_transformer_zero_stages_divide_state():
    plain = memory.transformer(SHAPE, 8, replicas=4)
    stages = [memory.transformer(SHAPE, 8, replicas=4, zero=z) for z in (1, 2, 3)]
    quarter = 4 * -(-SHAPE.parameters // 4)
    assert stages[0].optimizer == 2 * quarter and stages[0].gradients == plain.gradients
    assert stages[1].gradients == quarter and stages[1].parameters == plain.parameters
    assert stages[2].parameters == quarter
    assert all(s.activations == plain.activations for s in stages)


def test_transformer_tensor_parallel_splits_blocks():
    one = memory.transformer(SHAPE, 8)
    two = memory.transformer(SHAPE, 8, tensor_parallel=2)
    block = 4 * SHAPE.blocks * SHAPE.block_parameters
    assert two.parameters == one.parameters - block // 2
    assert one.activations / 2 < two.activations < one.activations


def test_sequence_parallel_splits_the_layernorm_and_residual_activations():
    vec = SHAPE.seq * SHAPE.width  # per example; at batch 8, float32
    tp = memory.transformer(SHAPE, 8, tensor_parallel=2)
    sp = memory.transformer(SHAPE, 8, tensor_parallel=2, sequence_parallel=True)
    per_norm = (
        4 * 8 * 3 * vec // 2
    )  # 3 of a LayerNorm's 4 kept tensors split; its output stays whole
    assert tp.activations - sp.activations == (2 * SHAPE.blocks + 1) * per_norm
    assert sp.parameters == tp.parameters and sp.optimizer == tp.optimizer
    recomputed = [
        memory.transformer(SHAPE, 8, tensor_parallel=2, recompute=True, **kw)
        for kw in ({}, {"sequence_parallel": True})
    ]
    blocks_inputs = 4 * 8 * SHAPE.blocks * vec // 2  # each block's input: half the tokens
    assert recomputed[0].activations - recomputed[1].activations == blocks_inputs + 2 * per_norm
    alone = memory.transformer(SHAPE, 8, sequence_parallel=True)  # 1 device: no split
    assert alone == memory.transformer(SHAPE, 8)


def test_vocab_parallel_splits_embedding_head_and_logits():
    d, v = SHAPE.width, SHAPE.vocab
    tp = memory.transformer(SHAPE, 8, tensor_parallel=4)
    vp = memory.transformer(SHAPE, 8, tensor_parallel=4, vocab_parallel=True)
    assert tp.parameters - vp.parameters == 4 * (2 * v * d + v) * 3 // 4  # 3/4 of them gone
    assert tp.activations - vp.activations == 4 * 8 * 2 * SHAPE.seq * v * 3 // 4  # logits, softmax
    assert vp.gradients == vp.parameters and vp.optimizer == 2 * vp.parameters


def test_mixed_precision_is_2_2_12_bytes_per_parameter_with_adam():
    full = memory.transformer(SHAPE, 8)
    mixed = memory.transformer(SHAPE, 8, precision="mixed")
    p = SHAPE.parameters
    assert (mixed.parameters, mixed.gradients, mixed.optimizer) == (2 * p, 2 * p, 12 * p)
    state = mixed.parameters + mixed.gradients + mixed.optimizer
    assert state == full.parameters + full.gradients + full.optimizer  # Adam: 16 bytes either way
    assert mixed.inputs == full.inputs  # int32 tokens
    # Keras 3 keeps LayerNorm's internals, the attention softmax and the logits in float32:
    # more than half of float32's activations, less than all of them
    assert full.activations / 2 < mixed.activations < full.activations
    vec, scores = SHAPE.seq * SHAPE.width, SHAPE.heads * SHAPE.seq**2
    wide = SHAPE.blocks * (6 * vec + scores) + 3 * vec + 2 * SHAPE.seq * SHAPE.vocab + scores
    assert mixed.activations - full.activations / 2 == 8 * 2 * wide  # those, at 4 bytes not 2
    sgd = memory.transformer(SHAPE, 8, "sgd", precision="mixed")
    assert sgd.optimizer == 4 * p  # only the float32 master weights
    sharded = memory.transformer(SHAPE, 8, replicas=4, zero=1, precision="mixed")
    assert sharded.optimizer == 12 * -(-p // 4) and sharded.gradients == 2 * p  # ZeRO-1: K/N


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"zero": 4}, "ZeRO stage"),
        ({"tensor_parallel": 3}, "do not split"),
        ({"replicas": 0}, "replicas"),
        ({"precision": "float16"}, "precision is one of"),
    ],
)
def test_transformer_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        memory.transformer(SHAPE, 8, **kwargs)
    with pytest.raises(ValueError, match="heads"):
        memory.TransformerShape(256, 128, 64, 5, 2)


def test_sequence_and_vocab_splits_must_divide():
    odd_vocab = memory.TransformerShape(vocab=254, seq=128, width=64, heads=4, blocks=2)
    with pytest.raises(ValueError, match="vocab 254 does not split over 4"):
        memory.transformer(odd_vocab, 8, tensor_parallel=4, vocab_parallel=True)
    short = memory.TransformerShape(vocab=256, seq=130, width=64, heads=4, blocks=2)
    with pytest.raises(ValueError, match="seq 130"):
        memory.transformer(short, 8, tensor_parallel=4, sequence_parallel=True)
    assert memory.transformer(odd_vocab, 8, tensor_parallel=4)  # no split asked


def test_zero_transient_is_three_copies_of_the_largest_unit():
    wide = memory.TransformerShape(vocab=64, seq=8, width=128, heads=4, blocks=8)
    assert memory.zero_transient(wide) == 3 * 4 * wide.block_parameters  # a block
    big_vocab = memory.TransformerShape(vocab=4096, seq=8, width=64, heads=4, blocks=2)
    assert memory.zero_transient(big_vocab) == 3 * 4 * (64 * 4096 + 4096 + 2 * 64)
    split = memory.zero_transient(wide, tensor_parallel=2)
    assert split == 3 * 4 * max(wide.block_parameters // 2, 64 * 128 + 64 + 2 * 128)
    vocab_split = memory.zero_transient(big_vocab, tensor_parallel=4, vocab_parallel=True)
    assert vocab_split == 3 * 4 * ((64 * 4096 + 4096) // 4 + 2 * 64)  # the head, in quarters
    with pytest.raises(ValueError, match="tensor_parallel"):
        memory.zero_transient(wide, tensor_parallel=0)


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_the_rules_count_what_the_traced_backward_pass_reads(policy):
    """The per-layer rules against the graph: the forward tensors the gradient ops of a traced
    training step read (ResNet-50, both precisions; under mixed_float16 BatchNorm's float32 copy
    is read, the float16 tensor it was cast from is not)."""
    for model in (small_cnn(policy), _resnet50(policy)):
        mem = memory.profile(model)
        traced = memory.read_by_backward(model, 3)
        counted = 3 * (mem.kept_per_example + mem.float32_copy_per_example)
        # Not counted by the rules: the loss's few small tensors per example, and under mixed
        # precision the 16-bit copy of the batch a first convolution reads directly (the small
        # CNN's; ResNet-50 pads the batch first, and its convolution reads the padded tensor)
        if policy != "float32" and model.layers[0].name == "conv":
            counted += 3 * mem.input_per_example // 2
        assert abs(traced - counted) <= 0.001 * counted + 3 * 100, (model.name, traced, counted)


def _resnet50(policy):
    keras.mixed_precision.set_global_policy(policy)
    try:
        return keras.applications.ResNet50(weights=None, input_shape=(32, 32, 3), classes=4)
    finally:
        keras.mixed_precision.set_global_policy("float32")
