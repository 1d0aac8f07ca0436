"""Every manifest lesson 07 prints is checked against the schema of its kind, offline.

- Job, Service (core kinds): Kubernetes' own OpenAPI schemas, bundled by kubernetes-validate,
  for every Kubernetes version it ships, strict (an unknown field is an error).
- JobSet (jobset.x-k8s.io/v1alpha2), TrainJob and TrainingRuntime (trainer.kubeflow.org/v1alpha1):
  the models kubeflow-trainer-api generates from those CRDs' OpenAPI schemas. They accept unknown
  fields silently, so the check is a round trip: a manifest must parse (types, required fields)
  and come back with every field it had (an unknown one is dropped; defaults may be added).
- TFJob (kubeflow.org/v1, legacy): no maintained package ships its schema without the whole
  Kubernetes client; tests/test_kubernetes.py checks its structure only.
"""

import copy

import kubernetes_validate
import pytest
import yaml
from helpers import pod_tf_config
from kubeflow_trainer_api import models
from kubernetes_validate.utils import all_versions

from tflearn_helpers import cluster

COMMAND = ["python", "/app/worker.py", "--out", "/shared/job"]
VERSIONS = sorted(set(all_versions()), key=lambda v: tuple(map(int, v.split("."))))
CUSTOM = {
    "JobSet": models.JobsetV1alpha2JobSet,
    "TrainJob": models.TrainerV1alpha1TrainJob,
    "TrainingRuntime": models.TrainerV1alpha1TrainingRuntime,
}


def manifests():
    """What lesson 07 prints, with every option it uses (GPUs, a shared volume, env)."""
    options = dict(gpus_per_worker=1, shared_volume_claim="tflearn", env={"A": "1"})
    k = cluster.kubernetes
    return [
        *k.indexed_job("mwms-lesson07", 2, "reg/tflearn:1", COMMAND, **options),
        k.jobset("mwms-lesson07", 2, "reg/tflearn:1", COMMAND, **options),
        *k.trainjob("mwms-lesson07", 2, "reg/tflearn:1", COMMAND, gpus_per_worker=1),
    ]


def schema_problems(manifest):
    """[] when ``manifest`` fits its kind's schema, else what is wrong."""
    if manifest["kind"] in CUSTOM:
        try:
            back = CUSTOM[manifest["kind"]].from_dict(copy.deepcopy(manifest)).to_dict()
        except ValueError as err:  # pydantic's ValidationError is a ValueError
            return [str(err).splitlines()[0]]
        return [f"{path}: not in the {manifest['kind']} schema" for path in dropped(manifest, back)]
    problems = []
    for version in VERSIONS:
        try:
            kubernetes_validate.validate(manifest, version, strict=True)
        except kubernetes_validate.ValidationError as err:
            problems.append(f"Kubernetes {version}: {err.message}")
    return problems


def dropped(sent, back, path=""):
    """The paths of ``sent`` that the round trip lost, or whose value it changed."""
    if isinstance(sent, dict) and isinstance(back, dict):
        lost = [f"{path}.{k}" for k in sent if k not in back]
        return lost + [
            p for k in sent if k in back for p in dropped(sent[k], back[k], f"{path}.{k}")
        ]
    if isinstance(sent, list) and isinstance(back, list) and len(sent) == len(back):
        return [
            p
            for i, (a, b) in enumerate(zip(sent, back, strict=True))
            for p in dropped(a, b, f"{path}[{i}]")
        ]
    return [] if sent == back else [path]


def test_kubernetes_validate_bundles_several_versions():
    assert len(VERSIONS) >= 5, VERSIONS


@pytest.mark.parametrize("manifest", manifests(), ids=lambda m: m["kind"])
def test_manifest_fits_the_schema_of_its_kind(manifest):
    assert schema_problems(manifest) == []
    assert yaml.safe_load(yaml.safe_dump(manifest, sort_keys=False)) == manifest


def test_the_jobset_inner_job_is_a_valid_batch_job():
    jobset = cluster.kubernetes.jobset("mwms", 2, "reg/t:1", COMMAND)
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "mwms"}}
    job["spec"] = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert schema_problems(job) == []


@pytest.mark.parametrize("kind", ["Job", "Service", "JobSet", "TrainJob", "TrainingRuntime"])
def test_a_misspelled_field_is_caught(kind):
    """The checks can fail: a typo in a field name, and a wrong type."""
    manifest = copy.deepcopy(next(m for m in manifests() if m["kind"] == kind))
    manifest["spec"]["completionMod"] = "Indexed"
    assert schema_problems(manifest) != []
    wrong_type = copy.deepcopy(next(m for m in manifests() if m["kind"] == kind))
    wrong_type["metadata"]["name"] = ["not", "a", "string"]
    assert schema_problems(wrong_type) != []


def test_jobset_restarts_the_whole_group_on_one_failure():
    jobset = cluster.kubernetes.jobset("mwms", 3, "reg/t:1", COMMAND, max_restarts=5)
    (replicated,) = jobset["spec"]["replicatedJobs"]
    job = replicated["template"]["spec"]
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": 5}
    assert job["backoffLimit"] == 0, "one failed pod fails its Job, and the JobSet restarts all"
    assert job["completionMode"] == "Indexed" and job["completions"] == job["parallelism"] == 3
    env = job["template"]["spec"]["containers"][0]["env"]
    config = pod_tf_config(env, 2)
    assert config["cluster"]["worker"][2] == "mwms-worker-0-2.mwms:2222"
    assert config["task"] == {"type": "worker", "index": 2}
    with pytest.raises(ValueError, match="max_restarts"):
        cluster.kubernetes.jobset("mwms", 3, "reg/t:1", COMMAND, max_restarts=-1)
