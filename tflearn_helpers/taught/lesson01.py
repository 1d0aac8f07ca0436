"""Generated from lesson 01 by tools/save_taught.py: edit the lesson, then run it.

The lesson: notebooks/01_mirrored_strategy.ipynb.
SETUP: its setup cell's settings; SIZES: each pick(smoke=..., cpu=..., gpu=...) it makes.
Each definition is the lesson's, with the lesson's imports of what it uses inside its body.
"""

__all__ = [
    "SETUP",
    "SIZES",
    "make_train_step",
    "max_abs_difference",
    "time_allreduce",
    "update_norm",
]

SETUP = {"devices": 4}
SIZES = {
    "N_TRAIN": {"smoke": 2048, "cpu": 32768, "gpu": 32768},
    "EPOCHS": {"smoke": 3, "cpu": 4, "gpu": 10},
    "SMALL_STEPS": {"smoke": 48, "cpu": 400, "gpu": 400},
    "ALLREDUCE_FLOATS": {"smoke": 1000000, "cpu": 4000000, "gpu": 25000000},
    "REPEATS": {"smoke": 3, "cpu": 5, "gpu": 10},
}


def make_train_step(strategy, model, optimizer, global_batch, loss_scaling="global"):
    """A tf.function that takes one distributed (x, y) batch, trains, returns the mean loss."""
    import tensorflow as tf

    with strategy.scope():  # optimizer slots (Adam's moments) mirrored, made before tracing
        optimizer.build(model.trainable_variables)
    per_example_loss = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="none"
    )

    def replica_step(x, y):  # runs once per replica, on that replica's slice of the batch
        with tf.GradientTape() as tape:
            losses = per_example_loss(y, model(x, training=True))
            penalty = tf.add_n(model.losses) if model.losses else 0.0
            if loss_scaling == "global":  # right: sum / global batch, penalty / replicas
                loss = tf.nn.compute_average_loss(losses, global_batch_size=global_batch)
                loss += tf.nn.scale_regularization_loss(penalty)
            else:  # the classic mistake (section 4b): each replica's own mean, full penalty
                loss = tf.reduce_mean(losses) + penalty
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))  # sums
        return tf.nn.compute_average_loss(losses, global_batch_size=global_batch)

    @tf.function
    def step(distributed_batch):
        x, y = distributed_batch
        per_replica_loss = strategy.run(replica_step, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss, axis=None)

    return step


def max_abs_difference(weights_a, weights_b):
    """Largest elementwise |a - b| between two lists of arrays (e.g. get_weights())."""
    import numpy as np

    return max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
        for a, b in zip(weights_a, weights_b, strict=True)
    )


def update_norm(before, after):
    """Euclidean norm of the change from `before` to `after` (lists of arrays)."""
    import numpy as np

    squares = (
        np.sum((np.asarray(b) - np.asarray(a)) ** 2) for a, b in zip(before, after, strict=True)
    )
    return float(np.sqrt(sum(squares)))


def time_allreduce(strategy, num_floats, steps):
    """Seconds each of `steps` all-reduces of a float32 tensor of `num_floats` took."""

    import time

    import numpy as np
    import tensorflow as tf

    def fill():  # replica r holds a tensor full of r + 1
        r = tf.distribute.get_replica_context().replica_id_in_sync_group
        return tf.fill([num_floats], tf.cast(r + 1, tf.float32))

    def reduce(x):  # the all-reduce; a small witness comes back, so timing copies no bulk
        total = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, x)
        return tf.stack([total[0], total[-1]])

    grads = tf.function(lambda: strategy.run(fill))()
    run = tf.function(lambda: strategy.experimental_local_results(strategy.run(reduce, (grads,))))
    expected = strategy.num_replicas_in_sync * (strategy.num_replicas_in_sync + 1) / 2
    for witness in run():
        if not np.all(witness.numpy() == expected):
            raise RuntimeError(f"the all-reduce gave {witness.numpy()}, not {expected}")
    seconds = []
    for _ in range(steps):
        start = time.perf_counter()
        [w.numpy() for w in run()]  # .numpy() waits until the all-reduce has finished
        seconds.append(time.perf_counter() - start)
    return seconds
