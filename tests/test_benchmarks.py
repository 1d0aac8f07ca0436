"""Every benchmark imports (its names resolve against the package as it is now); running
one is `python benchmarks/NAME.py` (minutes each), not part of the tests."""

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"benchmark_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # each runs only under `if __name__ == "__main__"`
    return module


@pytest.mark.parametrize("path", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_benchmark_imports(path):
    assert callable(getattr(_load(path), "main", None)), f"{path.name} has no main()"


def test_cpu_features_are_read_from_the_flags_line(tmp_path):
    bench = _load(BENCHMARKS[0].parent / "mixed_precision_cpu.py")
    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags : fpu avx2 avx512f avx512_bf16\n")
    found = bench.cpu_features(str(info))
    assert found["avx512_bf16"] and not found["avx512_fp16"] and not found["amx_bf16"]
    assert bench.cpu_features(str(tmp_path / "missing")) is None
