"""The tables tests/test_mutations.py runs against the checks of lesson 03
(tflearn_helpers/checks/lesson03.py): ``MUTATIONS``, wrong answers made of the solution's
lines (each must be judged wrong, with a hint), and ``RIGHT_ANSWERS``, right answers written
differently (each must be judged right). Test data: kept out of the learner's wheel."""

from __future__ import annotations

_FILL_DRAIN = (  # the solution's order: every forward pass, then every backward pass
    """    kept = [[] for _ in stages]  # per stage: (tape, input, output) of each micro-batch
    for xi, yi in zip(xs, ys, strict=True):  # F: every micro-batch through every stage
        h = xi
        for s, (stage, device) in enumerate(zip(stages, devices, strict=True)):
            with tf.device(device), tf.GradientTape() as tape:
                tape.watch(h)
                out = stage(h, training=True)
                if s == len(stages) - 1:
                    out = loss_fn(yi, out) / m  # this micro-batch's share of the mean loss
            kept[s].append((tape, h, out))
            h = out
    sums = [None] * len(stages)
    for i in range(m):  # B: last stage first, each on its device
        out_grad = None
        for s in reversed(range(len(stages))):
            tape, h, out = kept[s][i]
            with tf.device(devices[s]):
                variables = stages[s].trainable_variables
                h_grad, *grads = tape.gradient(out, [h, *variables], output_gradients=out_grad)
                sums[s] = (
                    grads
                    if sums[s] is None
                    else [a + g for a, g in zip(sums[s], grads, strict=True)]
                )
            out_grad = h_grad
"""
)

_ONE_AT_A_TIME = """    kept = [[] for _ in stages]
    sums = [None] * len(stages)
    for i, (xi, yi) in enumerate(zip(xs, ys, strict=True)):  # F then B, a micro-batch at a time
        h = xi
        for s, (stage, device) in enumerate(zip(stages, devices, strict=True)):
            with tf.device(device), tf.GradientTape() as tape:
                tape.watch(h)
                out = stage(h, training=True)
                if s == len(stages) - 1:
                    out = loss_fn(yi, out) / m
            kept[s].append((tape, h, out))
            h = out
        out_grad = None
        for s in reversed(range(len(stages))):
            tape, h, out = kept[s][i]
            with tf.device(devices[s]):
                variables = stages[s].trainable_variables
                h_grad, *grads = tape.gradient(out, [h, *variables], output_gradients=out_grad)
                sums[s] = grads if sums[s] is None else [a + g for a, g in zip(sums[s], grads)]
            out_grad = h_grad
"""

# Wrong answers derived from the solution (solutions/03_resnet50_model_parallel.ipynb), one
# plausible mistake each: exercise -> [(name, text of the exercise's cells, what replaces it)].
# tests/test_mutations.py applies each to the exercise's cells and expects "wrong". 03.1's three
# cells build ResNet-101 (about 4 s at smoke alone) before the check; a mistake in the training step
# costs about 10 CPU-s (three eager passes of ResNet-101), so only two are here (below);
# tests/test_lesson03_checks.py gives it more wrong training steps on a small model.
_CUTS = "cuts = [blocks[i] for i in min(itertools.combinations(range(len(blocks)), K - 1), key=fullest)]\n"  # noqa: E501

