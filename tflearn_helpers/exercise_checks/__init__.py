"""One module per lesson: ``lessonNN.py`` registers that lesson's checks (see checks.py)."""
