"""Exercise checks 02: right answers pass, wrong ones get a hint without the answer."""

import tensorflow as tf
from helpers import run_python

from tflearn_helpers import input_pipeline
from tflearn_helpers.checks import NOT_ATTEMPTED, RIGHT, WRONG, _evaluate


def _pipeline(policy, parallel=True, drop=False, options=False, lose=False):
    """A worker's input pipeline sharded by file (right) or by record (wrong for 02.1); it may
    drop a last partial batch (right), set options after the prefetch (right) or lose a full
    batch (wrong)."""
    fast = {"num_parallel_calls": tf.data.AUTOTUNE, "deterministic": True} if parallel else {}

    def fn(files, num_workers, worker_index, batch_size):
        ds = tf.data.Dataset.from_tensor_slices(files)
        if policy == "file":
            ds = ds.shard(num_workers, worker_index)
        ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=2, **fast)
        ds = ds.map(input_pipeline.record_parser(with_index=True), **fast)
        if policy == "data":
            ds = ds.shard(num_workers, worker_index)
        ds = ds.batch(batch_size, drop_remainder=drop).skip(1 if lose else 0)
        ds = ds.prefetch(tf.data.AUTOTUNE)
        return ds.with_options(tf.data.Options()) if options else ds

    return fn


def test_02_1():
    assert _evaluate("02.1", _pipeline("file")).status == RIGHT
    wrong = _evaluate("02.1", _pipeline("data"))
    assert wrong.status == WRONG and "files" in wrong.message
    assert _evaluate("02.1", ...).status == NOT_ATTEMPTED
    assert _evaluate("02.1", _pipeline("file")(["x"], 1, 0, 1)).status == WRONG  # not callable


def test_02_1_allows_a_dropped_last_batch_and_options_after_the_prefetch_whatever_the_sizes():
    for _ in range(6):  # each run draws other sizes: with 6 runs, 3 used to fail
        assert _evaluate("02.1", _pipeline("file", drop=True)).status == RIGHT
    assert _evaluate("02.1", _pipeline("file", drop=True, options=True)).status == RIGHT
    lost = _evaluate("02.1", _pipeline("file", lose=True))
    assert lost.status == WRONG and "every image of its files once" in lost.message


def test_02_1_reads_the_pipelines_graph_for_parallel_reading_and_decoding():
    sequential = _evaluate("02.1", _pipeline("file", parallel=False))
    assert sequential.status == WRONG and "one after another" in sequential.message
    assert "interleave" not in sequential.message  # the hint does not name the answer

    def one_file_after_another(files, num_workers, worker_index, batch_size):
        ds = tf.data.TFRecordDataset(files[worker_index::num_workers])
        ds = ds.map(input_pipeline.record_parser(with_index=True), num_parallel_calls=2)
        return ds.batch(batch_size).prefetch(1)

    assert "one after another" in _evaluate("02.1", one_file_after_another).message


def test_02_2(tmp_path):
    def resume(directory, model, optimizer):
        tf.train.Checkpoint(model=model, optimizer=optimizer).restore(
            tf.train.latest_checkpoint(directory)
        )
        return int(optimizer.iterations.numpy())

    def model_only(directory, model, optimizer):
        tf.train.Checkpoint(model=model).restore(
            tf.train.latest_checkpoint(directory)
        ).expect_partial()
        return 3

    assert _evaluate("02.2", resume).status == RIGHT
    wrong = _evaluate("02.2", model_only)
    assert wrong.status == WRONG and "optimizer" in wrong.message

    def restores_nothing(directory, model, optimizer):
        return 3

    assert _evaluate("02.2", restores_nothing).status == WRONG

    def hard_coded_step(directory, model, optimizer):
        resume(directory, model, optimizer)
        return 3  # never the saved step: two saves at least, 2 to 5 steps apart

    hint = _evaluate("02.2", hard_coded_step).message
    assert "not the restored one" in hint and "iterations" not in hint


