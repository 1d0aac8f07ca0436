import pytest

from tflearn_helpers import precision


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
