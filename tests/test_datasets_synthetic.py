"""The small synthetic problem lesson 09 defines (generated into datasets and models)."""

from tflearn_helpers import datasets, models


def test_regression_batches_and_model_shapes():
    x, y = next(iter(datasets.regression_batches(4)))
    assert tuple(x.shape) == (4, 8) and tuple(y.shape) == (4, 1)
    assert tuple(models.regression_model()(x).shape) == (4, 1)
