"""Starting a program and hearing its events (every process a lesson or a helper starts).

``from tflearn_helpers import programs`` gives ``programs.start`` (one program, stopped at
kernel exit; ``programs.processes.start``), ``programs.events`` (the one line protocol from a
child program, ``TFLEARN_EVENT {json}``), ``programs.processes`` (start, wait for and stop a
process), ``programs.fork_server`` (Python programs started as forks of a process that
imported TensorFlow) and ``programs.child_setup`` (what a child does before it runs).
"""

from . import child_setup, events, fork_server, processes
from .processes import start

__all__ = ["child_setup", "events", "fork_server", "processes", "start"]
