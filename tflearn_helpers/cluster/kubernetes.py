"""Kubernetes manifests for a multi-worker job (taught in lesson 06). Nothing here talks to a
cluster: it writes plain dicts; ``yaml.safe_dump_all`` turns them into text for ``kubectl apply``.

From the same worker list LocalCluster runs on localhost:

- ``indexed_job``: a plain Kubernetes Indexed Job plus a headless Service, no operator. Each
  pod reads its completion index (an annotation the Job controller sets) into ``TASK_INDEX``
  and its TF_CONFIG is written with ``$(TASK_INDEX)`` in it; the addresses are the pods'
  stable DNS names ``<job>-<index>.<service>``.
- ``jobset``: a JobSet (kubernetes-sigs/jobset, v1alpha2): the same Indexed Job, inside a
  JobSet whose failure policy recreates every worker when one pod fails, which is what a
  MultiWorkerMirroredStrategy group needs (all restart from the checkpoint together).
- ``trainjob``: Kubeflow Trainer v2 (``TrainJob`` on a plain ``TrainingRuntime``). Trainer v2
  has no built-in TensorFlow support (kubeflow/trainer#2699), so TF_CONFIG is set the same way.
- ``tfjob``: the Kubeflow Training Operator v1 ``TFJob`` (legacy), whose operator writes
  TF_CONFIG itself.

``pod_tf_config`` computes the TF_CONFIG a pod with a given index would see, for tests.
"""

from __future__ import annotations

import json
import re

from .. import validate

__all__ = [
    "API_VERSION",
    "KIND",
    "indexed_job",
    "jobset",
    "pod_tf_config",
    "tf_config_env",
    "tfjob",
    "trainjob",
    "worker_addresses",
]

