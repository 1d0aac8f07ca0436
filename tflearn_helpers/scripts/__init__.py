"""Programs the lessons start as separate processes (cluster tasks, coordinators).

They ship inside the package, so ``pip install`` (as on Colab) brings them too.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FOLDER", "path"]

FOLDER = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """The file of the lesson script ``name`` (e.g. "multi_worker_train.py")."""
    found = FOLDER / name
    if "/" in name or not name.endswith(".py") or not found.is_file():
        known = sorted(p.name for p in FOLDER.glob("*.py") if p.name != "__init__.py")
        raise FileNotFoundError(f"no lesson script {name!r}; the scripts are {known}")
    return found
