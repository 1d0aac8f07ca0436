"""Checks for exercises 00 (devices and setup)."""

from __future__ import annotations

from .. import validate
from ..checks import exercise
from ..placement import compute_op_counts, short_device, variable_devices

__all__ = ["count_devices", "matmul_on_last_device", "where_seed_variables_live", "why_no_speedup"]


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
