"""Checks for lesson 09's exercises (ParameterServerStrategy and ClusterCoordinator).

The checks read what the learner's code made (the variable's pieces and where they live) and
what it did on the cluster: 09.2 runs the learner's whole training loop on the notebook's
in-process cluster with a model of its own that counts, on the parameter servers, every run
and every example each worker read and whose pipeline made it; it looks whether the steps had
finished when the loop returned, and replays the same batches on the coordinator to compare
the losses and the weights' moves. Hints say what is wrong with an answer, never what the
right one is.
"""

from __future__ import annotations

import time

import numpy as np

from ..runtime import validate
from . import exercise

__all__ = []


@exercise("09.1")
def sharded_embedding(variable):
    """A [12, 4] variable created under a strategy that shards it over three ps tasks."""
    pieces = getattr(variable, "variables", None)
    if not hasattr(variable, "shape"):
        return f"pass the variable itself, not a {type(variable).__name__}"
    if tuple(variable.shape) != (12, 4):
        return f"the exercise asks for a 12 x 4 variable; yours is {tuple(variable.shape)}"
    if not pieces:
        if "/job:ps/" in str(getattr(variable, "device", "")):
            return (
                "this variable is in one piece on a parameter server: it was made under the "
                "strategy, but nothing cut it. Has the strategy a partitioner, and how many "
                "pieces does it cut a variable of 12 x 4 floats into (has it a minimum size "
                "per piece)?"
            )
        return "this variable is in one piece: create it under a strategy with a partitioner"
    if len(pieces) != 3:
        return f"it is cut into {len(pieces)} pieces; the exercise asks for one per ps task"
    tasks = [v.device.split("/device")[0] for v in pieces]
    if not all("/job:ps/" in t for t in tasks):
        return "a piece is not on a parameter server: was it created under strategy.scope()?"
    if len(set(tasks)) != len(tasks):
        return "two pieces share a parameter server; each ps task should hold one"
    if sum(v.shape[0] for v in pieces) != 12:
        return "the pieces' rows do not add up to the whole variable"
    return None


# 09.2: examples() holds 4 batches and 22 examples, so a pipeline that batches each pass on
# its own ends every pass with a short batch
_BATCH, _EXAMPLES, _LEARNING_RATE = 32, 150, 0.01
_WORKERS = 16  # 09.2 audits clusters of up to 16 workers
# 09.2's two runs: a number of steps written in fits one at most; the long one makes each of
# the two workers read many more batches than examples() holds, so a pipeline that ends shows
_SHORT_STEPS, _LONG_STEPS = np.arange(14, 23), np.arange(60, 81)


@exercise("09.2")
def scheduled_training(train, coordinator):
    """``train(coordinator, model, optimizer, examples, steps)`` run on the learner's cluster
    with a model, examples and a number of steps of the check's own, audited on the ps."""
    if not callable(train):
        return "pass your function train itself, not what it returns"
    if not hasattr(coordinator, "create_per_worker_dataset"):
        return "pass the ClusterCoordinator of exercise 09.1 as the last argument of check()"
    rng = np.random.default_rng()
    for steps in (rng.choice(_SHORT_STEPS), rng.choice(_LONG_STEPS)):
        hint = _training_problem(train, coordinator, rng, int(steps))
        if hint:
            return hint
    return None


