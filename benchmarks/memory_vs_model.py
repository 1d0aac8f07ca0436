"""Predicted vs measured peak memory of a compiled training step, and the allocator's cost.

Each measurement runs in a fresh process (``tflearn_helpers.measuring.memory_probe``) with
``TF_CPU_ALLOCATOR_USE_BFC=true``, so ``get_memory_info('CPU:0')`` reports and every run
starts from a clean allocator. The prediction is ``memory.one_device`` on the same model.
Then the same training step is timed with the BFC allocator on and off, side by side
(each pinned to a core of its own when there are two), and the ratio printed, with oneDNN
on (the course's CPU setting; its own allocator is the default then) and off (TensorFlow's
plain CPU allocator is the default then).

    python benchmarks/memory_vs_model.py [--tolerance 0.3] [--quick | --speed-only | --policy P]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from tflearn_helpers import memory, memory_probe, report

CASES = [
    ("resnet50", 64, 8, "float32"),
    ("resnet50", 64, 16, "float32"),
    ("resnet50", 64, 32, "float32"),
    ("resnet50", 64, 16, "mixed_float16"),
    ("resnet50", 64, 32, "mixed_float16"),
    ("small", 64, 32, "float32"),
    ("small", 64, 128, "float32"),
    ("resnet50", 224, 8, "float32"),
    ("resnet50", 224, 16, "float32"),
]


def predicted(model: str, image: int, batch: int, policy: str) -> memory.Footprint:
    import keras

    from tflearn_helpers import models

    keras.mixed_precision.set_global_policy(policy)
    try:
        return memory.one_device(memory.profile(models.named(model, image)), batch, "adam")
    finally:
        keras.mixed_precision.set_global_policy("float32")


def sweep(cases) -> list[tuple]:
    rows = []
    for model, image, batch, policy in cases:
        probe = memory_probe.result(
            memory_probe.measure(batch, model, image, policy)
        )  # one at a time: clean peaks
        guess = predicted(model, image, batch, policy).total
        rows.append((model, image, batch, policy, guess, probe.peak))
    return rows


def bfc_speed(batch: int, steps: int, onednn: bool) -> tuple[float, float]:
    """Median step seconds with the BFC allocator on and off. With 2 cores they run side by
    side, twice, swapping cores, so that a busier core favours neither."""
    cores = sorted(os.sched_getaffinity(0))[:2] if hasattr(os, "sched_getaffinity") else []
    samples = {True: [], False: []}
    if len(cores) == 2:
        for order in (cores, cores[::-1]):
            procs = {
                bfc: memory_probe.measure(batch, steps=steps, bfc=bfc, onednn=onednn, core=core)
                for bfc, core in zip((True, False), order, strict=True)
            }
            for bfc, proc in procs.items():
                samples[bfc] += memory_probe.result(proc).step_seconds
    else:
        for bfc in (True, False):
            samples[bfc] += memory_probe.result(
                memory_probe.measure(batch, steps=steps, bfc=bfc, onednn=onednn)
            ).step_seconds
    return statistics.median(samples[True]), statistics.median(samples[False])


def report_sweep(rows, tolerance: float) -> float:
    """Print the predicted-vs-measured table; return the largest relative error."""
    mib = memory.MiB
    print("compiled step (tf.function), Adam, CPU with TF_CPU_ALLOCATOR_USE_BFC=true:")
    print(report.format_table(
        [(m, f"{i}x{i}", b, p, f"{g / mib:,.0f}", f"{peak / mib:,.0f}", f"{g / peak:.2f}")
         for m, i, b, p, g, peak in rows],
        ("model", "image", "batch", "dtype policy", "model MiB", "measured MiB", "model/measured"),
    ))  # fmt: skip
    worst = max(abs(g / peak - 1) for *_, g, peak in rows)
    print(f"largest error: {worst:.0%} (tolerance {tolerance:.0%})")
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tolerance", type=float, default=0.3)
    parser.add_argument("--quick", action="store_true", help="the 64x64 ResNet-50 cases only")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per allocator")
    parser.add_argument("--speed-only", action="store_true", help="only time the allocators")
    policies = sorted({case[3] for case in CASES})
    parser.add_argument(
        "--policy", choices=policies, help="only this policy's rows, and no allocator timing"
    )
    args = parser.parse_args()
    worst = 0.0
    if not args.speed_only:
        cases = CASES[:3] if args.quick else CASES
        cases = [case for case in cases if args.policy in (None, case[3])]
        worst = report_sweep(sweep(cases), args.tolerance)
    for onednn in () if args.policy else (True, False):
        with_bfc, without = bfc_speed(16, args.steps, onednn)
        print(
            f"ResNet-50 64x64 batch 16 step, oneDNN {'on' if onednn else 'off'}: BFC allocator "
            f"{with_bfc * 1e3:.0f} ms, default allocator {without * 1e3:.0f} ms; "
            f"ratio (BFC / default) {with_bfc / without:.2f}"
        )
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
