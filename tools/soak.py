"""The soak lane (`make soak`): Run All of every lesson, solution and unfilled exercise,
N times, two notebooks at a time, and a pass-rate table of the runs.

Each run is one notebook executed by the course runner (`python tools/course.py`,
plain nbclient: the first cell that raises stops it) in a process of its own: the runner's
leftover check counts what its own process started, so two runners side by side never take
each other's workers for leftovers. The queue goes round the notebooks once per repetition, so
the two runs that share the machine are different notebooks, and each pair differs from one
repetition to the next. After every run the table is rewritten to build/soak/ (soak.md,
soak.csv, soak.json with every run); an interrupted soak keeps the table of the runs it did.

    .venv/bin/python tools/soak.py --runs 5            # what `make soak` runs (SOAK_RUNS=5)
    .venv/bin/python tools/soak.py --runs 1 --only 04  # one notebook's three versions, once
    .venv/bin/python tools/soak.py --runs 3 --scale cpu --only notebooks/  # the main job's lessons
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import side_by_side  # tools/side_by_side.py, beside this file

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("notebooks", "solutions", "exercises")
HEADERS = ("notebook", "runs", "passed", "failed", "median s", "max s", "over budget", "failures")
BUDGETS = {"smoke": 60.0, "cpu": 300.0, "gpu": 600.0}  # seconds a run should take, per profile


def notebooks(only: str = "", root: Path = ROOT) -> list[str]:
    """Every lesson, solution and exercise notebook ("folder/name.ipynb") whose path contains
    ``only``."""
    found = [f"{f}/{p.name}" for f in FOLDERS for p in sorted((root / f).glob("*.ipynb"))]
    chosen = [nb for nb in found if only in nb]
    if not chosen:
        raise SystemExit(f"no notebook under {root} matches {only!r}")
    return chosen


def queue(names: list[str], runs: int) -> list[tuple[str, int]]:
    """(notebook, run number) in the order they start: every notebook once, then again."""
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    return [(nb, k) for k in range(1, runs + 1) for nb in names]


def run_one(notebook: str, run: int, out: Path, timeout: float, python=sys.executable) -> dict:
    """Run All of one notebook in its own course runner; its result as a dict."""
    folder, name = notebook.split("/")
    where = out / "runs" / f"{Path(name).stem}-{folder}-{run}"
    started = time.strftime("%H:%M:%S")
    r = side_by_side.run_in_own_runner(
        ROOT / folder / name, where, ROOT, timeout, timeout + 120, python
    )
    return {"notebook": notebook, "run": run, "started": started, "status": r["status"],
            "seconds": r["seconds"], "cell": r.get("cell"), "error": r.get("error", ""),
            "left_running": r.get("left_running", [])}  # fmt: skip


def aggregate(results: list[dict], budget: float = 60.0) -> list[dict]:
    """One row per notebook (in the order first seen): runs, passes, fails, median and
    max seconds, runs over ``budget`` seconds, and each failure's run, cell and error."""
    rows: dict[str, dict] = {}
    for r in results:
        row = rows.setdefault(
            r["notebook"], {"notebook": r["notebook"], "seconds": [], "fails": []}
        )
        row["seconds"].append(r["seconds"])
        if r["status"] != "passed":
            where = f"cell {r['cell']}" if r.get("cell") is not None else "no cell"
            row["fails"].append(f"run {r['run']}, {where}: {r.get('error', '')}")
    table = []
    for row in rows.values():
        secs = row["seconds"]
        table.append({
            "notebook": row["notebook"], "runs": len(secs), "passed": len(secs) - len(row["fails"]),
            "failed": len(row["fails"]), "median s": round(statistics.median(secs), 1),
            "max s": round(max(secs), 1), "over budget": sum(s > budget for s in secs),
            "failures": row["fails"],
        })  # fmt: skip
    return table


def totals(table: list[dict]) -> dict:
    """Runs, passes and the pass rate over the whole table."""
    runs = sum(r["runs"] for r in table)
    passed = sum(r["passed"] for r in table)
    return {"runs": runs, "passed": passed, "pass rate": passed / runs if runs else 0.0}


def markdown(table: list[dict], budget: float = 60.0) -> str:
    """The table as GitHub markdown, with a totals line under it."""
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + " --- |" * len(HEADERS)]
    for r in table:
        cells = [str(r[h]) for h in HEADERS[:-1]] + ["<br>".join(r["failures"]) or "none"]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    t = totals(table)
    lines.append(f"\n{t['passed']} of {t['runs']} runs passed ({100 * t['pass rate']:.0f} %); "
                 f"'over budget': runs longer than {budget:.0f} s.")  # fmt: skip
    return "\n".join(lines)


def to_csv(table: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(HEADERS)
    for r in table:
        writer.writerow([r[h] for h in HEADERS[:-1]] + ["; ".join(r["failures"])])
    return buf.getvalue()


class LoadSampler(threading.Thread):
    """The machine's 1-minute load average every ``every`` seconds, while the soak runs."""

    def __init__(self, every: float = 15.0):
        super().__init__(daemon=True)
        self.every, self.samples, self.stop = every, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.samples.append(os.getloadavg()[0])
            self.stop.wait(self.every)

    def summary(self) -> dict:
        s = self.samples or [os.getloadavg()[0]]
        return {"cores": os.cpu_count(), "load median": statistics.median(s), "load max": max(s)}


def write(out: Path, results: list[dict], meta: dict, budget: float) -> str:
    table = aggregate(results, budget)
    text = markdown(table, budget)
    out.mkdir(parents=True, exist_ok=True)
    (out / "soak.md").write_text(text + "\n")
    (out / "soak.csv").write_text(to_csv(table))
    doc = {**meta, "totals": totals(table), "table": table, "results": results}
    (out / "soak.json").write_text(json.dumps(doc, indent=1) + "\n")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=int(os.environ.get("SOAK_RUNS", 5)))
    parser.add_argument("--parallel", type=int, default=2, help="notebooks at a time")
    parser.add_argument("--only", default="", help="notebooks whose path contains this")
    parser.add_argument("--out", default=str(ROOT / "build" / "soak"))
    parser.add_argument("--scale", choices=tuple(BUDGETS), default="smoke", help="profile")
    parser.add_argument("--budget", type=float, help="seconds a run should take (per profile)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per cell")
    args = parser.parse_args(argv)
    args.budget = args.budget or BUDGETS[args.scale]
    out, todo = Path(args.out), queue(notebooks(args.only), args.runs)
    os.environ["TFLEARN_SCALE"] = args.scale  # every runner, and every kernel it starts
    sampler = LoadSampler()
    sampler.start()
    meta = {"started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": _commit(),
            "scale": args.scale}  # fmt: skip
    results, lock = [], threading.Lock()
    print(
        f"soak: {len(todo)} runs at {args.scale}, {args.parallel} at a time, into {out}", flush=True
    )

    def one(item):
        r = run_one(*item, out, args.timeout)
        with lock:
            results.append(r)
            meta.update(sampler.summary(), finished=len(results), planned=len(todo))
            write(out, results, meta, args.budget)
            print(f"[{len(results)}/{len(todo)}] {r['notebook']} run {r['run']}: {r['status']} "
                  f"in {r['seconds']:.0f} s {r.get('error', '')}", flush=True)  # fmt: skip

    with ThreadPoolExecutor(args.parallel) as pool:
        list(pool.map(one, todo))
    sampler.stop.set()
    print(write(out, results, meta, args.budget))
    print(f"machine: {json.dumps(sampler.summary())}; table in {out}/soak.md")
    return 0 if totals(aggregate(results))["pass rate"] == 1.0 else 1


def _commit() -> str:
    cmd = ["git", "-C", str(ROOT), "describe", "--always", "--dirty"]
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
