"""Checks for lesson 05's exercises (collectives and their communication cost).

Each check runs the learner's TensorFlow on its own random problem, through a ``send`` or a
replica context that counts what crosses between devices; hints never give the code.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from . import course_code, exercise

__all__ = []

# bfloat16 keeps 8 significant bits (7 stored, 1 implicit): rounding to nearest moves a value by
# at most 2^-8 of itself, its unit roundoff u (Kalamkar et al. 2019, "A Study of BFLOAT16 for
# Deep Learning Training", arXiv:1905.12322, section 2).
BF16_UNIT = 2.0**-8
LOSS_SCALE = 1e6  # 05.2's loss, scaled up as loss scaling does: past float16's largest, 65504


class _CountingSend:
    """send(x, src, dst): a copy of ``x`` on device ``dst``; counts the bytes each device sends
    to each other one."""

    def __init__(self, devices):
        self.devices, self.pairs = devices, {}

    def __call__(self, x, src, dst):
        import tensorflow as tf

        nbytes = x.shape.num_elements() * x.dtype.size
        self.pairs[src, dst] = self.pairs.get((src, dst), 0) + nbytes
        with tf.device(self.devices[dst]):
            return tf.identity(x)  # allowed by the explicit device policy: a copy asked for

    def sent(self, src: int) -> dict[int, int]:
        """Bytes device ``src`` sent, per receiver."""
        return {dst: b for (s, dst), b in self.pairs.items() if s == src}


@contextmanager
def _explicit_placement():
    """TensorFlow's explicit device policy: an op whose input another device holds raises
    ("Tensors on conflicting devices") instead of copying it silently."""
    import tensorflow as tf

    previous = tf.config.experimental.get_device_policy()
    tf.config.experimental.set_device_policy("explicit")
    try:
        yield
    finally:
        tf.config.experimental.set_device_policy(previous)


def _index(tensor) -> int:
    import tensorflow as tf

    return tf.DeviceSpec.from_string(tensor.device).device_index or 0


@exercise("05.1")
def halving_doubling(all_reduce, devices):
    """all_reduce(values, devices, send) -> every device's sum, by recursive halving (a
    reduce-scatter) then recursive doubling (an all-gather). Run on fresh random tensors of a
    random length, on every device given and on the first two, under the explicit device
    policy; judged by the sums, where they are, and what each device sent to whom."""
    n = len(devices)
    if n < 2 or n & (n - 1):
        return "pass the setup cell's devices (course.devices): a power of two, at least two"
    if course_code(all_reduce):
        return "write the function yourself: the course's code is not your answer"
    rng = np.random.default_rng()
    problem = _halving_problem(all_reduce, devices, rng)
    if problem or n == 2:
        return problem
    try:  # the same on two devices: nothing written for one number of devices
        problem = _halving_problem(all_reduce, devices[:2], rng)
    except Exception as err:  # noqa: BLE001 - a learner's code can fail in any way: say how
        return f"on two devices your function raised {type(err).__name__}: {err}"
    return problem and f"on two devices: {problem}"


def _halving_problem(all_reduce, devices, rng):
    import tensorflow as tf

    n = len(devices)
    elements = n * int(rng.integers(2, 9))
    values = []
    for device in devices:
        with tf.device(device):
            values.append(tf.constant(rng.standard_normal(elements), tf.float32))
    total = np.sum([v.numpy() for v in values], axis=0)
    send = _CountingSend(devices)
    try:
        with _explicit_placement():
            out = all_reduce(values, devices, send)
    except tf.errors.InvalidArgumentError as err:
        if "conflicting devices" not in str(err):
            raise
        return (
            "one of your ops reads a tensor that another device holds: run each op under "
            "tf.device of the device that holds its inputs, and move tensors only with send"
        )
    if out is None or len(out) != n:
        return f"return one tensor per device ({n}), got {out!r:.80}"
    problem = _traffic_problem(send, n, 4 * elements)
    if problem:
        return problem
    for i, mine in enumerate(out):
        if np.allclose(np.asarray(mine), total / n, atol=1e-5):
            return "your devices end with the mean; this all-reduce sums"
        if mine.shape != [elements] or not np.allclose(np.asarray(mine), total, atol=1e-5):
            return f"device {i} should end with the sum of every device's tensor, in order"
        if _index(mine) != i:
            return f"device {i}'s sum is not on device {i}: make it under that device"
    return None


def _traffic_problem(send, n: int, size: int):
    """What is wrong with who sent what to whom, or None: device i exchanges with i XOR d for
    d = 1, 2, ..., n/2, half of what it still reduces each way (Thakur, Rabenseifner and Gropp
    2005, "Optimization of Collective Communication Operations in MPICH", IJHPCA 19(1)):
    (n-1)/n of the tensor in each half, as much as a ring sends, in 2 log2(n) steps."""
    if not send.pairs:
        return "your function never calls send(x, src, dst): every copy must go through it"
    distances = [1 << k for k in range(n.bit_length() - 1)]
    for i in range(n):
        sent = send.sent(i)
        if set(sent) != {i ^ d for d in distances}:
            return (
                f"device {i} sent to devices {sorted(sent)}: in recursive halving and doubling "
                f"it exchanges with the {len(distances)} whose index differs from {i} in one bit"
            )
        wanted = 2 * (n - 1) * size // n
        if sum(sent.values()) != wanted:
            return (
                f"each device should send 2(N-1)/N of the tensor ({wanted} bytes): "
                f"yours sent {[sum(send.sent(j).values()) for j in range(n)]}"
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


class _Shape(Exception):
    """The learner's function returned something other than (gradients, error)."""


def _gradient_step(strategy, reduce_fn, rng):
    """A traced step on a fresh random model and per-replica batches: (each replica's own
    gradients, the gradients ``reduce_fn`` returned, the error it reported, the dtypes that
    crossed between devices), each as every replica's local values."""
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
                error = tf.tanh(x @ weights[0]) @ weights[1] - y
                loss = LOSS_SCALE * tf.reduce_mean(tf.square(error))
            grads = tape.gradient(loss, weights)
            answer = reduce_fn(tf.distribute.get_replica_context(), grads)
            if not (isinstance(answer, tuple | list) and len(answer) == 2):
                shape.append(f"return a pair (gradients, error), got {answer!r:.80}")
            elif not isinstance(answer[0], tuple | list) or len(answer[0]) != len(grads):
                shape.append(
                    f"return a pair: a list of {len(grads)} summed gradients (one per "
                    "variable, in order), then the error"
                )
            if shape:  # said after tracing: an error raised here would carry a traceback
                return grads, grads, tf.constant(0.0)
            return grads, list(answer[0]), answer[1]

        return strategy.run(replica_step, args=(x, y))

    shape = []
    crossed = _crossings(step.get_concrete_function(x, y).graph)
    if shape:
        raise _Shape(shape[0])
    local = strategy.experimental_local_results
    own, reduced, error = step(x, y)
    return [local(g) for g in own], [local(g) for g in reduced], local(error), crossed


@exercise("05.2")
def bfloat16_all_reduce(reduce_fn, strategy):
    """reduce_fn(ctx, grads) -> (the float32 SUM of grads over replicas, sent as bfloat16; the
    largest relative rounding error of this replica's gradients). Run on a fresh random model,
    its loss scaled past float16's range; judged by every replica's results and by what crosses
    between devices in the traced step (collectives and copies), whatever calls made it."""
    import tensorflow as tf

    problem = _replica_problem(strategy)
    if problem:
        return problem
    try:
        own, reduced, errors, crossed = _gradient_step(strategy, reduce_fn, np.random.default_rng())
    except _Shape as err:
        return str(err)
    if any(t.dtype != tf.float32 for g in reduced for t in g):
        return "your function returns 16-bit gradients: hand float32 back to the update"
    if not crossed:
        return "nothing crosses between the replicas in your step: they must exchange gradients"
    other = sorted({dtype.name for dtype in crossed if dtype != tf.bfloat16})
    if other:
        return f"{', '.join(other)} tensors cross between the replicas in your step: only bfloat16"
    return _sum_problem(own, reduced) or _error_problem(own, errors)


