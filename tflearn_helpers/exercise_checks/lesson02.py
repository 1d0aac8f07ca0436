"""Checks for lesson 02's exercises (ParameterServerStrategy and ClusterCoordinator).

Hints say what is wrong with an answer, never what the right one is.
"""

from __future__ import annotations

from ..checks import exercise


@exercise("02.1")
def sharded_embedding(variable):
    """A [12, 4] variable created under a strategy that shards it over three ps tasks."""
    pieces = getattr(variable, "variables", None)
    if not hasattr(variable, "shape"):
        return f"pass the variable itself, not a {type(variable).__name__}"
    if tuple(variable.shape) != (12, 4):
        return f"the exercise asks for a 12 x 4 variable; yours is {tuple(variable.shape)}"
    if not pieces:
        return "this variable is in one piece: create it under a strategy with a partitioner"
    if len(pieces) != 3:
        return f"it is cut into {len(pieces)} pieces; the exercise asks for one per ps task"
    tasks = [v.device.split("/device")[0] for v in pieces]
    if not all("/job:ps/" in t for t in tasks):
        return "a piece is not on a parameter server: was it created under strategy.scope()?"
    if len(set(tasks)) != len(tasks):
        return "two pieces share a parameter server; each ps task should hold one"
    if sum(v.shape[0] for v in pieces) != 12:
        return "the pieces' rows do not add up to the whole variable"
    return None


@exercise("02.2")
def steps_per_worker(count_steps, coordinator):
    """count_steps(coordinator, steps) schedules ``steps`` steps, returns steps per worker."""
    if not callable(count_steps):
        return "pass your function count_steps, not its result"
    if not hasattr(coordinator, "schedule"):
        return "pass the ClusterCoordinator as the second argument of check()"
    steps = 24
    counts = count_steps(coordinator, steps)
    try:
        counts = [int(n) for n in counts]
    except (TypeError, ValueError):
        return f"count_steps should return one whole number per worker, got {counts!r}"
    workers = _num_workers(coordinator)
    if len(counts) != workers:
        return f"got {len(counts)} counts for a cluster of {workers} workers"
    if min(counts) < 0:
        return "a negative count: count executions, do not subtract"
    if sum(counts) != steps:
        return (
            f"asked for {steps} steps, your counts add up to {sum(counts)}: count only the steps "
            "this call scheduled, and wait until they have all finished before reading"
        )
    return None


@exercise("02.3")
def reexecution_bound(answer):
    """The most extra executions the scenario in the solution notebook allows."""
    if isinstance(answer, bool) or not isinstance(answer, int):
        return "answer with a whole number of executions"
    if answer == 5:
        return "the bound counts interruptions, not the workers in the cluster"
    if answer == 2:
        return "a worker that dies twice can interrupt a step each time"
    if answer != 3:
        return "count, for each failure, how many steps the dead worker could have been running"
    return None


def _num_workers(coordinator) -> int:
    return len(coordinator._cluster.workers)  # the same list the coordinator dispatches to
