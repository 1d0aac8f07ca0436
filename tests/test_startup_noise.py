import os

from tflearn_helpers.runtime import startup_noise


def test_known_noise_is_dropped_and_everything_else_kept(capfd):
    with startup_noise.filtered():
        os.write(2, b"WARNING: All log messages before absl::InitializeLog() is called are\n")
        os.write(2, b"E0000 cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)\n")
        os.write(2, b"W0000 a real warning the learner should read\n")
    err = capfd.readouterr().err
    assert "a real warning" in err
    assert "cuInit" not in err and "InitializeLog" not in err


def test_descriptor_2_is_restored_even_when_the_block_fails(capfd):
    try:
        with startup_noise.filtered():
            os.write(2, b"kept before the failure\n")
            raise KeyError("boom")
    except KeyError:
        pass
    os.write(2, b"after the block\n")
    err = capfd.readouterr().err
    assert "kept before the failure" in err and "after the block" in err


def test_to_terminal_is_heard_from_inside_a_filtered_block(capfd):
    with startup_noise.filtered():
        startup_noise.to_terminal("FAIL  a watchdog gave up\n")
        os.write(2, b"failed call to cuInit\n")
    assert capfd.readouterr().err == "FAIL  a watchdog gave up\n"
