import json

import pytest
from helpers import pod_tf_config

from tflearn_helpers import cluster

CLUSTER = {"chief": ["localhost:1"], "worker": ["localhost:2", "localhost:3"]}
COMMAND = ["python", "-m", "tflearn_helpers.scripts.multi_worker_train", "--loop", "fit"]


def make(**kwargs):
    args = {"name": "mwms", "cluster": CLUSTER, "image": "reg/tflearn:1", "command": COMMAND}
    return cluster.tfjob.tfjob(**{**args, **kwargs})


def test_manifest_has_the_structure_the_training_operator_expects():
    job = make(gpus_per_worker=2)
    assert job["apiVersion"] == "kubeflow.org/v1" and job["kind"] == "TFJob"
    assert job["metadata"]["name"] == "mwms" and job["metadata"]["namespace"] == "default"
    specs = job["spec"]["tfReplicaSpecs"]
    assert set(specs) == {"Chief", "Worker"}
    assert specs["Chief"]["replicas"] == 1 and specs["Worker"]["replicas"] == 2
    for spec in specs.values():
        assert spec["restartPolicy"] == "OnFailure"
        (container,) = spec["template"]["spec"]["containers"]
        assert container["name"] == "tensorflow"
        assert container["image"] == "reg/tflearn:1" and container["command"] == COMMAND
        assert container["resources"]["limits"]["nvidia.com/gpu"] == 2


