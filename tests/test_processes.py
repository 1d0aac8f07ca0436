import subprocess
import sys

import pytest

from tflearn_helpers.cluster import processes


def _child(code: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_reads_the_last_line_as_json_and_keeps_stderr():
    proc = _child("import sys; print('noise'); print('[1, 2]'); print('note', file=sys.stderr)")
    data, err = processes.read(proc, 30, "a child")
    assert data == [1, 2] and "note" in err


def test_a_failing_or_hanging_child_is_reported_and_stopped():
    with pytest.raises(RuntimeError, match="a child failed"):
        processes.read(_child("raise SystemExit(3)"), 30, "a child")
    slow = _child("import time; time.sleep(60)")
    with pytest.raises(TimeoutError, match="over 1 s"):
        processes.read(slow, 1, "a child")
    assert slow.poll() is not None  # killed, not left running
