"""Plumbing for lesson 04's input pipeline: TFRecord files of JPEGs, their parser, and a
timer of images/s (the lesson writes the pipeline itself, stage by stage, in its cells).

``write_shards`` stores images as TFRecord files of JPEG bytes (a real decode per image).
``images_per_second`` times a dataset, optionally with a stand-in accelerator step
(``time.sleep``: a GPU busy with a training step does not use the CPU, so a sleep models it
honestly for the question "does the input keep up?"). ``record_parser`` turns one record
back into (image, label[, index]).
"""

from __future__ import annotations

import os
import time

from . import validate

__all__ = ["images_per_second", "record_parser", "write_shards"]


def write_shards(images, directory: str, shards: int) -> list[str]:
    """Write ``images`` (a ``datasets.Images``) into ``shards`` TFRecord files; each record holds
    a JPEG, its label and its index in ``images``. Returns the file names in order."""
    import tensorflow as tf

    n = len(images.x)
    validate.whole_number("shards (at most one per image)", shards, minimum=1, maximum=n)
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
