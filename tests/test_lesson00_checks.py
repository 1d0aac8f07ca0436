"""Exercise checks 00: right answers pass, wrong ones get a hint without the answer."""

from helpers import run_python

from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG, _evaluate


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
