"""tools/save_taught.py: the package's copies of taught code are generated from the lessons
(d2l's ``#@save``), and a stale copy fails here."""

import ast
import fractions
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nbtools  # noqa: E402
import save_taught  # noqa: E402

USES = "from ..taught.lesson07 import double\n"  # tflearn_helpers/topics/demo.py uses it


def test_every_generated_file_in_the_repository_is_what_its_lesson_writes():
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "save_taught.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_saved_name_is_defined_once_in_the_package_in_its_lesson_s_file():
    generated = save_taught.generate()
    package = [f for f in (ROOT / "tflearn_helpers").rglob("*.py") if "taught" not in f.parts]
    for dest, text in generated.items():
        if dest.parent.name != "taught":
            continue  # a whole program
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("_define_"):
                written = f"class {node.name.removeprefix('_define_')}("  # made on first use
            elif isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name[0] != "_":
                written = f"{'class' if isinstance(node, ast.ClassDef) else 'def'} {node.name}("
            else:
                continue
            elsewhere = [f for f in package if written in f.read_text()]
            assert elsewhere == [], (written, elsewhere)


def _course(tmp_path, *cells, module=USES):
    (tmp_path / "notebooks").mkdir(parents=True)
    (tmp_path / "tflearn_helpers" / "topics").mkdir(parents=True)
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in cells]
    )
    path = tmp_path / "notebooks" / "07_demo.ipynb"
    nbtools.write(nb, path)
    (tmp_path / "tflearn_helpers" / "topics" / "demo.py").write_text(module)
    return path


def test_a_lesson_s_saved_functions_make_one_whole_file_with_the_imports_each_uses(tmp_path):
    path = _course(
        tmp_path,
        "import tensorflow as tf\nimport numpy as np\n",
        '''
        # @save topics.demo
        def double(t):
            """Twice t."""
            return tf.constant(2.0) * t


        def not_saved():
            return np.zeros(1)
        ''',
    )
    ((dest, text),) = save_taught.generate(tmp_path, [path]).items()
    assert dest == tmp_path / "tflearn_helpers" / "taught" / "lesson07.py"
    assert text.startswith('"""Generated from lesson 07') and "notebooks/07_demo.ipynb" in text
    assert '"""Twice t."""\n    import tensorflow as tf\n\n    return' in text
    assert "not_saved" not in text and "numpy" not in text
    compile(text, str(dest), "exec")  # a module of its own: nothing it needs is outside it


def test_a_class_on_an_imported_base_is_made_on_first_use(tmp_path):
    path = _course(
        tmp_path,
        "import fractions\n",
        """
        # @save topics.demo
        class Half(fractions.Fraction):
            \"\"\"A fraction, halved.\"\"\"

            def half(self):
                return self / 2
        """,
        module="def half(x):\n    from ..taught.lesson07 import Half\n\n    return Half(x).half()",
    )
    ((dest, text),) = save_taught.generate(tmp_path, [path]).items()
    module = types.ModuleType("lesson07")
    exec(compile(text, str(dest), "exec"), module.__dict__)
    assert "Half" not in vars(module) and "import fractions" not in text.split("def ")[0]
    assert module.Half(3).half() == fractions.Fraction(3, 2)  # made on first use, then kept
    assert "Half" in vars(module) and module.__all__ == ["Half"]
    with pytest.raises(AttributeError, match="Quarter"):
        module.Quarter  # noqa: B018


def test_a_name_the_lesson_neither_imports_nor_saves_is_an_error(tmp_path):
    path = _course(tmp_path, "# @save topics.demo\ndef double():\n    return helper() + 1\n")
    with pytest.raises(ValueError, match=r"helper"):
        save_taught.generate(tmp_path, [path])


def test_a_constant_the_lesson_binds_once_to_a_literal_goes_with_the_definition(tmp_path):
    path = _course(
        tmp_path,
        "KB, MB = 1_000, 1_000_000\nN = 2\nN = 3\nLIMIT = len('ab')\n",
        "# @save topics.demo\ndef double(size=64 * KB):\n    return 2 * size / MB\n",
    )
    ((dest, text),) = save_taught.generate(tmp_path, [path]).items()
    assert "KB = 1000\nMB = 1000000\n" in text and '__all__ = ["double"]' in text  # not exported
    module = {}
    exec(compile(text, str(dest), "exec"), module)
    assert module["double"]() == 2 * 64_000 / 1_000_000
    for bound_twice_or_computed in ("N", "LIMIT"):
        path = _course(
            tmp_path / bound_twice_or_computed,
            "N = 2\nN = 3\nLIMIT = len('ab')\n",
            f"# @save topics.demo\ndef double():\n    return 2 * {bound_twice_or_computed}\n",
        )
        with pytest.raises(ValueError, match=bound_twice_or_computed):
            save_taught.generate(tmp_path / bound_twice_or_computed, [path])


