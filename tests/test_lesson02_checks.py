"""Exercise checks 02: right answers pass, wrong ones get a hint without the answer."""

import tensorflow as tf

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


def test_02_3_refuses_what_is_not_a_strategy():
    """02.3's right and wrong answers (each wrong one with its hint) are in the tables of
    tests/answers/lesson02.py, run by tests/test_mutations.py."""

    def normalize(strategy, x):  # written, never run here
        return strategy.run(tf.identity, args=(x,))

    assert _evaluate("02.3", normalize, "no").status == WRONG


def test_02_4_refuses_what_is_not_an_answer():
    """The right answer and every wrong one (each with its hint) are in the tables of
    tests/answers/lesson02.py, run by tests/test_mutations.py; here, what is not an answer."""

    def step(strategy, model, optimizer, micro_batches):  # written, never run here
        for batch in micro_batches:
            strategy.run(model, args=batch[:1])

    assert _evaluate("02.4", step, "no strategy").status == "wrong"
    assert _evaluate("02.4", 3, "no strategy").status == "wrong"  # not a function
    assert _evaluate("02.4", ..., "no strategy").status == "not attempted"  # the stub
    assert _evaluate("02.4", step, ...).status == "not attempted"  # an earlier answer a stub
