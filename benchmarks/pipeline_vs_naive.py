"""ResNet-50 on 2 devices: naive model parallelism vs fill-drain and 1F1B pipelining (lesson 03).

The same placement and schedules lesson 03 writes in its cells (stages built and called in
their device scopes, one thread per stage walking its list of F/B passes, tape.gradient with
output_gradients, gradients summed in place, one update per stage); the schedules are the
lesson's own, ``fill_drain`` (GPipe's order, without recomputation) and ``one_f_one_b``,
generated from it into ``taught/lesson03.py``. Measured side by side in one
process with steps interleaved, so that load changes hit every setting alike. Prints step
time, the throughput ratio against naive (M = 1), the pipelining limit 2M/(M+1), the measured idle
share of the two devices against the (K-1)/(M+K-1) model, and the cores the process kept busy
(its CPU seconds over wall seconds: 2 stages on 2 free cores reach 2).

Without ``--intra-op-threads`` it runs twice, each in a fresh child process (TensorFlow reads
the thread setting once, when it starts): with one thread per op (each stage computes on one
core, like a device of its own: what lesson 03 uses) and with TensorFlow's default (every op
spread over all cores, so one stage alone already uses them), then compares the two naive runs.
Even with one thread per op, naive keeps more than one core busy: TensorFlow runs independent
ops (a convolution's input and kernel gradients) at the same time on its inter-op threads.
``--inter-op-threads 1`` stops that, and also stops the two stages from overlapping.

    python benchmarks/pipeline_vs_naive.py                       # 64x64 images, batch 32
    python benchmarks/pipeline_vs_naive.py --image 32 --batch 8 --micro 2,4   # smoke sizes
    python benchmarks/pipeline_vs_naive.py --intra-op-threads 1  # one setting, this process
    python benchmarks/pipeline_vs_naive.py --inter-op-threads 1  # one op at a time, too
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import queue
import statistics
import subprocess
import sys
import time

from tflearn_helpers.taught.lesson03 import fill_drain, from_neighbour, one_f_one_b, run_stages


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", type=int, default=64, help="image side (>= 32)")
    parser.add_argument("--batch", type=int, default=32, help="global batch, divisible by each M")
    parser.add_argument("--steps", type=int, default=4, help="timed steps per setting")
    parser.add_argument("--micro", default="2,4,8", help="micro-batch counts to compare")
    parser.add_argument(
        "--intra-op-threads",
        type=int,
        default=None,
        help="threads per op, in this process (0: TensorFlow's default, all cores); "
        "without it, both 1 and 0 run, each in a child process",
    )
    parser.add_argument(
        "--inter-op-threads",
        type=int,
        default=0,
        help="threads that run independent ops at the same time (0: TensorFlow's default); "
        "1 makes naive use one core, and also serialises the stages",
    )
    args = parser.parse_args(argv)
    args.micro = [int(m) for m in args.micro.split(",")]
    if args.image < 32 or args.steps < 1 or any(m < 2 or args.batch % m for m in args.micro):
        parser.error("need --image >= 32, --steps >= 1 and a --batch divisible by every M >= 2")
    return args


class Trainer:
    """The lesson's pipelined training step over stages placed on ``devices``."""

    def __init__(self, tf, keras, stages, devices):
        self.tf, self.stages, self.devices, self.k = tf, stages, devices, len(stages)
        self.loss = keras.losses.SparseCategoricalCrossentropy()
        self.forward = [tf.function(functools.partial(self._forward, s)) for s in range(self.k)]
        self.optimizers, self.sums = [], []
        for stage, device in zip(stages, devices, strict=True):
            with tf.device(device):  # optimizer, slots and gradient sums with the stage
                self.optimizers.append(keras.optimizers.SGD(0.01, momentum=0.9))
                self.optimizers[-1].build(stage.trainable_variables)
                self.sums.append([tf.Variable(tf.zeros_like(v)) for v in stage.trainable_variables])
        self.apply, self.accumulate, self.clear = (
            [tf.function(functools.partial(method, s)) for s in range(self.k)]
            for method in (self._apply, self._accumulate, self._clear)
        )

    def _forward(self, s, x, y):
        with self.tf.device(self.devices[s]):
            out = self.stages[s](x, training=True)
            return self.loss(y, out) if s == self.k - 1 else out

    def _apply(self, s):
        with self.tf.device(self.devices[s]):
            grads = [total.read_value() for total in self.sums[s]]
            variables = self.stages[s].trainable_variables
            self.optimizers[s].apply_gradients(zip(grads, variables, strict=True))

    def _accumulate(self, s, grads):
        with self.tf.device(self.devices[s]):
            for total, grad in zip(self.sums[s], grads, strict=True):
                total.assign_add(grad)

    def _clear(self, s):
        with self.tf.device(self.devices[s]):
            for total in self.sums[s]:
                total.assign(self.tf.zeros_like(total))

    def step(self, x, y, m, schedule, recorder):
        """One training step: every stage walks its schedule in a thread, then one update each."""
        links = dict(
            xs=self.tf.split(x, m),
            ys=self.tf.split(y, m),
            acts=[queue.Queue() for _ in range(self.k)],
            grads_back=[queue.Queue() for _ in range(self.k)],
        )
        run = functools.partial(
            self._run_stage, schedule=schedule, links=links, recorder=recorder, m=m
        )
        run_stages(run, self.k, timeout=600)  # one thread per stage, as lesson 03
        for s in range(self.k):
            self.apply[s]()

    def _run_stage(self, s, stop, schedule, m, links, recorder):
        """Stage s's forward and backward passes in ``order``, its gradients summed in place."""
        tf, kept = self.tf, {}
        variables = self.stages[s].trainable_variables
        self.clear[s]()
        for kind, i in schedule[s]:
            if stop.is_set():
                return  # another stage failed
            if kind == "F":
                inp = links["xs"][i] if s == 0 else from_neighbour(links["acts"][s], stop)
                with recorder.span(f"stage {s}", f"F{i}"), tf.device(self.devices[s]):
                    with tf.GradientTape() as tape:
                        tape.watch(inp)
                        out = self.forward[s](inp, links["ys"][i])
                        out = out / m if s == self.k - 1 else out
                kept[i] = (tape, inp, out)
                if s < self.k - 1:
                    links["acts"][s + 1].put(out)
            else:
                tape, inp, out = kept.pop(i)
                dout = None if s == self.k - 1 else from_neighbour(links["grads_back"][s], stop)
                with recorder.span(f"stage {s}", f"B{i}"), tf.device(self.devices[s]):
                    x_grad, *grads = tape.gradient(out, [inp, *variables], output_gradients=dout)
                    self.accumulate[s](grads)
                    del grads  # free them before the next micro-batch's
                if s > 0:
                    links["grads_back"][s - 1].put(x_grad)


