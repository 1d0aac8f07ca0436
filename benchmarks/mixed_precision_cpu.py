"""float32, float16 and bfloat16 training steps on this CPU, oneDNN on and off, in one run.

Each (oneDNN, policy) setting runs in a fresh CPU-only process with one thread
(``TF_ENABLE_ONEDNN_OPTS`` is read when TensorFlow is imported): a training step of two
64-channel 3x3 convolutions on 32x32 images, batch 16 (the step ``precision.probe`` times).
A setting that misses its deadline is stopped and shown as "too slow here (> N s)", not
waited for. Prints the CPU features read, each step time and its ratio to float32.

    python benchmarks/mixed_precision_cpu.py [--deadline 60]
"""

from __future__ import annotations

import argparse
import platform

from tflearn_helpers import precision, report

NAMES = {"float32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}
FEATURES = ("avx512_fp16", "amx_fp16", "avx512_bf16", "amx_bf16", "amx_tile")


def cpu_features(cpuinfo: str = "/proc/cpuinfo") -> dict[str, bool] | None:
    """The CPU flags of ``FEATURES`` this machine has; None where /proc/cpuinfo is missing."""
    try:
        with open(cpuinfo) as f:
            flags = {w for line in f if line.startswith("flags") for w in line.split()}
    except OSError:
        return None
    return {name: name in flags for name in FEATURES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deadline", type=float, default=60, help="seconds per setting")
    args = parser.parse_args()
    features = cpu_features()
    print(f"CPU: {platform.processor() or platform.machine()}; features read: {features}")
    rows = []
    for onednn in (True, False):
        seconds = {
            p: precision.probe(args.deadline, (p,), onednn=onednn, threads=1)[p]
            for p in precision.POLICIES
        }
        f32 = seconds["float32"]
        for policy, s in seconds.items():
            if s is None:
                rows.append(("on" if onednn else "off", NAMES[policy], too_slow(args), "-"))
                continue
            ratio = f"{s / f32:.2f}x" if f32 else "-"
            rows.append(("on" if onednn else "off", NAMES[policy], f"{s * 1e3:.1f}", ratio))
    print(
        report.format_table(
            rows, ("oneDNN", "policy", "ms per step (1 thread)", "step time / float32's")
        )
    )


def too_slow(args) -> str:
    return f"too slow here (> {args.deadline:.0f} s)"


if __name__ == "__main__":
    main()
