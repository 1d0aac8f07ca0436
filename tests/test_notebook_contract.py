"""The notebook contract (CONTRIBUTING.md) holds for every course notebook."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import make_exercises  # noqa: E402
import nbtools  # noqa: E402
import readability  # noqa: E402

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


# --- The readability contract (COURSE_DESIGN contract item 7, issue 19) ----------------------
#: Lessons that do not meet the readability contract yet, with why. The ONE list: a lesson
#: here is expected to fail (strict xfail), so the test fails as soon as it passes; remove it
#: from this list when its lesson lands. "course" is the course-wide count of helper names.
NOT_YET_READABLE = {}


def _readable(key, value):
    if key in NOT_YET_READABLE:
        return pytest.param(
            value, id=key, marks=pytest.mark.xfail(strict=True, reason=NOT_YET_READABLE[key])
        )
    return pytest.param(value, id=key)


@pytest.mark.parametrize(
    "path", [_readable(readability.lesson_id(p), p) for p in readability.lessons()]
)
def test_lesson_is_readable(path):
    """A learner reading a lesson's code cells reads TensorFlow, not course machinery.

    Measured on the code cells of notebooks/NN_*.ipynb (tools/nbtools.py; print every
    lesson's figures with ``python tools/readability.py``):

    * a cell's size is its number of non-blank lines (comments count);
    * the median cell size is at most 15 lines;
    * no cell is over 40 lines, except a ``%%writefile`` cell (a program shown once, whole);
    * at most 15 distinct helper names. The helper names of a lesson are found by parsing
      every code cell (the body of a ``%%writefile`` program included; ``%`` and ``!``
      lines ignored, also inside a block). A *root* is a name the lesson imports from
      ``tflearn_helpers`` (any
      ``from tflearn_helpers[.x] import name [as alias]``, or ``import tflearn_helpers``),
      plus ``course`` (what ``setup_course`` returns). Each use of a root counts once per
      distinct name:
        - ``course.<attr>`` counts as ``course.<attr>``, whatever follows
          (``course.plan.kind`` is ``course.plan``);
        - a dotted chain from any other root counts as the chain through the package's
          modules up to and including the first attribute that is not a module, and each
          module on the way counts too: ``cluster.tf_config.build`` is three names
          (``cluster``, ``cluster.tf_config``, ``cluster.tf_config.build``); the attributes
          of what a helper returns are not counted;
        - a root used bare counts as itself (``pick(...)``, ``setup_course(...)``, or a
          module passed as a value);
        - an import that is never used counts nothing.
    """
    figures = readability.readability(path)
    problems = readability.readability_problems(figures)
    shown = {k: v for k, v in figures.items() if k not in ("names", "over 40 (code cell numbers)")}
    assert problems == [], f"{figures['lesson']}: {shown}; " + "; ".join(problems)


@pytest.mark.parametrize("lessons", [_readable("course", readability.lessons())])
def test_the_course_uses_few_helper_names(lessons):
    """Across all lessons, at most 60 distinct helper names (counted as in the test above)."""
    per_lesson = {
        readability.lesson_id(p): set(readability.readability(p)["names"]) for p in lessons
    }
    everything = set().union(*per_lesson.values())
    counts = {k: len(v) for k, v in per_lesson.items()}
    assert len(everything) <= readability.MAX_COURSE_HELPER_NAMES, (
        f"{len(everything)} distinct helper names across the lessons (per lesson: {counts}):"
        f" {sorted(everything)}"
    )


def test_helper_names_are_counted_as_documented():
    cells = [
        "from tflearn_helpers import mirrored, pick, headline as hl, cluster, setup_course\n"
        "course = setup_course(devices=2)",
        "x = pick(smoke=1, cpu=2, gpu=3)\nmirrored.update_norm(a, b)\nmirrored.update_norm(c, d)",
        "course.plan.kind\ncourse.devices[0]\ncluster.tf_config.build(1)\ntiming = measure()",
        "%%writefile prog.py\nfrom tflearn_helpers import report\nreport.format_value(1)",
        "%time pick(smoke=1, cpu=1, gpu=1)\n!ls",
        "if x:\n    %pip install y\nhl('speed', 1)",
    ]
    assert readability.helper_names(cells) == {
        "setup_course",
        "pick",
        "headline",
        "mirrored",
        "mirrored.update_norm",
        "course.plan",
        "course.devices",
        "cluster",
        "cluster.tf_config",
        "cluster.tf_config.build",
        "report",
        "report.format_value",
    }


def test_readability_limits_are_measured():
    program = "%%writefile w.py\n" + "x = 1\n" * 50
    long_cell = "\n".join(f"y{i} = {i}" for i in range(41))
    assert nbtools.is_program(program) and not nbtools.is_program(long_cell)
    assert len(nbtools.code_lines("a = 1\n\n   \nb = 2\n# note")) == 3
    figures = {
        "median lines": 16,
        "cells over 40": 1,
        "over 40 (code cell numbers)": [3],
        "helper names": 16,
        "names": [f"n{i}" for i in range(16)],
    }
    problems = readability.readability_problems(figures)
    assert len(problems) == 3 and "median" in problems[0] and "[3]" in problems[1]
    figures.update({"median lines": 15, "cells over 40": 0, "helper names": 15})
    assert readability.readability_problems(figures) == []
