from helpers import run_python

ZERO1 = """
from tflearn_helpers import setup_course
course = setup_course(devices=2, verbose=False)
import tensorflow as tf
from tflearn_helpers.checks import _evaluate

strategy = tf.distribute.MirroredStrategy(
    course.devices, cross_device_ops=tf.distribute.ReductionToOneDevice()
)
ON_READ = dict(synchronization=tf.VariableSynchronization.ON_READ,
               aggregation=tf.VariableAggregation.NONE)


def zero1(full_state=False, reduce=True, gather=True, scatter=True, direct=True, kept=False):
    # The solution, and wrong answers derived from it: the whole momentum on each replica,
    # no sum, no gather, an all-reduce instead of the reduce-scatter (right weights, 1.5x the
    # bytes); direct=False gathers with TensorFlow's all_gather (through one device: right);
    # kept=True keeps a whole momentum on every replica and copies its slice into the shard.

    def make(strategy, w0, lr, beta):
        n, size = strategy.num_replicas_in_sync, int(w0.shape[0])
        devices = strategy.extended.worker_devices
        with strategy.scope():
            params = tf.Variable(w0, **ON_READ)
            momentum = tf.Variable(tf.zeros([size if full_state else size // n]), **ON_READ)
            whole = tf.Variable(tf.zeros([size]), **ON_READ) if kept else None

        def reduce_scatter(strategy, *pieces):
            pairs = zip(pieces, devices, strict=True)
            return [strategy.extended.reduce_to("sum", p, d) for p, d in pairs]

        def all_gather(strategy, shard):
            shards = strategy.experimental_local_results(shard)
            full = []
            for d in devices:
                with tf.device(d):
                    full.append(tf.concat(shards, axis=0))
            return strategy.experimental_distribute_values_from_function(
                lambda ctx: full[ctx.replica_id_in_sync_group]
            )

        def update(grad):
            ctx = tf.distribute.get_replica_context()
            r = tf.get_static_value(ctx.replica_id_in_sync_group)
            if full_state:
                momentum.assign(beta * momentum + ctx.all_reduce("sum", grad))
                params.assign(params - lr * momentum)
                return
            if not reduce:
                mine = tf.reshape(grad, [n, -1])[r]
            elif scatter:
                mine = ctx.merge_call(reduce_scatter, args=tuple(tf.split(grad, n)))[r]
            else:
                mine = tf.reshape(ctx.all_reduce("sum", grad), [n, -1])[r]
            if kept:
                k = size // n
                whole.assign(beta * whole + tf.pad(mine, [[r * k, (n - 1 - r) * k]]))
                momentum.assign(tf.reshape(whole, [n, -1])[r])
            else:
                momentum.assign(beta * momentum + mine)
            new = tf.reshape(params, [n, -1])[r] - lr * momentum
            if not gather:
                own = tf.tensor_scatter_nd_update(
                    tf.reshape(params, [n, -1]), tf.reshape(r, [1, 1]), new[None]
                )  # only this replica's shard is new: the others stay stale
                params.assign(tf.reshape(own, [-1]))
            elif direct:
                params.assign(ctx.merge_call(all_gather, args=(new,)))
            else:
                params.assign(ctx.all_gather(new, axis=0))

        return params, momentum, update

    return make


right = _evaluate("06.1", zero1(), strategy)
assert right.ok, right.message
full = _evaluate("06.1", zero1(full_state=True), strategy)
assert not full.ok and "whole optimizer state" in full.message, full.message
missing = _evaluate("06.1", zero1(reduce=False), strategy)
assert not missing.ok and "summed over all replicas" in missing.message, missing.message
no_gather = _evaluate("06.1", zero1(gather=False), strategy)
assert not no_gather.ok and "every shard back" in no_gather.message, no_gather.message
all_reduce = _evaluate("06.1", zero1(scatter=False), strategy)
assert not all_reduce.ok and "1.50x the bytes" in all_reduce.message, all_reduce.message
through_one = _evaluate("06.1", zero1(direct=False), strategy)
assert through_one.ok, through_one.message
assert _evaluate("06.1", None, strategy).status == "not attempted"
kept = _evaluate("06.1", zero1(kept=True), strategy)
assert not kept.ok and "whole-size state" in kept.message, kept.message
from tflearn_helpers.taught.lesson06 import transfers
assert "course's code" in _evaluate("06.1", transfers, strategy).message
for result in (full, missing, no_gather, all_reduce):
    assert "all_reduce(" not in result.message and "all_gather(" not in result.message
print("ok")
"""


