"""Exercise check 09.2 runs the learner's whole training loop on a real in-process cluster.

A process can drive one cluster, so the scenario runs in a child process of its own; its
servers stop when it exits.
"""

import json
import os
import subprocess
import sys
import textwrap

SCENARIO = textwrap.dedent(
    """
    import json
    import tensorflow as tf
    from tflearn_helpers import cluster
    from tflearn_helpers.checks import _evaluate

    spec = cluster.local_cluster_spec(workers=2, ps=1, chief=True)
    servers = cluster.in_process_servers(spec)
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(spec), task_type="chief", task_id=0, rpc_layer="grpc"
    )
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)


    def make_train(per_worker=True, wait=True, pipeline=lambda d: d.repeat().batch(32)):
        def train(coordinator, model, optimizer, examples, steps):
            def dataset_fn():
                return pipeline(examples())

            if per_worker:
                iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
            else:
                iterator = iter(dataset_fn())

            def replica_step(x, y):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(tf.square(model(x) - y))
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))
                return loss

            @tf.function
            def train_step(iterator):
                return strategy.run(replica_step, args=next(iterator))

            losses = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(steps)]
            if wait:
                coordinator.join()
            return losses

        return train


    def stub(coordinator, model, optimizer, examples, steps): ...


    verdicts = {}
    for name, answer in [
        ("right", make_train()),
        ("shuffled", make_train(pipeline=lambda d: d.repeat().shuffle(64).batch(32))),
        ("on_the_coordinator", make_train(per_worker=False)),
        ("no_join", make_train(wait=False)),
        ("runs_out", make_train(pipeline=lambda d: d.batch(32))),
        ("stub", stub),
        ("right_again", make_train()),
    ]:
        result = _evaluate("09.2", answer, coordinator)
        verdicts[name] = [result.status, result.message]
    print("VERDICTS " + json.dumps(verdicts))
    """
)


def test_check_09_2_runs_the_learners_loop_on_a_cluster(tmp_path):
    script = tmp_path / "scenario.py"  # a file, so that the stub's source can be read
    script.write_text(SCENARIO)
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "TF_USE_LEGACY_KERAS": "1", "CUDA_VISIBLE_DEVICES": "-1"},
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("VERDICTS ")), None)
    assert line, done.stderr[-3000:]
    verdicts = json.loads(line[len("VERDICTS ") :])
    for name in ("right", "shuffled", "right_again"):  # a wrong answer breaks no later check
        assert verdicts[name][0] == "right", verdicts
    assert "built on the coordinator" in verdicts["on_the_coordinator"][1], verdicts
    assert "still running" in verdicts["no_join"][1], verdicts
    assert "ran out" in verdicts["runs_out"][1], verdicts
    assert verdicts["stub"][0] == "not attempted"
    assert all(verdicts[k][0] == "wrong" for k in ("on_the_coordinator", "no_join", "runs_out"))
