"""Measuring programs and reporting: ``timing`` (timed steps), ``timeline`` (per-device Gantt
charts), ``memory_probe`` (measured peaks), ``cpu_speed`` (oneDNN on and off),
``precision`` (mixed precision timed), ``tensorboard_view`` (TensorBoard in the notebook) and
``report`` (headlines, demonstrated errors, tables). A lesson imports one by its name from
the package root (``from tflearn_helpers import timeline``).
"""

__all__: list[str] = []  # the modules are imported by name
