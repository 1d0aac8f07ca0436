"""What must run before TensorFlow loads: the setup call, device planning, scale profiles.

``from tflearn_helpers import runtime`` gives ``runtime.environment`` (``setup_course``),
``runtime.devices``, ``runtime.scale``, ``runtime.scratch`` (the session's temp folder) and
``runtime.startup_noise``; none of them imports
TensorFlow until a function needs it. ``runtime.doctor`` (``python -m tflearn_helpers doctor``:
is this machine ready to run the course?) is imported only by the command line.
"""

from . import devices, environment, scale, scratch, startup_noise

__all__ = ["devices", "environment", "scale", "scratch", "startup_noise"]
