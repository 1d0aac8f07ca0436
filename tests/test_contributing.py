"""CONTRIBUTING.md stays a map a maintainer can trust: at most 1,500 words, and its module table
is the one tools/module_table.py writes from the package's docstrings, naming only modules
that exist."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import module_table  # noqa: E402

MAX_WORDS = 1500
TEXT = (ROOT / "CONTRIBUTING.md").read_text()


def test_contributing_is_at_most_1500_words():
    words = len(TEXT.split())  # as wc -w counts them
    assert words <= MAX_WORDS, f"CONTRIBUTING.md has {words} words; at most {MAX_WORDS}"


def test_module_table_is_current(capsys):
    assert module_table.main(["--check"]) == 0, capsys.readouterr().out


def test_module_table_names_only_modules_that_exist():
    listed = module_table.listed(TEXT)
    assert len(listed) > 40, f"read {len(listed)} rows: is the pattern right?"
    missing = [name for name in listed if not (module_table.PACKAGE / name).is_file()]
    assert not missing, f"CONTRIBUTING.md lists modules that do not exist: {missing}"


def test_a_stale_or_missing_row_is_caught():
    current = module_table.with_table(TEXT)
    gone = current.replace(
        "- `topics/placement.py`:",
        "- `topics/parameter_server.py`: Gone.\n- `topics/placement.py`:",
    )
    assert gone != current and module_table.with_table(gone) == current
    assert "topics/parameter_server.py" in module_table.listed(gone)
    dropped = "\n".join(line for line in current.splitlines() if "`topics/mirrored.py`" not in line)
    assert module_table.with_table(dropped + "\n") != dropped + "\n"
    assert module_table.listed(current).count("checks/lesson05.py") == 1  # lessonNN expanded
