"""between_graph: the TF1 between-graph model, its placement and session helpers (lesson 08)."""

import pytest

from tflearn_helpers import between_graph


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
    assert sizes["hidden/kernel"] == 20 * 32 * 4


@pytest.mark.parametrize("num_ps", [0, -1, 1.5, None])
def test_placement_rejects_bad_ps_counts(num_ps):
    with pytest.raises(ValueError, match="num_ps"):
        between_graph.placement(num_ps)


def test_placement_rejects_negative_partitions():
    with pytest.raises(ValueError, match="partitions"):
        between_graph.placement(2, partitions=-1)


def test_the_session_creator_is_lesson_08_s_class_on_tensorflow_s_base():
    import tensorflow as tf

    creator = between_graph.quick_worker_session_creator("grpc://localhost:1", None)
    assert isinstance(creator, tf.compat.v1.train.SessionCreator)
    assert type(creator).__name__ == "QuickWorkerSessionCreator"
    assert type(creator).__module__ == "tflearn_helpers.taught.lesson08"  # generated from it
    assert (creator.target, creator.config) == ("grpc://localhost:1", None)
