"""The legacy Kubeflow ``TFJob`` of a multi-worker job (lesson 07).

Kubeflow's Training Operator v1 writes each pod's TF_CONFIG itself. Part of
``kubernetes.manifests``; the current forms (Indexed Job, JobSet, TrainJob) are in
:mod:`.kubernetes`.
"""

from __future__ import annotations

from ..runtime import validate

__all__ = ["tfjob"]

API_VERSION = "kubeflow.org/v1"
LEGACY_NOTE = "legacy: Kubeflow Training Operator v1; see Kubeflow Trainer v2 (TrainJob)"
KIND = "TFJob"
CONTAINER_NAME = "tensorflow"  # the operator finds the TensorFlow container by this name
REPLICA_TYPES = {"chief": "Chief", "worker": "Worker", "ps": "PS", "evaluator": "Evaluator"}
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")


def _check_tfjob(name, cluster, image, command, gpus_per_worker, restart_policy, annotations):
    """Raise for the first argument of :func:`tfjob` that cannot make a valid TFJob."""
    validate.dns_label(name)
    if not isinstance(cluster, dict) or not cluster:
        raise ValueError("cluster must be a non-empty dict of job -> list of addresses")
    if annotations is not None and not isinstance(annotations, dict):
        raise TypeError(f"pod_annotations must be a dict of strings, got {annotations!r}")
    for job, tasks in cluster.items():
        if job not in REPLICA_TYPES:
            raise ValueError(f"unknown job {job!r}: jobs are {', '.join(REPLICA_TYPES)}")
        if not isinstance(tasks, list) or not tasks:
            raise ValueError(f"cluster[{job!r}] must be a non-empty list")
    validate.container_command(image, command)
    validate.whole_number("gpus_per_worker", gpus_per_worker, minimum=0)
    if restart_policy not in RESTART_POLICIES:
        raise ValueError(
            f"restart_policy must be one of {RESTART_POLICIES}, got {restart_policy!r}"
        )


def tfjob(
    name: str,
    cluster: dict[str, list[str]],
    image: str,
    command: list[str],
    *,
    namespace: str = "default",
    gpus_per_worker: int = 0,
    cpu: str = "2",
    memory: str = "4Gi",
    restart_policy: str = "OnFailure",
    shared_volume_claim: str | None = None,
    shared_mount: str = "/shared",
    env: dict[str, str] | None = None,
    pod_annotations: dict[str, str] | None = None,
) -> dict:
    """A TFJob with one replica spec per job of ``cluster`` (its addresses are ignored:
    only how many tasks each job has carries over to Kubernetes).

    gpus_per_worker: ``nvidia.com/gpu`` limit of every chief and worker pod.
    shared_volume_claim: a PersistentVolumeClaim mounted at ``shared_mount`` in every pod,
    for checkpoints and BackupAndRestore backups that every worker must read back.
    pod_annotations: e.g. {"sidecar.istio.io/inject": "false"}, which Kubeflow's TFJob guide
    asks for in namespaces with Istio sidecar injection.
    """
    _check_tfjob(name, cluster, image, command, gpus_per_worker, restart_policy, pod_annotations)
    specs = {
        REPLICA_TYPES[job]: _replica_spec(
            len(tasks),
            image,
            command,
            job,
            gpus_per_worker,
            cpu,
            memory,
            restart_policy,
            shared_volume_claim,
            shared_mount,
            env or {},
            pod_annotations or {},
        )
        for job, tasks in cluster.items()
    }
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"tflearn/status": LEGACY_NOTE},
        },
        "spec": {"tfReplicaSpecs": specs},
    }


def _replica_spec(
    replicas, image, command, job, gpus, cpu, memory, restart_policy, claim, mount, env, annotations
) -> dict:
    limits = {"cpu": cpu, "memory": memory}
    if gpus and job in ("chief", "worker"):
        limits["nvidia.com/gpu"] = gpus
    container = {
        "name": CONTAINER_NAME,
        "image": image,
        "command": list(command),
        "resources": {"limits": limits},
    }
    if env:
        container["env"] = [{"name": k, "value": str(v)} for k, v in sorted(env.items())]
    pod = {"containers": [container]}
    if claim:
        container["volumeMounts"] = [{"name": "shared", "mountPath": mount}]
        pod["volumes"] = [{"name": "shared", "persistentVolumeClaim": {"claimName": claim}}]
    template = {"spec": pod}
    if annotations:
        template["metadata"] = {"annotations": {k: str(v) for k, v in annotations.items()}}
    return {"replicas": replicas, "restartPolicy": restart_policy, "template": template}
