"""The small synthetic problems of lessons 08, 08b and 09 (datasets.py, appended part)."""

import pytest

from tflearn_helpers import datasets, models


@pytest.mark.parametrize("batch", [0, -3, 2.5, True])
def test_regression_batches_rejects_bad_batches(batch):
    with pytest.raises(ValueError, match="batch"):
        datasets.regression_batches(batch)


def test_regression_batches_and_model_shapes():
    x, y = next(iter(datasets.regression_batches(4)))
    assert tuple(x.shape) == (4, 8) and tuple(y.shape) == (4, 1)
    assert tuple(models.regression_model()(x).shape) == (4, 1)
