"""tflearn_helpers.topics.models: ResNet-50 itself, the shallower variants, the small models."""

import pytest

from tflearn_helpers import models


def test_depth():
    assert models.depth(models.RESNET50_BLOCKS) == 50
    assert models.depth((1, 1, 1, 1)) == 14


def test_own_builder_with_resnet50_blocks_matches_keras_applications():
    import keras

    ours = models._bottleneck_resnet(models.RESNET50_BLOCKS, (32, 32, 3), 10)
    keras_r50 = models.resnet(models.RESNET50_BLOCKS, (32, 32, 3), classes=10)
    assert keras_r50.name == "resnet50"
    assert ours.count_params() == keras_r50.count_params()
    assert [w.shape for w in ours.weights] == [w.shape for w in keras_r50.weights]
    small = models.resnet((1, 1, 1, 1), (32, 32, 3), classes=4)
    assert small.output_shape == (None, 4) and small.name == "resnet14"
    assert isinstance(small.get_layer("conv5_block1_out"), keras.layers.Activation)


@pytest.mark.parametrize(
    "blocks, error",
    [
        ((1, 1, 1), TypeError),
        ((1, 0, 1, 1), ValueError),
        (3, TypeError),
        ((1.0, 1, 1, 1), TypeError),
    ],
)
def test_bad_blocks(blocks, error):
    with pytest.raises(error):
        models.resnet(blocks, (32, 32, 3), classes=4)


def test_bad_shape_and_classes():
    with pytest.raises(ValueError, match="classes"):
        models.resnet((1, 1, 1, 1), (32, 32, 3), classes=1)
    with pytest.raises(ValueError, match="input_shape"):
        models.resnet((1, 1, 1, 1), (16, 16, 3), classes=4)


def test_small_models_return_logits_of_the_asked_shape():
    import numpy as np

    assert models.small_cnn(16, classes=3)(np.zeros((2, 16, 16, 3))).shape == (2, 3)
    assert models.mlp(8, 4, 2)(np.zeros((5, 8))).shape == (5, 2)
    assert models.named("resnet50", 32).name == "resnet50"
    assert models.named("resnet14", 32).name == "resnet14"
    assert models.named("small", 16).count_params() == models.small_cnn(16).count_params()


def test_bad_names_and_sizes_say_what_is_allowed():
    with pytest.raises(ValueError, match="'small', 'resnet14', 'resnet50'"):
        models.named("vgg", 32)
    with pytest.raises(ValueError, match="hidden"):
        models.mlp(8, 0, 1)
