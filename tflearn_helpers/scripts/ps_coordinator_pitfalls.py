"""Lesson 02's two pitfalls, each in a fresh process (the notebook runs it with a timeout).

--demo keras3 : Keras 3 ``Model.fit`` under ParameterServerStrategy (it raises; run with
                TF_USE_LEGACY_KERAS=0, since that choice is made when TensorFlow is imported).
--demo threads --threads N : one custom-loop step on an in-process cluster whose worker
                servers get N inter-op threads (N=1 deadlocks: the notebook kills it).
"""

from __future__ import annotations

import argparse
import sys

from tflearn_helpers import cluster as cluster_mod
from tflearn_helpers import ps_strategy


def keras3_fit(strategy) -> int:
    import keras
    import tensorflow as tf

    ps_strategy.emit("versions", keras=keras.__version__, tf=tf.__version__)
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    data = tf.data.Dataset.from_tensor_slices((tf.ones([32, 4]), tf.ones([32, 1]))).batch(8)
    try:
        model.fit(data, epochs=1, steps_per_epoch=2, verbose=0)
    except Exception as err:  # the point of the demo: show what Keras 3 raises
        ps_strategy.emit("fit_failed", error=type(err).__name__, message=str(err)[:400])
        return 1
    ps_strategy.emit("fit_worked")
    return 0


def one_step(strategy, coordinator) -> int:
    import tensorflow as tf

    with strategy.scope():
        v = tf.Variable(tf.ones([4, 4]))

    @tf.function
    def step():
        return tf.reduce_sum(tf.matmul(v, v))

    ps_strategy.emit("scheduling")
    result = coordinator.schedule(step)
    coordinator.join()
    ps_strategy.emit("step_done", value=float(result.fetch()))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--demo", choices=("keras3", "threads"), required=True)
    parser.add_argument("--threads", type=int, default=0, help="worker inter-op threads")
    args = parser.parse_args()
    import tensorflow as tf

    spec = cluster_mod.local_cluster_spec(workers=2, ps=1, chief=True)
    threads = args.threads or len(spec["worker"]) + 1
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=threads)
    servers = [  # noqa: F841 (they serve while referenced; they stop when the process exits)
        tf.distribute.Server(
            tf.train.ClusterSpec(spec),
            job_name=job,
            task_index=i,
            config=config,
            protocol="grpc",
            start=True,
        )
        for job in ("worker", "ps")
        for i in range(len(spec[job]))
    ]
    ps_strategy.emit("cluster", workers=len(spec["worker"]), ps=1, threads=threads)
    strategy, coordinator = ps_strategy.make_strategy(spec)
    if args.demo == "keras3":
        return keras3_fit(strategy)
    return one_step(strategy, coordinator)


if __name__ == "__main__":
    sys.exit(main())
