"""Checks for lesson 05's exercises (collectives and their communication cost).

Each check runs the learner's TensorFlow on its own random problem, through a ``send`` or a
replica context that counts what crosses between devices; hints never give the code.
"""

from __future__ import annotations

import numpy as np

from ..checks import course_code, exercise

__all__ = ["MUTATIONS", "compressed_all_reduce"]

SUM_TOLERANCE = (
    1e-2  # float16 keeps ~3 significant digits: the sum may differ by 1 % of its largest
)


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
    """reduce_scatter(values, devices, send) and all_gather(pieces, devices, send), as rings;
    run on fresh random tensors of a random length."""
    import tensorflow as tf

    n = len(devices)
    if n < 2:
        return "pass the setup cell's devices (course.devices): a ring needs at least two"
    if any(course_code(fn) for fn in (reduce_scatter, all_gather)):
        return "write both functions yourself: the course's code is not your answer"
    rng = np.random.default_rng()
    elements = n * int(rng.integers(2, 9))
    values = []
    for device in devices:
        with tf.device(device):
            values.append(tf.constant(rng.standard_normal(elements), tf.float32))
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


def _crossings(graph) -> list:
    """The dtype of every tensor that crosses between devices in a traced graph: each input of
    a collective op, and each tensor an op on one device reads from an op on another."""
    import tensorflow as tf

    def where(op):
        spec = tf.DeviceSpec.from_string(op.device or "")
        return (spec.device_type, spec.device_index) if spec.device_type else None

    found = []
    for op in graph.get_operations():
        if op.type.startswith(("Collective", "Nccl")) and op.inputs:
            found.append(op.inputs[0].dtype)
            continue
        for t in op.inputs:
            if where(t.op) and where(op) and where(t.op) != where(op):
                found.append(t.dtype)
    return [dtype for dtype in found if dtype.is_floating]


def _replica_problem(strategy):
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.Strategy) or strategy.num_replicas_in_sync < 2:
        return "pass the lesson's MirroredStrategy (two or more replicas) as the second argument"
    return None


def _gradient_step(strategy, reduce_fn, rng):
    """A traced step on a fresh random model and per-replica batches: (each replica's own
    gradients, what ``reduce_fn`` made of them, the dtypes that crossed between devices)."""
    import tensorflow as tf

    # The check's own strategy on the same devices, exchanging by copies between devices: every
    # MirroredStrategy of a process numbers its collectives from the same key, so collectives of
    # another shape under a second strategy abort the process's collective executor.
    strategy = tf.distribute.MirroredStrategy(
        strategy.extended.worker_devices, cross_device_ops=tf.distribute.ReductionToOneDevice()
    )
    d_in, hidden, d_out = (int(k) for k in rng.integers(3, 9, size=3))
    with strategy.scope():
        weights = [
            tf.Variable(rng.standard_normal((d_in, hidden)).astype(np.float32)),
            tf.Variable(rng.standard_normal((hidden, d_out)).astype(np.float32)),
        ]
    batch = [rng.standard_normal((strategy.num_replicas_in_sync, 4, k)) for k in (d_in, d_out)]
    x, y = (
        strategy.experimental_distribute_values_from_function(
            lambda ctx, a=a: tf.constant(a[ctx.replica_id_in_sync_group], tf.float32)
        )
        for a in batch
    )

    @tf.function
    def step(x, y):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.tanh(x @ weights[0]) @ weights[1] - y))
            grads = tape.gradient(loss, weights)
            return grads, reduce_fn(tf.distribute.get_replica_context(), grads)

        return strategy.run(replica_step, args=(x, y))

    crossed = _crossings(step.get_concrete_function(x, y).graph)
    own, reduced = step(x, y)
    local = lambda value: strategy.experimental_local_results(value)  # noqa: E731
    return [local(g) for g in own], [local(g) for g in reduced or []], crossed


