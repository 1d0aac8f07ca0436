"""Scale profiles: how much work a notebook does (taught in lesson 00).

``smoke`` is for CI and tests (each notebook well under a minute on 2 CPU cores),
``cpu`` for a laptop (a few minutes, results that mean something), ``gpu`` for real
accelerators. Pick one with ``TFLEARN_SCALE`` or ``setup_course(scale=...)``.
"""

from __future__ import annotations

import os

__all__ = ["current", "pick", "resolve", "set_current"]

PROFILES = ("smoke", "cpu", "gpu")
ENV_VAR = "TFLEARN_SCALE"

_current: str | None = None


def resolve(requested: str | None, has_gpu: bool) -> str:
    """The profile to use: the keyword, else ``$TFLEARN_SCALE``, else gpu/cpu by hardware."""
    name = requested or os.environ.get(ENV_VAR) or ("gpu" if has_gpu else "cpu")
    name = name.strip().lower()
    if name not in PROFILES:
        source = "scale=" if requested else f"${ENV_VAR}="
        raise ValueError(
            f"Unknown scale profile {source}{name!r}. Choose one of {', '.join(PROFILES)} "
            f"(smoke: CI, seconds; cpu: a laptop, minutes; gpu: real accelerators)."
        )
    return name


def set_current(name: str) -> None:
    """Record the active profile (called by the setup cell) and export it to subprocesses."""
    global _current
    _current = resolve(name, has_gpu=False)
    os.environ[ENV_VAR] = _current


def current() -> str:
    """The active profile: the one set up, else ``$TFLEARN_SCALE``, else ``cpu``."""
    return _current or resolve(None, has_gpu=False)


def pick(*, smoke, cpu, gpu):
    """Return the value for the active profile: ``steps = pick(smoke=5, cpu=50, gpu=500)``."""
    return {"smoke": smoke, "cpu": cpu, "gpu": gpu}[current()]
