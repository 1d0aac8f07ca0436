from types import SimpleNamespace

import pytest
from helpers import run_python

from tflearn_helpers import allreduce, measure, runtime

DevicePlan = runtime.devices.DevicePlan


def test_every_algorithm_moves_the_same_total():
    for n in (2, 4, 8):
        for name in ("collective", "hierarchical_copy", "reduce_to_one", "nccl"):
            sent = allreduce.bytes_sent(name, 100.0, n)
            assert len(sent) == n
            assert sum(sent) == pytest.approx(2 * (n - 1) * 100)


def test_who_carries_the_load():
    assert allreduce.bytes_sent("collective", 100, 4) == [measure.ring_allreduce_bytes(100, 4)] * 4
    assert allreduce.bytes_sent("reduce_to_one", 100, 4) == [300, 100, 100, 100]
    assert allreduce.bytes_sent("hierarchical_copy", 100, 4) == [200, 100, 200, 100]
    assert allreduce.bytes_sent("hierarchical_copy", 100, 2) == [100, 100]
    assert allreduce.bytes_sent("reduce_to_one", 100, 1) == [0.0]


@pytest.mark.parametrize(
    "args",
    [
        ("ring", 1, 2),
        ("collective", 1, 0),
        ("collective", 1, 2.0),
        ("collective", -1, 2),
        ("hierarchical_copy", 1, 3),
    ],
)
def test_bad_input_is_refused(args):
    with pytest.raises(ValueError):
        allreduce.bytes_sent(*args)


def test_nccl_only_on_several_real_gpus():
    def course(kind, physical, per, n):
        return SimpleNamespace(
            plan=DevicePlan(kind, physical, per), devices=[f"d{i}" for i in range(n)]
        )

    assert "NVIDIA" in allreduce.unavailable_reasons(course("CPU", 1, 4, 4))["nccl"]
    assert "40735" in allreduce.unavailable_reasons(course("GPU", 1, 2, 2))["nccl"]
    assert "two" in allreduce.unavailable_reasons(course("GPU", 1, 1, 1))["nccl"]
    assert allreduce.unavailable_reasons(course("GPU", 4, 1, 4)) == dict.fromkeys(
        allreduce.ALGORITHMS
    )


def test_the_course_uses_hierarchical_copy_only_between_logical_gpus():
    assert DevicePlan("GPU", 1, 2).allreduce_algorithm == "hierarchical_copy"
    assert DevicePlan("GPU", 4, 1).allreduce_algorithm == "collective"
    assert DevicePlan("CPU", 1, 4).allreduce_algorithm == "collective"
    for plan in (DevicePlan("GPU", 1, 2), DevicePlan("CPU", 1, 1)):
        assert plan.allreduce_algorithm in allreduce.ALGORITHMS


def test_cross_device_ops_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown algorithm"):
        allreduce.cross_device_ops("butterfly")


def test_time_allreduce_checks_the_sum_and_times_it():
    done = run_python("""
        from tflearn_helpers import setup_course, allreduce
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import pytest, tensorflow as tf
        for name in ("collective", "hierarchical_copy", "reduce_to_one"):
            s = tf.distribute.MirroredStrategy(
                course.devices, cross_device_ops=allreduce.cross_device_ops(name))
            t = allreduce.time_allreduce(s, 1000, steps=2)
            assert len(t.samples) == 2 and t.median > 0
        with pytest.raises(ValueError):
            allreduce.time_allreduce(s, 0)
        with pytest.raises(TypeError):
            allreduce.time_allreduce("not a strategy", 10)
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout


def test_two_collective_strategies_in_one_process_clash():
    """Backs lesson 03's advice (one MirroredStrategy per program, tensorflow/tensorflow#62790)."""
    done = run_python("""
        from tflearn_helpers import setup_course, allreduce
        course = setup_course(devices=2, scale="smoke", verbose=False)
        import tensorflow as tf
        allreduce.time_allreduce(tf.distribute.MirroredStrategy(course.devices), 8, steps=1)
        try:
            allreduce.time_allreduce(tf.distribute.MirroredStrategy(course.devices), 16, steps=1)
        except Exception as err:
            print("clash:", type(err).__name__, err)
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "clash:" in done.stdout and "collective" in done.stdout.lower(), done.stdout[-2000:]
