"""Clusters on localhost and beyond: TF_CONFIG, local task processes, Slurm, Kubernetes.

``from tflearn_helpers import cluster`` gives the local-cluster names directly
(``cluster.LocalCluster``, ``cluster.local_cluster_spec``, ``cluster.in_process_servers``);
the other modules are ``cluster.tf_config``, ``cluster.network`` (a shaped link, lesson 05),
``cluster.slurm`` (a local multi-node Slurm cluster, lesson 07; its nodes are kept apart by
``cluster.slurm_isolation``), ``cluster.kubernetes`` and ``cluster.tfjob`` (the legacy TFJob).
Each is imported on its first use (PEP 562). Starting one program and reading its events is
``tflearn_helpers.programs``.
"""

#: The names of ``cluster.local`` this package gives directly.
_LOCAL = [
    "SECURITY_NOTE",
    "LocalCluster",
    "in_process_servers",
    "local_cluster_spec",
    "port_is_listening",
    "start_server",
]
_MODULES = [
    "kubernetes",
    "local",
    "network",
    "slurm",
    "slurm_isolation",
    "task_server",
    "tf_config",
    "tfjob",
]


def __getattr__(name: str):
    """A module of this package, or a name of ``cluster.local``, on its first use."""
    if name in _LOCAL:
        from . import local

        return getattr(local, name)
    if name in _MODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LOCAL, *_MODULES])


__all__ = [
    "SECURITY_NOTE",
    "LocalCluster",
    "in_process_servers",
    "kubernetes",
    "local_cluster_spec",
    "network",
    "port_is_listening",
    "slurm",
    "slurm_isolation",
    "start_server",
    "tf_config",
    "tfjob",
]
