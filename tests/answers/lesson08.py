"""The tables tests/test_mutations.py runs against the checks of lesson 08
(tflearn_helpers/checks/lesson08.py): ``MUTATIONS``, wrong answers made of the solution's
lines (each must be judged wrong, with a hint), and ``RIGHT_ANSWERS``, right answers written
differently (each must be judged right). Test data: kept out of the learner's wheel."""

from __future__ import annotations

MUTATIONS: dict[str, list[tuple[str, str, str]]] = {}

# Wrong answers derived from the solution (solutions/08_parameter_servers_estimator_era.ipynb),
# one plausible mistake each: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "wrong".
MUTATIONS: dict[str, list[tuple[str, str, str]]] = {
    "08.1": [
        (
            "no worker_device: compute on the default worker",
            'cluster=cluster, worker_device=f"/job:worker/task:{task}"',
            "cluster=cluster",
        ),
        ("worker 0 hard-coded", 'f"/job:worker/task:{task}"', '"/job:worker/task:0"'),
        ("worker 1 hard-coded", 'f"/job:worker/task:{task}"', '"/job:worker/task:1"'),
        (
            "one ps task, not the cluster",
            "cluster=cluster, worker_device=",
            "ps_tasks=1, worker_device=",
        ),
        (
            "the variables made before the device scope",
            "    with v1.device(setter):\n"
            '        x = v1.placeholder(tf.float32, [None, 10], name="x")\n'
            '        w = v1.get_variable("w", [10, 5])\n'
            '        b = v1.get_variable("b", [5])\n',
            '    w = v1.get_variable("w", [10, 5])\n'
            '    b = v1.get_variable("b", [5])\n'
            "    with v1.device(setter):\n"
            '        x = v1.placeholder(tf.float32, [None, 10], name="x")\n',
        ),
        (
            "the output computed after the scope",
            "        return tf.matmul(x, w) + b\n",
            "    return tf.matmul(x, w) + b\n",
        ),
        (
            "everything on the worker (its device, not the setter)",
            "with v1.device(setter):",
            'with v1.device(f"/job:worker/task:{task}"):',
        ),
        (
            "every op on ps task 0, no device function",
            "    setter = v1.train.replica_device_setter(\n"
            '        cluster=cluster, worker_device=f"/job:worker/task:{task}"\n'
            "    )\n"
            "    with v1.device(setter):",
            '    with v1.device("/job:ps/task:0"):',
        ),
        (
            "the course's build_graph",
            "        return tf.matmul(x, w) + b\n",
            "        return between_graph.build_graph(cluster, task)['loss']\n",
        ),
    ],
    "08.2": [
        ("the chief's task", '"type": "evaluator", "index": 0', '"type": "chief", "index": 0'),
        ("a worker's task", '"type": "evaluator", "index": 0', '"type": "worker", "index": 0'),
        (
            "a third worker's task",
            '"type": "evaluator", "index": 0',
            '"type": "worker", "index": 2',
        ),
        (
            "three workers",
            '"worker": ["localhost:2223", "localhost:2224"]',
            '"worker": ["localhost:2223", "localhost:2224", "localhost:2227"]',
        ),
        ("two ps tasks", '"ps": ["localhost:2225"]', '"ps": ["localhost:2225", "localhost:2227"]'),
        ("evaluator index 1", '"type": "evaluator", "index": 0', '"type": "evaluator", "index": 1'),
        (
            "the index as text",
            '"type": "evaluator", "index": 0',
            '"type": "evaluator", "index": "0"',
        ),
        (
            "the chief's port again",
            '"evaluator": ["localhost:2226"]',
            '"evaluator": ["localhost:2222"]',
        ),
    ],
    "08.3": [
        ("the own update included", "a - b - 1 for b, a", "a - b for b, a"),
        ("the sign flipped", "a - b - 1 for b, a", "b - a + 1 for b, a"),
        (
            "the course's own WorkerLog(...).staleness",
            "    return [a - b - 1 for b, a in zip(before, after, strict=True)]\n",
            "    from tflearn_helpers.topics.ps_workers import WorkerLog\n\n"
            "    return WorkerLog(0, before=before, after=after).staleness\n",
        ),
        (
            "the example's answer, typed in",
            "    return [a - b - 1 for b, a in zip(before, after, strict=True)]\n",
            "    return [0, 2, 0]\n",
        ),
        (
            "the gaps between reads",
            "    return [a - b - 1 for b, a in zip(before, after, strict=True)]\n",
            "    return [b2 - b1 - 1 for b1, b2 in zip(before, before[1:])]\n",
        ),
    ],
    "08.4": [
        (
            "read from the course's placement table",
            'answer = ["ps:0", "ps:1", "ps:2"][3 % 3]',
            'answer = {v: d for v, _, d, _ in between_graph.placement(num_ps=3)}["logits/kernel"]',
        ),
        ("the global step forgotten", "[3 % 3]", "[2 % 3]"),
        ("counted from one", "[3 % 3]", "[4 % 3]"),
        ("a number, not a task", 'answer = ["ps:0", "ps:1", "ps:2"][3 % 3]', "answer = 3 % 3"),
    ],
    "08.5": [
        (
            "the summed squared error, not its mean",
            "loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))",
            "loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - y))",
        ),
        (
            "asynchronous: no SyncReplicasOptimizer",
            "        opt = v1.train.SyncReplicasOptimizer(\n"
            "            v1.train.GradientDescentOptimizer(0.1),\n"
            "            replicas_to_aggregate=workers,\n"
            "            total_num_replicas=workers,\n"
            "        )\n"
            "        train_op = opt.minimize(loss, global_step=step)\n"
            "    return loss, train_op, [opt.make_session_run_hook(is_chief=task == 0)]\n",
            "        opt = v1.train.GradientDescentOptimizer(0.1)\n"
            "        train_op = opt.minimize(loss, global_step=step)\n"
            "    return loss, train_op, []\n",
        ),
        ("one gradient per update", "replicas_to_aggregate=workers,", "replicas_to_aggregate=1,"),
        (
            "every worker's hook told it is the chief",
            "make_session_run_hook(is_chief=task == 0)",
            "make_session_run_hook(is_chief=True)",
        ),
        (
            "the learning rate shared out among the workers",
            "GradientDescentOptimizer(0.1)",
            "GradientDescentOptimizer(0.1 / workers)",
        ),
        (
            "the workers' gradients added up, not averaged: the loss times the workers",
            "        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))\n",
            "        loss = workers * tf.reduce_mean(tf.square(tf.matmul(x, w) - y))\n",
        ),
        ("no device setter", "    with v1.device(setter):\n", "    if True:\n"),
        (
            "no global step",
            "        step = v1.train.get_or_create_global_step()\n",
            "        step = None\n",
        ),
        (
            "no worker_device: compute on the default worker",
            'cluster=cluster, worker_device=f"/job:worker/task:{task}"',
            "cluster=cluster",
        ),
        ("worker 0 hard-coded", 'f"/job:worker/task:{task}"', '"/job:worker/task:0"'),
        (
            "two workers written in",
            "replicas_to_aggregate=workers,\n            total_num_replicas=workers,",
            "replicas_to_aggregate=2,\n            total_num_replicas=2,",
        ),
    ],
}

