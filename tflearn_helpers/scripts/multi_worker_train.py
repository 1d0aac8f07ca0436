"""One worker of a MultiWorkerMirroredStrategy job (lesson 06).

Every worker process runs this same script; TF_CONFIG (set by LocalCluster locally, by
the Kubeflow training operator on Kubernetes) tells it the cluster and its own role.
Which Keras it gets is decided per process before TensorFlow loads: TF_USE_LEGACY_KERAS=1
in its environment selects tf_keras (Keras 2), otherwise Keras 3.

  python scripts/multi_worker_train.py --loop custom,fit --out DIR [--backup-dir DIR]

``--loop`` runs one or more training loops in turn: ``fit`` (Model.fit, with the
BackupAndRestore callback when ``--backup-dir`` is given) or ``custom`` (strategy.run
with a GradientTape). Each worker appends one JSON line per step to
``OUT/progress-<loop>-<task>.jsonl`` ({"step": optimizer iterations after the step,
"loss": ...}) and saves its final weights to ``OUT/weights-<loop>-<task>.npz`` (``fit``
also after each epoch: ``OUT/weights-fit-<task>-epoch<N>.npz``).
Every worker trains on its own fixed synthetic batch (seeded by the seed and its input
pipeline id), so step k of a resumed run does exactly the arithmetic of step k of an
uninterrupted one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

__all__ = ["FEATURES", "build_model", "main", "make_train_step", "parse_args"]

FEATURES = 16


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--loop", default="fit", help="comma list of: fit, custom")
    p.add_argument("--out", required=True, help="directory for progress and weights files")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--steps-per-epoch", type=int, default=10)
    p.add_argument("--global-batch", type=int, default=64)
    p.add_argument("--hidden", type=int, default=64, help="width of the hidden layer")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backup-dir", default=None, help="turn on BackupAndRestore (fit only)")
    p.add_argument("--save-freq", type=int, default=5, help="backup every N steps")
    p.add_argument("--step-delay", type=float, default=0.0, help="sleep s after each step")
    args = p.parse_args(argv)
    loops = args.loop.split(",")
    if not loops or any(loop not in ("fit", "custom") for loop in loops):
        p.error(f"--loop takes fit and/or custom, got {args.loop!r}")
    if min(args.epochs, args.steps_per_epoch, args.global_batch, args.save_freq) < 1:
        p.error("--epochs, --steps-per-epoch, --global-batch and --save-freq must be >= 1")
    args.loops = loops
    return args


def task_name() -> str:
    task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {})
    return f"{task.get('type', 'local')}-{task.get('index', 0)}"


def make_dataset_fn(args):
    """Input for each worker: its own fixed batch of a learnable regression problem."""
    from tflearn_helpers import datasets

    def dataset_fn(ctx):
        batch = ctx.get_per_replica_batch_size(args.global_batch)
        return datasets.fixed_regression_batch(
            batch, FEATURES, seed=args.seed, pipeline=ctx.input_pipeline_id
        )

    return dataset_fn


def build_model(keras, args):
    keras.utils.set_random_seed(args.seed)
    model = keras.Sequential(
        [keras.Input((FEATURES,)), keras.layers.Dense(args.hidden, "relu"), keras.layers.Dense(1)]
    )
    return model, keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)


class Progress:
    """Appends one JSON line per training step, flushed at once (a kill loses nothing)."""

    def __init__(self, out: Path, loop: str, me: str, delay: float):
        self.out, self.me, self.delay = out, me, delay
        self.file = open(out / f"progress-{loop}-{me}.jsonl", "a", buffering=1)

    def step(self, step: int, loss: float) -> None:
        self.file.write(json.dumps({"step": step, "loss": loss, "time": time.time()}) + "\n")
        if self.delay:
            time.sleep(self.delay)


def run_fit(tf, keras, strategy, args, progress: Progress):
    with strategy.scope():
        model, optimizer = build_model(keras, args)
        model.compile(optimizer=optimizer, loss="mse")

    class LogSteps(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            progress.step(int(model.optimizer.iterations.numpy()), float(logs["loss"]))

        def on_epoch_end(self, epoch, logs=None):
            save_weights(model, progress.out / f"weights-fit-{progress.me}-epoch{epoch + 1}.npz")

    callbacks = [LogSteps()]
    if args.backup_dir:
        callbacks.insert(0, keras.callbacks.BackupAndRestore(args.backup_dir, args.save_freq))
    data = make_dataset_fn(args)
    if hasattr(keras.utils, "experimental"):  # tf_keras: fit takes a DatasetCreator
        data = keras.utils.experimental.DatasetCreator(data)
    else:  # Keras 3 has no DatasetCreator: hand fit a plain dataset of global batches
        data = data(tf.distribute.InputContext())
    model.fit(
        data,
        epochs=args.epochs,
        steps_per_epoch=args.steps_per_epoch,
        verbose=0,
        callbacks=callbacks,
    )
    return model


def make_train_step(tf, strategy, model, optimizer, global_batch: int):
    """A tf.function running one synchronous step on every replica; returns the loss."""

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            per_example = tf.square(model(x, training=True) - y)[:, 0]
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    @tf.function
    def train_step(iterator):
        losses = strategy.run(replica_step, args=next(iterator))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    return train_step


def run_custom(tf, keras, strategy, args, progress: Progress):
    with strategy.scope():
        model, optimizer = build_model(keras, args)
        optimizer.build(model.trainable_variables)
    data = iter(strategy.distribute_datasets_from_function(make_dataset_fn(args)))
    train_step = make_train_step(tf, strategy, model, optimizer, args.global_batch)
    for _ in range(args.epochs * args.steps_per_epoch):
        loss = train_step(data)
        progress.step(int(optimizer.iterations.numpy()), float(loss))
    return model


def save_weights(model, path: Path) -> None:
    import numpy as np

    np.savez(path, *model.get_weights())


def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    me = task_name()
    import tensorflow as tf

    if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
        import tf_keras as keras
    else:
        import keras
    print(f"{me}: TensorFlow {tf.__version__}, Keras {keras.__version__}", flush=True)
    print(f"{me}: creating the strategy, waiting for every worker at its barrier", flush=True)
    # A 60 s heartbeat timeout (TensorFlow's default is 10 s): see lesson 06's worker program.
    from tensorflow.python.eager import context

    context.context().configure_coordination_service(
        "standalone", "/job:worker/replica:0/task:0", heartbeat_timeout_in_ms=60_000
    )
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    print(f"{me}: all workers up, {strategy.num_replicas_in_sync} replicas in sync", flush=True)
    for loop in args.loops:
        progress = Progress(out, loop, me, args.step_delay)
        start = time.perf_counter()
        train = run_fit if loop == "fit" else run_custom
        model = train(tf, keras, strategy, args, progress)
        save_weights(model, out / f"weights-{loop}-{me}.npz")
        print(f"{me}: {loop} done, {time.perf_counter() - start:.2f} s", flush=True)
    print(f"{me}: DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
