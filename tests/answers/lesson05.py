"""The tables tests/test_mutations.py runs against the checks of lesson 05
(tflearn_helpers/checks/lesson05.py): ``MUTATIONS``, wrong answers made of the solution's
lines (each must be judged wrong, with a hint), and ``RIGHT_ANSWERS``, right answers written
differently (each must be judged right). Test data: kept out of the learner's wheel."""

from __future__ import annotations

# Wrong answers derived from the solution (solutions/05_communication.ipynb), one plausible
# mistake each: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "wrong".
MUTATIONS: dict[str, list[tuple[str, str, str]]] = {
    "05.1": [
        (
            "the split made on the default device",
            "        with tf.device(devices[i]):\n            chunks.append(tf.split(v, n))",
            "        if True:\n            chunks.append(tf.split(v, n))",
        ),
        (
            "the sum made on the sender",
            "with tf.device(devices[i ^ d]):",
            "with tf.device(devices[i]):",
        ),
        (
            "a ring's partner, not the one a bit away",
            "incoming = send(chunks[i][c], i, i ^ d)\n"
            "                    with tf.device(devices[i ^ d]):\n"
            "                        chunks[i ^ d][c] = chunks[i ^ d][c] + incoming",
            "j = (i + d) % n\n"
            "                    incoming = send(chunks[i][c], i, j)\n"
            "                    with tf.device(devices[j]):\n"
            "                        chunks[j][c] = chunks[j][c] + incoming",
        ),
        (
            "every chunk it holds sent at each halving step",
            "if c & d != i & d:  # the partner's half: send it there, add it there\n",
            "if True:\n",
        ),
        (
            "the mean, not the sum",
            "summed.append(tf.concat(chunks[i], 0))",
            "summed.append(tf.concat(chunks[i], 0) / n)",
        ),
        (
            "the last halving step left out",
            "distances = [n >> k for k in range(1, n.bit_length())]",
            "distances = [n >> k for k in range(1, n.bit_length() - 1)] or [1]",
        ),
        (
            "its own half sent away",
            "if c & d != i & d:",
            "if c & d == i & d:",
        ),
        (
            "the gathered chunks not passed on",
            "        mine = [mine[i] + mine[i ^ d] for i in range(n)]\n",
            "",
        ),
        (
            "the chunks in arrival order",
            "summed.append(tf.concat(chunks[i], 0))",
            "summed.append(tf.concat([chunks[i][c] for c in mine[i]], 0))",
        ),
        (
            "written for four devices",
            "n = len(devices)",
            "n = 4",
        ),
    ],
    "05.2": [
        (
            "float16 for bfloat16",
            "halves = [tf.cast(g, tf.bfloat16) for g in grads]",
            "halves = [tf.cast(g, tf.float16) for g in grads]",
        ),
        (
            "compressed after the all-reduce",
            'return [tf.cast(s, tf.float32) for s in ctx.all_reduce("SUM", halves)]',
            "return [tf.cast(tf.cast(s, tf.bfloat16), tf.float32)"
            ' for s in ctx.all_reduce("SUM", grads)]',
        ),
        (
            "cast back to float32 before the exchange",
            'ctx.all_reduce("SUM", halves)',
            'ctx.all_reduce("SUM", [tf.cast(h, tf.float32) for h in halves])',
        ),
        ("MEAN for SUM", 'ctx.all_reduce("SUM", halves)', 'ctx.all_reduce("MEAN", halves)'),
        (
            "bfloat16 handed back",
            'return [tf.cast(s, tf.float32) for s in ctx.all_reduce("SUM", halves)]',
            'return ctx.all_reduce("SUM", halves)',
        ),
        ("no all-reduce: the replica's own gradient", 'ctx.all_reduce("SUM", halves)', "halves"),
        (
            "the absolute error, not the relative",
            "errors = [tf.abs(r - g) / tf.abs(g) for",
            "errors = [tf.abs(r - g) for",
        ),
        (
            "the error relative to the largest gradient",
            "errors = [tf.abs(r - g) / tf.abs(g) for",
            "errors = [tf.abs(r - g) / tf.reduce_max(tf.abs(g)) for",
        ),
        (
            "the mean error, not the largest",
            "error = tf.reduce_max([tf.reduce_max(e) for e in errors])",
            "error = tf.reduce_mean([tf.reduce_mean(e) for e in errors])",
        ),
        (
            "the first gradient only",
            'ctx.all_reduce("SUM", halves)',
            'ctx.all_reduce("SUM", halves[:1])',
        ),
        (
            "every replica's float32 gradient gathered, then summed",
            'return [tf.cast(s, tf.float32) for s in ctx.all_reduce("SUM", halves)], error',
            "every = [ctx.all_gather(g[None], axis=0) for g in grads]\n"
            "    return [tf.reduce_sum(e, axis=0) for e in every], error",
        ),
        (
            "the sum alone, no error",
            'return [tf.cast(s, tf.float32) for s in ctx.all_reduce("SUM", halves)], error',
            'return [tf.cast(s, tf.float32) for s in ctx.all_reduce("SUM", halves)]',
        ),
    ],
    "05.3": [
        (
            "alpha and beta swapped",
            "return alpha, beta, 8 * rate / 1e6, alpha + beta * beyond",
            "return beta, alpha, 8 * rate / 1e6, alpha + beta * beyond",
        ),
        (
            "sizes in bits",
            "sizes, seconds = np.asarray(sizes, float)",
            "sizes, seconds = 8 * np.asarray(sizes, float)",
        ),
        (
            "least squares through the origin",
            "    beta = np.polyfit(sizes[large], seconds[large], 1)[0]\n"
            "    smallest = np.argmin(sizes)  # alpha: what the smallest costs beyond beta*S\n"
            "    alpha = seconds[smallest] - beta * sizes[smallest]\n",
            "    beta = np.sum(sizes * seconds) / np.sum(sizes**2)\n    alpha = 0.0\n",
        ),
        (
            "alpha from the large messages' line",
            "alpha = seconds[smallest] - beta * sizes[smallest]",
            "alpha = np.polyfit(sizes[large], seconds[large], 1)[1]",
        ),
        (
            "one least squares over every size",
            "    beta = np.polyfit(sizes[large], seconds[large], 1)[0]\n"
            "    smallest = np.argmin(sizes)  # alpha: what the smallest costs beyond beta*S\n"
            "    alpha = seconds[smallest] - beta * sizes[smallest]\n",
            "    beta, alpha = np.polyfit(sizes, seconds, 1)\n",
        ),
        (
            "beta from the small messages",
            "large = sizes > 64_000",
            "large = sizes <= 64_000",
        ),
        (
            "beta through every size, alpha from the smallest",
            "beta = np.polyfit(sizes[large], seconds[large], 1)[0]",
            "beta = np.polyfit(sizes, seconds, 1)[0]",
        ),
        ("the 64 KB message counted as large", "large = sizes > 64_000", "large = sizes >= 64_000"),
        ("the rate in megabytes", "8 * rate / 1e6", "rate / 1e6"),
        ("the rate in binary megabits", "8 * rate / 1e6", "8 * rate / 1024**2"),
        (
            "the prediction from the bytes alone",
            "alpha + beta * beyond",
            "beta * beyond",
        ),
        ("the rate from beta alone", "rate = 2 * (workers - 1) / beta", "rate = 1 / beta"),
        (
            "the rate of one link per worker",
            "rate = 2 * (workers - 1) / beta",
            "rate = 2 * (workers - 1) / workers / beta",
        ),
        (
            "the prediction at the largest size measured",
            "alpha + beta * beyond",
            "alpha + beta * sizes.max()",
        ),
    ],
}