def _training_problem(train, coordinator, rng, steps: int):
    """What is wrong with one run of ``train`` for ``steps`` steps on fresh data, or None."""
    import tensorflow as tf

    x, y = _regression(rng)
    audit = _Audit(coordinator.strategy)
    model, optimizer = audit.model(), tf.keras.optimizers.SGD(learning_rate=_LEARNING_RATE)
    start = audit.weights()
    losses, done, hint = _run(train, coordinator, (model, optimizer, _examples(x, y), steps))
    if hint:
        return hint
    if not done:
        return "train returned while its steps were still running: wait for all of them first"
    hint = audit.judge(steps)
    if not hint and (not isinstance(losses, list | tuple) or len(losses) != steps):
        hint = f"return a list with one RemoteValue per step ({steps} steps were asked for)"
    remote = tf.distribute.experimental.coordinator.RemoteValue
    if not hint and not all(isinstance(r, remote) for r in losses):
        hint = "return each step's RemoteValue as the coordinator gave it: fetch nothing early"
    moved = [end - begin for end, begin in zip(audit.weights(), start, strict=True)]
    if not hint and any(not np.any(m) for m in moved):
        hint = "some of the model's trainable variables never changed: update all of them"
    expected, expected_losses = _replay(x, y, start, audit.examples_read())
    gap = sum(np.sum((m - e) ** 2) for m, e in zip(moved, expected, strict=True)) ** 0.5
    if not hint and gap > 0.3 * sum(np.sum(e**2) for e in expected) ** 0.5:
        hint = (
            "the weights did not move as the same batches move them here, one step after "
            "another: does each step apply the gradients of its batch's mean squared error, once?"
        )
    return hint or _losses_hint(losses, expected_losses)


def _regression(rng):
    """(x, y) of a noisy linear regression with 8 features and an intercept, as float32."""
    x = rng.normal(size=(_EXAMPLES, 8))
    y = x @ rng.normal(size=(8, 1)) + rng.uniform(2.0, 3.0) + 0.1 * rng.normal(size=(_EXAMPLES, 1))
    return x.astype(np.float32), y.astype(np.float32)


def _examples(x, y):
    """The ``examples()`` the learner's pipeline starts from: (x, y) one example at a time.
    Each x carries two more columns, which the check's model reads and drops: the worker whose
    pipeline made it (-1: built on the coordinator) and the example's index. Each example
    takes a millisecond (tf.data's sleep, in C++: a ``py_function`` on this kernel's workers
    needs the GIL and deadlocked the coordinator), so that steps last long enough for a
    ``train`` that returns before they have finished to be seen."""
    import tensorflow as tf
    from tensorflow.python.data.experimental.ops import testing  # its sleep: no Python, no CPU

    def examples():
        if tf.inside_function():  # on a worker: its index; on the coordinator, it raises
            worker = tf.distribute.coordinator.experimental_get_current_worker_index()
        else:  # built eagerly, on the coordinator
            worker = tf.constant(-1, tf.int64)
        tags = tf.stack(
            [tf.fill([len(x)], tf.cast(worker, tf.float32)), tf.range(len(x), dtype=tf.float32)],
            axis=1,
        )
        rows = tf.concat([tf.constant(x), tags], axis=1)
        data = tf.data.Dataset.from_tensor_slices((rows, tf.constant(y)))
        return data.apply(testing.sleep(1000))  # microseconds, each example

    return examples


def _run(train, coordinator, args):
    """(what ``train(coordinator, *args)`` returned, whether every step had finished when it
    returned, a hint if it or a step raised). Whatever it left running is waited for."""
    try:
        returned = train(coordinator, *args)
        done = coordinator.done()
    except Exception as err:  # the learner's code can fail in any way: say how, not where
        _drain(coordinator)
        return None, False, _raised(err)
    error = _drain(coordinator)
    return returned, done, error and _raised(error)


def _drain(coordinator, timeout=120.0):
    """Wait (at most ``timeout`` s) until no scheduled step is left; the first error one
    raised, if any."""
    first, deadline = None, time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if coordinator.done():
                return first
        except Exception as err:  # a step's error; done() clears it and goes on
            first = first or err
        time.sleep(0.02)
    return first or TimeoutError(f"the scheduled steps had not finished after {timeout:.0f} s")