def time_segments(segments, x, steps: int = 3) -> list[float]:
    """Median forward time (seconds, traced, inference mode) of each segment, feeding each
    the previous one's output; a cost to ``model_parallel.balance`` by."""
    import tensorflow as tf

    from tflearn_helpers import timing

    seconds = []
    for segment in segments:
        forward = tf.function(lambda a, segment=segment: segment(a, training=False))
        seconds.append(timing.time_steps(lambda f=forward, a=x: f(a), steps=steps).median)
        x = forward(x)
    return seconds


def build(args, devices):
    """ResNet-50 split in 2 stages balanced by measured forward time, and its data."""
    import keras
    import tensorflow as tf

    from tflearn_helpers import model_parallel

    keras.utils.set_random_seed(0)
    model = keras.applications.ResNet50(
        weights=None, input_shape=(args.image, args.image, 3), classes=10
    )
    x = tf.random.normal((args.batch, args.image, args.image, 3))
    y = tf.random.uniform((args.batch,), 0, 10, tf.int32)
    blocks = model_parallel.block_boundaries(model)
    seg_s = time_segments(model_parallel.segment_models(model, blocks), x)
    cuts = [blocks[i] for i in model_parallel.balance(seg_s, len(devices))]
    stages = []
    for segment, device in zip(model_parallel.segment_models(model, cuts), devices, strict=True):
        with tf.device(device):
            stage = keras.models.clone_model(segment)  # its variables are created here
        stage.set_weights(segment.get_weights())
        stages.append(stage)
    return Trainer(tf, keras, stages, devices), x, y, cuts


