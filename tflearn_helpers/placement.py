"""Where variables live and where ops run (taught in lessons 00 and 05).

``variable_devices`` reads each variable's device. ``op_devices`` runs a function once
and reads the graphs TensorFlow actually executed, partitioned per device (the truth,
not what a ``tf.device`` scope requested). Lesson 00 also reads TensorFlow's
own placement log: ``run_with_placement_log`` runs a program file (one that turns the log
on before TensorFlow starts) in a fresh Python and ``parse_placement_log`` reads its lines.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter

from .cluster import processes

__all__ = [
    "PLACEMENT_LOG_LINE",
    "PLUMBING_OPS",
    "compute_op_counts",
    "op_devices",
    "parameters_per_device",
    "parse_placement_log",
    "run_with_placement_log",
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

    ``fn`` (eager code or a ``tf.function``) runs as a freshly traced ``tf.function``:
    TensorFlow reports the per-device graphs only when it first places a function.
    """
    import tensorflow as tf
    from tensorflow.python.eager import context  # run metadata has no public API

    fresh = tf.function(getattr(fn, "python_function", fn))
    ctx = context.context()
    ctx.enable_run_metadata()
    try:
        ctx.export_run_metadata()  # discard what earlier (eager) work left in the buffer
        fresh(*args, **kwargs)
        metadata = ctx.export_run_metadata()
    finally:
        ctx.disable_run_metadata()
    # The same per-device graphs are reported twice, per function and in a flat list.
    graphs = [g for f in metadata.function_graphs for g in f.partition_graphs]
    graphs = graphs or list(metadata.partition_graphs)
    return [(node.op, short_device(node.device)) for g in graphs for node in g.node]


def compute_op_counts(fn, *args, **kwargs) -> Counter:
    """Count the real compute ops per device (plumbing such as _Send/_Recv left out)."""
    return Counter(dev for op, dev in op_devices(fn, *args, **kwargs) if op not in PLUMBING_OPS)


def parse_placement_log(text: str) -> list[tuple[str, str, str]]:
    """(node, op type, short device) for each placement-log line in ``text``."""
    lines = (PLACEMENT_LOG_LINE.match(line.strip()) for line in text.splitlines())
    return [(m["node"], m["op"], short_device(m["device"])) for m in lines if m]


def run_with_placement_log(program, timeout: float = 120) -> list[tuple[str, str, str]]:
    """Run the Python file ``program`` in a fresh process; return its placement log.

    TensorFlow honours ``tf.debugging.set_log_device_placement(True)`` only when it is set
    before its runtime starts, so a notebook that already ran TensorFlow cannot turn it on
    for itself: the program does (``setup_course(..., log_placement=True)``).
    """
    command = [sys.executable, os.fspath(program)]
    quiet = {"TF_CPP_MIN_LOG_LEVEL": "2"}
    with processes.start(command, env=quiet, merge_stderr=False, name=str(program)) as child:
        try:
            code = child.wait(timeout)
        except TimeoutError:
            raise TimeoutError(f"{program} ran over {timeout:.0f} s") from None
    if code != 0:
        raise RuntimeError(f"{program} failed:\n{child.errors()[-2000:]}")
    return parse_placement_log(child.output())
