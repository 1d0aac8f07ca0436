"""One worker of a MultiWorkerMirroredStrategy job (lesson 04); every worker runs this file.

TF_CONFIG, set in each process's environment, gives the cluster and this process's task.
The package ships this program as tflearn_helpers/scripts/multi_worker_train.py (exercise 04
and benchmarks/multi_worker_steps.py run it; tests/test_multi_worker.py keeps the two equal).
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True, help="shared directory: checkpoints, progress")
parser.add_argument("--loop", choices=("custom", "fit"), default="custom", help="fit: tf_keras")
parser.add_argument("--epochs", type=int, default=1, help="fit: the steps split into epochs")
parser.add_argument("--steps", type=int, default=20, help="training steps of the whole job")
parser.add_argument("--save-every", type=int, default=4, help="checkpoint every N steps")
parser.add_argument("--global-batch", type=int, default=64)
parser.add_argument("--step-delay", type=float, default=0.0, help="sleep after each step (s)")
parser.add_argument("--collective-timeout", type=float, default=None, help="seconds, or none")
parser.add_argument("--try-fit", action="store_true", help="then try Keras 3 fit")
parser.add_argument("--only-chief-saves", action="store_true", help="break the rule (demo)")
parser.add_argument("--preempted-exit", type=int, default=42, help="exit code after a preemption")
args = parser.parse_args()

tf_config = json.loads(os.environ["TF_CONFIG"])
me = f"{tf_config['task']['type']}-{tf_config['task']['index']}"
is_chief = tf_config["task"]["index"] == 0  # a cluster of workers only: worker 0 is the chief
out = Path(args.out)


def say(message):
    print(f"{me}: {message}", flush=True)


import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402  (TensorFlow starts here, after TF_CONFIG was read)

if os.environ.get("TF_USE_LEGACY_KERAS") == "1":  # a per-process switch, read at startup
    import tf_keras as keras  # Keras 2: fit runs across processes (section 4)
else:
    import keras

say(f"TensorFlow {tf.__version__}, Keras {keras.__version__}; waiting for every worker")
communication = tf.distribute.experimental.CommunicationOptions(
    implementation=tf.distribute.experimental.CommunicationImplementation.RING,  # NCCL on GPUs
    timeout_seconds=args.collective_timeout,  # None: no limit for a peer that is slow, not dead
)
# Worker 0 hosts the coordination service, which declares a worker dead after 10 s without
# a heartbeat: a busy machine can stall a process that long. There is no public setting;
# ParameterServerStrategy sets this field with the same private call.
from tensorflow.python.eager import context  # noqa: E402

context.context().configure_coordination_service(
    "standalone", "/job:worker/replica:0/task:0", heartbeat_timeout_in_ms=60_000
)
strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=communication)
say(f"all workers up: {strategy.num_replicas_in_sync} replicas in sync")

with strategy.scope():  # variables created here are mirrored on every worker
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(64, "relu"), keras.layers.Dense(1)]
    )
    optimizer = keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)
    optimizer.build(model.trainable_variables)  # momentum slots, mirrored too
    examples_seen = tf.Variable(  # each worker counts its own; reading it sums over workers
        0.0,
        synchronization=tf.VariableSynchronization.ON_READ,
        aggregation=tf.VariableAggregation.SUM,
    )

# The same stream of global batches in every worker; auto-sharding gives each worker its part.
features = tf.random.stateless_normal((args.global_batch * 8, 16), seed=(1, 2))
labels = tf.tanh(features @ tf.random.stateless_normal((16, 1), seed=(3, 4)))
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(args.global_batch)
options = tf.data.Options()
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
dataset = dataset.with_options(options)


def log_step(step, loss):  # one JSON line per step, on disk at once: a kill loses nothing
    with open(out / f"progress-{args.loop}-{me}.jsonl", "a") as progress:
        progress.write(json.dumps({"step": step, "loss": loss, "time": time.time()}) + "\n")


if args.loop == "fit":  # section 4: tf_keras fit, which saves and resumes by itself

    class LogSteps(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            log_step(int(optimizer.iterations.numpy()), float(logs["loss"]))
            time.sleep(args.step_delay)

    model.compile(optimizer=optimizer, loss="mse")
    backup = keras.callbacks.BackupAndRestore(str(out / "backup"), save_freq=args.save_every)
    steps_per_epoch = args.steps // args.epochs
    model.fit(dataset, epochs=args.epochs, steps_per_epoch=steps_per_epoch, verbose=0,
              callbacks=[backup, LogSteps()])  # fmt: skip
    np.savez(out / f"weights-fit-{me}.npz", *model.get_weights())
    say("DONE")
    sys.exit(0)

# Every worker saves: the chief into the shared directory, the others into their own
# temporary one (saving may run collectives; a worker that skips it leaves the others waiting).
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, examples_seen=examples_seen)
chief_dir = out / "checkpoints"
save_dir = chief_dir if is_chief else out / f"checkpoints-tmp-{me}"
manager = tf.train.CheckpointManager(checkpoint, save_dir, max_to_keep=2)
latest = tf.train.latest_checkpoint(chief_dir)  # every worker restores the chief's checkpoint
if latest:
    checkpoint.restore(latest)

# A preemption notice to any worker (SIGTERM here) makes every worker save at the same step,
# with the manager above, then call exit_for_restart. On Google Cloud VMs TensorFlow can watch
# the maintenance events itself; giving it the watcher makes the notice the same everywhere.
notice = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: notice.set())


def exit_for_restart():
    say(f"preempted: saved step {int(optimizer.iterations.numpy())}, exiting for a restart")
    sys.exit(args.preempted_exit)


preemption = tf.distribute.experimental.PreemptionCheckpointHandler(
    strategy.cluster_resolver,
    manager,  # the non-chief's copy goes to its temporary directory, as for every save
    termination_config=tf.distribute.experimental.TerminationConfig(
        termination_watcher_fn=notice.is_set, exit_fn=exit_for_restart, grace_period=0
    ),
)
start = int(optimizer.iterations.numpy())
say(f"restored step {start} from {latest}" if latest else "no checkpoint: starting at step 0")

batches = iter(strategy.experimental_distribute_dataset(dataset.skip(start)))  # resume there


def replica_step(x, y):
    with tf.GradientTape() as tape:
        per_example = tf.square(model(x, training=True) - y)[:, 0]
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=args.global_batch)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    examples_seen.assign_add(tf.cast(tf.shape(x)[0], tf.float32))
    return loss


@tf.function
def train_step(iterator):
    losses = strategy.run(replica_step, args=next(iterator))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)


board = tf.summary.create_file_writer(str(out / "logs" / me))  # TensorBoard: a folder per worker
for _ in range(start, args.steps):
    began = time.perf_counter()
    loss = float(preemption.run(train_step, batches))  # saves and exits on a notice
    step = int(optimizer.iterations.numpy())
    log_step(step, loss)
    with board.as_default(step=step):  # the curves, written outside strategy.run
        tf.summary.scalar("loss", loss)
        tf.summary.scalar("steps per second", 1 / (time.perf_counter() - began))
    board.flush()  # to disk now: a killed process loses what it has not flushed
    if step % args.save_every == 0 and (is_chief or not args.only_chief_saves):
        manager.save(checkpoint_number=step)
        say(f"saved step {step}, {examples_seen.numpy():.0f} examples seen by all workers")
    time.sleep(args.step_delay)
if not is_chief and save_dir.exists():
    tf.io.gfile.rmtree(str(save_dir))  # a non-chief's copy was only there to take part
np.savez(out / f"weights-custom-{me}.npz", *model.get_weights())
say(f"trained to step {int(optimizer.iterations.numpy())}")

if args.try_fit:  # Keras 3 fit under this strategy, across processes (keras-team/keras#20585)
    model.compile(optimizer=optimizer, loss="mse")
    try:
        model.fit(dataset, steps_per_epoch=2, epochs=1, verbose=0)
        say("Keras 3 fit: trained")
    except Exception as err:  # noqa: BLE001  (reported, not hidden)
        say(f"Keras 3 fit failed: {type(err).__name__}: {str(err).splitlines()[0][:200]}")
say("DONE")
