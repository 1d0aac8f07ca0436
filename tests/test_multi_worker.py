import json

import numpy as np
import pytest

from tflearn_helpers import multi_worker, scripts


def write_progress(tmp_path, lines, task="worker-0", torn=False):
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (tmp_path / f"progress-fit-{task}.jsonl").write_text(text + ('{"step": 9' if torn else ""))


def test_script_is_in_the_package():
    assert scripts.path("multi_worker_train.py").name == "multi_worker_train.py"


def test_progress_steps_and_timing(tmp_path):
    lines = [{"step": s, "loss": 1.0 / s, "time": 10.0 + 0.5 * s} for s in range(1, 7)]
    write_progress(tmp_path, lines, torn=True)
    assert multi_worker.steps(tmp_path, "fit") == [1, 2, 3, 4, 5, 6]
    assert multi_worker.median_step_s(tmp_path, "fit") == pytest.approx(0.5)
    assert multi_worker.progress(tmp_path, "custom") == []
    with pytest.raises(ValueError, match="loop"):
        multi_worker.progress(tmp_path, "keras")
    with pytest.raises(ValueError, match="at least"):
        multi_worker.median_step_s(tmp_path, "fit", skip=5)


def test_weights_round_trip(tmp_path):
    arrays = [np.ones((2, 3), np.float32), np.zeros(3, np.float32)]
    np.savez(tmp_path / "w.npz", *arrays)
    loaded = multi_worker.weights(tmp_path / "w.npz")
    assert [a.tolist() for a in loaded] == [a.tolist() for a in arrays]


def test_error_summary_finds_the_exception():
    log = "noise\nTraceback (most recent call last):\n  File x\nValueError: bad (\n 1, 2\n) end."
    assert multi_worker.error_summary(log) == "ValueError: bad (\n  ... ) end."
    one_line = "x\ntensorflow.errors.UnavailableError: gone"
    assert multi_worker.error_summary(one_line) == "tensorflow.errors.UnavailableError: gone"
    assert multi_worker.error_summary("all fine\nDONE") == ""


def load_training_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "multi_worker_train", scripts.path("multi_worker_train.py")
    )
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
