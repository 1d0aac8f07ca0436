"""Run a lesson's solution notebook cell by cell, with each check's mutations: run by
tests/test_mutations.py in a fresh process (TensorFlow's devices are set up once per process).

    python tests/mutation_runner.py NN OUT.json

For each code cell that calls ``check("NN.k", ...)``, first every mutation of
``tests/answers/lessonNN.MUTATIONS["NN.k"]`` (the cell's text with one mistake put in) and
every entry of ``RIGHT_ANSWERS["NN.k"]`` (the cell's answer written another way the exercise's
text allows) runs in a copy of the notebook's namespace, then the cell as the solution wrote
it, which the cells after it build on. Then the exercise notebook's version of every cell (the
stubs, unfilled) runs in a namespace of its own, and each solution cell runs once in a copy of it:
an answer written while the earlier ones are not. Each run records the check's verdict and
what the cells printed. Lines ending ``# SOLUTION ONLY`` are left out, as in the exercises.
Outside IPython, ``display`` prints and ``%%writefile`` writes its file (``NotebookShell``).
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import io
import itertools
import json
import linecache
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))  # the tables: tests/answers/lessonNN.py

from make_exercises import strip_code  # noqa: E402
from nbtools import read  # noqa: E402

CHECK_CALL = re.compile(r'\bcheck\("(\d+\.\d+)"')
# checks that run the answer in fresh processes: their mutations run side by side
FRESH_PROCESS_CHECKS = {"00.5", "04.6", "04.7", "07.1", "07.2", "08.5"}
_CELLS = itertools.count()


def solution_cells(lesson: str) -> list[str]:
    path = next((ROOT / "solutions").glob(f"{lesson}_*.ipynb"))
    return [cell.source for cell in read(path).cells if cell.cell_type == "code"]


def checked_id(source: str) -> str | None:
    found = CHECK_CALL.search(source)
    return found.group(1) if found else None


def mutate(source: str, old: str, new: str) -> str:
    """``source`` with its one occurrence of ``old`` replaced by ``new``."""
    if source.count(old) != 1:
        raise ValueError(f"the solution cell has {source.count(old)} copies of {old!r}, not 1")
    return source.replace(old, new)


def without_solution_only(source: str) -> str:
    return "\n".join(
        line for line in source.splitlines() if not line.rstrip().endswith("# SOLUTION ONLY")
    )


def python_of(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def compiled(source: str):
    """The cell's code, its text kept where ``inspect.getsource`` finds it (as IPython does)."""
    code = python_of(source)
    name = f"<cell-{next(_CELLS)}>"
    linecache.cache[name] = (len(code), None, code.splitlines(keepends=True), name)
    return compile(code, name, "exec")


class NotebookShell:
    """What the solutions ask of IPython here: ``%%writefile`` (``$name`` expanded from the
    cell's namespace); ``%pip`` only runs on Colab."""

    def __init__(self, namespace: dict):
        self.namespace = namespace

    def run_cell_magic(self, magic: str, line: str, cell: str) -> None:
        if magic != "writefile":
            raise NotImplementedError(f"%%{magic} is not run outside IPython")
        path = re.sub(r"\$(\w+)", lambda m: str(self.namespace[m.group(1)]), line.strip())
        Path(path).write_text(cell)

    def run_line_magic(self, magic: str, line: str) -> None:
        raise NotImplementedError(f"%{magic} is not run outside IPython")


def run_cell(source: str, namespace: dict, capture: bool = True) -> dict:
    """Run one cell; the verdict of the check it calls (if any), its output, its error."""
    earlier = namespace.get("result")  # a later cell may read it (``if result.ok:``)
    namespace.setdefault("display", print)
    namespace["get_ipython"] = lambda: NotebookShell(namespace)
    out, error, start = io.StringIO(), None, time.perf_counter()
    quiet = contextlib.redirect_stdout(out) if capture else contextlib.nullcontext()
    with quiet:
        try:
            exec(compiled(source), namespace)
        except Exception as err:  # a cell that raises is recorded, never fatal here
            error = f"{type(err).__name__}: {err}"
    result = namespace.get("result")
    if result is earlier:  # this cell called no check
        result = None
    return {
        "status": getattr(result, "status", None),
        "message": getattr(result, "message", None),
        "output": out.getvalue(),
        "error": error,
        "seconds": round(time.perf_counter() - start, 2),
    }


_COMPILING = threading.Lock()
_compile = builtins.compile


def _one_compile_at_a_time(*args, **kwargs):
    """CPython 3.11 and 3.12 can fail ``compile``/``ast.parse`` run from two threads at once
    ("AST constructor recursion depth mismatch", python/cpython#106905): the mutations of a
    check that starts processes run in threads here, and the checks parse code."""
    with _COMPILING:
        return _compile(*args, **kwargs)


def run_mutations(exercise_id: str, source: str, table, namespace: dict) -> dict:
    def one(mutation):
        name, old, new = mutation
        try:
            mutated = without_solution_only(mutate(source, old, new))
        except ValueError as err:
            return name, {"status": None, "message": None, "output": "", "error": str(err)}
        return name, run_cell(mutated, dict(namespace), capture=not parallel)

    parallel = exercise_id in FRESH_PROCESS_CHECKS
    if parallel:
        builtins.compile = _one_compile_at_a_time
        try:
            with ThreadPoolExecutor(max(1, len(table))) as pool:
                return dict(pool.map(one, table))
        finally:
            builtins.compile = _compile
    return dict(one(mutation) for mutation in table)


def main(lesson: str, out_path: str) -> None:
    module = importlib.import_module(f"answers.lesson{lesson}")
    table, rights = module.MUTATIONS, module.RIGHT_ANSWERS
    cells = solution_cells(lesson)
    report = {"solution": {}, "mutations": {}, "right_answers": {}, "outputs": [], "unfilled": {}}
    report["filled_alone"] = {}
    namespace: dict = {}
    for source in cells:
        exercise_id = checked_id(source)
        if exercise_id:
            report["mutations"][exercise_id] = run_mutations(
                exercise_id, source, table.get(exercise_id, []), namespace
            )
            report["right_answers"][exercise_id] = run_mutations(
                exercise_id, source, rights.get(exercise_id, []), namespace
            )
        run = run_cell(without_solution_only(source), namespace)
        report["outputs"].append({"exercise": exercise_id, **run})
        if exercise_id:
            report["solution"][exercise_id] = run
    stubs: dict = {}
    stubbed = False  # an earlier cell differs in the exercise notebook
    for source in cells:
        exercise_id = checked_id(source)
        if exercise_id and stubbed:  # (else the solution's own run above is this run)
            filled = without_solution_only(source)
            report["filled_alone"][exercise_id] = run_cell(filled, dict(stubs))
        stubbed = stubbed or strip_code(source) != without_solution_only(source)
        run = run_cell(strip_code(source), stubs)
        if exercise_id:
            report["unfilled"][exercise_id] = run
    Path(out_path).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:3])
