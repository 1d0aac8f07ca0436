"""Generated from lesson 06 by tools/save_taught.py: edit the lesson, then run it.

The lesson: notebooks/06_sharding_and_memory.ipynb.
Each definition is the lesson's, with the lesson's imports of what it uses inside its body.
"""

__all__ = ["transfers"]


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
