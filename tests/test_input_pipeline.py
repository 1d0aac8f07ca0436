"""tflearn_helpers.input_pipeline: JPEG shards, sharding policies, timing."""

import numpy as np
import pytest

from tflearn_helpers import input_pipeline as ip
from tflearn_helpers.datasets import generated_images


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return ip.write_shards(generated_images(32, 16, seed=1), str(tmp_path_factory.mktemp("s")), 8)


def _indices(ds):
    return np.concatenate([b[2].numpy() for b in ds])


def test_shards_round_trip(files):
    batch = next(iter(ip.make_pipeline(files, 4, with_index=True)))
    images, labels, idx = batch
    assert images.shape == (4, 16, 16, 3) and images.dtype.name == "float32"
    assert labels.dtype.name == "int32" and len(files) == 8
    assert sorted(_indices(ip.make_pipeline(files, 4, with_index=True))) == list(range(32))


@pytest.mark.parametrize("policy", ["file", "data"])
def test_workers_get_disjoint_complete_shares(files, policy):
    shares = [
        _indices(
            ip.make_pipeline(
                files, 2, num_workers=4, worker_index=w, policy=policy, with_index=True
            )
        )
        for w in range(4)
    ]
    together = np.concatenate(shares)
    assert sorted(together) == list(range(32))
    if policy == "file":  # file k holds images k, k + 8, ...
        assert all(set(s % 8) <= {w, w + 4} for w, s in enumerate(shares))


def test_off_policy_gives_everyone_everything(files):
    ds = ip.make_pipeline(files, 4, num_workers=4, worker_index=3, policy="off", with_index=True)
    assert len(_indices(ds)) == 32


def test_resize_and_prefetch_switch(files):
    ds = ip.make_pipeline(files, 2, size=8, prefetch=False)
    assert next(iter(ds))[0].shape == (2, 8, 8, 3)
    assert "Prefetch" not in type(ds).__name__
    assert "Prefetch" in type(ip.make_pipeline(files, 2)).__name__


def test_images_per_second_counts_and_runs_out(files):
    assert ip.images_per_second(ip.make_pipeline(files, 4), batches=3) > 0
    with pytest.raises(ValueError, match="ran out"):
        ip.images_per_second(ip.make_pipeline(files, 4), batches=50)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"policy": "rows"}, "policy"),
        ({"num_workers": 2, "worker_index": 2}, "worker_index"),
        ({"num_workers": 9}, "one file per worker"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_make_pipeline_rejects_bad_input(files, kwargs, match):
    args = {"batch_size": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        ip.make_pipeline(files, **args)


def test_bad_inputs_elsewhere(tmp_path, files):
    with pytest.raises(ValueError, match="no files"):
        ip.make_pipeline([], 2)
    with pytest.raises(ValueError, match="shards"):
        ip.write_shards(generated_images(4, 16), str(tmp_path), 5)
    with pytest.raises(ValueError, match="batches"):
        ip.images_per_second(ip.make_pipeline(files, 2), batches=0)
