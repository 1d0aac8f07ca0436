"""Checks for exercises 00 (devices and setup)."""

from __future__ import annotations

import random
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..programs import events, processes
from ..runtime import validate
from ..topics.placement import PLUMBING_OPS, parse_placement_log, short_device, variable_devices
from . import exercise, learner_source

__all__ = ["configure_fresh_process"]


def _compute_devices() -> list[str]:
    import tensorflow as tf

    devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
    return [d.name for d in devices]


@contextmanager
def _listing(count: int):
    """TensorFlow's device listing as if the accelerator kind had ``count`` logical devices,
    next to devices of another kind (the machine's own, as a GPU machine lists its CPU, or a
    stand-in TPU on a machine with one kind only): a world the learner cannot know in advance.
    Yields how many devices of every kind it lists."""
    import tensorflow as tf

    real = tf.config.list_logical_devices
    kind = "GPU" if real("GPU") else "CPU"
    fake = [
        tf.config.LogicalDevice(f"/job:localhost/replica:0/task:0/device:{kind}:{i}", kind)
        for i in range(count)
    ]
    others = [d for d in real() if d.device_type != kind] or [
        tf.config.LogicalDevice("/job:localhost/replica:0/task:0/device:TPU:0", "TPU")
    ]
    every = fake + others if kind == "CPU" else others + fake

    def listed(device_type=None):
        return [d for d in every if device_type in (None, d.device_type)]

    places = (tf.config, tf.config.experimental)
    saved = [getattr(place, "list_logical_devices", None) for place in places]
    for place in places:
        place.list_logical_devices = listed
    try:
        yield len(every)
    finally:
        for place, original in zip(places, saved, strict=True):
            place.list_logical_devices = original


@exercise("00.1")
def count_devices(fn):
    """fn() -> the number of logical devices of the accelerator kind, as TensorFlow lists them.
    Run here, then again while TensorFlow lists a number of devices of the check's choosing."""
    if not callable(fn):
        return "pass your function itself (its name, without calling it)"
    count = fn()
    if not validate.is_whole_number(count):
        return "return a whole number (an int), computed from what TensorFlow lists"
    if count != len(_compute_devices()):
        return "count the logical devices of the accelerator kind the course set up"
    other = random.choice([n for n in range(2, 10) if n != count])
    with _listing(other) as every_kind:
        moved = fn()
    if moved == every_kind:
        return (
            f"when TensorFlow lists {other} devices of the course's kind and others of another "
            f"kind (as a GPU machine lists its CPU too), your function counts {moved}: which "
            "devices does the exercise ask you to count?"
        )
    if moved != other:
        return (
            "when TensorFlow lists another number of devices, your function gives "
            f"{'the same count' if moved == count else 'a wrong count'}: count what TensorFlow "
            "lists, each time the function runs (not a number typed in, nor the course's list)"
        )
    return None


def _matmul_problem(fn, x, device: str):
    """A hint when fn(x, device) is not x @ x computed on ``device`` alone."""
    import tensorflow as tf

    from ..topics.placement import op_devices

    result = fn(x, device)
    if not isinstance(result, tf.Tensor | np.ndarray) or tuple(result.shape) != tuple(x.shape):
        return "return the product of x with itself, a tensor of x's shape"
    if tf.as_dtype(result.dtype) != x.dtype:
        return (
            f"your result is {tf.as_dtype(result.dtype).name}, x is {x.dtype.name}: keep its dtype"
        )
    if not np.allclose(np.asarray(result), np.asarray(x) @ np.asarray(x), rtol=1e-4, atol=1e-4):
        return "your function does not return the matrix product of x with x"
    ran = op_devices(fn, x, device)
    where = {d for op, d in ran if op.endswith("MatMul")}
    wanted = short_device(device)
    if not where:
        return "no matrix-product op ran: which TensorFlow op multiplies matrices?"
    if where != {wanted}:
        return f"asked for {wanted}, the product ran on {sorted(where)}: where is it placed?"
    compute = {d for op, d in ran if op not in PLUMBING_OPS}
    if compute != {wanted}:
        elsewhere = sorted(compute - {wanted})
        return f"the product ran on {wanted}, but other compute ops ran on {elsewhere}"
    return None


@exercise("00.2")
def matmul_on_device(fn):
    """fn(x, device) -> x @ x computed on ``device``: run with fresh square matrices on every
    device in a random order; judged by the value and the ops TensorFlow really ran."""
    import tensorflow as tf

    if not callable(fn):
        return "pass the function itself, not its result"
    rng = np.random.default_rng()
    for device in rng.permutation(_compute_devices()):
        n = int(rng.integers(3, 9))
        x = tf.constant(rng.standard_normal((n, n)), tf.float32)
        hint = _matmul_problem(fn, x, str(device))
        if hint:
            return hint
    return None


# 00.3: which of these is where the variables of a layer made under tf.device(last) live,
# when Keras builds it outside the scope? The check builds one and reads it.
_CHOICES = "ABCD"


@exercise("00.3")
def where_seed_variables_live(answer):
    import keras
    import tensorflow as tf

    if not isinstance(answer, str) or answer.strip().upper() not in tuple(_CHOICES):
        return "answer with one letter: 'A', 'B', 'C' or 'D'"
    devices = _compute_devices()
    with tf.device(devices[-1]):
        layer = keras.layers.Dense(3)
    layer.build((None, 4))  # Keras 3 builds (creates variables) outside the scope
    actual = {device for _, _, device in variable_devices(layer)}
    right = "A" if actual == {short_device(devices[-1])} else "B"
    if answer.strip().upper() != right:
        return "when does Keras create a layer's variables, and which device scope is active then?"
    return None


@exercise("00.4")
def why_no_speedup(answer):
    if not isinstance(answer, str) or answer.strip().upper() not in tuple("ABCD"):
        return "answer with one letter: 'A', 'B', 'C' or 'D'"
    if answer.strip().upper() != "C":
        return "look at what the logical devices are made of (the physical device table)"
    return None


# 00.5: the learner's configure(n) runs first in a fresh program that has only TensorFlow
# (the course package is hidden from it);
# the program then reports its logical CPUs and runs one product on each (logged if enabled).
FRESH_HARNESS = """\
import sys

import tensorflow as tf

from tflearn_helpers.programs import events

for module in [m for m in sys.modules if m.split(".")[0] == "tflearn_helpers"]:
    sys.modules[module] = None  # the learner's code runs without the course package

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
        if error.startswith(("NameError", "ImportError", "ModuleNotFoundError")):
            return (
                f"{error}: the fresh process has only TensorFlow (as `tf`) and your function, "
                "not the course package"
            )
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
def configure_fresh_process(configure, counts=None, timeout: float = 120.0):
    """configure(n), the first lines of a fresh program: n logical CPUs, placement logged.
    Run in one fresh process per count (two of 2..5 picked at random unless given), side by
    side; judged by what each reports."""
    source, hint = learner_source(configure, "configure")
    if hint:
        return hint
    counts = counts or random.sample(range(2, 6), 2)
    outcomes = _run_fresh(source, configure.__name__, counts, timeout)
    for n, outcome in zip(counts, outcomes, strict=True):
        hint = _judge_fresh(n, outcome, timeout)
        if hint:
            return hint
    return None
