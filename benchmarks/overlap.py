"""Does TensorFlow overlap the gradient all-reduce with the backward pass? Measured side by side.

Two MultiWorkerMirroredStrategy workers (RING, one core and one intra-op thread each, two
inter-op threads) in a network namespace whose loopback is shaped with ``tc tbf``
(``cluster.network``). The mechanism under test is TensorFlow's own: inside a ``tf.function``,
``ReplicaContext.all_reduce`` of the gradient list with
``CommunicationOptions(bytes_per_pack=P)`` reverses the list (the last layer's gradients,
which backprop computes first, come first), cuts it into packs of about P bytes and issues
one collective per pack, each fed only by its own gradients
(``CollectiveAllReduce._all_reduce`` in ``tensorflow/python/distribute/cross_device_ops.py``,
``CollectiveReplicaLauncher.batch_all_reduce`` in ``cross_device_utils.py``). The packs run
one after another (one ordering token), but the first can start while earlier layers'
gradients are still being computed. ``bytes_per_pack=0`` packs everything into one
collective, which waits for the last gradient: the control without overlap. The same model,
batch and bytes in every variant; only the packing differs.

The goal, ">= 1.25x where compute and communication are equal", needs the two equal in every
round, and on a shared machine the compute moves (2x between rounds was seen). So before each
round the workers time the compute alone and the all-reduce alone, and this process sets the
link's rate at which the all-reduce would take the median compute time seen so far (the wire
time dominates, so it scales as 1/rate). Each round then times both again, and the packed
all-reduce alone (its extra time over one pack: the extra collectives' latency) with the CPU
seconds the process used per second of all-reduce ("comm CPU", over the compute's), and runs
``--steps`` passes, each
running every packing once, in an order that rotates; one pack / packed is taken pass by pass
(back-to-back steps see the same load) and the median over the passes of the rounds whose
all-reduce took within 1.25x of the compute is set against the goal (exit code 1 if missed).
Beside it, a ceiling from the order of the work (``ceiling``): the forward pass and the first
pack's backward come before any collective, and packs go one at a time. For this MLP at equal
times it is 1.37x for 1 MB packs (6 collectives) and 1.27x for 2 MB packs (3): the goal sits
at the 2 MB ceiling, so the packing under test is 1 MB, at batch 2048 so that each extra
collective's latency (some ms) stays small beside the step.

Last, profiler traces of one packed step and of its control (one pack) on worker 0 show how
long collective ops ran while backward ops (those under the ``gradient_tape/`` name scope) were
running: asserted more than twice the control's, and over 1 ms.

  python benchmarks/overlap.py [--rate 400] [--fixed] [--width 512] [--depth 6] [--batch 2048]
                               [--packs 0,1000000,2000000] [--rounds 6] [--steps 8]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tflearn_helpers import cluster, programs, report  # noqa: E402

GOAL = 1.25  # one pack / packed, where compute and communication are equal
EQUAL = 1.25  # "equal": the all-reduce alone within this factor of the compute alone

WORKER = r"""
import argparse, json, time
from pathlib import Path
import numpy as np
import tensorflow as tf
from tflearn_helpers import programs

p = argparse.ArgumentParser()
for name in ("--width", "--depth", "--batch", "--steps", "--rounds", "--calibrate"):
    p.add_argument(name, type=int, required=True)
p.add_argument("--packs", required=True)
p.add_argument("--logdir", required=True)
p.add_argument("--folder", required=True)
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


def reducer(bytes_per_pack):  # the all-reduce alone, packed as a step packs it
    options = tf.distribute.experimental.CommunicationOptions(bytes_per_pack=bytes_per_pack)

    @tf.function
    def all_reduce(values):
        def replica_fn(v):
            with tf.device(strategy.extended.worker_devices[0]):  # a collective needs a device
                v = tf.nest.map_structure(tf.identity, v)
            return tf.distribute.get_replica_context().all_reduce("SUM", v, options=options)
        return strategy.run(replica_fn, (values,))
    return all_reduce


all_reduce = reducer(0)


