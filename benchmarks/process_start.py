"""Starting a TensorFlow program: a fresh interpreter against a fork of the fork server; and
starting a short command from a process that has imported TensorFlow, with a Python
``preexec_fn`` against through ``setpriv --pdeathsig`` (both die with their parent).

Runs the same tiny program N times each way, alternating, one at a time: it imports
TensorFlow, runs one op (the runtime starts) and reports the CPU seconds its own process used.
Prints the median wall time from start to exit and the program's own CPU seconds each way,
the fork server's one-time import, and the ratios; asserts a forked start costs under half
the CPU of a fresh one (the import is most of a start). Then starts ``true`` 200 times each
way, alternating in blocks of 20 (as ``LocalSlurm.run`` starts ``scontrol`` when it polls a
job), and prints this process's and its children's CPU per start: a ``preexec_fn`` makes
Popen fork, copying this process's page tables; asserts setpriv's way costs under half.

    python benchmarks/process_start.py [--runs 5]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

import psutil

from tflearn_helpers import report
from tflearn_helpers.programs import child_setup, fork_server, processes

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


def _cpu() -> float:
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def short_commands(blocks: int = 10, per_block: int = 20) -> dict[str, float]:
    """CPU ms per start of ``true``, each way, from this process once it has imported
    TensorFlow and run an op (as a notebook's kernel or a check has)."""
    import tensorflow as tf

    int(tf.constant(1) + 1)
    ways = {
        "preexec_fn (fork)": ({"preexec_fn": child_setup.child_setup}, ["true"]),
        "setpriv (vfork)": ({}, child_setup.dying_with_parent(["true"])),
    }
    spent = dict.fromkeys(ways, 0.0)
    for _ in range(blocks):
        for name, (options, command) in ways.items():
            began = _cpu()
            for _ in range(per_block):
                subprocess.run(command, stdin=subprocess.DEVNULL, check=True, **options)
            spent[name] += _cpu() - began
    return {name: 1000 * cpu / (blocks * per_block) for name, cpu in spent.items()}


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
    if child_setup.dying_with_parent(["true"]) is None:
        print("no setpriv (util-linux) here: the short commands' comparison is skipped")
        return
    per_start = short_commands()
    print(
        report.format_table(
            [(k, f"{v:.2f}") for k, v in per_start.items()],
            ("a short command started with", "CPU ms per start"),
        )
    )
    forked, plain = per_start.values()
    print(f"preexec_fn / setpriv: {forked / plain:.1f}x CPU per start")
    assert plain < forked / 2, "setpriv's start copies no page tables"


if __name__ == "__main__":
    main()
