"""The readability contract's figures (COURSE_DESIGN contract item 7): lines per cell, helper
names, share of TensorFlow lines; `python tools/readability.py` prints the table."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from nbtools import ROOT, code_lines, is_program, python_of, read

MAX_MEDIAN_LINES = 15
MAX_CELL_LINES = 40
MAX_HELPER_NAMES = 15
MAX_COURSE_HELPER_NAMES = 60
PACKAGE = "tflearn_helpers"
_TF_RE = re.compile(r"\b(tf|keras|tensorflow)\.")
CHECK_CALL = re.compile(r'\bcheck\("\d+\.\d+"')  # an exercise cell of a solution


def lessons() -> list[Path]:
    """The lessons the readability contract covers: notebooks/NN_*.ipynb."""
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))


def solutions() -> list[Path]:
    """The solutions the readability contract covers too: solutions/NN_*.ipynb (each exercise
    notebook is generated from one, cell for cell)."""
    return sorted((ROOT / "solutions").glob("[0-9][0-9]*_*.ipynb"))


def is_exercise_cell(source: str) -> bool:
    """A solution's cell that calls ``check("NN.k", ...)``: what the learner writes, whole."""
    return bool(CHECK_CALL.search(source))


def lesson_id(path: Path) -> str:
    return path.name.split("_", 1)[0]


def helper_names(sources: list[str]) -> set[str]:
    """The helper names a lesson's code cells use (defined in tests/test_notebook_contract.py)."""
    import ast
    import importlib

    trees = []
    for source in sources:
        try:
            trees.append(ast.parse(python_of(source)))
        except SyntaxError:  # a %%writefile of something that is not Python
            pass
    roots = {"course": None}  # name in the lesson -> dotted path inside the package
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == PACKAGE:
            inner = node.module.split(".", 1)[1] + "." if "." in node.module else ""
            roots.update({a.asname or a.name: inner + a.name for a in node.names})
        elif isinstance(node, ast.Import):
            roots.update({a.asname or a.name: "" for a in node.names if a.name == PACKAGE})
    found, inside = set(), set()
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.Attribute) and id(node) not in inside:
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in roots:
                inside.update(id(n) for n in ast.walk(node))
                if value.id == "course":
                    found.add(f"course.{chain[0]}")
                else:
                    name = _resolve(importlib, roots[value.id], chain)
                    parts = name.split(".")
                    found.update(".".join(parts[: i + 1]) for i in range(len(parts)))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in roots and node.id != "course" and id(node) not in inside:
                found.add(_resolve(importlib, roots[node.id], []))
    return found


def _resolve(importlib, root: str, chain: list[str]) -> str:
    """`root.chain...` cut after the first attribute that is not a module."""
    parts = [p for p in root.split(".") if p] + chain
    obj = importlib.import_module(PACKAGE)
    for i, part in enumerate(parts):
        obj = getattr(obj, part, None)
        if obj is None:
            try:
                obj = importlib.import_module(f"{PACKAGE}.{'.'.join(parts[: i + 1])}")
            except ImportError:
                return ".".join(parts[: i + 1])
        if not isinstance(obj, type(importlib)):
            return ".".join(parts[: i + 1])
    return ".".join(parts)


def readability(path: Path) -> dict:
    """One lesson's (or solution's) readability figures: the columns of
    `python tools/readability.py`. A solution's median leaves out its exercise cells (a cell
    that calls ``check``: its size is the exercise's), which still count for the 40 lines."""
    import statistics

    code = [c.source for c in read(path).cells if c.cell_type == "code"]
    sizes = [len(code_lines(s)) for s in code]
    exercise = [path.parent.name == "solutions" and is_exercise_cell(s) for s in code]
    median_of = [n for n, left_out in zip(sizes, exercise, strict=True) if not left_out]
    over = [
        i for i, s in enumerate(code) if len(code_lines(s)) > MAX_CELL_LINES and not is_program(s)
    ]
    names = helper_names(code)
    statements = [
        ln for s in code for ln in code_lines(python_of(s)) if not ln.lstrip().startswith("#")
    ]
    return {
        "lesson": lesson_id(path),
        "code cells": len(code),
        "median lines": statistics.median(median_of) if median_of else 0,
        "exercise cells": sum(exercise),
        "max lines": max(sizes, default=0),
        "cells over 40": len(over),
        "over 40 (code cell numbers)": over,
        "helper names": len(names),
        "names": sorted(names),
        "TF share": sum(bool(_TF_RE.search(ln)) for ln in statements) / max(1, len(statements)),
    }


def readability_problems(figures: dict) -> list[str]:
    """How one lesson's figures break the readability contract (empty: it meets it)."""
    problems = []
    if figures["median lines"] > MAX_MEDIAN_LINES:
        problems.append(f"median code cell {figures['median lines']} > {MAX_MEDIAN_LINES} lines")
    if figures["cells over 40"]:
        problems.append(
            f"code cells {figures['over 40 (code cell numbers)']} are over {MAX_CELL_LINES} lines"
            " (only a %%writefile program may be)"
        )
    if figures["helper names"] > MAX_HELPER_NAMES:
        problems.append(
            f"{figures['helper names']} helper names > {MAX_HELPER_NAMES}: {figures['names']}"
        )
    return problems


def readability_table(paths=None) -> str:
    """The issue-19 table for every lesson, and the course-wide count of helper names."""
    rows = [readability(p) for p in (paths or lessons())]
    lines = [
        "| lesson | code cells | median / max lines per cell | cells over 40 (programs excluded)"
        " | distinct helper names | share of TF lines |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['lesson']} | {r['code cells']} | {r['median lines']:g} / {r['max lines']} |"
            f" {r['cells over 40']} | {r['helper names']} | {r['TF share']:.0%} |"
        )
    everything = set().union(*(r["names"] for r in rows))
    lines.append(f"\nacross the lessons: {len(everything)} distinct helper names")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(readability_table())
    print("\nsolutions (median: of the cells that are not exercise cells)")
    print(readability_table(solutions()).rsplit("\n\n", 1)[0])
