"""Exercise checks 00: right answers pass, wrong ones get a hint without the answer."""

from concurrent.futures import ThreadPoolExecutor

import psutil
from helpers import run_python

from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG, _evaluate
from tflearn_helpers.exercise_checks import lesson00


def test_00_1_counts_devices_as_a_whole_number():
    import tensorflow as tf

    n = len(tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU"))
    assert _evaluate("00.1", n).status == RIGHT
    assert _evaluate("00.1", n + 1).status == WRONG
    for not_a_count in (True, float(n), str(n)):
        wrong = _evaluate("00.1", not_a_count)
        assert wrong.status == WRONG and "whole number" in wrong.message
    assert _evaluate("00.1", ...).status == NOT_ATTEMPTED


def test_00_4_multiple_choice():
    assert _evaluate("00.4", "c").status == RIGHT
    assert _evaluate("00.4", "A").status == WRONG
    assert "one letter" in _evaluate("00.4", "E").message


def test_00_2_and_00_3_run_on_simulated_devices():
    done = run_python("""
        from tflearn_helpers import setup_course
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import keras, tensorflow as tf
        from tflearn_helpers.checks import RIGHT, WRONG, _evaluate

        def on_last(x):
            with tf.device(course.devices[-1]):
                return tf.matmul(x, x)

        def on_first(x):
            with tf.device(course.devices[0]):
                return tf.matmul(x, x)

        assert _evaluate("00.2", on_last).status == RIGHT
        assert _evaluate("00.2", on_first).status == WRONG
        assert _evaluate("00.2", on_last(tf.ones((2, 2)))).status == WRONG  # not a function
        with tf.device(course.devices[-1]):
            layer = keras.layers.Dense(3)
        layer.build((None, 4))
        assert _evaluate("00.3", layer.kernel.value.device).status == RIGHT
        assert _evaluate("00.3", "/GPU:63").status == WRONG
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


def configure_after_looking(n):  # lists the logical devices first: the runtime starts there
    import tensorflow as tf

    print(tf.config.list_logical_devices())
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * n)
    tf.debugging.set_log_device_placement(True)


def configure_the_course_count(n):  # the lesson's 4, not the count asked for
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 4)
    tf.debugging.set_log_device_placement(True)


def configure_without_the_log(n):
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * n)


def configure_the_log_too_late(n):  # the runtime has started when the log is switched on
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * n)
    print("devices:", len(tf.config.list_logical_devices("CPU")))
    tf.debugging.set_log_device_placement(True)


def configure_with_the_course(n):  # the fresh process has no course package, no setup_course
    setup_course(devices=n)  # noqa: F821


def configure_forever(n):
    import time

    time.sleep(120)


def test_00_5_right_in_fresh_processes_of_two_counts():
    assert _evaluate("00.5", configure_right).status == RIGHT


WRONG_00_5 = {  # a plausible wrong answer -> what its hint must say
    configure_after_looking: "started TensorFlow's runtime before the devices",
    configure_the_course_count: "asked for 3 logical CPUs, the process had 4",
    configure_without_the_log: "logged no placements",
    configure_the_log_too_late: "logged no placements",
    configure_with_the_course: "has only TensorFlow",
    configure_forever: "ran over 20 s",
}


def test_00_5_plausible_wrong_answers_get_a_hint_not_the_answer():
    """All at once (each is a fresh TensorFlow process): a thread per answer starts its process
    and waits for it, so each child ends before the thread that started it. The endless one may
    be stopped while it still imports TensorFlow (a busy machine): either way it is reaped."""
    before = {child.pid for child in _children()}
    with ThreadPoolExecutor(len(WRONG_00_5)) as pool:
        futures = {
            answer: pool.submit(
                lesson00.configure_fresh_process, answer, (3,), 20 if "over" in hint else 120
            )
            for answer, hint in WRONG_00_5.items()
        }
    for answer, hint in WRONG_00_5.items():
        message = futures[answer].result()
        assert message is not None and hint in message, (answer.__name__, message)
        for api in ("set_logical_device_configuration", "set_log_device_placement", "physical"):
            assert api not in message  # the hint never names the call to write
    left = [c for c in _children() if c.pid not in before]
    assert not left, left  # every child, the one over its time too, stopped and reaped


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
