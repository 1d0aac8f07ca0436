"""Notebooks run side by side, each by a course runner (tools/course.py) in a process and
session of its own: ``make course`` (``--jobs 2``) and the soak lane (tools/soak.py).

A runner's leftover check (tools/leftovers.py) counts what its own process started, so two
runners side by side never take each other's workers for leftovers.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import leftovers  # tools/leftovers.py and tools/nbtools.py, beside this file
import nbtools

__all__ = ["longest_first", "run", "run_in_own_runner"]

COURSE = Path(__file__).with_name("course.py")


def run_in_own_runner(
    path: Path, out: Path, root: Path, cell_timeout: float, deadline: float | None = None,
    python: str = sys.executable,
) -> dict:  # fmt: skip
    """Run All of one notebook by a course runner in a process (and session) of its own,
    into ``out``; its result, or a failed one when the runner died or outlived ``deadline``
    seconds (default: every code cell's timeout, plus two minutes)."""
    cmd = [python, str(COURSE), "--root", str(root), "--folders", path.parent.name]
    cmd += ["--only", path.name, "--out", str(out), "--cell-timeout", str(cell_timeout)]
    env = {k: v for k, v in os.environ.items() if k != leftovers.TAG_ENV}  # its own tag
    if deadline is None:
        code_cells = [c for c in nbtools.read(path).cells if c.cell_type == "code"]
        deadline = cell_timeout * len(code_cells) + 120
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(out / "runner.log", "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        try:
            proc.wait(deadline)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    summary = out / "summary.json"
    if summary.exists():
        (result,) = json.loads(summary.read_text())
        return result
    tail = (out / "runner.log").read_text().strip().splitlines()[-1:] or [""]
    return {"notebook": f"{path.parent.name}/{path.name}", "status": "failed", "cell": None,
            "error": f"runner exited with {proc.returncode}: {tail[0][:200]}",
            "seconds": time.monotonic() - start, "headlines": [], "left_running": [],
            "html": f"{path.parent.name}/{path.stem}.html"}  # fmt: skip


def run(paths: list[Path], out_dir: Path, root: Path, timeout, jobs) -> list[dict]:
    """Each notebook in its own runner, ``jobs`` at a time, longest (last run here) first;
    each one's files moved to out_dir/<folder>/ as a lone run would leave them."""
    order, done, moving = longest_first(paths, out_dir / "summary.json"), [], threading.Lock()

    def one(path: Path) -> dict:
        where = Path(tempfile.mkdtemp(prefix=f"{path.stem}-", dir=out_dir))
        result = run_in_own_runner(path, where, root, timeout)
        target = out_dir / path.parent.name
        with moving:  # one runner's files at a time: two may bring the same folder
            target.mkdir(parents=True, exist_ok=True)
            for f in (where / path.parent.name).glob("*"):  # none when the runner died early
                _merge(f, target / f.name)
            shutil.move(str(where / "runner.log"), str(target / f"{path.stem}.runner.log"))
        shutil.rmtree(where, ignore_errors=True)
        done.append(result)
        print(f"[{len(done)}/{len(paths)}] {result['notebook']}: {result['status']} in "
              f"{result['seconds']:.0f} s {result.get('error', '')}", flush=True)  # fmt: skip
        return result

    print(f"{len(paths)} notebooks, {jobs} at a time (cell-by-cell progress: "
          f"{out_dir}/<folder>/<notebook>.runner.log)", flush=True)  # fmt: skip
    with ThreadPoolExecutor(jobs) as pool:
        by_path = dict(zip(order, pool.map(one, order), strict=True))
    return [by_path[p] for p in paths]  # in the course's order


def _merge(source: Path, target: Path) -> None:
    """Move source to target; a folder that is there already (lessons 01, 02 and 04 each write
    TensorBoard runs into logs/) gets source's entries, as one runner would have left them."""
    if source.is_dir() and target.is_dir():
        for entry in source.iterdir():
            _merge(entry, target / entry.name)
        source.rmdir()
    else:
        shutil.move(str(source), str(target))


# Seconds per lesson at the cpu profile, two at a time (docs/MEASURED.md, 2026-12-02, 14:29
# UTC): the order of a first run, on a clone that has no summary of its own yet. Only the order
# is taken from here; every time printed is measured by the run.
FIRST_RUN_SECONDS = {
    f"notebooks/{name}.ipynb": seconds
    for name, seconds in [
        ("02_resnet50_data_parallel", 254), ("05_communication", 146),
        ("04_multi_worker", 121), ("09_parameter_server_strategy", 109),
        ("08_parameter_servers_estimator_era", 100), ("03_resnet50_model_parallel", 87),
        ("00_devices_and_setup", 76), ("08b_estimator_legacy", 38),
        ("01_mirrored_strategy", 35), ("06_sharding_and_memory", 22),
        ("07_clusters", 60),  # measured on its own branch, 2026-12-04 (docs/MEASURED.md)
    ]
}  # fmt: skip


def longest_first(paths: list[Path], last_summary: Path) -> list[Path]:
    """``paths``, the longest in the last run's summary first (without one, the longest in
    ``FIRST_RUN_SECONDS``); unknown ones last, in order."""
    if last_summary.exists():
        took = {r["notebook"]: r["seconds"] for r in json.loads(last_summary.read_text())}
    else:
        took = FIRST_RUN_SECONDS
    return sorted(paths, key=lambda p: -took.get(f"{p.parent.name}/{p.name}", 0.0))
