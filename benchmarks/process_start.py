"""Starting a TensorFlow program: a fresh interpreter against a fork of the fork server.

Runs the same tiny program N times each way, alternating, one at a time: it imports
TensorFlow, runs one op (the runtime starts) and reports the CPU seconds its own process used.
Prints the median wall time from start to exit and the program's own CPU seconds each way,
the fork server's one-time import, and the ratios; asserts a forked start costs under half
the CPU of a fresh one (the import is most of a start).

    python benchmarks/process_start.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import psutil

from tflearn_helpers import report
from tflearn_helpers.programs import fork_server, processes

PROGRAM = (
    "import time\nimport tensorflow as tf\nint(tf.constant(1) + 1)\n"
    "print('cpu', time.process_time())"
)
LABELS = ((True, "fresh interpreter"), (False, "fork of the server"))


def _start(fresh: bool) -> tuple[float, float]:
    began = time.perf_counter()
    child = processes.start([sys.executable, "-c", PROGRAM], fresh=fresh)
    assert child.wait(300) == 0, child.output()[-2000:]
    wall = time.perf_counter() - began
    cpu = float(child.output().split("cpu ")[-1])
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    _start(fresh=False)  # the server imports TensorFlow once
    (server,) = [s for s in fork_server._SERVERS.values() if s is not None]
    server_cpu = sum(psutil.Process(server.popen.pid).cpu_times()[:2])
    runs = {True: [], False: []}
    for _ in range(args.runs):
        for fresh in (True, False):
            runs[fresh].append(_start(fresh))
    medians = {}
    for fresh in (True, False):
        walls, cpus = zip(*runs[fresh], strict=True)
        medians[fresh] = statistics.median(walls), statistics.median(cpus)
    print(f"{args.runs} starts each way; the fork server's own start: {server_cpu:.2f} CPU-s, once")
    rows = [(label, f"{medians[f][0]:.2f}", f"{medians[f][1]:.2f}") for f, label in LABELS]
    print(report.format_table(rows, ("start", "wall s (start to exit)", "program CPU-s")))
    (fresh_wall, fresh_cpu), (forked_wall, forked_cpu) = medians[True], medians[False]
    print(
        f"fresh / forked: {fresh_wall / forked_wall:.1f}x wall, {fresh_cpu / forked_cpu:.1f}x CPU"
    )
    assert forked_cpu < fresh_cpu / 2, "a fork skips the import, most of a start's CPU"
    processes.stop_all()


if __name__ == "__main__":
    main()
