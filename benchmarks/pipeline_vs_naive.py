"""ResNet-50 on 2 devices: naive model parallelism vs GPipe and 1F1B pipelining (lesson 05).

The same placement and schedules lesson 05 writes in its cells (stages built and called in
their device scopes, one thread per stage walking its list of F/B passes, tape.gradient with
output_gradients, gradients summed, one update per stage), measured side by side in one run
with steps interleaved so that load changes hit every setting alike. Prints step time, the
throughput ratio against naive (M = 1), the GPipe limit 2M/(M+1), and the measured idle
share of the two devices against the (K-1)/(M+K-1) model.

    python benchmarks/pipeline_vs_naive.py                   # 32x32 images, batch 16
    python benchmarks/pipeline_vs_naive.py --image 64 --batch 32 --steps 6
    python benchmarks/pipeline_vs_naive.py --intra-op-threads 1   # one core per stage
"""

from __future__ import annotations

import argparse
import functools
import os
import queue
import statistics
import time


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", type=int, default=32, help="image side (>= 32)")
    parser.add_argument("--batch", type=int, default=16, help="global batch, divisible by each M")
    parser.add_argument("--steps", type=int, default=4, help="timed steps per setting")
    parser.add_argument("--micro", default="2,4,8", help="micro-batch counts to compare")
    parser.add_argument(
        "--intra-op-threads",
        type=int,
        default=0,
        help="threads per op (0: TensorFlow's default, all cores); 1 gives each stage about "
        "one core, like a device of its own",
    )
    args = parser.parse_args()
    args.micro = [int(m) for m in args.micro.split(",")]
    if args.image < 32 or args.steps < 1 or any(m < 2 or args.batch % m for m in args.micro):
        parser.error("need --image >= 32, --steps >= 1 and a --batch divisible by every M >= 2")
    return args


def place_stages(tf, keras, mp, model, cuts, devices):
    stages = []
    for segment, device in zip(mp.segment_models(model, cuts), devices, strict=True):
        with tf.device(device):
            stage = keras.models.clone_model(segment)
        stage.set_weights(segment.get_weights())
        stages.append(stage)
    return stages


def gpipe(k, m):
    return [[("F", i) for i in range(m)] + [("B", i) for i in range(m)] for _ in range(k)]


def one_f_one_b(k, m):
    orders = []
    for s in range(k):
        warm = min(k - s - 1, m)
        order = [("F", i) for i in range(warm)]
        for i in range(warm, m):
            order += [("F", i), ("B", i - warm)]
        orders.append(order + [("B", i) for i in range(m - warm, m)])
    return orders


class Trainer:
    """The lesson's pipelined training step over placed stages."""

    def __init__(self, tf, keras, stages, devices):
        self.tf, self.stages, self.devices, self.k = tf, stages, devices, len(stages)
        loss = keras.losses.SparseCategoricalCrossentropy()
        self.forward = [
            tf.function(functools.partial(self._forward, s, loss)) for s in range(self.k)
        ]
        self.optimizers = []
        for stage, device in zip(stages, devices, strict=True):
            with tf.device(device):
                self.optimizers.append(keras.optimizers.SGD(0.01, momentum=0.9))
                self.optimizers[-1].build(stage.trainable_variables)
        self.apply = [tf.function(functools.partial(self._apply, s)) for s in range(self.k)]
        self.add = tf.function(lambda a, b: [u + v for u, v in zip(a, b, strict=True)])

    def _forward(self, s, loss, x, y):
        with self.tf.device(self.devices[s]):
            out = self.stages[s](x, training=True)
            return loss(y, out) if s == self.k - 1 else out

    def _apply(self, s, grads):
        with self.tf.device(self.devices[s]):
            variables = self.stages[s].trainable_variables
            self.optimizers[s].apply_gradients(zip(grads, variables, strict=True))

    def step(self, x, y, m, schedule, timeline):
        from tflearn_helpers.pipeline import run_concurrently

        tf, k = self.tf, self.k
        xs, ys = tf.split(x, m), tf.split(y, m)
        acts, grads_back = [queue.Queue() for _ in range(k)], [queue.Queue() for _ in range(k)]
        lane = [f"stage {s}" for s in range(k)]

        def run_stage(s):
            kept, total = {}, None
            variables = self.stages[s].trainable_variables
            for kind, i in schedule[s]:
                if kind == "F":
                    inp = xs[i] if s == 0 else acts[s].get(timeout=300)
                    with timeline.span(lane[s], f"F{i}"), tf.device(self.devices[s]):
                        with tf.GradientTape() as tape:
                            if s > 0:
                                tape.watch(inp)
                            out = self.forward[s](inp, ys[i])
                            out = out / m if s == k - 1 else out
                    kept[i] = (tape, inp, out)
                    if s < k - 1:
                        acts[s + 1].put(out)
                else:
                    tape, inp, out = kept.pop(i)
                    dout = None if s == k - 1 else grads_back[s].get(timeout=300)
                    with timeline.span(lane[s], f"B{i}"), tf.device(self.devices[s]):
                        x_grad, *g = tape.gradient(out, [inp, *variables], output_gradients=dout)
                        total = g if total is None else self.add(total, g)
                    if s > 0:
                        grads_back[s - 1].put(x_grad)
            return total

        grads = run_concurrently([functools.partial(run_stage, s) for s in range(k)], 600)
        for s in range(k):
            self.apply[s](grads[s])


