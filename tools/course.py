"""The course runner behind ``make course``: execute every notebook into build/.

Repository tooling, not in the learner's wheel: ``python tools/course.py --help``. It needs
the course package (any install of it, a wheel too) and nbclient/nbconvert.

Each notebook runs in its own kernel (the one its metadata names; lab 08b's is
``tflearn-legacy``), is saved executed and rendered to HTML; build/index.html lists
each notebook's status (with the failing cell), run time, headline figures and anything
it left running. A failing notebook does not stop the others.

TensorFlow's C++ log lines (``startup_noise.TF_LOG_LINE``: "tf_auto_shard failed", the absl
pre-init line, "Could not find cuda drivers", the oneDNN banner, ...) ignore
``TF_CPP_MIN_LOG_LEVEL`` in part and are written to the kernel's descriptor 2, which ipykernel
copies both into the cell's output and onto the kernel's own standard error. Here the
kernel's standard error goes to ``<notebook>.kernel.log`` beside the rendered notebook (not to
the progress output), and those lines are removed from the saved and rendered outputs; the
index says how many were hidden.

With ``--jobs 2`` (what ``make course`` uses) two notebooks run side by side, each in a
runner process of its own (tools/side_by_side.py): the leftover check of each counts
only what its own runner started. Their cell-by-cell progress goes to
``<notebook>.runner.log`` beside the rendered notebook; the longest notebooks of the last
run in the same folder start first.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import leftovers  # tools/leftovers.py and tools/side_by_side.py, beside this file
import side_by_side

from tflearn_helpers.measuring.report import HEADLINE_KEY, SKIPPED_KEY
from tflearn_helpers.programs.processes import KEEP_LOGS_ENV
from tflearn_helpers.runtime.startup_noise import hide_tf_log

__all__ = ["FOLDERS", "course_root", "main", "run_course"]

FOLDERS = ("notebooks", "solutions", "exercises")
KERNEL_HINTS = {  # how to get a kernel a notebook names, when it is missing
    "tflearn-legacy": " (lab 08b's Python 3.11 + TensorFlow 2.15 kernel: make legacy-env)",
}
TERMINAL_COLOUR = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # IPython colours its tracebacks


def course_root() -> Path:
    """The folder holding notebooks/: the repository this file is in."""
    return Path(__file__).resolve().parents[1]  # tools/ -> the repository


def run_course(
    out: str = "build",
    scale: str | None = None,
    only: str = "",
    folders: tuple[str, ...] = ("notebooks",),
    exclude: tuple[str, ...] = (),
    root: Path | None = None,
    cell_timeout: float = 1800,
    jobs: int = 1,
) -> int:
    """Execute notebooks with Run All semantics (the first cell that raises stops one),
    ``jobs`` at a time."""
    root = Path(root) if root else course_root()
    out_dir = Path(out).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    if scale:
        os.environ["TFLEARN_SCALE"] = scale
    unknown = set(folders) - set(FOLDERS)
    if unknown:
        raise ValueError(f"unknown folders {sorted(unknown)}; choose from {FOLDERS}")
    wanted = [part for part in only.split(",") if part] or [""]
    paths = [
        p
        for f in folders
        for p in sorted((root / f).glob("*.ipynb"))
        if any(w in p.name for w in wanted) and not any(x in p.name for x in exclude)
    ]
    if not paths:
        print(f"no notebooks under {root} match {only!r} in {', '.join(folders)}")
        return 1
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if jobs == 1:
        results = []
        for i, path in enumerate(paths, 1):
            print(f"[{i}/{len(paths)}] {path.parent.name}/{path.name}", flush=True)
            results.append(run_notebook(path, out_dir / path.parent.name, cell_timeout))
            r = results[-1]
            print(f"      {r['status']} in {r['seconds']:.0f} s {r.get('error', '')}", flush=True)
    else:
        results = side_by_side.run(paths, out_dir, root, cell_timeout, jobs)
    (out_dir / "summary.json").write_text(json.dumps(results, indent=1))
    (out_dir / "index.html").write_text(_index_html(results, os.environ.get("TFLEARN_SCALE")))
    failed = [r for r in results if r["status"] == "failed"]
    skipped = [r for r in results if r["status"] == "skipped"]
    print(_time_table(results))
    for r in skipped:
        print(f"skipped {r['notebook']}: {r['error']}")
    print(
        f"run all: {len(results) - len(failed) - len(skipped)} passed, {len(failed)} failed"
        + (f", {len(skipped)} skipped" if skipped else "")
    )
    print(f"summary page: {out_dir / 'index.html'}")
    return 1 if failed else 0


def _time_table(results: list[dict]) -> str:
    import platform

    from tflearn_helpers.measuring.report import format_table

    stack = f"Python {platform.python_version()}, TensorFlow {_version('tensorflow')}"
    stack += f", Keras {_version('keras')}"
    rows = [
        (r["notebook"], r["status"], f"{r['seconds']:.0f} s", f"{r.get('cpu_seconds', 0):.0f}")
        for r in results
    ]
    total = sum(r.get("cpu_seconds", 0) for r in results)
    table = format_table(rows, ("notebook", "status", "time", "CPU-s"))
    return f"{stack}\n{table}\nCPU-s of the kernels and what they started: {total:.0f}"


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def run_notebook(path: Path, out_dir: Path, cell_timeout: float) -> dict:
    """Execute one notebook; return its status, time, headlines and leftovers."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError
    from traitlets.config import Config

    out_dir.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(str(path), as_version=4)
    kernel = nb.metadata.get("kernelspec", {}).get("name", "python3")
    result = {"notebook": f"{path.parent.name}/{path.name}", "kernel": kernel}
    if kernel != "python3" and kernel not in _kernels():
        why = f"no Jupyter kernel {kernel!r} here" + KERNEL_HINTS.get(kernel, "")
        return {**result, "status": "skipped", "error": why, "seconds": 0.0, "headlines": [],
                "skipped": [], "left_running": [], "left_files": [], "html": ""}  # fmt: skip
    sockets = Path(tempfile.mkdtemp(prefix="tflearn-kernel-"))  # absolute: the kernel's cwd differs
    scratch = Path(tempfile.mkdtemp(prefix="tflearn-run-"))  # the kernel's temp folder (TMPDIR)
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]

    def progress(cell, cell_index, execute_reply=None):
        n = code_cells.index(cell_index) + 1 if cell_index in code_cells else "?"
        print(
            f"      cell {n}/{len(code_cells)} done at {time.monotonic() - start:.0f} s", flush=True
        )

    client = NotebookClient(
        nb,
        timeout=cell_timeout,
        kernel_name=kernel,
        # Unix sockets, not TCP: no kernel port is open to the network, and ipykernel has
        # no reason to print its "running over TCP without encryption" warning.
        config=Config({"KernelManager": {"transport": "ipc", "ip": str(sockets / "kernel")}}),
        resources={"metadata": {"path": str(path.parent)}},
        on_cell_executed=progress,
    )
    before = leftovers.snapshot()
    start, cpu = time.monotonic(), _children_cpu()
    kernel_log = open(out_dir / f"{path.stem}.kernel.log", "w")  # the kernel's standard error
    kept_logs = out_dir / "logs" / path.stem  # its programs' logs, printed if it fails
    shutil.rmtree(kept_logs, ignore_errors=True)
    try:
        with _environment(TMPDIR=scratch, **{KEEP_LOGS_ENV: kept_logs}):
            client.execute(stderr=kernel_log)
        result["status"] = "passed"
    except (CellExecutionError, CellTimeoutError) as err:
        failing = next((i for i, c in enumerate(nb.cells) if _errored(c)), None)
        first_line = nb.cells[failing].source.strip().splitlines()[0] if failing is not None else ""
        error = TERMINAL_COLOUR.sub("", str(err)).strip().splitlines()[-1]
        result.update(status="failed", cell=failing, source=first_line, error=error)
    except Exception as err:  # a kernel that cannot start, a dead kernel: record, go on
        result.update(status="failed", cell=None, error=f"{type(err).__name__}: {err}")
    finally:
        kernel_log.close()
        shutil.rmtree(sockets, ignore_errors=True)
    result["seconds"] = time.monotonic() - start
    result["cpu_seconds"] = _children_cpu() - cpu  # the kernel and what it started and reaped
    result["hidden_log_lines"] = _hide_tf_log(nb)
    result["left_running"] = leftovers.leftovers(before)
    if result["left_running"]:
        leftovers.kill(before)
        if result["status"] == "passed":  # the course promises nothing is left running
            result.update(status="failed", cell=None, error="left processes or ports behind")
    result["left_files"] = sorted(p.name for p in scratch.iterdir())
    shutil.rmtree(scratch, ignore_errors=True)
    if result["left_files"] and result["status"] == "passed":  # nor anything in the temp folder
        result.update(status="failed", cell=None, error="left files in the temp folder")
    if result["status"] == "failed":
        _print_tails(kept_logs)
    else:
        shutil.rmtree(kept_logs, ignore_errors=True)
        if kept_logs.parent.is_dir() and not any(kept_logs.parent.iterdir()):
            kept_logs.parent.rmdir()  # no empty logs/ beside the passed notebooks
    result["headlines"] = _headlines(nb)
    result["skipped"] = _headlines(nb, SKIPPED_KEY)
    result["html"] = _save(nb, path, out_dir)
    return result


