"""Run a lesson's solution notebook cell by cell, with each check's mutations: run by
tests/test_mutations.py in a fresh process (TensorFlow's devices are set up once per process).

    python tests/mutation_runner.py NN OUT.json

An exercise's cells are the code cell that calls ``check("NN.k", ...)`` and the code cells just
before it that hold solution lines too (an answer too long for one readable cell is written over
a few). For each exercise, first every mutation of ``tests/answers/lessonNN.MUTATIONS["NN.k"]``
(its cells' text with one mistake put in) and every entry of ``RIGHT_ANSWERS["NN.k"]`` (the
answer written another way the exercise's text allows) runs, all its cells in order, in a copy
of the namespace its first cell started from; the cells as the solution wrote them run one by
one, and the cells after them build on those. Then the exercise notebook's version of every cell
(the stubs, unfilled) runs in a namespace of its own, and each exercise's solution cells run
once in a copy of it: an answer written while the earlier ones are not. Each run records the
check's verdict and what the cells printed. Lines ending ``# SOLUTION ONLY`` are left out, as in
the exercises. Outside IPython, ``display`` prints and ``%%writefile`` writes its file
(``NotebookShell``).
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


def writes_answer(source: str) -> bool:
    """A cell with solution lines (the exercise notebook's differs)."""
    return strip_code(source) != without_solution_only(source)


def exercise_cells(cells: list[str]) -> dict[int, list[int]]:
    """The index of each cell that calls a check -> its exercise's cells: the solution cells
    just before it that call no check, then itself."""
    found, run = {}, []
    for i, source in enumerate(cells):
        if checked_id(source):
            found[i], run = [*run, i], []
        elif writes_answer(source):
            run.append(i)
        else:
            run = []
    return found


def mutate_cells(sources: list[str], old: str, new: str) -> list[str]:
    """An exercise's cells with the one occurrence of ``old`` among them replaced by ``new``."""
    counts = [source.count(old) for source in sources]
    if sum(counts) != 1:
        raise ValueError(f"the exercise's cells have {sum(counts)} copies of {old!r}, not 1")
    return [mutate(s, old, new) if n else s for s, n in zip(sources, counts, strict=True)]


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


def run_cells(sources: list[str], namespace: dict, capture: bool = True) -> dict:
    """Run an exercise's cells in order: the record of the last, or of the first that fails."""
    seconds = 0.0
    for source in sources:
        run = run_cell(source, namespace, capture)
        seconds += run["seconds"]
        if run["error"]:
            break
    return {**run, "seconds": round(seconds, 2)}


def run_mutations(exercise_id: str, sources: list[str], table, namespace: dict) -> dict:
    def one(mutation):
        name, old, new = mutation
        try:
            mutated = [without_solution_only(s) for s in mutate_cells(sources, old, new)]
        except ValueError as err:
            return name, {"status": None, "message": None, "output": "", "error": str(err)}
        return name, run_cells(mutated, dict(namespace), capture=not parallel)

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
    exercises = exercise_cells(cells)
    first = {group[0]: i for i, group in exercises.items()}  # first cell -> its check's cell
    report = {"solution": {}, "mutations": {}, "right_answers": {}, "outputs": [], "unfilled": {}}
    report["filled_alone"] = {}
    namespace: dict = {}
    before: dict[int, dict] = {}  # check's cell -> the namespace its exercise started from
    for i, source in enumerate(cells):
        if i in first:
            before[first[i]] = dict(namespace)
        exercise_id = checked_id(source)
        if exercise_id:
            sources = [cells[j] for j in exercises[i]]
            report["mutations"][exercise_id] = run_mutations(
                exercise_id, sources, table.get(exercise_id, []), before[i]
            )
            report["right_answers"][exercise_id] = run_mutations(
                exercise_id, sources, rights.get(exercise_id, []), before[i]
            )
        run = run_cell(without_solution_only(source), namespace)
        report["outputs"].append({"exercise": exercise_id, **run})
        if exercise_id:
            report["solution"][exercise_id] = run
    stubs: dict = {}
    stubbed = False  # an earlier cell differs in the exercise notebook
    for i, source in enumerate(cells):
        if i in first:
            before[first[i]] = dict(stubs) if stubbed else None
        exercise_id = checked_id(source)
        if exercise_id and before[i] is not None:  # (else the solution's own run is this run)
            filled = [without_solution_only(cells[j]) for j in exercises[i]]
            report["filled_alone"][exercise_id] = run_cells(filled, before[i])
        stubbed = stubbed or writes_answer(source)
        run = run_cell(strip_code(source), stubs)
        if exercise_id:
            report["unfilled"][exercise_id] = run
    Path(out_path).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:3])
