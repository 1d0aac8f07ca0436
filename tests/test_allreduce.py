from pathlib import Path

import pytest
from helpers import run_python

from tflearn_helpers import runtime

#: lesson 01's time_allreduce is saved into the benchmark that reuses it (tools/save_taught.py)
BENCHMARKS = str(Path(__file__).resolve().parents[1] / "benchmarks")

DevicePlan = runtime.devices.DevicePlan


def test_the_course_uses_hierarchical_copy_only_between_logical_gpus():
    assert DevicePlan("GPU", 1, 2).allreduce_algorithm == "hierarchical_copy"
    assert DevicePlan("GPU", 4, 1).allreduce_algorithm == "collective"
    assert DevicePlan("CPU", 1, 4).allreduce_algorithm == "collective"
    for plan in (DevicePlan("GPU", 1, 2), DevicePlan("CPU", 1, 1)):
        assert plan.allreduce_algorithm in runtime.devices.ALGORITHMS


def test_cross_device_ops_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown algorithm"):
        runtime.devices.cross_device_ops("butterfly")


def test_time_allreduce_times_each_step_of_every_algorithm():
    done = run_python(f"""
        import sys
        sys.path.insert(0, {BENCHMARKS!r})
        from mirrored_overhead import time_allreduce
        from tflearn_helpers import setup_course, runtime
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import pytest, tensorflow as tf
        for name in ("collective", "hierarchical_copy", "reduce_to_one"):
            s = tf.distribute.MirroredStrategy(
                course.devices, cross_device_ops=runtime.devices.cross_device_ops(name))
            t = time_allreduce(s, 1000, steps=2)
            assert len(t) == 2 and min(t) > 0
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout


def test_two_collective_strategies_in_one_process_clash():
    """Backs lesson 01's advice (one MirroredStrategy per program, tensorflow/tensorflow#62790)."""
    done = run_python(f"""
        import sys
        sys.path.insert(0, {BENCHMARKS!r})
        from mirrored_overhead import time_allreduce
        from tflearn_helpers import setup_course
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import tensorflow as tf
        time_allreduce(tf.distribute.MirroredStrategy(course.devices), 8, steps=1)
        try:
            time_allreduce(tf.distribute.MirroredStrategy(course.devices), 16, steps=1)
        except Exception as err:
            print("clash:", type(err).__name__, err)
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "clash:" in done.stdout and "collective" in done.stdout.lower(), done.stdout[-2000:]
