"""The small synthetic problems of lessons 08, 08b and 09 (datasets.py, appended part)."""

import numpy as np
import pytest

from tflearn_helpers import datasets, models


def test_teacher_classes_are_reproducible_and_learnable():
    x, y = datasets.teacher_classes(200, 10, 4, seed=3)
    x2, y2 = datasets.teacher_classes(200, 10, 4, seed=3)
    assert x.dtype == np.float32 and y.dtype == np.int32 and x.shape == (200, 10)
    assert np.array_equal(x, x2) and np.array_equal(y, y2)
    assert len(set(y.tolist())) == 4  # every class appears


def test_uniform_inputs_and_random_labels():
    x, _ = datasets.teacher_classes(100, 5, 3, seed=1, uniform=True)
    assert 0 <= x.min() and x.max() < 1
    _, y = datasets.teacher_classes(5000, 5, 3, seed=1, learnable=False)
    assert abs(np.bincount(y).min() - np.bincount(y).max()) < 300  # roughly uniform labels


@pytest.mark.parametrize("batch", [0, -3, 2.5, True])
def test_regression_batches_rejects_bad_batches(batch):
    with pytest.raises(ValueError, match="batch"):
        datasets.regression_batches(batch)


def test_regression_batches_and_model_shapes():
    x, y = next(iter(datasets.regression_batches(4)))
    assert tuple(x.shape) == (4, 8) and tuple(y.shape) == (4, 1)
    assert tuple(models.regression_model()(x).shape) == (4, 1)