@tf.function
def compute_alone():
    with tf.GradientTape() as tape:
        loss = loss_fn(local, x, y)
    for w, g in zip(local, tape.gradient(loss, local)):
        w.assign_sub(0.01 * g)
    return loss


def barrier():
    np.asarray(all_reduce(tf.zeros([1])))


def timed(fn):
    start = time.perf_counter()
    tf.nest.map_structure(np.asarray, fn())
    return time.perf_counter() - start


def consecutive(fn, name=None):
    barrier()
    fn()  # traces on the first call
    wall, used = time.perf_counter(), time.process_time()
    times = [timed(fn) for _ in range(args.steps)]
    if name:  # CPU seconds this process used (all its threads) per second of the steps
        cpu[name] = (time.process_time() - used) / (time.perf_counter() - wall)
    barrier()
    return float(np.median(times))


def interleaved(fns):  # each pass runs every step once, in an order that rotates by one
    barrier()
    times = {name: [] for name in fns}
    for i in range(args.steps):
        names = list(fns)[i % len(fns):] + list(fns)[:i % len(fns)]
        for name in names:
            times[name].append(timed(fns[name]))
    barrier()
    return times


def rate_set(attempt, timeout=300.0):  # the parent writes the file once the link is reshaped
    flag, deadline = Path(args.folder) / f"rate-{attempt}", time.monotonic() + timeout
    while not flag.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no new rate after {timeout:.0f} s")
        time.sleep(0.05)


packs = [int(b) for b in args.packs.split(",")]
steps = {str(b): distributed(b) for b in packs}
grads = [tf.ones_like(w) for w in init]
all_reduce_packed = reducer(packs[1])
for fn in steps.values():
    consecutive(fn)  # traced, and warmed up
for r in range(args.rounds):
    if args.calibrate:  # the parent sets the rate at which the all-reduce takes the compute's time
        figures = {"compute alone": consecutive(compute_alone),
                   "all-reduce alone": consecutive(lambda: all_reduce(grads))}
        programs.events.emit("calibrate", attempt=r, seconds=figures)
        rate_set(r)
    cpu = {}
    figures = {"compute alone": consecutive(compute_alone, "compute"),
               "all-reduce alone": consecutive(lambda: all_reduce(grads), "all-reduce"),
               "packed all-reduce alone": consecutive(lambda: all_reduce_packed(grads))}
    programs.events.emit("round", round=r, seconds=figures, cpu=cpu, steps=interleaved(steps))
packed = packs[1]
for name, logdir in ((str(packed), args.logdir), ("0", args.logdir + "-control")):
    barrier()  # the packed step, then its control (one pack), each traced on worker 0
    if task == 0:
        tf.profiler.experimental.start(logdir)
    np.asarray(steps[name]())
    if task == 0:
        tf.profiler.experimental.stop()
graph = steps[str(packed)].get_concrete_function().graph
count = sum(op.type.startswith("CollectiveReduce") for op in graph.get_operations())
programs.events.emit("profiled", bytes_per_pack=packed, collectives=count)
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


def calibrate(net, job, folder: Path, attempts: int) -> list[tuple]:
    """Before each round: read worker 0's all-reduce time at the current rate, set the rate at
    which it would take as long as the compute (its time scales as 1/rate: the wire time
    dominates), and tell the workers (a file) that it is set. The compute is the median of
    every compute time measured so far: the load of a shared machine moves it from one
    measurement to the next (2x was seen), and a rate chasing each one flaps."""
    done = []
    for attempt in range(attempts):
        event = programs.events.wait_for(
            lambda: job.logs("worker", 0),
            lambda e, a=attempt: e.get("kind") == "calibrate" and e["attempt"] == a,
            timeout=600,
            depends_on=job.procs.values(),
        )
        seen = programs.events.parse(job.logs("worker", 0))  # every compute time so far
        c = float(np.median([e["seconds"]["compute alone"] for e in seen if "seconds" in e]))
        comm, rate = event["seconds"]["all-reduce alone"], net.rate_mbit
        net.set_rate(float(np.clip(rate * comm / c, 10, 10_000)))
        done.append((rate, c, comm, net.rate_mbit))
        (folder / f"rate-{attempt}").write_text(str(net.rate_mbit))
    return done