def _sum_problem(own, reduced):
    """Each replica's sum against the exact one: casting, then adding n values in bfloat16,
    rounds each term at most n times, so |error| <= gamma_n * sum|g|, gamma_n = n u / (1 - n u)
    (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., 2002, section 4.2)."""
    n = len(own[0])
    gamma = n * BF16_UNIT / (1 - n * BF16_UNIT)
    for mine, theirs in zip(reduced, own, strict=True):
        exact = np.sum([np.asarray(t, np.float64) for t in theirs], axis=0)
        bound = gamma * np.sum([np.abs(np.asarray(t, np.float64)) for t in theirs], axis=0)
        if any(np.any(np.abs(np.asarray(t) - exact) > bound + 1e-6) for t in mine):
            return (
                f"a replica's result is further from the sum of every replica's gradient than "
                f"{n} bfloat16 roundings allow: is it the SUM over all replicas, cast back?"
            )
    return None


def _error_problem(own, errors):
    """Each replica's reported error against max |bfloat16(g) - g| / |g| over its gradients."""
    import tensorflow as tf

    for replica, reported in enumerate(errors):
        grads = [np.asarray(g[replica], np.float64) for g in own]
        rounded = [
            np.asarray(tf.cast(tf.cast(g, tf.float32), tf.bfloat16), np.float64) for g in grads
        ]
        wanted = max(
            float(np.max(np.abs(r - g) / np.abs(g))) for r, g in zip(rounded, grads, strict=True)
        )
        if np.ndim(reported) != 0:
            return "report the error as one number per replica (a scalar tensor)"
        if not abs(float(reported) - wanted) <= 1e-2 * wanted:
            return (
                f"replica {replica} reported an error of {float(reported):.3g}: that is not the "
                "largest relative rounding error |bfloat16(g) - g| / |g| of its gradients"
            )
    return None


SWEEP = (4_000, 64_000, 512_000, 1_000_000, 4_000_000, 8_000_000, 16_000_000)  # bytes
BURST = 64_000  # a token bucket lets this much through at once: below it, bytes cost ~nothing


def _sweep(rng):
    """A random all-reduce sweep on one shared link, as lesson 05 measures it: (workers, alpha,
    beta, sizes, seconds). The 64 KB message fits in the token bucket's burst (its bytes cost
    little); the large ones carry a busy machine's noise, tens of milliseconds, drawn so that a
    line through them, or through every size, misses alpha by half of it or more."""
    workers = int(rng.integers(2, 5))
    mbit = float(rng.uniform(100, 500))
    alpha = float(rng.uniform(5e-3, 15e-3))
    beta = 2 * (workers - 1) * 8 / (mbit * 1e6)  # s per byte: 2(N-1) S bytes cross one link
    sizes = np.array(SWEEP, float)
    large = sizes > BURST
    ideal = alpha + np.where(sizes == BURST, 0.1, 1.0) * beta * sizes
    for _ in range(1000):
        jitter = rng.uniform(-0.03, 0.03, sizes.size) * ideal + rng.uniform(-0.02, 0.02, sizes.size)
        seconds = ideal + np.where(large, jitter, rng.uniform(-0.02, 0.02, sizes.size) * ideal)
        slope = np.polyfit(sizes[large], seconds[large], 1)
        fitted = seconds[0] - slope[0] * sizes[0]
        everything = np.polyfit(sizes, seconds, 1)[1]
        if (
            abs(slope[0] / beta - 1) < 0.05
            and abs(fitted / alpha - 1) < 0.15
            and min(abs(slope[1] - alpha), abs(everything - alpha)) > 0.5 * alpha
        ):
            return workers, alpha, beta, sizes, seconds
    raise RuntimeError("no sweep drawn that tells the fits apart")  # never seen


