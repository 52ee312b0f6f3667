"""Bring-up of the embedded Slurm cluster (``scratchbench cluster up|down|status``)."""

from scratchbench.cluster.embedded import ClusterSpec, EmbeddedCluster, PARTITION

__all__ = ["ClusterSpec", "EmbeddedCluster", "PARTITION"]
