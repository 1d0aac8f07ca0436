"""Checks for exercises 01 (parameter servers in the Estimator era)."""

from __future__ import annotations

import random

from ..checks import exercise
from ..cluster import tf_config

__all__ = [
    "evaluator_tf_config",
    "ps_of_logits_kernel",
    "staleness_function",
    "worker_graph_placement",
]


@exercise("01.4")
def ps_of_logits_kernel(answer):
    from ..between_graph import placement

    if not isinstance(answer, str) or not answer.startswith("ps:"):
        return "answer with a task name like 'ps:0', as in the lesson's placement table"
    where = {name: device for name, _, device, _ in placement(num_ps=3)}
    if answer != where["logits/kernel"]:
        return (
            "round-robin follows creation order, and the global step is created first: "
            "count the variables created before logits/kernel"
        )
    return None


@exercise("01.3")
def staleness_function(fn):
    from ..between_graph_runs import WorkerLog

    if not callable(fn):
        return "pass your function itself: staleness(before, after) -> list of ints"
    rng = random.Random(1)
    for case in range(20):
        before = sorted(rng.randrange(0, 50) for _ in range(case + 1))
        after = [b + 1 + rng.randrange(0, 4) for b in before]
        expected = WorkerLog(0, before=before, after=after).staleness
        got = list(fn(before, after))
        if len(got) != len(expected):
            return "return one staleness value per step (as many as there are reads)"
        if got != expected:
            if got == [a - b for b, a in zip(before, after, strict=True)]:
                return "the worker's own update is included in after - before: subtract it"
            return "staleness counts the updates *other* workers applied between the two reads"
    return None


@exercise("01.2")
def evaluator_tf_config(answer):
    try:
        config = tf_config.validate(answer)
    except tf_config.TFConfigError as err:
        return f"TF_CONFIG is not valid: {err}"
    cluster = config["cluster"]
    missing = sorted({"chief", "worker", "ps", "evaluator"} - set(cluster))
    if missing:
        return f'TF_CONFIG["cluster"] has no "{missing[0]}" job; the exercise\'s cluster has one'
    for job, count in (("worker", 2), ("ps", 1)):
        if len(cluster[job]) != count:
            return f'TF_CONFIG["cluster"]["{job}"] has {len(cluster[job])} address(es): count again'
    if config["task"].get("type") != "evaluator":
        return 'TF_CONFIG["task"]["type"] is not the role this process plays'
    return None


@exercise("01.1")
def worker_graph_placement(build_worker_graph):
    """build_worker_graph(cluster, task) builds one worker's graph; run it and look."""
    import tensorflow as tf

    if not callable(build_worker_graph):
        return "pass your function build_worker_graph itself, not its result"
    spec = tf.train.ClusterSpec({"ps": [f"localhost:{p}" for p in (1, 2, 3)], "worker": _WORKERS})
    graph = tf.Graph()
    with graph.as_default():
        build_worker_graph(spec, 1)
        variables = tf.compat.v1.global_variables()
    if not variables:
        return "no variables were created: the model needs weights (tf.compat.v1.get_variable)"
    for variable in variables:
        if tf.DeviceSpec.from_string(variable.device).job != "ps":
            return (
                f"variable {variable.op.name} is on '{variable.device or 'no device'}', not on a "
                "ps task: create the variables inside the device function's scope"
            )
    used = {tf.DeviceSpec.from_string(v.device).task for v in variables}
    if len(variables) > 1 and len(used) < 2:
        return "all the variables sit on one ps task: tell the device setter about the cluster"
    compute = [op for op in graph.get_operations() if "MatMul" in op.type]
    if not compute:
        return "nothing is computed: the worker's forward pass should multiply by the weights"
    for op in compute:
        device = tf.DeviceSpec.from_string(op.device)
        if (device.job, device.task) != ("worker", 1):
            return (
                f"{op.name} is placed on '{op.device or 'no device'}', not on the worker whose "
                "graph this is: which argument of the device setter names it?"
            )
    return None


_WORKERS = ["localhost:4", "localhost:5"]
