"""The tables tests/test_mutations.py runs against the checks of lesson 02
(tflearn_helpers/checks/lesson02.py): ``MUTATIONS``, wrong answers made of the solution's
lines (each must be judged wrong, with a hint), and ``RIGHT_ANSWERS``, right answers written
differently (each must be judged right). Test data: kept out of the learner's wheel."""

from __future__ import annotations

_READ = (
    "    ds = tf.data.Dataset.from_tensor_slices(files).shard(num_workers, worker_index)\n"
    "    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=2, **parallel)\n"
    "    ds = ds.map(input_pipeline.record_parser(with_index=True), **parallel)\n"
)

_RUN = (
    "    outputs = strategy.run(lambda xs: layer(xs, training=True), args=(next(iter(batches)),))"
)

_LOOP = """    total = None
    for batch in micro_batches:
        grads = strategy.run(replica_gradients, args=batch)
        summed = strategy.reduce(tf.distribute.ReduceOp.SUM, grads, axis=None)
        total = summed if total is None else [t + g for t, g in zip(total, summed, strict=True)]
    averaged = [t / len(micro_batches) for t in total]
"""

# Wrong answers derived from the solution (solutions/02_resnet50_data_parallel.ipynb), one
# plausible mistake each: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "wrong".
MUTATIONS: dict[str, list[tuple[str, str, str]]] = {
    "02.1": [
        (
            "its files read one after another, no interleave, no parallel map",
            _READ,
            "    ds = tf.data.TFRecordDataset(files[worker_index::num_workers])\n"
            "    ds = ds.map(input_pipeline.record_parser(with_index=True))\n",
        ),
        (
            "an interleave that is not parallel",
            "cycle_length=2, **parallel)",
            "cycle_length=2)",
        ),
        (
            "flat_map: one file after another",
            "ds.interleave(tf.data.TFRecordDataset, cycle_length=2, **parallel)",
            "ds.flat_map(tf.data.TFRecordDataset)",
        ),
        (
            "a map that is not parallel",
            "record_parser(with_index=True), **parallel)",
            "record_parser(with_index=True))",
        ),
        ("the order not kept", '"deterministic": True', '"deterministic": False'),
        (
            "sharded by record, after the decode",
            _READ,
            _READ.replace(".shard(num_workers, worker_index)", "")
            + "    ds = ds.shard(num_workers, worker_index)\n",
        ),
        ("every worker reads every file", ".shard(num_workers, worker_index)", ""),
        ("no prefetch", ".prefetch(tf.data.AUTOTUNE)", ""),
        (
            "a block of neighbouring files for each worker",
            "tf.data.Dataset.from_tensor_slices(files).shard(num_workers, worker_index)",
            "tf.data.Dataset.from_tensor_slices(\n"
            "        files[worker_index * len(files) // num_workers :]"
            "[: len(files) // num_workers]\n    )",
        ),
        (
            "the file list shuffled by each worker, unseeded, then sharded",
            ".shard(num_workers, worker_index)",
            ".shuffle(len(files)).shard(num_workers, worker_index)",
        ),
    ],
    "02.2": [
        ("a hard-coded step", "return int(optimizer.iterations.numpy())", "return 3"),
        (
            "the checkpoint's number as the step",
            "return int(optimizer.iterations.numpy())",
            'return int(tf.train.latest_checkpoint(directory).rsplit("-", 1)[-1])',
        ),
        (
            "the model only, not the optimizer",
            "tf.train.Checkpoint(model=model, optimizer=optimizer)",
            "tf.train.Checkpoint(model=model)",
        ),
        (
            "the step read before the restore",
            "    ckpt.restore(tf.train.latest_checkpoint(directory))"
            ".assert_existing_objects_matched()\n"
            "    return int(optimizer.iterations.numpy())",
            "    step = int(optimizer.iterations.numpy())\n"
            "    ckpt.restore(tf.train.latest_checkpoint(directory))\n"
            "    return step",
        ),
        (
            "the oldest checkpoint kept",
            "tf.train.latest_checkpoint(directory)",
            "tf.train.get_checkpoint_state(directory).all_model_checkpoint_paths[0]",
        ),
        (
            "nothing restored",
            "    ckpt.restore(tf.train.latest_checkpoint(directory))"
            ".assert_existing_objects_matched()\n",
            "",
        ),
    ],
    "02.3": [
        (
            "one device, not synchronized (a layer on the whole batch)",
            "    with strategy.scope():\n",
            "    return keras.layers.BatchNormalization()(x, training=True)\n"
            "    with strategy.scope():\n",
        ),
        ("not synchronized", "BatchNormalization(synchronized=True)", "BatchNormalization()"),
        ("inference mode", "layer(xs, training=True)", "layer(xs, training=False)"),
        ("the whole batch on every replica", "args=(next(iter(batches)),)", "args=(x,)"),
        (
            "the first replica's output only",
            "    return outputs",
            "    return strategy.experimental_local_results(outputs)[0]",
        ),
        (
            "the outputs gathered on one device",
            "    return outputs",
            "    return tf.concat(strategy.experimental_local_results(outputs), axis=0)",
        ),
        ("the outputs not returned", "    return outputs", "    outputs = list(outputs.values)"),
    ],
    "02.4": [
        (
            "the micro-batches concatenated into one batch (no accumulation)",
            _LOOP,
            "    x, y = (\n"
            "        tf.concat([tf.concat(strategy.experimental_local_results(t), 0)\n"
            "                   for t in parts], 0)\n"
            "        for parts in zip(*micro_batches)\n"
            "    )\n"
            "    grads = strategy.run(replica_gradients, args=(x, y))\n"
            "    averaged = strategy.reduce(tf.distribute.ReduceOp.SUM, grads, axis=None)\n",
        ),
        (
            "an update after every micro-batch",
            _LOOP + "    optimizer.apply_gradients(",
            _LOOP.replace(
                "        total = summed",
                "        optimizer.apply_gradients(\n"
                "            zip(summed, model.trainable_variables, strict=True)\n        )\n"
                "        total = summed",
            )
            + "    if False:\n        optimizer.apply_gradients(",
        ),
        (
            "summed, not averaged",
            "averaged = [t / len(micro_batches) for t in total]",
            "averaged = total",
        ),
        (
            "each replica's mean loss (no division by the global micro-batch)",
            "tf.nn.compute_average_loss(per_example(y, model(x, training=True)))",
            "tf.reduce_mean(per_example(y, model(x, training=True)))",
        ),
        ("MEAN for SUM", "tf.distribute.ReduceOp.SUM", "tf.distribute.ReduceOp.MEAN"),
        (
            "only the last micro-batch kept",
            "summed if total is None else [t + g for t, g in zip(total, summed, strict=True)]",
            "summed",
        ),
        (
            "each micro-batch gathered on one device",
            "        grads = strategy.run(replica_gradients, args=batch)\n"
            "        summed = strategy.reduce(tf.distribute.ReduceOp.SUM, grads, axis=None)\n",
            "        whole = [tf.concat(strategy.experimental_local_results(t), 0)"
            " for t in batch]\n"
            "        summed = replica_gradients(*whole)\n",
        ),
        (
            "the logits read as probabilities",
            "SparseCategoricalCrossentropy(from_logits=True, ",
            "SparseCategoricalCrossentropy(",
        ),
        (
            "no update at all",
            "    optimizer.apply_gradients("
            "zip(averaged, model.trainable_variables, strict=True))\n",
            "",
        ),
    ],
}

