"""What must run before TensorFlow loads: the setup call, device planning, scale profiles.

``from tflearn_helpers import runtime`` gives ``runtime.environment`` (``setup_course``),
``runtime.devices``, ``runtime.scale``, ``runtime.scratch`` (the session's temp folder) and
``runtime.startup_noise``; none of them imports
TensorFlow until a function needs it.
"""

from . import devices, environment, scale, scratch, startup_noise

__all__ = ["devices", "environment", "scale", "scratch", "startup_noise"]
