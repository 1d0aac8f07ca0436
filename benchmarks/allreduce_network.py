"""Lesson 05 in one run: the alpha-beta model, the 2-worker speed-up against this machine's
ceiling, when communication dominates, and what cuts communication.

Runs lesson 05's worker program (read from the lesson's ``%%writefile`` cell, so the two never
drift apart) in two long-lived processes, one core each, inside a network namespace whose
loopback is shaped with ``tc tbf`` (``cluster.network``). It prints, per link rate:

- alpha and beta fitted by the lesson's ``fit_alpha_beta`` (generated from it into
  ``taught/lesson05.py``: beta the slope over the sizes above 64 KB,
  alpha what the smallest, 4 KB, took beyond beta*S) on every size but the largest, each
  size's time against alpha + beta*S, and the largest extrapolated. Asserted at shaped rates:
  alpha >= 0, beta within 0.75-1.25x of 2/B (B the measured rate), the largest within +-30 %.
- three figures per step, each the median of consecutive steps over interleaved rounds: one
  worker alone, two one-worker jobs at once (no communication: the machine's ceiling
  2 t(alone) / t(at once)), and one two-worker job (the speed-up 2 t(alone) / t(2 workers));
  the gap split into contention (at once - alone) and communication (2 workers - at once).
  Asserted: the ceiling <= 2.3x and the speed-up <= 1.2x the ceiling; the speed-up >= 0.75x
  the ceiling only when both cores were free before the run.
- the per-worker batch b* = (alpha + beta*G - c0) / c1 at which the all-reduce equals the
  compute c0 + c1*b, predicted from the fit at the fastest rate and the compute per example
  measured on a batch sweep at that rate (two jobs at once; the lesson takes it from the
  unshaped batches, which drift from the sweep's with the load: printed beside it), and
  measured on the sweep (the batch at which a step's compute reaches its communication,
  2 workers - at once, medians over rounds); asserted within +-30 % of the prediction.

Then, at the first (slowest) rate, the lesson's section 5 in rounds: TensorFlow's default
one-pack all-reduce against one all-reduce per tensor (bytes_per_pack=1) and packs of about 1 MB
(bytes_per_pack=1000000, the last layers' first), float16 on the link
and gradient accumulation over k micro-batches, each step's time against the one-pack step
(median of the rounds) and against the alpha-beta model, and the overlap of the
packed all-reduces with the backward pass (benchmarks/overlap.py measures that at a rate where
compute and communication are about equal). Counts (all-reduces, bytes) are asserted exactly; on a
shaped link float16 must cut the step to <= 0.85x and accumulation to <= 0.7x per micro-batch.

  python benchmarks/allreduce_network.py [--rates 200,500] [--rounds 5] [--steps 8]
                                         [--batch 2048] [--cross-batches 32,128,512,2048,8192]
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

from tflearn_helpers import cluster, programs, report  # noqa: E402
from tflearn_helpers.taught.lesson05 import fit_alpha_beta  # noqa: E402

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
    train = {"kind": "train", "width": 1024, "depth": 2, "steps": args.steps}
    sweep = {"kind": "allreduce", "sizes": sizes, "repeats": 5}
    plan = [(None, dict(train, batches=[args.batch, 32], rounds=args.rounds)), (None, sweep)]
    plan += [(rate, sweep) for rate in args.rates]
    plan += [(args.rates[-1], dict(train, batches=args.cross_batches, rounds=args.rounds))]
    optimize = {"kind": "optimize", "width": 256, "depth": 12, "steps": 5}
    optimize.update(batch=args.opt_batch, micro=args.micro, pack_bytes=1_000_000)
    optimize.update(passes=args.passes)  # the program's overlap test (lesson 05's PASSES)
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
                programs.events.wait_for(
                    lambda: job.logs("worker", 0),
                    lambda e, k=k: e["kind"] == "phase_done" and e["phase"] == k,
                    timeout=900,
                    depends_on=job.procs.values(),
                )
            log = job.logs("worker", 0)
    return plan, links, programs.events.parse(log), net.shaped


def sweep_times(plan, events, rate) -> dict:
    """bytes -> seconds of the all-reduce sweep at ``rate``."""
    phases = {k for k, (r, p) in enumerate(plan) if r == rate and p["kind"] == "allreduce"}
    return {e["bytes"]: e["seconds"] for e in events if e.get("phase") in phases}


def report_fit(plan, links, events) -> dict:
    """alpha, beta per rate, fitted without the largest size; that size extrapolated."""
    rows, fits = [], {}
    for rate in dict(plan):
        times = sweep_times(plan, [e for e in events if e["kind"] == "allreduce"], rate)
        if not times:
            continue
        largest = max(times)
        alpha, beta = fits[rate] = fit_alpha_beta({s: t for s, t in times.items() if s != largest})
        for size, seconds in sorted(times.items()):
            ratio = seconds / (alpha + beta * size)
            where = "extrapolated" if size == largest else "fitted"
            rows.append((rate or "unshaped", f"{links[rate]:.0f}", size / MB, where,
                         f"{1e3 * seconds:.1f}", f"{1e3 * (alpha + beta * size):.1f}",
                         f"{ratio:.2f}"))  # fmt: skip
        if rate:
            band = beta * links[rate] * 1e6 / 8 / 2  # beta against 2/B, B the measured rate
            print(f"{rate} Mbit/s: alpha {1e3 * alpha:.1f} ms, beta / (2/B) {band:.2f}")
            assert alpha >= 0 and 0.75 <= band <= 1.25, (rate, alpha, beta, links[rate])
            beyond = times[largest] / (alpha + beta * largest)
            assert 0.7 <= beyond <= 1.3, (rate, largest, beyond)  # the largest, extrapolated
    headers = ("rate", "measured Mbit/s", "MB", "size", "measured ms", "predicted ms", "ratio")
    print(report.format_table(rows, headers))
    return fits


def step_figures(plan, events, rate, batch) -> dict:
    """Medians over the rounds of one worker alone, two jobs at once, and two workers."""
    phases = {k for k, (r, p) in enumerate(plan) if r == rate and p["kind"] == "train"}
    mine = [e for e in events if e["kind"] == "steps" and e["phase"] in phases]
    mine = [e for e in mine if e["batch"] == batch]
    figures = {f: float(np.median([e[f] for e in mine])) for f in ("alone", "together")}
    figures["two"] = float(np.median([e["distributed"] for e in mine]))
    return dict(figures, grad_bytes=mine[0]["grad_bytes"], rounds=len(mine))


def report_speedup(plan, events, batch: int, free: int) -> None:
    """The speed-up, the machine's ceiling, and the gap split into contention and communication."""
    f = step_figures(plan, events, None, batch)
    speedup, ceiling = 2 * f["alone"] / f["two"], 2 * f["alone"] / f["together"]
    print(
        f"batch {batch}/worker, unshaped, medians of {f['rounds']} rounds of consecutive steps: "
        f"1 worker alone {1e3 * f['alone']:.0f} ms, 2 one-worker jobs at once "
        f"{1e3 * f['together']:.0f} ms, 2 workers {1e3 * f['two']:.0f} ms\n"
        f"  speed-up {speedup:.2f}x against this machine's ceiling {ceiling:.2f}x; per step, "
        f"contention {1e3 * (f['together'] - f['alone']):+.0f} ms, communication "
        f"{1e3 * (f['two'] - f['together']):+.0f} ms"
    )
    assert ceiling <= 2.3 and speedup <= 1.2 * ceiling, f
    if free >= 2:
        assert speedup >= 0.75 * ceiling, f
    else:
        print(
            f"only {free} core(s) were free before the run: speed-up >= 0.75x ceiling not asserted"
        )


