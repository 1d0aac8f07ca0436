"""Exercise checks 08: right answers pass, wrong ones get a hint without the answer."""

import json
import math

import tensorflow as tf

from tflearn_helpers.checks import RIGHT, WRONG, _evaluate

CLUSTER = {
    "chief": ["localhost:2222"],
    "worker": ["localhost:2223", "localhost:2224"],
    "ps": ["localhost:2225"],
    "evaluator": ["localhost:2226"],
}


def test_08_4_placement():
    assert _evaluate("08.4", "ps:0").status == RIGHT
    wrong = _evaluate("08.4", "ps:1")
    assert wrong.status == WRONG and "ps:0" not in wrong.message
    assert _evaluate("08.4", 3).status == WRONG


def test_08_4_refuses_an_answer_read_from_the_course_table():
    from tflearn_helpers import between_graph

    # as a notebook cell: the answer read from the course's placement table, then checked
    cell = (
        'answer = {v: d for v, _, d, _ in between_graph.placement(num_ps=3)}["logits/kernel"]\n'
        'result = _evaluate("08.4", answer)\n'
    )
    scope = {"between_graph": between_graph, "_evaluate": _evaluate}
    exec(compile(cell, "<cell>", "exec"), scope)
    assert scope["result"].status == WRONG and "course's code" in scope["result"].message
    assert "ps:0" not in scope["result"].message


def test_08_3_staleness():
    def right(before, after):
        return [a - b - 1 for b, a in zip(before, after, strict=True)]

    def off_by_one(before, after):
        return [a - b for b, a in zip(before, after, strict=True)]

    def borrowed(before, after):
        from tflearn_helpers.topics.ps_workers import WorkerLog

        return WorkerLog(0, before=before, after=after).staleness

    assert _evaluate("08.3", right).status == RIGHT
    assert "own update" in _evaluate("08.3", off_by_one).message
    assert "course's code" in _evaluate("08.3", borrowed).message
    assert _evaluate("08.3", lambda before, after: [0, 2, 0]).status == WRONG
    assert _evaluate("08.3", [0, 1]).status == WRONG


