"""The tables tests/test_mutations.py runs against the checks of lesson 01
(tflearn_helpers/checks/lesson01.py): ``MUTATIONS``, wrong answers made of the solution's
lines (each must be judged wrong, with a hint), and ``RIGHT_ANSWERS``, right answers written
differently (each must be judged right). Test data: kept out of the learner's wheel."""

from __future__ import annotations

_ONE_DEVICE = "tf.distribute.OneDeviceStrategy(course.devices[0])"

_CENTRAL = "tf.distribute.experimental.CentralStorageStrategy(course.devices)"

_SCOPE = """    with strategy.scope():
        model = make_model()
        model.compile(keras.optimizers.SGD(0.05), "mse")
"""

_WARM_UP = "model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)"

_SAME = """    return {
        name
        for name, (weights, _) in results.items()
        if max(float(np.abs(w - b).max()) for w, b in zip(weights, base, strict=True)) <= 1e-5
    }"""

# Wrong answers derived from the solution (solutions/01_mirrored_strategy.ipynb), one plausible
# mistake each: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "wrong".
MUTATIONS: dict[str, list[tuple[str, str, str]]] = {
    "01.1": [
        ("one device only", "devices=course.devices,", "devices=course.devices[:1],"),
        ("every device but the first", "devices=course.devices,", "devices=course.devices[1:],"),
        (
            "the default strategy",
            "tf.distribute.MirroredStrategy(devices=course.devices, cross_device_ops=None)",
            "tf.distribute.get_strategy()",
        ),
        (
            "one device strategy",
            "tf.distribute.MirroredStrategy(devices=course.devices, cross_device_ops=None)",
            "tf.distribute.OneDeviceStrategy(course.devices[0])",
        ),
        (
            "NCCL on devices it cannot run on",
            "cross_device_ops=None",
            "cross_device_ops=tf.distribute.NcclAllReduce()",
        ),
    ],
    "01.2": [
        ("not batched", ".batch(global_batch, drop_remainder=True)", ""),
        (
            "a plain dataset, not distributed",
            "return strategy.experimental_distribute_dataset(batches)",
            "return batches",
        ),
        (
            "batched by the per-replica size",
            ".batch(global_batch, drop_remainder=True)",
            ".batch(global_batch // strategy.num_replicas_in_sync, drop_remainder=True)",
        ),
        (
            "a hard-coded batch",
            ".batch(global_batch, drop_remainder=True)",
            ".batch(8, drop_remainder=True)",
        ),
        (
            "repeated forever",
            ".batch(global_batch, drop_remainder=True)",
            ".batch(global_batch, drop_remainder=True).repeat()",
        ),
        ("x and y swapped", "from_tensor_slices((x, y))", "from_tensor_slices((y, x))"),
        (
            "x and y shuffled apart",
            "from_tensor_slices((x, y))",
            "from_tensor_slices((x, tf.random.shuffle(y)))",
        ),
        (
            "every replica gets a whole global batch",
            "return strategy.experimental_distribute_dataset(batches)",
            "return strategy.distribute_datasets_from_function(lambda context: batches)",
        ),
        (
            "nothing returned",
            "    return strategy.experimental_distribute_dataset(batches)",
            "    strategy.experimental_distribute_dataset(batches)",
        ),
    ],
    "01.3": [
        (
            "the course's make_train_step passed in",
            'result = check("01.3", make_step, strategy)',
            "from tflearn_helpers import mirrored\n\n"
            'result = check("01.3", mirrored.make_train_step, strategy)',
        ),
        (
            "a wrapper around the course's make_train_step",
            "    return step\n",
            "    from tflearn_helpers import mirrored\n\n"
            "    return mirrored.make_train_step(strategy, model, optimizer, global_batch)\n",
        ),
        ("no strategy.run", "strategy.run(replica_step, args=batch)", "replica_step(*batch)"),
        (
            "the first replica's share only, on one device",
            "strategy.run(replica_step, args=batch)",
            "replica_step(*(strategy.experimental_local_results(t)[0] for t in batch))",
        ),
        (
            "the per-replica mean (no division by the global batch)",
            "tf.nn.compute_average_loss(losses, global_batch_size=global_batch)",
            "tf.reduce_mean(losses)",
        ),
        (
            "the summed loss, not divided",
            "tf.nn.compute_average_loss(losses, global_batch_size=global_batch)",
            "tf.reduce_sum(losses)",
        ),
        (
            "the penalty not scaled",
            "tf.nn.scale_regularization_loss(tf.add_n(model.losses))",
            "tf.add_n(model.losses)",
        ),
        (
            "the penalty left out",
            "            if model.losses:\n"
            "                loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))\n",
            "",
        ),
        ("MEAN for SUM in the reduce", "tf.distribute.ReduceOp.SUM", "tf.distribute.ReduceOp.MEAN"),
        (
            "the per-replica losses, not reduced",
            "return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)",
            "return per_replica",
        ),
        (
            "no gradients applied",
            "        optimizer.apply_gradients("
            "zip(grads, model.trainable_variables, strict=True))\n",
            "",
        ),
        (
            "a constant loss",
            "return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)",
            "return tf.constant(1.0)",
        ),
        ("no step returned", "    return step\n", ""),
        (
            "each replica's own mean and its whole penalty",
            "tf.nn.compute_average_loss(losses, global_batch_size=global_batch)\n"
            "            if model.losses:\n"
            "                loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))",
            "tf.reduce_mean(losses)\n"
            "            if model.losses:\n"
            "                loss += tf.add_n(model.losses)",
        ),
    ],
    "01.4": [
        (
            "no strategy.scope()",
            "    with strategy.scope():\n        model =",
            "    if True:\n        model =",
        ),
        (
            "the optimizer outside the scope",
            "        optimizer = tf.keras.optimizers.Adam(0.01)\n        optimizer.build(",
            "    optimizer = tf.keras.optimizers.Adam(0.01)\n    optimizer.build(",
        ),
        (
            "the course's make_train_step",
            "step = make_step(strategy, model, optimizer, global_batch)",
            "from tflearn_helpers import mirrored\n\n"
            "    step = mirrored.make_train_step(strategy, model, optimizer, global_batch)",
        ),
        (
            "a plain dataset, not distributed",
            "make_dataset(strategy, x, y, global_batch)]",
            "tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)]",
        ),
        (
            "each epoch's summed loss",
            "epoch_losses.append(sum(losses) / len(losses))",
            "epoch_losses.append(sum(losses))",
        ),
        (
            "the last step's loss, not the epoch's mean",
            "epoch_losses.append(sum(losses) / len(losses))",
            "epoch_losses.append(losses[-1])",
        ),
        ("one epoch only", "for _ in range(epochs):", "for _ in range(1):"),
        (
            "not trained",
            "losses = [float(step(batch)) for batch in make_dataset(strategy, x, y, global_batch)]",
            "losses = [3.0 - len(epoch_losses)]",
        ),
        (
            "a loss that does not fall, nothing trained",
            "losses = [float(step(batch)) for batch in make_dataset(strategy, x, y, global_batch)]",
            "losses = [1.0]",
        ),
        ("the model alone returned", "return model, epoch_losses", "return model"),
        (
            "a fresh copy returned, made outside strategy.scope()",
            "return model, epoch_losses",
            "return tf.keras.models.clone_model(model), epoch_losses",
        ),
    ],
    "01.5": [
        ("no strategy.scope()", "with strategy.scope():", "if True:"),
        (
            "on one device",
            "with strategy.scope():",
            "with tf.distribute.OneDeviceStrategy(course.devices[0]).scope():",
        ),
        ("not trained", "model.fit(train_dataset, epochs=5, verbose=0)", "pass"),
        (
            "fit's History returned, not the model",
            "    model.fit(train_dataset, epochs=5, verbose=0)\n    return model\n",
            "    return model.fit(train_dataset, epochs=5, verbose=0)\n",
        ),
        (
            "probabilities where logits are given",
            "SparseCategoricalCrossentropy(from_logits=True)",
            "SparseCategoricalCrossentropy()",
        ),
        (
            "one epoch, not the seed's five",
            "model.fit(train_dataset, epochs=5, verbose=0)",
            "model.fit(train_dataset, epochs=1, verbose=0)",
        ),
    ],
    "01.6": [
        ("bytes, not MB", "* 4 / 1e6", "* 4"),
        ("one copy of the gradient", "2 * (8 - 1) / 8 * 25_557_032", "25_557_032"),
        ("one phase only", "2 * (8 - 1) / 8", "(8 - 1) / 8"),
        ("no (N-1)/N factor", "2 * (8 - 1) / 8", "2"),
        ("float16 gradients", "* 4 / 1e6", "* 2 / 1e6"),
        ("parameters, not bytes", "* 4 / 1e6", "/ 1e6"),
        ("every GPU sends to every other", "2 * (8 - 1) / 8", "(8 - 1)"),
    ],
    "01.7": [
        ("OneDevice on the last device", _ONE_DEVICE, _ONE_DEVICE.replace("[0]", "[-1]")),
        ("the default strategy as OneDevice", _ONE_DEVICE, "tf.distribute.get_strategy()"),
        (
            "a second MirroredStrategy as Mirrored",
            '"Mirrored": strategy,',
            '"Mirrored": tf.distribute.MirroredStrategy(course.devices),',
        ),
        ("01.1's strategy as CentralStorage", _CENTRAL, "strategy"),
        (
            "a MirroredStrategy as CentralStorage",
            _CENTRAL,
            "tf.distribute.MirroredStrategy(course.devices)",
        ),
        ("CentralStorage on one device", _CENTRAL, _CENTRAL.replace("devices)", "devices[:1])")),
    ],
    "01.8": [
        (
            "built and compiled outside strategy.scope()",
            _SCOPE,
            _SCOPE.replace("with strategy.scope():", "if True:"),
        ),
        (
            "compiled outside strategy.scope()",
            _SCOPE,
            _SCOPE.replace("        model.compile", "    model.compile"),
        ),
        (
            "every model built under OneDevice",
            "with strategy.scope():",
            'with strategies["OneDevice"].scope():',
        ),
        (
            "built outside strategy.scope(), compiled inside",
            "    with strategy.scope():\n        model = make_model()\n",
            "    model = make_model()\n    with strategy.scope():\n",
        ),
        ("shuffled", _WARM_UP, _WARM_UP.replace(", shuffle=False", "")),
        (
            "the per-replica batch",
            _WARM_UP,
            _WARM_UP.replace(
                "batch_size=BATCH", "batch_size=BATCH // strategy.num_replicas_in_sync"
            ),
        ),
        ("Keras' default batch size", _WARM_UP, _WARM_UP.replace("batch_size=BATCH, ", "")),
        ("the mean absolute error", '"mse")', '"mae")'),
        ("no warm-up epoch", "    " + _WARM_UP + "\n", ""),
    ],
    "01.9": [
        (
            "the three names typed in",
            "    base = results[",
            '    return {"OneDevice", "Mirrored", "CentralStorage"}\n    base = results[',
        ),
        ("the mean difference, not the largest", "np.abs(w - b).max()", "np.abs(w - b).mean()"),
        ("the signed difference", "np.abs(w - b).max()", "(w - b).max()"),
        (
            "the first weight array only",
            "zip(weights, base, strict=True)",
            "zip(weights[:1], base)",
        ),
        ("a looser tolerance", ") <= 1e-5", ") <= 1e-3"),
        ("compared with Mirrored", 'results["OneDevice"][0]', 'results["Mirrored"][0]'),
        (
            "OneDevice itself left out",
            "for name, (weights, _) in results.items()\n        if max(",
            'for name, (weights, _) in results.items()\n        if name != "OneDevice" and max(',
        ),
    ],
}