# Right answers written otherwise than the solution, as the exercises' text allows: each is
# answered "right" (tests/test_mutations.py).
RIGHT_ANSWERS: dict[str, list[tuple[str, str, str]]] = {
    "02.1": [
        (
            "the last partial batch dropped, as the lesson's pipeline does",
            "return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)",
            "return ds.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)",
        ),
        (
            "options set after the prefetch",
            "return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)",
            "options = tf.data.Options()\n"
            "    options.experimental_optimization.map_parallelization = True\n"
            "    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE).with_options(options)",
        ),
        (
            "the worker's files picked in Python",
            "tf.data.Dataset.from_tensor_slices(files).shard(num_workers, worker_index)",
            "tf.data.Dataset.from_tensor_slices(files[worker_index::num_workers])",
        ),
    ],
    "02.2": [
        (
            "the newest checkpoint found by a CheckpointManager",
            "ckpt.restore(tf.train.latest_checkpoint(directory))",
            "ckpt.restore(tf.train.CheckpointManager(ckpt, directory, 3).latest_checkpoint)",
        ),
        (
            "restored without asserting that everything matched",
            ".assert_existing_objects_matched()",
            "",
        ),
    ],
    "02.3": [
        (
            "the replicas' slices made by a function of the replica",
            "    batches = strategy.experimental_distribute_dataset("
            "tf.data.Dataset.from_tensors(x))\n" + _RUN,
            "    n = strategy.num_replicas_in_sync\n"
            "    slices = strategy.experimental_distribute_values_from_function(\n"
            "        lambda context: tf.split(x, n)[context.replica_id_in_sync_group]\n"
            "    )\n"
            "    outputs = strategy.run(lambda xs: layer(xs, training=True), args=(slices,))",
        ),
        (
            "a named replica function",
            _RUN,
            "    def replica(xs):\n"
            "        return layer(xs, training=True)\n\n"
            "    outputs = strategy.run(replica, args=(next(iter(batches)),))",
        ),
    ],
    "02.4": [
        (
            "each replica's loss scaled by hand",
            "loss = tf.nn.compute_average_loss(per_example(y, model(x, training=True)))",
            "loss = tf.reduce_sum(per_example(y, model(x, training=True))) / (\n"
            "                tf.cast(tf.shape(y)[0], tf.float32) * strategy.num_replicas_in_sync\n"
            "            )",
        ),
        (
            "the micro-batches' gradients averaged by tf.add_n at the end",
            _LOOP,
            "    sums = [\n"
            "        strategy.reduce(\n"
            "            tf.distribute.ReduceOp.SUM, strategy.run(replica_gradients, args=b), "
            "None\n"
            "        )\n"
            "        for b in micro_batches\n"
            "    ]\n"
            "    averaged = [tf.add_n(list(g)) / len(micro_batches) for g in zip(*sums)]\n",
        ),
    ],
}

