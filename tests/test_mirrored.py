import numpy as np
import pytest
from helpers import run_python

from tflearn_helpers import mirrored


def test_weight_comparisons():
    a = [np.zeros((2, 2)), np.zeros(3)]
    b = [np.full((2, 2), 3.0), np.r_[0.0, 4.0, 0.0]]
    assert mirrored.max_abs_difference(a, b) == 4.0
    assert mirrored.update_norm(a, b) == pytest.approx(np.sqrt(4 * 9 + 16))
    with pytest.raises(ValueError):
        mirrored.max_abs_difference(a, b[:1])
    with pytest.raises(ValueError):
        mirrored.update_norm(a, b[:1])


def test_replica_checks_need_variables():
    with pytest.raises(ValueError, match="no variables"):
        mirrored.replica_divergence([])


def test_distributed_step_matches_one_device_and_the_mistake_is_n_times():
    done = run_python("""
        from tflearn_helpers import setup_course, datasets, mirrored
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import numpy as np, pytest, tensorflow as tf
        strategy = course.mirrored_strategy()
        x, y = datasets.teacher_data(16, features=4, classes=3)
        l2 = tf.keras.regularizers.L2(0.1)  # a penalty: scaled by the replicas, not the batch
        ref = tf.keras.Sequential(
            [tf.keras.Input((4,)), tf.keras.layers.Dense(3, kernel_regularizer=l2)])
        one = tf.distribute.get_strategy()

        def step_on(on, scaling):
            m = mirrored.twin_model(ref, on)
            with on.scope():
                opt = tf.keras.optimizers.SGD(0.5)
            step = mirrored.make_train_step(on, m, opt, 16, scaling)
            ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
            loss = step(next(iter(on.experimental_distribute_dataset(ds))))
            return m, float(loss)

        m1, l1 = step_on(one, "global")
        m2, l2 = step_on(strategy, "global")
        m3, _ = step_on(strategy, "per_replica")
        assert [mirrored.replica_count(v) for v in m2.variables] == [2, 2]
        assert mirrored.replica_count(m1.variables[0]) == 1
        assert mirrored.replica_divergence(m2.variables) == 0.0
        assert mirrored.max_abs_difference(m1.get_weights(), m2.get_weights()) < 1e-6
        assert abs(l1 - l2) < 1e-6
        w0 = ref.get_weights()
        wrong = mirrored.update_norm(w0, m3.get_weights())
        ratio = wrong / mirrored.update_norm(w0, m1.get_weights())
        assert abs(ratio - 2) < 1e-4, ratio
        ds = strategy.experimental_distribute_dataset(
            tf.data.Dataset.from_tensor_slices((x, y)).batch(8))
        assert mirrored.per_replica_shapes(strategy, next(iter(ds))) == [
            (0, ((4, 4), (4,))), (1, ((4, 4), (4,)))]
        copies = [v.numpy() for v in mirrored.replica_copies(m2.variables[0])]
        assert len(copies) == 2 and np.array_equal(copies[0], copies[1])
        with pytest.raises(ValueError, match="build the model"):
            mirrored.twin_model(tf.keras.Sequential([tf.keras.layers.Dense(2)]))
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout
