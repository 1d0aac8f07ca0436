"""Measure a training step's peak memory in a fresh process (benchmarks/memory_vs_model.py).

``python -m tflearn_helpers.measuring.memory_probe --batch 16`` builds a model, builds its
optimizer, runs one compiled training step (tracing), resets the allocator's statistics, runs timed
steps and reports a "result" event: the peak bytes ``tf.config.experimental.get_memory_info``
saw during a step, the step times, and the memory model's prediction (``memory.one_device``,
lesson 00) for the very network it built, and the bytes per example a forward pass under a
tape keeps for the backward pass, measured and counted by the model's rules. On the CPU the
allocator reports only when ``TF_CPU_ALLOCATOR_USE_BFC=true`` was set before TensorFlow
loaded, so ``measure`` starts each run as a child process with it (a fresh process also starts
from a clean allocator).
Lesson 00 writes the same program in one of its cells. ``sweep`` measures many settings
under one deadline (lesson 02): rounds of one child per core, each round's cost predicted
from the first one's, and a child still running at the deadline stopped ("too slow here").
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import asdict, dataclass

from ..programs import events, processes
from ..topics import memory
from ..topics.models import MODEL_NAMES, named

__all__ = ["measure", "result", "sweep"]

BFC_ENV = "TF_CPU_ALLOCATOR_USE_BFC"


@dataclass(frozen=True)
class Probe:
    """One measured run: the peak bytes of a step (None without allocator stats), step seconds,
    and the memory model's footprint of the same network, batch and optimizer."""

    peak: int | None
    step_seconds: tuple[float, ...]
    predicted: memory.Footprint
    kept: float | None = None  # measured bytes per example kept for the backward pass
    kept_model: int | None = None  # the same, counted by the memory model's rules


@dataclass(frozen=True)
class SweepRow:
    """One setting of a sweep: its probe (None when not measured), the child's wall seconds
    (0 when it did not start), and what happened: "measured", "too slow here (...)" or
    "skipped (...)"."""

    policy: str
    batch: int
    probe: Probe | None
    wall: float
    status: str


def run_here(model: str, image_size: int, batch: int, policy: str, optimizer: str, steps: int):
    """Measure in this process (TensorFlow must not have been imported yet for the CPU)."""
    import keras
    import tensorflow as tf

    from .timing import time_steps

    keras.mixed_precision.set_global_policy(policy)
    net = named(model, image_size)
    mem = memory.profile(net)  # shapes only
    predicted = memory.one_device(mem, batch, optimizer)
    opt = keras.optimizers.get(optimizer)
    opt.build(net.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x = tf.random.uniform((batch, image_size, image_size, 3))
    y = tf.zeros((batch,), tf.int32)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, tf.cast(net(x, training=True), tf.float32))
        grads = tape.gradient(loss, net.trainable_variables)
        opt.apply_gradients(zip(grads, net.trainable_variables, strict=True))
        return loss

    step(x, y).numpy()  # trace and allocate once
    device = "GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0"
    try:
        tf.config.experimental.reset_memory_stats(device)
    except (ValueError, tf.errors.InvalidArgumentError):
        device = None  # this allocator keeps no statistics
    timing = time_steps(lambda: step(x, y).numpy(), steps=steps, warmup=0)
    peak = tf.config.experimental.get_memory_info(device)["peak"] if device else None
    kept = _kept_per_example(net, x, device) if device else None
    kept_model = mem.kept_per_example + mem.float32_copy_per_example
    return Probe(peak, timing.samples, predicted, kept, kept_model)


def _kept_per_example(net, x, device: str) -> float:
    """Bytes per example that a traced forward pass under a tape leaves in use for the backward
    pass, measured at the batch and at three times it: the difference per example leaves out
    what does not grow with the batch (the 16-bit copies of the weights, for one)."""
    import tensorflow as tf

    forward = tf.function(lambda images: net(images, training=True))
    info, held = tf.config.experimental.get_memory_info, {}
    for part in (x, tf.concat([x] * 3, axis=0)):
        n = len(part)
        for _ in range(2):  # the first call at a shape traces it and builds its backward pass
            before = info(device)["current"]
            with tf.GradientTape():
                out = forward(part)
                held[n] = info(device)["current"] - before
            del out
    (small, a), (large, b) = sorted(held.items())
    return (b - a) / (large - small)


