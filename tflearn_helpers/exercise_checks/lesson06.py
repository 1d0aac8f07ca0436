"""Checks for lesson 06's exercises (ZeRO-1 and a tensor-parallel MLP).

Each check runs the learner's TensorFlow code on its own fresh random problem and compares it
with plain data parallelism or with one device, then looks at what each device holds and does:
the variables made and where, the bytes the traced step copies between devices, the products
each device ran. Hints say what went wrong, never the code.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from .. import sharding
from ..checks import course_code, exercise
from ..placement import PLUMBING_OPS, op_devices, short_device

__all__ = ["MUTATIONS", "zero1"]


def _local(strategy, variable):
    return strategy.experimental_local_results(variable)


@contextmanager
def _recording_variables():
    """Inside: every variable created (each replica's copy on its own) is recorded as
    (device, number of values) in the list it yields."""
    import tensorflow as tf

    made: list[tuple[str, int]] = []

    def record(next_creator, **kwargs):
        variable = next_creator(**kwargs)
        made.append((short_device(variable.device), int(np.prod(variable.shape))))
        return variable

    with tf.variable_creator_scope(record):
        yield made


def _state_problem(strategy, params, momentum, made, size: int):
    """A hint unless params and momentum have one copy per replica, on its device, and each
    device holds no more than the weights plus 1/N of the optimizer state."""
    n, devices = strategy.num_replicas_in_sync, strategy.extended.worker_devices
    for name, var in (("params", params), ("momentum", momentum)):
        copies = _local(strategy, var)
        if len(copies) != n:
            return f"{name} must have one copy per replica: create it in strategy.scope()"
        if sorted(short_device(c.device) for c in copies) != sorted(map(short_device, devices)):
            return f"the copies of {name} are not one on each replica's device"
    if {int(np.prod(c.shape)) for c in _local(strategy, momentum)} != {size // n}:
        return "each replica holds the whole optimizer state: ZeRO-1 keeps 1/N of it on each"
    held: dict[str, int] = {}
    for device, values in made:
        held[device] = held.get(device, 0) + values
    if max(held.values(), default=0) > size + size // n:
        return (
            f"your function made {max(held.values())} values of variables on one device: with "
            f"{size} weights, ZeRO-1 keeps the weights and only 1/{n} of the optimizer state "
            "there (is a whole-size state kept somewhere?)"
        )
    return None


def _plain_dp(w0, grads, lr, beta):
    w, m = w0.copy(), np.zeros_like(w0)
    for g in grads:  # plain data parallelism: the sum of the replicas' gradients
        m = beta * m + g.sum(axis=0)
        w -= lr * m
    return w


@exercise("06.1")
def zero1(make_zero1, strategy, steps=3, lr=0.1, beta=0.9):
    """``make_zero1(strategy, w0, lr, beta) -> (params, momentum, update)``: momentum SGD
    whose momentum is sharded 1/N per replica; ``update(grad)`` runs in ``strategy.run``.
    Fresh random weights, size and per-replica gradients each time.

    Right weights are not enough: every variable the function makes is recorded (each device
    may hold the weights and 1/N of the state), and the step's traced graph may copy between
    devices at most 1.25x the bytes of plain data parallelism's all-reduce. A reduce-scatter and
    a direct all-gather move 1x; with ``ReductionToOneDevice``'s ``all_gather`` (through one
    device) 1.25x at N = 2; any all-reduce of the whole gradient 1.5x or more."""
    import tensorflow as tf

    if course_code(make_zero1):
        return "write make_zero1 yourself: the course's code is not your answer"
    n, rng = strategy.num_replicas_in_sync, np.random.default_rng()
    w0 = rng.normal(size=n * int(rng.integers(2, 7))).astype("float32")
    grads = rng.normal(size=(steps, n, w0.size)).astype("float32")  # each replica's own
    with _recording_variables() as made:
        params, momentum, update = make_zero1(strategy, tf.constant(w0), lr, beta)

        @tf.function
        def step(per_replica):  # tf.identity places each gradient on its replica's device
            strategy.run(lambda grad: update(tf.identity(grad)), args=(per_replica,))

        problem = _state_problem(strategy, params, momentum, made, w0.size)
        if problem:
            return problem
        for k in range(steps):
            mine = strategy.experimental_distribute_values_from_function(
                lambda ctx, k=k: tf.constant(grads[k][ctx.replica_id_in_sync_group])
            )
            step(mine)
    problem = _state_problem(strategy, params, momentum, made, w0.size)  # made in the step too
    if problem:
        return problem
    w = _plain_dp(w0, grads, lr, beta)
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


def _mlp_problem(w1, b1, w2, b2, x, pieces, forward):
    """A hint unless forward's output and gradients match the one-device MLP's."""
    import tensorflow as tf

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


def _products_problem(forward, x, devices, hidden: int):
    """A hint unless every device ran matrix products, and none on the whole hidden layer:
    read from the ops TensorFlow ran (and where) and from the traced graph's shapes."""
    import tensorflow as tf

    ran = [(op, d) for op, d in op_devices(forward, x) if op not in PLUMBING_OPS]
    where = {d for op, d in ran if "MatMul" in op or op == "Einsum"}
    missing = sorted({short_device(d) for d in devices} - where)
    if missing:
        return (
            f"no matrix product ran on {missing}: each device should multiply by its own "
            "pieces, where they live"
        )
    graph = tf.function(getattr(forward, "python_function", forward)).get_concrete_function(x)
    for op in graph.graph.get_operations():
        if "MatMul" in op.type or op.type == "Einsum":
            dims = {d for t in op.inputs for d in t.shape.as_list()}
            if hidden in dims:
                return (
                    "a matrix product runs on the whole hidden layer: each device should "
                    "compute only its share of it"
                )
    return None


