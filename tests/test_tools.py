"""The exercise generator and the contract checker on small, made-up notebooks."""

import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import make_exercises  # noqa: E402
import nbtools  # noqa: E402


def test_single_line_solution_becomes_a_stub():
    out = make_exercises.strip_code("n = 4  # SOLUTION\nprint(n)")
    assert out == "n = ...  # YOUR CODE HERE\nprint(n)"


def test_region_becomes_its_stub_lines_with_indentation():
    src = (
        "def f():\n    # BEGIN SOLUTION\n    # STUB: return ...\n    return 42\n    # END SOLUTION"
    )
    assert make_exercises.strip_code(src) == "def f():\n    # YOUR CODE HERE\n    return ..."


def test_region_without_stub_becomes_ellipsis_and_solution_only_lines_go():
    src = "# BEGIN SOLUTION\nx = 1\n# END SOLUTION\nassert ok  # SOLUTION ONLY\ny = 2"
    assert make_exercises.strip_code(src) == "# YOUR CODE HERE\n...\ny = 2"


@pytest.mark.parametrize(
    "bad", ["# BEGIN SOLUTION\nx = 1", "x = 1\n# END SOLUTION", "print(1)  # SOLUTION"]
)
def test_unbalanced_or_unassignable_markers_are_errors(bad):
    with pytest.raises(ValueError):
        make_exercises.strip_code(bad)


def test_exercise_drops_markdown_solutions_and_retitles(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 09 · Demo (solutions)"),
        nbformat.v4.new_markdown_cell("<!-- BEGIN SOLUTION -->\nwhy\n<!-- END SOLUTION -->"),
        nbformat.v4.new_code_cell("a = 1  # SOLUTION"),
    ]
    target = nbtools.ROOT / "exercises" / "09_demo.ipynb"
    ex = make_exercises.exercise_from_solution(nb, target)
    assert [c.source for c in ex.cells] == ["# 09 · Demo (exercises)", "a = ...  # YOUR CODE HERE"]


def test_contract_reports_a_bare_notebook(tmp_path):
    path = tmp_path / "99_probe.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("no title"), nbformat.v4.new_code_cell("1")]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="1")]
    nbtools.write(nb, path)
    problems = " | ".join(nbtools.contract_problems(path))
    for expected in ("H1", "badge", "You will learn", "setup cell", "takeaways", "outputs"):
        assert expected in problems


def test_a_fork_repoints_every_badge_and_install_line_with_one_command(tmp_path):
    import shutil
    import subprocess
    import sys

    root = nbtools.ROOT
    for folder in ("tools", "notebooks", "solutions", "exercises"):
        shutil.copytree(root / folder, tmp_path / folder)
    (tmp_path / "tflearn_helpers").mkdir()
    for name in ("tflearn_helpers/__init__.py", "pyproject.toml", "README.md", "CONTRIBUTING.md"):
        shutil.copy(root / name, tmp_path / name)
    tool = [sys.executable, str(tmp_path / "tools" / "stamp_headers.py")]
    bad = subprocess.run([*tool, "--slug", "not a slug"], capture_output=True, text=True)
    assert bad.returncode != 0 and "OWNER/NAME" in bad.stderr
    subprocess.run([*tool, "--slug", "my-org/my-course"], check=True, capture_output=True)
    assert subprocess.run([*tool, "--check"], capture_output=True).returncode == 0
    texts = [
        p.read_text() for p in tmp_path.rglob("*") if p.suffix in (".ipynb", ".py", ".md", ".toml")
    ]
    assert not any(nbtools.repo_slug() in t for t in texts)
    setup = tmp_path / "exercises" / "01_mirrored_strategy.ipynb"
    assert "git+https://github.com/my-org/my-course" in setup.read_text()
    assert (
        "colab.research.google.com/github/my-org/my-course/blob/main/exercises/"
        in setup.read_text()
    )


def test_draws_finds_plots_in_code_cells_only(tmp_path):
    def nb(*cells):
        path = tmp_path / f"{len(list(tmp_path.iterdir()))}.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=list(cells)), str(path))
        return path

    code, text = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell
    assert nbtools.draws(nb(code("import matplotlib.pyplot as plt\nplt.show()"))) == {"image"}
    assert nbtools.draws(nb(code("from IPython.display import HTML"))) == {"html"}
    assert nbtools.draws(nb(code("plt.plot([1])"), code("display(df)"))) == {"image", "html"}
    assert nbtools.draws(nb(code("print(1)"), text("we could use plt.plot here"))) == set()


def test_rotating_sample_is_fixed_by_its_key_and_goes_round():
    items = ["01", "02", "03", "04", "05"]
    assert nbtools.rotating_sample(items, "abc") == nbtools.rotating_sample(items, "abc")
    firsts = {nbtools.rotating_sample(items, f"commit{i}")[0] for i in range(60)}
    assert firsts == set(items), "successive keys reach every item"
    two = nbtools.rotating_sample(items, "abc", k=2)
    assert items.index(two[1]) == (items.index(two[0]) + 1) % 5
    with pytest.raises(ValueError, match="cannot take"):
        nbtools.rotating_sample(items, "abc", k=6)
    with pytest.raises(ValueError, match="cannot take"):
        nbtools.rotating_sample([], "abc")


def test_browser_notebooks_what_the_browser_lane_runs():
    always = list(nbtools.BROWSER_ALWAYS)
    default = nbtools.browser_notebooks({})
    assert default[:2] == always and len(default) == 3 and default == nbtools.browser_notebooks({})
    assert nbtools.draws(nbtools.ROOT / default[2]), "the one more lesson is one that draws"
    every = nbtools.browser_notebooks({nbtools.BROWSER_LESSONS_ENV: "all"})
    assert default[2] in every and len(set(every)) == len(every), "01 is not run twice"
    named = {nbtools.BROWSER_LESSONS_ENV: "03,04", nbtools.BROWSER_REPEAT_ENV: "2"}
    assert [nb[10:12] for nb in nbtools.browser_notebooks(named)[2:]] == ["03", "04"] * 2
    for bad, words in [({nbtools.BROWSER_LESSONS_ENV: "99"}, "names no lesson"),
                       ({nbtools.BROWSER_REPEAT_ENV: "0"}, "whole number")]:  # fmt: skip
        with pytest.raises(ValueError, match=words):
            nbtools.browser_notebooks(bad)
