"""tools/taught.differs_from_taught: the one comparison of a package helper with the code a
lesson writes, on small notebooks written here."""

import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import nbtools  # noqa: E402
import taught  # noqa: E402


def scale(x: float, *, by: float = 2.0) -> float:
    """The package's copy (lesson defines it)."""
    if by == 0:
        raise ValueError("by must not be 0")
    return x * by


def holder():
    class Box:
        def size(self):
            """A docstring the lesson need not have."""
            return 3

    return Box


def _lesson(tmp_path, *sources):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(textwrap.dedent(s)) for s in sources]
    )
    path = tmp_path / "lesson.ipynb"
    nbtools.write(nb, path)
    return path


def test_the_same_code_without_hints_checks_or_docstrings_is_the_same(tmp_path):
    lesson = _lesson(tmp_path, "def scale(x, *, by=2.0):\n    return x * by\n")
    assert taught.differs_from_taught(scale, lesson) is None


def test_a_changed_statement_is_named(tmp_path):
    lesson = _lesson(tmp_path, "def scale(x, *, by=2.0):\n    return x + by\n")
    assert "x + by" in taught.differs_from_taught(scale, lesson)


def test_changed_arguments_are_named(tmp_path):
    lesson = _lesson(tmp_path, "def scale(x, by=3.0):\n    return x * by\n")
    assert "by=3.0" in taught.differs_from_taught(scale, lesson)


def test_every_definition_counts_programs_and_classes_too(tmp_path):
    program = "%%writefile box.py\nclass Box:\n    def size(self):\n        return 3\n"
    lesson = _lesson(tmp_path, program, "class Box:\n    def size(self):\n        return 4\n")
    assert "return 4" in taught.differs_from_taught(holder, lesson, "Box")
    assert taught.differs_from_taught(holder, _lesson(tmp_path, program), "Box") is None


def test_a_lesson_without_the_definition_is_an_error(tmp_path):
    with pytest.raises(LookupError, match="scale"):
        taught.differs_from_taught(scale, _lesson(tmp_path, "x = 1\n"))
