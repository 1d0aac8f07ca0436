"""Checks for exercises 02 (ResNet-50 data-parallel: input pipeline, checkpoints, BatchNorm,
gradient accumulation)."""

from __future__ import annotations

import tempfile

import numpy as np

from ..runtime import validate
from ..topics.datasets import generated_images
from ..topics.input_pipeline import write_shards
from . import exercise

__all__ = []


@exercise("02.1")
def file_sharded_pipeline(fn):
    """fn(files, num_workers, worker_index, batch_size) -> a worker's dataset of (image, label,
    index) batches. Run on fresh files, workers and batch size; its graph is read for a parallel,
    ordered interleave of the files and a parallel, ordered map."""
    if not callable(fn):
        return "pass the function itself, not a dataset it made"
    rng = np.random.default_rng()
    # two runs, with other workers and another batch: a number written into the answer fits one
    sizes = zip(rng.permutation([2, 3, 4])[:2], rng.permutation([2, 3, 4])[:2], strict=True)
    for workers, batch in sizes:
        shards, per_file = 2 * int(workers), int(rng.integers(2, 5))
        with tempfile.TemporaryDirectory() as directory:
            images = generated_images(shards * per_file, 16, seed=int(rng.integers(1000)))
            files = write_shards(images, directory, shards=shards)
            problem = _check_shards(
                fn, files, int(workers), int(batch), len(images.x)
            ) or _pipeline_graph_problem(fn, files, int(workers), int(batch))
        if problem:
            return problem
    return None


def _check_shards(fn, files: list[str], workers: int, batch: int, images: int):
    """A hint unless the workers together see each image once, a worker only its own files'
    images, in full batches but perhaps the last (or every image of its files but a last partial
    batch, as ``drop_remainder=True`` gives: both are allowed, whatever the sizes)."""
    shards, seen = len(files), []
    for w in range(workers):
        parts = list(fn(files, workers, w, batch))
        if not parts:
            return f"worker {w} got no images: a worker should see every image of its files once"
        if any(len(p) != 3 for p in parts):
            return "each batch should be (images, labels, indices): parse with with_index=True"
        sizes = [int(p[0].shape[0]) for p in parts]
        if any(size != batch for size in sizes[:-1]) or sizes[-1] > batch:
            return "batches should hold batch_size images each"
        if parts[0][0].dtype.name != "float32":
            return "images should come out as float32 (use the course's record parser)"
        idx = np.concatenate([p[2].numpy() for p in parts])
        if not set((idx % shards).tolist()) <= set(range(w, shards, workers)):
            return _other_files_problem(fn, files, workers, w, batch, idx, images)
        own = sum(1 for k in range(images) if k % shards % workers == w)  # its files' images
        if len(idx) not in (own, own - own % batch):  # all, or all but a last partial batch
            return (
                f"worker {w} got {len(idx)} images from files that hold {own}: a worker should "
                "see every image of its files once (a last partial batch may be dropped)"
            )
        seen.append(idx)
    everything = np.concatenate(seen)
    if len(np.unique(everything)) != len(everything):
        return "two workers got the same image: each needs its own share"
    return None


def _other_files_problem(fn, files: list[str], workers: int, w: int, batch: int, idx, images):
    """The hint for worker ``w``, which read images of files that are not its own: files
    that change from one build of its pipeline to the next (the list put in an order of its
    own by each worker), whole files but not the ones its share is, or parts of files."""
    shards = len(files)
    read = sorted(set((idx % shards).tolist()))
    for _ in range(4):  # a file list in a random order: another share on (almost) every build
        again = np.concatenate([p[2].numpy() for p in fn(files, workers, w, batch)])
        if sorted(set((again % shards).tolist())) != read:
            return (
                f"worker {w} read other files each time its pipeline was built (files {read}, "
                f"then {sorted(set((again % shards).tolist()))}): the workers only share the "
                "files out right if each cuts the same list, in the same order"
            )
    in_file = np.bincount(np.arange(images) % shards, minlength=shards)
    missing = sum(int(in_file[f]) for f in read) - len(idx)  # a last partial batch may go
    if not 0 <= missing < batch or len(set(idx.tolist())) != len(idx):
        return "a worker saw images from other workers' files: shard the files, not the images"
    own = sorted(range(w, shards, workers))
    return (
        f"worker {w} of {workers} read files {read} of the {shards}, not its own share of them "
        f"({len(own)} files): which files does the FILE policy give a worker?"
    )


