"""Helpers for the tflearn course (large-scale and distributed training in TensorFlow).

The names every notebook uses come from here::

    from tflearn_helpers import setup_course, pick, headline, check

Anything else is a module, used by its full name (``from tflearn_helpers import mirrored``,
then ``mirrored.make_train_step``). Importing this package never imports TensorFlow:
``setup_course`` must set environment variables before TensorFlow loads.

The modules are grouped by their job: ``runtime/`` (what runs before TensorFlow loads),
``programs/`` (starting a program, hearing its events), ``cluster/`` (TF clusters, Slurm,
Kubernetes, the shaped link), ``measuring/`` (timing, memory, reports), ``checks/`` (exercise
feedback), ``topics/`` (the lesson topics), ``taught/`` (generated from the lessons) and
``scripts/`` (programs lessons start). A lesson names a module of ``topics/`` or ``measuring/``
by its own name (``from tflearn_helpers import placement``): this package imports it on first
use.
"""

from .checks import check, ready
from .measuring.report import expect_error, headline, skipped
from .runtime.environment import setup_course
from .runtime.scale import pick

__version__ = "0.1.0"

#: The GitHub repository of the course, the one place its slug is written.
#: Colab badges and the Colab install line in every notebook are stamped from it
#: (tools/stamp_headers.py) and checked against it (tests/test_notebook_contract.py).
REPO_SLUG = "tflearn-course/tflearn"

#: Module -> the subpackage it lives in, for the modules lessons name from the package root.
_BY_NAME = {
    **dict.fromkeys(
        ["between_graph", "ps_workers", "datasets", "input_pipeline"]
        + ["lesson_sizes", "memory", "mirrored", "model_parallel", "models", "placement"],
        "topics",
    ),
    **dict.fromkeys(
        ["cpu_speed", "memory_probe", "precision", "report", "tensorboard_view", "timeline"]
        + ["timing"],
        "measuring",
    ),
}


def __getattr__(name: str):
    """A module of ``topics/`` or ``measuring/``, imported on its first use (PEP 562)."""
    if name in _BY_NAME:
        import importlib

        module = importlib.import_module(f"{__name__}.{_BY_NAME[name]}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_BY_NAME])


__all__ = [
    "REPO_SLUG",
    "check",
    "expect_error",
    "headline",
    "pick",
    "ready",
    "setup_course",
    "skipped",
    "__version__",
]
