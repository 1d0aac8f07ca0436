"""Generated from lesson 06 by tools/save_taught.py: edit the lesson, then run it.

The lesson: notebooks/06_sharding_and_memory.ipynb.
SETUP: its setup cell's settings; SIZES: each pick(smoke=..., cpu=..., gpu=...) it makes.
Each definition is the lesson's, with the lesson's imports of what it uses inside its body.
"""

__all__ = ["SETUP", "SIZES", "transfers"]

SETUP = {"devices": 2}
SIZES = {
    "SHAPE": {
        "smoke": {"vocab": 256, "seq": 128, "width": 64, "heads": 4, "blocks": 2},
        "cpu": {"vocab": 512, "seq": 256, "width": 128, "heads": 4, "blocks": 4},
        "gpu": {"vocab": 512, "seq": 256, "width": 128, "heads": 4, "blocks": 4},
    },
    "PROBE_BATCH": {"smoke": 8, "cpu": 8, "gpu": 8},
    "PROBE_STEPS": {"smoke": 2, "cpu": 5, "gpu": 5},
    "ZERO_STAGES": {"smoke": (0, "0r", 3), "cpu": (0, "0r", 1, 2, 3), "gpu": (0, "0r", 1, 2, 3)},
    "STEPS": {"smoke": 2, "cpu": 4, "gpu": 4},
}


def transfers(function):  # every copy between devices in a traced graph: (op name, bytes)
    import tensorflow as tf

    graph = function.graph
    lives = {
        inner.name: outer.device for outer, inner in graph.captures if inner.dtype == tf.resource
    }

    def device(op):  # an op on a variable runs where the variable lives
        on = [lives[t.name] for t in op.inputs if t.name in lives]
        spec = tf.DeviceSpec.from_string(on[0] if on else op.device)
        return (spec.device_type, spec.device_index) if spec.device_type else None

    copies = {}
    for op in graph.get_operations():
        for t in op.inputs:
            source, to = device(t.op), device(op)
            known = t.shape.is_fully_defined() and t.dtype not in (tf.resource, tf.variant)
            if source and to and source != to and known:
                copies.setdefault((t.name, to), (op.name, t.shape.num_elements() * t.dtype.size))
    return list(copies.values())
