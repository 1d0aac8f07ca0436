"""Async vs sync (SyncReplicasOptimizer) parameter-server training, 1, 2 and 4 workers
(lesson 01).

One run starts 2 ps tasks as processes and 4 worker servers in this process, then trains
the lesson's model to the same number of global updates in each mode with the first 1, 2
and 4 workers, repeats interleaved so a busy machine affects all alike. Prints the median
updates/s and worker steps/s (first steps of each worker left out) and the async/sync
ratios. All tasks share this machine's cores: the ratios show what synchronisation costs
here, not how a real cluster scales.

    python benchmarks/ps_async_vs_sync.py [--updates 100] [--repeats 3] [--batch 32]
"""

from __future__ import annotations

import argparse
import os
import statistics

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tflearn_helpers import between_graph_runs, cluster, print_table  # noqa: E402

COUNTS = (1, 2, 4)


def measure(spec: dict, workers: int, mode: str, updates: int, batch: int, name: str) -> dict:
    run = between_graph_runs.Training(
        spec, workers, updates, mode=mode, container=name, batch=batch
    )
    try:
        logs = run.start().join(timeout_s=300)
    finally:
        between_graph_runs.release(spec, name)
    summary = between_graph_runs.summarize(logs)
    if summary["errors"]:
        raise RuntimeError(f"{mode} with {workers} workers failed: {summary['errors']}")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=100, help="global updates per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32, help="examples per worker step")
    args = parser.parse_args()
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    spec = cluster.local_cluster_spec(workers=max(COUNTS), ps=2)
    results = {(n, mode): [] for n in COUNTS for mode in between_graph_runs.MODES}
    with cluster.LocalCluster(spec) as ps_tasks:
        ps_tasks.start("server", tasks=[("ps", 0), ("ps", 1)])
        servers = cluster.in_process_servers(spec, jobs=("worker",))  # noqa: F841
        for repeat in range(args.repeats):
            for n in COUNTS:
                for mode in between_graph_runs.MODES:
                    name = f"{mode}-{n}-{repeat}"
                    summary = measure(spec, n, mode, args.updates, args.batch, name)
                    results[(n, mode)].append(summary)

    def median(n, mode, key):
        return statistics.median(s[key] for s in results[(n, mode)])

    rows = []
    for n in COUNTS:
        a_up, s_up = median(n, "async", "updates_per_s"), median(n, "sync", "updates_per_s")
        a_st = median(n, "async", "worker_steps_per_s")
        s_st = median(n, "sync", "worker_steps_per_s")
        rows.append(
            (
                n,
                a_up,
                s_up,
                a_up / s_up,
                a_st,
                s_st,
                a_st / s_st,
                median(n, "async", "mean_staleness"),
            )
        )
    print(
        f"{os.cpu_count()} CPU cores, {args.updates} updates x {args.repeats} repeats, "
        f"batch {args.batch} per worker step, 2 ps tasks"
    )
    print_table(
        rows,
        (
            "workers",
            "async updates/s",
            "sync updates/s",
            "ratio",
            "async steps/s",
            "sync steps/s",
            "ratio",
            "async staleness",
        ),
    )


if __name__ == "__main__":
    main()