def test_the_module_a_marker_names_imports_the_name_and_keeps_no_copy(tmp_path):
    saved = "# @save topics.demo\ndef double():\n    return 2\n"
    path = _course(tmp_path, saved, module="x = 1\n")
    with pytest.raises(ValueError, match=r"add 'from \.\.taught\.lesson07 import double'"):
        save_taught.generate(tmp_path, [path])
    path = _course(tmp_path / "b", saved, module=USES + "\n\ndef double():\n    return 3\n")
    with pytest.raises(ValueError, match="defines double, which lesson 07 saves"):
        save_taught.generate(tmp_path / "b", [path])
    path = _course(tmp_path / "c", "# @save topics.demo\nx = 2\n")
    with pytest.raises(ValueError, match="just above a def"):
        save_taught.generate(tmp_path / "c", [path])


def test_a_generated_file_no_lesson_saves_to_any_more_is_an_error(tmp_path):
    path = _course(tmp_path, "# @save topics.demo\ndef double():\n    return 2\n")
    ((dest, text),) = save_taught.generate(tmp_path, [path]).items()
    dest.parent.mkdir()
    dest.write_text(text)
    nb = nbtools.read(path)
    nb.cells[0].source = nb.cells[0].source.replace("# @save topics.demo\n", "")
    nbtools.write(nb, path)
    with pytest.raises(ValueError, match=r"lesson07\.py: it says it is generated"):
        save_taught.generate(tmp_path, [path])


def test_a_saved_program_is_the_lesson_s_file_whole_without_its_marker(tmp_path):
    program = (
        '%%writefile worker.py\n"""A worker."""\n# @save-program tflearn_helpers/scripts/w.py\n'
        "import sys\n\nprint(sys.argv)\n"
    )
    path = _course(tmp_path, program)
    (text,) = save_taught.programs(path, tmp_path).values()
    assert (
        text.startswith("# Generated by tools/save_taught.py") and "notebooks/07_demo.ipynb" in text
    )
    assert '"""A worker."""\n\nimport sys\n\nprint(sys.argv)\n' in text and "@save" not in text
    generated = tmp_path / "tflearn_helpers" / "scripts" / "w.py"
    generated.parent.mkdir()
    generated.write_text(text)
    nb = nbtools.read(path)
    nb.cells[0].source = nb.cells[0].source.replace("# @save-program", "# no longer saved:")
    nbtools.write(nb, path)
    with pytest.raises(ValueError, match=r"w\.py: it says it is generated, and no lesson saves"):
        save_taught.generate(tmp_path, [path])


def test_a_program_written_by_several_cells_is_saved_whole(tmp_path):
    cells = [
        '%%writefile $W\n"""A worker."""\n# @save-program tflearn_helpers/scripts/w.py\n'
        "import sys\n",
        "%%writefile -a $W\n\n\ndef one():\n    return 1\n",
        "%%writefile -a $OTHER\nother = 'not this program'\n",
        "x = 2  # a cell between the parts\n",
        "%%writefile -a $W\nprint(sys.argv, one())\n",
        "%%writefile $W\nwritten = 'afresh: no longer the saved program'\n",
        "%%writefile -a $W\nnor = 'this'\n",
    ]
    path = _course(tmp_path, *cells)
    (text,) = save_taught.programs(path, tmp_path).values()
    body = text.split('"""A worker."""\n', 1)[1]
    assert body == "\nimport sys\n\n\ndef one():\n    return 1\n\n\nprint(sys.argv, one())\n"
    nb = nbtools.read(path)
    nb.cells[1].source = nb.cells[1].source + "# @save-program tflearn_helpers/scripts/v.py\n"
    nbtools.write(nb, path)
    with pytest.raises(ValueError, match="writefile -a"):
        save_taught.programs(path, tmp_path)


