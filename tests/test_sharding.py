"""sharding.transfers: the copies a traced graph makes between devices (the code lesson 06
writes), and lesson 06's ZeRO steps issuing exactly the collectives its table names."""

import sys
from pathlib import Path

from helpers import run_python

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import nbtools  # noqa: E402

LESSON = nbtools.ROOT / "notebooks" / "06_sharding_and_memory.ipynb"

COPIES = """
from tflearn_helpers import setup_course
course = setup_course(devices=2, verbose=False)
import tensorflow as tf
from tflearn_helpers import sharding

a, b = course.devices
with tf.device(b):
    v = tf.Variable(tf.ones([5, 3]))  # lives on b


@tf.function
def step(x):
    with tf.device(a):
        y = tf.identity(x) * 2.0  # made on a
    with tf.device(b):
        z = y + 1.0  # read on b: one copy of 15 float32
        w = y - 1.0  # read again on b: still that one copy
    with tf.device(a):
        return tf.concat([v, z, w], 0)  # v is read where it lives (b): v, z and w copied to a


found = sharding.transfers(step.get_concrete_function(tf.ones([5, 3])))
assert sorted(nbytes for _, nbytes in found) == [60, 60, 60, 60], found
assert [name for name, _ in found].count("concat") == 3, found
print("ok")
"""


def test_transfers_counts_each_copy_once_and_reads_variables_where_they_live():
    done = run_python(COPIES, timeout=180)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def _section_two() -> str:
    """Lesson 06's code from its sizes to the cell that checks the graphs against ZERO_CALLS."""
    code = [c.source for c in nbtools.read(LESSON).cells if c.cell_type == "code"]
    setup = "from tflearn_helpers import setup_course\ncourse = setup_course(devices=2)\n"
    sizes = next(s for s in code if s.startswith("import collections"))
    program = next(s for s in code if s.startswith("%%writefile")).split("\n", 1)[1]
    start = next(i for i, s in enumerate(code) if s.startswith("devices = course.devices"))
    end = next(i for i, s in enumerate(code) if "sorted(read[stage]) == sorted(kinds)" in s)
    body = "\n".join(code[start : end + 1]).replace("display(", "print(")
    load = (
        f"BLOCK_PROGRAM.write_text({program!r})\n"
        "sys.path.insert(0, str(BLOCK_PROGRAM.parent))\n"
        "from transformer_block import Block, transformer\n"
    )
    return "\n".join([setup, "import sys", sizes, load, body, "print('ok')"])


def test_lesson06_zero_steps_issue_the_collectives_of_its_table():
    """Each stage's traced step moves data only in the collectives ZERO_CALLS names, with the
    ring model's bytes (the lesson's own asserts, run on their own)."""
    done = run_python(_section_two(), timeout=600, env={"TFLEARN_SCALE": "smoke"})
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