def test_08_2_evaluator_tf_config():
    right = json.dumps({"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0}})
    assert _evaluate("08.2", right).status == RIGHT
    chief = json.dumps({"cluster": CLUSTER, "task": {"type": "chief", "index": 0}})
    assert '["task"]["type"]' in _evaluate("08.2", chief).message
    assert "not valid" in _evaluate("08.2", "{not json").message
    no_eval = {k: v for k, v in CLUSTER.items() if k != "evaluator"}
    bad = json.dumps({"cluster": no_eval, "task": {"type": "chief", "index": 0}})
    assert _evaluate("08.2", bad).status == WRONG


def test_08_2_hints_name_the_field():
    no_ps = {k: v for k, v in CLUSTER.items() if k != "ps"}
    bad = json.dumps({"cluster": no_ps, "task": {"type": "evaluator", "index": 0}})
    assert '["cluster"]' in _evaluate("08.2", bad).message
    chief = json.dumps({"cluster": CLUSTER, "task": {"type": "chief", "index": 0}})
    assert '["task"]["type"]' in _evaluate("08.2", chief).message
    three = dict(CLUSTER, worker=["localhost:1", "localhost:3", "localhost:5"])
    wrong = _evaluate("08.2", json.dumps({"cluster": three, "task": {"type": "evaluator"}}))
    assert '["worker"]' in wrong.message and "2" not in wrong.message


def _graph_builder(setter_kwargs, compute=True):
    import tensorflow as tf

    v1 = tf.compat.v1

    def build(cluster, task):
        kwargs = {
            key: (value(cluster, task) if callable(value) else value)
            for key, value in setter_kwargs.items()
        }
        with v1.device(v1.train.replica_device_setter(**kwargs)):
            x = v1.placeholder(tf.float32, [None, 10])
            w, b = v1.get_variable("w", [10, 5]), v1.get_variable("b", [5])
            return tf.matmul(x, w) + b if compute else x

    return build


def test_08_1_runs_the_learners_graph_and_checks_placement():
    right = _graph_builder(
        {"cluster": lambda c, t: c, "worker_device": lambda c, t: f"/job:worker/task:{t}"}
    )
    assert _evaluate("08.1", right).status == RIGHT
    wrong_worker = _graph_builder({"cluster": lambda c, t: c})  # compute on the default worker
    assert "worker" in _evaluate("08.1", wrong_worker).message
    for typed_in in range(2):  # two random workers are asked: a typed-in one is wrong once
        fixed = _graph_builder(
            {"cluster": lambda c, t: c, "worker_device": f"/job:worker/task:{typed_in}"}
        )
        assert "not on the worker whose graph" in _evaluate("08.1", fixed).message
    one_ps = _graph_builder({"ps_tasks": 1, "worker_device": lambda c, t: f"/job:worker/task:{t}"})
    assert "one ps task" in _evaluate("08.1", one_ps).message
    no_compute = _graph_builder({"cluster": lambda c, t: c}, compute=False)
    assert "model" in _evaluate("08.1", no_compute).message

    def unplaced(cluster, task):
        import tensorflow as tf

        x = tf.compat.v1.placeholder(tf.float32, [None, 10])
        w, b = tf.compat.v1.get_variable("w", [10, 5]), tf.compat.v1.get_variable("b", [5])
        return tf.matmul(x, w) + b

    assert "not on a ps task" in _evaluate("08.1", unplaced).message
    assert _evaluate("08.1", 3).status == WRONG

    def course(cluster, task):
        from tflearn_helpers import between_graph

        return between_graph.build_graph(cluster, task)["loss"]

    assert "course's code" in _evaluate("08.1", course).message

    def stub(cluster, task): ...

    assert _evaluate("08.1", stub).status == "not attempted"


# -- 08.5: the learner's synchronous worker, run on 1 ps + 2 worker processes --------------
# Each answer is a module-level function: the check reads its source, as from a notebook cell.
def sync_right(cluster, task, workers, x, y):
    v1 = tf.compat.v1
    setter = v1.train.replica_device_setter(
        cluster=cluster, worker_device=f"/job:worker/task:{task}"
    )
    with v1.device(setter):
        step = v1.train.get_or_create_global_step()
        w = v1.get_variable("w", [10, 1], initializer=v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        opt = v1.train.SyncReplicasOptimizer(
            v1.train.GradientDescentOptimizer(0.1), workers, total_num_replicas=workers
        )
        train_op = opt.minimize(loss, global_step=step)
    return loss, train_op, [opt.make_session_run_hook(is_chief=task == 0)]


def sync_but_async(cluster, task, workers, x, y):  # no SyncReplicasOptimizer at all
    v1 = tf.compat.v1
    setter = v1.train.replica_device_setter(
        cluster=cluster, worker_device=f"/job:worker/task:{task}"
    )
    with v1.device(setter):
        step = v1.train.get_or_create_global_step()
        w = v1.get_variable("w", [10, 1], initializer=v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return loss, train_op, []


def sync_one_gradient(cluster, task, workers, x, y):  # aggregates 1 gradient per update
    v1 = tf.compat.v1
    setter = v1.train.replica_device_setter(
        cluster=cluster, worker_device=f"/job:worker/task:{task}"
    )
    with v1.device(setter):
        step = v1.train.get_or_create_global_step()
        w = v1.get_variable("w", [10, 1], initializer=v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        opt = v1.train.SyncReplicasOptimizer(
            v1.train.GradientDescentOptimizer(0.1), 1, total_num_replicas=workers
        )
        train_op = opt.minimize(loss, global_step=step)
    return loss, train_op, [opt.make_session_run_hook(is_chief=task == 0)]


def sync_no_hook(cluster, task, workers, x, y):  # the chief never starts the aggregation
    v1 = tf.compat.v1
    setter = v1.train.replica_device_setter(
        cluster=cluster, worker_device=f"/job:worker/task:{task}"
    )
    with v1.device(setter):
        step = v1.train.get_or_create_global_step()
        w = v1.get_variable("w", [10, 1], initializer=v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        opt = v1.train.SyncReplicasOptimizer(
            v1.train.GradientDescentOptimizer(0.1), workers, total_num_replicas=workers
        )
        train_op = opt.minimize(loss, global_step=step)
    return loss, train_op, []


def sync_on_the_worker(cluster, task, workers, x, y):  # no device setter: nothing on the ps
    v1 = tf.compat.v1
    step = v1.train.get_or_create_global_step()
    w = v1.get_variable("w", [10, 1], initializer=v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    opt = v1.train.SyncReplicasOptimizer(
        v1.train.GradientDescentOptimizer(0.1), workers, total_num_replicas=workers
    )
    return loss, opt.minimize(loss, global_step=step), [opt.make_session_run_hook(task == 0)]


def sync_stub(cluster, task, workers, x, y): ...


def test_08_5_runs_the_learners_sync_worker_on_a_local_cluster():
    assert _evaluate("08.5", sync_stub).status == "not attempted"
    assert _evaluate("08.5", sync_right).status == RIGHT
    for answer, words in [
        (sync_but_async, "asynchronous"),
        (sync_one_gradient, "how many should it average?"),
        (sync_on_the_worker, "not on a ps task"),
    ]:
        verdict = _evaluate("08.5", answer)
        assert verdict.status == WRONG and words in verdict.message, (answer, verdict)
        assert "SyncReplicasOptimizer" not in verdict.message  # a hint, not the answer


def test_08_5_a_stalled_sync_run_is_wrong_not_a_hang():
    verdict = _evaluate("08.5", sync_no_hook, 30, 20.0)  # 20 s, then the cluster is stopped
    assert verdict.status == WRONG and "stalled" in verdict.message, verdict
    assert "hook" not in verdict.message


def _sync_outcome(chief_losses, other_losses):
    """What two workers printed: (global step after the run, loss) pairs each."""
    graph = {"kind": "graph", "variables": {"w": "/job:ps/task:0"}, "num_required": [2]}
    graph.update(global_step=True, num_required_of_3=[3], compute=["/job:worker/task:0"], task=0)
    runs = [
        [{"kind": "step", "after": after, "loss": loss} for after, loss in pairs]
        for pairs in (chief_losses, other_losses)
    ]
    return {"code": 0, "logs": ["", ""], "lines": [[graph, *runs[0]], runs[1]]}


def test_08_5_the_loss_is_read_in_step_order_from_every_worker():
    """CI (TF 2.19, busy): worker 1 made 57 runs, the chief 4 (global steps 27-30, losses all
    ~3e-5), and the right answer was told its loss did not fall. Judged on both workers' losses,
    in global-step order."""
    from tflearn_helpers.checks import lesson08

    falling = [(s, 4.0 * 0.65**s) for s in range(1, 31)]  # as learning rate 0.1 makes it
    assert lesson08._judge_sync(_sync_outcome(falling[:3], falling[3:]), 30, 60) is None
    flat = [(s, 4.0) for s in range(1, 31)]
    hint = lesson08._judge_sync(_sync_outcome(flat[::2], flat[1::2]), 30, 60)
    assert hint and "did not fall" in hint


def test_08_5_judges_the_step_each_update_takes():
    """Measured on the local cluster (2 workers, 30 updates): log(loss) falls 0.42-0.43 per
    update at learning rate 0.1, 0.20 with the loss divided by the workers."""
    from tflearn_helpers.checks import lesson08

    def pairs(shrink, runs=60):  # runs spread over updates 1..30, two per update
        return [(1 + k // 2, 4.0 * shrink ** (1 + k // 2)) for k in range(runs)]

    right = pairs(math.exp(-0.43))
    assert lesson08._judge_sync(_sync_outcome(right[:31], right[31:]), 30, 60) is None
    halved = pairs(math.exp(-0.20))
    hint = lesson08._judge_sync(_sync_outcome(halved[:31], halved[31:]), 30, 60)
    assert hint and "learning rate of 0.048" in hint, hint
    doubled = pairs(math.exp(-0.95))
    hint = lesson08._judge_sync(_sync_outcome(doubled[:31], doubled[31:]), 30, 60)
    assert hint and "learning rate of 0.2" in hint, hint


def test_08_5_a_loss_that_grows_is_told_apart_from_one_that_stays():
    """A summed squared error (not its mean) makes each step 32 times too large: the loss
    grows without bound, which "does train_op minimize the loss" would not explain."""
    from tflearn_helpers.checks import lesson08

    growing = [(s, 4.0 * 3.0**s) for s in range(1, 31)]
    hint = lesson08._judge_sync(_sync_outcome(growing[::2], growing[1::2]), 30, 60)
    assert hint and "grew" in hint and "overshot" in hint, hint
    exploded = [(s, 4.0 if s < 5 else float("nan")) for s in range(1, 31)]
    hint = lesson08._judge_sync(_sync_outcome(exploded[::2], exploded[1::2]), 30, 60)
    assert hint and "grew" in hint, hint


def test_08_2_names_the_task_type_before_the_index():
    import json

    from tflearn_helpers.checks import lesson08

    cluster = {"chief": ["localhost:1"], "worker": ["localhost:2", "localhost:3"]}
    cluster.update(ps=["localhost:4"], evaluator=["localhost:5"])
    answer = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 2}})
    assert '["type"]' in lesson08.evaluator_tf_config(answer)
    right = json.dumps({"cluster": cluster, "task": {"type": "evaluator", "index": 0}})
    assert lesson08.evaluator_tf_config(right) is None
