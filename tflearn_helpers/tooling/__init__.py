"""Repository tooling, not lesson material: the course runner and the leftover-process check.

Both work from an installed wheel (``python -m tflearn_helpers course``).
"""

from . import course, leftovers

__all__ = ["course", "leftovers"]
