from helpers import run_python

from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG, _evaluate


def test_ring_megabytes_hints_without_the_answer():
    right = 2 * 7 / 8 * 25_557_032 * 4 / 1e6
    assert _evaluate("03.4", right).status == RIGHT
    assert "bytes" in _evaluate("03.4", right * 1e6).message
    assert "one copy" in _evaluate("03.4", 25_557_032 * 4 / 1e6).message
    wrong = _evaluate("03.4", 1.0)
    assert wrong.status == WRONG and f"{right:.0f}" not in wrong.message
    assert _evaluate("03.4", ...).status == NOT_ATTEMPTED


def test_wrong_distributed_answers_get_hints():
    done = run_python("""
        from tflearn_helpers import setup_course
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import tensorflow as tf
        from tflearn_helpers import data_parallel as dp
        from tflearn_helpers.checks import _evaluate
        strategy = course.mirrored_strategy()

        def plain(s, x, y, b):
            return tf.data.Dataset.from_tensor_slices((x, y)).batch(b)

        def per_replica_sized(s, x, y, b):
            return s.experimental_distribute_dataset(
                tf.data.Dataset.from_tensor_slices((x, y)).batch(b // 2))

        assert "plain tf.data.Dataset" in _evaluate("03.1", plain, strategy).message
        assert "each replica got" in _evaluate("03.1", per_replica_sized, strategy).message
        assert "returns None" in _evaluate("03.1", lambda *a: None, strategy).message
        assert "MirroredStrategy" in _evaluate("03.1", plain, "nope").message

        def mean_per_replica(s, model, opt, b):
            return dp.make_train_step(s, model, opt, b, "per_replica")

        hint = _evaluate("03.2", mean_per_replica, strategy).message
        assert "2 times" in hint, hint
        assert _evaluate("03.2", dp.make_train_step, strategy).ok
        assert "no function" in _evaluate("03.2", lambda *a: None, strategy).message

        lone = tf.keras.Sequential([tf.keras.Input((20,)), tf.keras.layers.Dense(10)])
        assert "not mirrored" in _evaluate("03.3", lone, strategy).message
        with strategy.scope():
            untrained = tf.keras.Sequential([tf.keras.Input((20,)), tf.keras.layers.Dense(10)])
        assert "chance" in _evaluate("03.3", untrained, strategy).message
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout
