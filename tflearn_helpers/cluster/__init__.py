"""Clusters on localhost and beyond: TF_CONFIG, local task processes, Kubernetes manifests.

``from tflearn_helpers import cluster`` gives the local-cluster names directly
(``cluster.LocalCluster``, ``cluster.local_cluster_spec``, ``cluster.start_process``: one
program, stopped at kernel exit); the other modules are
``cluster.tf_config``, ``cluster.processes`` (with ``cluster.fork_server``: Python programs
started as forks of a process that imported TensorFlow), ``cluster.events``, ``cluster.network`` (a
shaped link, lesson 05), ``cluster.slurm`` (a local multi-node Slurm cluster, lesson 07; its
nodes are kept apart by ``cluster.slurm_isolation``), ``cluster.kubernetes`` and
``cluster.tfjob`` (the legacy TFJob).
"""

from . import (
    events,
    fork_server,
    kubernetes,
    network,
    processes,
    slurm,
    slurm_isolation,
    tf_config,
    tfjob,
)
from .local import (
    SECURITY_NOTE,
    LocalCluster,
    in_process_servers,
    local_cluster_spec,
    port_is_listening,
    start_server,
)
from .processes import start as start_process  # lessons start one program with this name

__all__ = [
    "SECURITY_NOTE",
    "events",
    "fork_server",
    "LocalCluster",
    "in_process_servers",
    "kubernetes",
    "local_cluster_spec",
    "network",
    "port_is_listening",
    "processes",
    "slurm",
    "slurm_isolation",
    "start_process",
    "start_server",
    "tf_config",
    "tfjob",
]
