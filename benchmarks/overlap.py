"""Does TensorFlow overlap the gradient all-reduce with the backward pass? Measured side by side.

Two MultiWorkerMirroredStrategy workers (RING, one core and one intra-op thread each, two
inter-op threads) in a network namespace whose loopback is shaped with ``tc tbf``
(``cluster.network``), at a rate where the all-reduce of the gradients takes about as long as
a step's compute. The mechanism under test is TensorFlow's own: inside a ``tf.function``,
``ReplicaContext.all_reduce`` of the gradient list with
``CommunicationOptions(bytes_per_pack=P)`` reverses the list (the last layer's gradients,
which backprop computes first, come first), cuts it into packs of about P bytes and issues
one collective per pack, each fed only by its own gradients
(``CollectiveAllReduce._all_reduce`` in ``tensorflow/python/distribute/cross_device_ops.py``,
``CollectiveReplicaLauncher.batch_all_reduce`` in ``cross_device_utils.py``). The packs run
one after another (one ordering token), but the first can start while earlier layers'
gradients are still being computed. ``bytes_per_pack=0`` packs everything into one
collective, which waits for the last gradient: the control without overlap.

It prints, per packing, the median of consecutive steps over interleaved rounds, the ratio
step(one pack) / step(packs) (the goal where compute and communication are equal: >= 1.25x),
the model max(compute, all-reduce) + what stays exposed, and, from a profiler trace of one
packed step on worker 0, how long collective ops ran while backward ops (those under the
``gradient_tape/`` name scope) were running: that time is asserted > 0 for the packed step.

  python benchmarks/overlap.py [--rate 600] [--width 512] [--depth 6] [--batch 1024]
                               [--packs 0,2000000,1] [--rounds 5] [--steps 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tflearn_helpers import cluster, report  # noqa: E402

WORKER = r"""
import argparse, json, time
import numpy as np
import tensorflow as tf
from tflearn_helpers import cluster

p = argparse.ArgumentParser()
for name in ("--width", "--depth", "--batch", "--steps", "--rounds"):
    p.add_argument(name, type=int, required=True)
p.add_argument("--packs", required=True)
p.add_argument("--logdir", required=True)
args = p.parse_args()
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)
ring = tf.distribute.experimental.CommunicationImplementation.RING
strategy = tf.distribute.MultiWorkerMirroredStrategy(
    communication_options=tf.distribute.experimental.CommunicationOptions(implementation=ring))
task = strategy.cluster_resolver.task_id
sizes = [256] + [args.width] * args.depth + [10]
rng = np.random.default_rng(0)
init = [rng.normal(0, (2 / a) ** 0.5, (a, b)).astype("float32") for a, b in zip(sizes, sizes[1:])]
with strategy.scope():
    weights = [tf.Variable(w) for w in init]
local = [tf.Variable(w) for w in init]
x = tf.random.stateless_normal((args.batch, 256), seed=(task, 1))
y = tf.random.stateless_uniform((args.batch,), (task, 2), maxval=10, dtype=tf.int32)


def loss_fn(ws, x, y):
    for w in ws[:-1]:
        x = tf.nn.relu(x @ w)
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, x @ ws[-1]))


def distributed(bytes_per_pack):
    options = tf.distribute.experimental.CommunicationOptions(bytes_per_pack=bytes_per_pack)

    @tf.function
    def step():
        def replica_step():
            with tf.GradientTape() as tape:
                loss = loss_fn(weights, x, y)
            grads = tape.gradient(loss, weights)
            grads = tf.distribute.get_replica_context().all_reduce("MEAN", grads, options=options)
            for w, g in zip(weights, grads):
                w.assign_sub(0.01 * g)
            return loss
        return strategy.run(replica_step)
    return step


@tf.function
def all_reduce(values):
    def replica_fn(v):
        with tf.device(strategy.extended.worker_devices[0]):  # a collective needs a placed value
            v = tf.nest.map_structure(tf.identity, v)
        return tf.distribute.get_replica_context().all_reduce("SUM", v)
    return strategy.run(replica_fn, (values,))


@tf.function
def compute_alone():
    with tf.GradientTape() as tape:
        loss = loss_fn(local, x, y)
    for w, g in zip(local, tape.gradient(loss, local)):
        w.assign_sub(0.01 * g)
    return loss


def barrier():
    np.asarray(all_reduce(tf.zeros([1])))


def consecutive(fn):
    barrier()
    fn()  # traces on the first call
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        tf.nest.map_structure(np.asarray, fn())
        times.append(time.perf_counter() - start)
    barrier()
    return float(np.median(times))


