from helpers import run_python

from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG, _evaluate


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
