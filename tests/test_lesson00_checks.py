"""Exercise checks 00: right answers pass, wrong ones get a hint without the answer."""

import psutil
from helpers import run_python

from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG, _evaluate, lesson00


def test_00_1_counts_what_tensorflow_lists_each_time_it_runs():
    import tensorflow as tf

    def counted():
        return len(tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU"))

    listing, n = tf.config.list_logical_devices, counted()
    assert _evaluate("00.1", counted).status == RIGHT
    typed_in = _evaluate("00.1", lambda: n)  # right here, wrong when the listing changes
    assert typed_in.status == WRONG and "another number of devices" in typed_in.message
    every_kind = _evaluate("00.1", lambda: len(tf.config.list_logical_devices()))
    assert every_kind.status == WRONG and "another kind" in every_kind.message
    assert "whole number" in _evaluate("00.1", lambda: float(n)).message
    assert "itself" in _evaluate("00.1", n).message
    assert _evaluate("00.1", ...).status == NOT_ATTEMPTED
    assert tf.config.list_logical_devices is listing  # the check put TensorFlow's back


def test_00_4_multiple_choice():
    assert _evaluate("00.4", "c").status == RIGHT
    assert _evaluate("00.4", "A").status == WRONG
    assert "one letter" in _evaluate("00.4", "E").message
    assert "one letter" in _evaluate("00.4", "AB").message


def test_00_2_and_00_3_run_on_simulated_devices():
    done = run_python("""
        from tflearn_helpers import setup_course
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import keras, tensorflow as tf
        from tflearn_helpers.checks import RIGHT, WRONG, _evaluate

        def matmul_on(x, device):
            with tf.device(device):
                return tf.matmul(x, x)

        def on_last(x, device):
            with tf.device(course.devices[-1]):
                return tf.matmul(x, x)

        assert _evaluate("00.2", matmul_on).status == RIGHT
        hint = _evaluate("00.2", on_last).message
        assert "the product ran on ['CPU:1']" in hint, hint
        assert _evaluate("00.2", matmul_on(tf.ones((2, 2)), course.devices[0])).status == WRONG
        with tf.device(course.devices[-1]):
            layer = keras.layers.Dense(3)
        layer.build((None, 4))
        assert layer.kernel.value.device.endswith("CPU:0")  # the default device: choice B
        assert _evaluate("00.3", "b").status == RIGHT
        assert _evaluate("00.3", "A").status == WRONG
        assert "one letter" in _evaluate("00.3", layer.kernel.value.device).message
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout


# 00.5: each candidate is what a learner might write as configure(n); the check runs it as the
# first thing of a fresh process (TensorFlow imported there as `tf`; each imports it itself here).
def configure_right(n):
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * n)
    tf.debugging.set_log_device_placement(True)


def configure_forever(n):
    import time

    time.sleep(120)


def test_00_5_right_in_fresh_processes_of_two_counts():
    assert _evaluate("00.5", configure_right).status == RIGHT


def test_00_5_an_endless_answer_is_stopped_and_reaped():
    """The endless one may be stopped while it still imports TensorFlow (a busy machine):
    either way its process is reaped. (The plausible mistakes are in tests/answers/lesson00.py.)"""
    before = {child.pid for child in _children()}
    message = lesson00.configure_fresh_process(configure_forever, (3,), 20)
    assert message is not None and "ran over 20 s" in message, message
    left = [c for c in _children() if c.pid not in before]
    assert not left, left  # the child over its time stopped and reaped


def _children():
    """This process's descendants, but for the fork servers that outlive a check by design."""
    every = psutil.Process().children(recursive=True)
    return [c for c in every if "fork_server as f; f.serve" not in " ".join(c.cmdline())]


def test_00_5_not_attempted_and_not_a_function():
    def configure(n):
        """n logical CPUs, every op's device logged."""
        # YOUR CODE HERE
        ...

    assert _evaluate("00.5", configure).status == NOT_ATTEMPTED
    wrong = _evaluate("00.5", 3)
    assert wrong.status == WRONG and "function" in wrong.message
