import json

import pytest

from tflearn_helpers import cluster

CLUSTER = {"chief": ["localhost:2222"], "worker": ["localhost:2223", "localhost:2224"]}


def test_build_and_validate_round_trip():
    config = cluster.tf_config.build(CLUSTER, "worker", 1)
    assert cluster.tf_config.validate(json.dumps(config)) == config


@pytest.mark.parametrize(
    "config, field",
    [
        ("{not json", "valid JSON"),
        ([], "JSON object"),
        ({"cluster": {}, "task": {}}, '["cluster"]'),
        ({"cluster": {"gpu": ["a:1"]}, "task": {"type": "gpu"}}, '["gpu"]: unknown job'),
        ({"cluster": {"worker": "a:1"}, "task": {"type": "worker"}}, 'cluster"]["worker"]'),
        ({"cluster": {"worker": ["a"]}, "task": {"type": "worker"}}, "not 'host:port'"),
        ({"cluster": {"worker": ["a:1", "a:1"]}, "task": {"type": "worker"}}, "also worker[0]"),
        ({"cluster": {"chief": ["a:1", "b:2"]}, "task": {"type": "chief"}}, "exactly one"),
        ({"cluster": CLUSTER, "task": {"type": "ps", "index": 0}}, '["task"]["type"]'),
        ({"cluster": CLUSTER, "task": {"type": "worker", "index": 2}}, "has 2 address"),
        ({"cluster": CLUSTER, "task": {"type": "worker", "index": "0"}}, "integer"),
        ({"cluster": CLUSTER, "task": "worker"}, '["task"] must be'),
        ({"cluster": CLUSTER, "task": {"type": "chief"}, "extra": 1}, "unknown keys"),
    ],
)
def test_malformed_configs_name_the_field(config, field):
    with pytest.raises(cluster.tf_config.TFConfigError) as err:
        cluster.tf_config.validate(config)
    assert field in str(err.value)


def test_an_evaluator_may_stand_outside_the_training_cluster():
    """As TensorFlow's multi_worker_util allows: the evaluator is not part of training."""
    training = {"chief": ["localhost:2222"], "worker": ["localhost:2223"], "ps": ["localhost:2224"]}
    config = {"cluster": training, "task": {"type": "evaluator", "index": 0}}
    assert cluster.tf_config.validate(config) == config
    with pytest.raises(cluster.tf_config.TFConfigError, match="index"):
        cluster.tf_config.validate({"cluster": training, "task": {"type": "evaluator", "index": 1}})
    with pytest.raises(cluster.tf_config.TFConfigError, match="type"):
        cluster.tf_config.validate({"cluster": training, "task": {"type": "ps2", "index": 0}})
