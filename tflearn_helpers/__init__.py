"""Helpers for the tflearn course (large-scale and distributed training in TensorFlow).

Each module names the lesson that teaches it. Importing this package never imports
TensorFlow: the setup call must set environment variables before TensorFlow loads.
"""

__version__ = "0.1.0"

#: The GitHub repository of the course, the one place its slug is written.
#: Colab badges and the Colab install line in every notebook are stamped from it
#: (tools/stamp_headers.py) and checked against it (tests/test_notebook_contract.py).
REPO_SLUG = "tflearn-course/tflearn"


def setup_course(*args, **kwargs):
    """Configure TensorFlow for a lesson; see :func:`tflearn_helpers.environment.setup_course`."""
    from .environment import setup_course as _setup

    return _setup(*args, **kwargs)


__all__ = ["REPO_SLUG", "setup_course", "__version__"]
