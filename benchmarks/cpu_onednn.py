"""A ResNet training step: the course's CPU setting (oneDNN on) vs TensorFlow's default.

Both run side by side in one invocation, each in a fresh process (the switch is read at
import), pinned to a core of its own when there are enough cores. Prints each setting's
step time, whether TensorFlow reported oneDNN on, and the ratio; where TensorFlow left
oneDNN off, asserts the course's setting is over 1.5x faster (run it on a quiet machine).

    python benchmarks/cpu_onednn.py [--model resnet50] [--image-size 32] [--batch 32] [--steps 5]

``--model resnet14`` is the network lesson 00 times at the smoke profile.
"""

from __future__ import annotations

import argparse
import platform

from tflearn_helpers import cpu_speed, models, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50", choices=models.MODEL_NAMES)
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    runs = cpu_speed.compare(args.model, args.image_size, args.batch, args.steps)
    print(
        f"{args.model}, batch {args.batch}, {args.image_size}x{args.image_size}, "
        f"{args.steps} timed steps, on {platform.processor() or platform.machine()}"
    )
    print(
        report.format_table(
            [
                (
                    name,
                    "on" if r.onednn else "off",
                    str(r.timing),
                    f"{r.timing.rate(args.batch):.1f}",
                )
                for name, r in runs.items()
            ],
            ("setting", "oneDNN", "training step", "images/s"),
        )
    )
    ratio = runs["tensorflow default"].timing.median / runs["course"].timing.median
    print(f"ratio (TensorFlow default step time / course step time): {ratio:.2f}x")
    if not runs["tensorflow default"].onednn:  # where TensorFlow leaves it off, it must pay
        assert ratio > 1.5, f"oneDNN should speed up this training step, measured {ratio:.2f}x"


if __name__ == "__main__":
    main()
