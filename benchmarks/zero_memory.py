"""ZeRO-3's peak memory per worker against plain data parallelism's, in one run (lesson 06).

Lesson 06's worker program (taken from the notebook's ``%%writefile $ZERO_PROGRAM`` cell, so
the two cannot drift apart) runs in two processes under MultiWorkerMirroredStrategy, each
with ``TF_CPU_ALLOCATOR_USE_BFC=true`` and so an allocator of its own, started as the lesson
starts them. Each worker trains the
same Transformer with Adam at every ZeRO stage in turn, and plain DP with the units recomputed
("0r", as ZeRO-3's are), and reports its own peak per stage. The first table sets each peak
against the memory model (``memory.transformer`` plus ``zero_transient``) and prints ZeRO-3 /
plain DP per worker, like for like (both recomputing); the goal at N = 2 is 0.6x or less (the
exit code is 1 when a worker misses it). ``--variants`` also runs ZeRO-3 changed
in one respect each, beside plain DP in the same processes: what lowers the peak.

    python benchmarks/zero_memory.py [--blocks 8] [--width 128] [--variants]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import portpicker

from tflearn_helpers import memory, programs, report

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "06_sharding_and_memory.ipynb"
GOAL = 0.6
VARIANTS = {  # name: (text in the program, its replacement)
    "gathered under the one outer tape": (
        "forward = [sharded(f, all_gather) for f in forward]",
        "forward = [lambda s, x, f=f: f(all_gather(s), x) for f in forward]",
    ),
    "custom_gradient, no control dependencies": (
        "tf.control_dependencies([",
        "tf.control_dependencies([] and [",
    ),
}


def program(change: tuple[str, str] | None = None) -> str:
    """The lesson's worker program, with one text ``change`` made (or none)."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    source = next(
        "".join(c["source"])
        for c in cells
        if "".join(c["source"]).startswith("%%writefile $ZERO_PROGRAM")
    ).split("\n", 1)[1]
    if change:
        if change[0] not in source:
            raise RuntimeError(f"lesson 06's program no longer contains {change[0]!r}")
        source = source.replace(*change)
    return source


def peaks(source: str, shape: dict, batch: int, stages, timeout: float) -> list[dict]:
    """Each worker's result, {"peaks": {stage: bytes}, "losses": {stage: loss}}, as the lesson
    starts them: two processes running ``source``, a TF_CONFIG each, the result one "result"
    event. The program's file is removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="tflearn-zero-") as folder:
        path = Path(folder) / "zero_worker.py"
        path.write_text(source)
        return _run(path, shape, batch, stages, timeout)


def _run(path: Path, shape: dict, batch: int, stages, timeout: float) -> list[dict]:
    workers = [f"localhost:{portpicker.pick_unused_port()}" for _ in range(2)]
    argv = [sys.executable, str(path), json.dumps([shape, batch, 1, list(stages)])]
    children = []
    for i in range(2):
        config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}}
        env = {"TF_CONFIG": json.dumps(config), "TF_CPU_ALLOCATOR_USE_BFC": "true"}
        env |= {"CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"}
        children.append(programs.start(argv, env=env, merge_stderr=False))
    with children[0], children[1]:
        for i, child in enumerate(children):
            if child.wait(timeout=timeout) != 0:
                raise RuntimeError(f"worker {i} failed:\n{child.errors()[-2000:]}")
        return [programs.events.parse(child.output(), "result")[-1] for child in children]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--batch", type=int, default=2, help="sequences per worker")
    parser.add_argument("--variants", action="store_true", help="also what lowers the peak")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per job")
    args = parser.parse_args(argv)
    shape = dict(vocab=64, seq=8, width=args.width, heads=4, blocks=args.blocks)
    model = memory.TransformerShape(**shape)
    stages = (0, "0r", 1, 2, 3)
    runs = peaks(program(), shape, args.batch, stages, args.timeout)
    rows, ratios = [], []
    for worker, run in enumerate(runs):
        for stage in stages:
            got = run["peaks"][str(stage)]
            zero, recompute = (0, True) if stage == "0r" else (stage, stage >= 2)
            need = memory.transformer(model, args.batch, recompute=recompute, replicas=2, zero=zero)
            predicted = need.total + memory.zero_transient(model)
            loss = run["losses"][str(stage)]
            rows.append((worker, stage, f"{got / memory.MiB:.2f}",
                         f"{predicted / memory.MiB:.2f}", f"{predicted / got:.2f}",
                         f"{got / run['peaks']['0']:.2f}", f"{loss:.6f}"))  # fmt: skip
        ratios.append(run["peaks"]["3"] / run["peaks"]["0r"])  # like for like
    print(f"{model.parameters:,} parameters, {args.batch} sequences of {model.seq} per worker")
    headers = ("worker", "ZeRO stage", "peak MiB", "model MiB", "model / measured",
               "x plain DP", "loss")  # fmt: skip
    print(report.format_table(rows, headers))
    if args.variants:
        rows = []
        for name, change in VARIANTS.items():
            runs = peaks(program(change), shape, args.batch, (0, 3), 900)
            for worker, run in enumerate(runs):
                rows.append((name, worker, f"{run['peaks']['3'] / memory.MiB:.2f}",
                             f"{run['peaks']['3'] / run['peaks']['0']:.2f}"))  # fmt: skip
        print(report.format_table(rows, ("ZeRO-3 variant", "worker", "peak MiB", "x plain DP")))
    met = all(r <= GOAL for r in ratios)
    print("ZeRO-3 / plain DP per worker, both recomputing: " + ", ".join(f"{r:.2f}" for r in ratios)
          + f" (goal <= {GOAL}: {'met' if met else 'missed'})")  # fmt: skip
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
