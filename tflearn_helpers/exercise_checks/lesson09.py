"""Checks for lesson 09's exercises (ParameterServerStrategy and ClusterCoordinator).

The checks read what the learner's code made (the variable's pieces and where they live) and
what it did on the cluster (the loss, which workers ran steps, whether the model ran inside
``strategy.run``, whether every weight moved). Hints say what is wrong with an answer, never
what the right one is.
"""

from __future__ import annotations

import numpy as np

from .. import validate
from ..checks import exercise

__all__ = ["MUTATIONS"]


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
    outside: list[bool] = []  # per trace of the model: was it outside strategy.run?
    with strategy.scope():
        model = _watched(regression_model(), outside)
        optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
        ran = tf.Variable(tf.zeros([workers], tf.int64))  # steps each worker ran
    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    train_step = make_train_step(strategy, model, optimizer)
    if not callable(train_step):
        return "make_train_step should return the step function (a tf.function)"
    start = [v.numpy() for v in model.trainable_variables]

    @tf.function
    def audited_step(iterator):
        loss = train_step(iterator)
        index = tf.distribute.coordinator.experimental_get_current_worker_index()
        ran.assign_add(tf.one_hot(index, workers, dtype=tf.int64))
        return loss

    try:
        results = [coordinator.schedule(audited_step, args=(iterator,)) for _ in range(steps)]
        coordinator.join()
        losses = [r.fetch() for r in results]
    except tf.errors.OutOfRangeError:
        return "a worker's dataset ran out of batches: it must never end (repeat it)"
    except Exception as err:  # the learner's step can fail in any way: say how, not where
        return _raised(err)
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
    if any(outside):
        return "the model ran outside strategy.run: each step's work should run as a replica"
    if any(
        np.array_equal(v.numpy(), w) for v, w in zip(model.trainable_variables, start, strict=True)
    ):
        return "some of the model's trainable variables never changed: update all of them"
    return None


def _raised(err: Exception) -> str:
    """A hint for an error raised by the learner's step: its last line, no traceback (which
    would quote the code)."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    last = (lines[-1] if lines else "")[:200]
    if "merge_call" in last or "replica context" in last.lower():
        return (
            f"your step raised {type(err).__name__} ({last}): code that expects a replica "
            "ran without one. Which call runs a function as each replica?"
        )
    return f"your step raised {type(err).__name__}: {last}"


def _watched(model, outside: list):
    """``model`` behind a layer that notes, each time it is traced, whether it runs outside a
    replica context (``strategy.run``)."""
    import tensorflow as tf

    class Watched(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.inner = model

        def call(self, x, training=None):
            outside.append(tf.distribute.in_cross_replica_context())
            return self.inner(x, training=training)

    return Watched()


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


# Wrong answers derived from the solution (solutions/09_parameter_server_strategy.ipynb), one
# plausible mistake each: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "wrong".
MUTATIONS: dict[str, list[tuple[str, str, str]]] = {
    "09.1": [
        (
            "no partitioner",
            "    variable_partitioner=tf.distribute.experimental.partitioners."
            "FixedShardsPartitioner(3),\n",
            "",
        ),
        ("two shards", "FixedShardsPartitioner(3)", "FixedShardsPartitioner(2)"),
        (
            "a size partitioner: one piece",
            "FixedShardsPartitioner(3)",
            "MinSizePartitioner(max_shards=3)",
        ),
        (
            "made outside strategy.scope()",
            "with strategy.scope():\n    embedding",
            "if True:\n    embedding",
        ),
        ("the shape transposed", "tf.random.normal([12, 4])", "tf.random.normal([4, 12])"),
    ],
    "09.2": [
        (
            "no apply_gradients",
            "        optimizer.apply_gradients("
            "zip(grads, model.trainable_variables, strict=True))\n",
            "",
        ),
        (
            "a dataset that runs out",
            "return datasets.regression_batches(32)",
            "return datasets.regression_batches(32, repeat=False).take(3)",
        ),
        (
            "no strategy.run",
            "return strategy.run(replica_step, args=next(iterator))",
            "return replica_step(*next(iterator))",
        ),
        (
            "a constant loss",
            "        return strategy.run(replica_step, args=next(iterator))\n",
            "        strategy.run(replica_step, args=next(iterator))\n"
            "        return tf.constant(1.0)\n",
        ),
        (
            "only the first variable updated",
            "zip(grads, model.trainable_variables, strict=True)",
            "zip(grads[:1], model.trainable_variables[:1], strict=True)",
        ),
        (
            "the last bias left out",
            "zip(grads, model.trainable_variables, strict=True)",
            "zip(grads[:-1], model.trainable_variables[:-1], strict=True)",
        ),
        (
            "the gradients' sign flipped",
            "zip(grads, model.trainable_variables, strict=True)",
            "zip([-g for g in grads], model.trainable_variables, strict=True)",
        ),
    ],
    "09.3": [
        ("the workers in the cluster", "extra_bound = 3", "extra_bound = 5"),
        ("the workers that failed", "extra_bound = 3", "extra_bound = 2"),
        ("one more for the restart", "extra_bound = 3", "extra_bound = 4"),
        ("text, not a number", "extra_bound = 3", 'extra_bound = "3"'),
    ],
}
