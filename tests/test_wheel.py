"""The wheel a learner installs (on Colab: ``%pip install git+...``) holds the lesson helpers
and ``doctor``, and none of the repository's tooling (the course runner, the leftover finder,
the notebook tools: tools/)."""

import ast
import inspect
import re
import shutil
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
    for stale in (ROOT / "build").glob("lib*"):  # setuptools' copy from an earlier build keeps
        shutil.rmtree(stale)  # modules deleted since, and the wheel would hold them
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


def _module_of(name: str) -> str:
    """The module a name imported from the package root is, dotted from the root (``placement``
    is ``topics.placement``: the root imports it on first use); the name itself otherwise."""
    value = getattr(tflearn_helpers, name, None)
    return value.__name__.removeprefix("tflearn_helpers.") if inspect.ismodule(value) else name


def test_the_wheel_holds_what_the_notebooks_import(wheel_files):
    names = {_module_of(n) for n in _imported_names()}
    assert {"setup_course", "pick"} <= names, names  # the reader found the setup cells
    modules = {
        m.group(1).replace("/", ".")
        for n in wheel_files
        if (m := re.match(r"tflearn_helpers/([\w/]+?)(?:\.py|/__init__\.py)$", n))
    }
    missing = sorted(n for n in names if n not in modules and n not in tflearn_helpers.__all__)
    assert not missing, f"the notebooks import what the wheel lacks: {missing}"


def _package_imports(path: Path) -> set[str]:
    """The package modules one module imports (relative imports, in functions too), starts
    (``python -m tflearn_helpers.cluster.task_server``) or, for a package, exports in its
    ``__all__`` (``cluster`` imports them on first use), dotted from the package root."""
    here = path.relative_to(ROOT / "tflearn_helpers").with_suffix("").parts
    package = here[:-1] if here[-1] != "__init__" else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):  # python -m ...
            found |= set(re.findall(r"^tflearn_helpers\.([\w.]+)$", node.value))
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            stem = [*base, *(node.module.split(".") if node.module else [])]
            found.add(".".join(stem))
            found |= {".".join([*stem, a.name]) for a in node.names}
        if here[-1] == "__init__" and isinstance(node, ast.Assign):  # a lazy package's modules
            if any(getattr(target, "id", "") == "__all__" for target in node.targets):
                found |= {".".join([*package, name]) for name in ast.literal_eval(node.value)}
    return found


def test_the_wheel_holds_only_what_the_notebooks_reach(wheel_files):
    """Every module of the wheel is imported by a notebook, by the facade, doctor or a
    program a lesson starts, or by a module that is (the checks reach it through check())."""
    modules = {
        ".".join(Path(n).with_suffix("").parts[1:]).removesuffix("__init__").rstrip(".")
        for n in wheel_files
        if n.startswith("tflearn_helpers/") and n.endswith(".py")
    }
    modules.discard("")  # the package's own __init__: the facade, read below
    path_of = {
        m: ROOT / "tflearn_helpers" / (m.replace(".", "/") + ".py")
        if (ROOT / "tflearn_helpers" / (m.replace(".", "/") + ".py")).exists()
        else ROOT / "tflearn_helpers" / m.replace(".", "/") / "__init__.py"
        for m in modules
    }
    roots = {"__main__", "doctor", "scripts.estimator_task", "scripts.multi_worker_train"}
    roots |= {m for m in modules if m.startswith("checks.")}  # check() finds them
    reached, todo = set(), [*roots, *({_module_of(n) for n in _imported_names()} & modules)]
    todo += [m for m in _package_imports(ROOT / "tflearn_helpers" / "__init__.py") if m in modules]
    while todo:
        m = todo.pop()
        if m in reached or m not in modules:
            continue
        reached.add(m)
        todo += [n for n in _package_imports(path_of[m]) if n in modules]
        todo += [p for p in modules if m.startswith(p + ".")]  # a module's package __init__
    assert modules - reached == set(), f"in the wheel, used by no notebook: {modules - reached}"