def test_no_gpu_limit_without_gpus_and_none_for_ps():
    job = make(cluster={"worker": ["a:1"], "ps": ["b:2"]}, gpus_per_worker=1)
    specs = job["spec"]["tfReplicaSpecs"]
    assert (
        "nvidia.com/gpu"
        in specs["Worker"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    )
    assert (
        "nvidia.com/gpu"
        not in specs["PS"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    )
    cpu_only = make()["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in cpu_only["resources"]["limits"]


def test_shared_volume_and_env_reach_every_pod():
    job = make(shared_volume_claim="backups", env={"TF_USE_LEGACY_KERAS": 1})
    for spec in job["spec"]["tfReplicaSpecs"].values():
        pod = spec["template"]["spec"]
        assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "backups"
        container = pod["containers"][0]
        assert container["volumeMounts"][0]["mountPath"] == "/shared"
        assert container["env"] == [{"name": "TF_USE_LEGACY_KERAS", "value": "1"}]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"name": "Bad_Name"}, ValueError, "DNS label"),
        ({"cluster": {}}, ValueError, "non-empty dict"),
        ({"cluster": {"boss": ["a:1"]}}, ValueError, "unknown job"),
        ({"cluster": {"worker": []}}, ValueError, "non-empty list"),
        ({"image": " "}, ValueError, "image"),
        ({"command": "python train.py"}, ValueError, "list of strings"),
        ({"gpus_per_worker": -1}, ValueError, ">= 0"),
        ({"gpus_per_worker": 1.5}, TypeError, "whole number"),
        ({"restart_policy": "Sometimes"}, ValueError, "restart_policy"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(kwargs, error, match):
    with pytest.raises(error, match=match):
        make(**kwargs)


def test_pod_annotations_reach_every_template():
    job = make(pod_annotations={"sidecar.istio.io/inject": "false"})
    for spec in job["spec"]["tfReplicaSpecs"].values():
        assert spec["template"]["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    assert "metadata" not in make()["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    with pytest.raises(TypeError, match="pod_annotations"):
        make(pod_annotations=["sidecar"])


def test_tfjob_is_labelled_legacy():
    assert "legacy" in make()["metadata"]["annotations"]["tflearn/status"]


def _env(container_holder):
    return container_holder["containers"][0]["env"]


def test_indexed_job_and_headless_service_need_no_operator():
    service, job = cluster.kubernetes.indexed_job(
        "mwms", 3, "reg/tflearn:1", COMMAND, gpus_per_worker=1
    )
    assert service["kind"] == "Service" and service["spec"]["clusterIP"] == "None"
    assert job["apiVersion"] == "batch/v1" and job["kind"] == "Job"
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == 3
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == service["metadata"]["name"] == "mwms"
    assert service["spec"]["selector"] == spec["template"]["metadata"]["labels"]
    (container,) = pod["containers"]
    assert container["command"] == COMMAND
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    index_ref = container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"]
    assert "batch.kubernetes.io/job-completion-index" in index_ref


def test_every_pod_computes_a_valid_consistent_tf_config():
    for manifests, env_of in (
        (
            cluster.kubernetes.indexed_job("mwms", 3, "reg/t:1", COMMAND),
            lambda m: _env(m[1]["spec"]["template"]["spec"]),
        ),
        (
            cluster.kubernetes.trainjob("mwms", 3, "reg/t:1", COMMAND),
            lambda m: m[1]["spec"]["trainer"]["env"],
        ),
        (
            [cluster.kubernetes.jobset("mwms", 3, "reg/t:1", COMMAND)],
            lambda m: _env(
                m[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
            ),
        ),
    ):
        env = env_of(manifests)
        configs = [pod_tf_config(env, i) for i in range(3)]
        assert [c["task"] for c in configs] == [{"type": "worker", "index": i} for i in range(3)]
        clusters = {json.dumps(c["cluster"], sort_keys=True) for c in configs}
        assert len(clusters) == 1, "every pod sees the same cluster"
        hosts = [a.split(":")[0] for a in configs[0]["cluster"]["worker"]]
        assert len(set(hosts)) == 3 and all(h.endswith(".mwms") for h in hosts)
    with pytest.raises(ValueError):
        pod_tf_config([{"name": "OTHER", "value": "1"}], 0)


def test_indexed_job_pod_names_match_kubernetes_naming():
    _, job = cluster.kubernetes.indexed_job("mwms", 2, "reg/t:1", COMMAND)
    config = pod_tf_config(_env(job["spec"]["template"]["spec"]), 0)
    name = job["metadata"]["name"]
    assert config["cluster"]["worker"] == [f"{name}-0.{name}:2222", f"{name}-1.{name}:2222"]


def test_trainjob_uses_a_plain_runtime_with_tf_config_set():
    runtime, train = cluster.kubernetes.trainjob("mwms", 2, "reg/t:1", COMMAND, runtime="tf-plain")
    assert runtime["kind"] == "TrainingRuntime" and train["kind"] == "TrainJob"
    assert train["apiVersion"] == runtime["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
    assert train["spec"]["runtimeRef"] == {"name": "tf-plain", "kind": "TrainingRuntime"}
    assert "torch" not in json.dumps(runtime["spec"]["mlPolicy"])  # no framework policy
    assert train["spec"]["trainer"]["numNodes"] == runtime["spec"]["mlPolicy"]["numNodes"] == 2


def test_manifests_holds_every_form_of_the_same_job():
    forms = cluster.kubernetes.manifests(
        "mwms", 3, "reg/t:1", COMMAND, gpus_per_worker=1, shared_volume_claim="data"
    )
    assert forms["indexed_job"] == cluster.kubernetes.indexed_job(
        "mwms", 3, "reg/t:1", COMMAND, gpus_per_worker=1, shared_volume_claim="data"
    )
    assert forms["jobset"] == [
        cluster.kubernetes.jobset(
            "mwms", 3, "reg/t:1", COMMAND, gpus_per_worker=1, shared_volume_claim="data"
        )
    ]
    assert forms["trainjob"][1]["spec"]["trainer"]["numNodes"] == 3
    (legacy,) = forms["tfjob"]
    assert legacy["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 3
    assert "legacy" in legacy["metadata"]["annotations"]["tflearn/status"]
    with pytest.raises(ValueError, match="workers"):
        cluster.kubernetes.manifests("mwms", 0, "reg/t:1", COMMAND)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError):
        cluster.kubernetes.indexed_job("Bad_Name", 2, "reg/t:1", COMMAND)
    with pytest.raises(ValueError):
        cluster.kubernetes.indexed_job("mwms", 0, "reg/t:1", COMMAND)
    with pytest.raises(ValueError):
        cluster.kubernetes.trainjob("mwms", 2, "", COMMAND)
    with pytest.raises(ValueError):
        cluster.kubernetes.indexed_job("mwms", 2, "reg/t:1", COMMAND, port=70000)
