"""The course runner on two tiny notebooks: one passes, one fails; both are reported."""

import json
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import course  # noqa: E402
import nbtools  # noqa: E402
import side_by_side  # noqa: E402


def _notebook(path, *sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(path))


def test_runner_reports_status_time_headlines_and_failing_cell(tmp_path, monkeypatch):
    src = tmp_path / "notebooks"
    src.mkdir()
    _notebook(
        src / "10_ok.ipynb",
        "from tflearn_helpers.measuring.report import expect_error, headline",
        "with expect_error(KeyError):\n    raise KeyError('shown, not a failure')",
        "headline('answer', 42)",
    )
    # Run All semantics: a cell that raises stops the notebook, nbval's marker or not
    _notebook(
        src / "11_bad.ipynb",
        "x = 1",
        "# NBVAL_RAISES_EXCEPTION\nraise ValueError('broken')",
        "y = 2",
    )
    _notebook(src / "12_assert.ipynb", "y = 2\nassert y == 3, 'the model says 3'")
    code = course.run_course(str(tmp_path / "build"), root=tmp_path, cell_timeout=120)
    assert code == 1  # one notebook failed, and the runner says so
    summary = {r["notebook"]: r for r in json.loads((tmp_path / "build/summary.json").read_text())}
    ok, bad = summary["notebooks/10_ok.ipynb"], summary["notebooks/11_bad.ipynb"]
    assert ok["status"] == "passed" and ok["headlines"] == [{"label": "answer", "value": "42"}]
    assert bad["status"] == "failed" and bad["cell"] == 1 and "broken" in bad["error"]
    index = (tmp_path / "build/index.html").read_text()
    assert "10_ok.ipynb" in index and "failed at cell 1" in index and "answer: 42" in index
    # the learner reads the error as text, with the failing cell's first line
    assert summary["notebooks/12_assert.ipynb"]["error"] == "AssertionError: the model says 3"
    assert "\x1b" not in index and "[31m" not in index
    assert "failed at cell 0 (<code>y = 2</code>): AssertionError: the model says 3" in index
    assert (tmp_path / "build/notebooks/10_ok.html").exists()


def test_runner_picks_folders_skips_excluded_and_fails_on_leftovers(tmp_path, capsys):
    for folder in ("solutions", "exercises"):
        (tmp_path / folder).mkdir()
    _notebook(tmp_path / "solutions/20_x.ipynb", "x = 1")
    _notebook(tmp_path / "solutions/21_legacy.ipynb", "raise RuntimeError('not run')")
    sleeper = (  # its own session: the kernel's shutdown does not take it down
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True)"
    )
    _notebook(tmp_path / "exercises/22_leaks.ipynb", sleeper)
    code = course.run_course(
        str(tmp_path / "build"),
        root=tmp_path,
        folders=("solutions", "exercises"),
        exclude=("legacy",),
        cell_timeout=120,
    )
    summary = {r["notebook"]: r for r in json.loads((tmp_path / "build/summary.json").read_text())}
    assert sorted(summary) == ["exercises/22_leaks.ipynb", "solutions/20_x.ipynb"]
    assert summary["solutions/20_x.ipynb"]["status"] == "passed"
    leak = summary["exercises/22_leaks.ipynb"]
    assert code == 1 and leak["status"] == "failed" and leak["left_running"]
    assert "run all: 1 passed, 1 failed" in capsys.readouterr().out


