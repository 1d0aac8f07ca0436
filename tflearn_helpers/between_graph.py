"""TF1 parameter-server graphs: a worker's model and where its parts go (lesson 01).

Each worker builds its own ``tf.Graph`` (between-graph replication): ``replica_device_setter``
puts the variables on the ps tasks (round-robin in creation order) and the compute on that
worker's device. This module builds that graph, reports the placement, gives non-chief
workers a session that polls quickly for the chief and traces which device really ran
which op (lesson 01 writes the training program itself).
:mod:`tflearn_helpers.between_graph_runs` runs the workers and measures them.
"""

from __future__ import annotations

import json

import numpy as np

from . import datasets

__all__ = [
    "CLASSES",
    "FEATURES",
    "HIDDEN",
    "build_model",
    "bytes_per_task",
    "make_data",
    "placement",
    "quick_worker_session_creator",
    "short_device",
    "traced_ops",
]

FEATURES, HIDDEN, CLASSES = 20, 32, 4


def make_data(seed: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """A learnable batch of the lesson's sizes (datasets.teacher_classes), int64 labels."""
    x, y = datasets.teacher_classes(batch, FEATURES, CLASSES, seed=seed)
    return x, y.astype(np.int64)


def build_model(task_index: int, num_ps: int, *, lr: float = 0.2, ps_strategy=None):
    """Build one worker's asynchronous graph (call inside ``graph.as_default()``).

    The same layers as lesson 01's worker program: variables placed on the ps tasks by
    ``replica_device_setter``, compute on this worker. Returns a dict of its tensors and ops.
    """
    import tensorflow as tf

    v1 = tf.compat.v1
    if num_ps < 1 or task_index < 0:
        raise ValueError(f"need num_ps >= 1 and task_index >= 0; got {num_ps}, {task_index}")
    setter = v1.train.replica_device_setter(
        ps_tasks=num_ps, worker_device=f"/job:worker/task:{task_index}", ps_strategy=ps_strategy
    )
    with v1.device(setter):
        step = v1.train.get_or_create_global_step()
        x = v1.placeholder(tf.float32, [None, FEATURES], name="x")
        y = v1.placeholder(tf.int64, [None], name="y")
        init = v1.glorot_uniform_initializer(seed=1)
        w1 = v1.get_variable("hidden/kernel", [FEATURES, HIDDEN], initializer=init)
        b1 = v1.get_variable("hidden/bias", [HIDDEN], initializer=v1.zeros_initializer())
        w2 = v1.get_variable("logits/kernel", [HIDDEN, CLASSES], initializer=init)
        b2 = v1.get_variable("logits/bias", [CLASSES], initializer=v1.zeros_initializer())
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train_op = v1.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)
    return {"x": x, "y": y, "loss": loss, "train_op": train_op, "step": step}


def quick_worker_session_creator(
    target: str, config, poll_s: float = 0.2, max_wait_s: float = 60.0
):
    """A non-chief session creator that checks for the chief's initialisation every
    ``poll_s`` seconds (``WorkerSessionCreator`` and ``MonitoredTrainingSession`` use
    ``SessionManager``'s default of 30 s and do not let you change it)."""
    import tensorflow as tf

    v1 = tf.compat.v1

    class QuickWorkerSessionCreator(v1.train.SessionCreator):
        def create_session(self):
            scaffold = v1.train.Scaffold()
            scaffold.finalize()
            manager = v1.train.SessionManager(
                local_init_op=scaffold.local_init_op,
                ready_op=scaffold.ready_op,
                ready_for_local_init_op=scaffold.ready_for_local_init_op,
                recovery_wait_secs=poll_s,
            )
            return manager.wait_for_session(target, config=config, max_wait_secs=max_wait_s)

    return QuickWorkerSessionCreator()


def placement(num_ps: int, *, partitions: int = 0, ps_strategy=None) -> list[tuple]:
    """(variable, shape, device, bytes) for one worker's graph, as replica_device_setter
    placed it. ``partitions`` > 0 adds an embedding table split into that many shards."""
    import tensorflow as tf

    v1 = tf.compat.v1
    if partitions < 0:
        raise ValueError(f"partitions must be >= 0, got {partitions}")
    graph = tf.Graph()
    with graph.as_default():
        build_model(0, num_ps, ps_strategy=ps_strategy)
        if partitions:
            setter = v1.train.replica_device_setter(ps_tasks=num_ps, ps_strategy=ps_strategy)
            with v1.device(setter):
                v1.get_variable(
                    "embedding", [1000, 16], partitioner=v1.fixed_size_partitioner(partitions)
                )
        return [
            (
                v.op.name,
                tuple(v.shape.as_list()),
                short_device(v.device),
                v.shape.num_elements() * v.dtype.size,
            )
            for v in v1.global_variables()
        ]


def bytes_per_task(rows: list[tuple]) -> dict[str, int]:
    """Total variable bytes on each device of a :func:`placement` table."""
    totals: dict[str, int] = {}
    for _, _, device, size in rows:
        totals[device] = totals.get(device, 0) + size
    return dict(sorted(totals.items()))


def short_device(device: str) -> str:
    """'/job:ps/task:1/device:CPU:0' or '/job:ps/task:1' -> 'ps:1'."""
    parts = dict(p.split(":", 1) for p in device.strip("/").split("/") if ":" in p)
    return f"{parts.get('job', '?')}:{parts.get('task', '0')}"


def _op_type(node: str, label: str) -> str:
    """'MatMul = MatMul(x, w)' -> 'MatMul'; a transfer this device asked for -> 'RecvTensor'."""
    if " = " in label:
        return label.split(" = ", 1)[1].split("(", 1)[0]
    return node


def traced_ops(log_text: str) -> dict[str, list[str]]:
    """The op types each device ran in the step a worker program traced: it prints
    ``{"trace": {device: [timeline labels]}}`` (lesson 01's worker program)."""
    for line in log_text.splitlines():
        if not line.startswith('{"trace"'):
            continue
        ran: dict[str, set] = {}
        for device, labels in json.loads(line)["trace"].items():
            ops = {_op_type(label.split(" ", 1)[0], label) for label in labels}
            ran.setdefault(short_device(device), set()).update(ops - {"NoOp"})
        return {device: sorted(ops) for device, ops in sorted(ran.items())}
    return {}
