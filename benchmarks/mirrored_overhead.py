"""MirroredStrategy's overhead on simulated CPU devices, for ResNet-50 training (lesson 02).

Measures, side by side in one run, training images/s on 1 device (no strategy) and under
MirroredStrategy on 2 and 4 logical CPUs at the same global batch (strong scaling; lesson 02
measures weak scaling, a fixed per-replica batch, as its main view). The logical CPUs share
the same cores, so the ideal is *the same* images/s as one device: the shortfall is the
strategy's overhead (splitting the batch, N smaller kernels instead of one big one, the
all-reduce, per-replica bookkeeping).

Each device count runs in its own child process, one after the other: two MirroredStrategy
objects in one process share collective-op keys, and a second one with a different number
of devices fails ("joining a group with size 4, but that group has size 2",
tensorflow/tensorflow#61314). Each child configures its devices before TensorFlow starts.

    python benchmarks/mirrored_overhead.py                  # ResNet-50, 32x32, batch 32
    python benchmarks/mirrored_overhead.py --image 224 --batch 64 --steps 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from tflearn_helpers.taught.lesson01 import time_allreduce


def child(n: int, args) -> dict:
    """Build, trace and time the model on ``n`` devices (runs in a fresh process)."""
    from tflearn_helpers import setup_course

    course = setup_course(devices=n, scale="smoke", verbose=False)
    import keras
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # a new tf.function per all-reduce timing: retracing notes

    from tflearn_helpers import mirrored, models

    blocks = tuple(int(b) for b in args.blocks.split(","))
    x = tf.random.uniform((args.batch, args.image, args.image, 3))
    y = tf.random.uniform((args.batch,), maxval=10, dtype=tf.int32)
    strategy = tf.distribute.get_strategy() if n == 1 else course.mirrored_strategy(n)
    with strategy.scope():
        model = models.resnet(blocks, (args.image, args.image, 3), classes=10)
        optimizer = keras.optimizers.SGD(0.01, momentum=0.9)
        optimizer.build(model.trainable_variables)
    step = mirrored.make_train_step(strategy, model, optimizer, args.batch)
    it = iter(
        strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensors((x, y)).repeat())
    )
    start = time.perf_counter()
    float(step(next(it)))  # trace + first step, not timed
    traced = time.perf_counter() - start
    samples = []
    for _ in range(args.steps):
        start = time.perf_counter()
        float(step(next(it)))
        samples.append(time.perf_counter() - start)
    allreduce_s = 0.0
    if n > 1:  # the gradient's all-reduce alone, as one tensor (lesson 01's timing)
        floats = sum(int(tf.size(v)) for v in model.trainable_variables)
        allreduce_s = statistics.median(time_allreduce(strategy, floats, steps=3))
    return {"n": n, "kind": course.plan.kind, "onednn": course.onednn, "traced_s": traced,
            "step_s": statistics.median(samples), "allreduce_s": allreduce_s}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", type=int, default=32, help="image size (default 32)")
    parser.add_argument("--batch", type=int, default=32, help="global batch (default 32)")
    parser.add_argument("--devices", default="1,2,4", help="device counts (default 1,2,4)")
    parser.add_argument("--steps", type=int, default=6, help="timed steps per device count")
    parser.add_argument("--blocks", default="3,4,6,3", help="ResNet blocks per stage (ResNet-50)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(args.child, args)))
        return
    counts = [int(n) for n in args.devices.split(",")]
    if counts[0] != 1 or any(args.batch % n for n in counts) or args.steps < 1:
        parser.error("--devices must start with 1, each count must divide --batch, --steps >= 1")
    results = {}
    for n in counts:
        cmd = [sys.executable, __file__, "--child", str(n)] + sys.argv[1:]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
        if out.returncode or not lines:
            sys.exit(f"the {n}-device run failed:\n{out.stderr[-2000:]}")
        results[n] = json.loads(lines[-1][len("RESULT ") :])
        print(f"{n} device(s): traced in {results[n]['traced_s']:.0f} s, "
              f"{results[n]['step_s']:.2f} s per step")  # fmt: skip
    rate = {n: args.batch / r["step_s"] for n, r in results.items()}
    onednn = "on" if results[1]["onednn"] else "off"
    print(f"\nResNet ({args.blocks} blocks), {args.image}x{args.image}, global batch {args.batch}, "
          f"median of {args.steps} steps, {results[1]['kind']}, oneDNN {onednn}")  # fmt: skip
    print(f"{'devices':>8} {'images/s':>9} {'vs 1 device':>12} {'overhead':>9} {'all-reduce':>11}")
    for n in counts:
        ratio = rate[n] / rate[1]
        share = results[n]["allreduce_s"] / results[n]["step_s"]
        print(f"{n:>8} {rate[n]:>9.1f} {ratio:>11.2f}x {1 - ratio:>9.0%} {share:>11.0%}")
    print("(all-reduce: time to all-reduce the gradient's size alone, as a share of a step)")
    worst = max(1 - rate[n] / rate[1] for n in counts)
    verdict = "within" if worst < 0.15 else "above"
    print(f"largest overhead: {worst:.0%} ({verdict} the 15 % goal)")


if __name__ == "__main__":
    main()
