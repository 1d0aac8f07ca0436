"""The session's scratch folder: everything a kernel and its children write in the temp
folder goes in one folder, removed at exit, or by the next session when the kernel was killed."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tflearn_helpers.runtime import scratch

SESSION = textwrap.dedent(
    """
    import os, subprocess, sys, tempfile
    from tflearn_helpers.runtime import scratch
    folder = scratch.claim()
    assert scratch.claim() == folder  # once per process
    mine = tempfile.mkdtemp(prefix="tflearn-lesson-")
    child = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.mkdtemp())"],
                           capture_output=True, text=True, check=True).stdout.strip()
    print(folder, mine, child, sep="\\n", flush=True)
    if sys.argv[1] == "hang":
        import time; time.sleep(60)
    """
)


def _session(base: Path, mode: str) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(base)}
    return subprocess.Popen(
        [sys.executable, "-c", SESSION, mode], env=env, stdout=subprocess.PIPE, text=True
    )


def test_a_session_keeps_its_files_and_its_childrens_in_one_folder_removed_at_exit(tmp_path):
    proc = _session(tmp_path, "exit")
    folder, mine, child = (Path(line) for line in proc.stdout.read().split())
    assert proc.wait(30) == 0
    assert folder.parent == tmp_path and folder.name.startswith(f"{scratch.PREFIX}{proc.pid}-")
    assert mine.parent == folder and child.parent == folder  # the lesson's and its child's
    assert list(tmp_path.iterdir()) == []  # all gone at exit


def test_a_killed_session_is_removed_by_the_next_and_a_live_one_is_kept(tmp_path):
    killed, live = _session(tmp_path, "hang"), _session(tmp_path, "hang")
    try:
        killed_folder = Path(killed.stdout.readline().strip())
        live_folder = Path(live.stdout.readline().strip())
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        assert killed_folder.is_dir()  # a killed kernel cannot clean up
        assert scratch.sweep(tmp_path) == [killed_folder]
        assert not killed_folder.exists() and live_folder.is_dir()
    finally:
        live.kill()
        live.wait(10)
    scratch.sweep(tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["tflearn-session-notapid-x", "tflearn-other-1-x"])
def test_the_sweep_leaves_folders_it_does_not_own(tmp_path, name):
    (tmp_path / name).mkdir()
    assert scratch.sweep(tmp_path) == []
    assert (tmp_path / name).is_dir()