def _children_cpu() -> float:
    """CPU seconds of this process's children that have ended (the kernels, with what they
    reaped): what a notebook costs a busy machine, beside its wall time."""
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _save(nb, path: Path, out_dir: Path) -> str:
    """Write the executed notebook and its HTML rendering; the HTML's path for the index."""
    import nbformat
    from nbconvert import HTMLExporter

    nbformat.write(nb, str(out_dir / path.name))
    body, _ = HTMLExporter().from_notebook_node(nb)
    (out_dir / f"{path.stem}.html").write_text(body)
    return f"{path.parent.name}/{path.stem}.html"


def _hide_tf_log(nb) -> int:
    """Remove TensorFlow's C++ log lines from every stderr output; how many there were."""
    hidden = 0
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        for out in cell.outputs:
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                out["text"], n = hide_tf_log(out["text"])
                hidden += n
        cell.outputs = [o for o in cell.outputs if o.get("text", True) != ""]
    return hidden


def _errored(cell) -> bool:
    return cell.cell_type == "code" and any(
        o.get("output_type") == "error" for o in cell.get("outputs", [])
    )


def _headlines(nb, key: str = HEADLINE_KEY) -> list[dict]:
    """The figures ``report.headline`` showed (or, with SKIPPED_KEY, what ``report.skipped``
    said the notebook could not show), in order, from the outputs' metadata."""
    return [
        output["metadata"][key]
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if key in output.get("metadata", {})
    ]


