"""Shared notebook utilities for the course tools and tests: reading, the Colab header,
and the notebook contract (../shared/COURSE_DESIGN.md, "Notebook contract")."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

try:
    import nbformat
except ModuleNotFoundError:  # run by a Python without the course's packages (a git hook)
    venv_python = ROOT / ".venv" / "bin" / "python"
    if not venv_python.exists() or Path(sys.executable) == venv_python:
        raise SystemExit("nbformat is missing: run `make env`, then use .venv/bin/python") from None
    os.execv(venv_python, [str(venv_python), *sys.argv])
COURSE_DIRS = ("notebooks", "solutions", "exercises")
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
_BADGE_RE = re.compile(r"\[!\[Open In Colab\]\([^)]*\)\]\(([^)]*)\)")
_INSTALL_RE = re.compile(r"git\+https://github\.com/[\w.-]+/[\w.-]+")


def repo_slug() -> str:
    text = (ROOT / "tflearn_helpers" / "__init__.py").read_text()
    return re.search(r'^REPO_SLUG = "([^"]+)"', text, re.M).group(1)


def course_notebooks(dirs=COURSE_DIRS) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).glob("*.ipynb"))


def read(path: Path):
    return nbformat.read(str(path), as_version=4)


def write(nb, path: Path) -> None:
    path.write_text(nbformat.writes(nb) + "\n")


def colab_url(path: Path, slug: str | None = None) -> str:
    try:
        rel = path.resolve().relative_to(ROOT).as_posix()
    except ValueError:  # a notebook outside the course (a test's scratch copy)
        rel = f"notebooks/{path.name}"
    return f"https://colab.research.google.com/github/{slug or repo_slug()}/blob/main/{rel}"


def badge(path: Path, slug: str | None = None) -> str:
    return f"[![Open In Colab]({COLAB_BADGE})]({colab_url(path, slug)})"


def install_spec(slug: str | None = None) -> str:
    return f"git+https://github.com/{slug or repo_slug()}"


def stamp(nb, path: Path) -> bool:
    """Rewrite the Colab badge and the Colab install line from REPO_SLUG; True if changed."""
    changed = False
    for cell in nb.cells:
        new = cell.source
        if cell.cell_type == "markdown":
            new = _BADGE_RE.sub(badge(path), new)
        elif "google.colab" in new:
            new = _INSTALL_RE.sub(install_spec(), new)
        changed |= new != cell.source
        cell.source = new
    return changed


def contract_problems(path: Path) -> list[str]:
    """Every way the notebook at ``path`` breaks the course's notebook contract."""
    nb = read(path)
    problems = []
    md = [c.source for c in nb.cells if c.cell_type == "markdown"]
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    if not md or nb.cells[0].cell_type != "markdown":
        return ["the first cell must be the markdown header"]
    h1 = [ln for text in md for ln in _outside_code(text) if re.match(r"^# \S", ln)]
    if len(h1) != 1:
        problems.append(f"needs exactly one H1 title, found {len(h1)}")
    header = nb.cells[0].source
    if badge(path) not in header:
        problems.append("the header's Colab badge is missing or not built from REPO_SLUG")
    if not re.search(r"you will learn", header, re.I):
        problems.append("the header needs a 'You will learn' paragraph")
    if not all(re.search(rf"\b{p}\b", header) for p in ("smoke", "cpu", "gpu")):
        problems.append("the header must give the time at each scale (smoke, cpu, gpu)")
    if not code or "setup_course(" not in code[0] or "google.colab" not in code[0]:
        problems.append("the first code cell must be the setup cell (Colab install + setup_course)")
    elif install_spec() not in code[0]:
        problems.append("the setup cell's Colab install line is not built from REPO_SLUG")
    elif 'find_spec("tflearn_helpers")' not in code[0]:
        problems.append("the setup cell must skip the install when the package already imports")
    tail = "\n".join(md[-2:])
    if not re.search(r"^#+ .*takeaways", tail, re.I | re.M):
        problems.append("must end with a 'Key takeaways' section")
    if not re.search(r"\]\([^)]*(exercises|solutions|notebooks)/\d\d\w*\.ipynb\)", tail):
        problems.append("the ending must link to its exercises (or, for exercises, its lesson)")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count")):
            problems.append(f"cell {i} has outputs: commit notebooks clean")
        if cell.cell_type == "code" and (
            "NBVAL_RAISES_EXCEPTION" in cell.source
            or "raises-exception" in cell.metadata.get("tags", [])
        ):
            problems.append(
                f"cell {i} is meant to raise: Run All stops there in Colab, VS Code and nbclient;"
                " show the error with report.expect_error instead"
            )
    return problems


def _outside_code(text: str):
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield line


# --- The readability contract (COURSE_DESIGN contract item 7; tests/test_notebook_contract.py)
MAX_MEDIAN_LINES = 15
MAX_CELL_LINES = 40
MAX_HELPER_NAMES = 15
MAX_COURSE_HELPER_NAMES = 60
PACKAGE = "tflearn_helpers"
_TF_RE = re.compile(r"\b(tf|keras|tensorflow)\.")


def lessons() -> list[Path]:
    """The lessons the readability contract covers: notebooks/NN_*.ipynb."""
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))


def lesson_id(path: Path) -> str:
    return path.name.split("_", 1)[0]


def code_lines(source: str) -> list[str]:
    """The non-blank lines of a code cell, the unit every limit counts."""
    return [ln for ln in source.splitlines() if ln.strip()]


