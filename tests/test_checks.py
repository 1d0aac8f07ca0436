import pytest

from tflearn_helpers import checks


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(checks, "_REGISTRY", {})
    monkeypatch.setattr(checks, "_lookup", lambda eid: checks._REGISTRY[eid])
    checks.exercise("98.1")(lambda answer: None if answer == 42 else "count the replicas again")
    checks.exercise("98.2")(lambda answer: 1 / 0)


def test_right_wrong_and_not_attempted(registry, capsys):
    assert checks.check("98.1", 42).ok
    wrong = checks.check("98.1", 41)
    assert wrong.status == checks.WRONG and "replicas" in wrong.message
    assert "42" not in capsys.readouterr().out  # the answer is never shown
    assert checks.check("98.1", ...).status == checks.NOT_ATTEMPTED


def test_a_failing_check_is_reported_as_wrong_not_raised(registry):
    result = checks.check("98.2", 1)
    assert result.status == checks.WRONG and "ZeroDivisionError" in result.message


def test_registering_twice_is_an_error(registry):
    with pytest.raises(ValueError, match="twice"):
        checks.exercise("98.1")(lambda a: None)


def test_unknown_ids_are_clear():
    with pytest.raises(ValueError, match="03.2"):
        checks.check("three", 1)
    with pytest.raises(KeyError, match="lesson 97"):
        checks.check("97.1", 1)
