"""Checks for exercises 00 (devices and setup)."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from .. import validate
from ..checks import exercise, learner_source
from ..cluster import events, processes
from ..placement import compute_op_counts, parse_placement_log, short_device, variable_devices

__all__ = ["configure_fresh_process"]


def _compute_devices() -> list[str]:
    import tensorflow as tf

    devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
    return [d.name for d in devices]


@exercise("00.1")
def count_devices(answer):
    if not validate.is_whole_number(answer):
        return "give a whole number (an int), computed from what TensorFlow lists"
    if answer != len(_compute_devices()):
        return "count the logical devices of the accelerator kind the course set up"
    return None


@exercise("00.2")
def matmul_on_last_device(fn):
    import tensorflow as tf

    if not callable(fn):
        return "pass the function itself, not its result"
    last = short_device(_compute_devices()[-1])
    counts = compute_op_counts(fn, tf.ones((4, 4)))
    if last not in counts:
        return "no compute op ran on the last device: is the matmul inside the device scope?"
    if set(counts) != {last}:
        return f"the matmul ran on {last}, but other compute ops ran elsewhere too"
    return None


@exercise("00.3")
def where_seed_variables_live(answer):
    import keras
    import tensorflow as tf

    if not isinstance(answer, str):
        return "answer with a device name as a string, like the ones in the tables above"
    with tf.device(_compute_devices()[-1]):
        layer = keras.layers.Dense(3)
    layer.build((None, 4))  # Keras 3 builds (creates variables) outside the scope
    actual = {device for _, _, device in variable_devices(layer)}
    if answer not in actual and short_device(answer) not in actual:
        return "run the seed's pattern and read `.device` of the layer's weights"
    return None


@exercise("00.4")
def why_no_speedup(answer):
    if not isinstance(answer, str) or answer.strip().upper() not in "ABCD":
        return "answer with one letter: 'A', 'B', 'C' or 'D'"
    if answer.strip().upper() != "C":
        return "look at what the logical devices are made of (the physical device table)"
    return None


# 00.5: the learner's configure(n) runs first in a fresh program that has only TensorFlow;
# the program then reports its logical CPUs and runs one product on each (logged if enabled).
FRESH_HARNESS = """\
import sys

import tensorflow as tf

from tflearn_helpers.cluster import events

{learner}

{name}(int(sys.argv[1]))
cpus = [device.name for device in tf.config.list_logical_devices("CPU")]
events.emit("devices", cpus=cpus)
x = tf.ones((8, 8))
for name in cpus:
    with tf.device(name):
        tf.matmul(x, x)
"""
_STARTED_TOO_EARLY = "cannot be modified after being initialized"


def _run_fresh(source: str, name: str, counts, timeout: float) -> list[dict]:
    """Run the harness once per count, side by side; what each process reported."""
    with tempfile.TemporaryDirectory(prefix="tflearn-check-00.5-") as folder:
        program = Path(folder) / "fresh_process.py"
        program.write_text(FRESH_HARNESS.format(learner=source, name=name))
        env = {"CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"}  # CPUs only, quiet C++
        children = [
            processes.start(
                [sys.executable, program, n],
                env=env,
                merge_stderr=False,
                log_path=Path(folder) / f"{n}.log",
            )
            for n in counts
        ]
        deadline, outcomes = time.monotonic() + timeout, []
        for child in children:
            with child:  # stopped on leaving, whatever happens
                try:
                    code = child.wait(max(1.0, deadline - time.monotonic()))
                except TimeoutError:
                    code = None
                output = child.output()
                outcomes.append(
                    {
                        "code": code,
                        "error": _last_error(child.errors()),
                        "cpus": next((e["cpus"] for e in events.parse(output, "devices")), None),
                        "log": parse_placement_log(output),
                    }
                )
    return outcomes


def _last_error(stderr: str) -> str:
    """The last line of a traceback (``SomeError: message``), or the last line at all."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return next(
        (line for line in reversed(lines) if "Error" in line[:60]), lines[-1] if lines else ""
    )


def _judge_fresh(n: int, outcome: dict, timeout: float):
    if outcome["code"] is None:
        return f"the fresh process ran over {timeout:.0f} s (a busy machine?): run the check again"
    if outcome["cpus"] is None:
        error = outcome["error"][:300] or "(no error message)"
        if _STARTED_TOO_EARLY in error:
            return (
                f"your function raised {error}. Something in it started TensorFlow's runtime "
                "before the devices were configured: which calls start it?"
            )
        if error.startswith("NameError"):
            return f"{error}: the fresh process has only TensorFlow (as `tf`) and your function"
        return f"your function failed in the fresh process: {error}"
    if len(outcome["cpus"]) != n:
        return (
            f"asked for {n} logical CPUs, the process had {len(outcome['cpus'])}: "
            "does your function use its argument?"
        )
    if not outcome["log"]:
        return (
            "the process ran a matrix product on each logical CPU, but TensorFlow logged no "
            "placements: is its placement log switched on, and early enough?"
        )
    seen = {device for _, op, device in outcome["log"] if op in ("MatMul", "_MklMatMul")}
    if seen != {f"CPU:{i}" for i in range(n)}:
        return f"the placement log shows the products on {sorted(seen)}, not one per logical CPU"
    return None


@exercise("00.5")
def configure_fresh_process(configure, counts=(2, 3), timeout: float = 120.0):
    """configure(n), the first lines of a fresh program: n logical CPUs, placement logged.
    Run in one fresh process per count, side by side; judged by what each reports."""
    source, hint = learner_source(configure, "configure")
    if hint:
        return hint
    outcomes = _run_fresh(source, configure.__name__, counts, timeout)
    for n, outcome in zip(counts, outcomes, strict=True):
        hint = _judge_fresh(n, outcome, timeout)
        if hint:
            return hint
    return None
