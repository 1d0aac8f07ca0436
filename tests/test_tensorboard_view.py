"""tensorboard_view.show: a TensorBoard that serves the summaries written here, on loopback,
and is gone when stopped."""

import json
import urllib.request

import pytest

from tflearn_helpers import tensorboard_view


def test_it_serves_the_scalars_written_and_stops(tmp_path, capsys):
    import tensorflow as tf

    with tf.summary.create_file_writer(str(tmp_path / "run-a")).as_default():
        for step in range(3):
            tf.summary.scalar("loss", 1.0 / (step + 1), step=step)
    board = tensorboard_view.show(tmp_path)
    try:
        url = f"http://127.0.0.1:{board.port}/data/plugin/scalars/tags"
        with urllib.request.urlopen(url, timeout=10) as reply:
            tags = json.load(reply)
        assert "loss" in tags.get("run-a", {}), tags
        assert f"127.0.0.1:{board.port}" in capsys.readouterr().out
    finally:
        board.server.stop()
    assert not board.server.running()
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=2)


def test_a_missing_log_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="write summaries there first"):
        tensorboard_view.show(tmp_path / "nothing")
