"""Checks for lesson 07's exercises (a Slurm job: the batch script, and a worker that resumes).

Each check submits the learner's answer to the local Slurm cluster the notebook started
(``cluster.slurm.LocalSlurm``), warns the job with ``scancel --signal=USR1``, requeues it with
``scontrol requeue`` and reads what its tasks reported (``programs.events`` lines). Hints say
what the job did, never the lines that are right.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..programs import events
from . import exercise, learner_source

__all__ = ["MUTATIONS", "batch_script", "resuming_task", "sbatch_options"]

_TIMEOUT = 120  # s: a ceiling for any wait of a check on a busy machine
_ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")
_QUIET = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "-1"}  # the tasks: on the CPU

# 07.1's stand-in for worker.py: no TensorFlow, so the check takes seconds. Each task reports
# where it runs; on SIGUSR1 it reports the warning and exits 42, as the lesson's worker does.
# Its event lines go to a file of its own, not to stdout: the learner's script decides where
# the job's output goes (and whether a requeue keeps the first run's).
PROBE = """\
import os, signal, sys, time
from tflearn_helpers.programs import events
def record(kind, **fields):
    with open("events.log", "a") as f:
        f.write(events.line(kind, **fields) + "\\n")
def warned(*_):
    record("warned", task=int(os.environ["SLURM_PROCID"]))
    sys.exit(42)
signal.signal(signal.SIGUSR1, warned)
record("task", task=int(os.environ["SLURM_PROCID"]), node=os.environ.get("SLURMD_NODENAME"),
       restart=int(os.environ.get("SLURM_RESTART_COUNT", 0)))
time.sleep(90)
"""

# 07.2: the learner's run_task in a one-task job; SIGUSR1 sets the flag warned() reads, and
# train_one_step is one step of a stand-in model: the step and the weights move, it is reported
# on stdout, in job.out (TASK_SCRIPT: --open-mode=append keeps both runs).
TASK_HARNESS = """\
import signal, sys, threading, time
from pathlib import Path
from tflearn_helpers.programs import events
flag = threading.Event()
signal.signal(signal.SIGUSR1, lambda *_: flag.set())
out, steps, save_every = Path(sys.argv[1]).resolve(), int(sys.argv[2]), int(sys.argv[3])


def train_one_step(step, weights):
    step.assign_add(1)
    weights.assign_add(float(step) / steps)
    events.emit("step", step=int(step), total=float(weights))
    time.sleep(0.2)


{learner}

{name}(out / "checkpoints", steps, save_every, flag.is_set, train_one_step)
events.emit("end", warned=flag.is_set())
sys.exit(42 if flag.is_set() else 0)
"""
TASK_SCRIPT = """\
#!/bin/bash
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --time=00:05:00
#SBATCH --output=job.out
#SBATCH --open-mode=append
#SBATCH --requeue
srun python harness.py "$@"
"""


def sbatch_options(script: str) -> dict[str, str]:
    """The ``#SBATCH`` options of a batch script, by long name (``-N 2`` is ``nodes``).
    sbatch reads them up to the first line that is a command, as this does."""
    short = {"N": "nodes", "n": "ntasks", "t": "time", "o": "output", "J": "job-name"}
    options: dict[str, str] = {}
    for line in script.splitlines()[1:]:
        text = line.strip()
        if text and not text.startswith("#"):
            break
        if not text.startswith("#SBATCH"):
            continue
        words = shlex.split(text[len("#SBATCH") :], comments=True)
        for i, word in enumerate(words):
            name, value = _option(word, words[i + 1] if i + 1 < len(words) else "", short)
            if name:
                options[name] = value
    return options


def _option(word: str, following: str, short: dict) -> tuple[str | None, str]:
    if word.startswith("--"):
        name, _, value = word[2:].partition("=")
        return name, value
    if word.startswith("-") and word[1:2] in short:
        return short[word[1:2]], word[2:] or following
    return None, ""


class _Job:
    """A folder holding a job's files, submitted to ``cluster`` from there; cancelled at exit."""

    def __init__(self, cluster, files: dict[str, str], args=()):
        self.cluster, self.id = cluster, None
        self._tmp = tempfile.TemporaryDirectory(prefix="tflearn-check-07-")
        self.folder = Path(self._tmp.name)
        for name, text in files.items():
            (self.folder / name).write_text(text)
        self.args = [str(a) for a in args]

    def submit(self) -> str | None:
        """None when submitted, else sbatch's complaint."""
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        done = subprocess.run(
            ["sbatch", "--parsable", "job.sh", *self.args], cwd=self.folder, text=True,
            capture_output=True, timeout=30,
            env={**os.environ, **_QUIET, "PATH": path, **self.cluster.env},
        )  # fmt: skip
        if done.returncode != 0:
            return (done.stderr or done.stdout).strip().splitlines()[-1]
        self.id = done.stdout.strip().split(";")[0]
        return None

    def reported(self, name: str, kind: str) -> list[dict]:
        """The events of ``kind`` in the job's file ``name``, in order."""
        path = self.folder / name
        return events.parse(path.read_text() if path.exists() else "", kind)

    def wait_for(self, condition, timeout: float = _TIMEOUT) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline or self.state() in ("CANCELLED", "TIMEOUT"):
                return False
            time.sleep(0.2)
        return True

    def state(self) -> str:
        return self.cluster.job_state(self.id)

    def warn(self) -> str | None:
        """Warn every task as --signal would; None once the job has ended, else a hint."""
        self.cluster.run(["scancel", "--signal=USR1", self.id])
        if not self.wait_for(lambda: self.state() in _ENDED, 30):
            return "your job was still running 30 s after the warning: did its tasks hear it?"
        return None

    def requeue(self) -> str | None:
        """Put the ended job back in the queue; None, or why the scheduler refused."""
        done = self.cluster.run(["scontrol", "requeue", self.id], check=False)
        if done.returncode != 0:
            return (
                "after the warning, the scheduler refused to put your job back in the queue "
                f"({done.stderr.strip()}): on this cluster, as on some, a job must ask for that"
            )
        return None

    def close(self) -> None:
        if self.id:
            self.cluster.run(["scancel", self.id], check=False)
            self.wait_for(lambda: self.state() in _ENDED, 30)
        self._tmp.cleanup()


