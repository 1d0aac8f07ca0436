import pytest

from tflearn_helpers import precision


def test_cpu_features_are_read_from_the_flags_line(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags : fpu avx2 avx512f avx512_bf16\n")
    found = precision.cpu_features(str(info))
    assert found["avx512_bf16"] and not found["avx512_fp16"] and not found["amx_bf16"]
    assert precision.cpu_features(str(tmp_path / "missing")) is None


def test_probe_rejects_bad_input_before_starting_anything():
    with pytest.raises(ValueError, match="deadline"):
        precision.probe(0)
    with pytest.raises(ValueError, match="mixed_float16"):
        precision.probe(10, ("float8",))


def test_probe_measures_in_a_child_and_gives_up_at_the_deadline():
    measured = precision.probe(120, ("float32",), threads=1)
    assert measured["float32"] > 0
    # 0.05 s: not even for a fork of a server that has imported TensorFlow (runtime, trace, steps)
    cut = precision.probe(0.05, ("float32", "mixed_bfloat16"))
    assert cut == {"float32": None, "mixed_bfloat16": None}
