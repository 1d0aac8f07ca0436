"""Checks for lesson 06's exercises (ZeRO-1, a tensor-parallel MLP, ZeRO-3 unit by unit).

Each check runs the learner's TensorFlow code on its own fresh random problem and compares it
with plain data parallelism or with one device, then looks at what each device holds and does:
the variables made and where, the bytes the traced step copies between devices, the products
each device ran, what the traced step keeps from its forward pass for its backward pass. Hints
say what went wrong, never the code.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

# transfers: the copies lesson 06's traced graph makes between the devices of this process
# (collective ops between processes, and copies of the function's inputs, are not counted)
from ..taught.lesson06 import transfers
from ..topics.placement import PLUMBING_OPS, op_devices, short_device
from . import course_code, exercise

__all__ = ["zero1"]


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
        if all(np.allclose(c, _plain_dp(w0, grads, lr, 0.0), atol=1e-4) for c in copies):
            return (
                "your weights moved as momentum-free SGD on the summed gradient moves them: "
                "what does momentum SGD subtract from the weights at each step?"
            )
        return (
            "the replicas' weights differ from plain data parallelism: does every replica "
            "use the gradient summed over all replicas, update its shard by momentum SGD's "
            "rule, and get every shard back afterwards?"
        )
    moved = sum(b or 0 for *_, b in transfers(step.get_concrete_function(mine)))
    plain = 2 * (n - 1) * w0.nbytes  # a ring all-reduce of the gradient, all replicas
    if moved > 1.25 * plain:
        return (
            f"the weights are right, but the step copies {moved / plain:.2f}x the bytes of plain "
            "data parallelism between devices: a replica needs only the sum of its own shard "
            "of the gradients, not the whole sum"
        )
    return None


def _piece_slices(w1, b1, w2, n: int) -> list[tuple[str, int, object]]:
    """(name, device index, value) of every piece the exercise asks for."""
    import tensorflow as tf

    return [
        (name, i, part)
        for name, whole, axis in (("w1", w1, 1), ("b1", b1, 0), ("w2", w2, 0))
        for i, part in enumerate(tf.split(whole, n, axis=axis))
    ]


def _output_hint(ys, linear) -> str:
    """The hint for outputs that differ from the one-device MLP's (``linear``: that MLP's
    output without its activation)."""
    if all(y.shape == linear.shape and np.allclose(y, linear, atol=1e-4) for y in ys):
        return (
            "every device's output is the MLP's without its activation: what happens to "
            "each device's hidden piece between its two matrix products?"
        )
    return (
        "a device's output differs from the one-device MLP: are the partial outputs of "
        "all devices summed (the all-reduce), with b2 added once, and does each hidden "
        "piece go through the MLP's activation?"
    )


def _mlp_problem(w1, b1, w2, b2, x, pieces, forward, devices):
    """A hint unless every device's output is the one-device MLP's, and each piece's gradient
    (each device differentiating its own copy of the loss) is its slice of the MLP's."""
    import tensorflow as tf

    n = len(devices)
    with tf.GradientTape() as tape:
        tape.watch(x)
        ys = forward(x)
        if not isinstance(ys, list | tuple) or len(ys) != n:
            return (
                f"forward should return a list of {n} outputs, one on each device: the "
                "all-reduce leaves the sum on every device"
            )
        losses = [tf.reduce_sum(tf.sin(y)) for y in ys]  # each device: its own loss
    with tf.GradientTape() as ref_tape:
        ref_tape.watch([x, w1, b1, w2])
        y_ref = tf.nn.gelu(x @ w1 + b1) @ w2 + b2
        ref_loss = tf.reduce_sum(tf.sin(y_ref))
    if any(y.shape != y_ref.shape or not np.allclose(y, y_ref, atol=1e-4) for y in ys):
        return _output_hint(ys, (x @ w1 + b1) @ w2 + b2)
    where = [short_device(y.device) for y in ys]
    if where != [short_device(d) for d in devices]:
        return (
            f"the outputs live on {where}: output i should be device i's own copy of the sum, "
            "computed there"
        )
    names = ("x", "w1", "b1", "w2")
    ref = dict(zip(names, ref_tape.gradient(ref_loss, [x, w1, b1, w2]), strict=True))
    got = tape.gradient(losses, [x, *pieces])
    if any(g is None for g in got):
        return "some pieces get no gradient: use every piece in forward"
    slices = _piece_slices(ref["w1"], ref["b1"], ref["w2"], n)
    values = _piece_slices(w1, b1, w2, n)
    for piece, grad in zip(pieces, got[1:], strict=True):
        match = [k for k, (_, _, v) in enumerate(values) if v.shape == piece.shape
                 and np.array_equal(v, piece)]  # fmt: skip
        if not match:
            return "a piece is not one of the column blocks of w1 or b1 or row blocks of w2"
        name, i, expected = slices[match[0]]
        grad = tf.convert_to_tensor(grad)
        if np.allclose(grad, n * expected, atol=1e-4, rtol=1e-4):
            return (
                f"each piece's gradient is {n}x the one-device MLP's: every device's loss "
                "reaches every piece through your sum. Each device differentiates its own "
                "copy of the loss, so the all-reduce's backward pass must be the identity (g)"
            )
        if not np.allclose(grad, expected, atol=1e-4, rtol=1e-4):
            return f"the gradient of device {i}'s piece of {name} differs from the one-device MLP's"
    if not np.allclose(got[0], ref["x"], atol=1e-4):
        return "the gradient of x differs from the one-device MLP's"
    return None