def _pipeline_graph_problem(fn, files: list[str], workers: int, batch: int):
    """A hint unless the pipeline's graph reads files with a parallel, ordered interleave and
    decodes with a parallel, ordered map (read from the dataset ops ``fn`` builds in a graph)."""
    import tensorflow as tf

    with tf.Graph().as_default() as graph:
        ds = fn(files, workers, workers - 1, batch)
    nodes = graph.as_graph_def().node
    ops = {node.op for node in nodes}
    if not _ends_with_prefetch(nodes, getattr(getattr(ds, "_variant_tensor", None), "op", None)):
        return "the pipeline should end with prefetch, so input overlaps the training step"
    if not any(op.startswith("ParallelInterleaveDataset") for op in ops):
        return (
            "your worker reads its files one after another: how does tf.data read several "
            "files at once, in parallel?"
        )
    if _sharded_after_reading(nodes):
        return (
            "your worker opens every file and keeps a share of the records it read: which "
            "files does it need to open at all?"
        )
    if not any(op.startswith("ParallelMapDataset") for op in ops):
        return "your records are decoded one at a time: let the map decode several at once"
    for node in nodes:
        if (
            node.op.startswith(("ParallelInterleave", "ParallelMap"))
            and "deterministic" in node.attr
        ):
            if node.attr["deterministic"].s == b"false":
                return "your pipeline may hand out the records in another order on each run"
    return None


def _ends_with_prefetch(nodes, returned=None) -> bool:
    """True when the dataset returned (``returned``: its op; else any dataset op no other op
    reads) ends with a prefetch: options set after it change no data, so they may follow."""
    by_name = {node.name: node for node in nodes}
    consumed = {i.split(":")[0].lstrip("^") for node in nodes for i in node.input}
    ends = [n for n in nodes if n.op.endswith("Dataset") and n.name not in consumed]
    if returned is not None and returned.name in by_name:
        ends = [by_name[returned.name]]
    for node in ends:
        while node is not None and node.op in ("OptionsDataset", "ModelDataset"):
            node = by_name.get(node.input[0].split(":")[0]) if node.input else None
        if node is not None and node.op.startswith("PrefetchDataset"):
            return True
    return False


def _sharded_after_reading(nodes) -> bool:
    """True when a ShardDataset op sits downstream of the interleave that reads the files (a
    shard upstream of it, or a list of files cut in Python, is what a worker should do)."""
    by_name = {node.name: node for node in nodes}
    upstream, node = set(), next(n for n in nodes if n.op.startswith("ParallelInterleave"))
    while node.input:
        node = by_name.get(node.input[0].split(":")[0].lstrip("^"))
        if node is None:
            break
        upstream.add(node.name)
    return any(n.op == "ShardDataset" and n.name not in upstream for n in nodes)