@exercise("05.3")
def alpha_beta(fit, beyond_factor=4):
    """fit(sizes, seconds, workers, beyond) -> (alpha in s, beta in s/byte, the shared link's
    rate in Mbit/s, the predicted seconds of an all-reduce of ``beyond`` bytes). Run on three
    fresh random sweeps (a latency, a rate, a number of workers, noise as on a busy machine),
    each asked twice: once for ``beyond_factor`` times the largest size (where beta*S is
    everything) and once for a quarter of the smallest (where alpha is nearly everything).
    alpha and beta are judged against the numbers that made each sweep; the rate against the
    one the answer's own beta implies (within 1 %: a megabit of 2**20 bits is 4.9 % off); each
    prediction against the alpha-beta model at its size, within the errors alpha and beta may
    have. Each sweep is then timed once more without the burst (its 64 KB message pays for all
    its bytes): beta, measured over the larger messages only, must not move."""
    rng = np.random.default_rng()
    for _ in range(3):
        workers, alpha, beta, sizes, seconds = _sweep(rng)
        for beyond in (int(beyond_factor * sizes[-1]), int(sizes[0]) // 4):
            hint = _fit_problem(fit, workers, alpha, beta, sizes, seconds, beyond)
            if hint:
                return hint
        hint = _burst_problem(fit, workers, beta, sizes, seconds)
        if hint:
            return hint
    return None


def _burst_problem(fit, workers, beta, sizes, seconds):
    """A hint when ``fit``'s beta moves once the burst's message pays for all its bytes (the
    larger messages' times as they were), or None. The move of a line through every size is
    small (about 0.1 %), but any: the right beta does not read that message at all."""
    unburst = np.where(sizes == BURST, seconds + 0.9 * beta * sizes, seconds)
    betas = [
        float(fit(list(map(int, sizes)), [float(t) for t in times], workers, int(sizes[-1]))[1])
        for times in (seconds, unburst)
    ]
    if not abs(betas[1] - betas[0]) <= 1e-9 * abs(betas[0]):
        return (
            "your beta moved when only the 64 KB message's time changed (the same link "
            "without its burst, the larger messages' times as they were): which messages "
            "measure beta, and which ones does the burst distort?"
        )
    return None


def _fit_problem(fit, workers, alpha, beta, sizes, seconds, beyond):
    """A hint unless ``fit``'s four numbers on this sweep are right, or None."""
    answer = fit(list(map(int, sizes)), [float(t) for t in seconds], workers, beyond)
    try:
        got_alpha, got_beta, got_mbit, got_t = (float(a) for a in answer)
    except (TypeError, ValueError):
        return (
            "return four numbers: alpha (seconds), beta (seconds per byte), the link's rate "
            f"(Mbit/s) and the predicted seconds at `beyond` bytes; got {answer!r:.80}"
        )
    if not abs(got_beta / beta - 1) <= 0.1:
        return (
            "your beta is not the time per byte that the large messages' times grow by: "
            "fit the slope where beta*S dominates, with sizes in bytes and times in seconds"
        )
    if not abs(got_alpha / alpha - 1) <= 0.25:
        return (
            "your alpha is not the cost of a message of almost no bytes: a line fitted "
            "through the large messages, or through zero, puts their noise (or nothing) "
            "in its place"
        )
    implied = 2 * (workers - 1) * 8 / got_beta / 1e6  # Mbit/s
    if not abs(got_mbit / implied - 1) <= 0.01:
        return (
            "your rate is not the one your beta implies: every worker's 2(N-1)/N * S bytes "
            "cross the one shared link, and a megabit is 10**6 bits"
        )
    # the errors alpha and beta may have, carried into the prediction
    if not abs(got_t - (alpha + beta * beyond)) <= 0.3 * alpha + 0.12 * beta * beyond:
        return f"your prediction for {beyond} bytes is not what the alpha-beta model gives"
    return None
