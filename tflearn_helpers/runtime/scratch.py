"""The session's scratch folder: where every temporary file of a notebook goes.

``setup_course`` calls :func:`claim`: it makes ``tflearn-session-<pid>-*`` in the temp folder
and points ``TMPDIR`` (and ``tempfile``) at it, so the lesson's ``tempfile.mkdtemp()``, the
programs it starts (they inherit ``TMPDIR``: workers, Slurm tasks) and TensorFlow's own
files (autograph's generated modules) all land inside. The folder is removed when the
kernel exits (this module's exit hook is the package's first, so it runs after every
other: after the children are stopped). A kernel that was killed cannot clean up: the next
:func:`claim` on the machine removes every session folder whose process is gone.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["PREFIX", "claim", "sweep"]

PREFIX = "tflearn-session-"
_CLAIMED: dict[int, Path] = {}  # pid -> its folder (a forked child is not its parent)


def claim() -> Path:
    """This process's scratch folder, made once and set as its temp folder and its
    children's (``TMPDIR``); stale sessions of dead processes are removed first."""
    pid = os.getpid()
    if pid in _CLAIMED:
        return _CLAIMED[pid]
    base = Path(tempfile.gettempdir())
    sweep(base)
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{pid}-", dir=base))
    _CLAIMED[pid] = folder
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = str(folder)
    return folder


def sweep(base: Path) -> list[Path]:
    """Remove the session folders in ``base`` whose process no longer runs; what it removed."""
    removed = []
    for folder in base.glob(f"{PREFIX}*"):
        pid = folder.name.removeprefix(PREFIX).split("-")[0]
        if pid.isdigit() and not _alive(int(pid)) and folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@atexit.register  # registered when the package is imported: it runs after every later hook
def _remove() -> None:
    folder = _CLAIMED.pop(os.getpid(), None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