def _raised(err: Exception) -> str:
    """A hint for an error raised by the learner's code: its last line, no traceback (which
    would quote the code)."""
    import tensorflow as tf

    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    if len(lines) > 1 and lines[-1].startswith("Please see"):  # a link: the first line says
        lines = lines[:1]  # what is wrong (Keras 2's loss objects under a strategy)
    last = (lines[-1] if lines else "")[:200]
    if isinstance(err, tf.errors.OutOfRangeError):
        return "a worker's pipeline ran out of batches: it must never end"
    if isinstance(err, TypeError) and "only accepts a" in last:
        return (
            "the coordinator refused your step: it sends a worker a function traced into a "
            "graph, not Python code"
        )
    if "worker index" in last or "_iterator_resource" in last:
        return (
            "a step ran on the coordinator itself, not on a worker: the coordinator should "
            "hand each step to the cluster and return at once"
        )
    if "merge_call" in last or "replica context" in last.lower():
        return (
            f"your step raised {type(err).__name__} ({last}): code that expects a replica "
            "ran without one. Which call runs a function as each replica?"
        )
    return f"your code raised {type(err).__name__}: {last}"


class _Audit:
    """The check's model (a linear regression) and variables on the parameter servers that it
    updates each time it runs inside the learner's step: how often it ran, and which examples
    each worker read from whose pipeline."""

    def __init__(self, strategy):
        import tensorflow as tf

        self.workers = _WORKERS  # (the strategy does not say how many it has)
        self.outside: list[bool] = []  # per trace of the model: outside a replica context?
        with strategy.scope():  # one row each, so that no partitioner cuts them
            self.runs = tf.Variable(tf.zeros([1], tf.int64))
            self.reads = tf.Variable(tf.zeros([1, self.workers * _EXAMPLES], tf.int64))
            self.strays = tf.Variable(tf.zeros([1, 2], tf.int64))  # coordinator's, another's
            self.linear = tf.keras.layers.Dense(1)
            self.linear.build((None, 8))
        self.strategy = strategy

    def model(self):
        import tensorflow as tf

        audit = self

        class Audited(tf.keras.Model):
            def __init__(self):
                super().__init__()
                self.inner = audit.linear

            def call(self, x, training=None):
                audit.outside.append(tf.distribute.in_cross_replica_context())
                audit.record(x)
                return self.inner(x[:, :8])

        with self.strategy.scope():
            return Audited()

    def record(self, x):
        """Count this run of the model and the examples in ``x`` (in the learner's step)."""
        import tensorflow as tf

        runner = tf.distribute.coordinator.experimental_get_current_worker_index()
        maker, index = tf.cast(x[:, 8], tf.int64), tf.cast(x[:, 9], tf.int64)
        cells = self.workers * _EXAMPLES
        read = tf.math.bincount(
            tf.cast(runner * _EXAMPLES + index, tf.int32), minlength=cells, maxlength=cells
        )
        stray = [
            tf.reduce_sum(tf.cast(c, tf.int64))
            for c in (maker < 0, (maker >= 0) & (maker != runner))
        ]
        self.runs.assign_add([1])
        self.reads.assign_add(tf.cast(read, tf.int64)[None])
        self.strays.assign_add(tf.stack(stray)[None])

    def weights(self):
        return [np.array(self.linear.kernel.numpy()), np.array(self.linear.bias.numpy())]

    def examples_read(self) -> list[np.ndarray]:
        """Per worker, the indices of the examples it read: each one read once in index order,
        then those read twice, and so on (in order, that is the pipeline's order; shuffled,
        the same examples in other batches, which move the weights nearly as much)."""
        counts = self.reads.numpy().reshape(self.workers, _EXAMPLES)
        return [
            np.concatenate(
                [np.flatnonzero(row >= n) for n in range(1, int(row.max()) + 1)] or [[]]
            ).astype(int)
            for row in counts
        ]

    def judge(self, steps: int) -> str | None:
        runs, (coordinators, others) = int(self.runs.numpy()[0]), self.strays.numpy()[0]
        reads = self.reads.numpy().reshape(self.workers, _EXAMPLES)
        if runs != steps:
            return f"the model ran {runs} times in the {steps} steps asked for: once per step"
        if coordinators:
            return "your steps read batches built on the coordinator: each worker builds its own"
        if others:
            return "a worker read batches that another worker's pipeline made"
        if _BATCH * steps > reads.sum() >= (_BATCH - 8) * steps:
            return (
                f"your {steps} steps read {reads.sum()} examples, a few short of {_BATCH} each: "
                "some batches came up short. Where does a pass over the examples end, and what "
                "does your pipeline do there?"
            )
        if reads.sum() != _BATCH * steps:
            return f"each step should read one batch of {_BATCH} examples"
        # coverage, not repeats: a worker that read r examples has seen, in any order, at
        # least as many of them as r draws at random with replacement see, 150 (1 - e^(-r/150))
        # on average, less 4 times that count's standard deviation (at most the square root of
        # the missing ones): 115 of 150 at r = 320, 147 at r = 960. Going on through one
        # pipeline sees them all; a new pipeline each step only its start (the shuffle
        # buffer's first examples at most: 96 with a buffer of 64)
        seen, read = (reads > 0).sum(1), reads.sum(1)
        missing = _EXAMPLES * np.exp(-read / _EXAMPLES)
        if np.any(seen < _EXAMPLES - missing - 4 * np.sqrt(missing)):
            return (
                "a worker read the examples many times over, but some of them never: do its "
                "steps go on through one pipeline, or start a new one each time?"
            )
        if any(self.outside):
            return "the model ran outside a replica: which call runs a function as each replica?"
        return None


