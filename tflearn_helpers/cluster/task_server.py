"""One cluster task as a bare gRPC server: ``python -m tflearn_helpers.cluster.task_server``.

Reads and validates TF_CONFIG, starts a ``tf.distribute.Server`` for its task and serves
until it is stopped. LocalCluster starts it for ps tasks and for workers that a
coordinator drives (lessons 01, 02 and 06).
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    from tflearn_helpers.cluster import tf_config

    try:
        config = tf_config.validate(os.environ.get("TF_CONFIG", ""))
    except tf_config.TFConfigError as err:
        print(f"task_server: {err}", file=sys.stderr)
        return 2
    import tensorflow as tf

    cluster = config["cluster"]
    task = config["task"]
    threads = len(cluster.get("worker", [])) + 1  # see cluster.in_process_servers
    server = tf.distribute.Server(
        tf.train.ClusterSpec(cluster),
        job_name=task["type"],
        task_index=task["index"],
        protocol="grpc",
        config=tf.compat.v1.ConfigProto(inter_op_parallelism_threads=threads),
        start=True,
    )
    print(f"{task['type']}:{task['index']} serving at {server.target}", flush=True)
    server.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
