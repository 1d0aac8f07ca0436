"""Repository-wide pytest hooks: every executed notebook must leave nothing running.

For each notebook nbval runs, the processes and listening ports present before its first
cell are compared with those still there after its kernel shut down.
"""

from __future__ import annotations

import pytest

from tflearn_helpers import leftovers

_before: dict[str, leftovers.Snapshot] = {}


def _notebook(item) -> str | None:
    path = str(getattr(item, "path", item.fspath))
    return path if path.endswith(".ipynb") else None


def pytest_runtest_setup(item):
    nb = _notebook(item)
    if nb and nb not in _before:
        _before[nb] = leftovers.snapshot()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # nbval shuts the kernel down here when the notebook's last cell is done
    nb = _notebook(item)
    if nb and (nextitem is None or _notebook(nextitem) != nb):
        left = leftovers.leftovers(_before[nb])
        if left:
            leftovers.kill(_before[nb])
            pytest.fail(f"{nb} left these running after its kernel stopped: {left}")