@exercise("02.2")
def resume_from_checkpoint(fn):
    """fn(directory, model, optimizer) -> the step it resumes from, after restoring the newest
    of several checkpoints saved every few steps (how many: the check's choice)."""
    if not callable(fn):
        return "pass the function itself, not its result"
    rng, steps = np.random.default_rng(), []
    for _ in range(2):  # two runs that resume from other steps: a number written in fits one
        every = int(rng.integers(2, 6))  # a checkpoint every few steps: its number is not the step
        total = int(rng.integers(2 * every, 5 * every))
        while total // every * every in steps:
            total += every
        steps.append(total // every * every)
        with tempfile.TemporaryDirectory() as directory:
            problem = _check_resume(fn, directory, rng, every, total)
        if problem:
            return problem
    return None


def _check_resume(fn, directory: str, rng, every: int, total: int):
    import keras
    import tensorflow as tf

    model, optimizer = _tiny(keras)
    ckpt = tf.train.Checkpoint(model=model, optimizer=optimizer)
    manager = tf.train.CheckpointManager(ckpt, directory, max_to_keep=3)
    for step in range(1, total + 1):
        _train_step(model, optimizer, seed=int(rng.integers(1 << 30)))
        if step % every == 0:
            manager.save()
            saved, saved_step = [w.copy() for w in model.get_weights()], step
    fresh, fresh_opt = _tiny(keras)
    answer = fn(directory, fresh, fresh_opt)
    if not validate.is_whole_number(answer):
        return "return the restored step as an int (read it from the optimizer)"
    restored = int(fresh_opt.iterations.numpy())
    if restored == 0:
        return "the optimizer's step counter was not restored: put the optimizer in the checkpoint"
    if restored != saved_step or not all(
        np.array_equal(a, b) for a, b in zip(fresh.get_weights(), saved, strict=True)
    ):
        return "the model's weights are not the newest saved ones: restore the latest checkpoint"
    if int(answer) != saved_step:
        return (
            "the checkpoint was restored, but the step you returned is not the restored one: "
            "where does the checkpoint keep the step?"
        )
    return None


@exercise("02.3")
def synchronized_normalization(fn, strategy):
    """normalize(strategy, x) -> the replicas' BatchNorm outputs as strategy.run returns them
    (one per replica, on its device), together what one device gives for the whole batch. Run
    on a fresh batch whose replicas' slices have means of their own."""
    import tensorflow as tf

    if not callable(fn):
        return "pass the function itself, not its result"
    if not isinstance(strategy, tf.distribute.Strategy) or strategy.num_replicas_in_sync < 2:
        return "pass a MirroredStrategy with at least two replicas as the second argument"
    n, rng = strategy.num_replicas_in_sync, np.random.default_rng()
    # three features always: a second MirroredStrategy in the same program (the notebook's
    # cell run again) numbers its all-reduces afresh, and one of another shape fails there
    per_replica = int(rng.integers(4, 11))
    x = rng.standard_normal((per_replica * n, 3)).astype(np.float32)
    x += np.repeat(rng.uniform(-4, 4, n).astype(np.float32), per_replica)[:, None]
    answer = fn(strategy, x)
    if answer is None:
        return "your function returns None: write its body"
    problem = _per_replica_problem(strategy, answer)
    if problem:
        return problem
    got = np.concatenate([np.asarray(o) for o in strategy.experimental_local_results(answer)])
    if got.shape != x.shape:
        return f"together your replicas' outputs are shaped {got.shape}, the batch {x.shape}"
    return _normalized_problem(got, x, n)


def _per_replica_problem(strategy, answer):
    """A hint unless ``answer`` holds one output per replica, each on its replica's device."""
    import tensorflow as tf

    if not isinstance(answer, tf.distribute.DistributedValues):
        return (
            "return what strategy.run gives back (one output per replica): your answer is "
            f"{type(answer).__name__}, computed in one place"
        )
    parts = strategy.experimental_local_results(answer)
    wanted = [tf.DeviceSpec.from_string(d) for d in strategy.extended.worker_devices]
    where = [tf.DeviceSpec.from_string(getattr(p, "device", "") or "") for p in parts]
    if [(d.device_type, d.device_index) for d in where] != [
        (d.device_type, d.device_index) for d in wanted
    ]:
        return "your replicas' outputs are not each on its replica's device: where did they run?"
    return None


def _normalized_problem(got, x, n: int):
    import keras

    one_device = np.asarray(keras.layers.BatchNormalization()(x, training=True))
    if np.allclose(got, one_device, atol=1e-3):
        return None
    per_slice = np.concatenate(
        [np.asarray(keras.layers.BatchNormalization()(part, training=True))
         for part in np.split(x, n)]
    )  # fmt: skip
    if np.allclose(got, per_slice, atol=1e-3):
        return "each replica normalised with its own slice's statistics: synchronize them"
    return "not what one device gives: BatchNorm in training mode, on every replica, in order"


def _tiny(keras):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    optimizer = keras.optimizers.Adam(0.1)
    optimizer.build(model.trainable_variables)
    return model, optimizer


def _train_step(model, optimizer, seed: int) -> None:
    import tensorflow as tf

    x = tf.random.stateless_normal((8, 4), seed=(seed, 0))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))


@exercise("02.4")
def accumulated_update(fn, strategy):
    """accumulated_step(strategy, model, optimizer, micro_batches) -> None: one update that
    averages the gradients of K distributed micro-batches, as one large batch would give."""
    import tensorflow as tf

    if not callable(fn):
        return "pass the function itself, not its result"
    if not isinstance(strategy, tf.distribute.Strategy) or strategy.num_replicas_in_sync < 2:
        return "pass a MirroredStrategy with at least two replicas as the second argument"
    return _check_accumulation(fn, strategy)


_K, _MICRO = 4, 4  # micro-batches, and the examples each replica gets of each