def measure_settings(trainer, x, y, settings, steps):
    """Per setting: wall seconds, process CPU seconds and idle share of each timed step."""
    from tflearn_helpers import timeline

    for _, m, schedule in settings:  # trace every setting first
        trainer.step(x, y, m, schedule(trainer.k, m), timeline.Timeline())
    samples = {name: dict(wall=[], cpu=[], idle=[]) for name, _, _ in settings}
    for _ in range(steps):  # interleaved: one step of every setting per round
        for name, m, schedule in settings:
            recorder = timeline.Timeline()
            wall, cpu = time.perf_counter(), time.process_time()
            trainer.step(x, y, m, schedule(trainer.k, m), recorder)
            samples[name]["wall"].append(time.perf_counter() - wall)
            samples[name]["cpu"].append(time.process_time() - cpu)
            samples[name]["idle"].append(recorder.idle_fraction())
    return samples


def table(settings, samples, k):
    """Rows of the side-by-side comparison, and {setting: step seconds} (medians)."""
    from tflearn_helpers import timing

    seconds = {name: statistics.median(samples[name]["wall"]) for name, _, _ in settings}
    rows = []
    for name, m, _ in settings:
        cores = sum(samples[name]["cpu"]) / sum(samples[name]["wall"])
        rows.append(
            (
                name,
                f"{seconds[name] * 1e3:.0f}",
                f"{seconds['naive'] / seconds[name]:.2f}",
                f"{k * m / (m + k - 1):.2f}",
                f"{statistics.median(samples[name]['idle']):.2f}",
                f"{timing.pipeline_bubble(k, m):.2f}",
                f"{cores:.2f}",
            )
        )
    return rows, seconds


def run_one_setting(args) -> dict:
    """Measure every setting in this process with ``args.intra_op_threads``; print the table."""
    from tflearn_helpers import report, setup_course

    if args.inter_op_threads:  # read once, when TensorFlow's runtime starts
        os.environ["TF_NUM_INTEROP_THREADS"] = str(args.inter_op_threads)
    course = setup_course(devices=2, intra_op_threads=args.intra_op_threads, verbose=False)
    trainer, x, y, cuts = build(args, course.devices[:2])
    settings = [("naive", 1, fill_drain)] + [
        (f"{schedule.__name__} M={m}", m, schedule)
        for schedule in (fill_drain, one_f_one_b)
        for m in args.micro
    ]
    threads = args.intra_op_threads or "default (all cores)"
    print(f"\nResNet-50, {args.image}x{args.image}, batch {args.batch}, K = 2, cut after {cuts[0]}")
    inter = args.inter_op_threads or "default"
    print(f"intra-op threads per op: {threads}; inter-op threads: {inter}")
    samples = measure_settings(trainer, x, y, settings, args.steps)
    rows, seconds = table(settings, samples, trainer.k)
    headers = ("setting", "step ms", "vs naive", "limit", "idle", "idle model", "cores busy")
    print(report.format_table(rows, headers))
    best = min(seconds, key=lambda name: seconds[name] if name != "naive" else float("inf"))
    ratio = seconds["naive"] / seconds[best]
    print(f"best pipelined setting ({best}) vs naive: throughput ratio {ratio:.2f}x")
    return dict(threads=args.intra_op_threads, seconds=seconds, best=best)


def run_both(argv) -> None:
    """One child per thread setting (1, then TensorFlow's default); compare the naive runs."""
    found = {}
    for threads in (1, 0):
        cmd = [sys.executable, __file__, *argv, "--intra-op-threads", str(threads)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=True)
        lines = out.stdout.strip().splitlines()
        print("\n".join(lines[:-1]))
        found[threads] = json.loads(lines[-1])
    one, default = found[1]["seconds"], found[0]["seconds"]
    print(
        f"\nnaive with default threads {default['naive'] * 1e3:.0f} ms, with one thread per op "
        f"{one['naive'] * 1e3:.0f} ms; best pipeline with one thread per op "
        f"({found[1]['best']}) {one[found[1]['best']] * 1e3:.0f} ms: "
        f"{default['naive'] / one[found[1]['best']]:.2f}x the default-threads naive throughput"
    )


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.intra_op_threads is None:
        run_both(argv)
    else:
        print(json.dumps(run_one_setting(args)))


if __name__ == "__main__":
    main()
