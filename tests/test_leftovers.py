import os
import subprocess
import sys
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import leftovers  # noqa: E402

ORPHAN = (  # starts a sleeper in its own session and exits: the sleeper is orphaned
    "import subprocess as s, sys; print(s.Popen([sys.executable, '-c', 'import time; "
    "time.sleep(30)'], start_new_session=True, stdout=s.DEVNULL, stderr=s.DEVNULL).pid)"
)


def _orphan(env) -> psutil.Process:
    out = subprocess.run([sys.executable, "-c", ORPHAN], env=env, capture_output=True, text=True)
    return psutil.Process(int(out.stdout))


def test_only_orphans_started_from_here_count_and_others_are_never_killed():
    before = leftovers.snapshot()
    ours = _orphan(dict(os.environ))
    stranger_env = {k: v for k, v in os.environ.items() if k != leftovers.TAG_ENV}
    stranger = _orphan(stranger_env)  # someone else's background job on this machine
    try:
        found = leftovers.leftovers(before, wait=0.5)
        assert any(f"process {ours.pid}:" in line for line in found), found
        assert not any(f"process {stranger.pid}:" in line for line in found), found
        leftovers.kill(before)
        ours.wait(5)
        assert stranger.is_running()
    finally:
        for proc in (ours, stranger):
            if proc.is_running():
                proc.kill()


def test_an_orphan_on_a_pid_psutil_saw_before_is_still_found(monkeypatch):
    # The state psutil is in after the system gives a dead process's pid out again (pid_max
    # 32768 wraps during a CI run; reproduced once by forking 32,351 times): process_iter()
    # still caches the dead process's object under that pid, and skips the new process.
    before = leftovers.snapshot()
    ours = _orphan(dict(os.environ))
    try:
        dead = psutil.Process(ours.pid)
        dead._ident = (ours.pid, ours.create_time() - 60)  # created a minute earlier
        monkeypatch.setattr(psutil, "_pmap", {ours.pid: dead})
        found = leftovers.leftovers(before, wait=0.5)
        assert any(f"process {ours.pid}:" in line for line in found), found
    finally:
        ours.kill()


def test_the_temp_check_lists_only_the_course_entries_added_since_it_saved(tmp_path, monkeypatch):
    monkeypatch.setattr(leftovers.tempfile, "gettempdir", lambda: str(tmp_path))
    (tmp_path / "tflearn-old").mkdir()
    saved = tmp_path / "before.txt"
    assert leftovers.main(["temp", "--save", str(saved)]) == 0
    (tmp_path / "someone-elses").mkdir()
    assert leftovers.main(["temp", "--since", str(saved)]) == 0
    (tmp_path / "tflearn-session-1-x").mkdir()
    assert leftovers.main(["temp", "--since", str(saved)]) == 1
    assert leftovers.temp_entries() == {"tflearn-old", "tflearn-session-1-x"}
