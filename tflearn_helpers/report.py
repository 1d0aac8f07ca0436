"""Printing results: plain-text tables and headline figures (used by every lesson).

A headline is a figure a lesson wants on the course's summary page (``make course``):
``headline("images/s on 4 devices", 123.4)`` prints it and, when the course runner
set ``TFLEARN_HEADLINES``, appends it to that JSON-lines file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

HEADLINES_ENV = "TFLEARN_HEADLINES"


def format_table(rows: Iterable[Sequence], headers: Sequence[str]) -> str:
    """A fixed-width text table (readable in notebooks, logs and HTML alike)."""
    cells = [[_fmt(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        if len(row) != len(headers):
            raise ValueError(f"row {row} has {len(row)} cells, headers have {len(headers)}")
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)), line]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(out)


def print_table(rows: Iterable[Sequence], headers: Sequence[str]) -> None:
    print(format_table(rows, headers))


def headline(label: str, value, unit: str = "") -> None:
    """Print a figure and record it for the course summary page."""
    text = f"{_fmt(value)} {unit}".strip()
    print(f"{label}: {text}")
    path = os.environ.get(HEADLINES_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"label": label, "value": text}) + "\n")


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return str(value)