def _sums_problem(forward, x, devices):
    """A hint unless each device adds the partial outputs itself (an all-reduce), judged by
    effect on the traced graph run once: a sum is an op that computes a new value from values
    made on two or more devices, and runs where it is placed. A value is made where the last
    op that changed it ran: an op whose output equals one of its inputs (a copy, a
    stop_gradient, a reshape, adding zero) only moves it; a concatenation or a stack joins
    values and keeps where each was made."""
    summed = set(_sums_by_effect(forward, x))
    missing = sorted({short_device(d) for d in devices} - summed)
    if missing:
        return (
            f"no sum of the partial outputs ran on {missing}: a reduce to one device and "
            "copies of its result is not an all-reduce; each device should add the parts itself"
        )
    return None


def _sums_by_effect(forward, x) -> dict:
    """Per device, the values of the sums ``forward(x)`` computes there (see _sums_problem):
    ``forward`` is traced once with every floating-point value it computes as an output, and
    run, so that what each op did is read from the values themselves."""
    import tensorflow as tf

    fn, kept = getattr(forward, "python_function", forward), []

    @tf.function
    def traced(x):
        outputs = tf.nest.flatten(fn(x))
        kept[:] = [t for op in _ancestors(outputs) for t in op.outputs if t.dtype.is_floating]
        return kept

    values = traced(x)  # traces (filling kept), then runs
    value = {t.name: np.asarray(v) for t, v in zip(kept, values, strict=True)}
    known = {t.name: t for t in kept}
    made: dict[str, frozenset] = {}

    def moved_from(t):  # the input whose values this output only carries on, if any
        inputs = [i for i in t.op.inputs if i.name in value]
        if t.op.type == "IdentityN" and t.value_index < len(t.op.inputs):
            inputs.insert(0, t.op.inputs[t.value_index])
        out = value[t.name]
        return next(
            (i for i in inputs if i.name in value and value[i.name].size == out.size
             and np.array_equal(value[i.name].ravel(), out.ravel())),
            None,
        )  # fmt: skip

    def origin(t) -> frozenset:  # the devices where the values of t were made
        if t.name not in made:
            source = moved_from(t)
            if source is not None:
                made[t.name] = origin(source)
            elif t.op.type in _MOVES:  # a join: each part keeps where it was made
                made[t.name] = frozenset().union(
                    *(origin(i) for i in t.op.inputs if i.name in value)
                )
            elif t.op.type in ("Const", "Placeholder") or not t.op.device:  # an input
                made[t.name] = frozenset()
            else:
                made[t.name] = frozenset({short_device(t.op.device)})
        return made[t.name]

    sums: dict[str, int] = {}
    for op in {known[name].op for name in value}:
        new = [t for t in op.outputs if t.name in value and moved_from(t) is None]
        if not new or op.type in _MOVES:
            continue
        sources = frozenset().union(*(origin(i) for i in op.inputs if i.name in value))
        if len(sources) > 1:
            where = short_device(op.device)
            sums[where] = sums.get(where, 0) + max(map(_size, new))
    return sums


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
    ``devices``; ``pieces`` are the variables holding w1, b1 and w2 (b2 stays whole);
    ``forward(x)`` returns one output per device, each the whole sum (an all-reduce). Fresh
    random sizes and values; judged by every device's output, each piece's gradient (each
    device differentiating its own copy of the loss), where each piece lives, where the
    products ran, and where the partial outputs were added (on every device)."""
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
    return (
        _mlp_problem(w1, b1, w2, b2, x, pieces, forward, devices)
        or _products_problem(forward, x, devices, hidden)
        or _sums_problem(forward, x, devices)
    )


def _ancestors(tensors) -> set:
    """The ops whose outputs flow into ``tensors`` by data (control edges left out)."""
    seen, todo = set(), [t.op for t in tensors]
    while todo:
        op = todo.pop()
        if op not in seen:
            seen.add(op)
            todo.extend(t.op for t in op.inputs)
    return seen


# ops that move or join values without adding them (a copy, a gather's concat, an all-to-all)
_MOVES = {
    *("Identity", "IdentityN", "Reshape", "ConcatV2", "Concat", "Pack"),
    *("CollectiveAllToAllV2", "CollectiveAllToAllV3"),
}


def _size(tensor) -> int:
    return tensor.shape.num_elements() or 0


def _made_on(tensor) -> str | None:
    """The device of the op that computed ``tensor``'s values, looking through copies and
    reshapes; None for a constant or an op without a device (an input)."""
    while tensor.op.type in ("Identity", "Reshape", "IdentityN") and tensor.op.inputs:
        index = tensor.value_index if tensor.op.type == "IdentityN" else 0
        tensor = tensor.op.inputs[index]
    if tensor.op.type == "Const" or not tensor.op.device:
        return None
    return short_device(tensor.op.device)


def _sums_per_device(backward) -> dict:
    """Per device, the values the backward pass computes there from values computed on two or
    more devices: the sums a reduction over replicas makes (a copy, a concatenation or an
    all-to-all only moves values, and is not counted)."""
    sums: dict[str, int] = {}
    for op in backward:
        made = {_made_on(t) for t in op.inputs} - {None}
        if op.type not in _MOVES and len(made) > 1:
            where = short_device(op.device)
            sums[where] = sums.get(where, 0) + max(map(_size, op.outputs), default=0)
    return sums


def _zero3_problem(graph_of, limit: int, shard: int):
    """A hint when the traced step keeps a tensor larger than ``limit`` values from its
    forward pass for its backward pass, or when a device sums more than a ``shard`` of
    gradient over replicas; ``graph_of`` lists each replica's (output, gradients) tensors."""
    forward = _ancestors([y for y, _ in graph_of])
    backward = _ancestors([g for _, grads in graph_of for g in grads]) - forward
    kept = {t.name: _size(t) for op in backward for t in op.inputs if t.op in forward}
    largest = max((v for v in kept.values() if v > limit), default=0)
    if largest:
        return (
            f"the outputs and gradients are right, but the step keeps a tensor of {largest} "
            f"values from the forward pass until the backward pass reads it (a shard or an "
            f"activation has at most {limit}): gathered weights stay in memory all that time. "
            "Only the shard may live from one pass to the other: is the outer tape recording "
            "the gathered weights, or does the backward reuse what the forward gathered?"
        )
    sums = _sums_per_device(backward)
    if max(sums.values(), default=0) > shard:
        return (
            f"the gradients are right, but one device sums {max(sums.values())} values of "
            f"gradient over the replicas, more than a shard ({shard}): the whole "
            "gradient is summed in one place. Each replica should receive only the sum of its "
            "own shard"
        )
    return None


