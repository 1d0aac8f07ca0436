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
        from tflearn_helpers import timing  # any of the course's own functions
        assert "course's code" in wrong(timing.ring_allreduce_bytes, devices)
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_bfloat16_all_reduce_refuses_what_is_not_a_strategy():
    """05.2's right answers (the solution; RIGHT_ANSWERS: one collective per gradient, a
    gather of bfloat16, one flat vector, the replica context asked for) and its wrong ones,
    each with the words its hint must say (HINTS), are in tests/answers/lesson05.py, run by
    tests/test_mutations.py."""
    from tflearn_helpers.checks import _evaluate

    def reduce_fn(ctx, grads):  # written, never run here
        return ctx.all_reduce("SUM", grads), 0.0

    assert "MirroredStrategy" in _evaluate("05.2", reduce_fn, "nope").message


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
        assert "beta moved" in wrong(lambda *a: fit(*a, large=-1))  # beta over every size
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
