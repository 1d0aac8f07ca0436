"""Printing results: headline figures (every lesson) and text tables.

Lessons show their tables as pandas DataFrames (``setup_course`` sets pandas to print
figures with ``format_value``). ``format_table`` is the plain text the course's own
commands print (``doctor``, the course runner).

A headline is a figure a lesson wants on the course's summary page (``make course``):
``headline("images/s on 4 devices", 123.4)`` shows it; in a notebook the output carries the
figure in its metadata (``HEADLINE_KEY``), where the course runner finds it. What a lesson
cannot show on this machine (no Slurm, no network namespaces) it says with ``skipped``, which
the summary page lists the same way (``SKIPPED_KEY``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence

__all__ = [
    "HEADLINE_KEY",
    "SKIPPED_KEY",
    "expect_error",
    "format_table",
    "format_value",
    "headline",
    "skipped",
]

HEADLINE_KEY = "tflearn_headline"
SKIPPED_KEY = "tflearn_skipped"


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


def headline(label: str, value, unit: str = "") -> None:
    """Show a figure; in a notebook, tagged in the output's metadata as ``HEADLINE_KEY``."""
    _tagged(HEADLINE_KEY, label, f"{format_value(value)} {unit}".strip())


def skipped(what: str, why: str) -> None:
    """Say what this run cannot show and why (``what: not shown (why)``); in a notebook,
    tagged as ``SKIPPED_KEY`` for the summary page."""
    if not (what.strip() and why.strip()):
        raise ValueError(
            "say what is not shown and why, e.g. skipped('the Slurm runs', 'no Slurm')"
        )
    _tagged(SKIPPED_KEY, what, f"not shown ({why})")


def _tagged(key: str, label: str, text: str) -> None:
    shell = None
    with contextlib.suppress(ImportError):
        from IPython import get_ipython
        from IPython.display import display

        shell = get_ipython()
    if shell is None:  # a plain Python process: just the line
        print(f"{label}: {text}")
        return
    figure = {key: {"label": label, "value": text}}
    display({"text/plain": f"{label}: {text}"}, raw=True, metadata=figure)


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


def format_value(value) -> str:
    """A figure as the course prints it: 4 significant digits, large floats with commas."""
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return str(value)
