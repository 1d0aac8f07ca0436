"""TFRecord files of JPEGs and their parser, for lesson 02's exercises and their checks (the
writer is the lesson's, generated from it).

``write_shards`` stores images as TFRecord files of JPEG bytes (a real decode per image) with
lesson 02's ``write_records``; ``record_parser`` turns one record back into (image, label[, index]).
"""

from __future__ import annotations

from ..runtime import validate
from ..taught.lesson02 import write_records

__all__ = ["record_parser", "write_shards"]


def write_shards(images, directory: str, shards: int) -> list[str]:
    """Write ``images`` (a ``datasets.Images``) into ``shards`` TFRecord files with lesson 02's
    ``write_records``: record k holds a JPEG, its label and its index k, in file k % shards.
    Returns the file names in order."""
    validate.whole_number(
        "shards (at most one per image)", shards, minimum=1, maximum=len(images.x)
    )
    return write_records(images.x, images.y, directory, shards)


# Not the lesson's parser: lesson 02's parser(size) always resizes and yields (image, label);
# exercise 02.1's check needs each image's index (which images did each worker read?), and it and
# benchmarks/input_sharding.py read the images at their stored size.
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
