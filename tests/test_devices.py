import pytest

from tflearn_helpers.runtime.devices import MAX_SIMULATED, plan_devices


def test_cpu_only_machine_gets_logical_cpus():
    plan = plan_devices(4, n_gpus=0)
    assert (plan.kind, plan.total, plan.simulated) == ("CPU", 4, True)


def test_enough_real_gpus_are_used_as_they_are():
    plan = plan_devices(2, n_gpus=8)
    assert (plan.kind, plan.total, plan.simulated) == ("GPU", 8, False)


def test_one_gpu_is_split_and_several_gpus_share_the_split():
    assert plan_devices(4, n_gpus=1).total == 4
    plan = plan_devices(4, n_gpus=3)
    assert plan.per_physical == 2 and plan.total == 6


def test_no_request_means_the_hardware_as_it_is():
    assert plan_devices(None, n_gpus=0).total == 1
    assert plan_devices(None, n_gpus=2).total == 2


@pytest.mark.parametrize("bad", [0, -1, MAX_SIMULATED + 1])
def test_impossible_counts_say_what_is_possible(bad):
    with pytest.raises(ValueError, match=f"1 to {MAX_SIMULATED}"):
        plan_devices(bad, n_gpus=0)


@pytest.mark.parametrize("bad", [2.0, "4", True])
def test_non_integer_counts_are_type_errors(bad):
    with pytest.raises(TypeError):
        plan_devices(bad, n_gpus=0)
