"""Exercise checks 04: right answers pass, wrong ones get a hint without the answer."""

import tensorflow as tf

from tflearn_helpers import input_pipeline
from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG, _evaluate
from tflearn_helpers.exercise_checks.lesson04 import RESNET50_PARAMS


def _pipeline(policy):
    def fn(files, num_workers, worker_index, batch_size):
        return input_pipeline.make_pipeline(
            files, batch_size, num_workers=num_workers, worker_index=worker_index,
            policy=policy, with_index=True,
        )  # fmt: skip

    return fn


def test_04_1():
    assert _evaluate("04.1", _pipeline("file")).status == RIGHT
    wrong = _evaluate("04.1", _pipeline("data"))
    assert wrong.status == WRONG and "files" in wrong.message
    assert _evaluate("04.1", ...).status == NOT_ATTEMPTED
    assert _evaluate("04.1", _pipeline("file")(["x"], 1, 0, 1)).status == WRONG  # not callable


def test_04_2(tmp_path):
    def resume(directory, model, optimizer):
        tf.train.Checkpoint(model=model, optimizer=optimizer).restore(
            tf.train.latest_checkpoint(directory)
        )
        return int(optimizer.iterations.numpy())

    def model_only(directory, model, optimizer):
        tf.train.Checkpoint(model=model).restore(
            tf.train.latest_checkpoint(directory)
        ).expect_partial()
        return 3

    assert _evaluate("04.2", resume).status == RIGHT
    wrong = _evaluate("04.2", model_only)
    assert wrong.status == WRONG and "optimizer" in wrong.message
    assert _evaluate("04.2", lambda d, m, o: 3).status == WRONG


def test_04_3():
    right = 2 * 7 / 8 * 4 * RESNET50_PARAMS / 1e6
    assert _evaluate("04.3", right).status == RIGHT
    hint = _evaluate("04.3", 4 * RESNET50_PARAMS / 1e6)
    assert hint.status == WRONG and f"{right:.0f}" not in hint.message
    assert _evaluate("04.3", "a lot").status == WRONG
