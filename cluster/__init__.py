"""The embedded Slurm cluster on this machine (``scratchbench cluster up|down|status``)."""

from cluster.embedded import PARTITION, ClusterSpec, EmbeddedCluster

__all__ = ["ClusterSpec", "EmbeddedCluster", "PARTITION"]
