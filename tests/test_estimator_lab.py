"""tflearn_helpers.estimator_lab: fixing programs, reading their logs, background runs."""

import pytest

from tflearn_helpers import estimator_lab as lab


def test_apply_fix_replaces_the_one_occurrence():
    assert lab.apply_fix("a = tf.ConfigProto()", "tf.ConfigProto", "tf.compat.v1.ConfigProto") == (
        "a = tf.compat.v1.ConfigProto()"
    )


@pytest.mark.parametrize("source", ["nothing here", "x x"])
def test_apply_fix_refuses_missing_or_ambiguous_text(source):
    with pytest.raises(ValueError, match="exactly one"):
        lab.apply_fix(source, "x", "y")


def test_run_source_returns_the_exception_or_none():
    err = lab.run_source("import math\nnp.zeros(3)", "prog.py")
    assert isinstance(err, NameError) and "'np'" in str(err)
    namespace = {}
    assert lab.run_source("def f():\n    return 41 + 1\n", "ok.py", namespace) is None
    assert namespace["f"]() == 42


def test_run_source_does_not_hide_syntax_errors():
    with pytest.raises(SyntaxError):
        lab.run_source("def (:", "broken.py")


def test_logged_steps_reads_estimator_loss_lines():
    log = (
        "INFO:tensorflow:loss = 8.632872, step = 0\n"
        "WARNING:tensorflow:It seems that global step ... not been increased\n"
        "INFO:tensorflow:loss = 6.6285, step = 0 (0.576 sec)\n"
        "INFO:tensorflow:loss = 1.5e-03, step = 1200 (0.1 sec)\n"
    )
    assert lab.logged_steps(log) == [(8.632872, 0), (6.6285, 0), (0.0015, 1200)]
    assert lab.logged_steps("no progress here") == []


def test_placement_lines_keeps_only_the_placement_log():
    log = (
        "dense/MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0\n"
        "INFO:tensorflow:loss = 2.3, step = 0\n"
        "  save/Const: (Const): /job:localhost/replica:0/task:0/device:CPU:1  \n"
    )
    assert len(lab.placement_lines(log)) == 2


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
    assert lab.checkpoint_steps(tmp_path) == [0, 100, 200]
    assert lab.checkpoint_steps(tmp_path / "..") == []
    with pytest.raises(FileNotFoundError, match="no model_dir"):
        lab.checkpoint_steps(tmp_path / "missing")


def test_result_lines_round_trip():
    log = "noise\n" + lab.result_line(task="chief:0", steps=7) + "\nmore noise\n"
    assert lab.results(log) == [{"steps": 7, "task": "chief:0"}]


def test_background_run_waits_for_its_output(tmp_path):
    program = "import time\nfor i in range(3):\n    print('tick', i)\ntime.sleep(30)"
    with lab.BackgroundRun(["-c", program], tmp_path / "log.txt") as run:
        assert run.wait_for(r"tick \d", count=3, timeout=30) == ["tick 0", "tick 1", "tick 2"]
        assert run.running()
        with pytest.raises(TimeoutError, match="0 of 1 matches"):
            run.wait_for("never printed", timeout=0.3)
        with pytest.raises(TimeoutError, match="still running"):
            run.wait(timeout=0.1)
    assert not run.running(), "leaving the with-block stops the program"


def test_background_run_reports_an_early_exit(tmp_path):
    run = lab.BackgroundRun(["-c", "print('only once'); raise SystemExit(3)"], tmp_path / "l.txt")
    with pytest.raises(RuntimeError, match=r"exited \(code 3\) after 1 of 2"):
        run.wait_for("only once", count=2, timeout=30)
    assert run.wait(timeout=5) == 3
    run.stop()  # stopping a finished program is harmless


def test_background_run_checks_its_arguments(tmp_path):
    with pytest.raises(ValueError, match="non-empty list"):
        lab.BackgroundRun("-c print(1)", tmp_path / "l.txt")
    with pytest.raises(ValueError, match="non-empty list"):
        lab.BackgroundRun([], tmp_path / "l.txt")
    with lab.BackgroundRun(["-c", "pass"], tmp_path / "l.txt") as run:
        with pytest.raises(ValueError, match="count must be"):
            run.wait_for("x", count=0)
        with pytest.raises(ValueError, match="timeout > 0"):
            run.wait_for("x", timeout=0)
