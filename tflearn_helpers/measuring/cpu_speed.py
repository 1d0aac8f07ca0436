"""oneDNN on or off: time a training step both ways (lesson 00, benchmarks/cpu_onednn.py).

``TF_ENABLE_ONEDNN_OPTS`` is read once, when TensorFlow is imported, so each setting runs
in its own fresh process (``python -m tflearn_helpers.measuring.cpu_speed`` reports its step
times as a "result" event). ``compare()`` runs the settings side by side, CPU only, and returns each
one's timing and whether TensorFlow reported oneDNN on in that process.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from ..programs import events, processes
from ..topics.models import MODEL_NAMES, named
from .timing import Timing, time_steps

__all__ = ["Run", "compare", "main"]

SETTINGS = {"course": "1", "tensorflow default": None, "off": "0"}
ONEDNN_BANNER = "oneDNN custom operations are on"


@dataclass(frozen=True)
class Run:
    """One setting's result: step timing, and oneDNN as TensorFlow itself reported it."""

    timing: Timing
    onednn: bool


def time_training_steps(model: str, image_size: int, batch: int, steps: int) -> Timing:
    """Seconds per training step (after one untimed warm-up step) in this process."""
    import keras
    import numpy as np

    net = named(model, image_size)
    net.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(True))
    rng = np.random.default_rng(0)
    x = rng.random((batch, image_size, image_size, 3), dtype=np.float32)
    y = rng.integers(0, 10, batch)
    return time_steps(lambda: net.train_on_batch(x, y), steps=steps, warmup=1)


def compare(
    model: str = "small",
    image_size: int = 32,
    batch: int = 32,
    steps: int = 5,
    settings=("course", "tensorflow default"),
    timeout: float = 600,
) -> dict[str, Run]:
    """Time the same training step under each oneDNN setting, each in a fresh process.

    With a core per setting the runs go side by side, each pinned to its own core (a fair,
    simultaneous comparison); otherwise one after the other on all cores.
    """
    unknown = set(settings) - set(SETTINGS)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; choose from {list(SETTINGS)}")
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    pinned = len(cores) >= len(settings)
    cmd = [
        sys.executable,
        "-m",
        "tflearn_helpers.measuring.cpu_speed",
        "--model",
        model,
        "--image-size",
        str(image_size),
        "--batch",
        str(batch),
        "--steps",
        str(steps),
    ]
    procs = {}
    for i, name in enumerate(settings):
        core = cores[i] if pinned else None
        procs[name] = _start(cmd, SETTINGS[name], core)
        if not pinned:
            procs[name] = _finish(name, procs[name], timeout)
    return {name: _finish(name, p, timeout) if pinned else p for name, p in procs.items()}


def _start(cmd, flag: str | None, core: int | None) -> processes.Child:
    env = {"TF_ENABLE_ONEDNN_OPTS": flag} if flag is not None else {}
    # CPU kernels only; log level 0 so that TensorFlow reports oneDNN on every version
    # (2.19 logs the banner as INFO, which level 2 hides; 2.21 prints it at any level)
    env.update(TF_CPP_MIN_LOG_LEVEL="0", CUDA_VISIBLE_DEVICES="")
    return processes.start(  # fresh: TensorFlow reports oneDNN while it is imported
        cmd, env=env, unset=("TF_ENABLE_ONEDNN_OPTS",), merge_stderr=False, core=core, fresh=True
    )


def _finish(name: str, proc: processes.Child, timeout: float) -> Run:
    samples, err = events.result(proc, timeout, f"the {name!r} run")
    return Run(Timing(tuple(samples)), ONEDNN_BANNER in err)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="small", choices=MODEL_NAMES)
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args(argv)
    timing = time_training_steps(args.model, args.image_size, args.batch, args.steps)
    events.emit("result", value=list(timing.samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
