import sys

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
    with pytest.raises(ValueError, match="01.2"):
        checks.check("three", 1)
    with pytest.raises(KeyError, match="lesson 97"):
        checks.check("97.1", 1)


def stub_fn(x):
    # YOUR CODE HERE
    ...


def stub_returning_none(strategy, x):
    """Docstrings do not count as an answer."""
    return None  # build the dataset here


def written_fn(x):
    return x + 1


def passing_fn(checkpoint, directory):
    """Restore nothing: a learner's answer where the stub is `...`."""
    pass


def test_pass_is_an_answer_where_the_exercise_says_so(registry, monkeypatch):
    monkeypatch.setattr(checks, "_PASS_ANSWERS", set())
    checks.exercise("98.3", pass_answers=True)(lambda fns: "restored nothing")
    assert checks.check("98.1", passing_fn).status == checks.NOT_ATTEMPTED
    judged = checks.check("98.3", (written_fn, passing_fn))
    assert judged.status == checks.WRONG and "restored nothing" in judged.message
    assert checks.check("98.3", (written_fn, stub_fn)).status == checks.NOT_ATTEMPTED


def test_stubs_are_not_attempted_and_written_code_is(registry, capsys):
    for stub in (..., None, stub_fn, stub_returning_none, {"a": 1, "b": ...}, [1, ...]):
        assert not checks.attempted(stub), stub
        assert checks.check("98.1", stub).status == checks.NOT_ATTEMPTED
    for answer in (0, written_fn, {"a": 1}, (1, 2), lambda x: x, lambda d, m, o: 3):
        assert checks.attempted(answer), answer


def test_ready_guards_a_cell_until_the_answer_is_written(capsys):
    assert not checks.ready("98.1", written_fn, stub_fn)
    assert "waiting" in capsys.readouterr().out
    assert checks.ready("98.1", written_fn, 3)


def test_an_unfilled_earlier_answer_makes_a_later_check_wait(registry):
    checks.exercise("98.3")(lambda answer, earlier: "wrong: the earlier answer is missing")
    for earlier in (None, ..., stub_fn):
        result = checks.check("98.3", written_fn, earlier)
        assert result.status == checks.NOT_ATTEMPTED and "earlier exercise" in result.message
    assert checks.check("98.3", written_fn, {"a": None}).status == checks.WRONG  # not a stub


def test_learner_source_reads_a_def_and_explains_anything_else():
    def configure(n):
        return n

    source, hint = checks.learner_source(configure, "configure")
    assert hint is None and source.startswith("def configure(n):")
    assert "itself, not its result" in checks.learner_source(3, "configure")[1]
    assert "`def`" in checks.learner_source(print, "configure")[1]  # a built-in: no source


def test_course_code_tells_the_package_from_the_learner():
    from tflearn_helpers import mirrored

    assert checks.course_code(mirrored.make_train_step)
    assert not checks.course_code(written_fn)
    assert not checks.course_code(lambda x: x)
    for not_code in (3, None, "mirrored.make_train_step", print):
        assert not checks.course_code(not_code)


def test_watching_records_calls_through_the_module_and_puts_it_back():
    from tflearn_helpers import mirrored
    from tflearn_helpers.taught import lesson01  # where the lesson's copy is generated

    original = mirrored.max_abs_difference
    with checks.watching(mirrored.max_abs_difference) as called:
        assert mirrored.max_abs_difference([[1.0]], [[3.0]]) == 2.0  # still does its job
        lesson01.max_abs_difference([[1.0]], [[1.0]])
    assert called == ["max_abs_difference"] * 2
    assert mirrored.max_abs_difference is original is lesson01.max_abs_difference
    with pytest.raises(ValueError):  # restored even when the block raises
        with checks.watching(mirrored.max_abs_difference) as called:
            mirrored.max_abs_difference([], [[1.0]])
    assert mirrored.max_abs_difference is original and called == ["max_abs_difference"]


def test_course_calls_sees_the_package_however_it_is_reached():
    from tflearn_helpers.topics.ps_workers import WorkerLog  # imported before the call

    def borrowed(before, after):
        return WorkerLog(0, before=before, after=after).staleness

    def written(before, after):
        return [a - b - 1 for b, a in zip(before, after, strict=True)]

    assert checks.course_calls(borrowed, [0], [2]) == ([1], ["staleness"])
    assert checks.course_calls(written, [0], [2]) == ([1], [])
    assert sys.getprofile() is None  # put back


def test_cell_course_calls_names_what_the_asking_cell_uses():
    from tflearn_helpers import between_graph

    cell = (
        "answer = dict((n, d) for n, _, d, _ in between_graph.placement(num_ps=3))\nfound = ask()"
    )
    scope = {"between_graph": between_graph, "ask": checks.cell_course_calls}
    exec(compile(cell, "<cell-test>", "exec"), scope)
    assert scope["found"] == ["tflearn_helpers.topics.between_graph.placement"]
    scope = {"check": checks.check, "ask": checks.cell_course_calls}
    exec(compile('answer = "ps:0"\ncheck\nfound = ask()', "<cell-test>", "exec"), scope)
    assert scope["found"] == []  # check() itself does not count


def test_ready_runs_the_test_before_running_and_the_check_repeats_its_hint(
    registry, monkeypatch, capsys
):
    monkeypatch.setattr(checks, "_BEFORE", {})
    monkeypatch.setattr(checks, "_REFUSED", {})
    checks.before_running("98.4")(lambda fn: None if fn(1) == 2 else "the launch would hang")
    checks.exercise("98.4")(lambda fn, outcomes: None)
    assert not checks.ready("98.4", lambda x: x)  # refused: the rest of the cell does not run
    assert "the launch would hang" in capsys.readouterr().out
    refused = checks.check("98.4", lambda x: x, None)  # its outcomes never came: still wrong
    assert refused.status == checks.WRONG and "hang" in refused.message
    assert checks.ready("98.4", written_fn)
    assert checks.check("98.4", written_fn, [0]).ok
    assert checks.check("98.4", written_fn, None).status == checks.NOT_ATTEMPTED
    checks.before_running("98.5")(lambda fn: 1 / 0)
    assert not checks.ready("98.5", written_fn)
    assert "ZeroDivisionError" in capsys.readouterr().out
