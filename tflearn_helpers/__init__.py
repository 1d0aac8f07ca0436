"""Helpers for the tflearn course (large-scale and distributed training in TensorFlow).

The names every notebook uses come from here::

    from tflearn_helpers import setup_course, pick, headline, check

Anything else is a module, used by its full name (``from tflearn_helpers import mirrored``,
then ``mirrored.make_train_step``). Importing this package never imports TensorFlow:
``setup_course`` must set environment variables before TensorFlow loads.
"""

from .checks import check, ready
from .report import expect_error, headline
from .runtime.environment import setup_course
from .runtime.scale import pick

__version__ = "0.1.0"

#: The GitHub repository of the course, the one place its slug is written.
#: Colab badges and the Colab install line in every notebook are stamped from it
#: (tools/stamp_headers.py) and checked against it (tests/test_notebook_contract.py).
REPO_SLUG = "tflearn-course/tflearn"


__all__ = [
    "REPO_SLUG",
    "check",
    "expect_error",
    "headline",
    "pick",
    "ready",
    "setup_course",
    "__version__",
]
