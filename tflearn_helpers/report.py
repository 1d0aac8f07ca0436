"""Printing results: tables and headline figures (used by every lesson).

``print_table`` shows a pandas DataFrame: an HTML table in a notebook (JupyterLab, Colab,
VS Code, the rendered course), plain text in a terminal. ``format_table`` is the plain text
the course's own commands print (``doctor``, the course runner).

A headline is a figure a lesson wants on the course's summary page (``make course``):
``headline("images/s on 4 devices", 123.4)`` prints it and, when the course runner
set ``TFLEARN_HEADLINES``, appends it to that JSON-lines file.

``record(key, value)`` keeps a measured figure for later lessons (lesson 06's strategy
table reads what lessons 02-05 measured on this machine) in ``$TFLEARN_RESULTS``
(default ``~/.cache/tflearn/results.json``); ``recorded(key)`` reads it back.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no lock (a learner runs one notebook at a time there)
    fcntl = None

__all__ = [
    "HEADLINES_ENV",
    "RESULTS_ENV",
    "ExpectedError",
    "expect_error",
    "format_table",
    "format_value",
    "headline",
    "print_table",
    "record",
    "recorded",
    "recorded_prefix",
    "results_path",
]

HEADLINES_ENV = "TFLEARN_HEADLINES"
RESULTS_ENV = "TFLEARN_RESULTS"


def format_table(rows: Iterable[Sequence], headers: Sequence[str]) -> str:
    """A fixed-width text table (readable in notebooks, logs and HTML alike)."""
    cells = [[format_value(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        if len(row) != len(headers):
            raise ValueError(f"row {row} has {len(row)} cells, headers have {len(headers)}")
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)), line]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(out)


def print_table(rows: Iterable[Sequence], headers: Sequence[str]) -> None:
    """Show the rows as a table: a DataFrame, as HTML in a notebook and as text elsewhere."""
    import pandas as pd

    cells = [[format_value(v) for v in row] for row in rows]
    for row in cells:
        if len(row) != len(headers):
            raise ValueError(f"row {row} has {len(row)} cells, headers have {len(headers)}")
    frame = pd.DataFrame(cells, columns=list(headers))
    text = frame.to_string(index=False)
    if _in_ipython():
        from IPython.display import display

        display({"text/html": frame.to_html(index=False), "text/plain": text}, raw=True)
    else:
        print(text)


def _in_ipython() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def headline(label: str, value, unit: str = "") -> None:
    """Print a figure and record it for the course summary page."""
    text = f"{format_value(value)} {unit}".strip()
    print(f"{label}: {text}")
    path = os.environ.get(HEADLINES_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"label": label, "value": text}) + "\n")


class ExpectedError:
    """What :func:`expect_error` caught: ``.error`` is the exception itself."""

    error: BaseException | None = None


@contextlib.contextmanager
def expect_error(*types: type[BaseException]):
    """Run a block that a lesson shows failing: print the error, assert its type.

    Run All (Colab, VS Code, JupyterLab) stops at the first cell that raises, so a lesson
    demonstrates an error inside ``with expect_error(SomeError):``. The expected error is
    caught and printed; another error propagates; no error at all fails the cell.
    """
    if not types:
        raise TypeError("name the error the block should raise, e.g. expect_error(ValueError)")
    caught = ExpectedError()
    try:
        yield caught
    except types as err:
        caught.error = err
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        print(f"raised, as expected: {type(err).__name__}: {first}")
    else:
        names = " or ".join(t.__name__ for t in types)
        raise AssertionError(f"expected {names}, but the block ran without error")


def results_path() -> Path:
    """Where ``record`` keeps figures: ``$TFLEARN_RESULTS``, else ~/.cache/tflearn."""
    default = Path.home() / ".cache" / "tflearn" / "results.json"
    return Path(os.environ.get(RESULTS_ENV) or default)


def record(key: str, value: float, **context) -> None:
    """Keep a measured figure (with when and where it was measured) for later lessons.

    Safe when several notebooks record at once (two kernels, two helpers' test runs): the
    read-modify-write holds a lock on ``<store>.lock`` (POSIX), and the new store is written
    to a file of its own before it replaces the old one, so a reader never sees half a file.
    """
    path = results_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        if fcntl:
            fcntl.flock(lock, fcntl.LOCK_EX)
        data = _load(path)
        data[key] = {"value": value, "time": time.time(), **context}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, path)


def recorded(key: str) -> dict | None:
    """The entry ``record`` kept under ``key`` ({"value": ..., "time": ..., ...}), or None."""
    return _load(results_path()).get(key)


def recorded_prefix(prefix: str) -> dict[str, dict]:
    """Every entry whose key starts with ``prefix`` (e.g. "02."), sorted by key."""
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a string, got {prefix!r}")
    return {k: v for k, v in sorted(_load(results_path()).items()) if k.startswith(prefix)}


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def format_value(value) -> str:
    """A figure as the course prints it: 4 significant digits, large floats with commas."""
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return str(value)
