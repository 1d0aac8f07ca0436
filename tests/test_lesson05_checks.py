from helpers import run_python


def test_halving_doubling_right_and_plausible_wrong_answers():
    done = run_python("""
        from tflearn_helpers import setup_course
        course = setup_course(devices=4, scale="smoke", verbose=False)
        import tensorflow as tf
        from tflearn_helpers.checks import _evaluate
        devices = course.devices

        def split(values, devices):
            out = []
            for v, device in zip(values, devices):
                with tf.device(device):
                    out.append(tf.split(v, len(devices)))
            return out

        def gather(chunks, devices, scale=1):
            out = []
            for i, device in enumerate(devices):
                with tf.device(device):
                    out.append(tf.concat(chunks[i], 0) * scale)
            return out

        def hd(values, devices, send, order=-1, mean=False):
            # order -1: distances n/2 .. 1 then back; +1: 1 .. n/2 then back (both right)
            n = len(devices)
            chunks, mine = split(values, devices), [list(range(n)) for _ in range(n)]
            distances = [1 << k for k in range(n.bit_length() - 1)][::order]
            for d in distances:
                for i in range(n):
                    give = [c for c in mine[i] if c & d != i & d]
                    with tf.device(devices[i]):  # one message per step
                        packed = tf.concat([chunks[i][c] for c in give], 0)
                    got = send(packed, i, i ^ d)
                    with tf.device(devices[i ^ d]):
                        for c, part in zip(give, tf.split(got, len(give))):
                            chunks[i ^ d][c] = chunks[i ^ d][c] + part
                    mine[i] = [c for c in mine[i] if c & d == i & d]
            for d in distances[::-1]:
                for i in range(n):
                    for c in mine[i]:
                        chunks[i ^ d][c] = send(chunks[i][c], i, i ^ d)
                mine = [mine[i] + mine[i ^ d] for i in range(n)]
            return gather(chunks, devices, 1 / n if mean else 1)

        def ring(values, devices, send, placed=True):  # the lesson's ring all-reduce
            n = len(devices)
            chunks = split(values, devices) if placed else [tf.split(v, n) for v in values]
            for step in range(n - 1):
                for i in range(n):
                    c, right = (i - 1 - step) % n, (i + 1) % n
                    incoming = send(chunks[i][c], i, right)
                    with tf.device(devices[right]):
                        chunks[right][c] = chunks[right][c] + incoming
            for step in range(n - 1):
                for i in range(n):
                    c, right = (i - step) % n, (i + 1) % n
                    chunks[right][c] = send(chunks[i][c], i, right)
            return gather(chunks, devices)

        def whole(values, devices, send):  # every device sends its whole tensor to each
            n, out = len(devices), []
            for i in range(n):
                with tf.device(devices[i]):
                    total = values[i]
                for d in range(1, n.bit_length()):
                    got = send(values[i ^ (1 << (d - 1))], i ^ (1 << (d - 1)), i)
                    with tf.device(devices[i]):
                        total = total + got
                out.append(total)
            return out

        def wrong(*answers):
            result = _evaluate("05.1", *answers)
            assert result.status == "wrong", result
            return result.message

        before = tf.config.experimental.get_device_policy()
        for answer in (hd, lambda v, d, s: hd(v, d, s, order=1)):
            result = _evaluate("05.1", answer, devices)
            assert result.ok, result
        assert "mean" in wrong(lambda v, d, s: hd(v, d, s, mean=True), devices)
        assert "one bit" in wrong(ring, devices)
        assert "another device holds" in wrong(lambda v, d, s: ring(v, d, s, False), devices)
        assert "2(N-1)/N" in wrong(whole, devices)
        no_send = lambda v, d, s: [tf.identity(x) for x in v]  # noqa: E731
        assert "never calls send" in wrong(no_send, devices)
        four = lambda v, d, s: hd(v, devices, s)  # noqa: E731 - ignores the devices it gets
        assert wrong(four, devices).startswith("on two devices")
        assert "power of two" in wrong(hd, devices[:3])
        assert tf.config.experimental.get_device_policy() == before  # restored, even after errors
        assert _evaluate("05.1", ..., devices).status == "not attempted"
        from tflearn_helpers import measure  # any of the course's own functions
        assert "course's code" in wrong(measure.ring_allreduce_bytes, devices)
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_bfloat16_all_reduce_right_and_plausible_wrong_answers():
    done = run_python(
        """
        from tflearn_helpers import setup_course
        course = setup_course(devices=4, scale="smoke", verbose=False)
        import tensorflow as tf
        from tflearn_helpers.checks import _evaluate
        strategy = tf.distribute.MirroredStrategy(course.devices)

        def rounding(grads, relative=True):
            errors = []
            for g in grads:
                gap = tf.abs(tf.cast(tf.cast(g, tf.bfloat16), tf.float32) - g)
                errors.append(tf.reduce_max(gap / tf.abs(g) if relative else gap))
            return tf.reduce_max(errors)

        def right(ctx, grads, dtype=tf.bfloat16, op="SUM", relative=True):
            halves = [tf.cast(g, dtype) for g in grads]
            summed = [tf.cast(g, tf.float32) for g in ctx.all_reduce(op, halves)]
            return summed, rounding(grads, relative)

        # other right answers: judged by what crosses and what comes back, not by the calls
        def replica_context(ctx, grads):  # the context asked for, not the one passed in
            mine = tf.distribute.get_replica_context()
            out = []
            for g in grads:  # one all-reduce per tensor, with the ReduceOp enum
                h = mine.all_reduce(tf.distribute.ReduceOp.SUM, tf.cast(g, tf.bfloat16))
                out.append(tf.cast(h, tf.float32))
            return out, rounding(grads)

        def gathered(ctx, grads):  # every replica's bfloat16 gradient, summed in float32
            out = []
            for g in grads:
                every = ctx.all_gather(tf.cast(g, tf.bfloat16)[None], axis=0)
                out.append(tf.reduce_sum(tf.cast(every, tf.float32), axis=0))
            return out, rounding(grads)

        def flat(ctx, grads):  # one flat vector, split back afterwards
            sizes = [tf.size(g) for g in grads]
            one = tf.concat([tf.reshape(tf.cast(g, tf.bfloat16), [-1]) for g in grads], 0)
            parts = tf.split(tf.cast(ctx.all_reduce("SUM", one), tf.float32), sizes)
            return [tf.reshape(p, g.shape) for p, g in zip(parts, grads)], rounding(grads)

        def plain(ctx, grads):
            return ctx.all_reduce("SUM", grads), rounding(grads)

        def stays_half(ctx, grads):
            return ctx.all_reduce("SUM", [tf.cast(g, tf.bfloat16) for g in grads]), rounding(grads)

        def local(ctx, grads):
            return [tf.cast(tf.cast(g, tf.bfloat16), tf.float32) for g in grads], rounding(grads)

        def gathered_wide(ctx, grads):  # all_gather of float32: nothing compressed
            every = [ctx.all_gather(g[None], axis=0) for g in grads]
            return [tf.reduce_sum(e, axis=0) for e in every], rounding(grads)

        def no_error(ctx, grads):  # the sum alone, as a float16 exercise asked
            return right(ctx, grads)[0]

        def wrong(answer):
            result = _evaluate("05.2", answer, strategy)
            assert result.status == "wrong", result
            return result.message

        for answer in (right, replica_context, gathered, flat):
            result = _evaluate("05.2", answer, strategy)
            assert result.ok, (answer.__name__, result)
        assert "float32 tensors cross" in wrong(plain)
        assert "float32 tensors cross" in wrong(gathered_wide)
        assert "float16 tensors cross" in wrong(lambda c, g: right(c, g, dtype=tf.float16))
        assert "float32 back" in wrong(stays_half)
        assert "SUM over all replicas" in wrong(lambda c, g: right(c, g, op="MEAN"))
        assert "relative rounding error" in wrong(lambda c, g: right(c, g, relative=False))
        assert "nothing crosses" in wrong(local)
        assert "pair" in wrong(no_error)
        assert "MirroredStrategy" in _evaluate("05.2", right, "nope").message
        assert _evaluate("05.2", ..., strategy).status == "not attempted"
        print("ok")
    """,
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_alpha_beta_fit_right_and_plausible_wrong_answers():
    done = run_python("""
        import numpy as np
        from tflearn_helpers.checks import _evaluate

        def fit(sizes, seconds, workers, beyond, large=64_000, alpha_from="smallest",
                bits=1, per_link=False, megabytes=False):
            s, t = bits * np.asarray(sizes, float), np.asarray(seconds, float)
            big = s > large * bits
            beta, intercept = np.polyfit(s[big], t[big], 1)
            alpha = {"smallest": t[0] - beta * s[0], "line": intercept, "zero": 0.0}[alpha_from]
            rate = 2 * (workers - 1) / beta / (workers if per_link else 1)
            return alpha, beta, rate * (1 if megabytes else 8) / 1e6, alpha + beta * beyond

        def lstsq(sizes, seconds, workers, beyond):  # a tuple of numpy scalars, another solver
            s, t = np.array(sizes, float), np.array(seconds, float)
            a = np.vstack([np.ones(4), s[3:]]).T  # the four largest only
            alpha_line, beta = np.linalg.lstsq(a, t[3:], rcond=None)[0]
            alpha = t[0] - beta * s[0]
            return np.float32(alpha), beta, 16 * (workers - 1) / beta / 1e6, alpha + beta * beyond

        def wrong(answer):
            result = _evaluate("05.3", answer)
            assert result.status == "wrong", result
            return result.message

        for _ in range(20):  # every sweep is drawn afresh
            assert _evaluate("05.3", fit).ok
            assert _evaluate("05.3", lstsq).ok
        assert "beta" in wrong(lambda *a: fit(*a, bits=8))
        assert "beta" in wrong(lambda *a: fit(*a)[1::-1] + fit(*a)[2:])
        assert "alpha" in wrong(lambda *a: fit(*a, large=-1, alpha_from="line"))  # every size
        for where in ("line", "zero"):
            assert "alpha" in wrong(lambda *a, w=where: fit(*a, alpha_from=w))
        assert "rate" in wrong(lambda *a: fit(*a, per_link=True))
        assert "rate" in wrong(lambda *a: fit(*a, megabytes=True))
        assert "prediction" in wrong(lambda s, t, n, b: fit(s, t, n, max(s)))
        assert "four numbers" in wrong(lambda *a: fit(*a)[:2])
        assert _evaluate("05.3", ...).status == "not attempted"
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