_STRATEGY = "tf.distribute.MirroredStrategy(devices=course.devices, cross_device_ops=None)"

_BATCHES = "tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch, drop_remainder=True)"

_LOSS = (
    "    per_example = tf.keras.losses.SparseCategoricalCrossentropy("
    'from_logits=True, reduction="none")'
    """

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            losses = per_example(y, model(x, training=True))
            loss = tf.nn.compute_average_loss(losses, global_batch_size=global_batch)
"""
)

# Right answers written differently from the solution, as a learner allowed by the exercise's
# text would write them: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "right".
RIGHT_ANSWERS: dict[str, list[tuple[str, str, str]]] = {
    "01.1": [
        (
            "a reduction to one device",
            "cross_device_ops=None",
            "cross_device_ops=tf.distribute.ReductionToOneDevice()",
        ),
        (
            "positional devices, a hierarchical copy",
            _STRATEGY,
            "tf.distribute.MirroredStrategy(\n    list(course.devices), "
            "cross_device_ops=tf.distribute.HierarchicalCopyAllReduce()\n)",
        ),
    ],
    "01.2": [
        (
            "shuffled and prefetched",
            _BATCHES,
            "(\n        tf.data.Dataset.from_tensor_slices((x, y))\n        .shuffle(len(x))\n"
            "        .batch(global_batch)\n        .prefetch(tf.data.AUTOTUNE)\n    )",
        ),
        (
            "from a function, each replica its share",
            "    return strategy.experimental_distribute_dataset(batches)",
            "    def per_replica(context):\n"
            "        return tf.data.Dataset.from_tensor_slices((x, y)).batch(\n"
            "            context.get_per_replica_batch_size(global_batch)\n        )\n\n"
            "    return strategy.distribute_datasets_from_function(per_replica)",
        ),
        ("no drop_remainder", ".batch(global_batch, drop_remainder=True)", ".batch(global_batch)"),
    ],
    "01.3": [
        (
            "Keras' loss with its default reduction (Keras 3 scales it per replica)",
            _LOSS,
            """    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
""",
        ),
        (
            "the sum divided by the global batch by hand",
            "tf.nn.compute_average_loss(losses, global_batch_size=global_batch)",
            "tf.reduce_sum(losses) / global_batch",
        ),
        (
            "the penalty divided by the replicas by hand",
            "tf.nn.scale_regularization_loss(tf.add_n(model.losses))",
            "tf.add_n(model.losses) / strategy.num_replicas_in_sync",
        ),
        ("the step run eagerly", "    @tf.function\n    def step", "    def step"),
    ],
    "01.4": [
        ("Adam at its default learning rate", "Adam(0.01)", "Adam()"),
        ("RMSprop at its default learning rate", "Adam(0.01)", "RMSprop()"),
        (
            "the dataset made once, before the epochs",
            "    epoch_losses = []\n    for _ in range(epochs):\n"
            "        losses = [float(step(batch)) for batch in make_dataset(strategy, x, y, "
            "global_batch)]",
            "    dataset = make_dataset(strategy, x, y, global_batch)\n"
            "    epoch_losses = []\n    for _ in range(epochs):\n"
            "        losses = [float(step(batch)) for batch in dataset]",
        ),
        (
            "each epoch's mean with tf.reduce_mean",
            "epoch_losses.append(sum(losses) / len(losses))",
            "epoch_losses.append(float(tf.reduce_mean(losses)))",
        ),
    ],
    "01.5": [
        (
            "fit on the arrays, with a batch size",
            "model.fit(train_dataset, epochs=5, verbose=0)",
            "model.fit(x, y, batch_size=global_batch, epochs=5, verbose=0)",
        ),
        (
            "an Adam object and a metric",
            'optimizer="adam", loss=',
            'optimizer=tf.keras.optimizers.Adam(), metrics=["accuracy"], loss=',
        ),
    ],
    "01.6": [
        (
            "the factors in another order",
            "2 * (8 - 1) / 8 * 25_557_032 * 4 / 1e6",
            "25_557_032 * 4 * 2 * 7 / 8 / 10**6",
        ),
        (
            "rounded to one decimal",
            "2 * (8 - 1) / 8 * 25_557_032 * 4 / 1e6",
            "round(2 * 7 / 8 * 25_557_032 * 4 / 1e6, 1)",
        ),
        ("worked out by hand", "2 * (8 - 1) / 8 * 25_557_032 * 4 / 1e6", "178.9"),
    ],
    "01.7": [
        (
            "CentralStorage given its devices by keyword",
            _CENTRAL,
            "tf.distribute.experimental.CentralStorageStrategy(compute_devices=list(course.devices))",
        ),
        (
            "OneDevice given its device by keyword",
            _ONE_DEVICE,
            "tf.distribute.OneDeviceStrategy(device=course.devices[0])",
        ),
    ],
    "01.8": [
        (
            "compiled with keywords and names",
            'model.compile(keras.optimizers.SGD(0.05), "mse")',
            "model.compile(\n"
            "            optimizer=keras.optimizers.SGD(learning_rate=0.05), "
            'loss="mean_squared_error"\n        )',
        ),
        (
            "a dataset of global batches",
            _WARM_UP,
            "model.fit(\n            tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH), "
            "epochs=1, verbose=0\n        )",
        ),
        ("the loss object", '"mse")', "keras.losses.MeanSquaredError())"),
    ],
    "01.9": [
        ("a list of names", _SAME, _SAME.replace("{", "[", 1)[:-1] + "]"),
        (
            "a tolerance function",
            _SAME,
            """    def close(weights):
        return all(np.all(np.abs(w - b) <= 1e-5) for w, b in zip(weights, base))

    return {name for name, (weights, _) in results.items() if close(weights)}""",
        ),
        (
            "a loop",
            _SAME,
            """    same = set()
    for name, (weights, _) in results.items():
        largest = max(np.max(np.abs(np.asarray(w) - np.asarray(b))) for w, b in zip(weights, base))
        if largest <= 1e-5:
            same.add(name)
    return same""",
        ),
    ],
}

