"""The wheel a learner installs (on Colab: ``%pip install git+...``) holds the lesson helpers
and ``doctor``, and none of the repository's tooling (the course runner, the leftover finder,
the notebook tools: tools/)."""

import ast
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import tflearn_helpers

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nbtools  # noqa: E402


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory) -> set[str]:
    out = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)]
    subprocess.run(build, check=True, timeout=600, capture_output=True)
    (wheel,) = out.glob("tflearn_helpers-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def test_the_wheel_holds_no_repository_tooling(wheel_files):
    modules = {Path(name).name for name in wheel_files if name.endswith(".py")}
    tools = {p.name for p in (ROOT / "tools").glob("*.py")}
    assert {"course.py", "leftovers.py", "nbtools.py"} <= tools  # where the tooling lives
    assert not modules & tools, f"tooling in the wheel: {sorted(modules & tools)}"
    assert not [n for n in wheel_files if n.startswith(("tests/", "tools/", "benchmarks/"))]
    assert "tflearn_helpers/doctor.py" in wheel_files
    assert "tflearn_helpers/scripts/multi_worker_train.py" in wheel_files


def _imported_names() -> set[str]:
    """The names every lesson, solution and exercise imports from tflearn_helpers."""
    names = set()
    for nb in nbtools.course_notebooks(("notebooks", "solutions", "exercises")):
        for cell in nbtools.read(nb).cells:
            if cell.cell_type != "code":
                continue
            try:
                tree = ast.parse(nbtools.python_of(cell.source))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "tflearn_helpers"
                ):
                    top = node.module.split(".")[1:2]
                    names |= set(top) if top else {a.name for a in node.names}
    return names


def test_the_wheel_holds_what_the_notebooks_import(wheel_files):
    names = _imported_names()
    assert {"setup_course", "pick"} <= names, names  # the reader found the setup cells
    modules = {
        m.group(1)
        for n in wheel_files
        if (m := re.match(r"tflearn_helpers/(\w+)(?:\.py|/__init__\.py)$", n))
    }
    missing = sorted(n for n in names if n not in modules and n not in tflearn_helpers.__all__)
    assert not missing, f"the notebooks import what the wheel lacks: {missing}"