def test_a_program_grown_by_patched_edits_is_saved_as_it_ends(tmp_path):
    cells = [
        '%%writefile $W\n"""A worker."""\n# @save-program tflearn_helpers/scripts/w.py\n'
        "import sys\n\nprint(sys.argv)\n",
        'W = patched(W, "w.py", ("import sys\\n", "import os\\nimport sys\\n"))\n',
        'PACED = patched(W, "paced.py", ("print(", "sleep(); print("))  # a copy: not saved\n',
        'W = patched(\n    W,\n    "w.py",\n'
        '    ("print(sys.argv)\\n", "print(sys.argv, os.sep)\\n"),\n'
        '    ("import os\\n", "import os  # the separator\\n"),\n)\n',
    ]
    path = _course(tmp_path, *cells)
    (text,) = save_taught.programs(path, tmp_path).values()
    body = text.split('"""A worker."""\n', 1)[1]
    assert body == "\nimport os  # the separator\nimport sys\n\nprint(sys.argv, os.sep)\n"
    for bad, error in [
        ('W = patched(W, "w.py", ("nowhere", "x"))\n', "exactly one place"),
        ('W = patched(W, "w.py", (OLD, "x"))\n', "string literals"),
    ]:
        nb = nbtools.read(path)
        nb.cells.append(nbformat.v4.new_code_cell(bad))
        nbtools.write(nb, tmp_path / "notebooks" / "07_bad.ipynb")
        with pytest.raises(ValueError, match=error):
            save_taught.programs(tmp_path / "notebooks" / "07_bad.ipynb", tmp_path)


MISSPELLED = [
    "#@save demo",
    "#  @save demo",
    "# @Save demo",
    "# @save demo  # the lesson's",
    "# @save-program",
    "#@save-program tflearn_helpers/scripts/w.py",
    "# @save-program tflearn_helpers/scripts/w.py (a worker)",
    "    # @save-program tflearn_helpers/scripts/w.py",
]


def test_a_save_marker_has_one_spelling(tmp_path):
    for line in MISSPELLED:
        assert save_taught.misspelled_marks(f"x = 1\n{line}\ndef f():\n    return 1\n"), line
    spelled = "# @save demo\ndef f():\n    return 1\n# @save-program tflearn_helpers/w.py\n"
    assert save_taught.misspelled_marks(spelled + "s = '# @save is a marker'\n") == []
    path = _course(tmp_path, "#@save topics.demo\ndef f():\n    return 1\n")
    with pytest.raises(ValueError, match=r"spell a save marker.*#@save topics.demo"):
        save_taught.generate(tmp_path, [path])


def test_every_notebook_spells_its_save_markers_one_way():
    """Lessons, solutions and exercises: a marker spelled otherwise would be a line ignored."""
    found = {
        f"{path.parent.name}/{path.name}": bad
        for path in nbtools.course_notebooks()
        for cell in nbtools.read(path).cells
        if cell.cell_type == "code" and (bad := save_taught.misspelled_marks(cell.source))
    }
    assert found == {}


def test_a_lesson_s_setup_and_picks_are_saved_as_data(tmp_path):
    path = _course(
        tmp_path,
        "from tflearn_helpers import setup_course\n"
        "course = setup_course(devices=2, gpu_memory_mb=512)",
        textwrap.dedent(
            """
            N = 2
            IMAGE = pick(smoke=32, cpu=64, gpu=224)  # a comment
            BN_BATCH = pick(smoke=16, cpu=16, gpu=8) * N
            TRAIN, STEPS = pick(smoke=64, cpu=128, gpu=256), pick(smoke=2, cpu=3, gpu=9)
            BATCH, REPEATS = pick(smoke=(8, 2), cpu=(8, 5), gpu=(16, 5))
            SHAPE = pick(smoke=dict(width=64), cpu=dict(width=128), gpu=dict(width=128))
            LATE = pick(smoke=N, cpu=2 * N, gpu=4 * N)  # not literals: not data
            """
        ),
        "%%writefile w.py\nX = pick(smoke=1, cpu=2, gpu=3)\nsetup_course(devices=9)\n",
    )
    setup, sizes = save_taught.sizes(path)
    assert setup == {"devices": 2, "gpu_memory_mb": 512}
    assert sizes == {
        "IMAGE": {"smoke": 32, "cpu": 64, "gpu": 224},
        "BN_BATCH / N": {"smoke": 16, "cpu": 16, "gpu": 8},
        "TRAIN": {"smoke": 64, "cpu": 128, "gpu": 256},
        "STEPS": {"smoke": 2, "cpu": 3, "gpu": 9},
        "BATCH": {"smoke": 8, "cpu": 8, "gpu": 16},
        "REPEATS": {"smoke": 2, "cpu": 5, "gpu": 5},
        "SHAPE": {"smoke": {"width": 64}, "cpu": {"width": 128}, "gpu": {"width": 128}},
    }
    ((dest, text),) = save_taught.generate(tmp_path, [path]).items()
    module = {}
    exec(compile(text, str(dest), "exec"), module)  # data, importable without TensorFlow
    assert module["SETUP"] == setup and module["SIZES"] == sizes
    assert module["__all__"] == ["SETUP", "SIZES"]
    (tmp_path / "tflearn_helpers" / "topics" / "demo.py").write_text("x = 1\n")
    assert save_taught.generate(tmp_path, [path]) == {}  # saved only where something reads them
