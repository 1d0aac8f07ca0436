"""transfers: the copies a traced graph makes between devices (the code lesson 06
writes). That lesson's ZeRO steps issue exactly the collectives its table names: the lesson
asserts it itself, at cpu in make test's main job and at smoke on the oldest stack."""

from helpers import run_python

COPIES = """
from tflearn_helpers import setup_course
course = setup_course(devices=2, verbose=False)
import tensorflow as tf
from tflearn_helpers.taught.lesson06 import transfers

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


found = transfers(step.get_concrete_function(tf.ones([5, 3])))
assert sorted(nbytes for _, nbytes in found) == [60, 60, 60, 60], found
assert [name for name, _ in found].count("concat") == 3, found
print("ok")
"""


def test_transfers_counts_each_copy_once_and_reads_variables_where_they_live():
    done = run_python(COPIES, timeout=180)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
