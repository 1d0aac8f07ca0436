"""Every benchmark imports (its names resolve against the package as it is now); running
one is `python benchmarks/NAME.py` (minutes each), not part of the tests."""

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("path", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_benchmark_imports(path):
    spec = importlib.util.spec_from_file_location(f"benchmark_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # each runs only under `if __name__ == "__main__"`
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"
