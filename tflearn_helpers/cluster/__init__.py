"""Clusters on localhost and beyond: TF_CONFIG, local task processes, Kubernetes manifests.

``from tflearn_helpers import cluster`` gives the local-cluster names directly
(``cluster.LocalCluster``, ``cluster.local_cluster_spec``); the other modules are
``cluster.tf_config``, ``cluster.processes``, ``cluster.events``, ``cluster.network`` (a
shaped link, lesson 07) and ``cluster.kubernetes``.
"""

from . import events, kubernetes, network, processes, tf_config
from .local import (
    SECURITY_NOTE,
    LocalCluster,
    in_process_servers,
    local_cluster_spec,
    pick_ports,
    port_is_listening,
    start_server,
)

__all__ = [
    "SECURITY_NOTE",
    "events",
    "LocalCluster",
    "in_process_servers",
    "kubernetes",
    "local_cluster_spec",
    "network",
    "pick_ports",
    "port_is_listening",
    "processes",
    "start_server",
    "tf_config",
]
