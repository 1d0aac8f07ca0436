"""Lesson 05 in one run: the alpha-beta model, the 2-worker speed-up, and what cuts communication.

Runs lesson 05's worker program (read from the lesson's ``%%writefile`` cell, so the two never
drift apart) in two long-lived processes, one core each, inside a network namespace whose
loopback is shaped with ``tc tbf`` (``cluster.network``). It prints, per link rate, the
all-reduce time measured against alpha + beta*S fitted on the other sizes (leave-one-out),
and the weak-scaling speed-up 2 t(1 worker) / t(2 workers), the median of interleaved rounds.
The speed-up is asserted >= 1.5x only when both cores were free before the run.

Then, at the first (slowest) rate, the lesson's section 5 in rounds: TensorFlow's default
one-pack all-reduce against one all-reduce per tensor (bytes_per_pack=1), float16 on the link
and gradient accumulation over k micro-batches, each step's time against the one-pack step
(median of the rounds) and against the alpha-beta model, and the overlap of the per-tensor
all-reduces with the backward pass. Counts (all-reduces, bytes) are asserted exactly; on a
shaped link float16 must cut the step to <= 0.85x and accumulation to <= 0.7x per micro-batch.

  python benchmarks/allreduce_network.py [--rates 200,500] [--rounds 7] [--batch 2048]
                                         [--opt-rounds 3] [--opt-batch 1024] [--micro 4]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tflearn_helpers import cluster, report  # noqa: E402

LESSON = Path(__file__).resolve().parents[1] / "notebooks" / "05_communication.ipynb"
MB = 1_000_000


def worker_program(folder: Path) -> Path:
    """Lesson 05's worker program, written from its %%writefile cell."""
    cells = json.loads(LESSON.read_text())["cells"]
    source = next(
        "".join(c["source"]) for c in cells if "".join(c["source"]).startswith("%%writefile")
    )
    path = folder / "comm_worker.py"
    path.write_text(source.split("\n", 1)[1])
    return path


def run(args) -> list[dict]:
    sizes = [int(s * MB) for s in (0.004, 0.064, 0.5, 1, 2, 4, 8, 16)]
    train = {"kind": "train", "batch": args.batch, "width": 1024, "depth": 2, "steps": 3}
    sweep = {"kind": "allreduce", "sizes": sizes, "repeats": 5}
    plan = [(None, dict(train, rounds=args.rounds)), (None, sweep)]
    plan += [(rate, sweep) for rate in args.rates]
    optimize = {"kind": "optimize", "width": 256, "depth": 12, "steps": 5}
    optimize.update(batch=args.opt_batch, micro=args.micro)
    plan += [(args.rates[0], optimize)] * args.opt_rounds
    folder = Path(tempfile.mkdtemp(prefix="allreduce-bench-"))
    program = worker_program(folder)
    with cluster.network.Network(None) as net:
        if not net.shaped:  # no rates: the unshaped phases, section 5 on the plain loopback
            plan = plan[:2] + [(None, p) for r, p in plan if p["kind"] == "optimize"]
        links = {rate: (net.set_rate(rate), net.measure())[1] for rate, _ in plan}
        with net.cluster(2, env={"CUDA_VISIBLE_DEVICES": "-1"}) as job:
            phases = json.dumps([phase for _, phase in plan])
            job.start(program, ["--control", folder, "--phases", phases])
            for k, (rate, _) in enumerate(plan):
                net.set_rate(rate)
                (folder / f"go-{k}").touch()
                cluster.events.wait_for(
                    lambda: job.logs("worker", 0),
                    lambda e, k=k: e["kind"] == "phase_done" and e["phase"] == k,
                    timeout=600,
                    depends_on=job.procs.values(),
                )
            log = job.logs("worker", 0)
    return plan, links, cluster.events.parse(log), net.shaped


def print_report(plan, links, events, free: int) -> None:
    rows = []
    for k, (rate, _) in enumerate(plan):
        times = {
            e["bytes"]: e["seconds"]
            for e in events
            if e.get("phase") == k and e["kind"] == "allreduce"
        }
        for size in times:  # leave-one-out: fit on the other sizes, predict this one
            rest = [s for s in times if s != size]
            (alpha, beta), *_ = np.linalg.lstsq(
                np.array([[1.0, s] for s in rest]), np.array([times[s] for s in rest]), rcond=None
            )
            predicted = alpha + beta * size
            rows.append(
                (
                    rate or "unshaped",
                    f"{links[rate]:.0f}",
                    size / MB,
                    f"{1e3 * times[size]:.1f}",
                    f"{1e3 * predicted:.1f}",
                    f"{times[size] / predicted:.2f}",
                )
            )
    print(
        report.format_table(
            rows,
            ("rate", "measured Mbit/s", "MB", "measured ms", "predicted ms", "measured/predicted"),
        )
    )
    steps = [e for e in events if e["kind"] == "steps" and e["phase"] == 0]
    speedups = [2 * e["local"] / e["distributed"] for e in steps]
    speedup = float(np.median(speedups))
    rounds = ", ".join(f"{s:.2f}" for s in speedups)
    print(f"2-worker weak-scaling speed-up, unshaped: {speedup:.2f}x")
    print(f"  (median of {len(speedups)} interleaved rounds: {rounds})")
    if free >= 2:
        assert speedup >= 1.5, speedup
    else:
        print(f"only {free} core(s) were free before the run: the >= 1.5x assert needs both free")


