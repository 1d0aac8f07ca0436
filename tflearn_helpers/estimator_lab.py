"""Running old programs and reading what they leave behind (taught in lab 01b).

Lab 01b runs the seed's Estimator program on TensorFlow 2.15, fixes it one error at a
time and reads the evidence: the exception each version raises, Estimator's
``loss = ..., step = N`` log lines, the checkpoints in a model_dir. Nothing here imports
TensorFlow, so it works in both the main and the legacy environment.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path

from .cluster.local import _die_with_parent
from .placement import _LOG_LINE as _PLACEMENT_LINE

_LOSS_LINE = re.compile(r"loss = ([-+0-9.eE]+|nan|inf), step = (\d+)")
_CHECKPOINT = re.compile(r"^model\.ckpt-(\d+)\.index$")
RESULT_PREFIX = "RESULT "
_LIVE: weakref.WeakSet = weakref.WeakSet()


def apply_fix(source: str, old: str, new: str) -> str:
    """``source`` with the one occurrence of ``old`` replaced by ``new``."""
    count = source.count(old)
    if count != 1:
        raise ValueError(f"expected exactly one {old!r} in the source, found {count}")
    return source.replace(old, new)


def run_source(source: str, name: str = "<program>", namespace: dict | None = None):
    """Execute a program's text; return the exception it raised, or None if it finished."""
    code = compile(source, name, "exec")
    try:
        exec(code, {"__name__": "__main__"} if namespace is None else namespace)
    except Exception as err:  # the error is the result being studied
        return err
    return None


def logged_steps(log: str) -> list[tuple[float, int]]:
    """The (loss, global step) pairs of Estimator's ``loss = ..., step = N`` log lines."""
    return [(float(m[1]), int(m[2])) for m in _LOSS_LINE.finditer(log)]


def placement_lines(log: str) -> list[str]:
    """The lines of a log that are TensorFlow's device-placement log (``node: (Op): /job:...``)."""
    return [line for line in log.splitlines() if _PLACEMENT_LINE.match(line.strip())]


def checkpoint_steps(model_dir: str | os.PathLike) -> list[int]:
    """The global steps of the checkpoints in ``model_dir`` (``model.ckpt-N.index``), sorted."""
    path = Path(model_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"no model_dir at {path}")
    steps = (_CHECKPOINT.match(p.name) for p in path.iterdir())
    return sorted(int(m[1]) for m in steps if m)


def result_line(**fields) -> str:
    """A line a task prints so the notebook can read its figures: ``RESULT {...}``."""
    return RESULT_PREFIX + json.dumps(fields, sort_keys=True)


def results(log: str) -> list[dict]:
    """Every ``RESULT {...}`` line of a log, decoded."""
    return [
        json.loads(line[len(RESULT_PREFIX) :])
        for line in log.splitlines()
        if line.startswith(RESULT_PREFIX)
    ]


class BackgroundRun:
    """A Python program in its own process, its output in a log file; a context manager.

    ``wait_for`` returns once the log matches a pattern often enough, and raises (with
    the log's tail) when the program exits first or the time is up: nothing blocks forever.
    ``stop()`` (also on ``with`` exit and at interpreter exit) kills the program and
    anything it started.
    """

    def __init__(self, args, log_path, env=None, cwd=None, python=None):
        if isinstance(args, str) or not args:
            raise ValueError("args must be a non-empty list, e.g. ['-c', 'print(1)']")
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [python or sys.executable, "-u", *map(str, args)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=dict(os.environ, **(env or {})),
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # dies with the kernel, too
            )
        self.started = time.monotonic()
        _LIVE.add(self)

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait_for(self, pattern: str, count: int = 1, timeout: float = 60.0) -> list[str]:
        """Wait until ``pattern`` (a regex) matches ``count`` times; return the matches."""
        if count < 1 or timeout <= 0:
            raise ValueError("count must be >= 1 and timeout > 0")
        deadline = time.monotonic() + timeout
        while True:
            found = re.findall(pattern, self.log)
            if len(found) >= count:
                return found
            if not self.running():
                raise RuntimeError(
                    f"the program exited (code {self.proc.returncode}) after {len(found)} of "
                    f"{count} matches of {pattern!r}. Log tail:\n{self.log[-1500:]}"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{len(found)} of {count} matches of {pattern!r} after {timeout:.0f} s. "
                    f"Log tail:\n{self.log[-1500:]}"
                )
            time.sleep(0.1)

    def wait(self, timeout: float) -> int:
        """Wait for the program to exit; return its exit code (TimeoutError if it does not)."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(
                f"still running after {timeout:.0f} s. Log tail:\n{self.log[-1500:]}"
            ) from None

    def stop(self) -> None:
        """Kill the program (and its process group) and reap it."""
        if self.running():
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


@atexit.register
def _stop_all() -> None:
    for run in list(_LIVE):
        run.stop()
