"""Code the lessons teach, one generated file per lesson (``lessonNN.py``, written by
tools/save_taught.py from the lesson's ``# @save`` lines): edit the lesson, never these files.
The course uses each name from the module its marker names (``topics.mirrored``, ...)."""

__all__: list[str] = []
