"""between_graph: the TF1 between-graph model, its placement and session helpers (lesson 08),
and the check that they are the code lesson 08's worker program defines."""

import sys
from pathlib import Path

import pytest

from tflearn_helpers import between_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import nbtools  # noqa: E402
import taught  # noqa: E402

LESSON_08 = nbtools.ROOT / "notebooks" / "08_parameter_servers_estimator_era.ipynb"


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


def test_the_session_creator_is_the_class_lesson_08_teaches():
    """A class on a TensorFlow base cannot be generated at the package's top level (importing
    the package never imports TensorFlow): the package builds it in a function, compared here."""
    helper = between_graph.quick_worker_session_creator
    assert taught.differs_from_taught(helper, LESSON_08, "QuickWorkerSessionCreator") is None
    assert "lesson 08 defines" in helper.__doc__.lower()
