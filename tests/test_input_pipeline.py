"""tflearn_helpers.topics.input_pipeline: JPEG shards, their parser, timing."""

import numpy as np
import pytest
import tensorflow as tf

from tflearn_helpers import datasets, input_pipeline


@pytest.fixture(scope="module")
def images():
    return datasets.generated_images(32, 16, seed=1)


@pytest.fixture(scope="module")
def files(tmp_path_factory, images):
    return input_pipeline.write_shards(images, str(tmp_path_factory.mktemp("s")), 8)


def _read(files, size=None, with_index=True):
    ds = tf.data.TFRecordDataset(files).map(input_pipeline.record_parser(size, with_index))
    return ds.batch(4)


def test_shards_round_trip(files, images):
    assert len(files) == 8
    batches = list(_read(files))
    image, label, index = batches[0]
    assert image.shape == (4, 16, 16, 3) and image.dtype.name == "float32"
    assert label.dtype.name == "int32" and index.dtype.name == "int32"
    idx = np.concatenate([b[2].numpy() for b in batches])
    labels = np.concatenate([b[1].numpy() for b in batches])
    assert sorted(idx) == list(range(32))
    assert np.array_equal(labels, images.y[idx])  # each record keeps its own label
    # file k holds images k, k + 8, ... (what lesson 02's file sharding relies on)
    first_file = np.concatenate([b[2].numpy() for b in _read(files[:1])])
    assert set(first_file % 8) == {0}


def test_parser_resizes_and_leaves_out_the_index(files):
    image, label = next(iter(_read(files, size=8, with_index=False)))
    assert image.shape == (4, 8, 8, 3) and label.shape == (4,)


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="shards"):
        input_pipeline.write_shards(datasets.generated_images(4, 16), str(tmp_path), 5)
    with pytest.raises(TypeError, match="shards"):
        input_pipeline.write_shards(datasets.generated_images(4, 16), str(tmp_path), 2.0)
