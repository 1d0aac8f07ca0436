"""Checks for exercises 01 (parameter servers in the Estimator era)."""

from __future__ import annotations

import random

from .. import tfconfig
from ..checks import exercise


@exercise("01.1")
def ps_of_logits_kernel(answer):
    from ..ps_legacy import placement

    if not isinstance(answer, str) or not answer.startswith("ps:"):
        return "answer with a task name like 'ps:0', as in the lesson's placement table"
    where = {name: device for name, _, device, _ in placement(num_ps=3)}
    if answer != where["logits/kernel"]:
        return (
            "round-robin follows creation order, and the global step is created first: "
            "count the variables created before logits/kernel"
        )
    return None


@exercise("01.2")
def staleness_function(fn):
    from ..ps_run import WorkerLog

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


@exercise("01.3")
def evaluator_tf_config(answer):
    try:
        config = tfconfig.validate(answer)
    except tfconfig.TFConfigError as err:
        return f"TF_CONFIG is not valid: {err}"
    cluster = config["cluster"]
    if {"chief", "worker", "ps", "evaluator"} - set(cluster):
        return "the cluster must list the chief, the workers, the ps and the evaluator"
    if len(cluster["worker"]) != 2 or len(cluster["ps"]) != 1:
        return "the exercise's cluster has 2 workers and 1 ps task"
    if config["task"].get("type") != "evaluator":
        return "this TF_CONFIG is for the evaluator task: check its task type"
    return None
