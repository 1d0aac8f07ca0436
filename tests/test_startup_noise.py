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


def test_hide_tf_log_drops_cpp_log_lines_of_both_stacks_and_keeps_the_rest():
    text = (
        "E0000 00:00:1796130835.552419   12699 meta_optimizer.cc:967] tf_auto_shard failed\n"
        "I1201 13:00:01.123456    4458 port.cc:153] oneDNN custom operations are on.\n"
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow\n"
        "UserWarning: a warning the learner should read\n"
        "E0000 is how the log starts\n"
    )
    kept, hidden = startup_noise.hide_tf_log(text)
    assert hidden == 4
    assert kept == "UserWarning: a warning the learner should read\nE0000 is how the log starts\n"


def test_keras_shuffle_warning_about_an_argument_nobody_passed_is_ignored():
    import warnings

    startup_noise.ignore_misleading_warnings()
    with warnings.catch_warnings(record=True) as seen:
        keras_says = "`shuffle=True` was passed, but will be ignored since the data"
        warnings.warn(keras_says, UserWarning, stacklevel=1)
        warnings.warn("a warning the learner should see", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["a warning the learner should see"]
