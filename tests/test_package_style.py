"""The helper package's style rules (CONTRIBUTING.md, "Helper package"), read with ``ast``.

Each test names the file and line of every breach: a module without ``__all__``, a name in
``__all__`` that nothing outside its module uses, a function
over 60 lines, a ``_private`` name imported from another module of the package, an import
cycle between the package's modules, and a notebook importing the package in any form other
than ``from tflearn_helpers import a, b, c``.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tflearn_helpers"
MAX_FUNCTION_LINES = 60


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _imported_from(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from ... import`` statement reads from."""
    if not node.level:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _package_imports(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, package module) for every import of a package module in ``module``: at its top
    and inside its functions (an import deferred into a function to dodge a cycle is still one)."""
    found = []
    pending = list(_tree(path).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name in MODULES]
        elif isinstance(node, ast.ImportFrom):
            source = _imported_from(module, path, node)
            for alias in node.names:
                child = f"{source}.{alias.name}"
                target = child if child in MODULES else source
                if target in MODULES:
                    found.append((node.lineno, target))
        pending.extend(ast.iter_child_nodes(node))
    return found


# Programs the lessons write (lesson 04's worker, lab 08b's Estimator task), generated whole from
# their %%writefile cells: scripts a learner copies out, not modules
PROGRAMS = {
    PACKAGE / "scripts" / "multi_worker_train.py",
    PACKAGE / "scripts" / "estimator_task.py",
}


def test_every_module_has_dunder_all():
    missing = []
    for path in sorted(set(MODULES.values()) - PROGRAMS):
        names = {
            target.id
            for node in _tree(path).body
            if isinstance(node, ast.Assign | ast.AnnAssign)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        if "__all__" not in names:
            missing.append(f"{_where(path, 1)}: no __all__")
    assert not missing, "\n".join(missing)


def _code_outside(path: Path) -> str:
    """Every Python text of the repository but ``path`` (and the ``__init__`` beside it, which
    may gather a module's names): package, tests, tools, benchmarks, notebooks' code cells."""
    texts = []
    for other in [*PACKAGE.rglob("*.py"), *ROOT.glob("tests/*.py"), *ROOT.glob("tools/*.py"),
                  *ROOT.glob("benchmarks/*.py"), ROOT / "conftest.py"]:  # fmt: skip
        if other != path and not (other.name == "__init__.py" and other.parent == path.parent):
            texts.append(other.read_text())
    for folder in ("notebooks", "solutions", "exercises"):
        for nb in ROOT.glob(f"{folder}/*.ipynb"):
            cells = json.loads(nb.read_text())["cells"]
            texts += ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return "\n".join(texts)


def test_dunder_all_lists_only_names_used_outside_the_module():
    unused = []
    for path in MODULES.values():
        listed = next(
            (ast.literal_eval(node.value) for node in _tree(path).body
             if isinstance(node, ast.Assign)
             and any(getattr(t, "id", "") == "__all__" for t in node.targets)),
            [],
        )  # fmt: skip
        outside = _code_outside(path) if listed else ""
        unused += [
            f"{_where(path, 1)}: {name} is in __all__ but used only inside its module"
            for name in listed
            if not re.search(rf"\b{re.escape(name)}\b", outside)
        ]
    assert not unused, "\n".join(unused)


def test_functions_are_at_most_60_lines():
    long = []
    for path in MODULES.values():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{_where(path, node.lineno)}: {node.name} has {lines} lines")
    assert not long, "\n".join(long)


def _imports_from_the_package():
    """(module, path, node, source) for every ``from <package module> import ...`` in the
    package, inside functions too."""
    for module, path in MODULES.items():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom):
                source = _imported_from(module, path, node)
                if source.startswith("tflearn_helpers"):
                    yield module, path, node, source


def test_no_private_name_is_imported_from_another_module():
    private = []
    for module, path, node, source in _imports_from_the_package():
        if source == module:
            continue
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                private.append(f"{_where(path, node.lineno)}: imports {alias.name} from {source}")
    assert not private, "\n".join(private)


def _defined(path: Path) -> set[str] | None:
    """The names a module binds at its top level; None when a module ``__getattr__`` may make
    any other."""
    names = set()
    for node in _tree(path).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return None if "__getattr__" in names else names


def test_every_import_from_the_package_finds_its_name():
    """Imports inside functions too: one that names a module or a name that is gone fails only
    when its function runs, so it is read here."""
    missing = []
    for _, path, node, source in _imports_from_the_package():
        if source not in MODULES:
            missing.append(f"{_where(path, node.lineno)}: no module {source}")
            continue
        defined = _defined(MODULES[source])
        for alias in node.names:
            if f"{source}.{alias.name}" in MODULES or defined is None:
                continue
            if alias.name not in defined:
                missing.append(f"{_where(path, node.lineno)}: {source} has no {alias.name}")
    assert not missing, "\n".join(missing)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module, or a module importing itself."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_imports_inside_functions_count(tmp_path):
    path = tmp_path / "mod.py"
    path.write_text("def f():\n    from .processes import start\n")
    assert _package_imports("tflearn_helpers.programs.mod", path) == [
        (2, "tflearn_helpers.programs.processes")
    ]


def test_no_import_cycle_between_package_modules():
    graph = {module: set() for module in MODULES}
    lines = {}
    for module, path in MODULES.items():
        for line, target in _package_imports(module, path):
            graph[module].add(target)
            lines[(module, target)] = _where(path, line)
    report = []
    for cycle in _cycles(graph):
        edges = [lines[(a, b)] + f" ({a} -> {b})" for a in cycle for b in graph[a] if b in cycle]
        report.append("import cycle: " + "; ".join(edges))
    assert not report, "\n".join(report)


def _python_of(cell_source: str) -> str:
    """A code cell as Python: IPython magic lines blanked (a %%writefile body is Python)."""
    lines = cell_source.splitlines()
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)


def _package_import_problems(source: str) -> list[tuple[int, str]]:
    """(line, statement) of each import of the package other than ``from tflearn_helpers import``
    of plain names; a cell that does not parse is read line by line."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        pattern = re.compile(
            r"^\s*(from\s+tflearn_helpers\S*\s+import\b.*|import\s+tflearn_helpers.*)"
        )
        plain = re.compile(r"^\s*from tflearn_helpers import \w+(, \w+)*\s*(#.*)?$")
        return [
            (n, line.strip())
            for n, line in enumerate(source.splitlines(), 1)
            if pattern.match(line) and not plain.match(line)
        ]
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bad = [a for a in node.names if a.name.split(".")[0] == "tflearn_helpers"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tflearn_helpers"):
            bad = node.module != "tflearn_helpers" or any(a.asname for a in node.names)
        else:
            bad = False
        if bad:
            problems.append((node.lineno, ast.get_source_segment(source, node)))
    return problems


def _notebook_import_problems(path: Path, root: Path = ROOT) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    problems = []
    for number, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        for line, statement in _package_import_problems(_python_of("".join(cell["source"]))):
            where = f"{path.relative_to(root)}: cell {number}, line {line}"
            problems.append(f"{where}: {statement}")
    return problems


def test_notebooks_import_the_package_one_way():
    """``from tflearn_helpers import a, b``: no ``as``, no ``from tflearn_helpers.x import``."""
    problems = []
    for folder in ("notebooks", "solutions"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            problems += _notebook_import_problems(path)
    assert not problems, "\n".join(problems)


def test_the_notebook_rule_catches_every_other_form(tmp_path):
    fine = (
        "from tflearn_helpers import setup_course, pick\nfrom tflearn_helpers import (\n    a,\n)\n"
    )
    bad = [
        "from tflearn_helpers import mirrored as dp",
        "from tflearn_helpers.runtime.devices import DevicesAlreadyInitializedError",
        "import tflearn_helpers",
        "from tflearn_helpers.topics.models import resnet",
    ]
    cells = [
        {"cell_type": "code", "source": fine + "\n".join(bad[:3])},
        {"cell_type": "code", "source": "%%writefile $PROGRAM\ndef f():\n    " + bad[3]},
        {"cell_type": "code", "source": "%%writefile {x}/y.py\nif True:\n" + bad[0]},  # no parse
    ]
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({"cells": cells}))
    found = [p.split(": ", 2)[-1] for p in _notebook_import_problems(notebook, tmp_path)]
    assert found == [*bad, bad[0]]


def test_importing_any_module_never_imports_tensorflow():
    """``setup_course`` must run before TensorFlow loads, whatever a cell imported first
    (``scripts/`` are programs run in their own process, not modules a notebook imports)."""
    from helpers import run_python

    modules = [m for m in MODULES if ".scripts" not in m and not m.endswith("__main__")]
    done = run_python(f"""
        import importlib, sys
        for name in {modules!r}:
            importlib.import_module(name)
            assert "tensorflow" not in sys.modules, name + " imports TensorFlow"
        print("ok")
    """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]