def report_crossover(plan, events, fits, batch: int, batches: list[int]) -> None:
    """b* = (alpha + beta*G - c0) / c1 predicted, against the sweep's crossing (medians)."""
    rate = next(r for r, p in plan if r and p["kind"] == "train")  # the sweep's rate
    big, small = (step_figures(plan, events, None, b) for b in (batch, 32))
    alpha, beta = fits[rate]
    allreduce = alpha + beta * big["grad_bytes"]  # the fitted all-reduce of the gradients
    swept = [step_figures(plan, events, rate, b) for b in batches]
    compute = np.array([f["together"] for f in swept])  # two one-worker jobs at once
    comm = float(np.median([f["two"] - f["together"] for f in swept]))  # batch-independent
    c1, c0 = np.polyfit(batches, compute, 1)  # compute per example, measured on the sweep
    predicted = (allreduce - c0) / c1
    u1, u0 = np.polyfit([32, batch], [small["together"], big["together"]], 1)
    order = np.argsort(compute)  # where compute reaches the communication, log-log
    measured = float(
        np.exp(np.interp(np.log(comm), np.log(compute[order]), np.log(np.array(batches)[order])))
    )
    table = [
        (b, f"{1e3 * c:.0f}", f"{1e3 * comm:.0f}") for b, c in zip(batches, compute, strict=True)
    ]
    print(f"\nwhen communication dominates, at {rate} Mbit/s: alpha + beta*G "
          f"{1e3 * allreduce:.0f} ms; c0 {1e3 * c0:.1f} ms, c1 {1e6 * c1:.0f} us/example on "
          f"the sweep (unshaped phase: "
          f"{1e6 * u1:.0f} us/example, b* {(allreduce - u0) / u1:.0f})")  # fmt: skip
    print(report.format_table(table, ("batch/worker", "compute ms", "communication ms (median)")))
    print(f"crossover: predicted {predicted:.0f}, measured {measured:.0f} per worker "
          f"({measured / predicted:.2f}x)")  # fmt: skip
    assert compute[0] < comm < compute[-1], (compute, comm)  # the sweep brackets it
    assert 0.7 <= measured / predicted <= 1.3, (measured, predicted)


