"""Checks for lesson 06's exercises (ZeRO-1 and a tensor-parallel MLP).

Each check runs the learner's TensorFlow code on its own small problem and compares it with
plain data parallelism or with one device; hints say what went wrong, never the code.
"""

from __future__ import annotations

import numpy as np

from .. import sharding
from ..checks import exercise

__all__ = ["zero1"]


def _local(strategy, variable):
    return strategy.experimental_local_results(variable)


@exercise("06.1")
def zero1(make_zero1, strategy, steps=3, lr=0.1, beta=0.9):
    """``make_zero1(strategy, w0, lr, beta) -> (params, momentum, update)``: momentum SGD
    whose momentum is sharded 1/N per replica; ``update(grad)`` runs in ``strategy.run``.

    Right weights are not enough: the step's traced graph may copy between devices at most
    1.25x the bytes of plain data parallelism's all-reduce. A reduce-scatter and a direct
    all-gather move 1x; with ``ReductionToOneDevice``'s ``all_gather`` (through one device)
    1.25x at N = 2; any all-reduce of the whole gradient 1.5x or more."""
    import tensorflow as tf

    n = strategy.num_replicas_in_sync
    rng = np.random.default_rng(8)
    w0 = rng.normal(size=4 * n).astype("float32")
    grads = rng.normal(size=(steps, n, 4 * n)).astype("float32")  # each replica's own
    params, momentum, update = make_zero1(strategy, tf.constant(w0), lr, beta)
    for name, var in (("params", params), ("momentum", momentum)):
        if len(_local(strategy, var)) != n:
            return f"{name} must have one copy per replica: create it in strategy.scope()"
    sizes = {int(np.prod(c.shape)) for c in _local(strategy, momentum)}
    if sizes != {w0.size // n}:
        return "each replica holds the whole optimizer state: ZeRO-1 keeps 1/N of it on each"

    @tf.function
    def step(per_replica):  # tf.identity places each gradient on its replica's device
        strategy.run(lambda grad: update(tf.identity(grad)), args=(per_replica,))

    for k in range(steps):
        mine = strategy.experimental_distribute_values_from_function(
            lambda ctx, k=k: tf.constant(grads[k][ctx.replica_id_in_sync_group])
        )
        step(mine)
    w, m = w0.copy(), np.zeros_like(w0)
    for k in range(steps):  # plain data parallelism: the sum of the replicas' gradients
        m = beta * m + grads[k].sum(axis=0)
        w -= lr * m
    copies = [np.asarray(c) for c in _local(strategy, params)]
    if not all(np.allclose(c, w, atol=1e-4) for c in copies):
        if all(np.array_equal(c, w0) for c in copies):
            return "the weights did not change: write the updated shards back into params"
        return (
            "the replicas' weights differ from plain data parallelism: does every replica "
            "use the gradient summed over all replicas, and get every shard back afterwards?"
        )
    moved = sum(b or 0 for *_, b in sharding.transfers(step.get_concrete_function(mine)))
    plain = 2 * (n - 1) * w0.nbytes  # a ring all-reduce of the gradient, all replicas
    if moved > 1.25 * plain:
        return (
            f"the weights are right, but the step copies {moved / plain:.2f}x the bytes of plain "
            "data parallelism between devices: a replica needs only the sum of its own shard "
            "of the gradients, not the whole sum"
        )
    return None


@exercise("06.2")
def tensor_parallel_mlp(make_tp_mlp, devices):
    """``make_tp_mlp(w1, b1, w2, b2, devices) -> (pieces, forward)``: the MLP
    ``gelu(x w1 + b1) w2 + b2`` with w1 (and b1) split by columns and w2 by rows over
    ``devices``; ``pieces`` are the variables holding w1, b1 and w2 (b2 stays whole)."""
    import tensorflow as tf

    rng = np.random.default_rng(9)
    d, hidden = 4, 8 * len(devices)
    w1, w2 = rng.normal(size=(d, hidden)), rng.normal(size=(hidden, d))
    b1, b2 = rng.normal(size=hidden), rng.normal(size=d)
    w1, w2, b1, b2 = (tf.constant(a, tf.float32) for a in (w1, w2, b1, b2))
    x = tf.constant(rng.normal(size=(3, d)), tf.float32)
    pieces, forward = make_tp_mlp(w1, b1, w2, b2, devices)
    if not pieces or not all(isinstance(p, tf.Variable) for p in pieces):
        return "return the tf.Variable pieces your MLP trains, as a list"
    held = {dev: 0 for dev in devices}
    for p in pieces:
        for dev in devices:
            if p.device.endswith(tf.DeviceSpec.from_string(dev).to_string().split("device:")[-1]):
                held[dev] += int(np.prod(p.shape))
    if sum(1 for v in held.values() if v) < len(devices):
        return "your pieces do not live on every device: create piece i under tf.device(devices[i])"
    if len(set(held.values())) != 1:
        return "the devices hold unequal shares of the weights: split both matrices evenly"
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = forward(x)
        loss = tf.reduce_sum(tf.sin(y))
    with tf.GradientTape() as ref_tape:
        ref_tape.watch([x, w1, b1, w2])
        y_ref = tf.nn.gelu(x @ w1 + b1) @ w2 + b2
        ref_loss = tf.reduce_sum(tf.sin(y_ref))
    if y.shape != y_ref.shape or not np.allclose(y, y_ref, atol=1e-4):
        return (
            "the output differs from the one-device MLP: are the partial outputs of all "
            "devices summed (the all-reduce), with b2 added once?"
        )
    ref = ref_tape.gradient(ref_loss, [x, w1, b1, w2])
    got = tape.gradient(loss, [x, *pieces])
    if any(g is None for g in got):
        return "some pieces get no gradient: use every piece in forward"
    norm_ref = sum(float(tf.reduce_sum(g**2)) for g in ref[1:])
    norm_got = sum(float(tf.reduce_sum(tf.convert_to_tensor(g) ** 2)) for g in got[1:])
    if not np.allclose(got[0], ref[0], atol=1e-4) or not np.isclose(norm_got, norm_ref, rtol=1e-3):
        return "the gradients differ from the one-device MLP's"
    return None


MUTATIONS: dict[str, list[tuple[str, str, str]]] = {}