API_VERSION = "kubeflow.org/v1"
TRAINER_API = "trainer.kubeflow.org/v1alpha1"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
LEGACY_NOTE = "legacy: Kubeflow Training Operator v1; see Kubeflow Trainer v2 (TrainJob)"
KIND = "TFJob"
CONTAINER_NAME = "tensorflow"  # the operator finds the TensorFlow container by this name
REPLICA_TYPES = {"chief": "Chief", "worker": "Worker", "ps": "PS", "evaluator": "Evaluator"}
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def _check_tfjob(name, cluster, image, command, gpus_per_worker, restart_policy, annotations):
    """Raise for the first argument of :func:`tfjob` that cannot make a valid TFJob."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"name must be a DNS label (a-z, 0-9, '-', <= 63 chars), got {name!r}")
    if not isinstance(cluster, dict) or not cluster:
        raise ValueError("cluster must be a non-empty dict of job -> list of addresses")
    if annotations is not None and not isinstance(annotations, dict):
        raise TypeError(f"pod_annotations must be a dict of strings, got {annotations!r}")
    for job, tasks in cluster.items():
        if job not in REPLICA_TYPES:
            raise ValueError(f"unknown job {job!r}: jobs are {', '.join(REPLICA_TYPES)}")
        if not isinstance(tasks, list) or not tasks:
            raise ValueError(f"cluster[{job!r}] must be a non-empty list")
    _check_image_command(image, command)
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


def indexed_job(
    name: str,
    workers: int,
    image: str,
    command: list[str],
    *,
    port: int = 2222,
    namespace: str = "default",
    gpus_per_worker: int = 0,
    shared_volume_claim: str | None = None,
    shared_mount: str = "/shared",
    env: dict[str, str] | None = None,
) -> list[dict]:
    """[headless Service, Indexed Job]: ``workers`` pods, pod i is TF_CONFIG task i.

    When a pod fails, the Job controller replaces only that pod (up to ``backoffLimit``): the
    others stay inside their collective until its timeout, so the worker program must exit on
    a collective error and every worker must restart from the checkpoint (lesson 06)."""
    addresses = worker_addresses(name, workers, port)
    job_spec = _indexed_spec(name, addresses, image, command, port, gpus_per_worker,
                             shared_volume_claim, shared_mount, env)  # fmt: skip
    job_spec["backoffLimit"] = 3
    job_spec["template"]["spec"]["subdomain"] = name
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterIP": "None", "selector": {"app": name}, "ports": [{"port": int(port)}]},
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": job_spec,
    }
    return [service, job]


def jobset(
    name: str,
    workers: int,
    image: str,
    command: list[str],
    *,
    port: int = 2222,
    namespace: str = "default",
    gpus_per_worker: int = 0,
    max_restarts: int = 3,
    shared_volume_claim: str | None = None,
    shared_mount: str = "/shared",
    env: dict[str, str] | None = None,
) -> dict:
    """A JobSet of one Indexed Job of ``workers`` pods; pod i is TF_CONFIG task i.

    ``backoffLimit: 0`` makes one failed pod fail its Job, and the JobSet's failure policy then
    recreates the whole group (up to ``max_restarts`` times): every worker restarts together
    and restores the checkpoint. JobSet's DNS hostnames give each pod the stable name
    ``<name>-worker-0-<i>.<name>`` (its own headless Service)."""
    validate.whole_number("max_restarts", max_restarts, minimum=0)
    addresses = worker_addresses(name, workers, port, host_format="{name}-worker-0-{i}.{name}")
    job_spec = _indexed_spec(name, addresses, image, command, port, gpus_per_worker,
                             shared_volume_claim, shared_mount, env)  # fmt: skip
    job_spec["backoffLimit"] = 0  # a failed pod fails the Job: the JobSet restarts them all
    return {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "failurePolicy": {"maxRestarts": max_restarts},
            "network": {"enableDNSHostnames": True},
            "replicatedJobs": [{"name": "worker", "replicas": 1, "template": {"spec": job_spec}}],
        },
    }


def _indexed_spec(name, addresses, image, command, port, gpus, claim, mount, env) -> dict:
    """The spec of an Indexed Job with one pod per address, all running at once."""
    container = _container(name, image, command, gpus, env, addresses)
    container["ports"] = [{"containerPort": int(port)}]
    pod = {"restartPolicy": "Never", "containers": [container]}
    _mount(pod, container, claim, mount)
    return {
        "completionMode": "Indexed",
        "completions": len(addresses),
        "parallelism": len(addresses),  # every worker at once: they wait for each other
        "template": {"metadata": {"labels": {"app": name}}, "spec": pod},
    }


def trainjob(
    name: str,
    workers: int,
    image: str,
    command: list[str],
    *,
    port: int = 2222,
    runtime: str = "tensorflow-plain",
    namespace: str = "default",
    gpus_per_worker: int = 0,
    env: dict[str, str] | None = None,
) -> list[dict]:
    """[TrainingRuntime, TrainJob] for Kubeflow Trainer v2: a plain runtime (no ML policy
    for TensorFlow exists), TF_CONFIG set from each pod's index as in ``indexed_job``. Trainer
    v2 runs a JobSet built from the runtime's template, whose failure policy restarts the whole
    group as in :func:`jobset`; pod i is ``<trainjob>-node-0-<i>.<trainjob>`` (JobSet names)."""
    addresses = worker_addresses(name, workers, port, host_format="{name}-node-0-{i}.{name}")
    container = _container("node", image, command, gpus_per_worker, env, addresses)
    runtime_spec = _training_runtime(_check_name(runtime), namespace, workers, image)
    train = {
        "apiVersion": TRAINER_API,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "runtimeRef": {"name": runtime, "kind": "TrainingRuntime"},
            "trainer": {
                "image": image,
                "command": container["command"],
                "numNodes": workers,
                "env": container["env"],
                "resourcesPerNode": container["resources"],
            },
        },
    }
    return [runtime_spec, train]


def _training_runtime(runtime: str, namespace: str, workers: int, image: str) -> dict:
    """The plain TrainingRuntime a TrainJob refers to (one replicated job of ``workers``)."""
    return {
        "apiVersion": TRAINER_API,
        "kind": "TrainingRuntime",
        "metadata": {"name": runtime, "namespace": namespace},
        "spec": {
            "mlPolicy": {"numNodes": workers},
            "template": {
                "spec": {
                    "failurePolicy": {"maxRestarts": 3},  # one pod fails: all restart (JobSet)
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {
                                    "labels": {
                                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
                                    }
                                },
                                "spec": {
                                    "template": {
                                        "spec": {"containers": [{"name": "node", "image": image}]}
                                    }
                                },
                            },
                        }
                    ],
                }
            },
        },
    }


def _container(name, image, command, gpus, env, addresses) -> dict:
    _check_image_command(image, command)
    validate.whole_number("gpus_per_worker", gpus, minimum=0)
    extra = [{"name": k, "value": str(v)} for k, v in sorted((env or {}).items())]
    limits = {"nvidia.com/gpu": gpus} if gpus else {"cpu": "2", "memory": "4Gi"}
    return {
        "name": name,
        "image": image,
        "command": list(command),
        "env": tf_config_env(addresses) + extra,
        "resources": {"limits": limits},
    }


def _check_image_command(image, command) -> None:
    if not isinstance(image, str) or not image.strip():
        raise ValueError("image must be a container image name, e.g. 'registry/tflearn:1.0'")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise ValueError(f"command must be a non-empty list of strings, got {command!r}")


def _mount(pod, container, claim, mount) -> None:
    if claim:
        container["volumeMounts"] = [{"name": "shared", "mountPath": mount}]
        pod["volumes"] = [{"name": "shared", "persistentVolumeClaim": {"claimName": claim}}]


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"name must be a DNS label (a-z, 0-9, '-', <= 63 chars), got {name!r}")
    return name


def worker_addresses(name: str, workers: int, port: int = 2222, host_format: str = "") -> list:
    """Stable DNS names of an Indexed Job's pods behind a headless Service of the same name."""
    _check_name(name)
    validate.whole_number("workers", workers, minimum=1)
    if not 0 < int(port) < 65536:
        raise ValueError(f"port must be 1..65535, got {port!r}")
    pattern = host_format or "{name}-{i}.{name}"
    return [f"{pattern.format(name=name, i=i)}:{port}" for i in range(workers)]


def tf_config_env(addresses: list[str]) -> list[dict]:
    """Container env: TASK_INDEX from the pod's completion index, TF_CONFIG built on it."""
    cluster = json.dumps({"worker": list(addresses)})
    task = '{"type": "worker", "index": $(TASK_INDEX)}'  # Kubernetes expands $(TASK_INDEX)
    return [
        {
            "name": "TASK_INDEX",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX_ANNOTATION}']"}},
        },
        {
            "name": "TF_CONFIG",
            "value": f'{{"cluster": {cluster}, "task": {task}}}',
        },
    ]


def pod_tf_config(env: list[dict], index: int) -> dict:
    """The TF_CONFIG a pod with completion index ``index`` would see (validated)."""
    from . import tf_config

    values = {"TASK_INDEX": str(index)}
    for item in env:
        if "value" in item:
            values[item["name"]] = re.sub(
                r"\$\((\w+)\)", lambda m: values.get(m[1], m[0]), item["value"]
            )
    if "TF_CONFIG" not in values:
        raise ValueError("this container env sets no TF_CONFIG")
    return tf_config.validate(values["TF_CONFIG"])


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
