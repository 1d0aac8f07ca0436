"""One cluster task as a bare gRPC server: ``python -m tflearn_helpers.cluster.task_server``.

Reads and validates TF_CONFIG, starts a ``tf.distribute.Server`` for its task and serves
until it is stopped. LocalCluster starts it for ps tasks and for workers that a
coordinator drives (lessons 04, 08 and 09).
"""

from __future__ import annotations

import os
import sys

from . import tf_config
from .local import start_server

__all__ = ["main"]


def main() -> int:
    try:
        config = tf_config.validate(os.environ.get("TF_CONFIG", ""))
    except tf_config.TFConfigError as err:
        print(f"task_server: {err}", file=sys.stderr)
        return 2
    # A bare server runs no Keras code, yet `import tensorflow` loads Keras's optimizers
    # eagerly (tensorflow/__init__.py, "Do an eager load for Keras' code", in a try that
    # passes on ImportError): about 1.5 of a start's 6 CPU-seconds. A None entry in
    # sys.modules makes that import fail, so TensorFlow skips it (docs/MEASURED.md).
    sys.modules.setdefault("keras.src.optimizers", None)
    cluster, task = config["cluster"], config["task"]
    server = start_server(cluster, task["type"], task["index"])
    print(f"{task['type']}:{task['index']} serving at {server.target}", flush=True)
    server.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
