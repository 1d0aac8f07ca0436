import numpy as np
from helpers import run_python

from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG, _evaluate
from tflearn_helpers.checks.lesson01 import STRATEGY_NAMES as NAMES


def test_ring_megabytes_hints_without_the_answer():
    right = 2 * 7 / 8 * 25_557_032 * 4 / 1e6
    assert _evaluate("01.6", right).status == RIGHT
    assert "bytes" in _evaluate("01.6", right * 1e6).message
    assert "one copy" in _evaluate("01.6", 25_557_032 * 4 / 1e6).message
    wrong = _evaluate("01.6", 1.0)
    assert wrong.status == WRONG and f"{right:.0f}" not in wrong.message
    assert _evaluate("01.6", ...).status == NOT_ATTEMPTED


def test_wrong_distributed_answers_get_hints():
    done = run_python("""
        from tflearn_helpers import setup_course
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import tensorflow as tf
        from tflearn_helpers import mirrored
        from tflearn_helpers.checks import _evaluate
        strategy = tf.distribute.MirroredStrategy(course.devices)

        def plain(s, x, y, b):
            return tf.data.Dataset.from_tensor_slices((x, y)).batch(b)

        def per_replica_sized(s, x, y, b):
            return s.experimental_distribute_dataset(
                tf.data.Dataset.from_tensor_slices((x, y)).batch(b // 2))

        assert _evaluate("01.1", strategy, course.devices).ok
        assert "other devices" in _evaluate("01.1", strategy, course.devices[:1]).message
        assert "MirroredStrategy" in _evaluate("01.1", tf.distribute.get_strategy(), []).message
        assert _evaluate("01.1", None, course.devices).status == "not attempted"

        assert "plain tf.data.Dataset" in _evaluate("01.2", plain, strategy).message
        assert "each replica got" in _evaluate("01.2", per_replica_sized, strategy).message
        assert "returns None" in _evaluate("01.2", lambda *a: None, strategy).message
        assert "MirroredStrategy" in _evaluate("01.2", plain, "nope").message

        def mean_per_replica(s, model, opt, b):  # each replica's own mean, its whole penalty
            loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction="none")

            def replica(x, y):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(loss_fn(y, model(x))) + tf.add_n(model.losses)
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
                return loss / s.num_replicas_in_sync

            return tf.function(lambda batch: s.reduce("SUM", s.run(replica, args=batch), None))

        def no_penalty(s, model, opt, b):
            loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction="none")

            def replica(x, y):
                with tf.GradientTape() as tape:
                    loss = tf.nn.compute_average_loss(loss_fn(y, model(x)), global_batch_size=b)
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
                return loss

            return tf.function(lambda batch: s.reduce("SUM", s.run(replica, args=batch), None))

        def mean_reduced(s, model, opt, b):  # the wrong op: MEAN of the replicas' shares
            def replica(x, y):
                loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True, reduction="none")
                with tf.GradientTape() as tape:
                    loss = tf.nn.compute_average_loss(loss_fn(y, model(x)), global_batch_size=b)
                    loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
                return loss

            return tf.function(lambda batch: s.reduce("MEAN", s.run(replica, args=batch), None))

        hint = _evaluate("01.3", mean_reduced, strategy).message
        assert "strategy.reduce" in hint, hint
        hint = _evaluate("01.3", mean_per_replica, strategy).message
        assert "2 times" in hint, hint
        assert "model.losses" in _evaluate("01.3", no_penalty, strategy).message
        hint = _evaluate("01.3", mirrored.make_train_step, strategy).message
        assert "course's own" in hint, hint  # the course's step is never the learner's
        assert "no function" in _evaluate("01.3", lambda *a: None, strategy).message

        def not_trained(s, x, y, b, epochs):
            with s.scope():
                m = tf.keras.Sequential([tf.keras.Input((20,)), tf.keras.layers.Dense(10)])
            return m, [1.0] * epochs

        def fits(s, x, y, b, epochs):
            with s.scope():
                m = tf.keras.Sequential([tf.keras.Input((20,)), tf.keras.layers.Dense(10)])
                opt = tf.keras.optimizers.Adam(0.05)
            step = mirrored.make_train_step(s, m, opt, b)
            data = s.experimental_distribute_dataset(
                tf.data.Dataset.from_tensor_slices((x, y)).batch(b, drop_remainder=True))
            return m, [sum(float(step(d)) for d in data) for _ in range(epochs)]

        def no_scope(s, x, y, b, epochs):  # model and optimizer built outside strategy.scope()
            m = tf.keras.Sequential([tf.keras.Input((20,)), tf.keras.layers.Dense(10)])
            step = tf.function(lambda batch: 0.0)
            return m, [float(step(None)) + 1.0 - i for i in range(epochs)]

        assert "not mirrored" in _evaluate("01.4", no_scope, strategy).message
        assert "did not fall" in _evaluate("01.4", not_trained, strategy).message
        assert "two things" in _evaluate("01.4", lambda *a: 1, strategy).message
        assert "course's own" in _evaluate("01.4", fits, strategy).message

        def lone(s, x, y):
            return tf.keras.Sequential([tf.keras.Input((20,)), tf.keras.layers.Dense(10)])

        def untrained(s, x, y):
            with s.scope():
                return tf.keras.Sequential([tf.keras.Input((20,)), tf.keras.layers.Dense(10)])

        assert "not mirrored" in _evaluate("01.5", lone, strategy).message
        assert "chance" in _evaluate("01.5", untrained, strategy).message
        assert "return the model" in _evaluate("01.5", lambda s, x, y: 3, strategy).message
        answers = {"01.2": plain, "01.3": no_penalty, "01.4": fits, "01.5": lone}
        for later, answer in answers.items():
            waiting = _evaluate(later, answer, None)  # 01.1 still its stub: strategy = None
            assert waiting.status == "not attempted", (later, waiting)
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout


def test_a_strategy_that_cannot_all_reduce_a_float_and_an_unbatched_dataset_get_hints():
    """Issue 47: 01.1 accepted NCCL on CPUs (01.3 then blamed strategy.scope()); 01.2 without
    .batch said 'checking your answer raised IndexError'."""
    done = run_python("""
        from tflearn_helpers import setup_course
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import tensorflow as tf
        from tflearn_helpers.checks import _evaluate
        nccl = tf.distribute.MirroredStrategy(
            course.devices, cross_device_ops=tf.distribute.NcclAllReduce())
        said = _evaluate("01.1", nccl, course.devices)
        assert said.status == "wrong" and "cannot sum" in said.message, said
        one = tf.distribute.MirroredStrategy(
            course.devices, cross_device_ops=tf.distribute.ReductionToOneDevice())
        assert _evaluate("01.1", one, course.devices).ok

        def unbatched(s, x, y, b):
            return s.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((x, y)))

        said = _evaluate("01.2", unbatched, one)
        assert said.status == "wrong" and "batches" in said.message, said
        assert "checking your answer raised" not in said.message
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout


