"""Checks for exercises 08 (parameter servers in the Estimator era).

Each check runs the learner's code on inputs it draws afresh (a cluster of a random size and
worker, random logs), reads what the code built or returned, and refuses the course's own
implementation; hints never give the answer.
"""

from __future__ import annotations

import contextlib
import random
import tempfile
from pathlib import Path

import numpy as np

from ..cluster import tf_config
from . import cell_course_calls, course_calls, exercise, learner_source

__all__ = []


@exercise("08.4")
def ps_of_logits_kernel(answer):
    """A quick question, answered by reasoning: the cell that asks it may not read the
    course's placement table (which the notebook shows afterwards)."""
    from ..topics.between_graph import placement

    if not isinstance(answer, str) or not answer.startswith("ps:"):
        return "answer with a task name: 'ps:' and the task's index, as in the placement table"
    used = cell_course_calls()
    if used:
        return (
            f"this cell asks the course's code ({', '.join(used)}): reason it out from "
            "replica_device_setter's round-robin instead, then compare with the table below"
        )
    where = {name: device for name, _, device, _ in placement(num_ps=3)}
    if answer != where["logits/kernel"]:
        return (
            "round-robin follows creation order, and the global step is created first: "
            "count the variables created before logits/kernel"
        )
    return None


@exercise("08.3")
def staleness_function(fn):
    """staleness(before, after) on fresh random logs; the course's own code is not an answer."""
    if not callable(fn):
        return "pass your function itself: staleness(before, after) -> list of ints"
    rng = random.Random()
    for case in range(20):
        before = sorted(rng.randrange(0, 50) for _ in range(case + 1))
        after = [b + 1 + rng.randrange(0, 4) for b in before]
        expected = [a - b - 1 for b, a in zip(before, after, strict=True)]
        got, used = course_calls(fn, before, after)
        if used:
            return (
                f"your function runs the course's code ({', '.join(sorted(set(used)))}): "
                "compute the staleness yourself from the two lists"
            )
        got = list(got)
        if len(got) != len(expected):
            return "return one staleness value per step (as many as there are reads)"
        if got != expected:
            if got == [a - b for b, a in zip(before, after, strict=True)]:
                return "the worker's own update is included in after - before: subtract it"
            return "staleness counts the updates *other* workers applied between the two reads"
    return None


@exercise("08.2")
def evaluator_tf_config(answer):
    role = _task_type(answer)
    if role is not None and role != "evaluator":  # before the counts: the task's own field
        return 'TF_CONFIG["task"]["type"] is not the role this process plays'
    try:
        config = tf_config.validate(answer)
    except tf_config.TFConfigError as err:
        return f"TF_CONFIG is not valid: {err}"
    cluster = config["cluster"]
    missing = sorted({"chief", "worker", "ps"} - set(cluster))  # (the evaluator may be left
    # out: it is not part of the training cluster, and TensorFlow accepts either)
    if missing:
        return f'TF_CONFIG["cluster"] has no "{missing[0]}" job; the exercise\'s cluster has one'
    for job, count in (("worker", 2), ("ps", 1)):
        if len(cluster[job]) != count:
            return f'TF_CONFIG["cluster"]["{job}"] has {len(cluster[job])} address(es): count again'
    if config["task"].get("type") != "evaluator":
        return 'TF_CONFIG["task"]["type"] is not the role this process plays'
    return None


def _task_type(answer):
    """TF_CONFIG's task type, if ``answer`` (a JSON string or a dict) names one, else None."""
    import json

    try:
        config = json.loads(answer) if isinstance(answer, str) else answer
        role = config["task"]["type"]
    except (ValueError, TypeError, KeyError):
        return None
    return role if isinstance(role, str) else None


def _random_cluster():
    """A cluster of 2-4 ps tasks and 2-5 workers (addresses only), and two of its workers."""
    import tensorflow as tf

    rng = random.Random()
    ps, workers = rng.randint(2, 4), rng.randint(2, 5)
    ports = iter(rng.sample(range(2000, 9000), ps + workers))
    spec = {
        "ps": [f"localhost:{next(ports)}" for _ in range(ps)],
        "worker": [f"localhost:{next(ports)}" for _ in range(workers)],
    }
    return tf.train.ClusterSpec(spec), rng.sample(range(workers), 2)