# What the hint of a mutation must say, and must not: (exercise, name of the mutation) -> words.
HINTS: dict[tuple[str, str], str] = {
    ("02.1", "a block of neighbouring files for each worker"): "FILE policy",
    ("02.1", "the file list shuffled by each worker, unseeded, then sharded"): "same order",
    ("02.4", "the logits read as probabilities"): "as probabilities",
    ("02.3", "one device, not synchronized (a layer on the whole batch)"): "one output per replica",
    ("02.3", "not synchronized"): "own slice",
    ("02.3", "the whole batch on every replica"): "shaped",
    ("02.3", "the outputs not returned"): "returns None",
    ("02.4", "the micro-batches concatenated into one batch (no accumulation)"): (
        "one micro-batch at a time"
    ),
    ("02.4", "an update after every micro-batch"): "apply them once",
    ("02.4", "summed, not averaged"): "average, do not sum",
    ("02.4", "each replica's mean loss (no division by the global micro-batch)"): (
        "number of replicas"
    ),
    ("02.4", "each micro-batch gathered on one device"): "strategy.run",
    ("02.4", "no update at all"): "never updated",
}
HINTS_WITHOUT: dict[tuple[str, str], list[str]] = {  # no numbers, no answer in the hint
    ("02.4", "summed, not averaged"): ["0.", "="],
    ("02.4", "each replica's mean loss (no division by the global micro-batch)"): ["0.", "="],
}
