"""benchmarks/pipeline_vs_naive.py: its schedules and its arguments (no TensorFlow needed)."""

import importlib.util
import pathlib

import pytest

PATH = pathlib.Path(__file__).parents[1] / "benchmarks" / "pipeline_vs_naive.py"


def _benchmark():
    spec = importlib.util.spec_from_file_location("pipeline_vs_naive", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_schedules_run_every_pass_once_in_a_valid_order():
    bench = _benchmark()
    for schedule in (bench.fill_drain, bench.one_f_one_b):
        for k, m in ((2, 1), (2, 4), (4, 8)):
            for order in schedule(k, m):
                assert sorted(order) == sorted(
                    [("B", i) for i in range(m)] + [("F", i) for i in range(m)]
                )
                assert all(order.index(("F", i)) < order.index(("B", i)) for i in range(m))
    assert bench.one_f_one_b(2, 3)[0] == [
        ("F", 0),
        ("F", 1),
        ("B", 0),
        ("F", 2),
        ("B", 1),
        ("B", 2),
    ]


def test_arguments_are_checked():
    bench = _benchmark()
    args = bench.parse_args(["--micro", "2,4", "--intra-op-threads", "1"])
    assert (args.micro, args.intra_op_threads, args.batch) == ([2, 4], 1, 32)
    assert bench.parse_args([]).intra_op_threads is None  # both settings, in child processes
    with pytest.raises(SystemExit):
        bench.parse_args(["--batch", "10", "--micro", "4"])  # 10 does not split into 4