def is_program(source: str) -> bool:
    """A `%%writefile` cell: a program written to a file, exempt from the 40-line limit."""
    return source.lstrip().startswith("%%writefile")


def python_of(source: str) -> str:
    """The Python in a code cell: a `%%writefile` body, other magics and shell lines blanked."""
    if is_program(source):
        return source.lstrip().split("\n", 1)[1] if "\n" in source.lstrip() else ""
    return "\n".join(
        ln[: len(ln) - len(ln.lstrip())] + "pass" if ln.lstrip().startswith(("%", "!")) else ln
        for ln in source.splitlines()
    )


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
    """One lesson's readability figures: the columns of `python tools/nbtools.py readability`."""
    import statistics

    code = [c.source for c in read(path).cells if c.cell_type == "code"]
    sizes = [len(code_lines(s)) for s in code]
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
        "median lines": statistics.median(sizes) if sizes else 0,
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


_DRAWS_RE = {  # the kinds of rich output a code cell can make, and how its code shows it
    "image": re.compile(r"\bplt\.|matplotlib"),
    "html": re.compile(r"IPython\.display|\bdisplay\("),
}


def draws(path: Path) -> set[str]:
    """What a notebook's code draws other than text: "image" (a plot), "html" (a table,
    a frame); empty when it prints only."""
    code = [c.source for c in read(path).cells if c.cell_type == "code"]
    return {kind for kind, pattern in _DRAWS_RE.items() if any(map(pattern.search, code))}


def rotating_sample(items: list, key: str, k: int = 1) -> list:
    """``k`` consecutive items (wrapping round) starting at a place fixed by ``key``: the same
    key (a commit) always gives the same sample, successive keys move it round the list."""
    if not items or not 0 < k <= len(items):
        raise ValueError(f"cannot take {k} of {len(items)} items")
    start = int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(items)
    return [items[(start + i) % len(items)] for i in range(k)]


# --- One source for taught code (issue 19 item 3): a helper that reuses a lesson's code
def taught_definitions(path: Path, name: str) -> list:
    """Every ``def``/``class name`` a lesson's code cells write, nested ones and ``%%writefile``
    programs included (``ast`` nodes, in the order of the cells)."""
    import ast

    found = []
    for cell in read(path).cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(python_of(cell.source))
        except SyntaxError:
            continue
        found += [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name
        ]
    if not found:
        raise LookupError(f"{path.name} defines no function or class {name!r} in a code cell")
    return found


def differs_from_taught(helper, path: Path, name: str | None = None) -> str | None:
    """None when the package's ``helper`` (or the class ``name`` defined inside it) is the code
    lesson ``path`` writes, every time the lesson writes it; else where they differ.

    Compared by syntax tree, leaving out what only the package needs: docstrings, imports
    (``v1 = tf.compat.v1`` too: the package imports TensorFlow inside its functions),
    argument checks (``validate.*(...)`` and ``_check*(...)`` calls) and the ``if ...: raise``
    blocks that open the helper's body.
    """
    import ast
    import inspect
    import textwrap

    name = name or helper.__name__
    tree = ast.parse(textwrap.dedent(inspect.getsource(helper)))
    ours = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name
    )
    while ours.body and isinstance(ours.body[0], ast.If | ast.Expr | ast.Import | ast.ImportFrom):
        if not (_package_only(ours.body[0]) or _raises(ours.body[0])):
            break
        ours.body = ours.body[1:]
    a = _taught_statements(ours)
    for taught in taught_definitions(path, name):
        b = _taught_statements(taught)
        if a == b:
            continue
        at = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        return (
            f"{helper.__module__}.{name} and {path.name} (line {taught.lineno} of its cell) differ "
            f"at statement {at}: {a[at] if at < len(a) else '(end)'!r} vs "
            f"{b[at] if at < len(b) else '(end)'!r}"
        )
    return None


def _taught_statements(node) -> list[str]:
    """The definition's signature and statements, as text, without type hints and without the
    package-only statements."""
    import ast
    import copy

    def strip(n):
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(n, field, None), list):
                setattr(n, field, [strip(s) for s in getattr(n, field) if not _package_only(s)])
        return n

    node = strip(copy.deepcopy(node))
    for n in ast.walk(node):  # type hints are the package's, not the lesson's
        if isinstance(n, ast.arg):
            n.annotation = None
        elif isinstance(n, ast.FunctionDef):
            n.returns = None
    head = ast.unparse(node.args) if isinstance(node, ast.FunctionDef) else ""
    return [f"({head})"] + [ast.unparse(s) for s in node.body]


def _package_only(stmt) -> bool:
    import ast

    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True  # a docstring
    if isinstance(stmt, ast.Assign) and ast.unparse(stmt.value) == "tf.compat.v1":
        return True  # `v1 = tf.compat.v1`: a module-level alias in a lesson's program
    if isinstance(stmt, ast.Expr | ast.Assign) and isinstance(stmt.value, ast.Call):
        return ast.unparse(stmt.value.func).startswith(("validate.", "_check"))
    return False


def _raises(stmt) -> bool:
    import ast

    return isinstance(stmt, ast.If) and all(isinstance(n, ast.Raise) for n in stmt.body)


if __name__ == "__main__":
    if sys.argv[1:] != ["readability"]:
        raise SystemExit("usage: python tools/nbtools.py readability")
    sys.path.insert(0, str(ROOT))
    print(readability_table())
