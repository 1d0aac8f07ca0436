"""Hide TensorFlow's start-up noise that a learner can do nothing about (used by setup).

TensorFlow's C++ code writes some lines straight to file descriptor 2 while it loads,
before its own log level (``TF_CPP_MIN_LOG_LEVEL``) applies: "All log messages before
absl::InitializeLog()", "Could not find cuda drivers" on a CPU machine, "failed call to
cuInit", the cuFFT/cuDNN/cuBLAS "Unable to register factory" lines on GPU runtimes. In a
notebook each lands in the output of the setup cell. ``filtered()`` catches descriptor 2
for the length of a block and writes back every line that is not such known noise, so
real warnings and errors stay visible.

The course runner (``make course``, tools/course.py) goes further for the notebooks it
renders: ``hide_tf_log`` removes every line in TensorFlow's C++ log format (``TF_LOG_LINE``,
e.g. ``E0000 00:00:1796130835.552419 12699 meta_optimizer.cc:967] tf_auto_shard failed``),
which ipykernel copies from the kernel's descriptor 2 into a cell's output; the kernel's raw
standard error is kept in a log file beside the rendered notebook.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import warnings

__all__ = ["TF_LOG_LINE", "filtered", "hide_tf_log", "ignore_misleading_warnings", "to_terminal"]

NOISE = re.compile(
    "|".join(
        (
            r"All log messages before absl::InitializeLog\(\) is called",
            r"Could not find cuda drivers on your machine",
            r"failed call to cuInit",
            r"Unable to register cu(FFT|DNN|BLAS) factory",
            r"Attempting to register factory for plugin cu(FFT|DNN|BLAS)",
            r"computation placer already registered",
            r"oneDNN custom operations are (on|off)",  # the setup table says which
            r"TF-TRT Warning: Could not find TensorRT",
            r"This TensorFlow binary is optimized to use available CPU instructions",
            r"To enable the following instructions: .* rebuild TensorFlow",
        )
    )
)


# absl/glog's prefix: severity and date (I0000 on 2.21, I1201 on 2.19), time, thread, file:line]
TF_LOG_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ [\w./-]+:\d+\] |" + NOISE.pattern)

_real_stderr: list[int] = []  # the caught descriptor 2 of each active block, innermost last


@contextlib.contextmanager
def filtered(noise: re.Pattern = NOISE):
    """Run a block with descriptor 2 caught; afterwards print what was not ``noise``."""
    sys.stderr.flush()
    saved = os.dup(2)
    _real_stderr.append(saved)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            _real_stderr.remove(saved)
            os.close(saved)
            caught.seek(0)
            kept = [
                line
                for line in caught.read().decode(errors="replace").splitlines(keepends=True)
                if not noise.search(line)
            ]
            sys.stderr.write("".join(kept))
            sys.stderr.flush()


# Keras 3 warns about an argument nobody passed: fit()'s shuffle defaults to True, and a
# tf.data.Dataset (which the lessons shuffle themselves) makes it say "shuffle=True was passed".
MISLEADING_WARNINGS = (r"`shuffle=True` was passed, but will be ignored",)


def ignore_misleading_warnings() -> None:
    """Silence the Python warnings in :data:`MISLEADING_WARNINGS` (setup calls it)."""
    for message in MISLEADING_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=UserWarning)


def to_terminal(text: str) -> None:
    """Write to the real standard error now, even from inside a ``filtered`` block (a
    watchdog that gives up while TensorFlow loads must still be heard)."""
    sys.stderr.flush()
    os.write(_real_stderr[0] if _real_stderr else 2, text.encode())


def hide_tf_log(text: str) -> tuple[str, int]:
    """``text`` without TensorFlow's C++ log lines and start-up noise; how many were hidden."""
    lines = text.splitlines(keepends=True)
    kept = [line for line in lines if not TF_LOG_LINE.search(line)]
    return "".join(kept), len(lines) - len(kept)
