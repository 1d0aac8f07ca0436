"""One source for taught code: a package helper that reuses a lesson's
code is compared, by syntax tree, with every definition the lesson writes."""

from __future__ import annotations

from pathlib import Path

from nbtools import python_of, read


def taught_definitions(path: Path, name: str) -> list:
    """Every ``def``/``class name`` a lesson's code cells write, nested ones and ``%%writefile``
    programs included (``ast`` nodes, in the order of the cells)."""
    import ast

    found = []
    for cell in read(path).cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(python_of(cell.source))
        except SyntaxError:
            continue
        found += [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name
        ]
    if not found:
        raise LookupError(f"{path.name} defines no function or class {name!r} in a code cell")
    return found


def differs_from_taught(helper, path: Path, name: str | None = None) -> str | None:
    """None when the package's ``helper`` (or the class ``name`` defined inside it) is the code
    lesson ``path`` writes, every time the lesson writes it; else where they differ.

    Compared by syntax tree, leaving out what only the package needs: docstrings, imports
    (``v1 = tf.compat.v1`` too: the package imports TensorFlow inside its functions),
    argument checks (``validate.*(...)`` and ``_check*(...)`` calls) and the ``if ...: raise``
    blocks that open the helper's body.
    """
    import ast
    import inspect
    import textwrap

    name = name or helper.__name__
    tree = ast.parse(textwrap.dedent(inspect.getsource(helper)))
    ours = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == name
    )
    while ours.body and isinstance(ours.body[0], ast.If | ast.Expr | ast.Import | ast.ImportFrom):
        if not (_package_only(ours.body[0]) or _raises(ours.body[0])):
            break
        ours.body = ours.body[1:]
    a = _taught_statements(ours)
    for taught in taught_definitions(path, name):
        b = _taught_statements(taught)
        if a == b:
            continue
        at = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        return (
            f"{helper.__module__}.{name} and {path.name} (line {taught.lineno} of its cell) differ "
            f"at statement {at}: {a[at] if at < len(a) else '(end)'!r} vs "
            f"{b[at] if at < len(b) else '(end)'!r}"
        )
    return None


def _taught_statements(node) -> list[str]:
    """The definition's signature and statements, as text, without type hints and without the
    package-only statements."""
    import ast
    import copy

    def strip(n):
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(n, field, None), list):
                setattr(n, field, [strip(s) for s in getattr(n, field) if not _package_only(s)])
        return n

    node = strip(copy.deepcopy(node))
    for n in ast.walk(node):  # type hints are the package's, not the lesson's
        if isinstance(n, ast.arg):
            n.annotation = None
        elif isinstance(n, ast.FunctionDef):
            n.returns = None
    head = ast.unparse(node.args) if isinstance(node, ast.FunctionDef) else ""
    return [f"({head})"] + [ast.unparse(s) for s in node.body]


def _package_only(stmt) -> bool:
    import ast

    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True  # a docstring
    if isinstance(stmt, ast.Assign) and ast.unparse(stmt.value) == "tf.compat.v1":
        return True  # `v1 = tf.compat.v1`: a module-level alias in a lesson's program
    if isinstance(stmt, ast.Expr | ast.Assign) and isinstance(stmt.value, ast.Call):
        return ast.unparse(stmt.value.func).startswith(("validate.", "_check"))
    return False


def _raises(stmt) -> bool:
    import ast

    return isinstance(stmt, ast.If) and all(isinstance(n, ast.Raise) for n in stmt.body)