def _script_problem(script) -> str | None:
    if not isinstance(script, str):
        return f"pass your batch script as a string, got {type(script).__name__}"
    if not script.startswith("#!"):
        return "a batch script starts with a line naming its shell (#!/bin/bash)"
    if not re.search(r"^\s*srun\b.*\bworker\.py", script, re.M):
        return "the script should start worker.py in every task of the job (with Slurm's launcher)"
    options = sbatch_options(script)
    signal_option = options.get("signal", "")
    if not signal_option:
        return "nothing in your script warns the tasks before the time limit ends the job"
    if signal_option.startswith("B:"):
        return (
            "your warning goes to the batch shell only: the tasks running worker.py never hear it"
        )
    if not re.fullmatch(r"(R:)?(SIG)?USR1@\d+", signal_option):
        return f"the worker saves on SIGUSR1; your warning is {signal_option!r}"
    if "output" not in options:
        return "name the job's output file, so that you find it (and its requeued run) again"
    return None


@exercise("07.1")
def batch_script(script, cluster):
    """The learner's batch script runs one task on each of two nodes, with a time limit and
    a warning signal, and can be requeued (checked on ``cluster``, a started LocalSlurm)."""
    problem = _script_problem(script)
    if problem:
        return problem
    job = _Job(cluster, {"job.sh": script, "worker.py": PROBE})
    try:
        return _run_script(job)
    finally:
        job.close()


def _run_script(job: _Job) -> str | None:
    refused = job.submit()
    if refused:
        return f"sbatch refused your script: {refused}"
    if not job.wait_for(lambda: job.state() != "PENDING", 60):
        return f"your job did not start: {_job_end(job)}"
    shown = job.cluster.run(["scontrol", "--oneliner", "show", "job", job.id]).stdout
    asked = dict(f.split("=", 1) for f in shown.split() if "=" in f)
    if (asked.get("NumNodes"), asked.get("NumTasks")) != ("2", "2"):
        return (
            f"the job should run one task on each of two nodes; yours got "
            f"{asked.get('NumNodes')} node(s) for {asked.get('NumTasks')} task(s)"
        )
    if asked.get("TimeLimit") == "UNLIMITED":
        return "your job has no time limit: the scheduler cannot warn it before an end it lacks"
    started = job.wait_for(lambda: len(job.reported("events.log", "task")) >= 2, 60)
    tasks = job.reported("events.log", "task")
    nodes = sorted(t["node"] for t in tasks)
    if not started or len(tasks) != 2 or len(set(nodes)) != 2:
        return f"the job should run one task on each of two nodes; its tasks ran on {nodes}"
    problem = job.warn() or job.requeue()
    if problem:
        return problem
    if not job.wait_for(
        lambda: sum(t["restart"] == 1 for t in job.reported("events.log", "task")) == 2
    ):
        return "the requeued job did not start its two tasks again"
    return None


