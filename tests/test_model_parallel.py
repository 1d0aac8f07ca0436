import random

import pytest
from helpers import run_python

from tflearn_helpers.topics.model_parallel import balance, group_sums

#: A tiny functional network named like a Keras ResNet (two residual blocks).
TINY = """
from tflearn_helpers import setup_course
setup_course(devices=3, verbose=False)
import numpy as np
import keras
import tensorflow as tf
from tflearn_helpers import model_parallel, placement

def tiny_resnet():
    keras.utils.set_random_seed(0)
    L = keras.layers
    inp = keras.Input((8, 8, 3))
    h = L.Conv2D(4, 3, padding="same", name="conv1_conv")(inp)
    h = L.BatchNormalization(name="conv1_bn")(h)
    a = L.Activation("relu", name="conv2_block1_out")(h)
    b = L.Conv2D(4, 3, padding="same", name="conv2_block2_conv")(a)
    h = L.Add(name="conv2_block2_add")([a, b])
    h = L.Activation("relu", name="conv2_block2_out")(h)
    h = L.GlobalAveragePooling2D(name="avg_pool")(h)
    return keras.Model(inp, L.Dense(3, activation="softmax", name="predictions")(h))
"""


def test_balance_minimises_the_largest_group():
    assert tuple(balance([1, 1, 1, 1, 4], 2)) == (3,)
    assert tuple(balance([5, 1, 1, 1], 2)) == (0,)
    assert tuple(balance([1, 2, 3], 3)) == (0, 1)
    assert tuple(balance([1, 2, 3], 1)) == ()


@pytest.mark.parametrize("seed", range(20))
def test_balance_matches_the_best_split_found_by_bisection(seed):
    """Against an independent method: the smallest largest-group cost by bisection over the
    cost a greedy packing needs (integer costs)."""
    rng = random.Random(seed)
    costs = [rng.randint(0, 9) for _ in range(rng.randint(2, 9))]
    k = rng.randint(1, len(costs))

    def groups_needed(limit):  # greedy: fill each group up to the limit
        groups, total = 1, 0
        for c in costs:
            if total + c > limit:
                groups, total = groups + 1, 0
            total += c
        return groups

    low, high = max(costs), sum(costs)
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if groups_needed(middle) <= k else (middle + 1, high)
    cuts = balance(costs, k)
    assert len(cuts) == k - 1 and list(cuts) == sorted(set(cuts))
    assert max(group_sums(costs, cuts)) == low, (costs, k, cuts)


def test_segments_cut_cleanly_and_size_their_activations():
    done = run_python(
        TINY
        + """
model = tiny_resnet()
assert model_parallel.block_boundaries(model) == ["conv2_block1_out", "conv2_block2_out"]
segs = model_parallel.segment_models(model, ["conv2_block1_out"])
assert sum(m.count_params() for m in segs) == model.count_params()
x = tf.random.normal((4, 8, 8, 3))
np.testing.assert_allclose(segs[1](segs[0](x)).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
"""
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_segments_refuse_bad_cuts_clearly():
    done = run_python(
        TINY
        + """
model = tiny_resnet()
def fails(match, cuts):
    try:
        model_parallel.segment_models(model, cuts)
    except ValueError as err:
        assert match in str(err), err
    else:
        raise AssertionError(f"no error for {cuts}")
fails("conv9_block1_out", ["conv9_block1_out"])  # Keras names the missing layer
fails("", ["conv2_block2_conv"])  # inside a block: keras.Model refuses it
try:
    model_parallel.block_boundaries(keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]))
except ValueError as err:
    assert "conv3_block1_out" in str(err)
else:
    raise AssertionError("no error for a model without blocks")
"""
    )
    assert done.returncode == 0, done.stderr[-3000:]
