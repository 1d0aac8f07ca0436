"""TFRecord files of JPEGs and their parser, for lesson 02's exercises and their checks (the
lesson writes the same records, its pipeline and its timer in its own cells).

``write_shards`` stores images as TFRecord files of JPEG bytes (a real decode per image);
``record_parser`` turns one record back into (image, label[, index]).
"""

from __future__ import annotations

import os

from ..runtime import validate

__all__ = ["record_parser", "write_shards"]


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
