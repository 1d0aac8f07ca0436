"""The one event protocol: TFLEARN_EVENT {json} lines."""

import sys

import pytest

from tflearn_helpers import programs


def test_emit_and_parse_round_trip(capsys):
    programs.events.emit("progress", applied=3, per_worker=[1, 2])
    out = capsys.readouterr().out
    assert out.startswith("TFLEARN_EVENT {")
    text = "noise\n" + out + 'TFLEARN_EVENT {cut sho\nRESULT {"kind": "old"}\n'
    assert programs.events.parse(text) == [{"kind": "progress", "applied": 3, "per_worker": [1, 2]}]
    assert programs.events.parse(text, "other") == []


def test_an_event_needs_a_kind():
    with pytest.raises(ValueError, match="kind"):
        programs.events.line("")


def test_wait_for_returns_the_first_match_by_kind_or_test():
    log = programs.events.line("a", n=1) + "\n" + programs.events.line("b", n=2) + "\n"
    assert programs.events.wait_for(lambda: log, "b", timeout=1)["n"] == 2
    assert programs.events.wait_for(lambda: log, lambda e: e["n"] >= 1, timeout=1)["n"] == 1


def test_wait_for_times_out_naming_the_event():
    with pytest.raises(TimeoutError, match="'done' event"):
        programs.events.wait_for(lambda: "", "done", timeout=0.3)


def test_wait_for_stops_when_the_program_dies():
    child = programs.processes.start([sys.executable, "-c", "print('crashed here')"])
    with pytest.raises(programs.processes.ProcessExitedError, match="crashed here"):
        programs.events.wait_for(child.output, "done", timeout=60, depends_on=[child])


def test_a_child_s_events_are_read_while_it_runs():
    code = (
        "from tflearn_helpers import programs; import time\n"
        "programs.events.emit('up', pid=1)\ntime.sleep(60)"
    )
    with programs.processes.start([sys.executable, "-u", "-c", code]) as child:
        assert (
            programs.events.wait_for(child.output, "up", timeout=60, depends_on=[child])["pid"] == 1
        )


def _python(code: str, **options) -> programs.processes.Child:
    return programs.processes.start([sys.executable, "-u", "-c", code], **options)


def test_result_reads_the_last_result_event_and_keeps_stderr_apart():
    child = _python(
        "import sys; from tflearn_helpers import programs; print('noise'); "
        "programs.events.emit('result', value=[0]); programs.events.emit('result', value=[1, 2]); "
        "print('note', file=sys.stderr)",
        merge_stderr=False,
    )
    value, err = programs.events.result(child, 30, "a child")
    assert value == [1, 2] and "note" in err and "note" not in child.output()


def test_a_failing_silent_or_hanging_child_is_reported_and_stopped():
    with pytest.raises(RuntimeError, match=r"a child failed \(exit code 3\)"):
        programs.events.result(_python("raise SystemExit(3)"), 30, "a child")
    with pytest.raises(RuntimeError, match="a child reported no result"):
        programs.events.result(_python("print('[1, 2]')"), 30, "a child")
    slow = _python("import time; time.sleep(60)")
    with pytest.raises(TimeoutError, match="over 1 s"):
        programs.events.result(slow, 1, "a child")
    assert not slow.running()  # killed, not left running
