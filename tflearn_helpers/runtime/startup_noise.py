"""Hide TensorFlow's start-up noise that a learner can do nothing about (used by setup).

TensorFlow's C++ code writes some lines straight to file descriptor 2 while it loads,
before its own log level (``TF_CPP_MIN_LOG_LEVEL``) applies: "All log messages before
absl::InitializeLog()", "Could not find cuda drivers" on a CPU machine, "failed call to
cuInit", the cuFFT/cuDNN/cuBLAS "Unable to register factory" lines on GPU runtimes. In a
notebook each lands in the output of the setup cell. ``filtered()`` catches descriptor 2
for the length of a block and writes back every line that is not such known noise, so
real warnings and errors stay visible.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile

__all__ = ["NOISE", "filtered", "to_terminal"]

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


def to_terminal(text: str) -> None:
    """Write to the real standard error now, even from inside a ``filtered`` block (a
    watchdog that gives up while TensorFlow loads must still be heard)."""
    sys.stderr.flush()
    os.write(_real_stderr[0] if _real_stderr else 2, text.encode())
