"""A guard against a crash of TensorFlow that Keras 3's ``fit`` triggers under a strategy.

Before its first step, ``fit`` (and ``evaluate``) under a ``tf.distribute`` strategy builds the
model from one batch: it makes the distributed iterator, draws that batch and drops the
iterator at once (``_maybe_symbolic_build``, then ``epoch_iterator.reset()``, in Keras 3's
``backend/tensorflow/trainer.py``). Dropped while its prefetch thread is inside ``GetNext``, a
``MultiDeviceIterator`` of TensorFlow 2.21 can take that thread down with it: the process
dies with SIGSEGV (``MultiDeviceBuffer::BackgroundThread`` calling into a freed iterator;
seen on 2 busy cores, about one run in five of exercise 04's cells; stacks in
docs/MEASURED.md). The guard takes that one batch from the dataset itself, with a plain
iterator: no multi-device iterator is made and dropped. Only the batch's shapes and dtypes
build the model, so training is unchanged.
"""

from __future__ import annotations

__all__ = ["install"]


def install() -> None:
    """Patch Keras' TensorFlow trainer once (``setup_course`` calls it)."""
    try:
        from keras.src.backend.tensorflow.trainer import TensorFlowTrainer
    except ImportError:  # Keras 2 (tf_keras) or another backend: nothing to guard
        return
    build = TensorFlowTrainer._maybe_symbolic_build
    if getattr(build, "guarded", False):
        return

    def guarded_build(self, iterator=None, data_batch=None):
        import tensorflow as tf

        dataset = getattr(getattr(iterator, "data_adapter", None), "get_tf_dataset", None)
        if dataset is not None and self._distribute_strategy is not None:
            dataset = dataset()
            if isinstance(dataset, tf.data.Dataset):  # not a DistributedDataset of the caller
                iterator, data_batch = None, next(iter(dataset.take(1)))
        return build(self, iterator=iterator, data_batch=data_batch)

    guarded_build.guarded, guarded_build.__wrapped__ = True, build
    TensorFlowTrainer._maybe_symbolic_build = guarded_build
