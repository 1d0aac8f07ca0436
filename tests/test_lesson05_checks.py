from helpers import run_python


def test_ring_collectives_right_and_plausible_wrong_answers():
    done = run_python("""
        from tflearn_helpers import setup_course
        course = setup_course(devices=4, scale="smoke", verbose=False)
        import tensorflow as tf
        from tflearn_helpers.checks import _evaluate
        devices = course.devices

        def rs(values, devices, send, mean=False, where=True, hop=1):
            n = len(devices)
            chunks = [tf.split(v, n) for v in values]
            for step in range(n - 1):
                for i in range(n):
                    c, right = (i - 1 - step) % n, (i + hop) % n
                    incoming = send(chunks[i][c], i, right)
                    with tf.device(devices[right if where else 0]):
                        chunks[right][c] = chunks[right][c] + incoming
            return [chunks[i][i] / n if mean else chunks[i][i] for i in range(n)]

        def ag(pieces, devices, send):
            n = len(devices)
            have = [{i: pieces[i]} for i in range(n)]
            for step in range(n - 1):
                for i in range(n):
                    c, right = (i - step) % n, (i + 1) % n
                    have[right][c] = send(have[i][c], i, right)
            out = []
            for i in range(n):
                with tf.device(devices[i]):
                    out.append(tf.concat([have[i][c] for c in range(n)], 0))
            return out

        def to_one(values, devices, send):  # everyone sends whole tensors to device 0
            total = values[0]
            for i in range(1, len(values)):
                total = total + send(values[i], i, 0)
            return tf.split(total, len(values))

        def whole(pieces, devices, send):  # sends every piece it has, every step
            n = len(devices)
            have = [{i: pieces[i]} for i in range(n)]
            for step in range(n - 1):
                for i in range(n):
                    for c in list(have[i]):
                        have[(i + 1) % n][c] = send(have[i][c], i, (i + 1) % n)
            return [tf.concat([have[i][c] for c in range(n)], 0) for i in range(n)]

        def unordered(pieces, devices, send):
            return [g[::-1] for g in ag(pieces, devices, send)]

        def wrong(*answers):
            result = _evaluate("05.1", *answers)
            assert result.status == "wrong", result
            return result.message

        ok = _evaluate("05.1", rs, ag, devices)
        assert ok.ok, ok
        assert "mean" in wrong(lambda v, d, s: rs(v, d, s, mean=True), ag, devices)
        elsewhere = lambda v, d, s: rs(v, d, s, where=False)  # noqa: E731
        assert "add it where it arrives" in wrong(elsewhere, ag, devices)
        assert "(i + 1) % 4" in wrong(lambda v, d, s: rs(v, d, s, hop=2), ag, devices)
        assert "(i + 1) % 4" in wrong(to_one, ag, devices)
        assert "bytes" in wrong(rs, whole, devices)
        assert "chunk order" in wrong(rs, unordered, devices)
        no_send = lambda v, d, s: tf.split(sum(v), 4)  # noqa: E731
        assert "never calls send" in wrong(no_send, ag, devices)
        assert _evaluate("05.1", ..., ag, devices).status == "not attempted"
        from tflearn_helpers import measure  # any of the course's own functions
        assert "course's code" in wrong(rs, measure.ring_allreduce_bytes, devices)
    """)
    assert done.returncode == 0, done.stderr[-3000:]


def test_compressed_all_reduce_right_and_plausible_wrong_answers():
    done = run_python(
        """
        from tflearn_helpers import setup_course
        course = setup_course(devices=4, scale="smoke", verbose=False)
        import tensorflow as tf
        from tflearn_helpers.checks import _evaluate
        strategy = tf.distribute.MirroredStrategy(course.devices)

        def right(ctx, grads):
            halves = [tf.cast(g, tf.float16) for g in grads]
            return [tf.cast(g, tf.float32) for g in ctx.all_reduce("SUM", halves)]

        # other right answers: judged by what crosses and what comes back, not by the calls
        def replica_context(ctx, grads):  # the context asked for, not the one passed in
            mine = tf.distribute.get_replica_context()
            out = []
            for g in grads:  # one all-reduce per tensor, with the ReduceOp enum
                h = mine.all_reduce(tf.distribute.ReduceOp.SUM, tf.cast(g, tf.float16))
                out.append(tf.cast(h, tf.float32))
            return out

        def gathered(ctx, grads):  # every replica's float16 gradient, summed in float32
            out = []
            for g in grads:
                every = ctx.all_gather(tf.cast(g, tf.float16)[None], axis=0)
                out.append(tf.reduce_sum(tf.cast(every, tf.float32), axis=0))
            return out

        def flat(ctx, grads):  # one flat vector, split back afterwards
            sizes = [tf.size(g) for g in grads]
            one = tf.concat([tf.reshape(tf.cast(g, tf.float16), [-1]) for g in grads], 0)
            parts = tf.split(tf.cast(ctx.all_reduce("SUM", one), tf.float32), sizes)
            return [tf.reshape(p, g.shape) for p, g in zip(parts, grads)]

        def plain(ctx, grads):
            return ctx.all_reduce("SUM", grads)

        def stays_half(ctx, grads):
            return ctx.all_reduce("SUM", [tf.cast(g, tf.float16) for g in grads])

        def mean(ctx, grads):
            halves = [tf.cast(g, tf.float16) for g in grads]
            return [tf.cast(g, tf.float32) for g in ctx.all_reduce("MEAN", halves)]

        def local(ctx, grads):
            return [tf.cast(tf.cast(g, tf.float16), tf.float32) for g in grads]

        def gathered_wide(ctx, grads):  # all_gather of float32: nothing compressed
            every = [ctx.all_gather(g[None], axis=0) for g in grads]
            return [tf.reduce_sum(e, axis=0) for e in every]

        def wrong(answer):
            result = _evaluate("05.2", answer, strategy)
            assert result.status == "wrong", result
            return result.message

        for answer in (right, replica_context, gathered, flat):
            result = _evaluate("05.2", answer, strategy)
            assert result.ok, (answer.__name__, result)
        assert "compress first" in wrong(plain)
        assert "compress first" in wrong(gathered_wide)
        assert "float32 back" in wrong(stays_half)
        assert "SUM over all replicas" in wrong(mean)
        assert "nothing crosses" in wrong(local)
        assert "MirroredStrategy" in _evaluate("05.2", right, "nope").message
        assert _evaluate("05.2", ..., strategy).status == "not attempted"
        print("ok")
    """,
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
