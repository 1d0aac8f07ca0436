"""The notebook contract (CONTRIBUTING.md) holds for every course notebook."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import make_exercises  # noqa: E402
import nbtools  # noqa: E402

NOTEBOOKS = nbtools.course_notebooks()


def test_the_course_has_notebooks():
    assert any(p.parent.name == "notebooks" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_contract(path):
    assert nbtools.contract_problems(path) == []


def test_every_lesson_has_exercises_and_solutions():
    lessons = {p.name for p in (nbtools.ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    solved = {p.name for p in (nbtools.ROOT / "solutions").glob("*.ipynb")}
    assert lessons <= solved, f"lessons without solutions: {sorted(lessons - solved)}"


def test_exercises_are_in_sync_with_solutions(capsys):
    assert make_exercises.main(["--check"]) == 0, capsys.readouterr().out


def test_headers_are_stamped_from_the_repo_slug(capsys):
    import stamp_headers

    assert stamp_headers.main(["--check"]) == 0, capsys.readouterr().out


def test_legacy_lab_declares_its_kernel():
    for path in (nbtools.ROOT / "notebooks").glob("*legacy*.ipynb"):
        assert nbtools.read(path).metadata.kernelspec.name == "tflearn-legacy"
