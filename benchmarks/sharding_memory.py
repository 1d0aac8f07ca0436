"""Lesson 06's memory model against what was measured: recomputation and the ZeRO stages.

One run prints two tables, each as predicted / measured:

- activation recomputation: lesson 06's Transformer program (taken from the notebook's
  ``%%writefile`` cell, so the two cannot drift apart) runs in fresh processes with the BFC
  allocator's statistics on, with and without ``tf.recompute_grad``, one after the other; next
  to each measured peak, the memory model's prediction (``memory.transformer``)
  and the step-time ratio;
- ZeRO stages 0-3 on 2 replicas: lesson 06 itself is executed (smoke scale, plain nbclient),
  and the bytes each replica's variables held (section 2's table) are set against the model's
  prediction. A CPU's logical devices share one allocator, so no per-replica *peak* can be
  measured here; the bytes held are what the replicas' own variables hold.

    python benchmarks/sharding_memory.py [--batch 8] [--steps 3] [--skip-zero]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from tflearn_helpers import memory, programs, report

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "06_sharding_and_memory.ipynb"
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


def recomputation(batch: int, steps: int) -> list[tuple]:
    env = {
        "TF_CPU_ALLOCATOR_USE_BFC": "true",
        "CUDA_VISIBLE_DEVICES": "",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    path, rows = program(), []
    for shape in SHAPES:
        got = {}
        for recompute in (False, True):  # one at a time: the two would share the cores
            argv = json.dumps([shape, batch, recompute, steps])
            child = programs.processes.start(
                [sys.executable, path, argv], env=env, merge_stderr=False
            )
            if child.wait(timeout=900) != 0:
                raise RuntimeError(f"recompute={recompute} failed:\n{child.errors()[-2000:]}")
            got[recompute] = programs.events.parse(child.output(), "result")[-1]
            need = memory.transformer(memory.TransformerShape(**shape), batch, recompute=recompute)
            peak = got[recompute]["peak"]
            rows.append((f"T={shape['seq']} blocks={shape['blocks']}", recompute,
                         need.total / memory.MiB, peak / memory.MiB, need.total / peak,
                         got[recompute]["seconds"] / got[False]["seconds"]))  # fmt: skip
    return rows


def zero_stages(timeout: float = 900) -> list[tuple]:
    """Run lesson 06 at smoke scale; read section 2's table of bytes held per replica."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    os.environ["TFLEARN_SCALE"] = "smoke"
    with tempfile.TemporaryDirectory() as work:
        NotebookClient(nb, timeout=timeout, resources={"metadata": {"path": work}}).execute()
    cell = next(c for c in nb.cells if c.source.startswith("def held_bytes"))
    text = "".join(o.get("data", {}).get("text/plain", o.get("text", "")) for o in cell.outputs)
    rows = []
    for line in text.splitlines():
        fields = line.split()  # a DataFrame's row: index, stage, max gap, bytes held, model bytes
        if len(fields) == 5 and fields[0].isdigit():
            stage, held, predicted = int(fields[1]), int(fields[3]), int(fields[4])
            rows.append((stage, predicted, held, predicted / held))
    if len(rows) != 4:
        raise RuntimeError(f"expected 4 ZeRO stages in lesson 06's table, read:\n{text}")
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--skip-zero", action="store_true", help="only the recomputation table")
    args = parser.parse_args(argv)
    headers = ("model", "recompute", "model MiB", "measured MiB", "model / measured",
               "step time / without")  # fmt: skip
    print(report.format_table(recomputation(args.batch, args.steps), headers))
    if not args.skip_zero:
        headers = ("ZeRO stage (2 replicas)", "model bytes per replica", "bytes held per replica",
                   "model / held")  # fmt: skip
        print(report.format_table(zero_stages(), headers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
