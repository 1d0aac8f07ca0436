import json

import numpy as np

from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, _evaluate

CLUSTER = {"worker": ["localhost:2001", "localhost:2002"]}


def good_config(index):
    return {"cluster": CLUSTER, "task": {"type": "worker", "index": index}}


def write_run(out, losses=((1.0, 0.5), (1.0, 0.5)), weights=(0.0, 0.0)):
    for i in (0, 1):
        lines = [json.dumps({"step": s + 1, "loss": v, "time": s}) for s, v in enumerate(losses[i])]
        (out / f"progress-custom-worker-{i}.jsonl").write_text("\n".join(lines) + "\n")
        np.savez(out / f"weights-custom-worker-{i}.npz", np.full((2, 2), weights[i]))


def test_two_workers_that_trained_as_one_job_pass(tmp_path):
    write_run(tmp_path)
    assert _evaluate("04.4", good_config, [(0, ""), (0, "")], tmp_path).status == RIGHT


def test_wrong_tf_configs_are_explained_without_the_answer(tmp_path):
    write_run(tmp_path)
    same_task = lambda i: good_config(0)  # noqa: E731
    hint = _evaluate("04.4", same_task, [(0, ""), (0, "")], tmp_path).message
    assert "its own task" in hint and "localhost" not in hint
    other = lambda i: {"cluster": {"worker": [f"localhost:{3000 + i}"]}, "task": {"index": 0}}  # noqa: E731
    assert "not a valid TF_CONFIG" in _evaluate("04.4", other, [(0, ""), (0, "")], tmp_path).message


def test_failed_or_diverging_workers_are_reported(tmp_path):
    write_run(tmp_path, weights=(0.0, 0.1))
    outcome = _evaluate("04.4", good_config, [(0, ""), (0, "")], tmp_path)
    assert "weights differ" in outcome.message
    crashed = _evaluate("04.4", good_config, [(0, ""), (1, "ValueError: boom")], tmp_path)
    assert "exit code 1" in crashed.message and "boom" in crashed.message
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no training steps" in _evaluate("04.4", good_config, [(0, ""), (0, "")], empty).message
    write_run(tmp_path, losses=((1.0, 0.5), (1.0, 0.4)))
    assert "losses differ" in _evaluate("04.4", good_config, [(0, ""), (0, "")], tmp_path).message


def test_the_courses_tf_config_builder_is_not_the_answer(tmp_path):
    from tflearn_helpers import cluster

    write_run(tmp_path)
    built = lambda i: cluster.tf_config.build(CLUSTER, "worker", i)  # noqa: E731
    hint = _evaluate("04.4", built, [(0, ""), (0, "")], tmp_path).message
    assert "yourself" in hint


def test_unlaunched_workers_are_not_attempted(tmp_path):
    assert _evaluate("04.4", good_config, ..., tmp_path).status == NOT_ATTEMPTED