def test_zero1_check_judges_state_and_result():
    done = run_python(ZERO1, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


# 06.2 (tensor parallelism): the right answers (the solution and RIGHT_ANSWERS, among them the
# others' parts added with their gradient stopped) and every wrong one, each with the words its
# hint must say (HINTS), are in tests/answers/lesson06.py, run by tests/test_mutations.py.


ZERO3 = """
from tflearn_helpers import setup_course
course = setup_course(devices=DEVICES, verbose=False)
import tensorflow as tf
from tflearn_helpers.checks import _evaluate

strategy = tf.distribute.MirroredStrategy(
    course.devices, cross_device_ops=tf.distribute.ReductionToOneDevice()
)


def zero3(
    wrap=True, regather=True, scatter=True, direct=False, ordered=False, recompute=True,
    sliced=False,
):
    # The solution, and wrong answers derived from it: no custom gradient (the outer tape
    # records the gather), the backward reusing the forward's gathered weights, the forward's
    # own tape kept for the backward, the whole gradient all-reduced (or each slice); right
    # answers written another way: the gather as copies in merge_call, control dependencies as
    # in the lesson.

    def gather(shard):
        ctx = tf.distribute.get_replica_context()
        if not direct:
            return ctx.all_gather(shard, axis=0)

        def to_all(strategy, shard):
            shards = strategy.experimental_local_results(shard)
            full = []
            for d in strategy.extended.worker_devices:
                with tf.device(d):
                    full.append(tf.concat(shards, axis=0))
            return full

        r = tf.get_static_value(ctx.replica_id_in_sync_group)
        return ctx.merge_call(to_all, args=(shard,))[r]

    def reduce_scatter(grad):
        ctx = tf.distribute.get_replica_context()
        n, r = ctx.num_replicas_in_sync, tf.get_static_value(ctx.replica_id_in_sync_group)
        if not scatter:
            return tf.split(ctx.all_reduce("sum", grad), n)[r]
        if sliced:  # each slice all-reduced: device 0 sums them all
            return [ctx.all_reduce("sum", p) for p in tf.split(grad, n)][r]

        def to_owners(strategy, *pieces):
            devices = strategy.extended.worker_devices
            return [strategy.extended.reduce_to("sum", p, d) for p, d in zip(pieces, devices)]

        return ctx.merge_call(to_owners, args=tuple(tf.split(grad, n)))[r]

    def make(forward):
        if not wrap:
            return lambda shard, x: forward(gather(shard), x)

        @tf.custom_gradient
        def run(shard, x):
            with tf.control_dependencies([x] if ordered else []):
                full = gather(shard)
            with tf.GradientTape() as kept:
                kept.watch([full, x])
                y = forward(full, x)

            def backward(dy):
                if not recompute:
                    dfull, dx = kept.gradient(y, [full, x], output_gradients=dy)
                    return reduce_scatter(dfull), dx
                with tf.control_dependencies([dy] if ordered else []):
                    again = gather(shard) if regather else full
                with tf.GradientTape() as tape:
                    tape.watch([again, x])
                    z = forward(again, x)
                dfull, dx = tape.gradient(z, [again, x], output_gradients=dy)
                return reduce_scatter(dfull), dx

            return y, backward

        return run

    return make


def gathered_by_hand(forward):  # recompute_grad, and a gather whose gradient reduce-scatters
    plain = zero3()(lambda full, x: full)  # the solution's run on the identity unit

    return tf.recompute_grad(lambda shard, x: forward(plain(shard, x), x))


def traced_unit(forward):  # the unit traced as a tf.function of its own
    return zero3()(tf.function(forward))


for right in (zero3(), zero3(direct=True), zero3(ordered=True), gathered_by_hand, traced_unit):
    result = _evaluate("06.3", right, strategy)
    assert result.ok, result.message
for wrong, words in (
    (zero3(wrap=False), "keeps a tensor of"),
    (zero3(regather=False), "keeps a tensor of"),
    (zero3(recompute=False), "keeps a tensor of"),
    (zero3(scatter=False), "summed in one place"),
    (zero3(direct=True, scatter=False), "summed in one place"),
    (zero3(sliced=True), "summed in one place"),
):
    result = _evaluate("06.3", wrong, strategy)
    assert not result.ok and words in result.message, result.message
    assert "all_gather(" not in result.message and "custom_gradient" not in result.message
unwrapped = _evaluate("06.3", lambda forward: forward, strategy)
assert not unwrapped.ok and "failed in strategy.run" in unwrapped.message, unwrapped.message
assert _evaluate("06.3", None, strategy).status == "not attempted"
from tflearn_helpers.taught.lesson06 import transfers
assert "course's code" in _evaluate("06.3", transfers, strategy).message
print("ok")
"""


def test_zero3_check_judges_values_and_what_the_step_keeps():
    """Three replicas: the sizes follow N. Two, as in the solutions notebook, are the tables'
    (tests/answers/lesson06.py: the same wrong answers, each with the same hint words)."""
    done = run_python(ZERO3.replace("DEVICES", "3"), timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
