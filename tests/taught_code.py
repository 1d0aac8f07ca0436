"""One source for taught code: find a definition in a lesson's cells and compare it with the
package's copy by syntax tree (d2l's ``#@save`` idea)."""

import ast
import inspect
import json
import textwrap
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def lesson_definitions(notebook: str, name: str) -> list:
    """Every function or class called ``name`` in the lesson's code cells, programs written
    with ``%%writefile`` included (their first line, the magic, is left out)."""
    cells = json.loads((NOTEBOOKS / notebook).read_text())["cells"]
    found = []
    for cell in cells:
        source = "".join(cell["source"]) if cell["cell_type"] == "code" else ""
        if source.startswith("%%writefile"):
            source = source.split("\n", 1)[1]
        lines = [line for line in source.splitlines() if not line.lstrip().startswith("%")]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue
        found += [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name
        ]
    assert found, f"{notebook} does not define {name}"
    return found


def package_definition(obj, name: str | None = None):
    """The syntax tree of ``obj`` (a function), or of the class ``name`` defined inside it."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    wanted = name or obj.__name__
    return next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == wanted
    )


def taught_body(node) -> str:
    """A definition's statements without docstrings, imports (``v1 = tf.compat.v1`` too: the
    package imports TensorFlow inside its functions) and argument checks (calls of
    ``validate.*`` or ``_check_*``: the package checks input, a lesson need not)."""

    def kept(stmt):
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            return False
        if isinstance(stmt, ast.Assign) and ast.unparse(stmt.value) == "tf.compat.v1":
            return False  # `v1 = tf.compat.v1`: a module-level alias in a lesson's program
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return False  # a docstring
        if isinstance(stmt, ast.Expr | ast.Assign) and isinstance(stmt.value, ast.Call):
            called = ast.unparse(stmt.value.func)
            return not called.startswith(("validate.", "_check_"))
        return True

    def strip(node):
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(node, field, None), list):
                setattr(node, field, [strip(s) for s in getattr(node, field) if kept(s)])
        return node

    node = strip(node)
    return ast.dump(ast.Module(node.body, []))