def fit(plan, events, rate) -> tuple[float, float]:
    """alpha, beta of the RING all-reduce at ``rate``, fitted on every size of its sweep."""
    phases = {k for k, (r, p) in enumerate(plan) if r == rate and p["kind"] == "allreduce"}
    times = [
        (e["bytes"], e["seconds"])
        for e in events
        if e["kind"] == "allreduce" and e["phase"] in phases
    ]
    design = np.array([[1.0, size] for size, _ in times])
    (alpha, beta), *_ = np.linalg.lstsq(design, np.array([t for _, t in times]), rcond=None)
    return alpha, beta


def report_optimize(plan, events, shaped: bool) -> None:
    """Section 5 of the lesson: each step against one pack and against the alpha-beta model."""
    rounds = [e for e in events if e["kind"] == "optimized"]
    packed = {e["name"]: e for e in events if e["kind"] == "packed"}  # the same every round
    micro, rate = rounds[0]["micro"], plan[rounds[0]["phase"]][0]
    alpha, beta = fit(plan, events, rate)
    n, size = packed["per tensor"]["all_reduces"], packed["one pack"]["bytes"]
    assert packed["one pack"]["all_reduces"] == packed["accumulated"]["all_reduces"] == 1, packed
    assert packed["float16"]["bytes"] * 2 == size and n == 13, packed
    per_batch = {"one pack": 1, "per tensor": 1, "float16": 1, "accumulated": micro}
    ratios, rows = {}, []
    for name, k in per_batch.items():
        mine = [r["seconds"][name] / k for r in rounds]
        ratios[name] = np.median(
            [m / r["seconds"]["one pack"] for m, r in zip(mine, rounds, strict=True)]
        )
        c = np.median([r["seconds"]["compute alone"] for r in rounds])
        bytes_on_link = size / (2 if name == "float16" else 1)
        model = c + ((n if name == "per tensor" else 1) * alpha + beta * bytes_on_link) / k
        t = float(np.median(mine))
        rows.append(
            (
                name,
                f"{1e3 * t:.0f}",
                f"{1e3 * model:.0f}",
                f"{t / model:.2f}",
                f"{ratios[name]:.2f}",
                ", ".join(f"{m * 1e3:.0f}" for m in mine),
            )
        )
    print(
        f"\nsection 5 at {rate or 'unshaped'} Mbit/s, {len(rounds)} rounds, alpha "
        f"{1e3 * alpha:.1f} ms, beta {beta:.2e} s/B, compute alone "
        f"{1e3 * np.median([r['seconds']['compute alone'] for r in rounds]):.0f} ms, "
        f"per micro-batch (k = {micro}):"
    )
    print(
        report.format_table(
            rows, ("step", "ms (median)", "model ms", "measured/model", "vs one pack", "rounds ms")
        )
    )
    hidden = [
        (r["seconds"]["all-reduce alone, per tensor"] - r["seconds"]["per tensor"])
        - (r["seconds"]["all-reduce alone"] - r["seconds"]["one pack"])
        for r in rounds
    ]  # per tensor's saving against compute + all-reduce, less one pack's (the control)
    c = np.median([r["seconds"]["compute alone"] for r in rounds])
    print(
        f"overlap of the per-tensor all-reduces with the backward pass: "
        f"{np.median(hidden) / c:+.0%} of the compute (rounds: "
        f"{', '.join(f'{h / c:+.0%}' for h in hidden)}; 0: none, 100 %: all hidden)"
    )
    errors = [r["float16_error"] for r in rounds]
    print(f"float16 against float32, largest error / largest gradient: {max(errors):.1e}")
    assert 0 < max(errors) < 5e-3, errors
    if shaped:
        assert ratios["float16"] <= 0.85, ratios
        assert ratios["accumulated"] <= 0.7, ratios


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="200,500", help="Mbit/s, comma separated")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--opt-rounds", type=int, default=3, help="rounds of section 5")
    parser.add_argument("--opt-batch", type=int, default=1024, help="section 5's batch")
    parser.add_argument("--micro", type=int, default=4, help="micro-batches accumulated")
    args = parser.parse_args(argv)
    args.rates = [float(r) for r in args.rates.split(",")]
    free = cluster.network.free_cores()
    plan, links, events, shaped = run(args)
    print_report(plan, links, events, free)
    report_optimize(plan, events, shaped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