@exercise("07.2")
def resuming_task(run_task, cluster):
    """run_task(folder, steps, save_every, warned, train_one_step) in a one-task Slurm job:
    warned and requeued, it must go on right after the step it saved, and end with the
    result of an uninterrupted run."""
    source, hint = learner_source(run_task, "run_task")
    if hint:
        return hint
    steps, save_every = 24, 10
    program = TASK_HARNESS.format(learner=source, name=run_task.__name__)
    job = _Job(cluster, {"job.sh": TASK_SCRIPT, "harness.py": program}, [".", steps, save_every])
    try:
        return _run_resuming(job, steps, save_every)
    finally:
        job.close()


def _run_resuming(job: _Job, steps: int, save_every: int) -> str | None:
    refused = job.submit()
    if refused:
        return f"sbatch refused the job: {refused}"
    warn_at = save_every + 1  # right after a checkpoint: the next is far off
    steps_done = lambda: job.reported("job.out", "step")  # noqa: E731
    if not job.wait_for(lambda: len(steps_done()) >= warn_at):
        return f"your task did not log step {warn_at}: {_job_end(job)}"
    problem = job.warn()
    first = [s["step"] for s in steps_done()]
    if problem or first[-1] >= steps:
        return "your task went on to the end after the warning: stop once it has saved"
    problem = job.requeue()
    if problem:
        return problem
    if not job.wait_for(lambda: len(steps_done()) > len(first)):
        return f"after the requeue your task did not train: {_job_end(job)}"
    problem = _resume_problem(first, steps_done()[len(first)]["step"])
    if problem:
        return problem
    if not job.wait_for(lambda: job.state() in _ENDED) or len(job.reported("job.out", "end")) < 2:
        return f"after the requeue your task did not finish: {_job_end(job)}"
    second = [s["step"] for s in steps_done()][len(first) :]
    if second != list(range(first[-1] + 1, steps + 1)):
        return f"after the requeue your task should train steps {first[-1] + 1}..{steps}"
    return _result_problem(job, steps)


def _resume_problem(first: list[int], resumed: int) -> str | None:
    if resumed == 1:
        return "after the requeue your task started again from step 1, its progress lost"
    lost = first[-1] + 1 - resumed
    if lost > 0:
        return (
            f"warned after step {first[-1]}, your task resumed at step {resumed} after the "
            f"requeue: {lost} step(s) trained twice, lost work the warning was there to save"
        )
    if lost < 0:
        return f"steps were skipped after the requeue: step {first[-1]}, then step {resumed}"
    return None


def _result_problem(job: _Job, steps: int) -> str | None:
    final = job.reported("job.out", "step")[-1]["total"]
    if not math.isclose(final, sum(range(1, steps + 1)) / steps, rel_tol=1e-9):
        return "your task's final weights are not what an uninterrupted run computes"
    return None


def _job_end(job: _Job) -> str:
    out = job.folder / "job.out"
    lines = out.read_text().strip().splitlines() if out.exists() else []
    said = [line for line in lines if not events.parse(line)]  # what the events leave: errors
    return (said[-1] if said else "no output")[:300]


_SCRIPT = "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1"
MUTATIONS: dict[str, list[tuple[str, str, str]]] = {
    "07.1": [
        ("no --requeue", "#SBATCH --requeue\n", ""),
        ("no --signal", "#SBATCH --signal=USR1@60\n", ""),
        ("the signal to the batch shell only", "--signal=USR1@60", "--signal=B:USR1@60"),
        ("SIGTERM, which the worker does not save on", "--signal=USR1@60", "--signal=TERM@60"),
        ("two tasks on one node", _SCRIPT, "#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=2"),
        ("one node", "#SBATCH --nodes=2\n", "#SBATCH --nodes=1\n"),
        ("no time limit", "#SBATCH --time=00:10:00\n", ""),
        ("no srun", "srun python worker.py", "python worker.py"),
    ],
    "07.2": [
        ("checkpoint written only at the end", "if step % save_every == 0 or stop:",
         "if step == steps:"),
        ("no restore", "    checkpoint.restore(manager.latest_checkpoint)\n", ""),
        ("no save on the warning", "if step % save_every == 0 or stop:",
         "if step % save_every == 0:"),
        ("the warning ignored", "        if stop:\n            return\n", ""),
    ],
}  # fmt: skip
