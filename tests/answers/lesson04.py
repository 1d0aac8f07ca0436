"""The tables tests/test_mutations.py runs against the checks of lesson 04
(tflearn_helpers/checks/lesson04.py): ``MUTATIONS``, wrong answers made of the solution's
lines (each must be judged wrong, with a hint), and ``RIGHT_ANSWERS``, right answers written
differently (each must be judged right). Test data: kept out of the learner's wheel."""

from __future__ import annotations

_TF_CONFIG = 'return {"cluster": two_workers, "task": {"type": "worker", "index": index}}'

_ENV = 'env={"TF_CONFIG": json.dumps(tf_config(i)), **CPU_ONLY}'

_RESTORE = "checkpoint.restore(tf.train.latest_checkpoint(directory))"

_LAUNCH = """    workers = [
        programs.start(program, env={"TF_CONFIG": json.dumps(tf_config(i)), **CPU_ONLY})
        for i in range(2)
    ]
    outcomes = [(worker.wait(timeout=240), worker.output()) for worker in workers]
"""

_PRE_FOLDER = (
    'folder = directory if task.task_id == 0 else os.path.join(directory, f"worker-{task.task_id}")'
)
_PRE_MANAGER = "    manager = tf.train.CheckpointManager(checkpoint, folder, max_to_keep=2)\n"
_PRE_LOOP = "range(int(checkpoint.optimizer.iterations.numpy()), steps)"
_PRE_NOTICE = """    notice = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: notice.set())
    handler = tf.distribute.experimental.PreemptionCheckpointHandler(
        task,
        manager,
        termination_config=tf.distribute.experimental.TerminationConfig(
            termination_watcher_fn=notice.is_set,
            exit_fn=lambda: sys.exit(exit_code),
            grace_period=0,
        ),
    )
    for i in range(int(checkpoint.optimizer.iterations.numpy()), steps):  # restored by handler
        handler.run(train_step, i)
"""

_STALL_STRATEGY = "tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)"

_BACKUP = "keras.callbacks.BackupAndRestore(backup_dir, save_freq=save_every)"
_FIT = "model.fit(dataset, epochs=epochs, callbacks=[backup, *callbacks], verbose=0)"
_BACKUP_AND_FIT = f"    backup = {_BACKUP}\n    {_FIT}"

