import numpy as np

from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, _evaluate
from tflearn_helpers.programs import events

CLUSTER = {"worker": ["localhost:2001", "localhost:2002"]}


def good_config(index):
    return {"cluster": CLUSTER, "task": {"type": "worker", "index": index}}


def worker_output(losses=(1.0, 0.5), weight=0.0, done=True):
    """What a worker prints: its step events, then its done event with its weights."""
    lines = ["TensorFlow says hello"]
    lines += [events.line("step", step=s + 1, loss=v, time=float(s)) for s, v in enumerate(losses)]
    if done:
        weights = [np.full((2, 2), weight, np.float32).tolist()]
        lines.append(events.line("done", step=len(losses), weights=weights))
    return "\n".join(lines) + "\n"


def outcomes(first=None, second=None, codes=(0, 0)):
    return [(codes[0], first or worker_output()), (codes[1], second or worker_output())]


def test_two_workers_that_trained_as_one_job_pass():
    assert _evaluate("04.4", good_config, outcomes()).status == RIGHT


def test_wrong_tf_configs_are_explained_without_the_answer():
    same_task = lambda i: good_config(0)  # noqa: E731
    hint = _evaluate("04.4", same_task, outcomes()).message
    assert "its own task" in hint and "localhost" not in hint
    other = lambda i: {"cluster": {"worker": [f"localhost:{3000 + i}"]}, "task": {"index": 0}}  # noqa: E731
    assert "not a valid TF_CONFIG" in _evaluate("04.4", other, outcomes()).message


def test_failed_or_diverging_workers_are_reported():
    apart = outcomes(second=worker_output(weight=0.1))
    assert "weights differ" in _evaluate("04.4", good_config, apart).message
    crashed = outcomes(second="ValueError: boom\n", codes=(0, 1))
    message = _evaluate("04.4", good_config, crashed).message
    assert "exit code 1" in message and "boom" in message
    silent = outcomes(first="no events here\n")
    assert "no training steps" in _evaluate("04.4", good_config, silent).message
    diverged = outcomes(second=worker_output(losses=(1.0, 0.4)))
    assert "losses differ" in _evaluate("04.4", good_config, diverged).message


def test_a_worker_without_its_done_event_is_reported():
    cut = outcomes(second=worker_output(done=False))
    assert "could not compare" in _evaluate("04.4", good_config, cut).message


def test_the_courses_tf_config_builder_is_not_the_answer():
    from tflearn_helpers import cluster

    built = lambda i: cluster.tf_config.build(CLUSTER, "worker", i)  # noqa: E731
    assert "yourself" in _evaluate("04.4", built, outcomes()).message


def test_unlaunched_workers_are_not_attempted():
    assert _evaluate("04.4", good_config, ...).status == NOT_ATTEMPTED
