"""tflearn_helpers.topics.datasets: generated learnable images and the CIFAR-10 fallback."""

import numpy as np
import pytest

from tflearn_helpers import datasets


def test_generated_images_shape_range_and_determinism():
    a = datasets.generated_images(40, size=16, classes=3, seed=5)
    b = datasets.generated_images(40, size=16, classes=3, seed=5)
    assert a.x.shape == (40, 16, 16, 3) and a.x.dtype == np.uint8
    assert a.y.dtype == np.int32 and set(a.y) <= {0, 1, 2}
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    assert not np.array_equal(a.x, datasets.generated_images(40, 16, 3, seed=6).x)


def test_classes_are_learnable_from_mean_colour():
    imgs = datasets.generated_images(400, size=16, classes=4, seed=0)
    colour = imgs.x.reshape(400, -1, 3).mean(axis=1)
    centres = np.stack([colour[imgs.y == k].mean(axis=0) for k in range(4)])
    nearest = np.argmin(((colour[:, None] - centres[None]) ** 2).sum(-1), axis=1)
    assert (nearest == imgs.y).mean() > 0.9  # even the crudest classifier beats chance (0.25)


@pytest.mark.parametrize(
    "kwargs",
    [{"n": 0}, {"n": 2.5}, {"n": 4, "size": 4}, {"n": 4, "classes": 1}, {"n": 4, "noise": 2}],
)
def test_generated_images_rejects_bad_input(kwargs):
    with pytest.raises(ValueError):
        datasets.generated_images(**kwargs)


def test_training_images_never_touches_the_network_when_not_real(monkeypatch, capsys):
    monkeypatch.setattr(datasets, "cifar10", lambda *a: pytest.fail("network touched"))
    train, held = datasets.training_images(30, size=16, held_out=10, real=False)
    assert len(train.x) == 30 and len(held.x) == 10
    assert "smoke profile never downloads" in capsys.readouterr().out


def test_training_images_falls_back_when_offline(monkeypatch, capsys):
    monkeypatch.setattr(datasets, "_keras_cache_has", lambda name: False)
    monkeypatch.setattr(datasets, "reachable", lambda host, timeout: False)
    train, _ = datasets.training_images(8, size=16, real=True, timeout=0.1)
    out = capsys.readouterr().out
    assert "offline" in out and "not reachable" in out and train.source.startswith("generated")


def test_training_images_rejects_bad_held_out():
    with pytest.raises(ValueError, match="held_out"):
        datasets.training_images(8, held_out=-1, real=False)


def test_cifar10_rejects_bad_timeout():
    with pytest.raises(ValueError, match="timeout"):
        datasets.cifar10(timeout=0)


def test_reachable_is_false_for_a_closed_port():
    assert datasets.reachable(("127.0.0.1", 9), timeout=0.5) is False


def test_teacher_data_is_deterministic_and_uses_every_class():
    x, y = datasets.teacher_data(2000, features=5, classes=3, seed=4)
    assert x.shape == (2000, 5) and x.dtype == np.float32 and y.dtype == np.int32
    assert set(np.unique(y)) == {0, 1, 2}
    x2, y2 = datasets.teacher_data(2000, features=5, classes=3, seed=4)
    assert np.array_equal(x, x2) and np.array_equal(y, y2)
    x3, y3 = datasets.teacher_data(2000, features=5, classes=3, seed=4, teacher=1)
    assert np.array_equal(x, x3) and not np.array_equal(y, y3)  # another task, same examples


@pytest.mark.parametrize(
    "kwargs", [{"n": 0}, {"n": 2.5}, {"n": True}, {"n": 4, "classes": 1}, {"n": 4, "features": 0}]
)
def test_teacher_data_rejects_bad_sizes(kwargs):
    with pytest.raises(ValueError):
        datasets.teacher_data(**kwargs)