def ancestors(op) -> list:
    """``op`` and every op its output is computed from (the forward pass, not initializers)."""
    seen, todo = {op.name: op}, [op]
    while todo:
        for t in todo.pop().inputs:
            if t.op.name not in seen:
                seen[t.op.name] = t.op
                todo.append(t.op)
    return list(seen.values())


def _worker_graph_problem(variables, output, task: int):
    import tensorflow as tf

    if not variables:
        return "no variables were created: the model needs weights (tf.compat.v1.get_variable)"
    shapes = sorted(tuple(v.shape.as_list()) for v in variables)
    if shapes != [(5,), (10, 5)] or getattr(output, "shape", None) is None:
        return "build the exercise's model: a [10, 5] weight, a [5] bias, and return x @ w + b"
    if output.shape.as_list() != [None, 5]:
        return "return the model's output x @ w + b (one row of 5 per example)"
    for variable in variables:
        if tf.DeviceSpec.from_string(variable.device).job != "ps":
            return (
                f"variable {variable.op.name} is on '{variable.device or 'no device'}', not on a "
                "ps task: create the variables inside the device function's scope"
            )
    compute = [op for op in ancestors(output.op) if op.type in ("MatMul", "AddV2", "Add")]
    if len({tf.DeviceSpec.from_string(v.device).task for v in variables}) < 2:
        if any(tf.DeviceSpec.from_string(op.device).job == "ps" for op in compute):
            return (
                "your variables and your compute all sit on one ps task, as a fixed device "
                "name puts every op: what places each variable on a ps task, spread over "
                "them, and the rest on the worker?"
            )
        return "all the variables sit on one ps task: tell the device setter about the cluster"
    if not any(op.type == "MatMul" for op in compute):
        return "nothing is computed: the worker's forward pass should multiply by the weights"
    for op in compute:
        device = tf.DeviceSpec.from_string(op.device)
        if (device.job, device.task) != ("worker", task):
            return (
                f"{op.name} is placed on '{op.device or 'no device'}', not on the worker whose "
                "graph this is: which argument of the device setter names it?"
            )
    return None


@exercise("08.1")
def worker_graph_placement(build_worker_graph):
    """build_worker_graph(cluster, task) builds one worker's graph: run it for two random
    workers of a cluster of random size, and look where each variable and each op landed."""
    import tensorflow as tf

    if not callable(build_worker_graph):
        return "pass your function build_worker_graph itself, not its result"
    spec, tasks = _random_cluster()
    for task in tasks:  # two workers: a worker typed in is wrong for one of them
        graph = tf.Graph()
        with graph.as_default():
            output, used = course_calls(build_worker_graph, spec, task)
            variables = tf.compat.v1.global_variables()
        if used:
            return (
                f"your function runs the course's code ({', '.join(sorted(set(used)))}): build "
                "the worker's graph yourself"
            )
        problem = _worker_graph_problem(variables, output, task)
        if problem:
            return problem
    return None


