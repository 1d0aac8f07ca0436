"""Kubernetes manifests for a multi-worker job (taught in lesson 07). Nothing here talks to a
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
- the Kubeflow Training Operator v1 ``TFJob`` (legacy), whose operator writes TF_CONFIG
  itself: :mod:`.tfjob`.

``manifests`` returns all four for one job, keyed by form.
"""

from __future__ import annotations

import json

from ..runtime import validate
from .tfjob import tfjob

__all__ = ["indexed_job", "jobset", "manifests", "trainjob"]

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


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
    a collective error and every worker must restart from the checkpoint (lesson 04)."""
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
    runtime_spec = _training_runtime(validate.dns_label(runtime), namespace, workers, image)
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
    validate.container_command(image, command)
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


def _mount(pod, container, claim, mount) -> None:
    if claim:
        container["volumeMounts"] = [{"name": "shared", "mountPath": mount}]
        pod["volumes"] = [{"name": "shared", "persistentVolumeClaim": {"claimName": claim}}]


def worker_addresses(name: str, workers: int, port: int = 2222, host_format: str = "") -> list:
    """Stable DNS names of an Indexed Job's pods behind a headless Service of the same name."""
    validate.dns_label(name)
    validate.counts(workers=workers)
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


def manifests(
    name: str,
    workers: int,
    image: str,
    command: list[str],
    *,
    gpus_per_worker: int = 0,
    shared_volume_claim: str | None = None,
) -> dict[str, list[dict]]:
    """The same job of ``workers`` workers in each form, as lists of manifests: "indexed_job"
    ([Service, Job]), "jobset" ([JobSet]), "trainjob" ([TrainingRuntime, TrainJob]) and
    "tfjob" ([TFJob], legacy; Istio sidecar injection off: a sidecar left running keeps a
    finished pod from completing)."""
    common = {"gpus_per_worker": gpus_per_worker}
    shared = {**common, "shared_volume_claim": shared_volume_claim}
    no_sidecar = {"sidecar.istio.io/inject": "false"}
    addresses = {"worker": worker_addresses(name, workers)}
    return {
        "indexed_job": indexed_job(name, workers, image, command, **shared),
        "jobset": [jobset(name, workers, image, command, **shared)],
        "trainjob": trainjob(name, workers, image, command, **common),
        "tfjob": [tfjob(name, addresses, image, command, **shared, pod_annotations=no_sidecar)],
    }