MUTATIONS: dict[str, list[tuple[str, str, str]]] = {
    "03.1": [
        (
            "stages built outside their device scope (the seed's belief)",
            "    with tf.device(device):\n"
            "        stage = keras.models.clone_model(segment)  # variables created on `device`\n",
            "    stage = keras.models.clone_model(segment)\n    with tf.device(device):\n",
        ),
        (
            "cut into equal numbers of blocks",
            _CUTS,
            "cuts = [blocks[len(blocks) * (i + 1) // K - 1] for i in range(K - 1)]\n",
        ),
        (
            "balanced by parameters",
            _CUTS,
            "segments = model_parallel.segment_models(resnet101, blocks)\n"
            "cuts = [blocks[i] for i in model_parallel.balance([s.count_params() for s in segments], K)]\n",  # noqa: E501
        ),
        (
            "balanced by the activations alone, the weights' memory left out",
            "    return max(peak.total for peak in peaks)",
            "    return max(peak.activations for peak in peaks)",
        ),
        (
            "optimizers built outside the stage's device scope",
            "        optimizer = keras.optimizers.SGD(0.01, momentum=0.9)\n"
            "        optimizer.build(stage.trainable_variables)"
            "  # its state next to the stage's variables\n",
            "        pass\n"
            "    optimizer = keras.optimizers.SGD(0.01, momentum=0.9)\n"
            "    optimizer.build(stage.trainable_variables)\n",
        ),
        (
            "forward with no device scope",
            "        with tf.device(device):\n            x = stage(x, training=False)",
            "        x = stage(x, training=False)",
        ),
    ],
    "03.2": [
        ("strictly under 10 %", "<= 0.10", "< 0.10"),
        ("the stages counted as K - 1", "pipeline_bubble(4, m)", "pipeline_bubble(3, m)"),
        (
            "the bubble as (K - 1) / M",
            "timing.pipeline_bubble(4, m) <= 0.10",
            "3 / m <= 0.10",
        ),
        (
            "a rule of thumb: four micro-batches a stage",
            "next(m for m in range(1, 1000) if timing.pipeline_bubble(4, m) <= 0.10)",
            "4 * 4",
        ),
    ],
    "03.3": [
        (
            "the micro-batches' losses not scaled",
            "out = loss_fn(yi, out) / m",
            "out = loss_fn(yi, out)",
        ),
        (
            "each micro-batch's backward pass straight after its forward pass",
            _FILL_DRAIN,
            _ONE_AT_A_TIME,
        ),
        (
            "the backward passes on the default device",
            "            with tf.device(devices[s]):\n                variables",
            "            if True:\n                variables",
        ),
        (
            "no gradient fed to a stage's output",
            "output_gradients=out_grad)",
            "output_gradients=None)",
        ),
        (
            "the batch cut into one micro-batch",
            "        xs = tf.split(x, m)",
            "        xs = tf.split(x, 1) * m",
        ),
        (
            "the logits read as probabilities",
            "SparseCategoricalCrossentropy(from_logits=True)\n    with tf.device(devices[0]):",
            "SparseCategoricalCrossentropy()\n    with tf.device(devices[0]):",
        ),
    ],
}

_BACKWARD = """    out_grad = None
    for s in reversed(range(K)):
        with tf.device(DEVICES[s]):
            variables = stages[s].trainable_variables
            x_grad, *grads = tapes[s].gradient(
                outputs[s], [inputs[s], *variables], output_gradients=out_grad
            )
            optimizers[s].apply_gradients(zip(grads, variables, strict=True))
        out_grad = x_grad
    return outputs[-1]
"""

_STEP = (
    """    tapes, inputs, outputs = [], [x], []
    for stage, device in zip(stages, DEVICES, strict=True):
        with tf.device(device), tf.GradientTape() as tape:
            tape.watch(inputs[-1])
            out = stage(inputs[-1], training=True)
            if len(outputs) == K - 1:
                out = loss_fn(y, out)
        tapes.append(tape)
        outputs.append(out)
        inputs.append(out)
"""
    + _BACKWARD
)

MUTATIONS["03.1"] += [
    (
        "one tape.gradient over every stage, under the last stage's device",
        _STEP,
        """    with tf.GradientTape() as tape:
        h = x
        for stage, device in zip(stages, DEVICES, strict=True):
            with tf.device(device):
                h = stage(h, training=True)
        loss = loss_fn(y, h)
    variables = [v for stage in stages for v in stage.trainable_variables]
    with tf.device(DEVICES[-1]):
        grads = tape.gradient(loss, variables)
    for s in range(K):
        n = len(stages[s].trainable_variables)
        with tf.device(DEVICES[s]):
            optimizers[s].apply_gradients(zip(grads[:n], stages[s].trainable_variables))
        grads = grads[n:]
    return loss
""",
    ),
    (
        "each stage differentiates its own output, no gradient chained in",
        "outputs[s], [inputs[s], *variables], output_gradients=out_grad\n",
        "outputs[s], [inputs[s], *variables]\n",
    ),
]

