"""Multi-worker step time with 1, 2 and 3 worker processes, side by side in one run (lesson 04).

Each size runs lesson 04's worker program (``scripts/multi_worker_train.py`` in
tflearn_helpers, its custom loop) in N processes on this machine (MultiWorkerMirroredStrategy,
one TF_CONFIG each), one size after the other, with the same per-worker batch (so the
global batch grows with N, as when adding machines).
It prints the median step time of each size (from worker 0's step events) and its ratio
to one worker.

The workers run on the CPU (processes sharing one GPU would compete for its memory, and
NCCL refuses two ranks on one GPU). On one machine all processes share its cores: the
ratio shows the price of the collective all-reduce and of the shared CPU, not a cluster's
speed-up.

  python benchmarks/multi_worker_steps.py [--workers 1,2,3] [--steps 30]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tflearn_helpers import cluster, programs, report, scripts  # noqa: E402
from tflearn_helpers.taught.lesson04 import median_step_s  # noqa: E402


def step_seconds(workers: int, args) -> float:
    """Median step time of worker 0 in a job of ``workers`` processes."""
    out = tempfile.mkdtemp(prefix=f"mw-bench-{workers}-")  # its checkpoints' folder
    flags = ["--out", out, "--steps", args.steps, "--save-every", args.steps + 1]  # no saving
    flags += ["--global-batch", args.per_worker_batch * workers]
    spec = cluster.local_cluster_spec(workers=workers)
    with cluster.LocalCluster(spec, env={"CUDA_VISIBLE_DEVICES": "-1"}) as job:
        job.start(scripts.path("multi_worker_train.py"), flags)
        codes = job.wait(timeout=args.timeout)
        if set(codes.values()) != {0}:
            raise RuntimeError(
                f"{workers} workers failed: {codes}\n{job.logs('worker', 0)[-2000:]}"
            )
        steps = programs.events.parse(job.logs("worker", 0), "step")
    return median_step_s(steps, skip=3)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", default="1,2,3", help="comma list of process counts")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--per-worker-batch", type=int, default=32)
    p.add_argument("--timeout", type=float, default=300, help="seconds per job before failing")
    args = p.parse_args(argv)
    try:
        sizes = [int(n) for n in args.workers.split(",")]
    except ValueError:
        p.error(f"--workers takes a comma list of whole numbers, got {args.workers!r}")
    if not sizes or min(sizes) < 1 or args.steps < 5:
        p.error("need worker counts >= 1 and --steps >= 5")
    times = {n: step_seconds(n, args) for n in sizes}
    base = times[sizes[0]]
    rows = [
        (n, n * args.per_worker_batch, f"{t * 1e3:.2f}", f"{t / base:.2f}")
        for n, t in times.items()
    ]
    print(
        report.format_table(
            rows, ("workers", "global batch", "median step ms", f"ratio vs {sizes[0]}")
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
