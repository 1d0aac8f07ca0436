"""Lesson 06's communication read from a traced step: what its graph copies between devices.

A ``tf.function`` traced under ``MirroredStrategy`` is one graph for all replicas, each op
placed on a device. Wherever an op on one device reads a tensor made on another, TensorFlow
copies it (a Send/Recv pair when it partitions the graph), once per tensor and device.
``ReductionToOneDevice`` and ``reduce_to`` (lesson 06's ZeRO) move data only this way.
Lesson 06 writes ``transfers`` and reads its ZeRO steps with it; exercise 06.1's check reads
the learner's step with this copy. It compares devices by type and index, the devices of one
process; collective ops (between processes, or NCCL's) are not counted, nor copies of the
function's own inputs (their placeholders carry no device).
"""

from __future__ import annotations

__all__ = ["transfers"]


def transfers(function):
    """Every copy between devices in the traced graph of ``function`` (a concrete function:
    ``step.get_concrete_function(...)``), as ``(op name, bytes)``. The lesson's code."""
    import tensorflow as tf

    if not hasattr(getattr(function, "graph", None), "captures"):
        raise TypeError(
            "transfers() reads a traced graph: pass step.get_concrete_function(...), "
            f"got {type(function).__name__}"
        )
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
