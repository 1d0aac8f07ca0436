"""Async vs sync (SyncReplicasOptimizer) parameter-server training, 1, 2 and 4 workers
(lesson 08).

Every worker is a process running lesson 08's own worker program (read from the notebook's
``%%writefile`` cell, so the benchmark measures exactly what the lesson runs). One run
starts 2 ps tasks as processes, then trains to the same number of global updates in each
mode with 1, 2 and 4 worker processes (sync: every worker's gradient in every update),
repeats interleaved so a busy machine affects all alike. Prints the median updates/s and
worker steps/s (first steps of each worker left out) and the async/sync ratios. All tasks
share this machine's cores: the ratios show what synchronisation costs here, not how a
real cluster scales.

    python benchmarks/ps_async_vs_sync.py [--updates 100] [--repeats 3] [--batch 32]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tflearn_helpers import cluster, ps_workers, report  # noqa: E402

COUNTS = (1, 2, 4)
MODES = ("async", "sync")
LESSON = Path(__file__).resolve().parents[1] / "notebooks/08_parameter_servers_estimator_era.ipynb"


def worker_program(folder: Path) -> Path:
    """Lesson 08's worker program, written from its ``%%writefile $PROGRAM`` cell."""
    cells = json.loads(LESSON.read_text())["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    source = next(s for s in sources if s.startswith("%%writefile $PROGRAM"))
    path = folder / "ps_worker.py"
    path.write_text(source.split("\n", 1)[1])
    return path


def measure(spec: dict, program: Path, workers: int, mode: str, args, name: str) -> dict:
    """One run to ``args.updates`` global updates; the summary of its workers' logs."""
    argv = ["--mode", mode, "--workers", workers, "--aggregate", workers, "--run", name]
    argv += ["--updates", args.updates, "--batch", args.batch]
    with ps_workers.WorkerProcesses(spec, program, workers, argv) as run:
        run.go()
        if not run.wait_for_step(args.updates, timeout_s=300):
            raise RuntimeError(
                f"{mode} with {workers} workers stopped before {args.updates} updates; "
                f"worker 0's log:\n{run.procs.logs('worker', 0)[-1500:]}"
            )
        return ps_workers.summarize(run.finish(grace_s=1.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=100, help="global updates per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32, help="examples per worker step")
    parser.add_argument("--workers", default="1,2,4", help="comma list of worker counts")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    program = worker_program(Path(tempfile.mkdtemp(prefix="ps-bench-")))
    spec = cluster.local_cluster_spec(workers=max(counts), ps=2)
    results = {(n, mode): [] for n in counts for mode in MODES}
    with cluster.LocalCluster(spec) as ps_tasks:
        ps_tasks.start("server", tasks=[("ps", 0), ("ps", 1)])
        for repeat in range(args.repeats):
            for n in counts:
                for mode in MODES:
                    summary = measure(spec, program, n, mode, args, f"{mode}-{n}-{repeat}")
                    results[(n, mode)].append(summary)
    print(
        f"{os.cpu_count()} CPU cores, {args.updates} updates x {args.repeats} repeats, "
        f"batch {args.batch} per worker step, 2 ps tasks, one process per worker"
    )
    print(report.format_table([_row(results, n) for n in counts], HEADERS))


HEADERS = (
    "workers",
    "async updates/s",
    "sync updates/s",
    "ratio",
    "async steps/s",
    "sync steps/s",
    "ratio",
    "async staleness",
)


def _row(results: dict, n: int) -> tuple:
    def median(mode, key):
        return statistics.median(s[key] for s in results[(n, mode)])

    a_up, s_up = median("async", "updates_per_s"), median("sync", "updates_per_s")
    a_st, s_st = median("async", "worker_steps_per_s"), median("sync", "worker_steps_per_s")
    staleness = median("async", "mean_staleness")
    return (n, a_up, s_up, a_up / s_up, a_st, s_st, a_st / s_st, staleness)


if __name__ == "__main__":
    main()