@exercise("05.2")
def compressed_all_reduce(reduce_fn, strategy):
    """reduce_fn(ctx, grads) -> the float32 SUM of grads over replicas, sent as float16. Run on
    a fresh random model and batches; judged by every replica's result and by what crosses
    between devices in the traced step (collectives and copies), whatever calls made it."""
    import tensorflow as tf

    problem = _replica_problem(strategy)
    if problem:
        return problem
    own, reduced, crossed = _gradient_step(strategy, reduce_fn, np.random.default_rng())
    if len(reduced) != len(own):
        return f"return one gradient per variable ({len(own)}), in the order they came"
    if any(t.dtype != tf.float32 for g in reduced for t in g):
        return "your function returns 16-bit gradients: hand float32 back to the update"
    if not crossed:
        return "nothing crosses between the replicas in your step: they must exchange gradients"
    wide = sorted({dtype.name for dtype in crossed if dtype.size > 2})
    if wide:
        return f"{', '.join(wide)} tensors cross between the replicas in your step: compress first"
    for mine, theirs in zip(reduced, own, strict=True):
        exact = np.sum([np.asarray(t, np.float64) for t in theirs], axis=0)
        scale = float(np.abs(exact).max()) or 1.0
        gap = max(float(np.abs(np.asarray(t) - exact).max()) for t in mine)
        if gap > SUM_TOLERANCE * scale:
            return (
                f"a replica's result differs from the sum of every replica's gradient by "
                f"{gap / scale:.1%} of its largest value (allowed: {SUM_TOLERANCE:.0%}): is it "
                "the SUM over all replicas, scaled back exactly?"
            )
    return None


# Wrong answers derived from the solution (solutions/05_communication.ipynb), one plausible
# mistake each: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "wrong".
MUTATIONS: dict[str, list[tuple[str, str, str]]] = {
    "05.1": [
        (
            "the sum made on the sender",
            "with tf.device(devices[right]):\n                chunks[right][c]",
            "with tf.device(devices[i]):\n                chunks[right][c]",
        ),
        (
            "no tf.device of the receiver",
            "            with tf.device(devices[right]):\n"
            "                chunks[right][c] = chunks[right][c] + incoming\n",
            "            chunks[right][c] = chunks[right][c] + incoming\n",
        ),
        (
            "the mean, not the sum",
            "return [chunks[i][i] for i in range(n)]",
            "return [chunks[i][i] / n for i in range(n)]",
        ),
        (
            "sent to the left neighbour",
            "c, right = (i - 1 - step) % n, (i + 1) % n",
            "c, right = (i - 1 - step) % n, (i - 1) % n",
        ),
        (
            "the whole tensor sent at each step",
            "incoming = send(chunks[i][c], i, right)",
            "incoming = tf.split(send(tf.concat(chunks[i], 0), i, right), n)[c]",
        ),
        (
            "one step fewer",
            "    for step in range(n - 1):\n        for i in range(n):\n"
            "            c, right = (i - 1 - step) % n",
            "    for step in range(n - 2):\n        for i in range(n):\n"
            "            c, right = (i - 1 - step) % n",
        ),
        (
            "the gathered tensor made on one device",
            "        with tf.device(devices[i]):\n            gathered.append(",
            "        if True:\n            gathered.append(",
        ),
        (
            "the pieces in arrival order",
            "tf.concat([have[i][c] for c in range(n)], 0)",
            "tf.concat(list(have[i].values()), 0)",
        ),
    ],
    "05.2": [
        (
            "no compression",
            "halves = [tf.cast(g, tf.float16) for g in grads]",
            "halves = grads",
        ),
        (
            "compressed after the all-reduce",
            '[tf.cast(g, tf.float32) for g in ctx.all_reduce("SUM", halves)]',
            '[tf.cast(tf.cast(g, tf.float16), tf.float32) for g in ctx.all_reduce("SUM", grads)]',
        ),
        (
            "cast back to float32 before the exchange",
            'ctx.all_reduce("SUM", halves)',
            'ctx.all_reduce("SUM", [tf.cast(h, tf.float32) for h in halves])',
        ),
        ("MEAN for SUM", 'ctx.all_reduce("SUM", halves)', 'ctx.all_reduce("MEAN", halves)'),
        (
            "float16 handed back",
            'return [tf.cast(g, tf.float32) for g in ctx.all_reduce("SUM", halves)]',
            'return ctx.all_reduce("SUM", halves)',
        ),
        ("no all-reduce: the replica's own gradient", 'ctx.all_reduce("SUM", halves)', "halves"),
        (
            "the replica's own gradient times the replicas",
            'ctx.all_reduce("SUM", halves)',
            "[h * ctx.num_replicas_in_sync for h in halves]",
        ),
        (
            "the first gradient only",
            "halves = [tf.cast(g, tf.float16) for g in grads]",
            "halves = [tf.cast(g, tf.float16) for g in grads[:1]]",
        ),
    ],
}
