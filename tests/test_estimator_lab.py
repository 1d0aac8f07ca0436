"""tflearn_helpers.estimator_lab: fixing programs, reading their logs, background runs."""

import pytest

from tflearn_helpers import estimator_lab


def test_apply_fix_replaces_the_one_occurrence():
    assert estimator_lab.apply_fix(
        "a = tf.ConfigProto()", "tf.ConfigProto", "tf.compat.v1.ConfigProto"
    ) == ("a = tf.compat.v1.ConfigProto()")


@pytest.mark.parametrize("source", ["nothing here", "x x"])
def test_apply_fix_refuses_missing_or_ambiguous_text(source):
    with pytest.raises(ValueError, match="exactly one"):
        estimator_lab.apply_fix(source, "x", "y")


def test_run_source_returns_the_exception_or_none():
    err = estimator_lab.run_source("import math\nnp.zeros(3)", "prog.py")
    assert isinstance(err, NameError) and "'np'" in str(err)
    namespace = {}
    assert estimator_lab.run_source("def f():\n    return 41 + 1\n", "ok.py", namespace) is None
    assert namespace["f"]() == 42


def test_run_source_does_not_hide_syntax_errors():
    with pytest.raises(SyntaxError):
        estimator_lab.run_source("def (:", "broken.py")


def test_logged_steps_reads_estimator_loss_lines():
    log = (
        "INFO:tensorflow:loss = 8.632872, step = 0\n"
        "WARNING:tensorflow:It seems that global step ... not been increased\n"
        "INFO:tensorflow:loss = 6.6285, step = 0 (0.576 sec)\n"
        "INFO:tensorflow:loss = 1.5e-03, step = 1200 (0.1 sec)\n"
    )
    assert estimator_lab.logged_steps(log) == [(8.632872, 0), (6.6285, 0), (0.0015, 1200)]
    assert estimator_lab.logged_steps("no progress here") == []


def test_placement_lines_keeps_only_the_placement_log():
    log = (
        "dense/MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0\n"
        "INFO:tensorflow:loss = 2.3, step = 0\n"
        "  save/Const: (Const): /job:localhost/replica:0/task:0/device:CPU:1  \n"
    )
    assert len(estimator_lab.placement_lines(log)) == 2


def test_checkpoint_steps(tmp_path):
    for name in [
        "model.ckpt-0.index",
        "model.ckpt-200.index",
        "model.ckpt-200.meta",
        "model.ckpt-100.index",
        "checkpoint",
        "graph.pbtxt",
    ]:
        (tmp_path / name).write_text("")
    assert estimator_lab.checkpoint_steps(tmp_path) == [0, 100, 200]
    assert estimator_lab.checkpoint_steps(tmp_path / "..") == []
    with pytest.raises(FileNotFoundError, match="no model_dir"):
        estimator_lab.checkpoint_steps(tmp_path / "missing")
