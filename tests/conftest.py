"""What every test session shares.

- Its temp folder is a course session folder (``runtime.scratch``), as a notebook's is: what
  the tests and the processes they start write there (logs of stopped children, a killed
  program's files) is removed when pytest exits, and by the next session if pytest is killed.
- The mutation runners (tests/mutation_runner.py, one process per lesson) that the collected
  tests read run MUTATION_RUNNERS at a time (2; make test runs them as a job of their own,
  one at a time), longest first, all started when the first of those tests asks for its
  lesson. Not earlier: beside the other tests their processes were counted as those tests'
  leftovers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path

from tflearn_helpers.runtime import scratch

RUNNER = Path(__file__).with_name("mutation_runner.py")
LONGEST_FIRST = ["07", "04", "03", "01", "02", "05", "09", "00", "08", "06"]  # make test, 4cb7671
RUNNERS_AT_ONCE = int(os.environ.get("MUTATION_RUNNERS", "2"))
RUNNER_TIMEOUT = 900  # s


def pytest_configure(config):
    scratch.claim()


def pytest_collection_finish(session):
    items = [item for item in session.items if "lesson_run" in item.fixturenames]
    lessons = sorted({_lesson_of(item) for item in items}, key=_expected_order)
    session.config.mutation_runs = _Runners(lessons)


def pytest_unconfigure(config):
    runners = getattr(config, "mutation_runs", None)
    if runners is not None:
        runners.stop()


def _expected_order(lesson: str) -> int:
    return LONGEST_FIRST.index(lesson) if lesson in LONGEST_FIRST else len(LONGEST_FIRST)


def _lesson_of(item) -> str:
    params = item.callspec.params
    return params["lesson"] if "lesson" in params else params["exercise_id"].split(".")[0]


class _Runners(dict):
    """lesson -> Future of (CompletedProcess, path of its record), run RUNNERS_AT_ONCE at once."""

    def __init__(self, lessons: list[str]):
        super().__init__((lesson, Future()) for lesson in lessons)
        self._queue, self._running, self._stopped = list(lessons), [], False
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        """Start the runners (once)."""
        with self._lock:
            if self._started:
                return
            self._started = True
        for _ in range(min(RUNNERS_AT_ONCE, len(self._queue))):
            threading.Thread(target=self._work, daemon=True).start()

    def _work(self) -> None:
        env = {**os.environ, "TFLEARN_SCALE": "smoke", "TF_CPP_MIN_LOG_LEVEL": "2"}
        while True:
            with self._lock:
                if self._stopped or not self._queue:
                    return
                lesson = self._queue.pop(0)
                out = Path(tempfile.mkdtemp(prefix=f"mutations-{lesson}-")) / "run.json"
                command = [sys.executable, "-X", "faulthandler", str(RUNNER), lesson, str(out)]
                proc = subprocess.Popen(
                    command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
                )
                self._running.append(proc)
            try:
                _, stderr = proc.communicate(timeout=RUNNER_TIMEOUT)
            except subprocess.TimeoutExpired:
                _, stderr = _stop(proc)
                stderr += f"\n[the runner of lesson {lesson} took over {RUNNER_TIMEOUT} s: stopped]"
            done = subprocess.CompletedProcess(command, proc.returncode, "", stderr)
            self[lesson].set_result((done, out))

    def stop(self) -> None:
        """Stop what still runs (an interrupted session): each runner's exit hooks run."""
        with self._lock:
            self._stopped = True
            running = [proc for proc in self._running if proc.poll() is None]
        for proc in running:
            _stop(proc)


def _stop(proc: subprocess.Popen) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)  # KeyboardInterrupt: its children and clusters are stopped
    try:
        return proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()
