"""The soak lane's queue and pass-rate table (tools/soak.py), on made-up run results."""

import csv
import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import soak  # noqa: E402


def _run(nb, run, status="passed", seconds=30.0, cell=None, error=""):
    return {"notebook": nb, "run": run, "status": status, "seconds": seconds, "cell": cell,
            "error": error}  # fmt: skip


RESULTS = [
    _run("notebooks/06_x.ipynb", 1, seconds=50.0),
    _run("notebooks/00_x.ipynb", 1, seconds=20.0),
    _run("notebooks/06_x.ipynb", 2, "failed", 70.0, 11, "AssertionError: saved step 8"),
    _run("notebooks/00_x.ipynb", 2, seconds=22.0),
    _run("notebooks/06_x.ipynb", 3, seconds=90.0),
    _run("notebooks/00_x.ipynb", 3, "failed", 5.0, None, "runner exited with -9: killed"),
]


def test_aggregate_counts_passes_fails_and_times_per_notebook():
    table = soak.aggregate(RESULTS, budget=60)
    assert [r["notebook"] for r in table] == ["notebooks/06_x.ipynb", "notebooks/00_x.ipynb"]
    six, zero = table
    assert (six["runs"], six["passed"], six["failed"]) == (3, 2, 1)
    assert (six["median s"], six["max s"], six["over budget"]) == (70.0, 90.0, 2)
    assert six["failures"] == ["run 2, cell 11: AssertionError: saved step 8"]
    assert (zero["passed"], zero["failed"], zero["median s"], zero["over budget"]) == (
        2,
        1,
        20.0,
        0,
    )
    assert zero["failures"] == ["run 3, no cell: runner exited with -9: killed"]


def test_a_run_that_left_processes_behind_counts_as_failed():
    left = _run("notebooks/02_x.ipynb", 1, "failed", 40.0, None, "left processes or ports behind")
    (row,) = soak.aggregate([left])
    assert row["failed"] == 1 and "left processes" in row["failures"][0]


def test_totals_and_an_all_green_table():
    assert soak.totals(soak.aggregate(RESULTS)) == {"runs": 6, "passed": 4, "pass rate": 4 / 6}
    green = soak.aggregate([_run("a/b.ipynb", k) for k in (1, 2)])
    assert soak.totals(green)["pass rate"] == 1.0 and green[0]["failures"] == []
    assert soak.totals([]) == {"runs": 0, "passed": 0, "pass rate": 0.0}


def test_markdown_has_a_row_per_notebook_the_failures_and_the_totals():
    text = soak.markdown(soak.aggregate(RESULTS), budget=60)
    lines = text.splitlines()
    assert lines[0].startswith("| notebook | runs | passed | failed |")
    assert len([ln for ln in lines if ln.startswith("| notebooks/")]) == 2
    assert "run 2, cell 11: AssertionError: saved step 8" in text
    assert "4 of 6 runs passed (67 %)" in text and "longer than 60 s" in text
    piped = soak.markdown(soak.aggregate([_run("a.ipynb", 1, "failed", 1.0, 3, "x | y")]))
    assert "x \\| y" in piped, "a | in an error must not break the table"


def test_csv_round_trips():
    rows = list(csv.reader(io.StringIO(soak.to_csv(soak.aggregate(RESULTS)))))
    assert tuple(rows[0]) == soak.HEADERS and len(rows) == 3
    assert rows[1][3] == "1" and "saved step 8" in rows[1][-1]


def test_queue_goes_round_every_notebook_once_per_run():
    assert soak.queue(["a", "b"], 2) == [("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    with pytest.raises(ValueError, match="at least 1"):
        soak.queue(["a"], 0)


def test_notebooks_lists_lessons_solutions_and_exercises_and_filters(tmp_path):
    for f in ("notebooks", "solutions", "exercises"):
        (tmp_path / f).mkdir()
        (tmp_path / f / "06_x.ipynb").write_text("{}")
    (tmp_path / "notebooks" / "01b_y.ipynb").write_text("{}")
    found = soak.notebooks(root=tmp_path)
    assert found == ["notebooks/01b_y.ipynb", "notebooks/06_x.ipynb", "solutions/06_x.ipynb",
                     "exercises/06_x.ipynb"]  # fmt: skip
    assert soak.notebooks("01b", root=tmp_path) == ["notebooks/01b_y.ipynb"]
    with pytest.raises(SystemExit, match="no notebook"):
        soak.notebooks("99", root=tmp_path)


def test_write_puts_the_table_in_markdown_csv_and_json(tmp_path):
    text = soak.write(tmp_path, RESULTS, {"commit": "abc"}, budget=60)
    assert (tmp_path / "soak.md").read_text().strip() == text
    doc = json.loads((tmp_path / "soak.json").read_text())
    assert doc["commit"] == "abc" and len(doc["results"]) == 6 and doc["totals"]["passed"] == 4
    assert (tmp_path / "soak.csv").read_text().startswith("notebook,runs")


def test_run_one_reads_the_runner_summary_and_reports_a_runner_that_died(tmp_path):
    fake = tmp_path / "fake_python"
    fake.write_text("#!/bin/sh\necho 'Traceback: boom' ; exit 3\n")
    fake.chmod(0o755)
    r = soak.run_one("notebooks/00_x.ipynb", 1, tmp_path, 10, str(fake))
    assert r["status"] == "failed" and r["cell"] is None
    assert r["error"] == "runner exited with 3: Traceback: boom"


def test_run_one_reads_the_failing_cell_from_the_runner_summary(tmp_path):
    fake = tmp_path / "fake_python"
    summary = [
        {
            "status": "failed",
            "seconds": 12.5,
            "cell": 7,
            "error": "AssertionError: x",  # the runner strips terminal colours
        }
    ]
    fake.write_text(
        f"#!{sys.executable}\nimport json, sys\nfrom pathlib import Path\n"
        "out = Path(sys.argv[sys.argv.index('--out') + 1])\n"
        f"(out / 'summary.json').write_text(json.dumps({summary!r}))\n"
    )
    fake.chmod(0o755)
    r = soak.run_one("solutions/06_x.ipynb", 2, tmp_path, 10, str(fake))
    assert (r["status"], r["seconds"], r["cell"], r["error"]) == (
        "failed",
        12.5,
        7,
        "AssertionError: x",
    )
    assert r["notebook"] == "solutions/06_x.ipynb" and r["run"] == 2
