"""Generated from lesson 09 by tools/save_taught.py: edit the lesson, then run it.

The lesson: notebooks/09_parameter_server_strategy.ipynb.
SETUP: its setup cell's settings; SIZES: each pick(smoke=..., cpu=..., gpu=...) it makes.
Each definition is the lesson's, with the lesson's imports of what it uses inside its body.
"""

__all__ = ["SETUP", "SIZES", "measure_workers", "port_is_listening"]

SETUP = {"legacy_keras": True}
SIZES = {
    "steps": {"smoke": 40, "cpu": 400, "gpu": 2000},
    "rounds": {"smoke": 3, "cpu": 5, "gpu": 5},
    "steps_per_round": {"smoke": 20, "cpu": 200, "gpu": 1000},
    "steps_per_epoch": {"smoke": 10, "cpu": 100, "gpu": 500},
    "resume_steps": {"smoke": 16, "cpu": 64, "gpu": 64},
    "tp_steps": {"smoke": 24, "cpu": 200, "gpu": 400},
    "tp_work": {"smoke": 32, "cpu": 64, "gpu": 64},
}


def port_is_listening(address):  # does something accept connections at host:port?
    import socket

    host, port = address.rsplit(":", 1)
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, int(port))) == 0


def measure_workers(spec, n, *, steps, work):
    """(steps/s, steps each worker ran) of a compute-only step on the first n workers."""
    import gc
    import time

    import portpicker
    import tensorflow as tf

    chief = [f"localhost:{portpicker.pick_unused_port()}"]  # a fresh chief port for each connection
    sub = {**spec, "worker": spec["worker"][:n], "chief": chief}
    gc.collect()  # free the old connection's functions while its servers still know them
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(sub), task_type="chief", task_id=0, rpc_layer="grpc"
    )
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        w = tf.Variable(tf.random.stateless_normal([128, 128], seed=[0, 0]) * 0.05)
        per_worker = tf.Variable(tf.zeros([n], tf.int64))

    @tf.function
    def step():
        local_w = w.read_value()  # one read from the ps per step; the loop runs on the worker
        h = tf.random.normal([128, 128])
        for _ in tf.range(work):
            h = tf.tanh(tf.matmul(h, local_w))
        w.assign_add(1e-6 * tf.reduce_mean(h) * tf.ones_like(local_w))
        worker = tf.distribute.coordinator.experimental_get_current_worker_index()
        per_worker.assign_add(tf.one_hot(worker, n, dtype=tf.int64))

    for _ in range(4):  # warm up: trace the step, build each worker's function
        coordinator.schedule(step)
    coordinator.join()
    before, start = per_worker.numpy(), time.perf_counter()
    for _ in range(steps):
        coordinator.schedule(step)
    coordinator.join()
    elapsed = time.perf_counter() - start
    return steps / elapsed, [int(k) for k in per_worker.numpy() - before]
