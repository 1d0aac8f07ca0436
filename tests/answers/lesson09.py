"""The tables tests/test_mutations.py runs against the checks of lesson 09
(tflearn_helpers/checks/lesson09.py): ``MUTATIONS``, wrong answers made of the solution's
lines (each must be judged wrong, with a hint), and ``RIGHT_ANSWERS``, right answers written
differently (each must be judged right). Test data: kept out of the learner's wheel."""

from __future__ import annotations

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
            "the dataset built once, on the coordinator",
            "iter(coordinator.create_per_worker_dataset(dataset_fn))",
            "iter(dataset_fn())",
        ),
        (
            "the dataset created inside the step",
            "args=next(iterator))",
            "args=next(iter(dataset_fn())))",
        ),
        ("no join: returns before the steps finish", "    coordinator.join()\n", ""),
        (
            "a Python loop calling the step, nothing scheduled",
            "coordinator.schedule(train_step, args=(iterator,))",
            "train_step(iterator)",
        ),
        (
            "each result fetched as it is scheduled",
            "coordinator.schedule(train_step, args=(iterator,))",
            "coordinator.schedule(train_step, args=(iterator,)).fetch()",
        ),
        (
            "the step called without strategy.run",
            "return strategy.run(replica_step, args=next(iterator))",
            "return replica_step(*next(iterator))",
        ),
        (
            "a fresh iterator each step over a shuffled pipeline: only its start is ever read",
            "    losses = [coordinator.schedule(train_step, args=(iterator,)) "
            "for _ in range(steps)]\n",
            "    mixed = coordinator.create_per_worker_dataset(\n"
            "        lambda: examples().shuffle(80).repeat().batch(32)\n"
            "    )\n"
            "    losses = [coordinator.schedule(train_step, args=(iter(mixed),)) "
            "for _ in range(steps)]\n",
        ),
        ("one step too few", "for _ in range(steps)]", "for _ in range(steps - 1)]"),
        ("one step too many", "for _ in range(steps)]", "for _ in range(steps + 1)]"),
        ("no @tf.function", "    @tf.function\n", ""),
        (
            "a dataset that runs out",
            "examples().repeat().batch(32)",
            "examples().batch(32)",
        ),
        ("batches of 64", "examples().repeat().batch(32)", "examples().repeat().batch(64)"),
        (
            "batched before the repeat: a short batch ends each pass",
            "examples().repeat().batch(32)",
            "examples().batch(32).repeat()",
        ),
        (
            "a dataset that repeats twice",
            "examples().repeat().batch(32)",
            "examples().repeat(2).batch(32)",
        ),
        (
            "no apply_gradients",
            "        optimizer.apply_gradients("
            "zip(grads, model.trainable_variables, strict=True))\n",
            "",
        ),
        (
            "the gradients' sign flipped",
            "zip(grads, model.trainable_variables, strict=True)",
            "zip([-g for g in grads], model.trainable_variables, strict=True)",
        ),
        (
            "the gradients applied twice",
            "        optimizer.apply_gradients("
            "zip(grads, model.trainable_variables, strict=True))\n",
            "        optimizer.apply_gradients("
            "zip(grads, model.trainable_variables, strict=True))\n" * 2,
        ),
        (
            "only the last variable updated",
            "zip(grads, model.trainable_variables, strict=True)",
            "zip(grads[-1:], model.trainable_variables[-1:], strict=True)",
        ),
        (
            "a constant loss",
            "        return strategy.run(replica_step, args=next(iterator))\n",
            "        strategy.run(replica_step, args=next(iterator))\n"
            "        return tf.constant(1.0)\n",
        ),
    ],
    "09.3": [
        ("the workers in the cluster", "extra_bound = 3", "extra_bound = 5"),
        ("the workers that failed", "extra_bound = 3", "extra_bound = 2"),
        ("one more for the restart", "extra_bound = 3", "extra_bound = 4"),
        ("text, not a number", "extra_bound = 3", 'extra_bound = "3"'),
    ],
}

# Right answers written differently from the solution, as the exercise's text allows:
# exercise -> [(name, text of the solution cell, what replaces it)]; each must be "right".
RIGHT_ANSWERS: dict[str, list[tuple[str, str, str]]] = {
    "09.1": [
        (
            "the resolver from a dict, the partitioner imported, a zeros initializer",
            "resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(\n"
            '    tf.train.ClusterSpec(spec), task_type="chief", task_id=0, rpc_layer="grpc"\n'
            ")\n"
            "strategy = tf.distribute.ParameterServerStrategy(\n"
            "    resolver,\n"
            "    variable_partitioner=tf.distribute.experimental.partitioners."
            "FixedShardsPartitioner(3),\n"
            ")\n",
            "partitioners = tf.distribute.experimental.partitioners\n"
            "cluster_spec = tf.train.ClusterSpec(spec)\n"
            "resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(\n"
            '    cluster_spec, task_type="chief", task_id=0, rpc_layer="grpc"\n'
            ")\n"
            "strategy = tf.distribute.ParameterServerStrategy(\n"
            "    resolver, variable_partitioner=partitioners.FixedShardsPartitioner(num_shards=3)\n"
            ")\n",
        ),
        (
            "a variable of zeros, with no name",
            'embedding = tf.Variable(tf.random.normal([12, 4]), name="embedding")',
            "embedding = tf.Variable(tf.zeros((12, 4)))",
        ),
    ],
    "09.2": [
        (
            "shuffled, full batches before the repeat, prefetched",
            "examples().repeat().batch(32)",
            "examples().shuffle(1024).batch(32, drop_remainder=True).repeat()"
            ".prefetch(tf.data.AUTOTUNE)",
        ),
        (
            "repeated, then shuffled across epochs (batches nearly drawn with replacement)",
            "examples().repeat().batch(32)",
            "examples().repeat().shuffle(500).batch(32)",
        ),
        (
            "Keras' mean squared error, the model called without training=True",
            "            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))\n",
            "            loss = tf.reduce_mean(tf.keras.losses.mean_squared_error(y, model(x)))\n",
        ),
        (
            "a for loop that appends, a wait by fetching every loss",
            "    losses = [coordinator.schedule(train_step, args=(iterator,)) "
            "for _ in range(steps)]\n"
            "    coordinator.join()\n",
            "    losses = []\n"
            "    for _ in range(steps):\n"
            "        losses.append(coordinator.schedule(train_step, args=(iterator,)))\n"
            "    coordinator.fetch(losses)  # waits for every step\n",
        ),
    ],
    "09.3": [
        ("a sum", "extra_bound = 3", "extra_bound = 2 + 1"),
        ("counted out", "extra_bound = 3", 'extra_bound = len(["w1", "w1", "w3"])'),
    ],
}

# What the hint of a mutation must say: (exercise, name of the mutation) -> words.
HINTS: dict[tuple[str, str], str] = {
    ("09.1", "a size partitioner: one piece"): "minimum size",
    ("09.1", "no partitioner"): "Has the strategy a partitioner",
    ("09.2", "batched before the repeat: a short batch ends each pass"): "came up short",
    ("09.1", "made outside strategy.scope()"): "under a strategy with a partitioner",
    ("09.2", "the dataset built once, on the coordinator"): "built on the coordinator",
    ("09.2", "no join: returns before the steps finish"): "still running",
    ("09.2", "a dataset that runs out"): "ran out",
}