def _zero3_case(rng, n: int):
    """A fresh dense unit ``act(x @ W + b)`` on a flat vector of weights, its inputs, and
    the incoming gradients; every activation is smaller than the weight matrix."""
    import tensorflow as tf

    d_in, d_out, batch = int(rng.integers(6, 12)), n * int(rng.integers(3, 6)), 2
    act = [tf.tanh, tf.sin, tf.sigmoid][int(rng.integers(3))]

    def forward(full, x):
        w, b = tf.split(full, [d_in * d_out, d_out])
        return act(x @ tf.reshape(w, [d_in, d_out]) + b)

    full = rng.normal(size=d_out * (d_in + 1)).astype("float32")
    xs = rng.normal(size=(n, batch, d_in)).astype("float32")
    dys = rng.normal(size=(n, batch, d_out)).astype("float32")
    return forward, full, xs, dys, max(full.size // n, batch * d_in, batch * d_out)


def _zero3_reference(forward, full, xs, dys):
    """Plain data parallelism's gradients: of the weights summed over replicas, and each x's."""
    import tensorflow as tf

    w, xs = tf.constant(full), [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        tape.watch([w, *xs])
        ys = [forward(w, x) for x in xs]
        loss = sum(tf.reduce_sum(y * dy) for y, dy in zip(ys, dys, strict=True))
    dw, *dxs = tape.gradient(loss, [w, *xs])
    return [y.numpy() for y in ys], dw.numpy(), [d.numpy() for d in dxs]


def _zero3_values_problem(got, reference, n: int):
    """A hint unless each replica's output, input gradient and weight-shard gradient match."""
    ys, dw, dxs = reference
    shards = dw.reshape(n, -1)
    for r, (y, d_shard, dx) in enumerate(got):
        if y is None or y.shape != ys[r].shape or not np.allclose(y, ys[r], atol=1e-4):
            return (
                "a replica's output differs from the unit run on the whole weights: does "
                "every replica compute with all N shards, in order?"
            )
        if dx is None or not np.allclose(dx, dxs[r], atol=1e-4):
            return "the gradient of a replica's input x differs from plain data parallelism's"
        if d_shard is None or d_shard.shape != shards[r].shape:
            return "the gradient of each replica's shard must have the shard's shape"
        if not np.allclose(d_shard, shards[r], atol=1e-4):
            return (
                "the gradient of a replica's shard differs from its slice of the weights' "
                "gradient summed over all replicas"
            )
    return None


@exercise("06.3")
def zero3_unit(zero3, strategy):
    """``zero3(forward) -> run``: ``run(shard, x)`` computes ``forward(full, x)`` in
    ``strategy.run``, where ``shard`` is this replica's 1/N of the flat weights ``full``; the
    gradient of a shard is its slice of the weights' gradient summed over the replicas.

    A fresh random dense unit, inputs and incoming gradients each time, traced in one
    ``tf.function``: outputs and gradients must equal plain data parallelism's, and the traced
    graph (where TensorFlow frees a tensor after its last reader) may keep no tensor larger than
    a shard or an activation from the forward pass for the backward pass, and no device may sum
    more than a shard's worth of gradient over the replicas (an all-reduce, not a
    reduce-scatter)."""
    import tensorflow as tf

    if course_code(zero3):
        return "write zero3 yourself: the course's code is not your answer"
    n = strategy.num_replicas_in_sync
    if n < 2:
        return "check your answer on a strategy with at least two replicas"
    forward, full, xs, dys, limit = _zero3_case(np.random.default_rng(), n)
    run, traced = zero3(forward), []

    def replica_step(shard, x, dy):
        with tf.GradientTape() as tape:
            tape.watch([shard, x])
            y = run(shard, x)
        grads = tape.gradient(y, [shard, x], output_gradients=dy)
        traced.append((y, [g for g in grads if g is not None]))
        return y, *[tf.zeros([0]) if g is None else g for g in grads]

    def per_replica(values):
        return strategy.experimental_distribute_values_from_function(
            lambda ctx: tf.constant(values[ctx.replica_id_in_sync_group])
        )

    step = tf.function(lambda *a: strategy.run(replica_step, args=a))
    try:
        out = step(per_replica(full.reshape(n, -1)), per_replica(xs), per_replica(dys))
    except Exception as err:  # say where it failed, with TensorFlow's last line
        last = [line for line in str(err).splitlines() if line.strip()][-1:] or [""]
        return (
            f"run(shard, x) failed in strategy.run ({type(err).__name__}: {last[0][:200]}). "
            f"forward reads the whole flat weights, {full.size} values here; each replica "
            f"holds a shard of {full.size // n}"
        )
    local = [[np.asarray(v) for v in strategy.experimental_local_results(o)] for o in out]
    got = [
        (y, s if s.size else None, x if x.size else None) for y, s, x in zip(*local, strict=True)
    ]
    return _zero3_values_problem(got, _zero3_reference(forward, full, xs, dys), n) or (
        _zero3_problem(traced, limit, full.size // n)
    )
