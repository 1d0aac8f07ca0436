"""Generated from lesson 08 by tools/save_taught.py: edit the lesson, then run it.

The lesson: notebooks/08_parameter_servers_estimator_era.ipynb.
SETUP: its setup cell's settings; SIZES: each pick(smoke=..., cpu=..., gpu=...) it makes.
Each definition is the lesson's, with the lesson's imports of what it uses inside its body.
"""

__all__ = ["QuickWorkerSessionCreator", "SETUP", "SIZES", "build_graph"]

SETUP = {"devices": 2}
SIZES = {
    "UPDATES": {"smoke": 80, "cpu": 400, "gpu": 400},
    "CHECKPOINT_EVERY": {"smoke": 50, "cpu": 100, "gpu": 100},
}


def build_graph(cluster, task, mode="async", aggregate=0, workers=1):
    """This worker's own graph: variables on the ps tasks, compute on this worker."""
    import tensorflow as tf

    v1 = tf.compat.v1

    setter = v1.train.replica_device_setter(
        cluster=cluster, worker_device=f"/job:worker/task:{task}"
    )
    with v1.device(setter):
        step = v1.train.get_or_create_global_step()
        x = v1.placeholder(tf.float32, [None, 20], name="x")
        y = v1.placeholder(tf.int64, [None], name="y")
        w1 = v1.get_variable(
            "hidden/kernel", [20, 32], initializer=v1.glorot_uniform_initializer(seed=1)
        )
        b1 = v1.get_variable("hidden/bias", [32], initializer=v1.zeros_initializer())
        w2 = v1.get_variable(
            "logits/kernel", [32, 4], initializer=v1.glorot_uniform_initializer(seed=2)
        )
        b2 = v1.get_variable("logits/bias", [4], initializer=v1.zeros_initializer())
        before = tf.identity(step.read_value(), name="step_before")
        with tf.control_dependencies([before]):  # read the parameters after the global step
            logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        opt = v1.train.GradientDescentOptimizer(0.2)
        if mode == "sync":  # each update averages `aggregate` gradients of `workers` replicas
            opt = v1.train.SyncReplicasOptimizer(opt, aggregate, total_num_replicas=workers)
        train_op = opt.minimize(loss, global_step=step)
        with tf.control_dependencies([train_op]):
            after = tf.identity(step.read_value(), name="step_after")
    hooks = [opt.make_session_run_hook(is_chief=task == 0)] if mode == "sync" else []
    return dict(x=x, y=y, loss=loss, train=train_op, before=before, after=after, hooks=hooks)


def _define_QuickWorkerSessionCreator():
    import tensorflow as tf

    v1 = tf.compat.v1

    class QuickWorkerSessionCreator(v1.train.SessionCreator):
        """A non-chief's session: wait for the chief's variables, checking every 0.2 s
        (MonitoredTrainingSession's non-chiefs check every 30 s, and it cannot be changed)."""

        def __init__(self, target, config):
            self.target, self.config = target, config

        def create_session(self):
            scaffold = v1.train.Scaffold()
            scaffold.finalize()
            manager = v1.train.SessionManager(
                local_init_op=scaffold.local_init_op,
                ready_op=scaffold.ready_op,
                ready_for_local_init_op=scaffold.ready_for_local_init_op,
                recovery_wait_secs=0.2,
            )
            return manager.wait_for_session(self.target, config=self.config, max_wait_secs=60)

    return QuickWorkerSessionCreator


QuickWorkerSessionCreator: type  # made by __getattr__ on first use


def __getattr__(name):  # a class whose bases need TensorFlow: made on first use
    if name == "QuickWorkerSessionCreator":
        globals()[name] = _define_QuickWorkerSessionCreator()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
