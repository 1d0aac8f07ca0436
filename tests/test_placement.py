from helpers import run_python

from tflearn_helpers import placement


def test_short_device_names():
    assert placement.short_device("/job:localhost/replica:0/task:0/device:CPU:1") == "CPU:1"
    assert placement.short_device("/job:ps/replica:0/task:1/device:CPU:0") == "ps:1/CPU:0"
    assert placement.short_device("") == "(unplaced)"
    assert placement.short_device("/job:ps/task:0") == "ps:0"
    assert placement.short_device("/job:worker/replica:0/task:0") == "worker:0"  # a TF1 graph


def test_variables_and_ops_are_found_where_they_ran():
    done = run_python("""
        from tflearn_helpers import setup_course, placement
        setup_course(devices=2, verbose=False)
        import tensorflow as tf
        with tf.device("/CPU:1"):
            v = tf.Variable(tf.ones((3, 3)))
        @tf.function
        def f(x):
            with tf.device("/CPU:1"):
                return tf.reduce_sum(tf.matmul(x, v))
        assert placement.variable_devices([v])[0][2] == "CPU:1"
        counts = placement.compute_op_counts(f, tf.ones((2, 3)))
        assert set(counts) == {"CPU:1"}, counts
        ops = placement.op_devices(f, tf.ones((2, 3)))
        assert any("MatMul" in op and dev == "CPU:1" for op, dev in ops), ops
        # keyword arguments reach the function; a traced tf.function is traced afresh
        scaled = placement.op_devices(lambda x, k: tf.matmul(x, x) * k, tf.ones((2, 2)), k=2.0)
        assert any(op == "Mul" for op, _ in scaled), scaled
        assert placement.compute_op_counts(f, tf.ones((2, 3))) == counts
        nodes = placement.executed_nodes(tf.function(lambda x: tf.matmul(x, x)), tf.ones((2, 2)))
        assert [n.op for n in nodes if "MatMul" in n.op], [n.op for n in nodes]
    """)
    assert done.returncode == 0, done.stderr[-3000:]


def test_parse_placement_log_keeps_only_placement_lines():
    text = "noise\nMatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:1\n"
    assert placement.parse_placement_log(text) == [("MatMul", "MatMul", "CPU:1")]


def test_each_executed_op_is_counted_once():
    done = run_python("""
        from tflearn_helpers import setup_course, placement
        setup_course(devices=2, verbose=False)
        import tensorflow as tf
        counts = placement.compute_op_counts(lambda x: tf.matmul(x, x), tf.ones((2, 2)))
        assert sum(counts.values()) == 1, counts
    """)
    assert done.returncode == 0, done.stderr[-3000:]


def test_parameters_are_counted_on_their_devices():
    done = run_python("""
        from tflearn_helpers import setup_course, placement
        setup_course(devices=2, verbose=False)
        import tensorflow as tf
        with tf.device("/CPU:0"):
            a = tf.Variable(tf.ones((3, 4)))
        with tf.device("/CPU:1"):
            b = tf.Variable(tf.ones((5,)))
            c = tf.Variable(tf.ones((2, 2)))
        counts = placement.parameters_per_device([a, b, c])
        assert counts == {"CPU:0": 12, "CPU:1": 9}, counts
        assert placement.parameters_per_device([]) == {}
    """)
    assert done.returncode == 0, done.stderr[-3000:]
