import pytest

from tflearn_helpers import scripts


def test_every_lesson_script_is_found():
    names = [p.name for p in scripts.FOLDER.glob("*.py") if p.name != "__init__.py"]
    assert "multi_worker_train.py" in names and "estimator_task.py" in names
    for name in names:
        assert scripts.path(name).is_file()


@pytest.mark.parametrize("bad", ["nope.py", "multi_worker_train", "../cluster.py"])
def test_unknown_scripts_name_the_known_ones(bad):
    with pytest.raises(FileNotFoundError, match="multi_worker_train.py"):
        scripts.path(bad)
