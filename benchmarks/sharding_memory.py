"""Lesson 06's memory model against what was measured: recomputation, and the lesson's figures.

One run prints two tables:

- activation recomputation, as predicted / measured: lesson 06's Transformer program (taken
  from the notebook's ``%%writefile`` cell, so the two cannot drift apart) runs in fresh
  processes with the BFC allocator's statistics on, with and without ``tf.recompute_grad``, one
  after the other; next to each measured peak, the memory model's prediction
  (``memory.transformer``) and the step-time ratio;
- lesson 06's headline figures: the lesson itself is executed (smoke scale, plain nbclient) and
  its ``headline`` figures are read from the outputs' metadata (``report.HEADLINE_KEY``, as the
  course runner reads them): ZeRO-3's state and measured peak per replica against plain data
  parallelism among them. The lesson asserts that the bytes each replica holds at every ZeRO
  stage equal the model's, so those are not measured again here.

    python benchmarks/sharding_memory.py [--batch 8] [--steps 3] [--skip-lesson]
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


def program(folder: Path) -> Path:
    """Lesson 06's ``%%writefile`` program, written into ``folder``."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    source = next(
        "".join(c["source"]) for c in cells if "".join(c["source"]).startswith("%%writefile")
    )
    path = folder / "transformer_block.py"
    path.write_text(source.split("\n", 1)[1])
    return path


def recomputation(batch: int, steps: int) -> list[tuple]:
    env = {
        "TF_CPU_ALLOCATOR_USE_BFC": "true",
        "CUDA_VISIBLE_DEVICES": "",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    rows = []
    with tempfile.TemporaryDirectory() as work:  # the program's copy goes with it
        path = program(Path(work))
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
                need = memory.transformer(
                    memory.TransformerShape(**shape), batch, recompute=recompute
                )
                peak = got[recompute]["peak"]
                rows.append((f"T={shape['seq']} blocks={shape['blocks']}", recompute,
                             need.total / memory.MiB, peak / memory.MiB, need.total / peak,
                             got[recompute]["seconds"] / got[False]["seconds"]))  # fmt: skip
    return rows


def lesson_headlines(timeout: float = 900) -> list[tuple[str, str]]:
    """Run lesson 06 at smoke scale; its headline figures, (label, value), in order."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    os.environ["TFLEARN_SCALE"] = "smoke"
    with tempfile.TemporaryDirectory() as work:
        NotebookClient(nb, timeout=timeout, resources={"metadata": {"path": work}}).execute()
    figures = [
        output["metadata"][report.HEADLINE_KEY]
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if report.HEADLINE_KEY in output.get("metadata", {})
    ]
    if not any("ZeRO-3" in f["label"] for f in figures):
        raise RuntimeError(f"lesson 06 showed no ZeRO-3 headline; it showed {figures}")
    return [(f["label"], f["value"]) for f in figures]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--skip-lesson", action="store_true", help="only the recomputation table")
    args = parser.parse_args(argv)
    headers = ("model", "recompute", "model MiB", "measured MiB", "model / measured",
               "step time / without")  # fmt: skip
    print(report.format_table(recomputation(args.batch, args.steps), headers))
    if not args.skip_lesson:
        print(report.format_table(lesson_headlines(), ("lesson 06 (smoke)", "measured")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
