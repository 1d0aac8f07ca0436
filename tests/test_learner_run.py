"""tools/learner_run.py: the learner job's verdict on what lessons 05 and 07 said they could
not show, tried on a run that said it and on runs that did not."""

import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import learner_run  # noqa: E402

LESSON05, LESSON07 = "notebooks/05_communication.ipynb", "notebooks/07_clusters.ipynb"
PRINTED = {
    LESSON05: "link: plain loopback, unshaped. This machine cannot show ... (not asserted)\n",
    LESSON07: "No Slurm cluster here (Slurm is not installed here (no munged)).\n",
}
SUMMARY = [
    {"notebook": LESSON05, "status": "passed",
     "skipped": [{"label": "a shaped link (rates, a slowed or cut link)", "value": "x"}] * 2},
    {"notebook": LESSON07, "status": "passed",
     "skipped": [{"label": "the Slurm jobs (scripts shown, not run)", "value": "x"}]},
    {"notebook": "notebooks/08b_estimator_legacy.ipynb", "status": "skipped",
     "error": "no Jupyter kernel 'tflearn-legacy' here (...: make legacy-env)"},
]  # fmt: skip


def build(folder: Path, summary=SUMMARY, printed=PRINTED) -> Path:
    (folder / "notebooks").mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(summary))
    for name, text in printed.items():
        cell = {"cell_type": "code", "outputs": [{"output_type": "stream", "text": [text]}]}
        (folder / name).write_text(json.dumps({"cells": [cell]}))
    return folder


def test_a_run_that_said_what_it_could_not_show_passes(tmp_path):
    assert learner_run.problems(build(tmp_path)) == []


def changed(index, **fields):
    summary = copy.deepcopy(SUMMARY)
    summary[index].update(fields)
    return summary


@pytest.mark.parametrize(
    "summary, printed, expected",
    [
        (changed(0, status="failed"), PRINTED, "failed, not passed"),
        (changed(0, skipped=SUMMARY[0]["skipped"][:1]), PRINTED, "the summary page lists"),
        (changed(1, skipped=[]), PRINTED, "the summary page lists"),
        (SUMMARY, {**PRINTED, LESSON05: "link: shaped; cannot show; not asserted"}, "plain loop"),
        (SUMMARY, {**PRINTED, LESSON07: PRINTED[LESSON07] + "submitted job 3\n"}, "printed 'sub"),
        (changed(2, status="passed"), PRINTED, "lab 08b: passed"),
        (changed(2, error="no Jupyter kernel"), PRINTED, "lab 08b: skipped"),
    ],
)
def test_a_run_that_did_not_fails_saying_what_is_missing(tmp_path, summary, printed, expected):
    found = learner_run.problems(build(tmp_path, summary, printed))
    assert len(found) == 1 and expected in found[0], found