def ceiling(width: int, depth: int, bytes_per_pack: int, rho: float, latency: float) -> float:
    """One pack / packed, losing only what the order of the work forces: after the forward
    pass (1/3 of the compute), pack k's all-reduce starts once the backward pass has made its
    gradients and pack k - 1 is done, one pack at a time. ``rho``: all-reduce / compute, both
    split over the layers by their weights (each layer sees the whole batch). ``latency``: what
    the packed all-reduce alone takes beyond the one-pack all-reduce alone (the extra
    collectives' latency), / compute, added to the packed step."""
    shapes = list(zip([256] + [width] * depth, [width] * depth + [10], strict=True))
    sizes = [4 * a * b for a, b in reversed(shapes)]  # the order TensorFlow packs them in
    packs, last = [], 0
    for size in sizes:  # group_by_size in cross_device_utils.py: close a pack once over P
        if not packs or (bytes_per_pack and last > bytes_per_pack):
            packs.append(0)
            last = 0
        packs[-1] += size
        last += size
    ready = done = 1 / 3
    for share in (pack / sum(sizes) for pack in packs):
        ready += 2 / 3 * share  # its gradients exist
        done = max(done, ready) + rho * share  # its all-reduce ends
    return (1 + rho) / (done + latency)


def shares(event: dict) -> tuple[float, float]:
    """A round's all-reduce / compute, and its packed all-reduce's extra time / compute."""
    seconds = event["seconds"]
    c, comm = seconds["compute alone"], seconds["all-reduce alone"]
    return comm / c, (seconds["packed all-reduce alone"] - comm) / c


def step_ratios(rounds: list, control: str, packs: str) -> list:
    """Control step / this step, pass by pass: each pass ran every packing once, back to back."""
    return [
        a / b for r in rounds for a, b in zip(r["steps"][control], r["steps"][packs], strict=True)
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=400.0, help="Mbit/s to start from")
    parser.add_argument("--fixed", action="store_true", help="keep --rate: no calibration")
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--batch", type=int, default=2048)
    what = "bytes_per_pack: the control 0, the packing under test, others"
    parser.add_argument("--packs", default="0,1000000,2000000", help=what)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=8, help="passes per round")
    args = parser.parse_args(argv)
    packs = args.packs.split(",")
    if len(packs) < 2 or packs[0] != "0":
        parser.error("--packs: the control 0 first, then at least the packing under test")
    folder = Path(tempfile.mkdtemp(prefix="overlap-bench-"))
    try:
        return measure(args, packs, folder)
    finally:  # the programs, the profiles: nothing left in the temporary folder
        shutil.rmtree(folder, ignore_errors=True)


