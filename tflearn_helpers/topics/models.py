"""The Keras models the course trains and measures, one function each.

``resnet(RESNET50_BLOCKS, ...)`` is ``keras.applications.ResNet50(weights=None)`` itself.
Any other ``blocks`` builds the same bottleneck ResNet v1 recipe (He et al. 2015,
arXiv:1512.03385; the layer names of ``keras.applications``) with fewer blocks per stage,
e.g. ``(1, 1, 1, 1)``: a 14-layer ResNet whose graph traces several times faster, for the
smoke profile (lessons 00, 03). ``small_cnn`` is lesson 02's 3-block CNN (generated from the
lesson) for quick CPU timings, ``mlp`` a one-hidden-layer perceptron (the memory sizes of
lessons 01, 04 and 08-09), and ``named`` picks a model by the names the measuring programs take.
Every model returns logits (no softmax).
"""

from __future__ import annotations

from ..runtime import validate
from ..taught.lesson02 import small_bn_cnn

__all__ = [
    "MODEL_NAMES",
    "RESNET50_BLOCKS",
    "depth",
    "mlp",
    "named",
    "resnet",
    "small_cnn",
]

RESNET50_BLOCKS = (3, 4, 6, 3)
_RESNETS = {"resnet14": (1, 1, 1, 1), "resnet50": RESNET50_BLOCKS}  # blocks per stage, by name
MODEL_NAMES = ("small", *_RESNETS)
_FILTERS = (64, 128, 256, 512)
_EPS = 1.001e-5  # keras.applications' BatchNormalization epsilon


def depth(blocks) -> int:
    """Weighted layers of a bottleneck ResNet: stem conv + 3 per block + classifier."""
    return 2 + 3 * sum(_check_blocks(blocks))


def resnet(blocks=RESNET50_BLOCKS, input_shape=(224, 224, 3), classes: int = 1000):
    """A Keras ResNet (bottleneck v1) with ``blocks`` residual blocks in each of 4 stages."""
    import keras

    blocks = _check_blocks(blocks)
    validate.whole_number("classes", classes, minimum=2)
    if len(input_shape) != 3 or min(input_shape[:2]) < 32:
        raise ValueError(f"input_shape must be (height, width, channels), >= 32x32: {input_shape}")
    if blocks == RESNET50_BLOCKS:
        return keras.applications.ResNet50(
            weights=None, input_shape=tuple(input_shape), classes=classes,
            classifier_activation=None,
        )  # fmt: skip
    return _bottleneck_resnet(blocks, tuple(input_shape), classes)


def small_cnn(image_size: int, classes: int = 10):
    """Lesson 02's ``small_bn_cnn``: three conv-BatchNorm-ReLU-pool blocks (32, 64, 128 filters)
    and a linear classifier, for ``image_size`` x ``image_size`` RGB images (checked)."""
    validate.counts(image_size=image_size)
    return small_bn_cnn(image_size, classes)


def mlp(features: int, hidden: int, outputs: int):
    """``features`` -> ``hidden`` (ReLU) -> ``outputs``, in Keras 3."""
    import keras

    validate.counts(features=features, hidden=hidden, outputs=outputs)
    return keras.Sequential(
        [keras.Input((features,)), keras.layers.Dense(hidden, activation="relu"),
         keras.layers.Dense(outputs)]
    )  # fmt: skip


def named(name: str, image_size: int, classes: int = 10):
    """A model by the name the measuring programs take (``MODEL_NAMES``) for ``image_size`` images:
    ``"small"`` (:func:`small_cnn`), ``"resnet14"`` or ``"resnet50"``."""
    if name == "small":
        return small_cnn(image_size, classes)
    if name in _RESNETS:
        return resnet(_RESNETS[name], (image_size, image_size, 3), classes)
    raise ValueError(f"model must be one of {MODEL_NAMES}, got {name!r}")


def _bottleneck_resnet(blocks, input_shape, classes):
    import keras

    layers = keras.layers
    inputs = keras.Input(input_shape)
    x = layers.ZeroPadding2D(3, name="conv1_pad")(inputs)
    x = layers.Conv2D(64, 7, strides=2, name="conv1_conv")(x)
    x = layers.BatchNormalization(epsilon=_EPS, name="conv1_bn")(x)
    x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(1, name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    for stage, (filters, count) in enumerate(zip(_FILTERS, blocks, strict=True), start=2):
        for i in range(1, count + 1):
            stride = 2 if i == 1 and stage > 2 else 1
            x = _block(x, filters, stride, shortcut=i == 1, name=f"conv{stage}_block{i}")
    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    outputs = layers.Dense(classes, name="predictions")(x)
    return keras.Model(inputs, outputs, name=f"resnet{depth(blocks)}")


def _block(x, filters: int, stride: int, shortcut: bool, name: str):
    from keras import layers

    short = x
    if shortcut:
        short = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(x)
        short = layers.BatchNormalization(epsilon=_EPS, name=f"{name}_0_bn")(short)
    for k, (width, size, s) in enumerate(
        [(filters, 1, stride), (filters, 3, 1), (4 * filters, 1, 1)], start=1
    ):
        x = layers.Conv2D(width, size, strides=s, padding="same", name=f"{name}_{k}_conv")(x)
        x = layers.BatchNormalization(epsilon=_EPS, name=f"{name}_{k}_bn")(x)
        if k < 3:
            x = layers.Activation("relu", name=f"{name}_{k}_relu")(x)
    x = layers.Add(name=f"{name}_add")([short, x])
    return layers.Activation("relu", name=f"{name}_out")(x)


def _check_blocks(blocks) -> tuple[int, ...]:
    try:
        blocks = tuple(blocks)
    except TypeError:
        raise TypeError(f"blocks must be 4 whole numbers, got {blocks!r}") from None
    if len(blocks) != 4 or not all(validate.is_whole_number(b) for b in blocks):
        raise TypeError(f"blocks must be 4 whole numbers (one per stage), got {blocks!r}")
    if min(blocks) < 1:
        raise ValueError(f"every stage needs at least one block, got {blocks!r}")
    return blocks
