"""The seed's Estimator program, corrected (lab 08b_estimator_legacy; needs TF 2.15).

Import it to train in-process (``make_estimator``, ``input_fn``, the hooks), or run it as
one task of a cluster: every task (chief, worker, ps, evaluator) runs this same file and
learns its role from TF_CONFIG, as estimator-era jobs did. Options: ``--help``.
Plain TensorFlow and NumPy: it does not import the course package, so it can be copied out.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time

import numpy as np
import tensorflow as tf

if not hasattr(tf, "estimator"):
    sys.exit(f"TensorFlow {tf.__version__} has no tf.estimator (removed in 2.16): use TF 2.15.")

__all__ = [
    "DeadlineHook",
    "PlacementHook",
    "build_model",
    "input_fn",
    "main",
    "make_data",
    "make_estimator",
    "model_fn",
    "short_device",
    "wait_until",
]

FEATURES, CLASSES = 10, 10


def make_data(n: int, seed: int, learnable: bool = True):
    """Normal inputs; labels from a fixed random linear teacher (or random: ``learnable``)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEATURES)).astype(np.float32)
    if not learnable:
        return x, rng.integers(0, CLASSES, n).astype(np.int32)
    teacher = np.random.default_rng(0).normal(size=(FEATURES, CLASSES))
    return x, np.argmax(x @ teacher, axis=1).astype(np.int32)


def wait_until(condition, timeout: float, what: str) -> None:
    """Poll ``condition`` every 0.1 s; raise TimeoutError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.1)


def short_device(name: str) -> str:
    """'/job:localhost/replica:0/task:0/device:CPU:1' -> 'CPU:1' ('chief:0/CPU:0' off localhost)."""
    if not name:
        return "(unplaced)"
    spec = tf.DeviceSpec.from_string(name)
    kind = f"{spec.device_type}:{spec.device_index}" if spec.device_type else ""
    if spec.job and spec.job != "localhost":
        where = f"{spec.job}:{spec.task or 0}"
        return f"{where}/{kind}" if kind else where
    return kind or name


def input_fn(x, y, batch_size: int, training: bool):
    """tf.data instead of tf.estimator.inputs (distribution strategies need a Dataset)."""

    def fn():
        ds = tf.data.Dataset.from_tensor_slices(({"feature": x}, y))
        if training:
            ds = ds.shuffle(len(x), seed=1).repeat()
        return ds.batch(batch_size)

    return fn


def build_model():
    return tf.keras.Sequential(
        [
            tf.keras.layers.Dense(128, activation="relu", input_shape=(FEATURES,)),
            tf.keras.layers.Dense(CLASSES),  # logits: no softmax here
        ]
    )


def model_fn(features, labels, mode, params):
    """One model_fn for all three modes (the seed ignored ``mode``)."""
    logits = build_model()(features["feature"])  # the tensor, not the features dict
    predictions = {"class": tf.argmax(logits, axis=1), "probabilities": tf.nn.softmax(logits)}
    if mode == tf.estimator.ModeKeys.PREDICT:  # labels is None here
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)
    per_example = tf.keras.losses.sparse_categorical_crossentropy(
        labels,
        logits,
        from_logits=params.get("from_logits", True),  # False: the seed's mistake
    )
    loss = tf.reduce_mean(per_example)  # EstimatorSpec needs a scalar
    if mode == tf.estimator.ModeKeys.EVAL:
        accuracy = tf.compat.v1.metrics.accuracy(labels, predictions["class"])
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def make_estimator(model_dir: str, strategy=None, params=None, **run_config):
    """An Estimator; ``strategy`` goes where the seed forgot it: RunConfig(train_distribute)."""
    config = tf.estimator.RunConfig(
        model_dir=model_dir, train_distribute=strategy, tf_random_seed=7, **run_config
    )
    return tf.estimator.Estimator(
        model_fn, config=config, params={"learning_rate": 0.01, **(params or {})}
    )


class DeadlineHook(tf.estimator.SessionRunHook):
    """Makes every session.run fail with DeadlineExceededError after ``ms`` milliseconds."""

    def __init__(self, ms: int):
        self.options = tf.compat.v1.RunOptions(timeout_in_ms=ms)

    def before_run(self, run_context):
        return tf.estimator.SessionRunArgs(None, options=self.options)


class PlacementHook(tf.estimator.SessionRunHook):
    """Records where the ops of the first training step really ran (after soft placement)."""

    def __init__(self):
        self.ops = []  # (op type, short device name)

    def before_run(self, run_context):
        if not self.ops:
            options = tf.compat.v1.RunOptions(output_partition_graphs=True)
            return tf.estimator.SessionRunArgs(None, options=options)
        return None

    def after_run(self, run_context, run_values):
        if not self.ops:
            graphs = run_values.run_metadata.partition_graphs
            self.ops = [(n.op, short_device(n.device)) for g in graphs for n in g.node]

    def per_device(self) -> collections.Counter:
        return collections.Counter(device for _, device in self.ops)


class CountStepsHook(tf.estimator.SessionRunHook):
    """Counts the training steps this task ran (each adds 1 to the shared global step) and
    reads the global step when the task stops."""

    def __init__(self):
        self.steps, self.final_global_step = 0, None

    def begin(self):
        self._global_step = tf.compat.v1.train.get_global_step()

    def after_run(self, run_context, run_values):
        self.steps += 1

    def end(self, session):
        self.final_global_step = int(session.run(self._global_step))


class StartTogetherHook(tf.estimator.SessionRunHook):
    """Each trainer marks when its session is up and waits for all the others' marks before
    its first step, so that a short demo's trainers really train side by side."""

    def __init__(self, folder: str, me: str, trainers: list[str], timeout: float = 120):
        self.folder, self.me, self.trainers, self.timeout = folder, me, trainers, timeout
        self.waited = False

    def after_create_session(self, session, coord):
        os.makedirs(self.folder, exist_ok=True)
        open(os.path.join(self.folder, f"{self.me}.ready"), "w").close()

    def before_run(self, run_context):
        if not self.waited:
            wait_until(
                lambda: all(os.path.exists(f"{self.folder}/{t}.ready") for t in self.trainers),
                self.timeout,
                f"trainers {self.trainers} to start",
            )
            self.waited = True


