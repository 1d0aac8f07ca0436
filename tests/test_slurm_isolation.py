"""The pieces that keep a local Slurm cluster's nodes apart and leave nothing behind; they
need no Slurm (tests/test_slurm.py runs them with real daemons)."""

import os
import subprocess
import sys
import time

import pytest

from tflearn_helpers.cluster import slurm_isolation
from tflearn_helpers.programs import processes

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's /proc")


@linux
def test_the_watcher_removes_the_folder_once_its_owner_has_gone(tmp_path):
    folder = tmp_path / "cluster"
    folder.mkdir()
    (folder / "slurm.conf").write_text("")
    daemon = processes.start(["sh", "-c", "sleep 30", str(folder)])  # names the folder
    watcher, pipe = slurm_isolation.watch_folder(folder)
    os.close(pipe)  # the owner has gone; the daemon has not
    time.sleep(1)
    assert watcher.poll() is None and folder.exists()
    daemon.stop(grace=0)
    assert watcher.wait(timeout=15) == 0 and not folder.exists()


@linux
def test_strays_that_point_at_the_cluster_are_killed_and_others_spared(tmp_path):
    conf = str(tmp_path / "slurm.conf")
    env = {"SLURM_CONF": conf}
    task = subprocess.Popen(["sleep", "30"], env={**env, "SLURM_JOB_ID": "7"})
    other_cluster = subprocess.Popen(["sleep", "30"], env={"SLURM_CONF": "x", "SLURM_JOB_ID": "7"})
    not_a_job = subprocess.Popen(["sleep", "30"], env=env)  # e.g. a worker the notebook started
    try:
        slurm_isolation.kill_strays(conf)
        assert task.wait(timeout=10) == -9
        assert other_cluster.poll() is None and not_a_job.poll() is None
    finally:
        for proc in (task, other_cluster, not_a_job):
            proc.kill()
            proc.wait(10)


def test_pid_namespaces_is_a_yes_or_no():
    assert slurm_isolation.pid_namespaces() in (True, False)
