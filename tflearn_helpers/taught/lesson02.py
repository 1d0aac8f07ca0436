"""Generated from lesson 02 by tools/save_taught.py: edit the lesson, then run it.

The lesson: notebooks/02_resnet50_data_parallel.ipynb.
SETUP: its setup cell's settings; SIZES: each pick(smoke=..., cpu=..., gpu=...) it makes.
Each definition is the lesson's, with the lesson's imports of what it uses inside its body.
"""

__all__ = ["SETUP", "SIZES", "small_bn_cnn", "write_records"]

SETUP = {"devices": 2, "gpu_memory_mb": 6912, "programs": True}
SIZES = {
    "BLOCKS": {"smoke": (), "cpu": (2, 2, 2, 2), "gpu": (3, 4, 6, 3)},
    "IMAGE": {"smoke": 32, "cpu": 32, "gpu": 224},
    "PER_REPLICA_BATCH": {"smoke": 16, "cpu": 16, "gpu": 32},
    "BN_MOMENTUM": {"smoke": 0.5, "cpu": 0.9, "gpu": 0.99},
    "TRAIN_IMAGES": {"smoke": 640, "cpu": 3200, "gpu": 6400},
    "STEPS": {"smoke": 12, "cpu": 30, "gpu": 600},
    "SHUFFLE": {"smoke": 256, "cpu": 1024, "gpu": 4096},
    "BIG_IMAGES": {"smoke": 128, "cpu": 384, "gpu": 1024},
    "TIMED_BATCHES": {"smoke": 4, "cpu": 15, "gpu": 50},
    "ROUNDS": {"smoke": 2, "cpu": 3, "gpu": 3},
    "BN_NET": {"smoke": "small CNN", "cpu": "small CNN", "gpu": "ResNet-50"},
    "BN_BATCH / N": {"smoke": 16, "cpu": 16, "gpu": 8},
    "PROBE_DEADLINE": {"smoke": 30, "cpu": 90, "gpu": 90},
    "PROBE_PATIENCE": {"smoke": 5, "cpu": 5, "gpu": 20},
    "SWEEP_MODEL": {"smoke": "small", "cpu": "resnet50", "gpu": "resnet50"},
    "SWEEP_BATCHES": {"smoke": (64,), "cpu": (8,), "gpu": (8, 16, 32)},
    "SWEEP_BUDGET": {"smoke": 60, "cpu": 180, "gpu": 180},
    "SCALING_BLOCKS": {"smoke": (), "cpu": (), "gpu": (3, 4, 6, 3)},
    "SCALING_PER_REPLICA": {"smoke": 64, "cpu": 16, "gpu": 32},
    "STRONG_GLOBAL": {"smoke": 128, "cpu": 32, "gpu": 32},
    "SCALING_STEPS": {"smoke": 3, "cpu": 10, "gpu": 30},
    "SCALING_BUDGET": {"smoke": 60, "cpu": 90, "gpu": 900},
    "SCALING_COUNTS": {"smoke": (1, 2), "cpu": (1, 2, 4), "gpu": (1, 2, 4, 8)},
}


def write_records(x, y, directory, shards=8):
    """uint8 images x, labels y -> `shards` TFRecord files of (JPEG, label, index)."""

    import os

    import tensorflow as tf

    def feature(value):  # one tf.train.Feature: bytes, or an int64
        if isinstance(value, bytes):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(value)]))

    os.makedirs(directory, exist_ok=True)
    files = [os.path.join(directory, f"part-{s}-of-{shards}.tfrecord") for s in range(shards)]
    for s, path in enumerate(files):
        with tf.io.TFRecordWriter(path) as writer:
            for i in range(s, len(x), shards):
                jpeg = tf.io.encode_jpeg(x[i], quality=90).numpy()
                fields = {"jpeg": feature(jpeg), "label": feature(y[i]), "index": feature(i)}
                writer.write(
                    tf.train.Example(features=tf.train.Features(feature=fields)).SerializeToString()
                )
    return files


def small_bn_cnn(image_size, classes):
    """Three convolutions, each followed by BatchNorm and pooling, then a linear classifier."""
    import keras

    layers = [keras.Input((image_size, image_size, 3))]
    for filters in (32, 64, 128):
        layers += [
            keras.layers.Conv2D(filters, 3, padding="same", use_bias=False),
            keras.layers.BatchNormalization(),
            keras.layers.ReLU(),
            keras.layers.MaxPooling2D(),
        ]
    head = [keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(classes)]
    return keras.Sequential(layers + head)
