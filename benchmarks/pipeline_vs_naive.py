"""ResNet-50 on 2 devices: naive model parallelism vs GPipe-style pipelining (lesson 05).

Measured side by side in one run, steps interleaved so that load changes hit every setting
alike: the naive step as one traced graph; the same step with M = 2, 4 micro-batches as one
traced graph, whose independent micro-batch branches TensorFlow's executor may overlap; and
the threaded pipeline (one thread per stage) with M = 1, 2, 4, 8. Prints step time, the
throughput ratio against naive, and the measured idle share of the two devices against the
(K-1)/(M+K-1) model.

    python benchmarks/pipeline_vs_naive.py                   # 32x32 images, batch 16, 2 CPUs
    python benchmarks/pipeline_vs_naive.py --image 64 --batch 32 --steps 6
    python benchmarks/pipeline_vs_naive.py --intra-op-threads 1   # one core per stage
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", type=int, default=32, help="image side (>= 32)")
    parser.add_argument("--batch", type=int, default=16, help="global batch, divisible by each M")
    parser.add_argument("--steps", type=int, default=4, help="timed steps per setting")
    parser.add_argument("--micro", default="1,2,4,8", help="micro-batch counts to compare")
    parser.add_argument(
        "--intra-op-threads",
        type=int,
        default=0,
        help="threads per op (0: TensorFlow's default, all cores); 1 gives each stage about "
        "one core, like a device of its own",
    )
    parser.add_argument(
        "--max-graph-micro",
        type=int,
        default=4,
        help="largest M also run as one traced graph (each M is one more, bigger trace)",
    )
    args = parser.parse_args()
    micro = [int(m) for m in args.micro.split(",")]
    if args.image < 32 or args.steps < 1 or any(m < 1 or args.batch % m for m in micro):
        parser.error("need --image >= 32, --steps >= 1 and a --batch divisible by every M")

    from tflearn_helpers import setup_course

    if args.intra_op_threads:  # read by TensorFlow when its runtime starts
        os.environ["TF_NUM_INTRAOP_THREADS"] = str(args.intra_op_threads)

    course = setup_course(devices=2, verbose=False)  # before TensorFlow initialises
    import keras
    import tensorflow as tf

    from tflearn_helpers import model_parallel as mp
    from tflearn_helpers.measure import pipeline_bubble
    from tflearn_helpers.pipeline import Pipeline
    from tflearn_helpers.report import print_table
    from tflearn_helpers.timeline import Timeline

    keras.utils.set_random_seed(0)
    model = keras.applications.ResNet50(
        weights=None, input_shape=(args.image, args.image, 3), classes=10
    )
    x = tf.random.normal((args.batch, args.image, args.image, 3))
    y = tf.random.uniform((args.batch,), 0, 10, tf.int32)
    blocks = mp.block_boundaries(model)
    seg_ms = mp.time_segments(mp.segment_models(model, blocks), x)
    cut = [blocks[i] for i in mp.balance(seg_ms, 2)]
    stages = mp.split_model(model, cut, course.devices[:2])
    pipe = Pipeline(
        stages,
        keras.losses.SparseCategoricalCrossentropy(),
        lambda: keras.optimizers.SGD(0.01, momentum=0.9),
    )
    print(
        f"ResNet-50, {args.image}x{args.image}, batch {args.batch}, K = 2 on {course.devices[:2]}"
    )
    print(f"cut after {cut[0]} (balanced by measured forward time)")
    print(f"intra-op threads per op: {args.intra_op_threads or 'default (all cores)'}")

    graph_micro = [m for m in micro if 1 < m <= args.max_graph_micro]
    t0 = time.perf_counter()
    for m in [1, *graph_micro]:
        pipe.graph_step(x, y, m)
    for m in micro:
        pipe.train_step(x, y, m)
    print(f"tracing and warm-up: {time.perf_counter() - t0:.0f} s")

    names = ["naive (one graph)"] + [f"one graph M={m}" for m in graph_micro]
    names += [f"pipeline M={m}" for m in micro]
    samples = {n: [] for n in names}
    idle = {m: [] for m in micro}
    overlap = {m: [] for m in micro}
    for _ in range(args.steps):  # interleaved: one step of every setting per round
        for m in [1, *graph_micro]:
            start = time.perf_counter()
            float(pipe.graph_step(x, y, m))
            samples[names[0] if m == 1 else f"one graph M={m}"].append(time.perf_counter() - start)
        for m in micro:
            tl = Timeline()
            start = time.perf_counter()
            pipe.train_step(x, y, m, timeline=tl)
            samples[f"pipeline M={m}"].append(time.perf_counter() - start)
            idle[m].append(tl.idle_fraction())
            overlap[m].append(tl.overlap_seconds() / tl.span_seconds)

    naive = statistics.median(samples[names[0]])
    rows = []
    for name in names[: 1 + len(graph_micro)]:
        t = statistics.median(samples[name])
        m = 1 if name == names[0] else int(name.rsplit("=", 1)[1])
        rows.append(
            (
                name,
                f"{t * 1e3:.0f}",
                f"{args.batch / t:.1f}",
                f"{naive / t:.2f}",
                "",
                f"{pipeline_bubble(2, m):.2f}",
                "",
            )
        )
    for m in micro:
        t = statistics.median(samples[f"pipeline M={m}"])
        rows.append(
            (
                f"pipeline M={m}",
                f"{t * 1e3:.0f}",
                f"{args.batch / t:.1f}",
                f"{naive / t:.2f}",
                f"{statistics.median(idle[m]):.2f}",
                f"{pipeline_bubble(2, m):.2f}",
                f"{statistics.median(overlap[m]):.0%}",
            )
        )
    print_table(
        rows,
        (
            "setting",
            "step ms",
            "images/s",
            "throughput vs naive",
            "idle measured",
            "idle model",
            "both busy",
        ),
    )
    best = min(names[1:], key=lambda n: statistics.median(samples[n]))
    ratio = naive / statistics.median(samples[best])
    print(f"best micro-batched setting ({best}) vs naive: throughput ratio {ratio:.2f}x")


if __name__ == "__main__":
    main()
