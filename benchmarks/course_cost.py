"""What each lesson costs on this machine: Run All times at smoke and cpu against their budgets.

Runs the lessons (notebooks/) with the course runner at each scale, one after the other, and
prints each lesson's time beside its budget (smoke 60 s, cpu 180 s), then the float32 /
float16 / bfloat16 tiny-step ratios of this CPU (``precision.probe``), which is what decides
whether a 16-bit sweep would be cheap here. A benchmark, not a test: it prints, and says
which lessons are over budget; it does not fail. Say how busy the machine was next to any
figure you record (``uptime``).

    python benchmarks/course_cost.py [--only 02] [--scale smoke,cpu] [--out build/course-cost]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tflearn_helpers import precision, report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import course  # noqa: E402  (tools/course.py: the course runner)
from mixed_precision_cpu import cpu_features  # noqa: E402

BUDGET = {"smoke": 60, "cpu": 180}  # seconds per lesson on 2 cores (the course's time budget)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run notebooks whose name contains this")
    parser.add_argument("--scale", default="smoke,cpu", help="comma-separated scale profiles")
    parser.add_argument("--out", default="build/course-cost")
    args = parser.parse_args()
    scales = args.scale.split(",")
    unknown = set(scales) - set(BUDGET)
    if unknown:
        parser.error(f"unknown scales {sorted(unknown)}; choose from {sorted(BUDGET)}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    seconds = {}
    for scale in scales:
        out = Path(args.out) / scale
        course.run_course(str(out), scale=scale, only=args.only)
        for r in json.loads((out / "summary.json").read_text()):
            seconds[r["notebook"], scale] = (r["seconds"], r["status"])
    lessons = sorted({nb for nb, _ in seconds})
    rows = []
    for nb in lessons:
        row = [nb]
        for scale in scales:
            s, status = seconds.get((nb, scale), (None, "not run"))
            over = "" if s is None or s <= BUDGET[scale] else " OVER"
            row.append("-" if s is None else f"{s:.0f} s / {BUDGET[scale]} s{over} ({status})")
        rows.append(row)
    cores = os.cpu_count()
    print(f"\n{cores} cores; load average when it started: {load:.1f}")
    print(report.format_table(rows, ("lesson", *(f"{s}: time / budget" for s in scales))))
    steps = precision.probe(120)
    f32 = steps["float32"]
    print(report.format_table(
        [(p, "too slow here (> 120 s or 20x float32)" if s is None else f"{s * 1e3:.1f} ms",
          f"{s / f32:.2f}x" if s and f32 else "-") for p, s in steps.items()],
        ("policy (tiny CPU step)", "step time", "step time / float32's"),
    ))  # fmt: skip
    print(f"CPU flags read: {cpu_features()}")


if __name__ == "__main__":
    main()
