import pytest

from tflearn_helpers import precision

AMD = {"avx512_fp16": False, "amx_fp16": False, "avx512_bf16": True, "amx_bf16": False}
AVX2 = dict.fromkeys(AMD, False)


def test_cpu_features_are_read_from_the_flags_line(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags : fpu avx2 avx512f avx512_bf16\n")
    found = precision.cpu_features(str(info))
    assert found["avx512_bf16"] and not found["avx512_fp16"] and not found["amx_bf16"]
    assert precision.cpu_features(str(tmp_path / "missing")) is None


def test_choose_follows_the_hardware_and_refuses_a_slow_kernel():
    fast = {"float32": 0.1, "mixed_bfloat16": 0.08, "mixed_float16": None}
    assert precision.choose("GPU", None, {})[0] == "mixed_float16"
    assert precision.choose("CPU", AMD, fast)[0] == "mixed_bfloat16"
    assert precision.choose("CPU", AVX2, fast)[0] == "float32"  # no bfloat16 units
    assert precision.choose("CPU", None, fast)[0] == "float32"  # flags unknown
    slow = {"float32": 0.1, "mixed_bfloat16": 0.9}
    policy, why = precision.choose("CPU", AMD, slow)
    assert policy == "float32" and "too slow" in why
    assert precision.choose("CPU", AMD, {"float32": 0.1, "mixed_bfloat16": None})[0] == "float32"


def test_probe_rejects_bad_input_before_starting_anything():
    with pytest.raises(ValueError, match="deadline"):
        precision.probe(0)
    with pytest.raises(ValueError, match="mixed_float16"):
        precision.probe(10, ("float8",))


def test_probe_measures_in_a_child_and_gives_up_at_the_deadline():
    measured = precision.probe(120, ("float32",), threads=1)
    assert measured["float32"] > 0
    cut = precision.probe(0.5, ("float32", "mixed_bfloat16"))  # TensorFlow cannot load in 0.5 s
    assert cut == {"float32": None, "mixed_bfloat16": None}
