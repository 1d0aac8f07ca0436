"""tools/save_taught.py: the package's copies of taught code are generated from the lessons
(d2l's ``#@save``), and a stale copy fails here."""

import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nbtools  # noqa: E402
import save_taught  # noqa: E402

MARKERS = f"{save_taught.BEGIN}\n{save_taught.END}\n"


def test_every_copy_in_the_repository_is_what_its_lesson_writes():
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "save_taught.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_package_has_no_hand_kept_copy_of_a_saved_definition():
    """A name a lesson saves exists once in its destination: inside the generated region."""
    for dest, text in save_taught.generate().items():
        head, rest = text.split(save_taught.BEGIN, 1)
        region, tail = rest.split(save_taught.END, 1)
        for name in save_taught._module_names(region.replace("# Defined", "#")):
            assert f"def {name}(" not in head + tail, (dest, name)


def _course(tmp_path, *cells, module="x = 1\n\n" + MARKERS):
    (tmp_path / "notebooks").mkdir(parents=True)
    (tmp_path / "tflearn_helpers").mkdir()
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in cells]
    )
    path = tmp_path / "notebooks" / "07_demo.ipynb"
    nbtools.write(nb, path)
    (tmp_path / "tflearn_helpers" / "demo.py").write_text(module)
    return path


def test_a_saved_function_gets_its_lesson_line_and_the_imports_it_uses(tmp_path):
    path = _course(
        tmp_path,
        "import tensorflow as tf\nimport numpy as np\n",
        '''
        # @save demo
        def double(t):
            """Twice t."""
            return tf.constant(2.0) * t


        def not_saved():
            return np.zeros(1)
        ''',
    )
    (text,) = save_taught.generate(tmp_path, [path]).values()
    assert "# Defined in lesson 07 (notebooks/07_demo.ipynb).\ndef double(t):" in text
    assert '"""Twice t."""\n    import tensorflow as tf\n\n    return' in text
    assert "not_saved" not in text and "numpy" not in text
    assert text.startswith("x = 1\n") and text.rstrip().endswith(save_taught.END)


def test_a_name_the_destination_lacks_is_an_error_that_says_where(tmp_path):
    path = _course(tmp_path, "# @save demo\ndef f():\n    return helper() + 1\n")
    with pytest.raises(ValueError, match=r"helper"):
        save_taught.generate(tmp_path, [path])


def test_marks_and_markers_that_do_not_pair_up_are_errors(tmp_path):
    path = _course(tmp_path, "# @save demo\nx = 2\n")
    with pytest.raises(ValueError, match="just above a def"):
        save_taught.generate(tmp_path, [path])
    path = _course(tmp_path / "b", "# @save demo\ndef f():\n    return 1\n", module="x = 1\n")
    with pytest.raises(ValueError, match="marker lines"):
        save_taught.generate(tmp_path / "b", [path])
    path = _course(tmp_path / "c", "def f():\n    return 1\n")
    with pytest.raises(ValueError, match="no lesson saves to it"):
        save_taught.generate(tmp_path / "c", [path])
