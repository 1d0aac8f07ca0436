"""Checks for lesson 05's exercises (collectives and their communication cost).

Each check runs the learner's TensorFlow on its own random problem, through a ``send`` or a
replica context that counts what crosses between devices; hints never give the code.
"""

from __future__ import annotations

import numpy as np

from ..checks import exercise

__all__ = ["compressed_all_reduce"]

UPDATE_TOLERANCE = 1e-2  # float16 keeps ~3 significant digits: the update may differ by 1 %


class _CountingSend:
    """send(x, src, dst): a copy of ``x`` on device ``dst``; counts bytes and who sent where."""

    def __init__(self, devices):
        self.devices, self.bytes, self.hops = devices, [0] * len(devices), set()

    def __call__(self, x, src, dst):
        import tensorflow as tf

        self.bytes[src] += x.shape.num_elements() * x.dtype.size
        self.hops.add((src, dst))
        with tf.device(self.devices[dst]):
            return tf.identity(x)


def _index(tensor) -> int:
    import tensorflow as tf

    return tf.DeviceSpec.from_string(tensor.device).device_index or 0


@exercise("05.1")
def ring_collectives(reduce_scatter, all_gather, devices):
    """reduce_scatter(values, devices, send) and all_gather(pieces, devices, send), as rings."""
    import tensorflow as tf

    n = len(devices)
    if n < 2:
        return "pass the setup cell's devices (course.devices): a ring needs at least two"
    elements = 6 * n
    values = []
    for i, device in enumerate(devices):
        with tf.device(device):
            values.append(tf.random.stateless_normal([elements], seed=(i, 11)))
    total = np.sum([v.numpy() for v in values], axis=0).reshape(n, -1)
    owned, problem = _run_ring(reduce_scatter, "reduce_scatter", values, devices, 4 * elements)
    if problem:
        return problem
    for i, piece in enumerate(owned):
        if piece.shape != [elements // n]:
            return f"device {i}'s result has shape {piece.shape}: each device owns one chunk"
        if np.allclose(piece.numpy(), total[i] / n, atol=1e-5):
            return "your chunks hold the mean; reduce-scatter here sums them"
        if not np.allclose(piece.numpy(), total[i], atol=1e-5):
            return f"device {i} should end with the sum of chunk {i} over all devices"
        if _index(piece) != i:
            return f"the sum of chunk {i} is not on device {i}: add it where it arrives"
    gathered, problem = _run_ring(all_gather, "all_gather", owned, devices, 4 * elements)
    if problem:
        return problem
    for i, full in enumerate(gathered):
        if not np.allclose(full.numpy(), total.reshape(-1), atol=1e-5):
            return f"device {i} should end with every chunk, in chunk order"
        if _index(full) != i:
            return f"device {i}'s gathered tensor is not on device {i} (tf.device)"
    return None


def _run_ring(fn, name, inputs, devices, nbytes):
    """Call the learner's ``fn`` with a counting send; (its result, what is wrong or None)."""
    n, each = len(devices), "one chunk" if name == "reduce_scatter" else "one tensor"
    send = _CountingSend(devices)
    out = fn(inputs, devices, send)
    if out is None or len(out) != n:
        return None, f"{name} should return {each} per device ({n}), got {out!r:.80}"
    return out, _ring_problem(send, n, nbytes, name)


def _ring_problem(send, n: int, size: int, name: str):
    if not send.hops:
        return f"your {name} never calls send(x, src, dst): every copy must go through it"
    if any(dst != (src + 1) % n for src, dst in send.hops):
        return f"in a ring, device i sends only to device (i + 1) % {n}; your {name} does not"
    wanted = (n - 1) * size // n
    if send.bytes != [wanted] * n:
        return (
            f"in {name}, each device should send {n - 1} chunks of 1/{n} of the tensor "
            f"({wanted} bytes); yours sent {send.bytes}"
        )
    return None


class _RecordingContext:
    """A replica context that records the dtype and size of everything all-reduced."""

    def __init__(self, ctx, calls):
        self._ctx, self._calls = ctx, calls

    def all_reduce(self, reduce_op, value, options=None):
        import tensorflow as tf

        self._calls.extend((t.dtype, t.shape.num_elements()) for t in tf.nest.flatten(value))
        return self._ctx.all_reduce(reduce_op, value, options)

    def __getattr__(self, name):
        return getattr(self._ctx, name)


def _one_step(strategy, reduce_fn, inits, data):
    """The weights after one SGD step whose gradients go through ``reduce_fn(ctx, grads)``."""
    import tensorflow as tf

    with strategy.scope():
        weights = [tf.Variable(w) for w in inits]
    calls, dtypes = [], []

    @tf.function
    def step(x, y):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.tanh(x @ weights[0]) @ weights[1] - y))
            grads = tape.gradient(loss, weights)
            reduced = reduce_fn(
                _RecordingContext(tf.distribute.get_replica_context(), calls), grads
            )
            dtypes.extend(g.dtype for g in reduced)  # recorded while tracing
            for w, g in zip(weights, reduced, strict=True):
                w.assign_sub(0.5 * tf.cast(g, w.dtype))

        strategy.run(replica_step, args=(x, y))

    step(*data)
    return [w.numpy() for w in weights], calls, dtypes


@exercise("05.2")
def compressed_all_reduce(reduce_fn, strategy):
    """reduce_fn(ctx, grads) -> the float32 SUM of grads over replicas, sent as float16."""
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.Strategy) or strategy.num_replicas_in_sync < 2:
        return "pass the lesson's MirroredStrategy (two or more replicas) as the second argument"
    inits = [
        tf.random.stateless_normal([8, 16], seed=(1, 1)),
        tf.random.stateless_normal([16, 2], seed=(1, 2)),
    ]
    per_replica = [
        strategy.experimental_distribute_values_from_function(
            lambda ctx, k=k: tf.random.stateless_normal(
                [4, 8 if k == 0 else 2], seed=(ctx.replica_id_in_sync_group, k)
            )
        )
        for k in range(2)
    ]

    def plain(ctx, grads):
        return ctx.all_reduce("SUM", grads)

    start = [w.numpy() for w in inits]
    expected, plain_calls, _ = _one_step(strategy, plain, inits, per_replica)
    got, calls, dtypes = _one_step(strategy, reduce_fn, inits, per_replica)
    if not calls:
        return "your function never calls ctx.all_reduce: the replicas must exchange gradients"
    plain_bytes = sum(dt.size * n for dt, n in plain_calls)
    sent = sum(dt.size * n for dt, n in calls)
    if any(dt != tf.float32 for dt in dtypes):
        return "your function returns 16-bit gradients: hand float32 back to the update"
    if sent > plain_bytes // 2:
        return f"your all-reduce moves {sent} bytes, the plain one {plain_bytes}: compress first"
    step = max(float(np.abs(e - s).max()) for e, s in zip(expected, start, strict=True))
    gap = max(float(np.abs(g - e).max()) for g, e in zip(got, expected, strict=True))
    if gap > UPDATE_TOLERANCE * step:
        return (
            f"your update differs from the plain step's by {gap / step:.1%} of the step "
            f"(allowed: {UPDATE_TOLERANCE:.0%}): is it the SUM, scaled back exactly?"
        )
    return None