_SYNC = """\
        opt = v1.train.SyncReplicasOptimizer(
            v1.train.GradientDescentOptimizer(0.1),
            replicas_to_aggregate=workers,
            total_num_replicas=workers,
        )
        train_op = opt.minimize(loss, global_step=step)
"""

# Right answers written differently from the solution, as the exercise's text allows:
# exercise -> [(name, text of the solution cell, what replaces it)]; each must be "right".
RIGHT_ANSWERS: dict[str, list[tuple[str, str, str]]] = {
    "08.1": [
        (
            "the worker's device with %, the output with @",
            'f"/job:worker/task:{task}"',
            '"/job:worker/task:%d" % task',
        ),
        (
            "the input made before the scope, initializers given, ps_tasks counted",
            "    setter = v1.train.replica_device_setter(\n"
            '        cluster=cluster, worker_device=f"/job:worker/task:{task}"\n'
            "    )\n"
            "    with v1.device(setter):\n"
            '        x = v1.placeholder(tf.float32, [None, 10], name="x")\n'
            '        w = v1.get_variable("w", [10, 5])\n'
            '        b = v1.get_variable("b", [5])\n'
            "        return tf.matmul(x, w) + b\n",
            "    x = v1.placeholder(tf.float32, shape=(None, 10))\n"
            "    setter = v1.train.replica_device_setter(\n"
            '        ps_tasks=cluster.num_tasks("ps"),\n'
            '        ps_device="/job:ps",\n'
            '        worker_device=f"/job:worker/task:{task}",\n'
            "    )\n"
            "    with v1.device(setter):\n"
            '        w = v1.get_variable("w", [10, 5], initializer=v1.ones_initializer())\n'
            '        b = v1.get_variable("b", [5], initializer=v1.zeros_initializer())\n'
            "        output = x @ w + b\n"
            "    return output\n",
        ),
    ],
    "08.2": [
        (
            "the evaluator left out of the training cluster",
            '    "evaluator": ["localhost:2226"],\n',
            "",
        ),
        (
            "other ports, the jobs in another order",
            '    "chief": ["localhost:2222"],\n'
            '    "worker": ["localhost:2223", "localhost:2224"],\n'
            '    "ps": ["localhost:2225"],\n'
            '    "evaluator": ["localhost:2226"],\n',
            '    "ps": ["localhost:12000"],\n'
            '    "evaluator": ["127.0.0.1:12004"],\n'
            '    "chief": ["localhost:12001"],\n'
            '    "worker": ["localhost:12002", "localhost:12003"],\n',
        ),
    ],
    "08.3": [
        (
            "a loop",
            "    return [a - b - 1 for b, a in zip(before, after, strict=True)]\n",
            "    result = []\n"
            "    for i in range(len(before)):\n"
            "        result.append(after[i] - before[i] - 1)\n"
            "    return result\n",
        ),
        (
            "NumPy",
            "    return [a - b - 1 for b, a in zip(before, after, strict=True)]\n",
            "    import numpy as np\n\n"
            "    return (np.asarray(after) - np.asarray(before) - 1).tolist()\n",
        ),
    ],
    "08.4": [
        ("the task typed in", 'answer = ["ps:0", "ps:1", "ps:2"][3 % 3]', 'answer = "ps:0"'),
        ("formatted", 'answer = ["ps:0", "ps:1", "ps:2"][3 % 3]', 'answer = f"ps:{3 % 3}"'),
    ],
    "08.5": [
        (
            "the hook's first tokens given explicitly, one per worker",
            "make_session_run_hook(is_chief=task == 0)",
            "make_session_run_hook(task == 0, num_tokens=workers)",
        ),
        (
            "v1.losses, the workers counted from the cluster, the total left to its default",
            "        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))\n" + _SYNC,
            "        loss = v1.losses.mean_squared_error(y, tf.matmul(x, w))\n"
            "        opt = v1.train.SyncReplicasOptimizer(\n"
            "            v1.train.GradientDescentOptimizer(learning_rate=0.1),\n"
            '            replicas_to_aggregate=cluster.num_tasks("worker"),\n'
            "        )\n"
            "        train_op = opt.minimize(loss, global_step=step)\n",
        ),
        (
            "the gradients computed and applied, the default initializer, the hook by name",
            '        w = v1.get_variable("w", [10, 1], initializer=v1.zeros_initializer())\n'
            "        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))\n"
            + _SYNC
            + "    return loss, train_op, [opt.make_session_run_hook(is_chief=task == 0)]\n",
            '        w = v1.get_variable("w", shape=[10, 1])\n'
            "        loss = tf.reduce_mean((x @ w - y) ** 2)\n"
            + _SYNC.replace(
                "        train_op = opt.minimize(loss, global_step=step)\n",
                "        grads_and_vars = opt.compute_gradients(loss)\n"
                "        train_op = opt.apply_gradients(grads_and_vars, global_step=step)\n",
            )
            + "    sync_hook = opt.make_session_run_hook(is_chief=(task == 0))\n"
            "    return loss, train_op, [sync_hook]\n",
        ),
    ],
}

# What the hint of a mutation must say: (exercise, name of the mutation) -> words.
HINTS: dict[tuple[str, str], str] = {
    ("08.1", "every op on ps task 0, no device function"): "fixed device name",
    ("08.2", "a third worker's task"): '["type"]',
    ("08.5", "the summed squared error, not its mean"): "overshot",
}
