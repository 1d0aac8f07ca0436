"""Generated from lesson 05 by tools/save_taught.py: edit the lesson, then run it.

The lesson: notebooks/05_communication.ipynb.
SETUP: its setup cell's settings; SIZES: each pick(smoke=..., cpu=..., gpu=...) it makes.
Each definition is the lesson's, with the lesson's imports of what it uses inside its body.
"""

__all__ = ["SETUP", "SIZES", "fit_alpha_beta"]

SETUP = {"devices": 4}
SIZES = {
    "SIZES": {
        "smoke": [4, 64, 512, 1000, 2000, 4000, 8000],
        "cpu": [4, 64, 512, 1000, 4000, 8000, 16000, 32000],
        "gpu": [4, 64, 512, 1000, 4000, 8000, 16000, 32000],
    },
    "RATES": {"smoke": [300, 600], "cpu": [200, 500], "gpu": [200, 500]},
    "BIG_BATCH": {"smoke": 384, "cpu": 2048, "gpu": 2048},
    "CROSS_BATCHES": {
        "smoke": [32, 128, 384, 1152],
        "cpu": [32, 128, 512, 2048],
        "gpu": [32, 128, 512, 2048],
    },
    "OPT_BATCH": {"smoke": 512, "cpu": 2048, "gpu": 2048},
    "ROUNDS": {"smoke": 2, "cpu": 3, "gpu": 3},
    "REPEATS": {"smoke": 3, "cpu": 5, "gpu": 5},
    "PASSES": {"smoke": 4, "cpu": 7, "gpu": 7},
    "STEPS": {"smoke": 3, "cpu": 8, "gpu": 8},
}
KB = 1000


def fit_alpha_beta(times, large=64 * KB):
    """alpha, beta of t = alpha + beta*S: beta the slope over the sizes above ``large``,
    alpha what the smallest size took beyond beta*S."""
    import numpy as np

    beta = np.polyfit(*zip(*[(s, t) for s, t in times.items() if s > large], strict=True), 1)[0]
    smallest = min(times)
    return float(times[smallest] - beta * smallest), float(beta)
