"""Activation recomputation: predicted vs measured peak memory, and the time it costs.

Runs lesson 08's Transformer program (taken from the notebook's ``%%writefile`` cell, so the
two cannot drift apart) in fresh processes with the BFC allocator's statistics on, with and
without ``tf.recompute_grad``, side by side in one run, and prints the memory model's
prediction (``memory.transformer``) next to each measured peak, and the step-time ratio.
It also prints the per-replica state ZeRO stages 0-3 leave on N replicas, from the model
(lesson 08 checks those bytes against each replica's variables; a CPU's logical devices share
one allocator, so no per-replica peak can be measured here).

    python benchmarks/sharding_memory.py [--batch 8] [--steps 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from tflearn_helpers import cluster, memory, print_table

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "08_sharding_and_memory.ipynb"
SHAPES = (
    dict(vocab=256, seq=128, width=64, heads=4, blocks=4),
    dict(vocab=256, seq=256, width=64, heads=4, blocks=4),
)


def program() -> Path:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    source = next(
        "".join(c["source"]) for c in cells if "".join(c["source"]).startswith("%%writefile")
    )
    path = Path(tempfile.mkdtemp()) / "transformer_block.py"
    path.write_text(source.split("\n", 1)[1])
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args(argv)
    env = {
        "TF_CPU_ALLOCATOR_USE_BFC": "true",
        "CUDA_VISIBLE_DEVICES": "",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    path, rows = program(), []
    for shape in SHAPES:
        got = {}
        for recompute in (False, True):  # one at a time: the two would share the cores
            argv_ = json.dumps([shape, args.batch, recompute, args.steps])
            child = cluster.processes.start(
                [sys.executable, path, argv_], env=env, merge_stderr=False
            )
            got[recompute] = cluster.events.result(child, 900, f"recompute={recompute}")[0]
            need = memory.transformer(
                memory.TransformerShape(**shape), args.batch, recompute=recompute
            )
            peak = got[recompute]["peak"]
            rows.append((f"T={shape['seq']} blocks={shape['blocks']}", recompute,
                         need.total / memory.MiB, peak / memory.MiB, need.total / peak,
                         got[recompute]["seconds"] / got[False]["seconds"]))  # fmt: skip
    print_table(rows, ("model", "recompute", "model MiB", "measured MiB", "model / measured",
                       "step time / without"))  # fmt: skip
    shape = memory.TransformerShape(**SHAPES[0])
    state = [memory.transformer(shape, args.batch, replicas=4, zero=z) for z in range(4)]
    held = [(z, (f.total - f.activations - f.inputs) / memory.MiB) for z, f in enumerate(state)]
    print_table(held, ("ZeRO stage (4 replicas)", "state MiB per replica (model)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
