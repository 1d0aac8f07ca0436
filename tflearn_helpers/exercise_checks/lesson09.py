"""Checks for lesson 09's exercises (ParameterServerStrategy and ClusterCoordinator).

Hints say what is wrong with an answer, never what the right one is.
"""

from __future__ import annotations

from .. import validate
from ..checks import exercise

__all__ = []


@exercise("09.1")
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


@exercise("09.2")
def per_worker_training(answer, coordinator, spec, steps=30):
    """(dataset_fn, make_train_step): run them on the learner's cluster (``spec``, driven by
    ``coordinator``) for ``steps`` steps."""
    import tensorflow as tf

    from ..models import regression_model

    if not isinstance(answer, tuple | list) or len(answer) != 2:
        return "pass the pair (dataset_fn, make_train_step)"
    dataset_fn, make_train_step = answer
    if not (callable(dataset_fn) and callable(make_train_step)):
        return "pass the two functions themselves, not what they return"
    if not hasattr(coordinator, "create_per_worker_dataset"):
        return "pass the ClusterCoordinator of exercise 09.1 as the last argument of check()"
    strategy = coordinator.strategy
    workers = len(spec["worker"])
    with strategy.scope():
        model = regression_model()
        optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
        ran = tf.Variable(tf.zeros([workers], tf.int64))  # steps each worker ran
    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    train_step = make_train_step(strategy, model, optimizer)
    if not callable(train_step):
        return "make_train_step should return the step function (a tf.function)"

    @tf.function
    def audited_step(iterator):
        loss = train_step(iterator)
        index = tf.distribute.coordinator.experimental_get_current_worker_index()
        ran.assign_add(tf.one_hot(index, workers, dtype=tf.int64))
        return loss

    results = [coordinator.schedule(audited_step, args=(iterator,)) for _ in range(steps)]
    try:
        coordinator.join()
    except tf.errors.OutOfRangeError:
        return "a worker's dataset ran out of batches: it must never end (repeat it)"
    losses = [r.fetch() for r in results]
    if any(loss is None for loss in losses):
        return "the step should return the loss that strategy.run computed"
    losses = [float(tf.reduce_mean(loss)) for loss in losses]
    if not sum(losses[-5:]) < 0.8 * sum(losses[:5]):
        return (
            f"the loss did not fall over {steps} steps: does the step apply the gradients "
            "of the model's trainable variables?"
        )
    if min(int(n) for n in ran.numpy()) < 1:
        return "a worker ran none of the steps: can every worker build your dataset?"
    return None


@exercise("09.3")
def reexecution_bound(answer):
    """The most extra executions the scenario in the solution notebook allows."""
    if not validate.is_whole_number(answer):
        return "answer with a whole number of executions"
    if answer == 5:
        return "the bound counts interruptions, not the workers in the cluster"
    if answer == 2:
        return "a worker that dies twice can interrupt a step each time"
    if answer != 3:
        return "count, for each failure, how many steps the dead worker could have been running"
    return None


MUTATIONS: dict[str, list[tuple[str, str, str]]] = {}
