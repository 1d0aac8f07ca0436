"""A GPipe-style pipelined training step over placed stages (taught in lesson 05).

The batch is cut into M micro-batches. One Python thread per stage runs that stage's
forward pass for every micro-batch as soon as its input arrives, then the backward passes,
accumulating gradients; activations and their gradients travel between threads through
queues. Each stage's work is one ``tf.function`` call, which releases the GIL, so stages
can really run at the same time (Huang et al. 2019, "GPipe", arXiv:1811.06965, schedule).
With M = 1 this is naive model parallelism: one stage busy at a time.
"""

from __future__ import annotations

import queue
import threading

from .placement import short_device
from .timeline import Timeline

_ABORT = object()


def run_concurrently(functions, timeout: float = 600) -> list:
    """Run each function in its own thread (one per pipeline stage), wait for all, and
    return their results in order; the first error raised in a thread is raised here.

    Plumbing for lesson 05's schedules: the schedule itself is the notebook's code. A
    thread still running after ``timeout`` seconds (e.g. waiting on a queue nobody fills)
    raises TimeoutError instead of hanging the notebook.
    """
    results, errors = [None] * len(functions), []

    def call(i, fn):
        try:
            results[i] = fn()
        except BaseException as err:  # reported in the caller's thread below
            errors.append(err)

    threads = [
        threading.Thread(target=call, args=(i, fn), daemon=True) for i, fn in enumerate(functions)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    if errors:
        raise errors[0]
    if any(thread.is_alive() for thread in threads):
        raise TimeoutError(f"a stage thread was still running after {timeout:.0f} s")
    return results


class _Aborted(Exception):
    """Another stage's thread failed; this one stops too."""


class Pipeline:
    """Train ``stages`` (from ``model_parallel.split_model``) with ``loss`` (a mean over the
    micro-batch, e.g. ``keras.losses.SparseCategoricalCrossentropy``). ``make_optimizer``
    builds one optimizer per stage, created inside the stage's device scope so its slot
    variables sit with the stage's variables."""

    def __init__(self, stages, loss, make_optimizer=None, traced: bool = True):
        if not stages:
            raise ValueError("a pipeline needs at least one stage")
        self.stages = list(stages)
        self.loss = loss
        self.traced = traced  # False: run each stage eagerly (slow, but nothing to trace)
        self.optimizers = []
        if make_optimizer is not None:
            import tensorflow as tf

            for stage in self.stages:
                with tf.device(stage.device):
                    opt = make_optimizer()
                    opt.build(stage.trainable_variables)
                self.optimizers.append(opt)
        self._fns: dict = {}
        self._apply: list = []
        self._graph_steps: dict = {}
        self._add = _add_lists if not traced else _traced_add()

    def lane(self, s: int) -> str:
        """The timeline lane of stage ``s``."""
        return f"stage {s} ({short_device(self.stages[s].device)})"

    def _fn(self, s: int, training: bool, x, y):
        """The forward pass of stage ``s`` (the last stage returns the loss), traced once
        for any batch size unless the pipeline runs eagerly."""
        import tensorflow as tf

        key = (s, training)
        if key not in self._fns:
            stage, last = self.stages[s], s == len(self.stages) - 1

            def forward(x, y=None):
                out = stage(x, training=training)
                if last:
                    with tf.device(stage.device):
                        out = self.loss(y, out)
                return out

            specs = [tf.TensorSpec([None, *x.shape[1:]], x.dtype)]
            if last:
                specs.append(tf.TensorSpec([None, *y.shape[1:]], y.dtype))
            self._fns[key] = tf.function(forward, input_signature=specs) if self.traced else forward
        return self._fns[key]

    def gradients(self, x, y, micro_batches: int = 1, training: bool = True, timeline=None):
        """Mean loss over the batch and each stage's gradients, accumulated over
        ``micro_batches`` equal micro-batches (equal to the full-batch gradient when the
        model treats samples independently, e.g. BatchNorm in inference mode)."""
        import tensorflow as tf

        k, m_count = len(self.stages), micro_batches
        _check_split(x, m_count)
        xs, ys = tf.split(x, m_count), tf.split(y, m_count)
        fwd_q = [queue.Queue() for _ in range(k)]
        bwd_q = [queue.Queue() for _ in range(k)]
        grads: list = [None] * k
        losses: list = []
        errors: list = []
        timeline = timeline if timeline is not None else Timeline()
        lanes = [self.lane(s) for s in range(k)]
        timeline.lanes.extend(lane for lane in lanes if lane not in timeline.lanes)

        def recv(q):
            item = q.get()
            if item is _ABORT:
                raise _Aborted
            return item

        def run(s):
            stage, last = self.stages[s], s == k - 1
            acc, kept = None, []
            with tf.device(stage.device):
                for m in range(m_count):
                    inp = xs[m] if s == 0 else recv(fwd_q[s])
                    with tf.GradientTape() as tape:
                        if s > 0:
                            tape.watch(inp)
                        with timeline.span(lanes[s], f"F{m}"):
                            out = self._fn(s, training, inp, ys[m])(inp, *([ys[m]] if last else []))
                            _sync(out)
                        if last:
                            losses.append(out)
                            out = out / m_count
                    if last:
                        acc = self._backward(s, m, tape, out, inp, None, acc, bwd_q, timeline)
                    else:
                        fwd_q[s + 1].put(out)
                        kept.append((tape, inp, out))
                for m, (tape, inp, out) in enumerate(kept):
                    dy = recv(bwd_q[s])
                    acc = self._backward(s, m, tape, out, inp, dy, acc, bwd_q, timeline)
                grads[s] = acc

        def guarded(s):
            try:
                run(s)
            except BaseException as err:  # stop every other stage too, then report
                errors.append(err)
                for q in fwd_q + bwd_q:
                    q.put(_ABORT)

        threads = [threading.Thread(target=guarded, args=(s,), daemon=True) for s in range(k)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        real = [e for e in errors if not isinstance(e, _Aborted)]
        if real:
            raise real[0]
        return float(tf.add_n(losses) / m_count), grads

    def _backward(self, s, m, tape, out, inp, dy, acc, bwd_q, timeline):
        stage = self.stages[s]
        sources = ([inp] if s > 0 else []) + list(stage.trainable_variables)
        with timeline.span(self.lane(s), f"B{m}"):
            g = tape.gradient(out, sources, output_gradients=dy)
            _sync(g[0])
        if s > 0:
            bwd_q[s - 1].put(g[0])
            g = g[1:]
        return g if acc is None else self._add(acc, g)

    def graph_step(self, x, y, micro_batches: int = 1):
        """One training step traced as a single ``tf.function`` (one trace per M); with
        M = 1 it is naive model parallelism, with M > 1 the runtime may overlap stages."""
        import tensorflow as tf

        if not self.optimizers:
            raise ValueError("this pipeline has no optimizers: pass make_optimizer=...")
        _check_split(x, micro_batches)
        if micro_batches not in self._graph_steps:
            self._graph_steps[micro_batches] = tf.function(
                lambda x, y: _one_graph(self, x, y, micro_batches)
            )
        return self._graph_steps[micro_batches](x, y)

    def train_step(self, x, y, micro_batches: int = 1, timeline=None) -> float:
        """One pipelined training step; returns the mean loss."""
        import tensorflow as tf

        if not self.optimizers:
            raise ValueError("this pipeline has no optimizers: pass make_optimizer=...")
        loss, grads = self.gradients(x, y, micro_batches, training=True, timeline=timeline)
        if not self._apply:
            for stage, opt in zip(self.stages, self.optimizers, strict=True):
                self._apply.append(tf.function(_applier(stage, opt)))
        for apply, g in zip(self._apply, grads, strict=True):
            apply(g)
        return loss


def _one_graph(pipeline, x, y, micro_batches):
    """Model parallelism as one traced step: every stage's forward pass for each micro-batch,
    then every stage's backward pass and update, each under its stage's device scope (a
    single ``tape.gradient`` call would put the whole backward pass on the default device).
    Micro-batches are independent branches of the graph, so TensorFlow's executor may run
    stage 0 on one micro-batch while stage 1 works on another."""
    import tensorflow as tf

    stages, k = pipeline.stages, len(pipeline.stages)
    grads: list = [None] * k
    losses, branches = [], []
    for xm, ym in zip(tf.split(x, micro_batches), tf.split(y, micro_batches), strict=True):
        with tf.GradientTape(persistent=True) as tape:
            inputs, outputs = [xm], []
            for s, stage in enumerate(stages):
                out = stage(inputs[-1], training=True)
                if s == k - 1:
                    with tf.device(stage.device):
                        out = pipeline.loss(ym, out) / micro_batches
                        losses.append(out)
                outputs.append(out)
                inputs.append(out)
        branches.append((tape, inputs, outputs))
    for tape, inputs, outputs in branches:
        dy = None
        for s in reversed(range(k)):
            with tf.device(stages[s].device):
                g = tape.gradient(
                    outputs[s], ([inputs[s]] if s else []) + stages[s].trainable_variables, dy
                )
                if s:
                    dy, g = g[0], g[1:]
                grads[s] = g if grads[s] is None else _add_lists(grads[s], g)
    for stage, opt, g in zip(stages, pipeline.optimizers, grads, strict=True):
        with tf.device(stage.device):
            opt.apply_gradients(zip(g, stage.trainable_variables, strict=True))
    return tf.add_n(losses)


def _check_split(x, micro_batches) -> None:
    m = micro_batches
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ValueError(f"micro_batches must be a whole number >= 1, got {m!r}")
    if x.shape[0] % m:
        raise ValueError(f"batch of {x.shape[0]} does not split into {m} equal parts")


def _add_lists(a, b):
    return [x + y for x, y in zip(a, b, strict=True)]


def _traced_add():
    """Gradient accumulation as one call per micro-batch, not one eager op per variable."""
    import tensorflow as tf

    return tf.function(_add_lists)


def _applier(stage, optimizer):
    def apply(grads):
        import tensorflow as tf

        with tf.device(stage.device):
            optimizer.apply_gradients(zip(grads, stage.trainable_variables, strict=True))

    return apply


def _sync(tensor) -> None:
    """Wait until ``tensor`` is computed (GPU kernels run asynchronously), cheaply."""
    import tensorflow as tf

    if "GPU" in tensor.device:
        tf.reduce_sum(tensor).numpy()