def cluster_task(args) -> int:
    """One task of train_and_evaluate; its role comes from TF_CONFIG."""
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
    tf_config = json.loads(os.environ["TF_CONFIG"])
    role = tf_config["task"]
    trainers = [
        f"{job}:{i}"
        for job in ("chief", "worker")
        for i in range(len(tf_config["cluster"].get(job, [])))
    ]
    x, y = make_data(args.examples, seed=1)
    x_eval, y_eval = make_data(args.examples // 4, seed=2)
    estimator = make_estimator(
        args.model_dir,
        save_checkpoints_steps=args.checkpoint_every,
        experimental_max_worker_delay_secs=0,  # no (index + 1) * 5 s start delay
        log_step_count_steps=args.log_every,
    )
    if role["type"] == "worker":
        wait_for_chief(args.model_dir, timeout=120)
    task = f"{role['type']}:{role['index']}"
    counter = CountStepsHook()
    together = StartTogetherHook(args.model_dir, task, trainers)
    train_spec = tf.estimator.TrainSpec(
        input_fn(x, y, args.batch_size, training=True),
        max_steps=args.max_steps,
        hooks=[together, counter],
    )
    eval_spec = tf.estimator.EvalSpec(
        input_fn(x_eval, y_eval, args.batch_size, training=False),
        steps=None,
        start_delay_secs=0,
        throttle_secs=1,
    )
    tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    result = {"kind": "result", "task": task, "steps": counter.steps, "tf": tf.__version__}
    result.update(final_global_step=counter.final_global_step, python=sys.executable)
    result.update(tf_config=tf_config)  # what this task read: its role and the cluster
    print("TFLEARN_EVENT", json.dumps(result), flush=True)  # the line the notebook reads
    return 0


def wait_for_chief(model_dir: str, timeout: float) -> None:
    """Start once the chief has initialised the variables (its first checkpoint exists).

    Without this a worker that asks too early sleeps 30 s (SessionManager's fixed
    recovery_wait_secs, which Estimator does not expose) before it asks again.
    """
    wait_until(
        lambda: tf.train.latest_checkpoint(model_dir), timeout, f"a chief checkpoint in {model_dir}"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--max-steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--checkpoint-every", type=int, default=100)
    parser.add_argument("--log-every", type=int, default=100)
    return cluster_task(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
