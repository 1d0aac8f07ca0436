"""Argument checks shared by the helpers: one wording for one mistake."""

from __future__ import annotations

import numbers
import re

__all__ = [
    "WholeNumberError",
    "container_command",
    "counts",
    "dns_label",
    "is_whole_number",
    "whole_number",
]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


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


def counts(**values) -> None:
    """Check that every keyword's value is a whole number >= 1 (a batch, a device count)."""
    for name, value in values.items():
        whole_number(name, value, minimum=1)


def dns_label(name) -> str:
    """Return ``name``, or raise: a Kubernetes object name is a DNS label."""
    if not isinstance(name, str) or not _DNS_LABEL.match(name):
        raise ValueError(f"name must be a DNS label (a-z, 0-9, '-', <= 63 chars), got {name!r}")
    return name


def container_command(image, command) -> None:
    """Raise unless ``image`` names a container image and ``command`` is a list of strings."""
    if not isinstance(image, str) or not image.strip():
        raise ValueError("image must be a container image name, e.g. 'registry/tflearn:1.0'")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise ValueError(f"command must be a non-empty list of strings, got {command!r}")