# What the hint of a mutation must say, and must not: (exercise, name of the mutation) -> words.
HINTS: dict[tuple[str, str], str] = {
    ("01.1", "one device only"): "other devices",
    ("01.1", "the default strategy"): "MirroredStrategy",
    ("01.1", "NCCL on devices it cannot run on"): "cannot sum",
    ("01.2", "not batched"): "batches",
    ("01.2", "a plain dataset, not distributed"): "plain tf.data.Dataset",
    ("01.2", "batched by the per-replica size"): "each replica got",
    ("01.2", "nothing returned"): "returns None",
    ("01.3", "MEAN for SUM in the reduce"): "strategy.reduce",
    ("01.3", "each replica's own mean and its whole penalty"): "2 times",
    ("01.3", "the penalty left out"): "model.losses",
    ("01.3", "the course's make_train_step passed in"): "course's own",
    ("01.3", "no step returned"): "no function",
    ("01.4", "a fresh copy returned, made outside strategy.scope()"): "not mirrored",
    ("01.4", "a loss that does not fall, nothing trained"): "did not fall",
    ("01.4", "the model alone returned"): "two things",
    ("01.4", "the course's make_train_step"): "course's own",
    ("01.5", "no strategy.scope()"): "not mirrored",
    ("01.4", "the last step's loss, not the epoch's mean"): "the check recorded them",
    ("01.4", "a plain dataset, not distributed"): "distributed dataset",
    ("01.5", "not trained"): "chance",
    ("01.8", "no warm-up epoch"): "no training step",
    ("01.5", "one epoch, not the seed's five"): "as many epochs as asked",
    ("01.9", "OneDevice itself left out"): "leaves out OneDevice",
    ("01.5", "fit's History returned, not the model"): "return the model",
    ("01.8", "built and compiled outside strategy.scope()"): "Where was the model built?",
    ("01.8", "compiled outside strategy.scope()"): "optimizer",
}
HINTS_WITHOUT: dict[tuple[str, str], list[str]] = {
    ("01.4", "not trained"): ["distributed"],
    ("01.9", "compared with Mirrored"): ["leaves out OneDevice"],
    ("01.2", "not batched"): ["checking your answer raised"],
    ("01.8", "built and compiled outside strategy.scope()"): ["scope()"],
    ("01.8", "compiled outside strategy.scope()"): ["scope()"],
}
