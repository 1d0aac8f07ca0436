"""Repository-wide pytest hooks for the notebooks nbval runs.

- Every executed notebook must leave nothing running: the processes and listening ports
  present before its first cell are compared with those still there after its kernel shut
  down.
- Each notebook's wall time is recorded and printed at the end of the run.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import leftovers  # noqa: E402  (tools/leftovers.py: repository tooling, not in the wheel)

_before: dict[str, leftovers.Snapshot] = {}
_started: dict[str, float] = {}
_seconds: dict[str, float] = {}
_scale_at_start: list[str | None] = []


def _notebook(item) -> str | None:
    path = str(getattr(item, "path", item.fspath))
    return path if path.endswith(".ipynb") else None


def pytest_sessionstart(session):
    _scale_at_start.append(os.environ.get("TFLEARN_SCALE"))


def pytest_runtest_setup(item):
    nb = _notebook(item)
    if nb and os.environ.get("TFLEARN_SCALE") != _scale_at_start[0]:
        pytest.fail(f"a test changed TFLEARN_SCALE to {os.environ.get('TFLEARN_SCALE')!r}")
    if nb and nb not in _before:
        _before[nb] = leftovers.snapshot()
        _started[nb] = time.monotonic()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # nbval shuts the kernel down here when the notebook's last cell is done
    nb = _notebook(item)
    if nb and (nextitem is None or _notebook(nextitem) != nb):
        _seconds[nb] = time.monotonic() - _started[nb]
        left = leftovers.leftovers(_before[nb])
        if left:
            leftovers.kill(_before[nb])
            pytest.fail(f"{nb} left these running after its kernel stopped: {left}")


def pytest_terminal_summary(terminalreporter):
    if _seconds:
        terminalreporter.section("notebook wall times (kernel start to shutdown)")
        for nb, seconds in _seconds.items():
            terminalreporter.write_line(f"{seconds:7.1f} s  {os.path.relpath(nb)}")
        terminalreporter.write_line(f"{sum(_seconds.values()):7.1f} s  in all")
