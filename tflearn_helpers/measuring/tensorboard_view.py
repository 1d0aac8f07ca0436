"""TensorBoard inside a notebook, on a server that ends with the kernel (lesson 01).

TensorBoard's own ``%tensorboard`` magic starts a server that outlives the kernel. ``show``
starts one with :mod:`..programs.processes` instead (stopped at kernel exit, kill included),
listening on 127.0.0.1 only (TensorBoard has no authentication: anyone who reaches the port
reads the logs), and draws it with TensorBoard's own ``tensorboard.notebook.display``.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import portpicker

from ..programs import processes

__all__ = ["show"]


@dataclass(frozen=True)
class Board:
    """A TensorBoard ``show`` started: its port on 127.0.0.1, and its server process
    (``server.stop()`` ends it, as the kernel's exit does)."""

    port: int
    server: processes.Child


def show(logdir, *, height: int = 560, timeout: float = 120.0) -> Board:
    """Serve ``logdir`` with TensorBoard, draw it in the notebook, return the :class:`Board`."""
    folder = Path(logdir)
    if not folder.is_dir():
        raise FileNotFoundError(f"no log folder {folder}: write summaries there first")
    port = portpicker.pick_unused_port()
    command = [sys.executable, "-m", "tensorboard.main", "--logdir", str(folder.resolve()),
               "--host", "127.0.0.1", "--port", str(port), "--reload_interval", "1"]  # fmt: skip
    server = processes.start(command, name="tensorboard")
    what = f"TensorBoard to find the runs in {folder} (are there summaries in it?)"
    processes.wait_until(lambda: _runs(port), timeout, what, depends_on=[server])
    from tensorboard import notebook

    notebook.display(port=port, height=height)
    print(f"TensorBoard on http://127.0.0.1:{port} (this machine only; it stops with the kernel).")
    print(f"Outside a notebook: tensorboard --logdir {folder}")
    return Board(port, server)


def _runs(port: int) -> list:
    """The runs TensorBoard has loaded so far (none until it answers and has read the folder)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/runs", timeout=2) as reply:
            return json.load(reply)
    except OSError:
        return []
