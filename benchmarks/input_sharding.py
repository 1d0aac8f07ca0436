"""FILE against DATA sharding: what worker 0 of W pays for its share (lesson 02, section 2).

Lesson 02 prints this ratio at the smoke profile without asserting it: a few batches on a
busy machine can even invert it. Here the same rewrite (`input_ops.auto_shard_dataset`, what
each worker of a multi-worker strategy applies) times more images, in alternating rounds, and
checks what the lesson says: under DATA a worker decodes every image and keeps one in W, so
FILE delivers its share clearly faster (by about W with decoding dominant; asserted > 1.3x).

    python benchmarks/input_sharding.py                 # 512 224x224 JPEGs, 2 workers
    python benchmarks/input_sharding.py --images 1024 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time


def worker0_rate(files, policy, batches: int) -> float:
    """Images/s that worker 0 of 2 reads under ``policy``, stages sequential (decode only)."""
    import tensorflow as tf
    from tensorflow.python.distribute import input_ops

    from tflearn_helpers import input_pipeline

    ds = tf.data.Dataset.from_tensor_slices(files).interleave(tf.data.TFRecordDataset, 1)
    ds = ds.map(input_pipeline.record_parser()).repeat().batch(16)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = policy
    it = iter(input_ops.auto_shard_dataset(ds.with_options(options), 2, 0, 2))
    next(it)  # opening the files, first decode: not timed
    start = time.perf_counter()
    for _ in range(batches):
        next(it)
    return 16 * batches / (time.perf_counter() - start)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    import tensorflow as tf

    from tflearn_helpers import datasets, input_pipeline

    Policy = tf.data.experimental.AutoShardPolicy
    with tempfile.TemporaryDirectory() as directory:
        images = datasets.generated_images(args.images, 224, seed=3)
        files = input_pipeline.write_shards(images, directory, shards=8)
        runs = {"FILE": [], "DATA": []}
        for _ in range(args.rounds):  # in alternation: the machine's noise hits both alike
            for name in runs:
                runs[name].append(worker0_rate(files, getattr(Policy, name), args.batches))
    rate = {name: statistics.median(r) for name, r in runs.items()}
    ratio = rate["FILE"] / rate["DATA"]
    print(f"worker 0 of 2, images/s (median of {args.rounds}): FILE {rate['FILE']:.0f}, "
          f"DATA {rate['DATA']:.0f}; FILE / DATA = {ratio:.2f}x")  # fmt: skip
    if ratio <= 1.3:
        print("FAIL: FILE sharding should beat DATA clearly (DATA decodes every image)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