# Right answers written otherwise than the solution, as the exercise's text allows: each is
# answered "right" (tests/test_mutations.py).
RIGHT_ANSWERS: dict[str, list[tuple[str, str, str]]] = {
    "03.1": [
        (
            "the cuts whose stages' peaks are closest together",
            "    return max(peak.total for peak in peaks)\n",
            "    return max(p.total for p in peaks) - min(p.total for p in peaks)\n",
        ),
        (
            "every update after every backward pass, each on its device",
            _BACKWARD,
            """    out_grad, updates = None, []
    for s in reversed(range(K)):
        with tf.device(DEVICES[s]):
            variables = stages[s].trainable_variables
            x_grad, *grads = tapes[s].gradient(
                outputs[s], [inputs[s], *variables], output_gradients=out_grad
            )
        updates.append((s, grads, variables))
        out_grad = x_grad
    for s, grads, variables in updates:
        with tf.device(DEVICES[s]):
            optimizers[s].apply_gradients(zip(grads, variables, strict=True))
    return outputs[-1]
""",
        ),
        (
            "the training step compiled with tf.function",
            "def train_step(x, y):\n",
            "@tf.function\ndef train_step(x, y):\n",
        ),
    ],
    "03.2": [
        (
            "counted up in a while loop",
            "m = next(m for m in range(1, 1000) if timing.pipeline_bubble(4, m) <= 0.10)",
            "m = 1\nwhile timing.pipeline_bubble(4, m) > 0.10:\n    m += 1\n",
        ),
        (
            "from the bubble's formula, (K - 1) / (M + K - 1)",
            "m = next(m for m in range(1, 1000) if timing.pipeline_bubble(4, m) <= 0.10)",
            "m = min(m for m in range(1, 100) if 3 / (m + 3) <= 0.10)",
        ),
    ],
    "03.3": [
        (
            "the backward passes in reverse micro-batch order",
            "    for i in range(m):  # B: last stage first, each on its device\n",
            "    for i in reversed(range(m)):  # B: the newest micro-batch first\n",
        ),
        (
            "each micro-batch's summed loss divided by the whole batch",
            "out = loss_fn(yi, out) / m",
            "out = tf.reduce_sum(\n"
            "                        keras.losses.sparse_categorical_crossentropy(\n"
            "                            yi, out, from_logits=True\n"
            "                        )\n"
            "                    ) / int(x.shape[0])",
        ),
    ],
}

# 03.4: lesson 03's 1F1B, written from its rules. The body of the solution's function, and the
# line that sets how many forward passes come first.
_WARM = "warm = min(k - s, m) - 1"
_ONE_F_ONE_B = """    orders = []
    for s in range(k):
        warm = min(k - s, m) - 1  # forward passes before the steady state
        order = [("F", i) for i in range(warm)]
        for i in range(warm, m):  # steady state: one forward, one backward
            order += [("F", i), ("B", i - warm)]
        orders.append(order + [("B", i) for i in range(m - warm, m)])  # drain
    return orders
"""

MUTATIONS["03.4"] = [
    ("fill-drain: every forward pass before the first backward pass", _WARM, "warm = m"),
    ("one forward pass too many before the first backward", _WARM, "warm = min(k - s, m)"),
    (
        "one forward pass too few before the first backward",
        _WARM,
        "warm = max(min(k - s, m) - 2, 0)",
    ),  # noqa: E501
    ("the same warm-up on every stage", _WARM, "warm = min(k, m) - 1"),
    ("the first stage warming up least", _WARM, "warm = min(s + 1, m) - 1"),
    (
        "each backward pass straight after its own forward pass",
        '            order += [("F", i), ("B", i - warm)]',
        '            order += [("F", i), ("B", i)]',
    ),
    (
        "a backward pass before its forward pass",
        '            order += [("F", i), ("B", i - warm)]',
        '            order += [("B", i - warm), ("F", i)]',
    ),
    (
        "a stage that skips a micro-batch",
        "        for i in range(warm, m):",
        "        for i in range(warm + 1, m):",
    ),
    (
        "the drain's backward passes newest first",
        '[("B", i) for i in range(m - warm, m)]',
        '[("B", i) for i in reversed(range(m - warm, m))]',
    ),
]

RIGHT_ANSWERS["03.4"] = [
    (
        "each stage's steps from a generator",
        _ONE_F_ONE_B,
        """    def steps(s):  # one stage's steps, in order
        warm = min(k - s, m) - 1
        yield from (("F", i) for i in range(warm))
        for i in range(warm, m):
            yield "F", i
            yield "B", i - warm
        yield from (("B", i) for i in range(m - warm, m))

    return [steps(s) for s in range(k)]
""",
    ),
    (
        "a while loop: forward while fewer than K - s are alive, else the oldest backward",
        _ONE_F_ONE_B,
        """    orders = []
    for s in range(k):
        order, forward, backward = [], 0, 0
        while backward < m:
            if forward < m and forward - backward < k - s:
                order.append(("F", forward))
                forward += 1
            else:
                order.append(("B", backward))
                backward += 1
        orders.append(order)
    return orders
""",
    ),
    (
        "a dict per stage: each step under its place in the stage's list",
        _ONE_F_ONE_B,
        """    orders = []
    for s in range(k):
        warm, at = min(k - s, m) - 1, {}  # at: each step under its place in the list
        for i in range(m):
            at[i if i < warm else 2 * i - warm] = ("F", i)
            at[2 * i + warm + 1 if i < m - warm else m + i] = ("B", i)
        orders.append([at[t] for t in sorted(at)])
    return orders
""",
    ),
]

# What the hint of a mutation must say: (exercise, name of the mutation) -> words.
HINTS: dict[tuple[str, str], str] = {
    ("03.3", "the logits read as probabilities"): "the last stage's gradients already differ",
    ("03.3", "no gradient fed to a stage's output"): "gradient of its output",
}