def _check_accumulation(fn, strategy):
    import keras
    import tensorflow as tf

    n, seed = strategy.num_replicas_in_sync, int(np.random.default_rng().integers(1 << 30))
    x = tf.random.stateless_normal((_K * _MICRO * n, 6), seed=(seed, 1))
    y = tf.random.stateless_uniform((_K * _MICRO * n,), (seed, 2), maxval=3, dtype=tf.int32)
    model, watch = _watched_model(keras, tf, strategy, seed)
    start = [w.copy() for w in model.get_weights()]
    with strategy.scope():
        optimizer = keras.optimizers.SGD(0.5)
        optimizer.build(model.trainable_variables)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(_MICRO * n)
    micro_batches = list(strategy.experimental_distribute_dataset(data))
    watch["seen"].clear()
    fn(strategy, model, optimizer, micro_batches)
    applied = int(optimizer.iterations.numpy())
    if applied == 0:
        return "the weights were never updated: apply the accumulated gradients once at the end"
    if applied > 1:
        return (
            f"the optimizer took {applied} steps for {_K} micro-batches: add the gradients up "
            "and apply them once"
        )
    if set(watch["seen"]) != set(range(n)):
        return "the micro-batches were not computed on every replica: use strategy.run"
    return _forward_passes_problem(strategy, watch) or _update_problem(
        keras, tf, model, start, x, y, n
    )


def _forward_passes_problem(strategy, watch):
    """A hint unless each replica ran one forward pass per micro-batch, on its share of it."""
    calls = [float(v) for v in strategy.experimental_local_results(watch["calls"])]
    largest = [float(v) for v in strategy.experimental_local_results(watch["largest"])]
    if calls != [float(_K)] * len(calls) or max(largest) > _MICRO:
        return (
            f"for {_K} micro-batches your replicas ran {sorted(set(int(c) for c in calls))} "
            f"forward pass(es) on up to {int(max(largest))} examples: accumulation holds one "
            "micro-batch at a time on each replica, never the large batch"
        )
    return None


def _update_problem(keras, tf, model, start, x, y, n: int):
    got = _update(start, model.get_weights())
    want = _update(start, _one_device_step(keras, tf, model, start, x, y))
    size = np.linalg.norm(want)
    if np.linalg.norm(got - want) <= 1e-4 * size:
        return None
    for factor, hint in (
        (_K, "one update, but too large by the number of micro-batches: average, do not sum"),
        (n, "too large by the number of replicas: divide each loss by the global micro-batch"),
        (_K * n, "too large: average over the micro-batches and over the global micro-batch"),
        (1 / _K, "too small by the number of micro-batches: each micro-batch counts once"),
    ):
        if np.linalg.norm(got - factor * want) <= 1e-3 * factor * size:
            return hint
    as_probabilities = _update(start, _one_device_step(keras, tf, model, start, x, y, False))
    if np.linalg.norm(got - as_probabilities) <= 1e-3 * np.linalg.norm(as_probabilities):
        return (
            "one update, the one a loss that reads the model's outputs as probabilities gives: "
            "what does the model's last layer output?"
        )
    return "one update, but not the large batch's: the mean loss of each micro-batch, averaged"


def _watched_model(keras, tf, strategy, seed: int):
    """A small classifier under ``strategy`` whose first layer records which replicas ran its
    forward pass, and (in per-replica variables) how often and on how many examples at most."""
    watch = {"seen": []}
    with strategy.scope():
        for name in ("calls", "largest"):
            watch[name] = tf.Variable(
                0.0,
                trainable=False,
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.SUM,
            )

    class Watch(keras.layers.Layer):
        def call(self, inputs):
            context = tf.distribute.get_replica_context()
            if context is not None and tf.distribute.has_strategy():
                watch["seen"].append(tf.get_static_value(context.replica_id_in_sync_group))
                examples = tf.cast(tf.shape(inputs)[0], tf.float32)
                watch["calls"].assign_add(1.0)
                watch["largest"].assign(tf.maximum(watch["largest"], examples))
            return inputs

    keras.utils.set_random_seed(seed % 10_000)
    with strategy.scope():
        model = keras.Sequential(
            [keras.Input((6,)), Watch(), keras.layers.Dense(8, "tanh"), keras.layers.Dense(3)]
        )
    return model, watch


def _one_device_step(keras, tf, model, start, x, y, from_logits=True):
    """The weights after one SGD step on the whole batch, on one device, from ``start``
    (``from_logits=False``: what a loss that takes the outputs for probabilities gives)."""
    twin = keras.models.clone_model(model)
    twin.set_weights(start)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=from_logits)
    with tf.GradientTape() as tape:
        loss = loss_fn(y, twin(x, training=True))
    grads = tape.gradient(loss, twin.trainable_variables)
    keras.optimizers.SGD(0.5).apply_gradients(zip(grads, twin.trainable_variables, strict=True))
    return twin.get_weights()


def _update(before, after) -> np.ndarray:
    return np.concatenate(
        [(np.asarray(b) - np.asarray(a)).ravel() for a, b in zip(before, after, strict=True)]
    )
