import numpy as np
import pytest
from helpers import run_python

from tflearn_helpers import mirrored as dp


def test_teacher_data_is_deterministic_and_uses_every_class():
    x, y = dp.teacher_data(2000, features=5, classes=3, seed=4)
    assert x.shape == (2000, 5) and x.dtype == np.float32 and y.dtype == np.int32
    assert set(np.unique(y)) == {0, 1, 2}
    x2, y2 = dp.teacher_data(2000, features=5, classes=3, seed=4)
    assert np.array_equal(x, x2) and np.array_equal(y, y2)
    x3, y3 = dp.teacher_data(2000, features=5, classes=3, seed=4, teacher=1)
    assert np.array_equal(x, x3) and not np.array_equal(y, y3)  # another task, same examples


@pytest.mark.parametrize(
    "kwargs", [{"n": 0}, {"n": 2.5}, {"n": True}, {"n": 4, "classes": 1}, {"n": 4, "features": 0}]
)
def test_teacher_data_rejects_bad_sizes(kwargs):
    with pytest.raises(ValueError):
        dp.teacher_data(**kwargs)


def test_warmup_reaches_the_scaled_rate_linearly():
    rates = [dp.warmup_lr(i, 0.1, 4, 4) for i in range(6)]
    assert rates == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.4, 0.4])
    assert dp.warmup_lr(0, 0.1, 8, 0) == pytest.approx(0.8)
    for bad in ((-1, 0.1, 4, 4), (0, 0.0, 4, 4), (0, 0.1, 0, 4), (0, 0.1, 4, -1)):
        with pytest.raises(ValueError):
            dp.warmup_lr(*bad)


def test_weight_comparisons():
    a = [np.zeros((2, 2)), np.zeros(3)]
    b = [np.full((2, 2), 3.0), np.r_[0.0, 4.0, 0.0]]
    assert dp.max_abs_difference(a, b) == 4.0
    assert dp.update_norm(a, b) == pytest.approx(np.sqrt(4 * 9 + 16))
    with pytest.raises(ValueError):
        dp.max_abs_difference(a, b[:1])
    with pytest.raises(ValueError):
        dp.update_norm(a, b[:1])


def test_replica_checks_need_variables():
    with pytest.raises(ValueError, match="no variables"):
        dp.replica_divergence([])


def test_distributed_step_matches_one_device_and_the_mistake_is_n_times():
    done = run_python("""
        from tflearn_helpers import setup_course, mirrored as dp
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import numpy as np, pytest, tensorflow as tf
        strategy = course.mirrored_strategy()
        x, y = dp.teacher_data(16, features=4, classes=3)
        l2 = tf.keras.regularizers.L2(0.1)  # a penalty: scaled by the replicas, not the batch
        ref = tf.keras.Sequential(
            [tf.keras.Input((4,)), tf.keras.layers.Dense(3, kernel_regularizer=l2)])
        one = tf.distribute.get_strategy()

        def step_on(on, scaling):
            m = dp.twin_model(ref, on)
            with on.scope():
                opt = tf.keras.optimizers.SGD(0.5)
            step = dp.make_train_step(on, m, opt, 16, scaling)
            ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
            loss = step(next(iter(on.experimental_distribute_dataset(ds))))
            return m, float(loss)

        m1, l1 = step_on(one, "global")
        m2, l2 = step_on(strategy, "global")
        m3, _ = step_on(strategy, "per_replica")
        assert [dp.replica_count(v) for v in m2.variables] == [2, 2]
        assert dp.replica_count(m1.variables[0]) == 1
        assert dp.replica_divergence(m2.variables) == 0.0
        assert dp.max_abs_difference(m1.get_weights(), m2.get_weights()) < 1e-6
        assert abs(l1 - l2) < 1e-6
        w0 = ref.get_weights()
        ratio = dp.update_norm(w0, m3.get_weights()) / dp.update_norm(w0, m1.get_weights())
        assert abs(ratio - 2) < 1e-4, ratio
        ds = strategy.experimental_distribute_dataset(
            tf.data.Dataset.from_tensor_slices((x, y)).batch(8))
        assert dp.per_replica_shapes(strategy, next(iter(ds))) == [
            (0, ((4, 4), (4,))), (1, ((4, 4), (4,)))]
        copies = dp.local_values(m2.variables[0])
        assert len(copies) == 2 and np.array_equal(copies[0], copies[1])
        opt = tf.keras.optimizers.SGD(0.1)
        with pytest.raises(ValueError, match="loss_scaling"):
            dp.make_train_step(strategy, m2, opt, 16, "mean")
        with pytest.raises(ValueError, match="no examples"):
            dp.make_train_step(strategy, m2, opt, 1)
        with pytest.raises(TypeError):
            dp.make_train_step(strategy, m2, opt, 16.0)
        with pytest.raises(ValueError, match="build the model"):
            dp.twin_model(tf.keras.Sequential([tf.keras.layers.Dense(2)]))
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout
