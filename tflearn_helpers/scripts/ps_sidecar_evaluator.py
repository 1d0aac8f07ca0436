"""Lesson 02's side-car evaluator: a process of its own that evaluates each new checkpoint.

It never joins the training cluster: it reads the checkpoints the coordinator writes to
--ckpt-dir, restores them into its own copy of the model and reports the held-out loss
(one event per checkpoint, see tflearn_helpers.ps_strategy.emit), until it has evaluated
the checkpoint of step --final-step or no new checkpoint came for --idle-timeout seconds.
Run with TF_USE_LEGACY_KERAS=1, like the notebook, so both build the same tf_keras model.
"""

from __future__ import annotations

import argparse
import sys

from tflearn_helpers import ps_strategy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ckpt-dir", required=True)
    parser.add_argument("--final-step", type=int, required=True)
    parser.add_argument("--idle-timeout", type=float, default=120.0)
    args = parser.parse_args()
    import tensorflow as tf

    model = ps_strategy.toy_model()
    step = tf.Variable(0, dtype=tf.int64)
    ckpt = tf.train.Checkpoint(model=model, step=step)
    held_out = ps_strategy.toy_dataset(256, seed=99, repeat=False)
    ps_strategy.emit("evaluator_ready")
    for path in tf.train.checkpoints_iterator(args.ckpt_dir, timeout=args.idle_timeout):
        ckpt.restore(path).expect_partial()
        losses = [tf.reduce_mean(tf.square(model(x) - y)) for x, y in held_out]
        ps_strategy.emit("evaluated", step=int(step.numpy()), loss=float(tf.reduce_mean(losses)))
        if int(step.numpy()) >= args.final_step:
            return 0
    ps_strategy.emit("idle", message=f"no new checkpoint for {args.idle_timeout} s")
    return 1


if __name__ == "__main__":
    sys.exit(main())
