"""Unit tests for tflearn_helpers.parameter_server (no TensorFlow cluster: lesson 02 runs those)."""

import pytest

from tflearn_helpers import parameter_server

SPEC = {
    "chief": ["localhost:1000"],
    "worker": ["localhost:1001", "localhost:1002"],
    "ps": ["localhost:1003"],
}


@pytest.mark.parametrize(
    "bad", [None, [], {"worker": ["localhost:1"]}, {"chief": ["a:1"], "ps": ["b:2"]}]
)
def test_make_strategy_needs_chief_worker_and_ps(bad):
    with pytest.raises((TypeError, ValueError), match="cluster"):
        parameter_server.make_strategy(bad)


@pytest.mark.parametrize("shards", [-1, 1.5, True, "2"])
def test_make_strategy_rejects_bad_shards(shards):
    with pytest.raises(ValueError, match="shards"):
        parameter_server.make_strategy(SPEC, shards=shards)


def test_sub_cluster_keeps_ps_and_takes_a_fresh_chief():
    sub = parameter_server.sub_cluster(SPEC, 1)
    assert sub["worker"] == ["localhost:1001"] and sub["ps"] == SPEC["ps"]
    assert sub["chief"] != SPEC["chief"] and sub["chief"][0].startswith("localhost:")
    assert SPEC["worker"] == ["localhost:1001", "localhost:1002"]  # the input is not changed


@pytest.mark.parametrize("workers", [0, 3, 1.0, True])
def test_sub_cluster_rejects_bad_worker_counts(workers):
    with pytest.raises(ValueError, match="workers"):
        parameter_server.sub_cluster(SPEC, workers)


def test_worker_ids_needs_a_coordinator():
    with pytest.raises(TypeError, match="ClusterCoordinator"):
        parameter_server.worker_ids(object())


def test_step_audit_counts_lost_and_extra_steps():
    clean = parameter_server.StepAudit(scheduled=40, applied=40, in_flight_bound=1)
    assert (clean.lost, clean.extra, clean.within_bound) == (0, 0, True)
    rerun = parameter_server.StepAudit(scheduled=40, applied=41, in_flight_bound=1)
    assert (rerun.lost, rerun.extra, rerun.within_bound) == (0, 1, True)
    too_many = parameter_server.StepAudit(scheduled=40, applied=43, in_flight_bound=1)
    assert too_many.extra == 3 and not too_many.within_bound
    lost = parameter_server.StepAudit(scheduled=40, applied=38, in_flight_bound=1)
    assert lost.lost == 2 and lost.extra == 0


@pytest.mark.parametrize("field", ["scheduled", "applied", "in_flight_bound"])
@pytest.mark.parametrize("value", [-1, 2.0, None, True])
def test_step_audit_rejects_bad_counts(field, value):
    kwargs = {"scheduled": 1, "applied": 1, "in_flight_bound": 1, field: value}
    with pytest.raises(ValueError, match=field):
        parameter_server.StepAudit(**kwargs)


@pytest.mark.parametrize(
    "kwargs", [{"steps": 0}, {"steps": 4, "warmup": -1}, {"steps": 4, "work": 0}]
)
def test_measure_workers_rejects_bad_sizes(kwargs):
    with pytest.raises(ValueError, match="need steps"):
        parameter_server.measure_workers(SPEC, 1, **kwargs)


# -- lesson 02's exercise checks (tflearn_helpers/exercise_checks/lesson02.py) --------------
class _Piece:
    def __init__(self, rows, task):
        self.shape = (rows, 4)
        self.device = f"/job:{task}/device:CPU:0"


class _Sharded:
    def __init__(self, pieces, shape=(12, 4)):
        self.shape, self.variables = shape, pieces


def _verdict(exercise_id, *args):
    from tflearn_helpers.checks import _evaluate

    return _evaluate(exercise_id, *args)


def test_check_02_1_accepts_one_piece_per_ps_and_hints_otherwise():
    good = _Sharded([_Piece(4, f"ps/replica:0/task:{i}") for i in range(3)])
    assert _verdict("02.1", good).ok
    two = _Sharded([_Piece(6, "ps/replica:0/task:0"), _Piece(6, "ps/replica:0/task:1")])
    same = _Sharded([_Piece(4, "ps/replica:0/task:0")] * 3)
    worker = _Sharded([_Piece(4, f"worker/replica:0/task:{i}") for i in range(3)])
    for bad, words in [
        (two, "pieces"),
        (same, "share"),
        (worker, "not on a parameter server"),
        (_Sharded([], (12, 4)), "one piece"),
        (_Sharded([], (3, 3)), "12 x 4"),
        ("embedding", "variable itself"),
    ]:
        verdict = _verdict("02.1", bad)
        assert verdict.status == "wrong" and words in verdict.message


def test_check_02_2_rejects_what_is_not_a_pair_of_functions_or_a_coordinator():
    assert "pair" in _verdict("02.2", (len,), object(), {}).message
    assert "functions themselves" in _verdict("02.2", (1, 2), object(), {}).message
    assert "ClusterCoordinator" in _verdict("02.2", (len, len), object(), {}).message


def test_check_02_3_hints_never_contain_the_answer():
    assert _verdict("02.3", 3).ok
    assert _verdict("02.3", ...).status == "not attempted"
    for wrong in (0, 2, 5, 7, "3", 3.0):
        verdict = _verdict("02.3", wrong)
        assert verdict.status == "wrong" and "3" not in verdict.message
