"""Generated from lesson 03 by tools/save_taught.py: edit the lesson, then run it.

The lesson: notebooks/03_resnet50_model_parallel.ipynb.
SETUP: its setup cell's settings; SIZES: each pick(smoke=..., cpu=..., gpu=...) it makes.
Each definition is the lesson's, with the lesson's imports of what it uses inside its body.
"""

__all__ = [
    "SETUP",
    "SIZES",
    "balance",
    "fill_drain",
    "from_neighbour",
    "group_sums",
    "one_f_one_b",
    "run_stages",
    "segment_models",
]

SETUP = {"devices": 4, "gpu_memory_mb": 3328, "intra_op_threads": 1}
SIZES = {
    "IMG": {"smoke": 64, "cpu": 64, "gpu": 224},
    "BLOCKS": {"smoke": (1, 1, 1, 1), "cpu": (3, 4, 6, 3), "gpu": (3, 4, 6, 3)},
    "BATCH": {"smoke": 8, "cpu": 32, "gpu": 16},
    "MICRO": {"smoke": (1, 4), "cpu": (1, 4, 8), "gpu": (1, 2, 4, 8)},
    "STEPS": {"smoke": 2, "cpu": 3, "gpu": 10},
    "SEGMENT_STEPS": {"smoke": 3, "cpu": 5, "gpu": 5},
    "ACTIVATIONS_DOMINATE": {"smoke": False, "cpu": True, "gpu": True},
    "MEMORY_TOLERANCE": {"smoke": 0.5, "cpu": 0.3, "gpu": 0.3},
}


def segment_models(model, cuts):
    """The sub-models between consecutive cut layers: from the input to the first cut's output,
    from there to the next, ..., from the last cut to the model's output. Unplaced; they share
    the model's layers and weights."""
    import keras

    ends = [model.get_layer(c).output for c in cuts] + list(model.outputs)
    starts = list(model.inputs) + ends[:-1]
    return [keras.Model(start, end) for start, end in zip(starts, ends, strict=True)]


def group_sums(costs, last_segments):
    """The total cost of each stage, the stages ending at the segments `last_segments`."""
    edges = [-1, *last_segments, len(costs) - 1]
    return [sum(costs[a + 1 : b + 1]) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def balance(costs, k):
    """The last segment of each stage but the final one, for the k stages whose largest cost
    is smallest: every way to cut is tried."""
    import itertools

    cuts = itertools.combinations(range(len(costs) - 1), k - 1)
    return min(cuts, key=lambda last: max(group_sums(costs, last)))


def fill_drain(k, m):
    """Per stage: all forward passes, then all backward passes (GPipe's order)."""
    return [[("F", i) for i in range(m)] + [("B", i) for i in range(m)] for _ in range(k)]


def one_f_one_b(k, m):
    """Per stage: K-s-1 forwards to fill the pipe, then one forward and one backward in turn."""
    orders = []
    for s in range(k):
        warm = min(k - s - 1, m)
        order = [("F", i) for i in range(warm)]
        for i in range(warm, m):
            order += [("F", i), ("B", i - warm)]
        orders.append(order + [("B", i) for i in range(m - warm, m)])
    return orders


def run_stages(work, k, timeout):
    """Run work(s, stop) for each of k stages, each in a thread of its own. The first error (or
    TimeoutError) is raised at once, after `stop` is set, so that the other stages leave too."""
    import concurrent.futures
    import threading

    stop = threading.Event()
    pool = concurrent.futures.ThreadPoolExecutor(k)
    try:
        runs = [pool.submit(work, s, stop) for s in range(k)]
        done, stuck = concurrent.futures.wait(runs, timeout, concurrent.futures.FIRST_EXCEPTION)
        for run in done:
            run.result()  # raises a stage's error here, as soon as one fails
        if stuck:
            raise TimeoutError(f"{len(stuck)} stage(s) still running after {timeout} s")
    finally:
        stop.set()  # the others leave at their next pass, or while they wait (from_neighbour)
        pool.shutdown(wait=False, cancel_futures=True)


def from_neighbour(q, stop):
    """The next tensor a neighbouring stage puts in q; gives up once `stop` is set."""
    import contextlib
    import queue

    while not stop.is_set():
        with contextlib.suppress(queue.Empty):
            return q.get(timeout=0.1)
    raise RuntimeError("stopped: another stage failed, or the step timed out")