# -- 08.5: a synchronous worker, run on a local cluster (1 ps, 2 worker processes) ----------
SYNC_HARNESS = """
import json, os, sys
import numpy as np
import tensorflow as tf
from tflearn_helpers import between_graph
from tflearn_helpers.checks.lesson08 import ancestors
from tflearn_helpers.programs import events

v1 = tf.compat.v1

{learner}


def required(graph):  # gradients each update takes, one accumulator per variable
    return [int(tf.get_static_value(op.inputs[1])) for op in graph.get_operations()
            if op.type == "ResourceAccumulatorTakeGradient"]


chief_work = []  # what this worker's session did that is the chief's alone: hand out tokens
_run, _threads = v1.Session.run, v1.train.QueueRunner.create_threads


def _ops(fetches):
    if isinstance(fetches, dict):
        fetches = list(fetches.values())
    if isinstance(fetches, (list, tuple)):
        return [op for fetch in fetches for op in _ops(fetch)]
    return [getattr(fetches, "op", fetches)]


def _noting_run(self, fetches, *args, **kwargs):
    chief_work.extend(op.name for op in _ops(fetches)
                      if getattr(op, "type", "").startswith("QueueEnqueue"))
    return _run(self, fetches, *args, **kwargs)


def _noting_threads(self, *args, **kwargs):
    chief_work.append(f"queue runner {{self.name}}")
    return _threads(self, *args, **kwargs)


v1.Session.run, v1.train.QueueRunner.create_threads = _noting_run, _noting_threads


def main():
    config = json.loads(os.environ["TF_CONFIG"])
    task, steps = config["task"]["index"], int(sys.argv[1])
    cluster = tf.train.ClusterSpec(config["cluster"])
    server = tf.distribute.Server(cluster, job_name="worker", task_index=task)
    v1.disable_eager_execution()
    three = dict(config["cluster"], worker=config["cluster"]["worker"] + ["localhost:1"])
    with tf.Graph().as_default() as probe:  # the same function for a cluster of 3 workers
        {name}(tf.train.ClusterSpec(three), task, 3, v1.placeholder(tf.float32, [None, 10]),
               v1.placeholder(tf.float32, [None, 1]))
    x = v1.placeholder(tf.float32, [None, 10], name="x")
    y = v1.placeholder(tf.float32, [None, 1], name="y")
    loss, train_op, hooks = {name}(cluster, task, cluster.num_tasks("worker"), x, y)
    step = v1.train.get_global_step()
    graph = v1.get_default_graph()
    events.emit(
        "graph",
        variables={{v.op.name: v.device for v in v1.global_variables()}},
        num_required=required(graph), num_required_of_3=required(probe),
        compute=[op.device for op in ancestors(loss.op) if op.type == "MatMul"],
        task=task, global_step=step is not None)
    if step is None:
        return
    with tf.control_dependencies([train_op]):
        after = tf.identity(step.read_value())
    hooks = list(hooks or []) + [v1.train.StopAtStepHook(last_step=steps)]
    filters = v1.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{{task}}"])
    if task == 0:
        session = v1.train.MonitoredTrainingSession(
            master=server.target, is_chief=True, hooks=hooks, config=filters,
            save_checkpoint_secs=None, save_checkpoint_steps=None, save_summaries_steps=None,
            save_summaries_secs=None, log_step_count_steps=None)
    else:
        creator = between_graph.quick_worker_session_creator(server.target, filters)
        session = v1.train.MonitoredSession(creator, hooks=hooks)
    events.emit("session", task=task, chief_work=sorted(set(chief_work)))
    true_w = np.linspace(-1.0, 1.0, 10, dtype=np.float32)[:, None]
    rng = np.random.default_rng(task)
    with session:
        while not session.should_stop():
            xb = rng.normal(size=(32, 10)).astype(np.float32)
            value, seen = session.run([loss, after], {{x: xb, y: xb @ true_w}})
            events.emit("step", loss=float(value), after=int(seen))
        events.emit("done")
        os._exit(0)  # a sync session can wait forever on close for a token nobody sends


main()
"""


