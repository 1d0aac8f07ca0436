"""The README's commands on a learner's machine: `make lab` and `make course` need no root, no
apt and no Python 3.11 (lab 08b's kernel is optional). Read with `make -n`, which still runs
the recursive make that decides whether to build lab 08b's kernel."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# no Python 3.11, and no lab 08b environment built yet (a machine that has one uses it)
NO_LEGACY = ("PYTHON_LEGACY=/nonexistent/python3.11", "LEGACY=.venv-legacy-not-built")


def _dry_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "--no-print-directory", "-n", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("target", ["lab", "course"])
def test_without_python_3_11_the_target_goes_on_and_says_how_to_add_lab_08b(target):
    done = _dry_run(target, *NO_LEGACY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "make legacy-env PYTHON_LEGACY=/path/to/python3.11" in done.stdout
    assert "ipykernel install" not in done.stdout  # no legacy kernel is built
    command = {"lab": ".venv/bin/jupyter lab", "course": "tools/course.py --out build"}[target]
    assert command in done.stdout


@pytest.mark.parametrize("target", ["lab", "course", "doctor"])
def test_no_learner_target_calls_apt(target):
    done = _dry_run(target, *NO_LEGACY)
    assert "apt-get" not in done.stdout and "sudo" not in done.stdout


def test_the_strict_legacy_env_fails_with_the_reason():
    done = subprocess.run(
        ["make", "--no-print-directory", "legacy-env", *NO_LEGACY, "-W", "requirements/legacy.txt"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )  # -W: as if the requirements changed, so the recipe runs
    assert done.returncode != 0
    assert "Lab 08b's kernel needs Python 3.11" in done.stdout


def test_where_lab_08b_is_built_the_main_job_waits_for_no_recipe(tmp_path):
    """make test's main job must take the first job slot: a prerequisite that runs a recipe
    (the phony legacy-kernel) let three other jobs start before it."""

    def course_rule() -> str:
        done = subprocess.run(
            ["make", "-p", "-n", "course", f"LEGACY={tmp_path}"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        return next(line for line in done.stdout.splitlines() if line.startswith("course:"))

    assert course_rule().split() == ["course:", "env", "legacy-kernel"]  # not built: a recipe
    (tmp_path / ".installed").touch()
    assert course_rule().split() == ["course:", "env", f"{tmp_path}/.installed"]  # a file


def test_system_packages_are_one_root_only_target_that_make_test_calls():
    makefile = (ROOT / "Makefile").read_text()
    recipes = [line for line in makefile.splitlines() if "apt-get install" in line]
    assert len(recipes) == 1  # one place installs Debian packages
    assert _dry_run("system-deps").returncode == 0
    test_recipe = makefile.split("\ntest:\n", 1)[1].split("\n\n", 1)[0]
    assert "system-deps" in test_recipe