def _losses_hint(losses, expected: list[float]) -> str | None:
    """A hint when the steps' losses (fetched now) do not add up, within 20 %, to the losses
    of the same batches replayed here."""
    values = [r.fetch() for r in losses]
    if any(v is None for v in values):
        return "each step should return the loss of its batch"
    total = sum(float(np.mean(v)) for v in values)
    if not abs(total - sum(expected)) <= 0.2 * sum(expected):  # (a NaN fails too)
        return (
            "the losses your steps returned are not their batches' mean squared errors "
            "before the update: does each step return the loss its replica computed?"
        )
    return None


def _replay(x, y, start, read):
    """Plain SGD from the weights ``start`` (kernel, bias) over the batches each worker read
    (``read``: per worker, its examples' indices in order, 32 a batch, or a number k of
    batches: examples 32 i to 32 i + 31, modulo the examples, for i < k), the workers' steps
    taken in turn, here on the coordinator: (the weights' expected moves, each step's loss)."""
    read = [
        np.arange(k * _BATCH) % len(x) if isinstance(k, int | np.integer) else np.asarray(k)
        for k in read
    ]
    batches = [len(r) // _BATCH for r in read]
    kernel, bias = (w.astype(np.float64) for w in start)
    losses = []
    for i in range(max(batches, default=0)):
        for k, order in zip(batches, read, strict=True):
            if i < k:
                rows = order[i * _BATCH : (i + 1) * _BATCH]
                error = x[rows] @ kernel + bias - y[rows]
                losses.append(float(np.mean(error**2)))
                kernel = kernel - _LEARNING_RATE * 2 * x[rows].T @ error / _BATCH
                bias = bias - _LEARNING_RATE * 2 * error.mean(axis=0)
    return [kernel - start[0], bias - start[1]], losses


@exercise("09.3")
def reexecution_bound(answer):
    """The most extra executions the scenario in the solution notebook allows."""
    if not validate.is_whole_number(answer):
        return "answer with a whole number of executions"
    if answer == 5:
        return "the bound counts interruptions, not the workers in the cluster"
    if answer == 2:
        return "a worker that dies twice can interrupt a step each time"
    if answer != 3:
        return "count, for each failure, how many steps the dead worker could have been running"
    return None
