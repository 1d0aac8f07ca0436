from helpers import run_python

# One fit under a two-device MirroredStrategy, with the guard (setup_course installs it) and
# with Keras' own build step: how many multi-device iterators each made, and the weights.
FIT = """
    import sys
    from tflearn_helpers import setup_course
    course = setup_course(devices=2, scale="smoke", verbose=False)
    import keras, numpy as np, tensorflow as tf
    from keras.src.backend.tensorflow.trainer import TensorFlowTrainer
    from tensorflow.python.data.ops import multi_device_iterator_ops as mdi

    made = []
    init = mdi.OwnedMultiDeviceIterator.__init__
    def counted(self, *args, **kwargs):
        made.append(1)
        init(self, *args, **kwargs)
    mdi.OwnedMultiDeviceIterator.__init__ = counted

    build = TensorFlowTrainer._maybe_symbolic_build
    assert build.guarded
    if sys.argv[-1] == "unguarded":
        TensorFlowTrainer._maybe_symbolic_build = build.__wrapped__
    strategy = course.mirrored_strategy(2)
    x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    y = x @ np.arange(4, dtype="float32")[:, None]
    with strategy.scope():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
        model.compile(keras.optimizers.SGD(0.01), "mse")
    model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    print("MADE", len(made))
    np.save(sys.argv[-2], np.concatenate([w.ravel() for w in model.get_weights()]))
"""


def _fit(tmp_path, mode):
    out = tmp_path / f"{mode}.npy"
    done = run_python(
        FIT.replace("sys.argv[-1]", repr(mode)).replace("sys.argv[-2]", repr(str(out)))
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return int(done.stdout.split("MADE")[-1]), out


def test_fit_under_a_strategy_drops_no_multi_device_iterator_and_trains_the_same(tmp_path):
    import numpy as np

    guarded, guarded_weights = _fit(tmp_path, "guarded")
    unguarded, unguarded_weights = _fit(tmp_path, "unguarded")
    # Keras' own build step makes one iterator per fit() and drops it after one batch; the
    # epochs' iterator is the other (steps_per_epoch unset: one per epoch)
    assert unguarded == guarded + 1, (unguarded, guarded)
    np.testing.assert_array_equal(np.load(guarded_weights), np.load(unguarded_weights))