def test_course_root_is_the_repository_from_any_folder(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # not the repository: the runner must still find notebooks/
    assert (course.course_root() / "notebooks").is_dir()


def test_tensorflow_cpp_log_lines_reach_neither_the_progress_nor_the_rendered_notebook(
    tmp_path, capfd, monkeypatch
):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")  # else ipykernel does not copy descriptor 2
    (tmp_path / "notebooks").mkdir()
    cpp = "E0000 00:00:1796130835.552419   12699 meta_optimizer.cc:967] tf_auto"
    _notebook(  # the source splits the word, so that only the output can contain it
        tmp_path / "notebooks/30_log.ipynb",
        f"import os, sys, time\nos.write(2, b'{cpp}' + b'_shard failed\\n')\ntime.sleep(0.5)\n"
        "print('a warning to read', file=sys.stderr)",
    )
    assert course.run_course(str(tmp_path / "build"), root=tmp_path, cell_timeout=120) == 0
    progress = capfd.readouterr()
    assert "tf_auto_shard" not in progress.out + progress.err
    saved = (tmp_path / "build/notebooks/30_log.ipynb").read_text()
    html = (tmp_path / "build/notebooks/30_log.html").read_text()
    assert "tf_auto_shard" not in saved + html and "a warning to read" in saved
    assert "tf_auto_shard" in (tmp_path / "build/notebooks/30_log.kernel.log").read_text()
    summary = json.loads((tmp_path / "build/summary.json").read_text())
    assert summary[0]["hidden_log_lines"] == 1
    assert "1 C++ log lines hidden" in (tmp_path / "build/index.html").read_text()


def test_two_at_a_time_each_in_its_own_runner(tmp_path, capsys):
    (tmp_path / "notebooks").mkdir()
    # each as if a program of its own had left its log where the course keeps them
    log = "import os, pathlib\npathlib.Path(os.environ['TFLEARN_KEEP_LOGS']).mkdir(parents=True)\n"
    _notebook(tmp_path / "notebooks/40_quick.ipynb", log + "import time\ntime.sleep(0.1)")
    _notebook(tmp_path / "notebooks/41_slow.ipynb", log + "import time\ntime.sleep(3)")
    sleeper = (
        log + "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True)"
    )
    _notebook(tmp_path / "notebooks/42_leaks.ipynb", sleeper)
    out = tmp_path / "build"
    out.mkdir()
    last = [{"notebook": "notebooks/41_slow.ipynb", "seconds": 9.0}]
    (out / "summary.json").write_text(json.dumps(last))  # the last run: 41 took longest
    code = course.run_course(str(out), root=tmp_path, cell_timeout=120, jobs=2)
    summary = json.loads((out / "summary.json").read_text())
    assert [r["notebook"] for r in summary] == [
        f"notebooks/{n}.ipynb" for n in ("40_quick", "41_slow", "42_leaks")
    ]  # the index keeps the course's order
    status = {r["notebook"]: r["status"] for r in summary}
    assert code == 1 and status["notebooks/42_leaks.ipynb"] == "failed"  # its own runner saw it
    assert status["notebooks/40_quick.ipynb"] == status["notebooks/41_slow.ipynb"] == "passed"
    for name in ("40_quick", "41_slow", "42_leaks"):  # where a lone run leaves them
        for suffix in (".ipynb", ".html", ".kernel.log", ".runner.log"):
            assert (out / "notebooks" / f"{name}{suffix}").exists(), name + suffix
    assert "cell 1/1 done" in (out / "notebooks/41_slow.runner.log").read_text()
    # the failed notebook's programs' logs are kept, in the one logs/ three runners brought
    assert [p.name for p in (out / "notebooks/logs").iterdir()] == ["42_leaks"]
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "notebooks", "summary.json"]
    printed = capsys.readouterr().out
    assert printed.index("41_slow.ipynb: passed") > 0 and "2 at a time" in printed


def test_the_longest_notebook_of_the_last_run_starts_first(tmp_path):
    paths = [tmp_path / "notebooks" / f"{n}.ipynb" for n in ("00_a", "01_b", "02_new", "03_c")]
    last = tmp_path / "summary.json"
    assert side_by_side.longest_first(paths, last) == paths  # none of them measured: in order
    took = {"00_a": 5.0, "01_b": 60.0, "03_c": 20.0}
    last.write_text(json.dumps([{"notebook": f"notebooks/{n}.ipynb", "seconds": s}
                                for n, s in took.items()]))  # fmt: skip
    assert side_by_side.longest_first(paths, last) == [paths[1], paths[3], paths[0], paths[2]]


def test_a_first_run_starts_with_the_lessons_measured_longest(tmp_path):
    lessons = sorted((nbtools.ROOT / "notebooks").glob("[0-9]*.ipynb"))
    assert {f"notebooks/{p.name}" for p in lessons} == set(side_by_side.FIRST_RUN_SECONDS)
    order = side_by_side.longest_first(lessons, tmp_path / "no-summary.json")
    assert order[0].name.startswith("02_") and order[-1].name.startswith("06_")


def test_a_missing_kernel_is_skipped_with_how_to_get_it_and_what_a_lesson_skipped_is_listed(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(course, "_kernels", lambda: {"python3"})  # a machine without Python 3.11
    (tmp_path / "notebooks").mkdir()
    _notebook(tmp_path / "notebooks/50_lab.ipynb", "x = 1")
    nb = nbformat.read(str(tmp_path / "notebooks/50_lab.ipynb"), as_version=4)
    nb.metadata["kernelspec"] = {"name": "tflearn-legacy", "display_name": "legacy"}
    nbformat.write(nb, str(tmp_path / "notebooks/50_lab.ipynb"))
    _notebook(
        tmp_path / "notebooks/51_slurm.ipynb",
        "from tflearn_helpers.measuring.report import skipped\n"
        "skipped('the Slurm runs', 'no Slurm here')",
    )
    _notebook(tmp_path / "notebooks/52_other.ipynb", "x = 2")
    code = course.run_course(str(tmp_path / "build"), root=tmp_path, only="50_,51_")
    summary = {r["notebook"]: r for r in json.loads((tmp_path / "build/summary.json").read_text())}
    assert sorted(summary) == ["notebooks/50_lab.ipynb", "notebooks/51_slurm.ipynb"]  # --only a,b
    lab, slurm = summary["notebooks/50_lab.ipynb"], summary["notebooks/51_slurm.ipynb"]
    assert code == 0 and lab["status"] == "skipped" and "make legacy-env" in lab["error"]
    assert "1 passed, 0 failed, 1 skipped" in capsys.readouterr().out
    assert slurm["status"] == "passed"
    assert slurm["skipped"] == [{"label": "the Slurm runs", "value": "not shown (no Slurm here)"}]
    index = (tmp_path / "build/index.html").read_text()
    assert "the Slurm runs: not shown (no Slurm here)" in index and "skipped: no Jupyter" in index


def test_a_notebook_that_leaves_files_in_the_temp_folder_fails(tmp_path):
    (tmp_path / "notebooks").mkdir()
    _notebook(tmp_path / "notebooks/60_litter.ipynb", "import tempfile\ntempfile.mkdtemp()")
    _notebook(
        tmp_path / "notebooks/61_tidy.ipynb",
        "import tempfile\nwith tempfile.TemporaryDirectory() as d:\n    pass",
    )
    _notebook(  # the course's own session folder: removed when the kernel exits
        tmp_path / "notebooks/62_session.ipynb",
        "from tflearn_helpers.runtime import scratch\nimport tempfile\n"
        "scratch.claim()\ntempfile.mkdtemp()",
    )
    assert course.run_course(str(tmp_path / "build"), root=tmp_path, cell_timeout=120) == 1
    summary = {r["notebook"]: r for r in json.loads((tmp_path / "build/summary.json").read_text())}
    litter = summary["notebooks/60_litter.ipynb"]
    assert litter["status"] == "failed" and litter["error"] == "left files in the temp folder"
    assert len(litter["left_files"]) == 1
    for tidy in ("61_tidy", "62_session"):
        assert summary[f"notebooks/{tidy}.ipynb"]["status"] == "passed", tidy


def test_a_failed_notebook_prints_its_programs_logs_and_a_passed_one_keeps_none(tmp_path, capsys):
    (tmp_path / "notebooks").mkdir()
    program = (
        "from tflearn_helpers.programs import processes\n"
        "import sys\n"
        "w = processes.start([sys.executable, '-c', \"print('worker: refused the call')\"])\n"
        "w.wait(60)\n"
    )
    _notebook(tmp_path / "notebooks/70_fails.ipynb", program, "raise RuntimeError('chief')")
    _notebook(tmp_path / "notebooks/71_passes.ipynb", program)
    assert course.run_course(str(tmp_path / "build"), root=tmp_path, cell_timeout=120) == 1
    out = capsys.readouterr().out
    assert out.count("| worker: refused the call") == 1, out  # the failed one's worker only
    assert sorted(p.name for p in (tmp_path / "build/notebooks/logs").iterdir()) == ["70_fails"]