def report_optimize(plan, events, shaped: bool) -> None:
    """Section 5 of the lesson: each step against one pack and against the alpha-beta model."""
    rounds = [e for e in events if e["kind"] == "optimized"]
    packed = {e["name"]: e for e in events if e["kind"] == "packed"}  # the same every round
    micro, rate = rounds[0]["micro"], plan[rounds[0]["phase"]][0]
    alpha, beta = fit_alpha_beta(
        sweep_times(plan, [e for e in events if e["kind"] == "allreduce"], rate)
    )
    n, size = packed["per tensor"]["all_reduces"], packed["one pack"]["bytes"]
    counts = {name: p["all_reduces"] for name, p in packed.items()}
    assert packed["one pack"]["all_reduces"] == packed["accumulated"]["all_reduces"] == 1, packed
    assert packed["float16"]["bytes"] * 2 == size and n == 13, packed
    per_batch = {"one pack": 1, "per tensor": 1, "packs": 1, "float16": 1, "accumulated": micro}
    ratios, rows = {}, []
    for name, k in per_batch.items():
        mine = [r["seconds"][name] / k for r in rounds]
        ratios[name] = np.median(
            [m / r["seconds"]["one pack"] for m, r in zip(mine, rounds, strict=True)]
        )
        c = np.median([r["seconds"]["compute alone"] for r in rounds])
        bytes_on_link = size / (2 if name == "float16" else 1)
        model = c + (counts[name] * alpha + beta * bytes_on_link) / k
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
        (r["seconds"]["all-reduce alone, packs"] - r["seconds"]["packs"])
        - (r["seconds"]["all-reduce alone"] - r["seconds"]["one pack"])
        for r in rounds
    ]  # the packs' saving against compute + all-reduce, less one pack's (the control)
    c = np.median([r["seconds"]["compute alone"] for r in rounds])
    print(
        f"overlap of the packed all-reduces with the backward pass: "
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
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=8, help="consecutive steps per figure")
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--cross-batches", default="32,128,512,2048,8192", help="batch sweep")
    parser.add_argument("--opt-rounds", type=int, default=3, help="rounds of section 5")
    parser.add_argument("--opt-batch", type=int, default=1024, help="section 5's batch")
    parser.add_argument("--micro", type=int, default=4, help="micro-batches accumulated")
    parser.add_argument("--passes", type=int, default=7, help="paired passes, overlap test")
    args = parser.parse_args(argv)
    args.rates = [float(r) for r in args.rates.split(",")]
    args.cross_batches = [int(b) for b in args.cross_batches.split(",")]
    free = cluster.network.free_cores()
    plan, links, events, shaped = run(args)
    fits = report_fit(plan, links, events)
    report_speedup(plan, events, args.batch, free)
    if shaped:
        report_crossover(plan, events, fits, args.batch, args.cross_batches)
    report_optimize(plan, events, shaped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
