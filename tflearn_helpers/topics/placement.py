"""Where variables live and where ops run (taught in lessons 00 and 03).

``variable_devices`` reads each variable's device. ``executed_nodes`` (lesson 00 writes it)
runs a function once and reads the graphs TensorFlow actually executed, partitioned per device
(the truth, not what a ``tf.device`` scope requested); ``op_devices`` and ``compute_op_counts``
summarise them. ``parse_placement_log`` reads the lines of
TensorFlow's own placement log, which a program turns on before its runtime starts (lesson 00
writes one; exercise 00.5's check reads the learner's).
"""

from __future__ import annotations

import re
from collections import Counter

from ..taught.lesson00 import executed_nodes

__all__ = [
    "compute_op_counts",
    "executed_nodes",
    "op_devices",
    "parameters_per_device",
    "parse_placement_log",
    "short_device",
    "variable_devices",
]

#: Bookkeeping nodes TensorFlow adds around the real work; left out of summaries.
PLUMBING_OPS = frozenset(
    {
        "_Arg",
        "_Retval",
        "_Send",
        "_Recv",
        "_HostSend",
        "_HostRecv",
        "Const",
        "NoOp",
        "Identity",
        "_DeviceArg",
        "_DeviceRetval",
        "ReadVariableOp",
        "VarHandleOp",
        "_EagerConst",  # an eager op's constant input
    }
)
#: One line of TensorFlow's placement log: ``node: (OpType): /job:.../device:CPU:0``.
PLACEMENT_LOG_LINE = re.compile(r"^(?P<node>\S+): \((?P<op>\w+)\): (?P<device>/job:\S+)$")


def short_device(name: str) -> str:
    """'/job:localhost/replica:0/task:0/device:CPU:1' -> 'CPU:1'; keeps job/task off localhost."""
    if not name:
        return "(unplaced)"
    kind = name.rsplit("device:", 1)[-1] if "device:" in name else ""
    job = re.search(r"/job:([^/]+)", name)
    task = re.search(r"/task:(\d+)", name)
    if job and job.group(1) != "localhost":
        where = f"{job.group(1)}:{task.group(1) if task else 0}"
        return f"{where}/{kind}" if kind else where
    return kind or name


def variable_devices(obj) -> list[tuple[str, str, str]]:
    """(name, shape, device) of every variable of a model, layer, optimizer or list."""
    variables = getattr(obj, "variables", obj)
    variables = variables() if callable(variables) else variables
    return [(getattr(v, "path", v.name), str(tuple(v.shape)), _device(v)) for v in variables]


def parameters_per_device(obj) -> Counter:
    """How many parameters (scalars) live on each device, read from each variable's device."""
    variables = getattr(obj, "variables", obj)
    variables = variables() if callable(variables) else variables
    counts = Counter()
    for variable in variables:
        size = 1
        for dim in variable.shape:
            size *= int(dim)
        counts[_device(variable)] += size
    return counts


def _device(variable) -> str:
    """A variable's device; a Keras 3 variable keeps it on its backend ``value``."""
    device = getattr(variable, "device", None)
    return short_device(device if device is not None else variable.value.device)


def op_devices(fn, *args, **kwargs) -> list[tuple[str, str]]:
    """Run ``fn`` once and return (op type, device) for every node that executed.

    ``fn`` (eager code or a ``tf.function``) runs as a freshly traced ``tf.function``, so
    TensorFlow reports its per-device graphs (see :func:`executed_nodes`).
    """
    import functools

    import tensorflow as tf

    fresh = tf.function(functools.partial(getattr(fn, "python_function", fn), **kwargs))
    return [(node.op, short_device(node.device)) for node in executed_nodes(fresh, *args)]


def compute_op_counts(fn, *args, **kwargs) -> Counter:
    """Count the real compute ops per device (plumbing such as _Send/_Recv left out)."""
    return Counter(dev for op, dev in op_devices(fn, *args, **kwargs) if op not in PLUMBING_OPS)


def parse_placement_log(text: str) -> list[tuple[str, str, str]]:
    """(node, op type, short device) for each placement-log line in ``text``."""
    lines = (PLACEMENT_LOG_LINE.match(line.strip()) for line in text.splitlines())
    return [(m["node"], m["op"], short_device(m["device"])) for m in lines if m]