@contextlib.contextmanager
def _environment(**variables: Path):
    """The kernel started in here (and so every program it starts) gets these variables: its
    temporary files go to ``TMPDIR`` (what is left there after the kernel stopped, the notebook
    left behind), its programs' logs are copied to ``KEEP_LOGS_ENV`` when it exits."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update({name: str(value) for name, value in variables.items()})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _print_tails(folder: Path, lines: int = 25) -> None:
    """The last lines of every log a failed notebook's programs wrote (a worker's side of an
    error its chief only names): CI keeps the output, not the build folder."""
    for log in sorted(folder.rglob("*.log")):
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        if tail:
            print(f"      --- {log.relative_to(folder)}, last {len(tail)} lines", flush=True)
            print("\n".join(f"      | {line}" for line in tail), flush=True)


def _kernels() -> set[str]:
    from jupyter_client.kernelspec import KernelSpecManager

    return set(KernelSpecManager().find_kernel_specs())


def _index_html(results: list[dict], scale: str | None) -> str:
    rows = []
    for r in results:
        status = html.escape(r["status"])
        if r["status"] == "failed":
            where = f"cell {r['cell']}" if r.get("cell") is not None else "before any cell"
            if r.get("source"):
                where += f" (<code>{html.escape(r['source'])}</code>)"
            status = f"failed at {where}: {html.escape(r.get('error', ''))}"
        elif r["status"] == "skipped":
            status = f"skipped: {html.escape(r.get('error', ''))}"
        figures = "<br>".join(html.escape(f"{h['label']}: {h['value']}") for h in r["headlines"])
        not_shown = "<br>".join(
            html.escape(f"{s['label']}: {s['value']}") for s in r.get("skipped", [])
        )
        left = "; ".join(r["left_running"] + [f"file {f}" for f in r.get("left_files", [])])
        if r.get("html"):
            log = r["html"].removesuffix(".html") + ".kernel.log"
            status += f"<br><a href='{log}'>{r.get('hidden_log_lines', 0)} C++ log lines hidden</a>"
            name = f"<a href='{r['html']}'>{html.escape(r['notebook'])}</a>"
        else:
            name = html.escape(r["notebook"])
        rows.append(
            f"<tr><td>{name}</td><td>{status}</td><td>{r['seconds']:.0f} s</td><td>{figures}</td>"
            f"<td>{not_shown or 'nothing'}</td><td>{html.escape(left) or 'nothing'}</td></tr>"
        )
    total = sum(r["seconds"] for r in results)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    profile = scale or "default (gpu with a GPU, else cpu)"
    return (
        "<!doctype html><meta charset='utf-8'><title>tflearn: the executed course</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;"
        "padding:.4em;vertical-align:top}table{border-collapse:collapse}</style>"
        f"<h1>tflearn: the executed course</h1><p>Scale profile: {html.escape(profile)}"
        f" · executed {when} · total {total:.0f} s</p>"
        "<table><tr><th>notebook</th><th>status</th><th>time</th><th>headline figures</th>"
        "<th>not shown here, and why</th><th>left behind</th></tr>" + "".join(rows) + "</table>"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/course.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", default="build", help="output folder (default: build)")
    parser.add_argument("--scale", choices=("smoke", "cpu", "gpu"), help="scale profile")
    parser.add_argument(
        "--only", default="", help="run notebooks whose name contains this (comma-separated: any)"
    )
    parser.add_argument(
        "--folders",
        default="notebooks",
        help="comma-separated: notebooks, solutions, exercises (default: notebooks)",
    )
    parser.add_argument("--exclude", default="", help="comma-separated name parts to skip")
    parser.add_argument("--root", help="folder holding notebooks/ (default: the repository)")
    parser.add_argument("--cell-timeout", type=float, default=1800, help="seconds per cell")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks at a time (default 1)")
    args = parser.parse_args(argv)
    return run_course(
        args.out,
        scale=args.scale,
        only=args.only,
        folders=tuple(f for f in args.folders.split(",") if f),
        exclude=tuple(x for x in args.exclude.split(",") if x),
        root=args.root,
        cell_timeout=args.cell_timeout,
        jobs=args.jobs,
    )


if __name__ == "__main__":
    sys.exit(main())
