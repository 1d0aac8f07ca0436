"""ps_legacy: the TF1 between-graph model, its placement and session helpers (lesson 01)."""

import json

import numpy as np
import pytest

from tflearn_helpers import between_graph


def test_make_data_is_deterministic_and_learnable():
    x1, y1 = between_graph.make_data(seed=3, batch=64)
    x2, y2 = between_graph.make_data(seed=3, batch=64)
    assert x1.shape == (64, between_graph.FEATURES) and x1.dtype == np.float32
    np.testing.assert_array_equal(y1, y2)
    assert set(np.unique(y1)) <= set(range(between_graph.CLASSES))
    assert len(np.unique(y1)) > 1  # a teacher with several classes, not constant labels
    _, y_other = between_graph.make_data(seed=4, batch=64)
    assert not np.array_equal(y1, y_other)


def test_round_robin_placement_and_partitions():
    rows = between_graph.placement(num_ps=2, partitions=2)
    devices = {name: device for name, _, device, _ in rows}
    assert [devices[n] for n in ("global_step", "hidden/kernel", "hidden/bias")] == [
        "ps:0",
        "ps:1",
        "ps:0",
    ]
    assert {devices["embedding/part_0"], devices["embedding/part_1"]} == {"ps:0", "ps:1"}
    sizes = {name: size for name, _, _, size in rows}
    assert sizes["hidden/kernel"] == between_graph.FEATURES * between_graph.HIDDEN * 4


def test_bytes_per_task_sums_each_device():
    rows = [("a", (2,), "ps:0", 8), ("b", (1,), "ps:1", 4), ("c", (1,), "ps:0", 4)]
    assert between_graph.bytes_per_task(rows) == {"ps:0": 12, "ps:1": 4}


@pytest.mark.parametrize(
    ("device", "short"),
    [("/job:ps/task:1/device:CPU:0", "ps:1"), ("/job:worker/replica:0/task:0", "worker:0")],
)
def test_short_device_names(device, short):
    assert between_graph.short_device(device) == short


@pytest.mark.parametrize("kwargs", [{"num_ps": 0}, {"num_ps": 2, "task_index": -1}])
def test_build_model_rejects_bad_input(kwargs):
    import tensorflow as tf

    kwargs = {"task_index": 0, **kwargs}
    with tf.Graph().as_default(), pytest.raises(ValueError, match="need num_ps"):
        between_graph.build_model(kwargs.pop("task_index"), **kwargs)


def test_placement_rejects_negative_partitions():
    with pytest.raises(ValueError, match="partitions"):
        between_graph.placement(2, partitions=-1)


@pytest.mark.parametrize(
    ("node", "label", "op"),
    [
        ("MatMul", "MatMul = MatMul(x, w)", "MatMul"),
        ("RecvTensor", "[8B] [0.6Mb/s] edge_4_Read/ReadVariableOp from /job:ps", "RecvTensor"),
    ],
)
def test_op_type_from_trace_labels(node, label, op):
    assert between_graph._op_type(node, label) == op


def test_traced_ops_reads_a_worker_programs_trace_line():
    trace = {
        "/job:worker/replica:0/task:0/device:CPU:0": ["_SOURCE = NoOp()", "Relu = MatMul(x, w)"],
        "/job:ps/replica:0/task:1/device:CPU:0": ["u = ResourceApplyGradientDescent(w, g)"],
    }
    text = "TensorFlow noise\n" + json.dumps({"trace": trace}) + "\n"
    assert between_graph.traced_ops(text) == {
        "ps:1": ["ResourceApplyGradientDescent"],
        "worker:0": ["MatMul"],
    }
    assert between_graph.traced_ops("no trace here") == {}
