"""The lesson topics: one module per topic, named after what it teaches (``placement``,
``mirrored``, ``input_pipeline``, ``models``, ``datasets``, ``model_parallel``,
``between_graph``, ``ps_workers``, ``memory``, ``lesson_sizes``). A lesson
imports one by its name from the package root (``from tflearn_helpers import placement``).
"""

__all__: list[str] = []  # the modules are imported by name
