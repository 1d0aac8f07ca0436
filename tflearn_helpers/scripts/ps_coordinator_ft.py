"""Lesson 02's fault-tolerance coordinator, run as the cluster's chief (TF_CONFIG).

Trains a small linear model in batches of scheduled steps on the ps/worker servers of
TF_CONFIG, writes a checkpoint after every batch, and prints one event per batch (see
tflearn_helpers.ps_strategy.emit). The notebook kills and restarts tasks meanwhile.
With --start-file it imports TensorFlow, then waits for that file to connect. Stops after
--steps steps applied by this run (default: never) or after --max-seconds.
Exit code 3: a parameter server failed (restart it, then run this script again to resume).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from tflearn_helpers import cluster as cluster_mod
from tflearn_helpers import ps_strategy, tfconfig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ckpt-dir", required=True)
    parser.add_argument("--steps", type=int, default=0, help="stop after this many (0: no limit)")
    parser.add_argument("--batch", type=int, default=8, help="steps scheduled between joins")
    parser.add_argument("--work", type=int, default=64, help="matmuls per step (step length)")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds to idle between batches")
    parser.add_argument("--start-file", default="", help="wait for this file, then connect")
    parser.add_argument("--max-seconds", type=float, default=300.0)
    args = parser.parse_args()
    cluster = tfconfig.validate(os.environ.get("TF_CONFIG", ""))["cluster"]
    import tensorflow as tf  # the slow part of starting: done before waiting for anything

    if args.start_file:
        ps_strategy.emit("ready")
        if not _wait_for(lambda: os.path.exists(args.start_file), args.max_seconds):
            ps_strategy.emit("error", message=f"no {args.start_file} after {args.max_seconds} s")
            return 4
    for address in cluster["worker"] + cluster["ps"]:  # the servers may still be starting
        if not _wait_for(lambda a=address: cluster_mod.port_is_listening(a), 120):
            ps_strategy.emit("error", message=f"{address} not listening after 120 s")
            return 2

    strategy, coordinator = ps_strategy.make_strategy(cluster)
    n_workers = len(cluster["worker"])
    with strategy.scope():
        w = tf.Variable(tf.zeros([16, 1]), name="w")
        applied = tf.Variable(0, dtype=tf.int64, name="applied")
        per_worker = tf.Variable(tf.zeros([n_workers], tf.int64), name="per_worker")
    ckpt = tf.train.Checkpoint(w=w, applied=applied)
    manager = tf.train.CheckpointManager(ckpt, args.ckpt_dir, max_to_keep=2)
    if manager.latest_checkpoint:
        ckpt.restore(manager.latest_checkpoint)
        ps_strategy.emit("resumed", step=int(applied.numpy()), path=manager.latest_checkpoint)
    ids = ps_strategy.worker_ids(coordinator)
    true_w = tf.reshape(tf.range(16, dtype=tf.float32) / 16.0, [16, 1])

    @tf.function
    def step(worker_id):
        # Count the execution first: an execution cut off later still counted, which is
        # exactly how re-executions show up as applied > scheduled.
        applied.assign_add(1)
        per_worker.assign_add(tf.one_hot(worker_id, n_workers, dtype=tf.int64))
        x = tf.random.normal([64, 16])
        h = tf.random.normal([64, 64])
        for _ in tf.range(args.work):  # the step's compute: makes a kill land mid-step
            h = tf.tanh(tf.matmul(h, tf.random.normal([64, 64]) * 0.1))
        y = tf.matmul(x, true_w) + 0.0 * tf.reduce_mean(h)
        grad = tf.matmul(x, tf.matmul(x, w) - y, transpose_a=True) / 64.0
        w.assign_sub(0.05 * grad)
        return applied.read_value()

    start = int(applied.numpy())
    scheduled = 0
    t0 = time.monotonic()
    while True:
        ps_strategy.emit("batch", scheduled=scheduled)  # about to schedule the next batch
        try:
            for _ in range(args.batch):
                coordinator.schedule(step, args=(ids,))
            scheduled += args.batch
            coordinator.join()
            done = int(applied.numpy())
            loss = float(tf.reduce_mean(tf.square(w - true_w)).numpy())
            path = manager.save(checkpoint_number=done)
            counts = [int(v) for v in per_worker.numpy()]
        except (tf.errors.UnavailableError, tf.errors.AbortedError) as err:
            ps_strategy.emit("ps_failure", error=type(err).__name__, message=str(err)[:300])
            return 3
        ps_strategy.emit(
            "progress",
            start=start,
            scheduled=scheduled,
            applied=done - start,
            total=done,
            per_worker=counts,
            loss=loss,
            checkpoint=path,
            seconds=round(time.monotonic() - t0, 2),
        )
        if args.steps and done - start >= args.steps:
            break
        time.sleep(args.pause)
        if time.monotonic() - t0 > args.max_seconds:
            ps_strategy.emit("error", message=f"stopped after {args.max_seconds} s")
            return 4
    ps_strategy.emit("finished", total=done, scheduled=scheduled, applied=done - start)
    return 0


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


if __name__ == "__main__":
    sys.exit(main())