# Right answers written differently from the solution, as the exercise's text allows:
# exercise -> [(name, text of the solution cell, what replaces it)]; each must be "right".
RIGHT_ANSWERS: dict[str, list[tuple[str, str, str]]] = {
    "05.1": [
        (
            "the distances halved in a loop",
            "    distances = [n >> k for k in range(1, n.bit_length())]  # n/2, n/4, ..., 1\n",
            "    distances, d = [], n // 2\n"
            "    while d >= 1:\n"
            "        distances.append(d)\n"
            "        d //= 2\n",
        ),
        (
            "tf.add and keywords",
            "chunks[i ^ d][c] = chunks[i ^ d][c] + incoming",
            "chunks[i ^ d][c] = tf.add(chunks[i ^ d][c], incoming)",
        ),
        (
            "the received chunks kept apart, concatenated by index",
            "            summed.append(tf.concat(chunks[i], 0))\n",
            "            summed.append(tf.concat([chunks[i][c] for c in range(n)], axis=0))\n",
        ),
    ],
    "05.2": [
        (
            "the ReduceOp, one collective per gradient",
            'return [tf.cast(s, tf.float32) for s in ctx.all_reduce("SUM", halves)], error',
            "sums = [ctx.all_reduce(tf.distribute.ReduceOp.SUM, h) for h in halves]\n"
            "    return [tf.cast(s, tf.float32) for s in sums], error",
        ),
        (
            "the error over every element at once",
            "    errors = [tf.abs(r - g) / tf.abs(g) for r, g in zip(rounded, grads, "
            "strict=True)]\n"
            "    error = tf.reduce_max([tf.reduce_max(e) for e in errors])\n",
            "    flat_g = tf.concat([tf.reshape(g, [-1]) for g in grads], axis=0)\n"
            "    flat_r = tf.concat([tf.reshape(r, [-1]) for r in rounded], axis=0)\n"
            "    error = tf.reduce_max(tf.math.abs((flat_r - flat_g) / flat_g))\n",
        ),
        (
            "every replica's bfloat16 gradient gathered, summed in float32",
            'return [tf.cast(s, tf.float32) for s in ctx.all_reduce("SUM", halves)], error',
            "every = [ctx.all_gather(h[None], axis=0) for h in halves]\n"
            "    return [tf.reduce_sum(tf.cast(e, tf.float32), axis=0) for e in every], error",
        ),
        (
            "one flat bfloat16 vector, split back afterwards",
            'return [tf.cast(s, tf.float32) for s in ctx.all_reduce("SUM", halves)], error',
            "sizes = [tf.size(g) for g in grads]\n"
            "    one = tf.concat([tf.reshape(h, [-1]) for h in halves], 0)\n"
            '    parts = tf.split(tf.cast(ctx.all_reduce("SUM", one), tf.float32), sizes)\n'
            "    return [tf.reshape(p, g.shape) for p, g in zip(parts, grads, strict=True)], error",
        ),
        (
            "the replica context asked for, not the one passed in",
            'ctx.all_reduce("SUM", halves)]',
            'tf.distribute.get_replica_context().all_reduce("SUM", halves)]',
        ),
    ],
    "05.3": [
        (
            "the slope by np.linalg.lstsq",
            "beta = np.polyfit(sizes[large], seconds[large], 1)[0]",
            "design = np.stack([sizes[large], np.ones(large.sum())], axis=1)\n"
            "    beta = np.linalg.lstsq(design, seconds[large], rcond=None)[0][0]",
        ),
        (
            "the slope in closed form",
            "    beta = np.polyfit(sizes[large], seconds[large], 1)[0]\n",
            "    s, t = sizes[large], seconds[large]\n"
            "    beta = np.sum((s - s.mean()) * (t - t.mean())) / np.sum((s - s.mean()) ** 2)\n",
        ),
        (
            "the points sorted by size, the slope fitted on sizes in megabytes and scaled back",
            "    beta = np.polyfit(sizes[large], seconds[large], 1)[0]\n",
            "    order = np.argsort(sizes)\n"
            "    sizes, seconds = sizes[order], seconds[order]\n"
            "    large = sizes > 64_000\n"
            "    beta = np.polyfit(sizes[large] / 1e6, seconds[large], 1)[0] / 1e6\n",
        ),
        (
            "the rate in bits per second first",
            "    rate = 2 * (workers - 1) / beta  # bytes/s over the shared link\n",
            "    bits_per_second = 8 * 2 * (workers - 1) / beta\n    rate = bits_per_second / 8\n",
        ),
    ],
}

# What the hint of a mutation must say: (exercise, name of the mutation) -> words.
HINTS: dict[tuple[str, str], str] = {
    ("05.3", "beta through every size, alpha from the smallest"): "your beta moved",
    ("05.3", "the 64 KB message counted as large"): "your beta moved",
    ("05.2", "float16 for bfloat16"): "float16 tensors cross",
    ("05.2", "cast back to float32 before the exchange"): "float32 tensors cross",
    ("05.2", "every replica's float32 gradient gathered, then summed"): "float32 tensors cross",
    ("05.2", "bfloat16 handed back"): "float32 back",
    ("05.2", "MEAN for SUM"): "SUM over all replicas",
    ("05.2", "the absolute error, not the relative"): "relative rounding error",
    ("05.2", "no all-reduce: the replica's own gradient"): "nothing crosses",
    ("05.2", "the sum alone, no error"): "pair",
}
