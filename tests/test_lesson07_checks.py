"""Lesson 07's checks: the batch script's options as sbatch reads them, the hints given before
anything is submitted, and (where Slurm is installed) a right script and a right task on a
real local cluster. tests/test_mutations.py answers every wrong variant of the solutions (and
runs 07.2's solution, a right task, on its own cluster)."""

import pytest

from tflearn_helpers.checks import check
from tflearn_helpers.checks.lesson07 import batch_script, resuming_task, sbatch_options
from tflearn_helpers.cluster import slurm

GOOD = """#!/bin/bash
#SBATCH --job-name=mwms
#SBATCH -N 2
#SBATCH --ntasks-per-node=1 --time=00:10:00  # two options on one line
#SBATCH --output=%x-%j.out
#SBATCH --signal=USR1@60
#SBATCH --requeue
srun python worker.py "$@"
#SBATCH --nodes=9
if [ $? -eq 42 ]; then scontrol requeue "$SLURM_JOB_ID"; fi
"""


def test_sbatch_options_are_read_until_the_first_command():
    options = sbatch_options(GOOD)
    assert options == {
        "job-name": "mwms", "nodes": "2", "ntasks-per-node": "1", "time": "00:10:00",
        "output": "%x-%j.out", "signal": "USR1@60", "requeue": "",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("script", "hint"),
    [
        (GOOD.replace("#!/bin/bash\n", ""), "#!/bin/bash"),
        (GOOD.replace("srun python", "python"), "in every task"),
        (GOOD.replace("#SBATCH --signal=USR1@60\n", ""), "warns the tasks"),
        (GOOD.replace("USR1@60", "B:USR1@60"), "batch shell only"),
        (GOOD.replace("USR1@60", "INT@60"), "INT@60"),
        (GOOD.replace("USR1@60", "USR1@30"), "30 s before the time limit"),
        (GOOD.replace("#SBATCH --output=%x-%j.out\n", ""), "output file"),
        (GOOD.replace("-N 2\n#SBATCH --ntasks-per-node=1", "-n 2"), "no number of nodes"),
        (GOOD.replace("-N 2\n#SBATCH --ntasks-per-node=1", "-N 1-2 -n 2"), "as few as 1 node"),
        (42, "as a string"),
    ],
)
def test_a_wrong_script_gets_its_hint_before_any_job(script, hint):
    assert hint in batch_script(script, cluster=None)  # no cluster needed to say so


def test_one_task_a_node_is_asked_with_two_nodes_or_one_task_a_node():
    """What a script asks decides, not what this cluster's one-CPU nodes happen to grant."""
    from tflearn_helpers.checks.lesson07 import _spread_problem

    for asked in ("-N 2 -n 2", "--nodes=2-2 --ntasks=2", "--nodes 2", "-n 2 --ntasks-per-node 1"):
        assert _spread_problem(sbatch_options(f"#!/bin/bash\n#SBATCH {asked}\n")) is None, asked
    for asked in ("-n 2", "--ntasks=2 --ntasks-per-node=2", "--nodes=1-2 --ntasks 2"):
        assert "one node" in _spread_problem(sbatch_options(f"#!/bin/bash\n#SBATCH {asked}\n"))


def test_a_warning_without_a_lead_has_sbatchs_default_minute():
    assert batch_script(GOOD.replace("USR1@60", "USR1").replace("#!", ""), None) == (
        batch_script(GOOD.replace("#!", ""), None)  # the same hint: the shell line missing
    )


def test_the_warning_may_name_sigusr1_by_its_number_or_in_lower_case():
    missing_shell = batch_script(GOOD.replace("#!", ""), None)
    for spelled in ("10@60", "sigusr1@60", "R:SIGUSR1@60"):
        assert batch_script(GOOD.replace("USR1@60", spelled).replace("#!", ""), None) == (
            missing_shell
        )
    assert "SIGUSR1" in batch_script(GOOD.replace("USR1@60", "12@60"), None)  # SIGUSR2


def test_a_task_that_is_not_a_readable_function_is_refused():
    assert "pass your function" in resuming_task(3, cluster=None)


@pytest.fixture(scope="module")
def cluster():
    if slurm.missing_programs():
        pytest.skip(f"Slurm is not installed ({slurm.INSTALL_COMMAND})")
    with slurm.LocalSlurm(nodes=2, preemption_grace=10, extra_config="JobRequeue=0") as started:
        yield started


def test_a_right_script_is_right_on_a_real_cluster(cluster):
    result = check("07.1", GOOD, cluster)
    assert result.ok, result.message


def test_a_script_that_does_not_requeue_itself_is_wrong_on_a_real_cluster(cluster):
    result = check("07.1", GOOD.replace("scontrol requeue", "echo"), cluster)
    assert not result.ok and "nothing put it back in the queue" in result.message


def test_a_resume_from_an_older_checkpoint_than_the_warned_save_is_named(tmp_path):
    """The warned save is on disk, the task resumed before it: the hint asks which checkpoint
    it restores (not that the save is missing)."""
    import tensorflow as tf

    from tflearn_helpers.checks import lesson07

    step = tf.Variable(0, dtype=tf.int64)
    checkpoint = tf.train.Checkpoint(step=step, weights=tf.Variable(0.0, dtype=tf.float64))
    manager = tf.train.CheckpointManager(checkpoint, tmp_path / "checkpoints", max_to_keep=2)
    for saved in (10, 12):
        step.assign(saved)
        manager.save(checkpoint_number=saved)
    assert lesson07._checkpointed_steps(tmp_path) == {10, 12}
    assert "which one does it restore" in lesson07._resume_problem(list(range(1, 13)), 11, tmp_path)
    missing = lesson07._resume_problem(list(range(1, 14)), 11, tmp_path)  # 13: never saved
    assert "lost work the warning was there to save" in missing
    assert lesson07._resume_problem(list(range(1, 13)), 13, tmp_path) is None
