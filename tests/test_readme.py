"""The docs name only what exists: each code span of README.md, CONTRIBUTING.md or
docs/GLOSSARY.md that names a module of the package, or a function or class in one
(`programs.events`, `mirrored.max_abs_difference`), resolves."""

import importlib
import inspect
import re
from pathlib import Path

import tflearn_helpers

ROOT = Path(__file__).resolve().parents[1]
SPAN = re.compile(r"`([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)`")


def package_names(text: str) -> list[str]:
    """The dotted code spans whose first part is a module of the package."""
    top = {p.stem for p in Path(tflearn_helpers.__file__).parent.iterdir()}
    top |= {n for n in dir(tflearn_helpers) if inspect.ismodule(getattr(tflearn_helpers, n))}
    spans = [name for name in SPAN.findall(text) if not name.endswith(".py")]  # a file name
    return [name for name in spans if name.split(".")[0] in top]


def resolves(dotted: str) -> bool:
    """Each part an attribute of the one before, from the package; a module that is not
    imported yet is imported first (as ``from tflearn_helpers import x`` does)."""
    obj, path = tflearn_helpers, "tflearn_helpers"
    for part in dotted.split("."):
        path += "." + part
        if not hasattr(obj, part) and inspect.ismodule(obj):
            try:
                importlib.import_module(path)
            except ModuleNotFoundError:
                return False
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


DOCS = ("README.md", "CONTRIBUTING.md", "docs/GLOSSARY.md")


def test_every_package_name_in_the_docs_exists():
    names = {doc: package_names((ROOT / doc).read_text()) for doc in DOCS}
    assert any(names.values()), "the docs name no module of the package: is the pattern right?"
    missing = {doc: sorted({n for n in found if not resolves(n)}) for doc, found in names.items()}
    assert not any(missing.values()), f"names the package does not have: {missing}"


def test_a_stale_name_is_caught():
    assert resolves("programs.events") and resolves("mirrored.max_abs_difference")
    assert not resolves("mirrored.no_such_function") and not resolves("cluster.no_module")
    assert package_names("`programs.events` and `tf.function`") == ["programs.events"]
    assert package_names("`runtime.py` and `runtime.doctor`") == ["runtime.doctor"]
