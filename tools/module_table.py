"""Write the module table of CONTRIBUTING.md from the package's docstrings.

One row per module of ``tflearn_helpers/``: its path and the first sentence of its docstring
(a list: a Markdown table's cell separators would cost CONTRIBUTING.md a hundred of its 1,500
words). Left out: ``__main__.py``, and an ``__init__.py`` that defines no public function or
class (it only groups its folder). A folder's ``lessonNN.py`` modules share one row. The table sits
between the two marker lines below; everything else in CONTRIBUTING.md is left as it is.

    python tools/module_table.py          # rewrite the table
    python tools/module_table.py --check  # exit 1 when it is stale (tests/test_contributing.py)
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tflearn_helpers"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
BEGIN = "<!-- module table: python tools/module_table.py -->"
END = "<!-- end of module table -->"
LESSON = re.compile(r"^lesson(\d\d)$")


def summary(path: Path) -> str:
    """The first sentence of a module's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    if not paragraph:
        raise ValueError(f"{path.relative_to(ROOT)} has no docstring")
    return re.split(r"(?<=[.?!])\s", paragraph)[0]


def _groups_only(path: Path) -> bool:
    """An ``__init__.py`` that defines no public function or class."""
    tree = ast.parse(path.read_text())
    defined = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_")
    ]
    return path.name == "__init__.py" and not defined


def rows() -> list[tuple[str, str]]:
    """(module, summary) for the table, in path order."""
    found, lessons = [], {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__main__.py" or _groups_only(path):
            continue
        name = path.relative_to(PACKAGE).as_posix()
        number = LESSON.match(path.stem)
        if number:
            lessons.setdefault(path.parent, []).append(number.group(1))
            continue
        found.append((f"`{name}`", summary(path)))
    for folder, numbers in lessons.items():
        where = folder.relative_to(PACKAGE).as_posix()
        job = "what it saves, generated (edit the lesson)" if where == "taught" else "its checks"
        found.append((f"`{where}/lessonNN.py`", f"One per lesson (NN: {_span(numbers)}): {job}."))
    return sorted(found)


def _span(numbers: list[str]) -> str:
    """``00-09`` for a run without gaps, else ``00, 02, 03``."""
    values = [int(n) for n in numbers]
    if len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
        return f"{numbers[0]}-{numbers[-1]}"
    return ", ".join(numbers)


def _numbers(text: str) -> list[str]:
    """The inverse of ``_span``."""
    if "-" in text:
        first, last = text.split("-")
        return [f"{n:02d}" for n in range(int(first), int(last) + 1)]
    return [n.strip() for n in text.split(",")]


def table() -> str:
    return "\n".join(f"- {name}: {text}" for name, text in rows())


def with_table(text: str) -> str:
    """``text`` (CONTRIBUTING.md) with the table between its markers rewritten."""
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise ValueError(f"CONTRIBUTING.md needs one {BEGIN!r} line and one {END!r} line")
    before, rest = text.split(BEGIN)
    _, after = rest.split(END)
    return f"{before}{BEGIN}\n{table()}\n{END}{after}"


def listed(text: str) -> list[str]:
    """The module paths the table in ``text`` names (``lessonNN`` rows expanded)."""
    inside = text.split(BEGIN)[1].split(END)[0]
    paths = []
    for row in re.findall(r"^- `([^`]+\.py)`: (.*)$", inside, re.M):
        name, text_ = row
        numbers = re.search(r"NN: ([\d, -]+)\)", text_)
        if "lessonNN" in name and numbers:
            paths += [name.replace("NN", n) for n in _numbers(numbers.group(1))]
        else:
            paths.append(name)
    return paths


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the table is stale")
    args = parser.parse_args(argv)
    text = CONTRIBUTING.read_text()
    new = with_table(text)
    if args.check:
        if new != text:
            print("CONTRIBUTING.md's module table is stale: run python tools/module_table.py")
            return 1
        return 0
    CONTRIBUTING.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