def measure(args, packs: list, folder: Path) -> int:
    """Run the two workers in ``folder`` and judge; exit code 0 if the goal is met."""
    program = folder / "overlap_worker.py"
    program.write_text(WORKER)
    options = ["--width", args.width, "--depth", args.depth, "--batch", args.batch]
    options += ["--steps", args.steps, "--rounds", args.rounds, "--packs", args.packs]
    options += ["--logdir", folder / "profile", "--folder", folder]
    with cluster.network.Network(args.rate) as net:
        calibrations = 0 if args.fixed or not net.shaped else args.rounds
        options += ["--calibrate", int(calibrations > 0)]
        with net.cluster(2, env={"CUDA_VISIBLE_DEVICES": "-1"}) as job:
            job.start(program, [str(o) for o in options])
            tried = calibrate(net, job, folder, calibrations)
            codes = job.wait(timeout=1800)
            log = job.logs("worker", 0)
        rate = net.rate_mbit
    assert set(codes.values()) == {0}, (codes, log[-3000:])
    rounds = programs.events.parse(log, "round")
    rates = [after for *_, after in tried] or [rate] * len(rounds)
    rows, equal = [], []
    for r, (event, mbit) in enumerate(zip(rounds, rates, strict=True)):
        c, comm = event["seconds"]["compute alone"], event["seconds"]["all-reduce alone"]
        equal += [r] if 1 / EQUAL <= comm / c <= EQUAL else []
        bound = ceiling(args.width, args.depth, int(packs[1]), *shares(event))
        latency = event["seconds"]["packed all-reduce alone"] - comm
        used = event["cpu"]["all-reduce"] / event["cpu"]["compute"]  # of what compute gets
        measured = [np.median(step_ratios([event], "0", b)) for b in packs[1:]]
        rows.append((r, f"{mbit or 0:.0f}", f"{1e3 * c:.0f}", f"{1e3 * comm:.0f}",
                     f"{comm / c:.2f}", f"{1e3 * latency:+.0f}", f"{used:.2f}", f"{bound:.2f}",
                     *(f"{x:.2f}" for x in measured)))  # fmt: skip
    link = "Mbit/s" if net.shaped else "Mbit/s (unshaped)"
    headers = ("round", link, "compute ms", "all-reduce ms", "ratio", "packed: extra ms",
               "comm CPU", f"ceiling {packs[1]}",
               *(f"one pack / {b}" for b in packs[1:]))  # fmt: skip
    print(report.format_table(rows, headers))
    c = float(np.median([e["seconds"]["compute alone"] for e in rounds]))
    comm = float(np.median([e["seconds"]["all-reduce alone"] for e in rounds]))
    rows = []
    for name in packs:
        t = float(np.median([x for r in rounds for x in r["steps"][name]]))
        ratios = step_ratios(rounds, "0", name)
        quartiles = "-".join(f"{np.percentile(ratios, q):.2f}" for q in (25, 75))
        rows.append((name, f"{1e3 * t:.0f}", f"{np.median(ratios):.2f}", quartiles))
    headers = ("bytes_per_pack", "step ms", "one pack / this", "quartiles")
    print(f"every pass of every round ({len(rounds)} x {args.steps}):")
    print(report.format_table(rows, headers))
    print(f"bounds (medians): one after the other c + comm = {1e3 * (c + comm):.0f} ms; "
          f"perfect overlap max(c, comm) = {1e3 * max(c, comm):.0f} ms")  # fmt: skip
    profiled = programs.events.parse(log, "profiled")[0]
    both, coll, back = overlap_in_trace(folder / "profile")
    control = overlap_in_trace(folder / "profile-control")[0]
    print(f"trace of one step with bytes_per_pack={profiled['bytes_per_pack']} "
          f"({profiled['collectives']} collectives): collective ops {1e3 * coll:.0f} ms, backward "
          f"ops {1e3 * back:.0f} ms, both at once {1e3 * both:.0f} ms; its control, one pack "
          f"traced beside it: both at once {1e3 * control:.0f} ms")  # fmt: skip
    assert profiled["collectives"] > 1, profiled
    # the packed step's collectives ran during backprop; the control's one pack waits for it all
    assert both > 2 * control and both > 1e-3, (both, control, coll, back)
    if not equal:
        print(f"goal not tested: in no round was the all-reduce within {EQUAL}x of the compute")
        return 1
    speedup = float(np.median(step_ratios([rounds[r] for r in equal], "0", packs[1])))
    bound = np.median([ceiling(args.width, args.depth, int(packs[1]), *shares(rounds[r]))
                       for r in equal])  # fmt: skip
    verdict = "met" if speedup >= GOAL else "missed"
    one_core = np.median([(1 + shares(rounds[r])[0])
                          / (1 + shares(rounds[r])[0] * rounds[r]["cpu"]["all-reduce"]
                             / rounds[r]["cpu"]["compute"]) for r in equal])  # fmt: skip
    print(f"one core per worker: with the all-reduce's CPU work added to the compute's, a "
          f"packed step takes at least c + (comm CPU) * comm: at most {one_core:.2f}x")  # fmt: skip
    print(f"bytes_per_pack={packs[1]}: one pack / packed {speedup:.2f}x (ceiling {bound:.2f}x), "
          f"the median of the passes of the {len(equal)} rounds where the all-reduce took within "
          f"{EQUAL}x of the compute (goal >= {GOAL}x: {verdict})")  # fmt: skip
    return 0 if speedup >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