def measure(
    batch: int,
    model: str = "resnet50",
    image_size: int = 64,
    policy: str = "float32",
    optimizer: str = "adam",
    steps: int = 1,
    bfc: bool = True,
    onednn: bool = True,
    core: int | None = None,
    timeout: float = 600,
) -> processes.Child:
    """Start a child process that measures one setting; pass it to :func:`result`."""
    env = dict(TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env[BFC_ENV] = "true" if bfc else "false"
    env["TF_ENABLE_ONEDNN_OPTS"] = "1" if onednn else "0"  # the course's setting: on (lesson 00)
    cmd = [sys.executable, "-m", "tflearn_helpers.measuring.memory_probe", "--batch", str(batch)]
    cmd += ["--model", model, "--image-size", str(image_size), "--policy", policy]
    cmd += ["--optimizer", optimizer, "--steps", str(steps)]
    proc = processes.start(cmd, env=env, merge_stderr=False, core=core)
    proc.timeout = timeout
    return proc


def result(proc: processes.Child) -> Probe:
    """Wait for a child started by :func:`measure` and read its measurement."""
    data, _ = events.result(proc, proc.timeout, "memory probe")
    footprint = memory.Footprint(**data["predicted"])
    kept = data.get("kept"), data.get("kept_model")
    return Probe(data["peak"], tuple(data["step_seconds"]), footprint, *kept)


def sweep(
    settings, budget: float, model="resnet50", image_size=64, optimizer="adam", cores=None
) -> list[SweepRow]:
    """Measure ``settings`` (``(policy, batch)`` pairs, cheapest first) within ``budget`` s.

    Each round runs one child per core, pinned to it. From the first round's wall time and
    step time the cost of a later round is predicted (trace and start-up, plus the step
    grown with the batch); a round that would not fit in what is left is skipped, and a
    child still running at the deadline is stopped. Nothing waits beyond ``budget``.
    """
    if not budget > 0:
        raise ValueError(f"budget must be > 0 seconds, got {budget!r}")
    if cores is None:
        cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [None]
    deadline = time.monotonic() + budget
    rows: list[SweepRow] = []
    cost = None  # (start-up seconds, step seconds per example), from the first round
    for i in range(0, len(settings), len(cores)):
        group = settings[i : i + len(cores)]
        left = deadline - time.monotonic()
        guess = max(cost[0] + cost[1] * b for _, b in group) if cost else 0.0
        if rows and (cost is None or guess > left):
            why = (
                f"predicted {guess:.0f} s > {left:.0f} s left" if cost else "first round unmeasured"
            )
            rows += [SweepRow(p, b, None, 0.0, f"skipped ({why})") for p, b in group]
            continue
        procs = [
            (p, b, measure(b, model, image_size, p, optimizer, core=c))
            for (p, b), c in zip(group, cores, strict=False)
        ]
        rows += _finish_round(procs, deadline, budget)
        if cost is None:
            cost = _cost_model(rows)
    return rows


def _finish_round(procs, deadline: float, budget: float) -> list[SweepRow]:
    start, ended = time.monotonic(), {}
    while len(ended) < len(procs) and time.monotonic() < deadline:
        now = time.monotonic()
        ended.update(
            {i: now for i, (*_, c) in enumerate(procs) if i not in ended and not c.running()}
        )
        time.sleep(0.1)
    rows = []
    for i, (policy, batch, child) in enumerate(procs):
        if i not in ended and child.running():
            child.stop(grace=0)
            status = f"too slow here (> {budget:.0f} s for the sweep)"
            rows.append(SweepRow(policy, batch, None, time.monotonic() - start, status))
            continue
        wall = ended.get(i, time.monotonic()) - start
        rows.append(SweepRow(policy, batch, result(child), wall, "measured"))
    return rows


def _cost_model(rows: list[SweepRow]):
    """(start-up and tracing seconds, seconds per example) of a child: it computes the step
    twice (the traced warm-up and the timed step), and the rest does not grow with the batch."""
    measured = [r for r in rows if r.probe]
    if not measured:
        return None
    per_example = max(2 * max(r.probe.step_seconds) / r.batch for r in measured)
    startup = max(r.wall - per_example * r.batch for r in measured)
    return startup, per_example


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--model", default="resnet50", choices=MODEL_NAMES)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--policy", default="float32")
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args(argv)
    probe = run_here(
        args.model, args.image_size, args.batch, args.policy, args.optimizer, args.steps
    )
    value = {"peak": probe.peak, "step_seconds": list(probe.step_seconds)}
    value |= {"kept": probe.kept, "kept_model": probe.kept_model}
    events.emit("result", value=value | {"predicted": asdict(probe.predicted)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
