"""Shared notebook utilities for the course tools and tests: reading, the Colab header,
and the notebook contract (../shared/COURSE_DESIGN.md, "Notebook contract")."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
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


#: What tests/test_browser.py runs in JupyterLab on every commit, and the two variables that
#: choose more (see that file's docstring).
BROWSER_ALWAYS = ("exercises/00_devices_and_setup.ipynb", "notebooks/01_mirrored_strategy.ipynb")
BROWSER_LESSONS_ENV, BROWSER_REPEAT_ENV = "TFLEARN_BROWSER_LESSONS", "TFLEARN_BROWSER_REPEAT"


def commit() -> str:
    """The checkout's commit, or today's date outside a git checkout."""
    got = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True)
    return got.stdout.decode().strip() or time.strftime("%Y-%m-%d", time.gmtime())


def browser_notebooks(environ=os.environ) -> list[str]:
    """The notebooks the browser test runs, relative to the repository, in order:
    BROWSER_ALWAYS, then one drawing lesson chosen by the commit (``rotating_sample``),
    or the lessons BROWSER_LESSONS_ENV names ("all": every drawing lesson; "01,04": those),
    each BROWSER_REPEAT_ENV times."""
    lessons = [p.name for p in course_notebooks(("notebooks",))]
    drawing = [
        n
        for n in lessons
        if f"notebooks/{n}" not in BROWSER_ALWAYS and draws(ROOT / "notebooks" / n)
    ]
    wanted = environ.get(BROWSER_LESSONS_ENV, "")
    if wanted == "all":
        picked = drawing
    elif wanted:
        picked = [n for n in lessons if n.startswith(tuple(wanted.split(",")))]
        if not picked:
            raise ValueError(f"{BROWSER_LESSONS_ENV}={wanted!r} names no lesson in notebooks/")
    else:
        picked = rotating_sample(drawing, commit())
    repeat = environ.get(BROWSER_REPEAT_ENV, "1")
    if not repeat.isdigit() or int(repeat) < 1:
        raise ValueError(f"{BROWSER_REPEAT_ENV}={repeat!r}: give a whole number of runs, 1 or more")
    return list(BROWSER_ALWAYS) + [f"notebooks/{n}" for n in picked] * int(repeat)
