import json

import numpy as np
import pytest

from tflearn_helpers import multi_worker as mw


def write_progress(tmp_path, lines, task="worker-0", torn=False):
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (tmp_path / f"progress-fit-{task}.jsonl").write_text(text + ('{"step": 9' if torn else ""))


def test_script_is_in_the_repository():
    assert mw.script_path().name == "multi_worker_train.py"


def test_progress_steps_and_timing(tmp_path):
    lines = [{"step": s, "loss": 1.0 / s, "time": 10.0 + 0.5 * s} for s in range(1, 7)]
    write_progress(tmp_path, lines, torn=True)
    assert mw.steps(tmp_path, "fit") == [1, 2, 3, 4, 5, 6]
    assert mw.median_step_s(tmp_path, "fit") == pytest.approx(0.5)
    assert mw.progress(tmp_path, "custom") == []
    with pytest.raises(ValueError, match="loop"):
        mw.progress(tmp_path, "keras")
    with pytest.raises(ValueError, match="at least"):
        mw.median_step_s(tmp_path, "fit", skip=5)


def test_weights_round_trip_and_differences(tmp_path):
    arrays = [np.ones((2, 3), np.float32), np.zeros(3, np.float32)]
    np.savez(tmp_path / "w.npz", *arrays)
    loaded = mw.weights(tmp_path / "w.npz")
    assert mw.max_abs_diff(loaded, arrays) == 0.0
    assert mw.max_abs_diff(loaded, [arrays[0] * 3, arrays[1]]) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="shapes"):
        mw.max_abs_diff(loaded, arrays[:1])


def test_wait_until_returns_the_value_or_times_out():
    calls = iter([0, 0, 7])
    assert mw.wait_until(lambda: next(calls), timeout=5, what="x", poll=0.001) == 7
    with pytest.raises(TimeoutError, match="waited 0 s for nothing"):
        mw.wait_until(lambda: False, timeout=0.05, what="nothing", poll=0.01)
    with pytest.raises(ValueError, match="timeout"):
        mw.wait_until(lambda: True, timeout=0, what="x")


def test_error_summary_finds_the_exception():
    log = "noise\nTraceback (most recent call last):\n  File x\nValueError: bad (\n 1, 2\n) end."
    assert mw.error_summary(log) == "ValueError: bad (\n  ... ) end."
    one_line = "x\ntensorflow.errors.UnavailableError: gone"
    assert mw.error_summary(one_line) == "tensorflow.errors.UnavailableError: gone"
    assert mw.error_summary("all fine\nDONE") == ""


def load_training_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("multi_worker_train", mw.script_path())
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # TensorFlow is imported only inside main()
    return module


def test_training_script_flags_and_bad_input(capsys):
    script = load_training_script()
    args = script.parse_args(["--out", "x", "--loop", "custom,fit", "--save-freq", "3"])
    assert args.loops == ["custom", "fit"] and args.save_freq == 3
    for bad in (["--out", "x", "--loop", "keras"], ["--out", "x", "--epochs", "0"], []):
        with pytest.raises(SystemExit):
            script.parse_args(bad)
    assert "--loop takes fit and/or custom" in capsys.readouterr().err
