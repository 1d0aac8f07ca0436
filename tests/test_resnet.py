"""tflearn_helpers.resnet: ResNet-50 itself and the shallower variants."""

import pytest

from tflearn_helpers import resnet


def test_depth():
    assert resnet.depth(resnet.RESNET50_BLOCKS) == 50
    assert resnet.depth((1, 1, 1, 1)) == 14


def test_own_builder_with_resnet50_blocks_matches_keras_applications():
    import keras

    ours = resnet._bottleneck_resnet(resnet.RESNET50_BLOCKS, (32, 32, 3), 10)
    keras_r50 = resnet.resnet(resnet.RESNET50_BLOCKS, (32, 32, 3), classes=10)
    assert keras_r50.name == "resnet50"
    assert ours.count_params() == keras_r50.count_params()
    assert [w.shape for w in ours.weights] == [w.shape for w in keras_r50.weights]
    small = resnet.resnet((1, 1, 1, 1), (32, 32, 3), classes=4)
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
        resnet.resnet(blocks, (32, 32, 3), classes=4)


def test_bad_shape_and_classes():
    with pytest.raises(ValueError, match="classes"):
        resnet.resnet((1, 1, 1, 1), (32, 32, 3), classes=1)
    with pytest.raises(ValueError, match="input_shape"):
        resnet.resnet((1, 1, 1, 1), (16, 16, 3), classes=4)