def _run_sync_cluster(source: str, name: str, steps: int, timeout: float) -> dict:
    """Run the learner's worker on 1 ps + 2 worker processes until the chief reaches
    ``steps`` global steps (or ``timeout`` s once both have built their graphs: starting
    TensorFlow on a busy machine does not count as a stall); what each worker printed."""
    from .. import cluster
    from ..programs import events, processes

    spec = cluster.local_cluster_spec(workers=2, ps=1)
    with (
        tempfile.TemporaryDirectory(prefix="tflearn-check-08.5-") as folder,
        cluster.LocalCluster(spec, log_dir=folder, env={"CUDA_VISIBLE_DEVICES": ""}) as run,
    ):
        program = Path(folder) / "sync_worker.py"
        program.write_text(SYNC_HARNESS.format(learner=source, name=name))
        run.start("server", tasks=[("ps", 0)])
        run.start(program, args=[steps], tasks=[("worker", 0), ("worker", 1)])
        chief = run.procs[("worker", 0)]
        built = lambda i: events.parse(run.logs("worker", i), "graph")  # noqa: E731
        try:  # both graphs built, or the chief gone (it failed, or it finished already)
            processes.wait_until(lambda: (built(0) and built(1)) or not chief.running(), 300, "")
            graphs = [_graph_of(events.parse(run.logs("worker", i))) for i in (0, 1)]
            if any(g is not None and _graph_problem(g, workers=2) for g in graphs):
                code = None  # the graph alone is wrong: no need to train it
            else:  # the chief done, or worker 1 doing the chief's work (no need to go on)
                processes.wait_until(lambda: not chief.running() or _stray(run), timeout, "")
                code = None if chief.running() else chief.wait(timeout=10)
            if code == 0 and run.procs[("worker", 1)].running():  # (started its session late?)
                with contextlib.suppress(TimeoutError):
                    processes.wait_until(lambda: _session_of(run, 1), 15, "")
        except TimeoutError:
            code = None  # still running: stalled
        logs = [run.logs("worker", i) for i in (0, 1)]
    return {"code": code, "logs": logs, "lines": [events.parse(log) for log in logs]}


def _graph_of(lines: list[dict]):
    return next((ln for ln in lines if ln["kind"] == "graph"), None)


def _session_of(run, task: int):
    """What worker ``task`` reported once its session was made (None before)."""
    from ..programs import events

    return next(iter(events.parse(run.logs("worker", task), "session")), None)


def _stray(run) -> bool:
    """Whether worker 1, not the chief, did the chief's work in making its session."""
    return bool((_session_of(run, 1) or {}).get("chief_work"))


def _role_problem(lines: list[list[dict]]):
    """A hint if a worker other than worker 0 (the chief) did the chief's work in making its
    session: filled the token queue, started the queue runner that applies each averaged
    update. (A chief that does none of it stalls the training: that hint comes later.)"""
    sessions = [next((ln for ln in worker if ln["kind"] == "session"), None) for worker in lines]
    for task, session in enumerate(sessions[1:], 1):
        if session is not None and session["chief_work"]:
            return (
                f"worker {task} is not the chief, yet its session did the chief's work "
                f"({', '.join(session['chief_work'])}): how does each worker's hook know "
                "whether its task is the chief?"
            )
    return None


def _graph_problem(graph: dict, workers: int):
    """What is wrong with a worker's graph as it reported it (None if nothing)."""
    import tensorflow as tf

    if not graph["global_step"]:
        return "the graph has no global step: updates are counted with one"
    for name, device in graph["variables"].items():
        if "/job:ps" not in device:
            return f"variable {name} is on '{device or 'no device'}', not on a ps task"
    for device in graph["compute"]:
        spec = tf.DeviceSpec.from_string(device)
        if (spec.job, spec.task) != ("worker", graph["task"]):
            return (
                f"worker {graph['task']}'s forward pass is placed on '{device or 'no device'}', "
                "not on that worker: which argument of the device setter names it?"
            )
    if not graph["num_required"]:
        return "each update applied one worker's gradient as it came: that is asynchronous"
    if min(graph["num_required"]) < workers:
        return "an update averages fewer gradients than workers send: how many should it average?"
    if set(graph["num_required_of_3"]) != {3}:
        return (
            "built again for a cluster of 3 workers, your graph's updates did not average 3 "
            "gradients each: use the number of workers the function is given"
        )
    return None