def test_02_3_runs_the_learners_normalization():
    done = run_python("""
        from tflearn_helpers import setup_course
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import keras, numpy as np, tensorflow as tf
        from tflearn_helpers.checks import _evaluate
        strategy = course.mirrored_strategy()

        def normalize(synchronized):
            def fn(s, x):
                with s.scope():
                    layer = keras.layers.BatchNormalization(synchronized=synchronized)
                data = s.experimental_distribute_dataset(tf.data.Dataset.from_tensors(x))
                return s.run(lambda v: layer(v, training=True), args=(next(iter(data)),))
            return fn

        assert _evaluate("02.3", normalize(True), strategy).ok
        hint = _evaluate("02.3", normalize(False), strategy).message
        assert "own slice" in hint, hint
        one_device = lambda s, x: keras.layers.BatchNormalization()(x, training=True)
        assert "one output per replica" in _evaluate("02.3", one_device, strategy).message
        def whole_batch_each(s, x):
            with s.scope():
                layer = keras.layers.BatchNormalization(synchronized=True)
            return s.run(lambda: layer(tf.constant(x), training=True))
        assert "shaped" in _evaluate("02.3", whole_batch_each, strategy).message
        assert "returns None" in _evaluate("02.3", lambda s, x: None, strategy).message
        assert _evaluate("02.3", lambda s, x: None, "no").status == "wrong"
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout


def test_02_4_judges_the_learners_accumulation():
    """The right answer, and the plausible wrong ones, each with its own hint."""
    done = run_python(
        """
        from tflearn_helpers import setup_course
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import keras, tensorflow as tf
        from tflearn_helpers.checks import _evaluate

        strategy = course.mirrored_strategy()
        per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

        def step(apply_each=False, mean=True, per_replica_loss=False, on_replicas=True):
            def fn(s, model, optimizer, micro_batches):
                def grads_of(x, y):
                    with tf.GradientTape() as tape:
                        losses = per_example(y, model(x, training=True))
                        mean_of = tf.reduce_mean if per_replica_loss else tf.nn.compute_average_loss
                        loss = mean_of(losses)
                    return tape.gradient(loss, model.trainable_variables)

                total = None
                for batch in micro_batches:
                    if on_replicas:
                        g = s.reduce("SUM", s.run(grads_of, args=batch), axis=None)
                    else:  # the whole micro-batch gathered on one device, no replicas
                        x, y = (tf.concat(s.experimental_local_results(t), 0) for t in batch)
                        g = [a * 1.0 for a in grads_of(x, y)]
                    if apply_each:
                        optimizer.apply_gradients(zip(g, model.trainable_variables))
                        continue
                    total = g if total is None else [a + b for a, b in zip(total, g)]
                if not apply_each:
                    k = len(micro_batches) if mean else 1
                    averaged = [t / k for t in total]
                    optimizer.apply_gradients(zip(averaged, model.trainable_variables))
            return fn

        def message(fn, *extra):
            result = _evaluate("02.4", fn, *(extra or (strategy,)))
            return result.status, result.message

        assert message(step())[0] == "right", message(step())
        status, hint = message(step(apply_each=True))
        assert status == "wrong" and "apply them once" in hint, hint
        status, hint = message(step(mean=False))
        assert status == "wrong" and "average, do not sum" in hint, hint
        status, hint = message(step(per_replica_loss=True))
        assert status == "wrong" and "number of replicas" in hint, hint
        status, hint = message(step(on_replicas=False))
        assert status == "wrong" and "strategy.run" in hint, hint

        def one_large_batch(s, model, optimizer, micro_batches):  # no accumulation
            def grads_of(x, y):
                with tf.GradientTape() as tape:
                    loss = tf.nn.compute_average_loss(per_example(y, model(x, training=True)))
                return tape.gradient(loss, model.trainable_variables)

            x, y = (tf.concat([tf.concat(s.experimental_local_results(t), 0) for t in parts], 0)
                    for parts in zip(*micro_batches))
            g = s.reduce("SUM", s.run(grads_of, args=(x, y)), axis=None)
            optimizer.apply_gradients(zip(g, model.trainable_variables))

        status, hint = message(one_large_batch)
        assert status == "wrong" and "one micro-batch at a time" in hint, hint
        status, hint = message(lambda s, m, o, b: None)
        assert status == "wrong" and "never updated" in hint, hint
        assert message(step(), "no strategy")[0] == "wrong"
        assert message(3)[0] == "wrong"  # not a function
        assert message(...)[0] == "not attempted"  # the stub; stub functions: test_checks.py
        assert message(step(), ...)[0] == "not attempted"  # an earlier answer still a stub
        for status, hint in (message(step(mean=False)), message(step(per_replica_loss=True))):
            assert "0." not in hint and "=" not in hint  # no numbers, no answer in the hint
        print("ok")
    """,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout
