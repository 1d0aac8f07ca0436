"""The fork server: a Python command starts as a fork of a process that imported TensorFlow,
and behaves as a fresh `python ...` would (argv, environment, paths, output, exit codes)."""

import json
import subprocess
import sys
import textwrap

import pytest

from tflearn_helpers.programs import fork_server, processes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def _run(command, **options) -> processes.Child:
    child = processes.start(command, **options)
    child.wait(120)
    return child


def test_a_script_sees_what_a_fresh_interpreter_would(tmp_path, monkeypatch):
    monkeypatch.setenv("TFLEARN_DROP_ME", "1")
    (tmp_path / "helper_module.py").write_text("VALUE = 7\n")
    script = tmp_path / "program.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, os, sys
            import helper_module  # found beside the script: sys.path[0] is its folder
            print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "x": os.environ.get("X"),
                              "dropped": "TFLEARN_DROP_ME" in os.environ,
                              "value": helper_module.VALUE, "name": __name__,
                              "tf": "tensorflow" in sys.modules}))
            print("to stderr", file=sys.stderr)
            sys.exit(3)
            """
        )
    )
    child = _run(
        [sys.executable, "-u", script, "a", 1],
        env={"X": "5"},
        unset=("TFLEARN_DROP_ME",),
        cwd=tmp_path,
        merge_stderr=False,
    )
    assert isinstance(child.process, fork_server.Forked)
    assert child.returncode == 3
    said = json.loads(child.output().strip().splitlines()[-1])
    assert said == {
        "argv": [str(script), "a", "1"],
        "cwd": str(tmp_path),
        "x": "5",
        "dropped": False,
        "value": 7,
        "name": "__main__",
        "tf": True,  # imported before the fork: the point of the server
    }
    assert child.errors().strip() == "to stderr"


def test_code_and_modules_run_as_main_and_exit_as_python_does():
    code = "import sys; print(sys.argv, __name__); raise SystemExit('no luck')"
    child = _run([sys.executable, "-c", code, "arg"])
    assert child.returncode == 1 and "['-c', 'arg'] __main__\nno luck" in child.output()
    crash = _run([sys.executable, "-c", "1 / 0"])
    assert crash.returncode == 1 and "ZeroDivisionError" in crash.output()
    module = _run([sys.executable, "-m", "json.tool", "--help"])
    assert module.returncode == 0 and "usage:" in module.output()
    assert all(isinstance(c.process, fork_server.Forked) for c in (child, crash, module))


def test_children_of_one_server_are_separate_processes():
    code = "import os, numpy; print(os.getpid(), numpy.random.random())"
    first, second = (_run([sys.executable, "-c", code]) for _ in range(2))
    assert first.process.server is second.process.server
    (pid_a, random_a), (pid_b, random_b) = (c.output().split() for c in (first, second))
    assert pid_a != pid_b and random_a != random_b  # numpy reseeded, as in a fresh process


def test_import_time_settings_pick_the_server_later_ones_do_not():
    code = "print('ok')"
    base = processes.start([sys.executable, "-c", code], env={"TF_CONFIG": "{}"})
    other_task = processes.start([sys.executable, "-c", code], env={"TF_CONFIG": '{"a": 1}'})
    legacy = processes.start([sys.executable, "-c", code], env={"TF_USE_LEGACY_KERAS": "1"})
    for child in (base, other_task, legacy):
        assert child.wait(120) == 0
    assert base.process.server is other_task.process.server
    assert legacy.process.server is not base.process.server


def test_what_it_does_not_fork(monkeypatch):
    assert isinstance(_run(["sh", "-c", "exit 0"]).process, subprocess.Popen)
    assert isinstance(_run([sys.executable, "-c", "pass"], fresh=True).process, subprocess.Popen)
    assert isinstance(_run([sys.executable, "-X", "utf8", "-c", "pass"]).process, subprocess.Popen)
    monkeypatch.setenv(fork_server.SWITCH_ENV, "0")
    assert isinstance(_run([sys.executable, "-c", "pass"]).process, subprocess.Popen)


def test_a_server_that_cannot_start_falls_back_to_a_fresh_interpreter(tmp_path, capsys):
    (tmp_path / "tensorflow.py").write_text("raise ImportError('no TensorFlow here')\n")
    child = _run([sys.executable, "-c", "print('ran')"], env={"PYTHONPATH": str(tmp_path)})
    assert isinstance(child.process, subprocess.Popen) and child.output().strip() == "ran"
    assert "no TensorFlow here" in capsys.readouterr().err  # the server's log, shown once


def test_a_stopped_server_takes_its_children_with_it():
    child = processes.start([sys.executable, "-c", "import time; time.sleep(60)"])
    server = child.process.server
    server.popen.kill()
    assert child.wait(30) == -9  # the death signal
    assert not child.running()
    fork_server.stop_all()
    assert fork_server._SERVERS == {}


def test_servers_are_few_an_idle_one_makes_room(monkeypatch):
    fork_server.stop_all()
    monkeypatch.setattr(fork_server, "MAX_SERVERS", 1)
    sleeper = processes.start([sys.executable, "-c", "import time; time.sleep(60)"])
    busy = _run([sys.executable, "-c", "pass"], env={"OTHER": "1"})  # the only server is busy
    assert isinstance(busy.process, subprocess.Popen)
    sleeper.stop()
    idle = _run([sys.executable, "-c", "pass"], env={"OTHER": "1"})  # now it makes room
    assert isinstance(idle.process, fork_server.Forked)
    assert idle.process.server is not sleeper.process.server
    assert list(fork_server._SERVERS.values()) == [idle.process.server]


def test_a_server_that_cannot_start_says_why_and_the_command_runs_fresh(tmp_path, capfd):
    """A server whose `import tensorflow` fails: its log's last lines reach stderr, and the
    command starts as a fresh interpreter instead (which meets the same error itself)."""
    (tmp_path / "tensorflow.py").write_text("raise ImportError('a broken TensorFlow here')\n")
    child = _run([sys.executable, "-c", "print('ran')"], env={"PYTHONPATH": str(tmp_path)})
    assert isinstance(child.process, subprocess.Popen)
    assert child.returncode == 0 and "ran" in child.output()
    said = capfd.readouterr().err
    assert "fork server" in said and "a broken TensorFlow here" in said, said


def test_a_child_that_cannot_be_set_up_says_why_in_its_own_log():
    """child_setup fails in the fork (a core this machine does not have): its traceback is in
    the child's log and the child exits with 1 (without the fork, start() itself raises)."""
    child = _run([sys.executable, "-c", "print('PROGRAM' + 'RAN')"], core=10_000)
    assert isinstance(child.process, fork_server.Forked)
    assert child.returncode == 1 and "PROGRAMRAN" not in child.output()
    assert "OSError" in child.output() or "Invalid argument" in child.output(), child.output()


def test_a_prepared_server_takes_the_programs_started_after_tensorflow_is_imported(monkeypatch):
    """setup_course(programs=True) prepares a server before its own import of TensorFlow, and
    that import writes variables into os.environ: the programs started later fork from it."""
    fork_server.stop_all()
    for name in fork_server.SET_BY_IMPORT:
        monkeypatch.delenv(name, raising=False)
    fork_server.prepare()
    fork_server.prepare()  # again: the same server
    assert len(fork_server._SERVERS) == 1
    prepared = next(iter(fork_server._SERVERS.values()))
    written = {"TF2_BEHAVIOR": "1", "TPU_ML_PLATFORM": "Tensorflow", "TPU_ML_PLATFORM_VERSION": "2"}
    written.update({"HDF5_PLUGIN_PATH": "disable", "ENABLE_RUNTIME_UPTIME_TELEMETRY": "1"})
    for name, value in written.items():  # as the import writes them
        monkeypatch.setenv(name, value)
    child = _run([sys.executable, "-c", "print('ok')"])
    assert child.process.server is prepared and child.output().strip() == "ok"
    monkeypatch.setenv("ENABLE_RUNTIME_UPTIME_TELEMETRY", "0")  # set by the user: it counts
    assert _run([sys.executable, "-c", "pass"]).process.server is not prepared