def _judge_sync(outcome: dict, steps: int, timeout: float):
    graph = _graph_of(outcome["lines"][0])
    if graph is None and outcome["code"] is None:
        return "the workers did not start within 300 s (a busy machine?): run the check again"
    if graph is None:
        lines = outcome["logs"][0].strip().splitlines() or ["(no output)"]
        last = next((ln for ln in reversed(lines) if "Error" in ln), lines[-1])
        return f"your function failed in the worker process: {last[:300]}"
    graphs = [graph] + [g for g in map(_graph_of, outcome["lines"][1:]) if g is not None]
    problem = next((p for g in graphs if (p := _graph_problem(g, len(outcome["lines"])))), None)
    if problem:
        return problem
    problem = _role_problem(outcome["lines"])
    if problem:
        return problem
    done = [ln for worker in outcome["lines"] for ln in worker if ln["kind"] == "step"]
    reached = max((ln["after"] for ln in done), default=0)
    if outcome["code"] is None or reached < steps:
        return (
            f"training stalled at global step {reached} of {steps} (waited {timeout:.0f} s): "
            "synchronous training needs something to run in every worker's session"
        )
    # every worker's losses in global-step order: on a busy machine one worker can run most
    # of the steps (either one's gradients fill an update): the chief's alone were 4 runs once
    losses = [ln["loss"] for ln in sorted(done, key=lambda ln: ln["after"])]
    if not sum(losses[-3:]) <= 2 * sum(losses[:3]):  # nan included
        return (
            f"the loss grew, from {losses[0]:.3g} to {losses[-1]:.3g}: each update overshot. "
            "Is each update's step what the exercise asks (the mean squared error's gradient, "
            "averaged over the workers, learning rate 0.1)?"
        )
    if not sum(losses[-3:]) < 0.5 * sum(losses[:3]):
        return "the loss did not fall: does train_op minimize the loss you return?"
    return _step_problem(done, workers=len(outcome["lines"]))


# 08.5's updates, plain gradient descent at learning rate 0.1 on the mean of one 32-example
# gradient of the mean squared error from each of 2 workers: the loss (0 at the weights that
# made y) falls by E|I - 2 lr H|^2 = 1 - 4 lr + 4 lr^2 (1 + (d + 1) / B) per update (H the
# inputs' covariance over the update's B = 64 examples of d = 10 features, a Wishart matrix):
# 0.647 at lr 0.1 (measured: the log of the loss falls 0.42-0.43 per global step in 5 runs,
# 0.435 expected); 0.81 at lr 0.05 (measured 0.20, with the loss divided by the 2 workers).
_SPREAD = 1 + 11 / 64


def _step_problem(done: list[dict], workers: int):
    """A hint unless the loss fell, per global step, as updates of learning rate 0.1 on the
    workers' mean gradient make it fall: the learning rate that would make it fall as fast,
    read from a line through log(loss) against the global step, is 0.075 to 0.135."""
    after = np.array([ln["after"] for ln in done], float)
    logs = np.log(np.maximum([ln["loss"] for ln in done], 1e-30))
    if len(set(after)) < 2:
        return None
    shrink = float(np.exp(np.polyfit(after, logs, 1)[0]))  # the loss's factor per update
    root = max(0.0, 1 - _SPREAD * (1 - shrink))  # (0: as fast as any learning rate makes it)
    rate = (1 - np.sqrt(root)) / (2 * _SPREAD)
    if not 0.075 <= rate <= 0.135:
        return (
            f"the loss fell by a factor of {1 / shrink:.2f} per update, as plain gradient "
            f"descent with a learning rate of {rate:.2g} on the mean of the {workers} workers' "
            "gradients makes it fall, not 0.1: is each update's step what the exercise asks "
            "(the mean squared error's gradient, averaged over the workers, unscaled)?"
        )
    return None


@exercise("08.5")
def sync_worker(build_sync_worker, steps: int = 30, timeout: float = 60.0):
    """build_sync_worker(cluster, task, workers, x, y) -> (loss, train_op, hooks), run by
    two worker processes and one ps on this machine."""
    source, hint = learner_source(build_sync_worker, "build_sync_worker")
    if hint:
        return hint
    outcome = _run_sync_cluster(source, build_sync_worker.__name__, steps, timeout)
    return _judge_sync(outcome, steps, timeout)
