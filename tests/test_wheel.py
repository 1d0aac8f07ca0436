"""The wheel a learner installs (on Colab: ``%pip install git+...``) holds the lesson helpers
and ``doctor``, and none of the repository's tooling (the course runner, the leftover finder,
the notebook tools: tools/), nor the checks' test data (tests/answers/) or a solution's lines."""

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
from make_exercises import strip_code  # noqa: E402


@pytest.fixture(scope="module")
def wheel_sources(tmp_path_factory) -> dict[str, str]:
    """Every file of the built wheel: its text for a ``.py``, "" for the others."""
    out = tmp_path_factory.mktemp("wheel")
    for stale in (ROOT / "build").glob("lib*"):  # setuptools' copy from an earlier build keeps
        shutil.rmtree(stale)  # modules deleted since, and the wheel would hold them
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)]
    subprocess.run(build, check=True, timeout=600, capture_output=True)
    (wheel,) = out.glob("tflearn_helpers-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return {n: zf.read(n).decode() if n.endswith(".py") else "" for n in zf.namelist()}


@pytest.fixture(scope="module")
def wheel_files(wheel_sources) -> set[str]:
    return set(wheel_sources)


def test_the_wheel_holds_no_repository_tooling(wheel_files):
    modules = {Path(name).name for name in wheel_files if name.endswith(".py")}
    tools = {p.name for p in (ROOT / "tools").glob("*.py")}
    assert {"course.py", "leftovers.py", "nbtools.py"} <= tools  # where the tooling lives
    assert not modules & tools, f"tooling in the wheel: {sorted(modules & tools)}"
    assert not [n for n in wheel_files if n.startswith(("tests/", "tools/", "benchmarks/"))]
    assert "tflearn_helpers/runtime/doctor.py" in wheel_files
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
    roots = {"__main__", "runtime.doctor", "scripts.estimator_task", "scripts.multi_worker_train"}
    roots |= {m for m in modules if m.startswith("checks.")}  # check() finds them
    # generated from a lesson: tools/save_taught.py checks that each definition's user (a
    # module, or a benchmark: CONTRIBUTING's "taught code aside") imports it
    roots |= {m for m in modules if m.startswith("taught.")}
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


def _answer_lines() -> set[str]:
    """The solutions' distinctive lines: what a solution cell has and its exercise does not
    (the answers), 25 characters or more, written in no lesson and no exercise notebook."""
    taught, answers = set(), set()
    for nb in nbtools.course_notebooks(("notebooks", "exercises")):
        for cell in nbtools.read(nb).cells:
            taught |= {line.strip() for line in cell.source.splitlines()}
    for nb in nbtools.course_notebooks(("solutions",)):
        for cell in nbtools.read(nb).cells:
            if cell.cell_type != "code":
                continue
            stub = {line.strip() for line in strip_code(cell.source).splitlines()}
            for line in cell.source.splitlines():
                text = re.sub(r"\s*# SOLUTION( ONLY)?$", "", line.strip())
                if len(text) >= 25 and not text.startswith("#") and text not in stub | taught:
                    answers.add(text)
    return answers


# Answer lines the package's own code also needs (each module named, with why)
SHARED_WITH_AN_ANSWER = {
    # the checks' own problems, written in the idiom the answers use too
    "checks/lesson00.py": {"with tf.device(devices[-1]):"},
    "checks/lesson01.py": {
        "for name, (weights, _) in results.items()",
        "step = make_step(strategy, model, optimizer, global_batch)",
        "tf.data.Dataset.from_tensor_slices((x, y))",
    },
    "checks/lesson02.py": {"tf.data.Dataset.from_tensor_slices((x, y))"},
    "checks/lesson08.py": {'x = v1.placeholder(tf.float32, [None, 10], name="x")'},
    # 07.2's harness: the step function the answer calls, and a batch script that requeues the
    # learner's task (07.1's answer requeues too)
    "checks/lesson07.py": {"train_one_step(step, weights)", 'scontrol requeue "$SLURM_JOB_ID"'},
    # lesson 04's worker program, whose preemption handler exercise 04.6 practises
    "scripts/multi_worker_train.py": {"termination_watcher_fn=notice.is_set,"},
    # lesson 08's worker program, which the lesson writes after 08.1 and 08.5
    "taught/lesson08.py": {
        "setter = v1.train.replica_device_setter(",
        'cluster=cluster, worker_device=f"/job:worker/task:{task}"',
        "opt = v1.train.SyncReplicasOptimizer(",
    },
}


def test_the_wheel_holds_no_answer_and_no_test_data(wheel_sources):
    """The checks judge answers; the wrong and right answers they are tested with (made of the
    solutions' lines) are test data, in tests/answers/, and no solution line ships."""
    modules = {n: s for n, s in wheel_sources.items() if n.endswith(".py")}
    tables = [n for n, s in modules.items() if re.search(r"\b(MUTATIONS|RIGHT_ANSWERS)\b", s)]
    assert not tables, f"test tables in the wheel: {tables}"
    answers = _answer_lines()
    assert len(answers) > 100, len(answers)  # the reader found the solutions' answers
    shipped = {}
    for name, source in modules.items():
        module = name.removeprefix("tflearn_helpers/")
        found = {a for a in answers if a in source} - SHARED_WITH_AN_ANSWER.get(module, set())
        if found:
            shipped[module] = sorted(found)
    assert not shipped, f"solution lines in the wheel: {shipped}"
