import sys

from helpers import run_python


def test_setup_creates_devices_and_prints_the_table():
    done = run_python("""
        import sys
        from tflearn_helpers import setup_course
        assert "tensorflow" not in sys.modules  # importing the package must not load TF
        env = setup_course(devices=3, scale="smoke")
        assert len(env.devices) == 3 and env.simulated and env.scale == "smoke"
        assert env.mirrored_strategy().num_replicas_in_sync == 3
        assert env.mirrored_strategy(2).num_replicas_in_sync == 2
        assert env.mirrored_strategy(2) is env.mirrored_strategy(2)  # made once (#62790)
        try:
            env.mirrored_strategy(4)
        except ValueError as err:
            assert "setup_course(devices=4)" in str(err)
        else:
            raise AssertionError("4 of 3 devices should be refused")
        setup_course(devices=3, scale="smoke", verbose=False)  # re-running the cell is fine
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "scale profile" in done.stdout and "3 x CPU" in done.stdout


def test_intra_op_threads_is_set_before_tensorflow_starts():
    done = run_python("""
        from tflearn_helpers import setup_course
        setup_course(devices=2, scale="smoke", intra_op_threads=1, verbose=False)
        import tensorflow as tf
        tf.constant(1.0) + 1
        assert tf.config.threading.get_intra_op_parallelism_threads() == 1
        setup_course(devices=2, scale="smoke", intra_op_threads=1, verbose=False)  # re-run
    """)
    assert done.returncode == 0, done.stderr[-3000:]


def test_configuring_devices_too_late_says_restart_the_kernel():
    done = run_python(
        """
        import tensorflow as tf
        tf.constant(1.0) + 1  # TensorFlow initialises its devices here
        from tflearn_helpers import setup_course
        setup_course(devices=4, onednn=False)
    """,
        env={"TF_ENABLE_ONEDNN_OPTS": "0"},
    )
    assert done.returncode != 0
    assert "DevicesAlreadyInitializedError" in done.stderr
    assert "Restart the kernel" in done.stderr


def test_legacy_keras_after_import_is_refused():
    done = run_python("""
        import tensorflow
        from tflearn_helpers import setup_course
        setup_course(legacy_keras=True)
    """)
    assert done.returncode != 0 and "TF_USE_LEGACY_KERAS" in done.stderr


def test_legacy_keras_switch_gives_keras_2():
    done = run_python("""
        from tflearn_helpers import setup_course
        env = setup_course(legacy_keras=True, verbose=False)
        assert env.keras_version.startswith("2."), env.keras_version
    """)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_wrong_device_count_is_a_clear_error():
    done = run_python("from tflearn_helpers import setup_course; setup_course(devices=0)")
    assert done.returncode != 0 and "ask for 1 to" in done.stderr
    assert sys.executable  # the snippet ran in this interpreter's environment
