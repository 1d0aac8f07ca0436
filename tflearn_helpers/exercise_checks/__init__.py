"""One module per lesson: ``lessonNN.py`` registers that lesson's checks (see checks.py)."""

__all__: list[str] = []  # the lesson modules are imported by name, when a check needs them
