import numpy as np
import pytest

from tflearn_helpers.runtime import validate


@pytest.mark.parametrize("value", [0, 3, np.int64(2)])
def test_whole_numbers_pass_and_come_back_as_int(value):
    assert validate.is_whole_number(value)
    assert type(validate.whole_number("n", value)) is int


@pytest.mark.parametrize("value", [True, 2.0, "2", None])
def test_non_integers_are_refused_with_the_name(value):
    assert not validate.is_whole_number(value)
    with pytest.raises(validate.WholeNumberError, match=r"^n must be a whole number, got"):
        validate.whole_number("n", value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"minimum": 1}, "a whole number >= 1"),
        ({"maximum": -1}, "a whole number <= -1"),
        ({"minimum": 1, "maximum": 4}, "a whole number from 1 to 4"),
    ],
)
def test_out_of_range_says_what_is_accepted(kwargs, message):
    with pytest.raises(ValueError, match=message):
        validate.whole_number("devices", 0, **kwargs)


def test_the_error_is_both_a_value_error_and_a_type_error():
    assert issubclass(validate.WholeNumberError, ValueError)
    assert issubclass(validate.WholeNumberError, TypeError)


def test_dns_label_accepts_kubernetes_names_and_names_the_rule():
    assert validate.dns_label("mwms-lesson04") == "mwms-lesson04"
    for bad in ("Upper", "-dash", "a" * 64, "under_score", 6):
        with pytest.raises(ValueError, match="DNS label"):
            validate.dns_label(bad)


def test_container_command_wants_an_image_and_a_list_of_strings():
    validate.container_command("registry/tflearn:1.0", ["python", "w.py"])
    with pytest.raises(ValueError, match="container image"):
        validate.container_command(" ", ["python"])
    for bad in ("python w.py", [], ["python", 3]):
        with pytest.raises(ValueError, match="non-empty list of strings"):
            validate.container_command("img", bad)


def test_counts_names_the_first_that_is_not_a_count():
    validate.counts(batch=8, replicas=np.int64(2))
    with pytest.raises(validate.WholeNumberError, match=r"^replicas must be a whole number >= 1"):
        validate.counts(batch=8, replicas=0)