# Wrong answers derived from the solution (solutions/04_multi_worker.ipynb), one plausible
# mistake each: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "wrong". 04.4's cell
# starts two worker processes: a TF_CONFIG that would leave a worker waiting for a peer is
# refused before the launch (``ready``), and a worker waited for before its peer was started is
# stopped within seconds by its process handle's wait (both are mutations below).
MUTATIONS: dict[str, list[tuple[str, str, str]]] = {
    "04.4": [
        (
            "each worker a cluster of its own",
            _TF_CONFIG,
            'return {"cluster": {"worker": [two_workers["worker"][index]]}, '
            '"task": {"type": "worker", "index": 0}}',
        ),
        (
            "the course's TF_CONFIG builder",
            _TF_CONFIG,
            'return cluster.tf_config.build(two_workers, "worker", index)',
        ),
        ("TF_CONFIG left out of the environment", _ENV, "env=CPU_ONLY"),
        ("TF_CONFIG as Python's str, not JSON", "json.dumps(tf_config(i))", "str(tf_config(i))"),
        ("a task type the cluster lacks", '"type": "worker"', '"type": "chief"'),
        ("both workers task 0", '"index": index', '"index": 0'),
        (
            "a cluster of three workers",
            '"cluster": two_workers',
            '"cluster": {"worker": two_workers["worker"] + ["localhost:1"]}',
        ),
        (
            "CPU_ONLY left out of the workers' environment",
            _ENV,
            'env={"TF_CONFIG": json.dumps(tf_config(i))}',
        ),
        (
            "worker 1 started after waiting for worker 0",
            _LAUNCH,
            "    outcomes = []\n    for i in range(2):\n"
            "        worker = programs.start(\n"
            "            program, " + _ENV + "\n        )\n"
            "        outcomes.append((worker.wait(timeout=240), worker.output()))\n",
        ),
    ],
    "04.5": [
        (
            "every worker saves into the chief's folder",
            'folder = directory if chief else os.path.join(directory, f"scratch-worker-{task_id}")',
            "folder = directory",
        ),
        (
            "no chief among the workers",
            'chief = task_type in (None, "chief") or (\n'
            '        task_type == "worker" and task_id == 0 and "chief" not in cluster\n'
            "    )",
            'chief = task_type in (None, "chief")',
        ),
        (
            "worker 0 the chief even beside a chief task",
            ' and "chief" not in cluster',
            "",
        ),
        ("one scratch folder for all the others", 'f"scratch-worker-{task_id}"', '"scratch"'),
        ("nothing restored", _RESTORE, "tf.train.latest_checkpoint(directory)"),
        (
            "restore_latest written as `pass`: nothing to restore",
            _RESTORE + "  # latest_checkpoint: None if none",
            "pass",
        ),
        (
            "the oldest checkpoint restored",
            _RESTORE,
            "state = tf.train.get_checkpoint_state(directory)\n"
            "    checkpoint.restore(state.all_model_checkpoint_paths[0] if state else None)",
        ),
        (
            "the newest taken as the last file name in sorted order",
            _RESTORE,
            "names = sorted(tf.io.gfile.glob(os.path.join(directory, 'ckpt-*.index')))\n"
            "    checkpoint.restore(names[-1][: -len('.index')] if names else None)",
        ),
        (
            "a restore that insists on a checkpoint",
            _RESTORE,
            _RESTORE + ".assert_consumed()",
        ),
        ("five kept", "max_to_keep=2", "max_to_keep=5"),
    ],
    "04.6": [
        (
            "the checkpoint alone, no manager",
            "        task,\n        manager,",
            "        task,\n        checkpoint,",
        ),
        (
            "an exit function that does not exit",
            "exit_fn=lambda: sys.exit(exit_code)",
            'exit_fn=lambda: print("preempted: saved")',
        ),
        ("exit code 0 after the save", "sys.exit(exit_code)", "sys.exit(0)"),
        (
            "the signal exits at once, before any save",
            "lambda *_: notice.set()",
            "lambda *_: sys.exit(exit_code)",
        ),
        ("the restart loops from step 0", _PRE_LOOP, "range(steps)"),
        ("the step run outside the handler", "handler.run(train_step, i)", "train_step(i)"),
        ("every worker saves into the chief's folder", _PRE_FOLDER, "folder = directory"),
        (
            "the chief's checkpoint in a folder of its own",
            _PRE_FOLDER,
            'folder = os.path.join(directory, f"worker-{task.task_id}")',
        ),
    ],
    "04.7": [
        (
            "no communication options",
            _STALL_STRATEGY,
            "tf.distribute.MultiWorkerMirroredStrategy()",
        ),
        ("options without a timeout", "        timeout_seconds=timeout,\n", ""),
        (
            "the options passed as the first argument",
            "MultiWorkerMirroredStrategy(communication_options=options)",
            "MultiWorkerMirroredStrategy(options)",
        ),
        (
            "the timeout in milliseconds",
            "timeout_seconds=timeout,",
            "timeout_seconds=timeout * 1000,",
        ),
        (
            "the timeout read as milliseconds",
            "timeout_seconds=timeout,",
            "timeout_seconds=timeout / 1000,",
        ),
        (
            "one machine's MirroredStrategy",
            _STALL_STRATEGY,
            "tf.distribute.MirroredStrategy()",
        ),
    ],
    "04.8": [
        (
            "no backup callback",
            _BACKUP_AND_FIT,
            "    model.fit(dataset, epochs=epochs, callbacks=callbacks, verbose=0)",
        ),
        (
            "a fresh folder for each call",
            "BackupAndRestore(backup_dir,",
            "BackupAndRestore(tempfile.mkdtemp(dir=backup_dir),",
        ),
        (
            "ModelCheckpoint, which saves but never restores",
            _BACKUP,
            'keras.callbacks.ModelCheckpoint(os.path.join(backup_dir, "latest.weights.h5"), '
            "save_weights_only=True, save_freq=save_every)",
        ),
        ("the callback created but not given to fit", "[backup, *callbacks]", "callbacks"),
        ("the caller's callbacks left out", "[backup, *callbacks]", "[backup]"),
        (
            "the backup folder emptied at every call",
            "    backup = ",
            "    shutil.rmtree(backup_dir, ignore_errors=True)  # a clean folder for each run\n"
            "    backup = ",
        ),
        ("a backup once an epoch", "save_freq=save_every", 'save_freq="epoch"'),
        ("a backup every step", "save_freq=save_every", "save_freq=1"),
        (
            "the backup kept after training finished",
            "save_freq=save_every)",
            "save_freq=save_every, delete_checkpoint=False)",
        ),
        (
            "the interruption caught",
            f"    {_FIT}",
            f"    try:\n        {_FIT}\n    except Exception as err:\n"
            '        print("training stopped:", err)',
        ),
    ],
}

# Right answers written differently from the solution, as a learner allowed by the exercise's
# text would write them: exercise -> [(name, text of the solution cell, what replaces it)].
# tests/test_mutations.py applies each to the solution cell and expects "right".
RIGHT_ANSWERS: dict[str, list[tuple[str, str, str]]] = {
    "04.4": [
        (
            "the cluster copied, the task's keys in another order",
            _TF_CONFIG,
            'return {"cluster": dict(two_workers), "task": {"index": index, "type": "worker"}}',
        ),
        (
            "started in a loop, then waited for in a loop",
            _LAUNCH,
            """    workers = []
    for i in range(2):
        env = {**CPU_ONLY, "TF_CONFIG": json.dumps(tf_config(i))}
        workers.append(programs.start(program, env=env))
    outcomes = []
    for worker in workers:
        code = worker.wait(timeout=300)
        outcomes.append((code, worker.output()))
""",
        ),
    ],
    "04.5": [
        (
            "an `if latest:` guard",
            _RESTORE,
            "latest = tf.train.latest_checkpoint(directory)\n"
            "    if latest:\n        checkpoint.restore(latest)",
        ),
        (
            "scratch folders beside the chief's, 2 kept given by position",
            "folder = directory if chief else "
            'os.path.join(directory, f"scratch-worker-{task_id}")\n'
            "    return tf.train.CheckpointManager(checkpoint, folder, max_to_keep=2)",
            'folder = directory if chief else f"{directory}-scratch-{task_type}-{task_id}"\n'
            "    return tf.train.CheckpointManager(checkpoint, folder, 2)",
        ),
    ],
    "04.6": [
        (
            "the handler makes the managers: a checkpoint and its folder",
            "    " + _PRE_FOLDER + "\n" + _PRE_MANAGER + _PRE_NOTICE,
            _PRE_NOTICE.replace(
                "        manager,\n", "        checkpoint,\n        checkpoint_dir=directory,\n"
            ),
        ),
        (
            "SIGTERM left to the handler, a while loop",
            _PRE_NOTICE,
            """    def leave():
        sys.exit(exit_code)

    config = tf.distribute.experimental.TerminationConfig(exit_fn=leave)
    handler = tf.distribute.experimental.PreemptionCheckpointHandler(
        strategy.cluster_resolver, manager, termination_config=config
    )
    step = checkpoint.optimizer.iterations
    while int(step.numpy()) < steps:
        handler.run(train_step, int(step.numpy()))
""",
        ),
        (
            "the step, then save_checkpoint_if_preempted",
            "        handler.run(train_step, i)",
            "        train_step(i)\n        handler.save_checkpoint_if_preempted()",
        ),
    ],
    "04.7": [
        (
            "AUTO, the timeout as a float, the options in the call",
            """    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING,
        timeout_seconds=timeout,
    )
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)""",
            """    return tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            timeout_seconds=float(timeout),
            implementation=tf.distribute.experimental.CommunicationImplementation.AUTO,
        )
    )""",
        ),
        (
            "the timeout alone, the strategy named first",
            """    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING,
        timeout_seconds=timeout,
    )
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)""",
            """    opts = tf.distribute.experimental.CommunicationOptions(timeout_seconds=timeout)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=opts)
    return strategy""",
        ),
    ],
    "04.8": [
        (
            "tf.keras's name, keyword arguments, the backup after the caller's callbacks",
            _BACKUP_AND_FIT,
            "    backup = tf.keras.callbacks.BackupAndRestore(\n"
            "        backup_dir=backup_dir, save_freq=save_every, delete_checkpoint=True\n    )\n"
            "    model.fit(dataset, epochs=epochs, callbacks=list(callbacks) + [backup], "
            "verbose=0)",
        ),
        (
            "a pathlib folder, the steps as an int, two backups kept",
            _BACKUP,
            "keras.callbacks.BackupAndRestore(\n"
            "        Path(backup_dir), save_freq=int(save_every), double_checkpoint=True\n    )",
        ),
        (
            "the list built first, fit's progress bar, its History returned",
            _BACKUP_AND_FIT,
            f"    mine = [{_BACKUP}]\n    mine.extend(callbacks)\n"
            "    return model.fit(dataset, epochs=epochs, callbacks=mine)",
        ),
    ],
}

# What the hint of a mutation must say: (exercise, name of the mutation) -> words.
HINTS: dict[tuple[str, str], str] = {
    ("04.4", "CPU_ONLY left out of the workers' environment"): "GPUs visible",
    ("04.5", "restore_latest written as `pass`: nothing to restore"): "restored nothing",
    ("04.6", "every worker saves into the chief's folder"): "the chief's folder",
}
