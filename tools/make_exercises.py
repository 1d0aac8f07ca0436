"""Generate exercises/NN_*.ipynb from solutions/NN_*.ipynb (never edit exercises by hand).

Markers in solution notebooks:
- code line ``x = expr  # SOLUTION``        -> ``x = ...  # YOUR CODE HERE``
- code lines ``# BEGIN SOLUTION`` ... ``# END SOLUTION`` -> the region's ``# STUB: ...``
  lines (uncommented), or ``...  # YOUR CODE HERE`` when it has none
- code line ending ``# SOLUTION ONLY``     -> removed (e.g. asserting the check passed)
- markdown ``<!-- BEGIN SOLUTION -->`` ... ``<!-- END SOLUTION -->`` -> removed
- "(solutions)" in the title -> "(exercises)"; the Colab badge points at the exercise.

Usage: python tools/make_exercises.py [--check]
"""

from __future__ import annotations

import copy
import re
import sys

from nbtools import ROOT, nbformat, read, stamp, write

_MD_REGION = re.compile(r"<!-- BEGIN SOLUTION -->.*?<!-- END SOLUTION -->\n?", re.S)


def strip_code(source: str) -> str:
    out, region, stubs, indent = [], False, [], ""
    for line in source.splitlines():
        text = line.strip()
        if text == "# BEGIN SOLUTION":
            region, stubs, indent = True, [], line[: len(line) - len(line.lstrip())]
        elif text == "# END SOLUTION":
            if not region:
                raise ValueError("'# END SOLUTION' without '# BEGIN SOLUTION'")
            out.append(f"{indent}# YOUR CODE HERE")
            out.extend(stubs or [f"{indent}..."])
            region = False
        elif region:
            if text.startswith("# STUB: "):
                stubs.append(indent + text[len("# STUB: ") :])
        elif line.rstrip().endswith("# SOLUTION ONLY"):
            continue
        elif line.rstrip().endswith("# SOLUTION"):
            target = re.match(r"^(\s*[^=]+?=)", line)
            if not target:
                raise ValueError(f"'# SOLUTION' needs an assignment: {line!r}")
            out.append(f"{target.group(1)} ...  # YOUR CODE HERE")
        else:
            out.append(line)
    if region:
        raise ValueError("'# BEGIN SOLUTION' without '# END SOLUTION'")
    return "\n".join(out)


def exercise_from_solution(solution, exercise_path):
    nb = copy.deepcopy(solution)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = strip_code(cell.source)
            cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown":
            cell.source = _MD_REGION.sub("", cell.source)
            if not cell.source.strip():
                continue
        cells.append(cell)
    nb.cells = cells
    nb.cells[0].source = nb.cells[0].source.replace("(solutions)", "(exercises)", 1)
    stamp(nb, exercise_path)
    return nb


def main(argv: list[str]) -> int:
    check = "--check" in argv
    problems = []
    solutions = sorted((ROOT / "solutions").glob("*.ipynb"))
    expected = {ROOT / "exercises" / p.name for p in solutions}
    for path in solutions:
        target = ROOT / "exercises" / path.name
        try:
            exercise = exercise_from_solution(read(path), target)
        except ValueError as err:
            problems.append(f"{path.relative_to(ROOT)}: {err}")
            continue
        fresh = nbformat.writes(exercise) + "\n"
        if check:
            if not target.exists() or target.read_text() != fresh:
                problems.append(f"{target.relative_to(ROOT)} is out of sync with its solution")
        else:
            write(exercise, target)
    for orphan in set((ROOT / "exercises").glob("*.ipynb")) - expected:
        problems.append(f"{orphan.relative_to(ROOT)} has no solution notebook")
    for p in problems:
        print(p)
    if problems and check:
        print("Run: python tools/make_exercises.py")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
