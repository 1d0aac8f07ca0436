"""The course's data: generated images of learnable classes, and CIFAR-10 when the machine
can reach it (taught in lesson 02; lesson 03 reuses it); ``teacher_data``, learnable
feature vectors for lesson 01.

Generated images need no network: each class has its own colour and stripe direction,
blurred by noise and brightness jitter, so a network learns them in a few dozen steps and
accuracy visibly leaves chance. ``training_images`` never touches the network at the
smoke profile; elsewhere it tries CIFAR-10 (from Keras' cache, else a download with a
short timeout) and falls back to generated images with a message saying so.
"""

from __future__ import annotations

import math
import socket
from dataclasses import dataclass

import numpy as np

from ..runtime import validate

__all__ = [
    "Images",
    "cifar10",
    "generated_images",
    "reachable",
    "teacher_data",
    "training_images",
]

CIFAR10_HOST = ("www.cs.toronto.edu", 443)  # where keras.datasets.cifar10 downloads from


@dataclass(frozen=True)
class Images:
    """``x``: uint8 images (n, h, w, 3); ``y``: int32 labels; ``source`` says where from."""

    x: np.ndarray
    y: np.ndarray
    classes: int
    source: str


def generated_images(
    n: int, size: int = 32, classes: int = 4, seed: int = 0, noise: float = 0.25
) -> Images:
    """``n`` images of ``classes`` learnable classes (colour + stripe direction + noise)."""
    for name, value, low in (("n", n, 1), ("size", size, 8), ("classes", classes, 2)):
        validate.whole_number(name, value, minimum=low)
    if not 0 <= noise <= 1:
        raise ValueError(f"noise must be between 0 and 1, got {noise!r}")
    rng = np.random.default_rng(seed)
    palette = _palette(classes)
    y = rng.integers(0, classes, n).astype(np.int32)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size  # float32 keeps memory small
    angles = (np.pi * np.arange(classes) / classes).astype(np.float32)
    phase = rng.uniform(0, 2 * np.pi, (n, 1, 1)).astype(np.float32)
    along = np.cos(angles[y])[:, None, None] * xx + np.sin(angles[y])[:, None, None] * yy
    stripes = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * along + phase)  # (n, size, size)
    brightness = rng.uniform(0.7, 1.0, (n, 1, 1, 1)).astype(np.float32)
    colour = palette[y].astype(np.float32)[:, None, None, :]
    img = brightness * (0.6 * colour + 0.4 * stripes[..., None])
    img = (1 - noise) * img + noise * rng.random(img.shape, dtype=np.float32)
    x = np.clip(np.round(img * 255), 0, 255).astype(np.uint8)
    return Images(x, y, classes, f"generated ({classes} classes, seed {seed})")


def teacher_data(n: int, features: int = 20, classes: int = 10, seed: int = 0, teacher: int = 0):
    """``n`` examples (float32 x, int32 y) labelled by a fixed random network: learnable.

    ``seed`` draws the examples, ``teacher`` the labelling network: the same ``teacher``
    with another ``seed`` gives fresh examples of the same task (a held-out set).
    """
    for name, value, low in (("n", n, 1), ("features", features, 1), ("classes", classes, 2)):
        validate.whole_number(name, value, minimum=low)
    net = np.random.default_rng([teacher, features, classes])
    w1, w2 = net.standard_normal((features, 32)), net.standard_normal((32, classes))
    x = np.random.default_rng(seed).standard_normal((n, features)).astype(np.float32)
    y = np.argmax(np.tanh(x @ w1) @ w2, axis=1).astype(np.int32)
    return x, y


def training_images(
    n: int,
    size: int = 32,
    classes: int = 4,
    seed: int = 0,
    *,
    held_out: int = 0,
    real: bool,
    timeout: float = 10.0,
) -> tuple[Images, Images]:
    """``n`` training and ``held_out`` evaluation images: CIFAR-10 when ``real`` and
    reachable (its images are 32x32 whatever ``size`` says), else generated images.

    Prints one line saying which it is and why. Pass ``real=False`` at the smoke profile:
    then the network is never touched.
    """
    validate.whole_number("held_out", held_out, minimum=0)
    images = cifar10(timeout) if real else None
    if images is not None:
        if n + held_out > len(images.x):
            raise ValueError(
                f"CIFAR-10 has {len(images.x)} training images, asked for {n + held_out}"
            )
        print(f"data: CIFAR-10, {n} training + {held_out} held-out images of 32x32 (10 classes)")
    else:
        images = generated_images(n + held_out, size, classes, seed)
        why = "the smoke profile never downloads" if not real else "CIFAR-10 is not reachable"
        print(f"data: {images.source}, {n} + {held_out} held-out images of {size}x{size} ({why})")
    return _take(images, 0, n), _take(images, n, n + held_out)


def _take(images: Images, start: int, stop: int) -> Images:
    return Images(images.x[start:stop], images.y[start:stop], images.classes, images.source)


def cifar10(timeout: float = 10.0) -> Images | None:
    """CIFAR-10's training set from Keras' cache or the network; None (with a message) when
    neither works within ``timeout`` seconds per network operation."""
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    import keras

    cached = _keras_cache_has("cifar-10-batches-py")
    if not cached and not reachable(CIFAR10_HOST, timeout):
        print(f"offline: cannot reach {CIFAR10_HOST[0]} within {timeout:g} s")
        return None
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(timeout)
    try:
        (x, y), _ = keras.datasets.cifar10.load_data()
    except Exception as err:  # any download or unpacking failure means: use the fallback
        print(f"CIFAR-10 could not be loaded ({type(err).__name__}: {err})")
        return None
    finally:
        socket.setdefaulttimeout(previous)
    return Images(x.astype(np.uint8), y.reshape(-1).astype(np.int32), 10, "CIFAR-10")


def reachable(host_port: tuple[str, int], timeout: float) -> bool:
    """True when a TCP connection to ``host_port`` opens within ``timeout`` seconds."""
    try:
        with socket.create_connection(host_port, timeout=timeout):
            return True
    except OSError:
        return False


def _palette(classes: int) -> np.ndarray:
    """``classes`` well-separated RGB colours in [0, 1] (hues around the colour wheel)."""
    hues = np.arange(classes) / classes
    return np.stack([0.5 + 0.5 * np.cos(2 * math.pi * (hues - k / 3)) for k in range(3)], axis=1)


def _keras_cache_has(name: str) -> bool:
    import os

    base = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.isdir(os.path.join(base, "datasets", name))
