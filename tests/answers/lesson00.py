"""The tables tests/test_mutations.py runs against the checks of lesson 00
(tflearn_helpers/checks/lesson00.py): ``MUTATIONS``, wrong answers made of the solution's
lines (each must be judged wrong, with a hint), and ``RIGHT_ANSWERS``, right answers written
differently (each must be judged right). Test data: kept out of the learner's wheel."""

from __future__ import annotations

MUTATIONS: dict[str, list[tuple[str, str, str]]] = {}
"""Wrong answers derived from the solution, one plausible mistake each:
exercise -> [(name, text of the solution cell, what it is replaced with)].
tests/test_mutations.py applies each to solutions/00_*.ipynb and expects "wrong"."""

MUTATIONS["00.1"] = [
    ("a hard-coded 4", "return len(tf.config.list_logical_devices(course.plan.kind))", "return 4"),
    (
        "the course's own list of devices",
        "return len(tf.config.list_logical_devices(course.plan.kind))",
        "return len(course.devices)",
    ),
    (
        "the physical devices",
        "list_logical_devices(course.plan.kind)",
        'list_physical_devices("CPU")',
    ),
    (
        "every kind of logical device",
        "list_logical_devices(course.plan.kind)",
        "list_logical_devices()",
    ),
    (
        "a float",
        "return len(tf.config.list_logical_devices(course.plan.kind))",
        "return float(len(tf.config.list_logical_devices(course.plan.kind)))",
    ),
]

MUTATIONS["00.2"] = [
    ("x + 1 where the product is asked", "tf.matmul(x, x)", "x + 1"),
    ("the element-wise product x * x", "tf.matmul(x, x)", "x * x"),
    ("the product with x transposed", "tf.matmul(x, x)", "tf.matmul(x, x, transpose_b=True)"),
    (
        "another dtype",
        "tf.matmul(x, x)",
        "tf.matmul(tf.cast(x, tf.float16), tf.cast(x, tf.float16))",
    ),
    ('a hard-coded "/CPU:3"', "tf.device(device)", 'tf.device("/CPU:3")'),
    (
        "the course's last device, not the argument",
        "tf.device(device)",
        "tf.device(course.devices[-1])",
    ),
    (
        "no device scope",
        "    with tf.device(device):\n        return tf.matmul(x, x)",
        "    return tf.matmul(x, x)",
    ),
    (
        "the product made before the scope",
        "    with tf.device(device):\n        return tf.matmul(x, x)",
        "    product = tf.matmul(x, x)\n"
        "    with tf.device(device):\n        return tf.identity(product)",
    ),
]

MUTATIONS["00.3"] = [
    ("the seed's belief: the scope's device", '"B"', '"A"'),
    ("one copy on every device", '"B"', '"C"'),
    ("not created yet", '"B"', '"D"'),
    ("a device name, not a letter", '"B"', "course.devices[0]"),
]

MUTATIONS["00.4"] = [
    ("one op at a time", '"C"', '"A"'),
    ("matrices too small", '"C"', '"B"'),
    ("soft placement", '"C"', '"D"'),
    ("not a choice", '"C"', '"E"'),
]

MUTATIONS["00.5"] = [
    (
        "the logical devices listed first",
        '    cpu = tf.config.list_physical_devices("CPU")[0]',
        "    print(tf.config.list_logical_devices())\n"
        '    cpu = tf.config.list_physical_devices("CPU")[0]',
    ),
    (
        "a logical device where the physical one is asked",
        'cpu = tf.config.list_physical_devices("CPU")[0]',
        'cpu = tf.config.list_logical_devices("CPU")[0]',
    ),
    (
        "the course's count, not n",
        "LogicalDeviceConfiguration()] * n)",
        "LogicalDeviceConfiguration()] * 4)",
    ),
    ("no placement log", "    tf.debugging.set_log_device_placement(True)\n", ""),
    (
        "the log switched on after the runtime started",
        "    tf.debugging.set_log_device_placement(True)\n",
        '    print(tf.config.list_logical_devices("CPU"))\n'
        "    tf.debugging.set_log_device_placement(True)\n",
    ),
    (
        "the course's setup_course",
        '    cpu = tf.config.list_physical_devices("CPU")[0]',
        "    from tflearn_helpers import setup_course\n\n    setup_course(devices=n)\n"
        '    cpu = tf.config.list_physical_devices("CPU")[0]',
    ),
]

_COUNT = "return len(tf.config.list_logical_devices(course.plan.kind))"

_CONFIGURATION = (
    "tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * n)"
)

# Right answers written differently from the solution, as the exercise's text allows:
# exercise -> [(name, text of the solution cell, what replaces it)]; tests/test_mutations.py
# applies each to solutions/00_*.ipynb and expects "right".
RIGHT_ANSWERS: dict[str, list[tuple[str, str, str]]] = {
    "00.1": [
        (
            "every logical device, filtered by type",
            _COUNT,
            "devices = tf.config.list_logical_devices()\n"
            "    return sum(1 for d in devices if d.device_type == course.plan.kind)",
        ),
        (
            "the devices listed first",
            _COUNT,
            "devices = tf.config.list_logical_devices(course.plan.kind)\n    return len(devices)",
        ),
    ],
    "00.2": [
        ("the @ operator", "return tf.matmul(x, x)", "return x @ x"),
        (
            "the product kept, returned after the scope",
            "        return tf.matmul(x, x)",
            "        product = tf.linalg.matmul(x, x)\n    return product",
        ),
    ],
    "00.3": [
        ("a lower-case letter", '"B"', '"b"'),
        ("spaces around the letter", '"B"', '" B "'),
    ],
    "00.4": [
        ("a lower-case letter", '"C"', '"c"'),
        ("spaces around the letter", '"C"', '"C "'),
    ],
    "00.5": [
        (
            "one configuration per device, in a comprehension",
            _CONFIGURATION,
            "tf.config.set_logical_device_configuration(\n"
            "        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(n)]\n    )",
        ),
        (
            "placement logged first",
            '    cpu = tf.config.list_physical_devices("CPU")[0]\n    ' + _CONFIGURATION + "\n"
            "    tf.debugging.set_log_device_placement(True)\n",
            "    tf.debugging.set_log_device_placement(True)\n"
            '    cpu = tf.config.list_physical_devices("CPU")[0]\n    ' + _CONFIGURATION + "\n",
        ),
    ],
}

# What the hint of a mutation must say: (exercise, name of the mutation) -> words.
HINTS: dict[tuple[str, str], str] = {
    ("00.1", "every kind of logical device"): "another kind",
}
