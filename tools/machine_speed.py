"""How fast this machine is right now, so that make test's CPU-seconds compare between runs:

    python tools/machine_speed.py --save FILE    # a fixed workload's CPU time, and /proc/stat
    python tools/machine_speed.py --since FILE   # the same again, and what the machine did between

On this 2-core VM the same work costs more CPU time on some days than on others, with nothing
else running (a fresh ``import tensorflow``: 3.7 CPU-s one night, 4.6-5.5 the next morning), and
make test's jobs then take more CPU-s with no change in them. The fixed work here (a pure-Python
loop and a 64 MB array copy, best of 3 each) tells a slower machine from a heavier job; the
hypervisor's ``steal`` share (/proc/stat) says whether another guest took the cores.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

LOOP = 5_000_000
COPY_MB = 64
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def workload() -> dict[str, float]:
    """CPU milliseconds of the fixed work, best of 3 (the least disturbed run)."""

    def loop() -> None:
        total = 0
        for i in range(LOOP):
            total += i

    src = np.ones(COPY_MB * 2**20 // 8)
    dst = np.empty_like(src)

    def copy() -> None:
        for _ in range(10):
            np.copyto(dst, src)

    best = {}
    for name, work in (("python loop", loop), ("array copy", copy)):
        times = []
        for _ in range(3):
            start = time.process_time()
            work()
            times.append(time.process_time() - start)
        best[name] = round(1000 * min(times), 1)
    return best


def cpu_ticks() -> dict[str, int]:
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    return {
        name: int(value)
        for name, value in zip(STAT_FIELDS, fields[: len(STAT_FIELDS)], strict=True)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--save", type=Path, help="write the reading to this file")
    where.add_argument("--since", type=Path, help="compare with the reading in this file")
    args = parser.parse_args()
    now = {"work_ms": workload(), "ticks": cpu_ticks(), "time": time.time()}
    work = ", ".join(f"{name} {ms:.0f} ms" for name, ms in now["work_ms"].items())
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(now))
        print(f"== machine speed before: {work} of CPU")
        return
    before = json.loads(args.since.read_text())
    ratios = ", ".join(
        f"{name} {ms / before['work_ms'][name]:.2f}x" for name, ms in now["work_ms"].items()
    )
    ticks = {k: now["ticks"][k] - before["ticks"][k] for k in STAT_FIELDS}
    total = sum(ticks.values()) or 1
    share = ", ".join(f"{k} {100 * v / total:.1f} %" for k, v in ticks.items() if v)
    print(f"== machine speed after: {work} of CPU ({ratios} the time before)")
    print(f"== the cores in between ({now['time'] - before['time']:.0f} s): {share}")


if __name__ == "__main__":
    main()
