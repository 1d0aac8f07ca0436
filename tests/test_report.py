import subprocess
import sys

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


def test_setup_course_sets_pandas_to_print_figures_as_the_course_does():
    code = (
        "from tflearn_helpers import setup_course; setup_course(verbose=False);"
        "import pandas as pd;"
        "print(pd.DataFrame([('a', 1.23456), ('b', 123456.7)]).to_string());"
        "print(pd.get_option('display.max_colwidth'))"
    )  # a fresh process: setup_course must run before TensorFlow, which other tests import
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1.235" in done.stdout and "123,457" in done.stdout
    assert done.stdout.strip().endswith("None")


def test_headline_outside_a_notebook_prints_the_line(capsys):
    report.headline("speed", 12.5, "img/s")
    assert capsys.readouterr().out.strip() == "speed: 12.5 img/s"


def test_headline_in_a_notebook_tags_its_output_for_the_summary_page(monkeypatch):
    import IPython
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: shown.append((a, k)))
    report.headline("speed", 123456.7, "img/s")
    (data,), options = shown[0]
    assert data == {"text/plain": "speed: 123,457 img/s"} and options["raw"]
    assert options["metadata"] == {
        report.HEADLINE_KEY: {"label": "speed", "value": "123,457 img/s"}
    }


def test_skipped_says_what_is_not_shown_and_why_tagged_for_the_summary_page(monkeypatch, capsys):
    report.skipped("the Slurm runs", "no Slurm here")
    assert capsys.readouterr().out.strip() == "the Slurm runs: not shown (no Slurm here)"
    import IPython
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: shown.append((a, k)))
    report.skipped("a shaped link", "no network namespaces")
    ((_, options),) = shown
    assert options["metadata"] == {
        report.SKIPPED_KEY: {"label": "a shaped link", "value": "not shown (no network namespaces)"}
    }
    with pytest.raises(ValueError, match="what is not shown and why"):
        report.skipped("the Slurm runs", " ")


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