packs = [int(b) for b in args.packs.split(",")]
steps = {b: distributed(b) for b in packs}
grads = [tf.ones_like(w) for w in init]
for r in range(args.rounds):
    figures = {"compute alone": consecutive(compute_alone),
               "all-reduce alone": consecutive(lambda: all_reduce(grads))}
    figures.update({str(b): consecutive(steps[b]) for b in packs})
    cluster.events.emit("round", round=r, seconds=figures)
packed = max(packs)
barrier()
if task == 0:
    tf.profiler.experimental.start(args.logdir)
np.asarray(steps[packed]())
if task == 0:
    tf.profiler.experimental.stop()
graph = steps[packed].get_concrete_function().graph
count = sum(op.type.startswith("CollectiveReduce") for op in graph.get_operations())
cluster.events.emit("profiled", bytes_per_pack=packed, collectives=count)
barrier()
"""


def merged(spans: list) -> list:
    """The union of (start, end) intervals, as sorted disjoint intervals."""
    union = []
    for start, end in sorted(spans):
        if union and start <= union[-1][1]:
            union[-1][1] = max(union[-1][1], end)
        else:
            union.append([start, end])
    return union


def overlap_in_trace(logdir: Path) -> tuple[float, float, float]:
    """Seconds during which a collective op and a backward op ran at once, and the time each
    kind ran (unions of their events), read from the trace's own timestamps (an XSpace:
    planes, lines, events; lesson 05, section 6, reads it the same way)."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    trace = next(logdir.glob("plugins/profile/*/*.xplane.pb"))
    space = xplane_pb2.XSpace.FromString(trace.read_bytes())
    spans = {"collective": [], "backward": []}
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                start = line.timestamp_ns * 1e3 + event.offset_ps  # picoseconds
                span = (start, start + event.duration_ps)
                kind = name.rsplit(":", 1)[-1]  # an op's event is named "name:Type"
                if kind.startswith("CollectiveReduce"):
                    spans["collective"].append(span)
                elif name.startswith("gradient_tape/") and ":" in name:
                    spans["backward"].append(span)
    union = {k: merged(v) for k, v in spans.items()}
    both = sum(
        max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
        for a in union["collective"]
        for b in union["backward"]
    )
    total = {k: sum(e - s for s, e in v) for k, v in union.items()}
    return both / 1e12, total["collective"] / 1e12, total["backward"] / 1e12


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=600.0, help="Mbit/s")
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--packs", default="0,2000000,1", help="bytes_per_pack values")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="overlap-bench-"))
    program = folder / "overlap_worker.py"
    program.write_text(WORKER)
    options = ["--width", args.width, "--depth", args.depth, "--batch", args.batch]
    options += ["--steps", args.steps, "--rounds", args.rounds, "--packs", args.packs]
    options += ["--logdir", folder / "profile"]
    with cluster.network.Network(args.rate) as net:
        with net.cluster(2, env={"CUDA_VISIBLE_DEVICES": "-1"}) as job:
            job.start(program, [str(o) for o in options])
            codes = job.wait(timeout=1800)
            log = job.logs("worker", 0)
    assert set(codes.values()) == {0}, (codes, log[-3000:])
    rounds = [e["seconds"] for e in cluster.events.parse(log, "round")]
    median = {k: float(np.median([r[k] for r in rounds])) for k in rounds[0]}
    c, comm = median["compute alone"], median["all-reduce alone"]
    link = f"{args.rate:g} Mbit/s" if net.shaped else "the plain loopback (unshaped)"
    print(f"{link}: compute alone {1e3 * c:.0f} ms, all-reduce alone {1e3 * comm:.0f} ms"
          f" (ratio {comm / c:.2f}); medians of {len(rounds)} rounds")  # fmt: skip
    rows = []
    for packs in args.packs.split(","):
        t = median[packs]
        ratios = [r["0"] / r[packs] for r in rounds]
        rows.append((packs, f"{1e3 * t:.0f}", f"{median['0'] / t:.2f}",
                     ", ".join(f"{x:.2f}" for x in ratios)))  # fmt: skip
    print(report.format_table(rows, ("bytes_per_pack", "step ms", "one pack / this", "rounds")))
    print(f"bounds: one after the other c + comm = {1e3 * (c + comm):.0f} ms; "
          f"perfect overlap max(c, comm) = {1e3 * max(c, comm):.0f} ms")  # fmt: skip
    profiled = cluster.events.parse(log, "profiled")[0]
    both, coll, back = overlap_in_trace(folder / "profile")
    print(f"trace of one step with bytes_per_pack={profiled['bytes_per_pack']} "
          f"({profiled['collectives']} collectives): collective ops {1e3 * coll:.0f} ms, backward "
          f"ops {1e3 * back:.0f} ms, both at once {1e3 * both:.0f} ms")  # fmt: skip
    assert profiled["collectives"] > 1, profiled
    assert both > 0, (both, coll, back)  # a collective ran while backward ops ran
    return 0


if __name__ == "__main__":
    sys.exit(main())
