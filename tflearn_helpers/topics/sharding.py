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

from ..taught.lesson06 import transfers

__all__ = ["transfers"]
