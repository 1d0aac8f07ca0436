"""Generated from lesson 04 by tools/save_taught.py: edit the lesson, then run it.

The lesson: notebooks/04_multi_worker.ipynb.
SETUP: its setup cell's settings; SIZES: each pick(smoke=..., cpu=..., gpu=...) it makes.
Each definition is the lesson's, with the lesson's imports of what it uses inside its body.
"""

__all__ = ["SETUP", "SIZES", "final_weights", "median_step_s"]

SETUP = {"devices": 2}
SIZES = {
    "STEPS": {"smoke": 24, "cpu": 40, "gpu": 80},
    "SAVE_EVERY": {"smoke": 8, "cpu": 8, "gpu": 16},
    "STEP_DELAY": {"smoke": 0.1, "cpu": 0.2, "gpu": 0.2},
    "WAIT": {"smoke": 2, "cpu": 5, "gpu": 10},
    "EPOCH_STEPS": {"smoke": 6, "cpu": 20, "gpu": 40},
    "SAVE_FREQ": {"smoke": 3, "cpu": 8, "gpu": 16},
}


def final_weights(log):  # the arrays of a worker's last "done" event, in the model's order
    import numpy as np

    from tflearn_helpers import programs

    done = programs.events.parse(log, "done")[-1]
    return [np.asarray(w, np.float32) for w in done["weights"]]


def median_step_s(steps, skip=2):  # step events ({"step", "time", ...}): the median gap
    import statistics

    times = [e["time"] for e in steps][skip:]  # the first `skip` (tracing) left out
    return statistics.median(b - a for a, b in zip(times, times[1:], strict=False))
