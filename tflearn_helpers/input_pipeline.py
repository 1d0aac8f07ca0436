"""Plumbing for lesson 04's input pipeline: TFRecord files of JPEGs, their parser, and a
timer of images/s (the lesson writes the pipeline itself, stage by stage, in its cells).

``write_shards`` stores images as TFRecord files of JPEG bytes (a real decode per image).
``images_per_second`` times a dataset, optionally with a stand-in accelerator step
(``time.sleep``: a GPU busy with a training step does not use the CPU, so a sleep models it
honestly for the question "does the input keep up?"). ``make_pipeline`` is a reference
pipeline with each stage switchable (the tests use it to build right and wrong answers).
"""

from __future__ import annotations

import os
import time

SHARD_POLICIES = ("file", "data", "off")


def write_shards(images, directory: str, shards: int) -> list[str]:
    """Write ``images`` (a ``data.Images``) into ``shards`` TFRecord files; each record holds
    a JPEG, its label and its index in ``images``. Returns the file names in order."""
    import tensorflow as tf

    n = len(images.x)
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= n:
        raise ValueError(f"shards must be a whole number from 1 to {n} (the images), got {shards}")
    os.makedirs(directory, exist_ok=True)
    paths = [
        os.path.join(directory, f"images-{i:03d}-of-{shards:03d}.tfrecord") for i in range(shards)
    ]
    for i, path in enumerate(paths):
        with tf.io.TFRecordWriter(path) as writer:
            for k in range(i, n, shards):
                jpeg = tf.io.encode_jpeg(images.x[k], quality=90).numpy()
                feature = {
                    "jpeg": _bytes(jpeg),
                    "label": _int(int(images.y[k])),
                    "index": _int(k),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
    return paths


def make_pipeline(
    files: list[str],
    batch_size: int,
    *,
    size: int | None = None,
    num_workers: int = 1,
    worker_index: int = 0,
    policy: str = "file",
    parallel: bool = True,
    prefetch: bool = True,
    repeat: bool = False,
    with_index: bool = False,
):
    """Batches of (float32 images in [0, 1], int32 labels) read from ``files``.

    ``policy`` says how worker ``worker_index`` of ``num_workers`` gets its share, like
    ``tf.data.experimental.AutoShardPolicy``: "file" reads only its files; "data" reads and
    decodes everything, then keeps every ``num_workers``-th image; "off" keeps all.
    ``size`` resizes images; ``with_index`` adds each image's index as a third element.
    ``parallel=False`` / ``prefetch=False`` also turn off tf.data's automatic versions of
    them (``map_parallelization``, ``inject_prefetch``), so that each effect can be measured.
    """
    import tensorflow as tf

    if policy not in SHARD_POLICIES:
        raise ValueError(f"policy must be one of {SHARD_POLICIES}, got {policy!r}")
    if not files:
        raise ValueError("no files given: write some with write_shards first")
    if not 0 <= worker_index < num_workers:
        raise ValueError(f"need 0 <= worker_index < num_workers, got {worker_index}, {num_workers}")
    if policy == "file" and len(files) < num_workers:
        raise ValueError(
            f"file sharding needs at least one file per worker: {len(files)} files, "
            f"{num_workers} workers (TensorFlow's AUTO policy falls back to data sharding here)"
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
    parallelism = {"num_parallel_calls": tf.data.AUTOTUNE, "deterministic": True}
    ds = tf.data.Dataset.from_tensor_slices(list(files))
    if policy == "file":
        ds = ds.shard(num_workers, worker_index)
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=1)
    ds = ds.map(record_parser(size, with_index), **(parallelism if parallel else {}))
    if policy == "data":
        ds = ds.shard(num_workers, worker_index)
    if repeat:
        ds = ds.repeat()
    ds = ds.batch(batch_size, drop_remainder=True)
    # tf.data would otherwise parallelise the map and add a prefetch by itself
    options = tf.data.Options()
    options.experimental_optimization.map_parallelization = parallel
    options.experimental_optimization.inject_prefetch = prefetch
    ds = ds.with_options(options)
    return ds.prefetch(tf.data.AUTOTUNE) if prefetch else ds


def images_per_second(dataset, batches: int, step_seconds: float = 0.0, warmup: int = 1) -> float:
    """Images/s delivered by ``dataset`` over ``batches`` batches after ``warmup`` batches,
    with a stand-in accelerator step of ``step_seconds`` after each batch."""
    if batches < 1 or warmup < 0 or step_seconds < 0:
        raise ValueError(f"need batches >= 1, warmup >= 0, step_seconds >= 0: {batches}, "
                         f"{warmup}, {step_seconds}")  # fmt: skip
    it = iter(dataset)
    for _ in range(warmup):
        next(it)
    images = 0
    start = time.perf_counter()
    for _ in range(batches):
        try:
            batch = next(it)
        except StopIteration:
            raise ValueError(f"the dataset ran out before {warmup + batches} batches") from None
        images += int(batch[0].shape[0])
        if step_seconds:
            time.sleep(step_seconds)
    return images / (time.perf_counter() - start)


def record_parser(size: int | None = None, with_index: bool = False):
    """The function that turns one record into (image, label[, index]); ``size`` resizes."""
    import tensorflow as tf

    spec = {
        "jpeg": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "index": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(record):
        ex = tf.io.parse_single_example(record, spec)
        image = tf.image.convert_image_dtype(tf.io.decode_jpeg(ex["jpeg"], channels=3), tf.float32)
        if size is not None:
            image = tf.image.resize(image, (size, size))
        out = (image, tf.cast(ex["label"], tf.int32))
        return out + (tf.cast(ex["index"], tf.int32),) if with_index else out

    return parse


def _bytes(value: bytes):
    import tensorflow as tf

    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _int(value: int):
    import tensorflow as tf

    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
