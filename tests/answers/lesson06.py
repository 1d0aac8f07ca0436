"""The tables tests/test_mutations.py runs against the checks of lesson 06
(tflearn_helpers/checks/lesson06.py): ``MUTATIONS``, wrong answers made of the solution's
lines (each must be judged wrong, with a hint), and ``RIGHT_ANSWERS``, right answers written
differently (each must be judged right). Test data: kept out of the learner's wheel."""

from __future__ import annotations

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
            "                partial.append(tf.nn.gelu(x @ a + b) @ c)\n",
            "        a, b, c = (tf.concat(list(p), k) for p, k in zip(zip(*shards), (1, 0, 0)))\n"
            "        partial = [tf.nn.gelu(x @ a + b) @ c / n] * n\n",
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
        ("no activation", "tf.nn.gelu(x @ a + b) @ c)", "(x @ a + b) @ c)"),
        (
            "b2 added to every partial output",
            "partial.append(tf.nn.gelu(x @ a + b) @ c)",
            "partial.append(tf.nn.gelu(x @ a + b) @ c + b2)",
        ),
        (
            "the mean of the partial outputs",
            "sums.append(tf.add_n(partial))",
            "sums.append(tf.add_n(partial) / n)",
        ),
        (
            "each device keeps only its own partial output",
            "sums.append(tf.add_n(partial))",
            "sums.append(partial[devices.index(d)])",
        ),
        ("w2 split by columns", "tf.split(w2, n)", "tf.split(w2, n, axis=1)"),
        (
            "a reduce to one device, its sum copied to the others",
            "        sums = []\n"
            "        for d in devices:\n"
            "            with tf.device(d):\n"
            "                sums.append(tf.add_n(partial))\n",
            "        with tf.device(devices[0]):\n"
            "            total = tf.add_n(partial)  # reduced on one device\n"
            "        sums = []\n"
            "        for d in devices:\n"
            "            with tf.device(d):\n"
            "                sums.append(tf.identity(total))\n",
        ),
        (
            "a reduce to the last device, its sum copied to the others",
            "        sums = []\n"
            "        for d in devices:\n"
            "            with tf.device(d):\n"
            "                sums.append(tf.add_n(partial))\n",
            "        with tf.device(devices[-1]):\n"
            "            total = tf.add_n(partial)  # reduced on one device\n"
            "        sums = []\n"
            "        for d in devices:\n"
            "            with tf.device(d):\n"
            "                sums.append(tf.identity(total))\n",
        ),
        (
            "a reduce to one device, its sum moved by a stop_gradient plus zeros",
            "                sums.append(tf.add_n(partial))\n",
            "                with tf.device(devices[0]):\n"
            "                    total = tf.add_n(partial)  # reduced on one device\n"
            "                sums.append(tf.stop_gradient(total) + tf.zeros_like(partial[0]))\n",
        ),
        (
            "no custom gradient: every device's loss reaches every piece",
            "    @tf.custom_gradient\n    def all_reduce(*partial):",
            "    def all_reduce(*partial):\n"
            "        return all_sums(*partial)[0]\n\n"
            "    def all_sums(*partial):",
        ),
        (
            "the all-reduce's backward an all-reduce too (f's, not g's)",
            "return sums, lambda *dys: list(dys)",
            "return sums, lambda *dys: [tf.add_n(dys)] * n",
        ),
        (
            "one output, not one per device",
            "        return outputs\n",
            "        return outputs[0]\n",
        ),
    ],
    "06.3": [
        (
            "no custom gradient: the outer tape records the gather and the unit",
            "    @tf.custom_gradient\n    def run(shard, x):",
            "    def run(shard, x):\n"
            "        return forward(gather(shard), x)\n\n"
            "    def unused(shard, x):",
        ),
        (
            "no second gather: the backward reuses the weights the forward gathered",
            "            full = gather(shard)  # gathered again\n",
            "",
        ),
        (
            "the forward's own tape kept for the backward (no recomputation)",
            "        full = gather(shard)\n"
            "        y = forward(full, x)\n\n"
            "        def backward(dy):\n"
            "            full = gather(shard)  # gathered again\n"
            "            with tf.GradientTape() as tape:\n"
            "                tape.watch([full, x])\n"
            "                y = forward(full, x)  # the forward pass again (recomputation)\n",
            "        full = gather(shard)\n"
            "        with tf.GradientTape() as tape:\n"
            "            tape.watch([full, x])\n"
            "            y = forward(full, x)\n\n"
            "        def backward(dy):\n",
        ),
        (
            "tf.recompute_grad around the gather and the unit (the gather's own gradient)",
            "    return run\n",
            "    return tf.recompute_grad(lambda shard, x: forward(gather(shard), x))\n",
        ),
        (
            "the whole gradient all-reduced, then sliced",
            "return ctx.merge_call(to_owners, args=tuple(tf.split(grad, n)))[r]",
            'return tf.split(ctx.all_reduce("sum", grad), n)[r]',
        ),
        (
            "each replica's own gradient sliced, not summed",
            "return ctx.merge_call(to_owners, args=tuple(tf.split(grad, n)))[r]",
            "return tf.split(grad, n)[r]",
        ),
        (
            "each slice all-reduced, only the own slice kept",
            "return ctx.merge_call(to_owners, args=tuple(tf.split(grad, n)))[r]",
            'return [ctx.all_reduce("sum", p) for p in tf.split(grad, n)][r]',
        ),
        ("MEAN for SUM in the reduce-scatter", 'reduce_to("sum", p, d)', 'reduce_to("mean", p, d)'),
        (
            "another replica's slice of the gradient kept",
            "args=tuple(tf.split(grad, n)))[r]",
            "args=tuple(tf.split(grad, n)))[(r + 1) % n]",
        ),
        (
            "the own shard repeated N times instead of gathered",
            "        full = gather(shard)\n        y = forward(full, x)\n",
            "        full = tf.tile(shard, [N])\n        y = forward(full, x)\n",
        ),
        (
            "a constant (zero) gradient for the shard",
            "return reduce_scatter(dfull), dx",
            "return tf.zeros_like(shard), dx",
        ),
        ("the unit itself returned, run on the shard", "    return run\n", "    return forward\n"),
    ],
}

# Right answers written another way than the solution (each a change the exercise's text
# allows): exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "right".
RIGHT_ANSWERS: dict[str, list[tuple[str, str, str]]] = {
    "06.1": [
        (
            "the all-gather with ReplicaContext.all_gather (through one device: 1.25x)",
            "params.assign(ctx.merge_call(all_gather, args=(new,)))",
            "params.assign(ctx.all_gather(new, axis=0))",
        ),
        (
            "the gradient cut with a reshape",
            "args=tuple(tf.split(grad, n)))[r]",
            "args=tuple(tf.unstack(tf.reshape(grad, [n, -1]))))[r]",
        ),
        (
            "the momentum updated in place",
            "momentum.assign(beta * momentum + mine)",
            "momentum.assign_add((beta - 1) * momentum + mine)",
        ),
    ],
    "06.2": [
        (
            "each device's sum with Python's sum",
            "sums.append(tf.add_n(partial))",
            "sums.append(sum(partial[1:], partial[0]))",
        ),
        (
            "no custom gradient: the others' parts stacked with their gradient stopped",
            "    @tf.custom_gradient\n"
            "    def all_reduce(*partial):  # g: every device adds all the parts itself; "
            "backward: identity\n"
            "        sums = []\n"
            "        for d in devices:\n"
            "            with tf.device(d):\n"
            "                sums.append(tf.add_n(partial))\n"
            "        return sums, lambda *dys: list(dys)\n",
            "    def all_reduce(*partial):  # device i: only its own part carries a gradient\n"
            "        sums = []\n"
            "        for i, d in enumerate(devices):\n"
            "            with tf.device(d):\n"
            "                parts = [p if j == i else tf.identity(tf.stop_gradient(p))\n"
            "                         for j, p in enumerate(partial)]\n"
            "                sums.append(tf.reduce_sum(tf.stack(parts), axis=0))\n"
            "        return sums\n",
        ),
        (
            "no custom gradient: the whole sum stopped, the own part's gradient added back",
            "    @tf.custom_gradient\n"
            "    def all_reduce(*partial):  # g: every device adds all the parts itself; "
            "backward: identity\n"
            "        sums = []\n"
            "        for d in devices:\n"
            "            with tf.device(d):\n"
            "                sums.append(tf.add_n(partial))\n"
            "        return sums, lambda *dys: list(dys)\n",
            "    def all_reduce(*partial):\n"
            "        sums = []\n"
            "        for mine, d in zip(partial, devices, strict=True):\n"
            "            with tf.device(d):\n"
            "                whole = tf.stop_gradient(tf.add_n(partial))\n"
            "                sums.append(whole + (mine - tf.stop_gradient(mine)))\n"
            "        return sums\n",
        ),
        (
            "the identity backward as copies",
            "return sums, lambda *dys: list(dys)",
            "return sums, lambda *dys: [tf.identity(dy) for dy in dys]",
        ),
        (
            "b2 added inside the all-reduce",
            "                sums.append(tf.add_n(partial))\n",
            "                sums.append(tf.add_n(partial) + b2 - b2)\n",
        ),
    ],
    "06.3": [
        (
            "the gradient cut with a reshape",
            "return ctx.merge_call(to_owners, args=tuple(tf.split(grad, n)))[r]",
            "return ctx.merge_call("
            "to_owners, args=tuple(tf.unstack(tf.reshape(grad, [n, -1]))))[r]",
        ),
        (
            "the backward's tape watching one tensor at a time",
            "                tape.watch([full, x])\n",
            "                tape.watch(full)\n                tape.watch(x)\n",
        ),
        (
            "the gather as a stack of shards, flattened",
            "return tf.distribute.get_replica_context().all_gather(shard, axis=0)",
            "return tf.reshape("
            "tf.distribute.get_replica_context().all_gather(shard[None], axis=0), [-1])",
        ),
    ],
}

# What the hint of a mutation must say: (exercise, name of the mutation) -> words.
HINTS: dict[tuple[str, str], str] = {
    ("06.1", "no momentum: plain SGD on the shard"): "momentum-free SGD",
    ("06.2", "no activation"): "without its activation",
    ("06.2", "relu for gelu"): "activation",
    ("06.2", "every piece made on the first device"): "every device",
    ("06.2", "each device keeps only its own partial output"): "summed",
    ("06.2", "the pieces concatenated back into whole matrices (every product on one device)"): (
        "no matrix product ran"
    ),
    ("06.2", "no tf.device in forward"): "no matrix product ran",
    ("06.2", "a reduce to one device, its sum copied to the others"): "reduce to one device",
    ("06.2", "a reduce to the last device, its sum copied to the others"): "ran on ['CPU:0']",
    ("06.2", "no custom gradient: every device's loss reaches every piece"): "2x",
    ("06.3", "no custom gradient: the outer tape records the gather and the unit"): (
        "keeps a tensor of"
    ),
    ("06.3", "no second gather: the backward reuses the weights the forward gathered"): (
        "keeps a tensor of"
    ),
    ("06.3", "the forward's own tape kept for the backward (no recomputation)"): (
        "keeps a tensor of"
    ),
    ("06.3", "the whole gradient all-reduced, then sliced"): "summed in one place",
    ("06.3", "each slice all-reduced, only the own slice kept"): "summed in one place",
}
