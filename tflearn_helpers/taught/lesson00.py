"""Generated from lesson 00 by tools/save_taught.py: edit the lesson, then run it.

The lesson: notebooks/00_devices_and_setup.ipynb.
SETUP: its setup cell's settings; SIZES: each pick(smoke=..., cpu=..., gpu=...) it makes.
Each definition is the lesson's, with the lesson's imports of what it uses inside its body.
"""

__all__ = ["SETUP", "SIZES", "executed_nodes", "read_by_backward"]

SETUP = {"devices": 4, "programs": True}
SIZES = {
    "MATMUL_SIZE": {"smoke": 1024, "cpu": 1536, "gpu": 4096},
    "TIMED_CALLS": {"smoke": 5, "cpu": 10, "gpu": 20},
    "ONEDNN_RUN": {
        "smoke": ("resnet14", 32, 8, 2),
        "cpu": ("resnet50", 32, 32, 3),
        "gpu": ("resnet50", 64, 32, 5),
    },
    "PROBE_BLOCKS": {"smoke": (1, 1, 1, 1), "cpu": (3, 4, 6, 3), "gpu": (3, 4, 6, 3)},
    "PROBE_BATCHES": {"smoke": (8, 32), "cpu": (8, 32), "gpu": (8, 16, 32)},
    "KEPT_RUN": {"smoke": ("small", 64, 16), "cpu": ("small", 64, 16), "gpu": ("resnet50", 64, 8)},
}


def executed_nodes(fn, *args):
    """Call the tf.function fn once; return the nodes of the partition graphs TensorFlow ran."""
    from tensorflow.python.eager import context

    ctx = context.context()
    ctx.enable_run_metadata()  # record what the runtime executes, graph by graph
    try:
        ctx.export_run_metadata()  # empty the record of what earlier ops left there
        fn(*args)
        metadata = ctx.export_run_metadata()
    finally:
        ctx.disable_run_metadata()
    return [node for f in metadata.function_graphs for g in f.partition_graphs for node in g.node]


def read_by_backward(model, batch):
    """Bytes of the forward tensors, computed from the batch, that the backward pass of a traced
    training step reads (the batch itself left out): they stay alive until it has used them."""
    import keras
    import tensorflow as tf

    loss_fn = keras.losses.SparseCategoricalCrossentropy()

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        return tape.gradient(loss, model.trainable_variables)

    shape = (batch, *model.inputs[0].shape[1:])
    graph = step.get_concrete_function(
        tf.TensorSpec(shape, model.inputs[0].dtype), tf.TensorSpec((batch,), tf.int32)
    ).graph
    ops = graph.get_operations()  # in the order they were made: the forward pass first
    first = next(i for i, op in enumerate(ops) if op.name.startswith("gradient_tape/"))
    forward = {t.op.name for t in graph.inputs[:2]}  # x, y (the other inputs: the variables)
    for op in ops[:first]:  # the forward ops computed from the batch, not from weights alone
        if any(t.op.name in forward for t in op.inputs):
            forward.add(op.name)
    kept = {}
    for op in ops[first:]:  # the backward pass: which forward tensors does it read?
        if op.type in ("Shape", "ShapeN", "Size", "Rank"):  # metadata only, folded when static
            continue
        for t in op.inputs:
            while t.op.type == "Identity":  # the same buffer under another name
                t = t.op.inputs[0]
            if t.op.name not in forward or t.op.type == "Placeholder" or not t.shape.rank:
                continue
            if t.shape[0] == batch:  # per-example tensors (not a batch statistic)
                kept[t.name] = t.shape.num_elements() * t.dtype.size
    return sum(kept.values())
