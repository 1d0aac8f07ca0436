import json
import multiprocessing
import os
from pathlib import Path

import pytest

from tflearn_helpers import report


def test_table_aligns_columns_and_formats_floats():
    text = report.format_table([("a", 1.23456), ("bbb", 2)], ("name", "value"))
    lines = text.splitlines()
    assert lines[0].startswith("name") and set(lines[1]) <= {"-", " "}
    assert "1.235" in lines[2] and lines[3].startswith("bbb")


def test_table_rejects_ragged_rows():
    with pytest.raises(ValueError, match="2 cells"):
        report.format_table([(1, 2)], ("only",))


def test_print_table_shows_a_dataframe_as_text_outside_a_notebook(capsys):
    report.print_table([("a", 1.23456), ("bbb", 2)], ("name", "value"))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "value"] and lines[1].split() == ["a", "1.235"]
    with pytest.raises(ValueError, match="2 cells"):
        report.print_table([(1, 2)], ("only",))


def test_print_table_sends_html_and_text_in_a_notebook(monkeypatch):
    shown = []
    monkeypatch.setattr(report, "_in_ipython", lambda: True)
    monkeypatch.setattr("IPython.display.display", lambda data, raw: shown.append(data))
    report.print_table([("a", 1)], ("name", "value"))
    (data,) = shown
    assert "<table" in data["text/html"] and "<th>name</th>" in data["text/html"]
    assert data["text/plain"].split() == ["name", "value", "a", "1"]


def test_headline_prints_and_appends_when_the_runner_asks(tmp_path, monkeypatch, capsys):
    sink = tmp_path / "h.jsonl"
    monkeypatch.setenv(report.HEADLINES_ENV, str(sink))
    report.headline("speed", 12.5, "img/s")
    assert capsys.readouterr().out.strip() == "speed: 12.5 img/s"
    assert json.loads(sink.read_text()) == {"label": "speed", "value": "12.5 img/s"}


def test_record_round_trips_and_tolerates_a_missing_store(tmp_path, monkeypatch):
    monkeypatch.setenv(report.RESULTS_ENV, str(tmp_path / "r" / "results.json"))
    assert report.recorded("x") is None
    report.record("x", 3.0, devices=2)
    entry = report.recorded("x")
    assert entry["value"] == 3.0 and entry["devices"] == 2


def _record_many(store: str, worker: int) -> None:
    os.environ[report.RESULTS_ENV] = store
    for i in range(25):
        report.record(f"w{worker}.{i}", float(i))


def test_record_from_several_processes_at_once_keeps_every_figure(tmp_path):
    store = str(tmp_path / "results.json")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_record_many, args=(store, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 4  # no writer lost its temporary file
    data = json.loads(Path(store).read_text())
    assert len(data) == 4 * 25, "a concurrent read-modify-write dropped figures"
    assert not list(tmp_path.glob("*.tmp")), "no temporary file is left"


def test_recorded_prefix_reads_only_matching_keys(tmp_path, monkeypatch):
    monkeypatch.setenv(report.RESULTS_ENV, str(tmp_path / "results.json"))
    assert report.recorded_prefix("02.") == {}
    report.record("02.b", 2.0)
    report.record("02.a", 1.0)
    report.record("03.a", 3.0)
    found = report.recorded_prefix("02.")
    assert list(found) == ["02.a", "02.b"] and found["02.b"]["value"] == 2.0
    with pytest.raises(TypeError, match="prefix"):
        report.recorded_prefix(None)


def test_expect_error_catches_prints_and_asserts_the_type(capsys):
    with report.expect_error(ValueError, KeyError) as caught:
        raise KeyError("no such device")
    assert isinstance(caught.error, KeyError)
    assert "KeyError" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="without error"):
        with report.expect_error(ValueError):
            pass
    with pytest.raises(ZeroDivisionError):  # another error is a real failure
        with report.expect_error(ValueError):
            raise ZeroDivisionError("a different failure")
    with pytest.raises(TypeError):
        with report.expect_error():
            pass
