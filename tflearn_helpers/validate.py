"""Argument checks shared by the helpers: one wording for one mistake."""

from __future__ import annotations

import numbers

__all__ = ["WholeNumberError", "is_whole_number", "whole_number"]


class WholeNumberError(ValueError, TypeError):
    """A count that is not a whole number in range (both a ValueError and a TypeError)."""


def is_whole_number(value) -> bool:
    """True for ints and NumPy integers; False for bools, floats and everything else."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def whole_number(
    name: str, value, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return ``value`` as an int, or raise saying which whole numbers ``name`` accepts."""
    low = minimum is None or (is_whole_number(value) and value >= minimum)
    high = maximum is None or (is_whole_number(value) and value <= maximum)
    if is_whole_number(value) and low and high:
        return int(value)
    if minimum is not None and maximum is not None:
        wanted = f"a whole number from {minimum} to {maximum}"
    elif minimum is not None:
        wanted = f"a whole number >= {minimum}"
    elif maximum is not None:
        wanted = f"a whole number <= {maximum}"
    else:
        wanted = "a whole number"
    raise WholeNumberError(f"{name} must be {wanted}, got {value!r}")