# -- 01.7-01.9: the other strategies of one machine ------------------------------------
def results(gap=0.0, ms=1.5):
    base = [np.zeros((3, 2)), np.zeros(2)]
    out = {name: ([w.copy() for w in base], ms) for name in NAMES}
    out["CentralStorage"] = ([w + gap for w in base], ms)
    return out


def test_01_7_refuses_a_dict_with_other_keys():
    mirrored = object()  # stands for 01.1's strategy
    assert _evaluate("01.7", ..., mirrored).status == NOT_ATTEMPTED
    assert _evaluate("01.7", {"OneDevice": 1}, mirrored).status == WRONG
    assert _evaluate("01.7", dict.fromkeys(NAMES, 1), None).status == NOT_ATTEMPTED  # 01.1 unfilled


def build_and_warm_up(strategy):
    return strategy  # written: 01.8's check reads the results and the models


def test_01_8_explains_bad_results():
    bad = results()
    bad["Mirrored"] = ...
    assert _evaluate("01.8", build_and_warm_up, bad, {}).status == WRONG
    assert _evaluate("01.8", build_and_warm_up, None, {}).status == NOT_ATTEMPTED  # 01.7 unfilled
    bad["Mirrored"] = [np.zeros(2)]
    assert "Mirrored" in _evaluate("01.8", build_and_warm_up, bad, {}).message
    slow = results(ms=0.0)
    assert "positive" in _evaluate("01.8", build_and_warm_up, slow, {}).message
    other = results()
    other["OneDevice"] = ([np.zeros((4, 2))], 1.0)
    assert "same one" in _evaluate("01.8", build_and_warm_up, other, {}).message
    assert "models" in _evaluate("01.8", build_and_warm_up, results(), {}).message


def test_01_8_reads_which_strategy_created_each_models_variables():
    done = run_python("""
        from tflearn_helpers import setup_course
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import keras, numpy as np, tensorflow as tf
        from tflearn_helpers.checks import _evaluate
        from tflearn_helpers.checks.lesson01 import STRATEGY_NAMES as NAMES

        strategies = [tf.distribute.OneDeviceStrategy(course.devices[0]),
                      tf.distribute.MirroredStrategy(course.devices),
                      tf.distribute.experimental.CentralStorageStrategy(course.devices)]

        def build(strategy, scope=True, compile_in_scope=True):
            with (strategy.scope() if scope else tf.distribute.get_strategy().scope()):
                model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
                if compile_in_scope:
                    model.compile(keras.optimizers.SGD(0.1), "mse")
            if not compile_in_scope:
                model.compile(keras.optimizers.SGD(0.1), "mse")
            model.fit(np.ones((8, 4)), np.ones((8, 2)), batch_size=4, verbose=0)
            return model

        results = {n: ([np.zeros((4, 2)), np.zeros(2)], 1.0) for n in NAMES}
        def verdict(**how):
            models = {s: build(s, **how) for s in strategies}
            return _evaluate("01.8", build, results, models)
        assert verdict().ok, verdict()
        hint = verdict(scope=False).message
        assert "Where was the model built?" in hint and "scope()" not in hint, hint
        hint = verdict(compile_in_scope=False).message
        assert "optimizer" in hint and "scope()" not in hint, hint
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout


def test_01_9_judges_the_learners_function_on_results_it_cannot_know():
    far = results(gap=1e-2)

    def right(res):
        base = res["OneDevice"][0]
        return {
            name
            for name, (weights, _) in res.items()
            if max(float(np.abs(w - b).max()) for w, b in zip(weights, base, strict=True)) <= 1e-5
        }

    assert _evaluate("01.9", right, far).status == RIGHT
    assert _evaluate("01.9", right, results()).status == RIGHT
    assert _evaluate("01.9", lambda res: right(res) - {"OneDevice"}, far).status == RIGHT
    typed_in = _evaluate("01.9", lambda res: set(NAMES), results())  # right on its own results
    assert typed_in.status == WRONG and "check changed" in typed_in.message
    assert "CentralStorage" not in typed_in.message
    assert "not strategy names" in _evaluate("01.9", lambda res: {"TPU"}, far).message
    assert "set" in _evaluate("01.9", lambda res: "Mirrored", far).message
    assert _evaluate("01.9", right, None).status == NOT_ATTEMPTED  # 01.8 not done yet
