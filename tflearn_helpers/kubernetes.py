"""TFJob manifests for the Kubeflow training operator (taught in lesson 06).

The same cluster description LocalCluster runs on localhost ({"chief": [...], "worker":
[...]}) becomes one Kubernetes ``TFJob``: one replica spec per job, each replica a pod
running the same image and command. The operator, not this module, writes each pod's
TF_CONFIG (with the pods' service names as addresses), so the training script does not
change between a laptop and a cluster.

``tfjob(...)`` returns a plain dict; ``to_yaml`` turns it into text for ``kubectl apply -f``.
"""

from __future__ import annotations

import json
import re

API_VERSION = "kubeflow.org/v1"
KIND = "TFJob"
CONTAINER_NAME = "tensorflow"  # the operator finds the TensorFlow container by this name
REPLICA_TYPES = {"chief": "Chief", "worker": "Worker", "ps": "PS", "evaluator": "Evaluator"}
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


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
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"name must be a DNS label (a-z, 0-9, '-', <= 63 chars), got {name!r}")
    if not isinstance(cluster, dict) or not cluster:
        raise ValueError("cluster must be a non-empty dict of job -> list of addresses")
    if pod_annotations is not None and not isinstance(pod_annotations, dict):
        raise TypeError(f"pod_annotations must be a dict of strings, got {pod_annotations!r}")
    for job, tasks in cluster.items():
        if job not in REPLICA_TYPES:
            raise ValueError(f"unknown job {job!r}: jobs are {', '.join(REPLICA_TYPES)}")
        if not isinstance(tasks, list) or not tasks:
            raise ValueError(f"cluster[{job!r}] must be a non-empty list")
    if not isinstance(image, str) or not image.strip():
        raise ValueError("image must be a container image name, e.g. 'registry/tflearn:1.0'")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise ValueError(f"command must be a non-empty list of strings, got {command!r}")
    if isinstance(gpus_per_worker, bool) or not isinstance(gpus_per_worker, int):
        raise TypeError(f"gpus_per_worker must be a whole number, got {gpus_per_worker!r}")
    if gpus_per_worker < 0:
        raise ValueError(f"gpus_per_worker must be >= 0, got {gpus_per_worker}")
    if restart_policy not in RESTART_POLICIES:
        raise ValueError(
            f"restart_policy must be one of {RESTART_POLICIES}, got {restart_policy!r}"
        )
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
        "metadata": {"name": name, "namespace": namespace},
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


def to_yaml(value, indent: int = 0) -> str:
    """YAML text of plain dicts, lists, strings, numbers and booleans (no dependency)."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return pad + "{}\n"
        out = []
        for key, item in value.items():
            if _is_scalar(item) or not item:
                out.append(f"{pad}{key}: {_scalar(item)}\n")
            else:
                out.append(f"{pad}{key}:\n{to_yaml(item, indent + 1)}")
        return "".join(out)
    if isinstance(value, list):
        out = []
        for item in value:
            if _is_scalar(item) or not item:
                out.append(f"{pad}- {_scalar(item)}\n")
            else:  # "- " then the item's first line, its other lines indented under it
                body = to_yaml(item, indent + 1)
                out.append(f"{pad}- {body[len(pad) + 2 :]}")
        return "".join(out)
    return pad + _scalar(value) + "\n"


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _scalar(value) -> str:
    if isinstance(value, (dict, list)):  # only empty ones get here
        return "{}" if isinstance(value, dict) else "[]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid double-quoted YAML string
    raise TypeError(f"cannot write {type(value).__name__} as YAML: {value!r}")
