"""Steps/s of ParameterServerStrategy with 1, 2 and 4 workers, side by side (lesson 09).

One process starts an in-process cluster (4 workers, 1 ps), then connects to the first
1, 2 and 4 workers in turn and times the same compute-only step (a chain of matmuls on
the worker, one read and one small update of a ps variable). Repeats are interleaved
across the worker counts so a busy machine affects them alike. Prints the median steps/s
and its ratio to 1 worker. On one machine all workers share its cores: the ratio shows
how much per-step latency more workers hide, not how a real cluster scales.

    python benchmarks/ps_strategy_workers.py [--steps 60] [--work 32] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tflearn_helpers import cluster, report  # noqa: E402
from tflearn_helpers.taught.lesson09 import measure_workers

COUNTS = (1, 2, 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="timed steps per measurement")
    parser.add_argument("--work", type=int, default=32, help="128x128 matmuls per step")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spec = cluster.local_cluster_spec(workers=max(COUNTS), ps=1, chief=True)
    servers = cluster.in_process_servers(spec)  # noqa: F841 (serve until the process exits)
    rates = {n: [] for n in COUNTS}
    for _ in range(args.repeats):
        for n in COUNTS:
            rate, split = measure_workers(spec, n, steps=args.steps, work=args.work)
            assert sum(split) == args.steps, split
            rates[n].append(rate)
    base = statistics.median(rates[1])
    rows = [
        (n, statistics.median(r), min(r), max(r), statistics.median(r) / base)
        for n, r in rates.items()
    ]
    print(
        f"{os.cpu_count()} CPU cores, {args.steps} steps x {args.repeats} repeats, work={args.work}"
    )
    print(
        report.format_table(rows, ("workers", "median steps/s", "min", "max", "ratio to 1 worker"))
    )


if __name__ == "__main__":
    main()
