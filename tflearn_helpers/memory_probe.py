"""Measure a training step's peak memory in a fresh process (benchmarks/memory_vs_model.py).

``python -m tflearn_helpers.memory_probe --batch 16`` builds a model, builds its optimizer,
runs one compiled training step (tracing), resets the allocator's statistics, runs timed
steps and reports a "result" event: the peak bytes ``tf.config.experimental.get_memory_info``
saw during a step, and the step times. On the CPU the allocator reports only when
``TF_CPU_ALLOCATOR_USE_BFC=true`` was set before TensorFlow loaded, so ``measure`` starts
each run as a child process with it (a fresh process also starts from a clean allocator).
Lesson 00 writes the same program in one of its cells.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from .cluster import events, processes

__all__ = ["BFC_ENV", "Probe", "measure", "result", "run_here"]

BFC_ENV = "TF_CPU_ALLOCATOR_USE_BFC"


@dataclass(frozen=True)
class Probe:
    """One measured run: the peak bytes of a step (None without allocator stats), step seconds."""

    peak: int | None
    step_seconds: tuple[float, ...]


def run_here(model: str, image_size: int, batch: int, policy: str, optimizer: str, steps: int):
    """Measure in this process (TensorFlow must not have been imported yet for the CPU)."""
    import keras
    import tensorflow as tf

    from .cpu_speed import build_model
    from .measure import time_steps

    keras.mixed_precision.set_global_policy(policy)
    net = build_model(model, image_size)
    opt = keras.optimizers.get(optimizer)
    opt.build(net.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=model == "small")
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
    return Probe(peak, timing.samples)


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
    cmd = [sys.executable, "-m", "tflearn_helpers.memory_probe", "--batch", str(batch)]
    cmd += ["--model", model, "--image-size", str(image_size), "--policy", policy]
    cmd += ["--optimizer", optimizer, "--steps", str(steps)]
    proc = processes.start(cmd, env=env, merge_stderr=False, core=core)
    proc.timeout = timeout
    return proc


def result(proc: processes.Child) -> Probe:
    """Wait for a child started by :func:`measure` and read its measurement."""
    data, _ = events.result(proc, proc.timeout, "memory probe")
    return Probe(data["peak"], tuple(data["step_seconds"]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--model", default="resnet50", choices=("resnet50", "small"))
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--policy", default="float32")
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args(argv)
    probe = run_here(
        args.model, args.image_size, args.batch, args.policy, args.optimizer, args.steps
    )
    events.emit("result", value={"peak": probe.peak, "step_seconds": list(probe.step_seconds)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