@exercise("06.2")
def tensor_parallel_mlp(make_tp_mlp, devices):
    """``make_tp_mlp(w1, b1, w2, b2, devices) -> (pieces, forward)``: the MLP
    ``gelu(x w1 + b1) w2 + b2`` with w1 (and b1) split by columns and w2 by rows over
    ``devices``; ``pieces`` are the variables holding w1, b1 and w2 (b2 stays whole). Fresh
    random sizes and values; judged by the output, the gradients, where each piece lives, and
    where the products ran."""
    import tensorflow as tf

    if course_code(make_tp_mlp):
        return "write make_tp_mlp yourself: the course's code is not your answer"
    rng = np.random.default_rng()
    # the hidden width is larger than every other size: a product on it is a whole matrix's
    d, hidden = int(rng.integers(3, 8)), max(2, len(devices)) * int(rng.integers(4, 8))
    w1, w2 = rng.normal(size=(d, hidden)), rng.normal(size=(hidden, d))
    b1, b2 = rng.normal(size=hidden), rng.normal(size=d)
    w1, w2, b1, b2 = (tf.constant(a, tf.float32) for a in (w1, w2, b1, b2))
    x = tf.constant(rng.normal(size=(int(rng.integers(2, 6)), d)), tf.float32)
    pieces, forward = make_tp_mlp(w1, b1, w2, b2, devices)
    if not pieces or not all(isinstance(p, tf.Variable) for p in pieces):
        return "return the tf.Variable pieces your MLP trains, as a list"
    held = {short_device(dev): 0 for dev in devices}
    for p in pieces:
        if short_device(p.device) in held:
            held[short_device(p.device)] += int(np.prod(p.shape))
    if sum(1 for v in held.values() if v) < len(devices):
        return "your pieces do not live on every device: create piece i under tf.device(devices[i])"
    if len(set(held.values())) != 1:
        return "the devices hold unequal shares of the weights: split both matrices evenly"
    return _mlp_problem(w1, b1, w2, b2, x, pieces, forward) or _products_problem(
        forward, x, devices, hidden
    )


# Wrong answers derived from the solution (solutions/06_sharding_and_memory.ipynb), one
# plausible mistake each: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "wrong".
MUTATIONS: dict[str, list[tuple[str, str, str]]] = {
    "06.1": [
        (
            "a full-size momentum on every replica, its slice copied into the shard returned",
            "        momentum = tf.Variable(tf.zeros([size // n]), **on_read)\n",
            "        momentum = tf.Variable(tf.zeros([size // n]), **on_read)\n"
            "        full = tf.Variable(tf.zeros([size]), **on_read)  # the whole momentum\n",
        ),
        (
            "no strategy.scope()",
            "    with strategy.scope():\n        params",
            "    if True:\n        params",
        ),
        ("the momentum not sharded", "tf.zeros([size // n])", "tf.zeros([size])"),
        ("MEAN for SUM in the reduce-scatter", 'reduce_to("sum", p, d)', 'reduce_to("mean", p, d)'),
        (
            "another replica's shard kept",
            "args=tuple(tf.split(grad, n)))[r]",
            "args=tuple(tf.split(grad, n)))[(r + 1) % n]",
        ),
        (
            "the whole gradient all-reduced, then sliced",
            "mine = ctx.merge_call(reduce_scatter, args=tuple(tf.split(grad, n)))[r]",
            'mine = tf.reshape(ctx.all_reduce("sum", grad), [n, -1])[r]',
        ),
        (
            "no all-gather: only the own shard written back",
            "params.assign(ctx.merge_call(all_gather, args=(new,)))",
            "params.assign(tf.reshape(tf.tensor_scatter_nd_update("
            "tf.reshape(params, [n, -1]), [[r]], new[None]), [-1]))",
        ),
        (
            "no momentum: plain SGD on the shard",
            "new = tf.reshape(params, [n, -1])[r] - lr * momentum",
            "new = tf.reshape(params, [n, -1])[r] - lr * mine",
        ),
    ],
    "06.2": [
        (
            "the pieces concatenated back into whole matrices (every product on one device)",
            "        partial = []\n"
            "        for d, (a, b, c) in zip(devices, shards, strict=True):\n"
            "            with tf.device(d):\n"
            "                partial.append(tf.nn.gelu(x @ a + b) @ c)\n"
            "        return tf.add_n(partial) + b2  # the all-reduce\n",
            "        a, b, c = (tf.concat(list(p), k) for p, k in zip(zip(*shards), (1, 0, 0)))\n"
            "        return tf.nn.gelu(x @ a + b) @ c + b2\n",
        ),
        (
            "no tf.device in forward",
            "            with tf.device(d):\n                partial.append(",
            "            if True:\n                partial.append(",
        ),
        (
            "every piece made on the first device",
            "        with tf.device(d):\n            shards.append(",
            "        with tf.device(devices[0]):\n            shards.append(",
        ),
        ("relu for gelu", "tf.nn.gelu(x @ a + b)", "tf.nn.relu(x @ a + b)"),
        (
            "b2 added on every device",
            "partial.append(tf.nn.gelu(x @ a + b) @ c)",
            "partial.append(tf.nn.gelu(x @ a + b) @ c + b2)",
        ),
        ("the mean of the partial outputs", "tf.add_n(partial) + b2", "tf.add_n(partial) / n + b2"),
        ("only the first device's output", "tf.add_n(partial) + b2", "partial[0] + b2"),
        ("w2 split by columns", "tf.split(w2, n)", "tf.split(w2, n, axis=1)"),
    ],
}
