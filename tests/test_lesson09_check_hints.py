"""Lesson 09's exercise checks on stand-in objects (no TensorFlow cluster: the lesson and
its solution notebook runs them on real ones)."""


# -- lesson 09's exercise checks (tflearn_helpers/checks/lesson09.py) --------------
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


def test_check_09_1_accepts_one_piece_per_ps_and_hints_otherwise():
    good = _Sharded([_Piece(4, f"ps/replica:0/task:{i}") for i in range(3)])
    assert _verdict("09.1", good).ok
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
        verdict = _verdict("09.1", bad)
        assert verdict.status == "wrong" and words in verdict.message


def test_check_09_2_rejects_what_is_not_a_function_or_a_coordinator():
    assert "function train itself" in _verdict("09.2", [1, 2], object()).message
    assert "ClusterCoordinator" in _verdict("09.2", len, object()).message


def test_check_09_2_replay_moves_the_weights_as_plain_sgd():
    """The expected move of (kernel, bias): zero for no batch, towards the fit for some."""
    import numpy as np

    from tflearn_helpers.checks import lesson09

    x, y = lesson09._regression(np.random.default_rng(0))
    start = [np.zeros((8, 1), np.float32), np.zeros(1, np.float32)]
    still, no_losses = lesson09._replay(x, y, start, [0, 0])
    assert all(not np.any(move) for move in still) and no_losses == []
    (one, losses), (two, _) = (lesson09._replay(x, y, start, [n, n]) for n in (1, 2))
    residual = [float(np.mean((x @ k + b - y) ** 2)) for k, b in (start, one, two)]
    assert residual[0] > residual[1] > residual[2]
    assert len(losses) == 2 and np.isclose(losses[0], np.mean(y[:32] ** 2))  # before its update


def test_check_09_3_hints_never_contain_the_answer():
    assert _verdict("09.3", 3).ok
    assert _verdict("09.3", ...).status == "not attempted"
    for wrong in (0, 2, 5, 7, "3", 3.0):
        verdict = _verdict("09.3", wrong)
        assert verdict.status == "wrong" and "3" not in verdict.message