def main() -> None:
    args = parse_args()
    from tflearn_helpers import setup_course

    if args.intra_op_threads:  # read by TensorFlow when its runtime starts
        os.environ["TF_NUM_INTRAOP_THREADS"] = str(args.intra_op_threads)
    course = setup_course(devices=2, verbose=False)  # before TensorFlow initialises
    import keras
    import tensorflow as tf

    from tflearn_helpers import model_parallel as mp
    from tflearn_helpers.measure import pipeline_bubble
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
    devices = course.devices[:2]
    trainer = Trainer(tf, keras, place_stages(tf, keras, mp, model, cut, devices), devices)
    print(f"ResNet-50, {args.image}x{args.image}, batch {args.batch}, K = 2 on {devices}")
    print(f"cut after {cut[0]} (balanced by measured forward time)")
    print(f"intra-op threads per op: {args.intra_op_threads or 'default (all cores)'}")
    settings = [("naive", 1, gpipe)] + [
        (f"{schedule.__name__} M={m}", m, schedule)
        for schedule in (gpipe, one_f_one_b)
        for m in args.micro
    ]
    t0 = time.perf_counter()
    for _, m, schedule in settings:
        trainer.step(x, y, m, schedule(2, m), Timeline())
    print(f"tracing and warm-up: {time.perf_counter() - t0:.0f} s")
    samples = {name: [] for name, _, _ in settings}
    idle = {name: [] for name, _, _ in settings}
    for _ in range(args.steps):  # interleaved: one step of every setting per round
        for name, m, schedule in settings:
            tl = Timeline()
            start = time.perf_counter()
            trainer.step(x, y, m, schedule(2, m), tl)
            samples[name].append(time.perf_counter() - start)
            idle[name].append(tl.idle_fraction())
    naive = statistics.median(samples["naive"])
    rows = []
    for name, m, _ in settings:
        t = statistics.median(samples[name])
        rows.append(
            (
                name,
                f"{t * 1e3:.0f}",
                f"{naive / t:.2f}",
                f"{2 * m / (m + 1):.2f}",
                f"{statistics.median(idle[name]):.2f}",
                f"{pipeline_bubble(2, m):.2f}",
            )
        )
    headers = ("setting", "step ms", "vs naive", "limit 2M/(M+1)", "idle measured", "idle model")
    print_table(rows, headers)
    best = min(settings[1:], key=lambda s: statistics.median(samples[s[0]]))
    ratio = naive / statistics.median(samples[best[0]])
    print(f"best pipelined setting ({best[0]}) vs naive: throughput ratio {ratio:.2f}x")


if __name__ == "__main__":
    main()
