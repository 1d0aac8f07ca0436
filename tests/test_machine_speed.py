"""tools/machine_speed.py: make test's reading of how fast the machine was, before and after."""

import json
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "machine_speed.py"


def run(*args):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_reading_then_what_changed_since(tmp_path):
    saved = tmp_path / "before.json"
    assert "machine speed before: python loop" in run("--save", str(saved))
    before = json.loads(saved.read_text())
    assert all(ms > 0 for ms in before["work_ms"].values())
    out = run("--since", str(saved))
    ratios = re.findall(r"(python loop|array copy) ([\d.]+)x", out)
    assert [name for name, _ in ratios] == ["python loop", "array copy"]
    # the same work on the same machine a second later: within a factor of 3, whatever the load
    assert all(1 / 3 < float(r) < 3 for _, r in ratios), out
    shares = [float(s) for s in re.findall(r"([\d.]+) %", out.splitlines()[-1])]
    assert 99 <= sum(shares) <= 101, out  # each tick counted once: user ... steal
