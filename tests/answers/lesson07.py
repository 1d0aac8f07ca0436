"""The tables tests/test_mutations.py runs against the checks of lesson 07
(tflearn_helpers/checks/lesson07.py): ``MUTATIONS``, wrong answers made of the solution's
lines (each must be judged wrong, with a hint), and ``RIGHT_ANSWERS``, right answers written
differently (each must be judged right). Test data: kept out of the learner's wheel."""

from __future__ import annotations

_SCRIPT = "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1"

_REQUEUE = 'if [ $? -eq 42 ]; then\n    scontrol requeue "$SLURM_JOB_ID"\nfi\n'

MUTATIONS: dict[str, list[tuple[str, str, str]]] = {
    "07.1": [
        ("no --requeue", "#SBATCH --requeue\n", ""),
        ("no --signal", "#SBATCH --signal=USR1@60\n", ""),
        ("the signal to the batch shell only", "--signal=USR1@60", "--signal=B:USR1@60"),
        ("SIGTERM, which the worker does not save on", "--signal=USR1@60", "--signal=TERM@60"),
        ("two tasks on one node", _SCRIPT, "#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=2"),
        ("one node", "#SBATCH --nodes=2\n", "#SBATCH --nodes=1\n"),
        ("two tasks asked, the nodes left to Slurm", _SCRIPT, "#SBATCH --ntasks=2"),
        ("no time limit", "#SBATCH --time=00:10:00\n", ""),
        ("no srun", "srun python worker.py", "python worker.py"),
        ("the lead in minutes", "--signal=USR1@60", "--signal=USR1@1"),
        ("a one-minute limit", "--time=00:10:00", "--time=00:01:00"),
        ("no requeue by the script", _REQUEUE, ""),
        ("a requeue after every exit", "if [ $? -eq 42 ]; then", "if true; then"),
        ("a requeue after any failure", "if [ $? -eq 42 ]; then", "if [ $? -ne 0 ]; then"),
        ("a requeue whenever srun fails", 'srun python worker.py "$@"\n' + _REQUEUE,
         'srun python worker.py "$@" || scontrol requeue "$SLURM_JOB_ID"\n'),
        ("the exit code of another command", 'srun python worker.py "$@"\n',
         'srun python worker.py "$@"\necho "the tasks have ended"\n'),
        ("SIGUSR2 by its number", "--signal=USR1@60", "--signal=12@60"),
    ],
    "07.2": [
        ("checkpoint written only at the end", "if step % save_every == 0 or stop:",
         "if step == steps:"),
        ("no restore", "    checkpoint.restore(manager.latest_checkpoint)\n", ""),
        ("no save on the warning", "if step % save_every == 0 or stop:",
         "if step % save_every == 0:"),
        ("the warning ignored", "        if stop:\n            return\n", ""),
        ("saved only when warned", "if step % save_every == 0 or stop:", "if stop:"),
        ("the oldest checkpoint restored", "checkpoint.restore(manager.latest_checkpoint)",
         "checkpoint.restore(manager.checkpoints[0] if manager.checkpoints else None)"),
        ("the warning read only when a save is due", "stop = warned()",
         "stop = step % save_every == 0 and warned()"),
        ("float32 weights", "tf.Variable(0.0, dtype=tf.float64)",
         "tf.Variable(0.0, dtype=tf.float32)"),
    ],
}  # fmt: skip

_OPTIONS = """\
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --time=00:10:00
#SBATCH --output=%x-%j.out
#SBATCH --signal=USR1@60
"""

_LOOP = """\
    checkpoint.restore(manager.latest_checkpoint)
    while step < steps:
        train_one_step(step, weights)
        stop = warned()  # read once: the signal may come between two reads
        if step % save_every == 0 or stop:
            manager.save(checkpoint_number=int(step))
        if stop:
            return
"""

# Right answers written differently from the solution, as the exercise's text allows:
# exercise -> [(name, text of the solution cell, what replaces it)]; each must be "right".
RIGHT_ANSWERS: dict[str, list[tuple[str, str, str]]] = {
    "07.1": [
        ("short options, the time in minutes, sbatch's default lead", _OPTIONS,
         "#SBATCH -N 2 -n 2\n#SBATCH -t 10\n#SBATCH -o job.out\n#SBATCH --signal=SIGUSR1\n"),
        ("the exit code kept and passed on, the signal by its number",
         'srun python worker.py "$@"\n' + _REQUEUE,
         'srun python worker.py "$@"\nstatus=$?\nif [[ $status == 42 ]]; then\n'
         "    scontrol requeue $SLURM_JOBID\nfi\nexit $status\n"),
        ("a day-hour time limit, no job name", "#SBATCH --job-name=mwms\n#SBATCH --nodes=2\n"
         "#SBATCH --ntasks-per-node=1\n#SBATCH --time=00:10:00\n",
         "#SBATCH --nodes=2 --ntasks=2\n#SBATCH --time=0-00:10\n"),
    ],
    "07.2": [
        ("the warning read before each step, numbered saves left to the manager", _LOOP,
         """\
    checkpoint.restore(manager.latest_checkpoint)
    while step < steps:
        if warned():
            manager.save()
            return
        train_one_step(step, weights)
        if step % save_every == 0:
            manager.save()
"""),
        ("an `if latest:` guard, a for loop, one checkpoint kept",
         "    manager = tf.train.CheckpointManager(checkpoint, folder, max_to_keep=2)\n" + _LOOP,
         """\
    manager = tf.train.CheckpointManager(checkpoint, folder, max_to_keep=1)
    latest = tf.train.latest_checkpoint(folder)
    if latest:
        checkpoint.restore(latest)
    for _ in range(int(step), steps):
        train_one_step(step, weights)
        if warned():
            manager.save(checkpoint_number=step)
            return
        if int(step) % save_every == 0:
            manager.save(checkpoint_number=step)
"""),
    ],
}  # fmt: skip

# What the hint of a mutation must say: (exercise, name of the mutation) -> words.
HINTS: dict[tuple[str, str], str] = {
    ("07.1", "the exit code of another command"): "whose exit status",
    ("07.2", "the oldest checkpoint restored"): "which one does it restore",
    ("07.2", "float32 weights"): "float32",
}
