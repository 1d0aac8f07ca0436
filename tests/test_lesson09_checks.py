"""Exercise check 09.2 runs the learner's dataset and step on a real in-process cluster.

A process can drive one cluster, so the scenario runs in a child process of its own.
"""

import json
import subprocess
import sys
import textwrap

SCENARIO = textwrap.dedent(
    """
    import json
    import tensorflow as tf
    from tflearn_helpers import cluster
    from tflearn_helpers import datasets
    from tflearn_helpers.checks import _evaluate

    spec = cluster.local_cluster_spec(workers=2, ps=1, chief=True)
    servers = cluster.in_process_servers(spec)
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(spec), task_type="chief", task_id=0, rpc_layer="grpc"
    )
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)


    def dataset_fn():
        return datasets.regression_batches(32)


    def finite_dataset_fn():
        return datasets.regression_batches(32, repeat=False).take(3)


    def make_step(apply=True):
        def make_train_step(strategy, model, optimizer):
            def replica_step(x, y):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(tf.square(model(x) - y))
                grads = tape.gradient(loss, model.trainable_variables)
                if apply:
                    optimizer.apply_gradients(zip(grads, model.trainable_variables))
                return loss

            @tf.function
            def train_step(iterator):
                return strategy.run(replica_step, args=next(iterator))

            return train_step

        return make_train_step


    def no_run(strategy, model, optimizer):  # the step's work done without strategy.run
        @tf.function
        def train_step(iterator):
            x, y = next(iterator)
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        return train_step


    def forward_outside(strategy, model, optimizer):  # only the update runs as a replica
        @tf.function
        def train_step(iterator):
            x, y = next(iterator)
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            strategy.run(
                lambda: optimizer.apply_gradients(zip(grads, model.trainable_variables))
            )
            return loss

        return train_step


    def all_but_last(strategy, model, optimizer):  # the last bias is never updated
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads[:-1], model.trainable_variables[:-1]))
            return loss

        @tf.function
        def train_step(iterator):
            return strategy.run(replica_step, args=next(iterator))

        return train_step


    def stub_step(strategy, model, optimizer): ...


    verdicts = {}
    for name, answer in [
        ("right", (dataset_fn, make_step())),
        ("no_update", (dataset_fn, make_step(apply=False))),
        ("runs_out", (finite_dataset_fn, make_step())),
        ("stub", (dataset_fn, stub_step)),
        ("no_run", (dataset_fn, no_run)),
        ("forward_outside", (dataset_fn, forward_outside)),
        ("all_but_last", (dataset_fn, all_but_last)),
    ]:
        result = _evaluate("09.2", answer, coordinator, spec)
        verdicts[name] = [result.status, result.message]
    print("VERDICTS " + json.dumps(verdicts))
    """
)


def test_check_09_2_runs_the_learners_code_on_a_cluster(tmp_path):
    script = tmp_path / "scenario.py"  # a file, so that the stub's source can be read
    script.write_text(SCENARIO)
    env_out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"TF_USE_LEGACY_KERAS": "1", "CUDA_VISIBLE_DEVICES": "-1", **_base_env()},
    )
    line = next(x for x in env_out.stdout.splitlines() if x.startswith("VERDICTS "))
    verdicts = json.loads(line[len("VERDICTS ") :])
    assert verdicts["right"][0] == "right", verdicts
    assert verdicts["no_update"][0] == "wrong" and "did not fall" in verdicts["no_update"][1]
    assert verdicts["runs_out"][0] == "wrong" and "ran out" in verdicts["runs_out"][1]
    assert verdicts["stub"][0] == "not attempted"
    assert verdicts["no_run"][0] == "wrong" and "as each replica" in verdicts["no_run"][1]
    assert "apply_gradients" not in verdicts["no_run"][1]  # no traceback quoting the code
    assert "outside strategy.run" in verdicts["forward_outside"][1], verdicts["forward_outside"]
    assert "never changed" in verdicts["all_but_last"][1], verdicts["all_but_last"]


def _base_env():
    import os

    return {k: v for k, v in os.environ.items() if k not in ("TF_USE_LEGACY_KERAS",)}
