"""ReFrame site config of the embedded cluster (`scratchbench cluster up`).

System ``embedded``: one Slurm partition, ``batch``, whose nodes are slurmd daemons on
this machine.  Open MPI and MPICH are Lmod modules (site_configs/modulefiles), the way
sites expose their MPIs.  The partition's size comes from the running cluster's record,
so node-count sweeps follow ``cluster up --nodes N``.

System ``embedded-local``: the same machine through ReFrame's local scheduler and
mpirun, the fallback when Slurm cannot start (no root, say): no exclusive nodes, no
per-job scratch directory, Open MPI only (Debian's `mpirun` is Open MPI's).
"""

import json
import os
import shlex
import sys
from pathlib import Path

from scratchbench import paths
import scratchbench.slurm_embedded  # noqa: F401  (registers the 'slurm_embedded' scheduler)
from scratchbench.sites import (ScratchTarget, polling, results_logging, results_storage,
                                with_scratch_targets)

MODULEPATH = str(paths.SITE_CONFIGS_DIR / "modulefiles")
RESULTS = paths.results_dir()


def _cluster_state():
    try:
        return json.loads((paths.cluster_dir() / "cluster.json").read_text())
    except (OSError, ValueError):
        return {}


def _cluster_size(state):
    try:
        spec = state["spec"]
        return int(spec["nodes"]), int(spec["cpus_per_node"])
    except (KeyError, TypeError, ValueError):
        return 2, 2   # the defaults of `scratchbench cluster up`


def _sanscratch(state):
    """The per-job target as the running cluster made it: on its GlusterFS SAN, or on a
    plain directory when the SAN could not start (and why)."""
    san = state.get("san") or {}
    if san.get("kind") == "glusterfs":
        stripe = (f"files sharded in {san['stripe_size'] >> 20} MiB blocks"
                  if san.get("stripe_size") else "each file whole on one server")
        # the options an admin changed (`scratchbench cluster san --set`), as they are now
        changed = sorted({c["change"].removeprefix("volume option ")
                          for c in san.get("changes", []) if c["change"].startswith("volume option ")})
        options = san.get("options") or {}
        if changed:
            stripe += "; options set: " + ", ".join(f"{k}={options.get(k, '?')}" for k in changed)
        return ScratchTarget(
            name="sanscratch", path="$MYSANSCRATCH", kind="san", partitions=["batch"],
            per_job=True, cleanup="scheduler", health_command=HEALTH_COMMAND,
            description=f"GlusterFS SAN: {san.get('servers')} storage servers, each on a disk "
                        f"of its own, {stripe}; every node reads and writes through its own "
                        "client (FUSE, TCP). The per-job directory is made by the Slurm "
                        "prolog and removed by the epilog, like seed 004's /sanscratch/$JOBID")
    reason = san.get("reason") or "no cluster has been started"
    return ScratchTarget(
        name="sanscratch", path="$MYSANSCRATCH", kind="other", shared=True,
        partitions=["batch"], per_job=True, cleanup="scheduler",
        description="per-job directory on a plain directory of this machine's disk, NOT a "
                    f"network file system (the GlusterFS SAN could not start: {reason}); "
                    "made by the Slurm prolog and removed by the epilog")


# What a failed case on the SAN asks: which server or client is gone (`cluster health`).
HEALTH_COMMAND = (f"SCRATCHBENCH_HOME={shlex.quote(str(paths.state_dir()))} "
                  f"{shlex.quote(str(Path(sys.executable).with_name('scratchbench')))} "
                  "cluster health")
CLUSTER_STATE = _cluster_state()
NODES, CPUS_PER_NODE = _cluster_size(CLUSTER_STATE)
LOCAL_CPUS = os.cpu_count() or 1
LMOD_INIT = "source /usr/share/lmod/lmod/init/bash"

site_configuration = with_scratch_targets(with_scratch_targets({
    "systems": [{
        "name": "embedded",
        "descr": "scratchbench embedded Slurm cluster on this machine",
        "hostnames": [".*"],
        "modules_system": "lmod",
        "stagedir": str(RESULTS / "stage"),
        "outputdir": str(RESULTS / "output"),
        "partitions": [{
            "name": "batch",
            "descr": f"Slurm partition 'batch': {NODES} nodes x {CPUS_PER_NODE} CPUs",
            # Slurm, but a job waits out a node that misses a ping under load instead
            # of being cancelled as blocked (scratchbench/slurm_embedded.py)
            "scheduler": "slurm_embedded",
            "launcher": "srun",
            "access": ["--partition=batch"],
            "environs": ["builtin", "gnu-openmpi", "gnu-mpich"],
            # Job scripts run in a non-login shell: define `module` there.
            "prepare_cmds": [LMOD_INIT],
            "max_jobs": 4,
            "processor": {"num_cpus": CPUS_PER_NODE},
            "extras": {"nodes": NODES, "cpus_per_node": CPUS_PER_NODE,
                       # one node's worth of slots is small here: let sweeps overcommit
                       "overcommit": True},
        }],
    }, {
        "name": "embedded-local",
        "descr": "this machine through ReFrame's local scheduler (fallback without Slurm)",
        "hostnames": [".*"],
        "modules_system": "lmod",
        "stagedir": str(RESULTS / "stage"),
        "outputdir": str(RESULTS / "output"),
        "partitions": [{
            "name": "default",
            "descr": f"ReFrame's local scheduler, mpirun, {LOCAL_CPUS} CPUs",
            "scheduler": "local",
            "launcher": "mpirun",
            "environs": ["builtin", "gnu-openmpi"],
            "prepare_cmds": [LMOD_INIT],
            "processor": {"num_cpus": LOCAL_CPUS},
            "extras": {"nodes": 1, "cpus_per_node": LOCAL_CPUS},
        }],
    }],
    "environments": [
        {
            # plain shell jobs (staging): no MPI needed
            "name": "builtin",
            "cc": "gcc",
            "features": ["serial"],
            "target_systems": ["embedded", "embedded-local"],
        },
        {
            "name": "gnu-openmpi",
            "modules": [{"name": "openmpi/4.1.4", "path": MODULEPATH}],
            "cc": "mpicc.openmpi",
            "features": ["mpi", "openmpi"],
            "extras": {"mpi": "openmpi"},
            "target_systems": ["embedded", "embedded-local"],
        },
        {
            "name": "gnu-mpich",
            "modules": [{"name": "mpich/4.0.2", "path": MODULEPATH}],
            "cc": "mpicc.mpich",
            "features": ["mpi", "mpich"],
            "extras": {"mpi": "mpich"},
            "target_systems": ["embedded"],
        },
    ],
    "logging": results_logging(RESULTS),
    "storage": results_storage(RESULTS),
    "general": [{"check_search_path": [str(paths.CHECKS_DIR)],
                 # No Lmod calls in ReFrame's own process before each job script (0.7 s
                 # a check): these modules do not conflict.  `scratchbench run` looks
                 # each module up once and turns the resolution back on for a run that
                 # finds one missing, so ReFrame names it in each check that uses it.
                 "resolve_module_conflicts": False,
                 # A poll is one squeue of slurmctld on this machine (~10 ms): 5 a second
                 # notices a job's end 0.1 s after it on average, not 0.25 s
                 **polling(rate_min=5.0)}],
}, system="embedded", targets=[
    _sanscratch(CLUSTER_STATE),
    ScratchTarget(
        name="localscratch", path="$LOCALSCRATCH", kind="local-disk", partitions=["batch"],
        disks=["$LOCALSCRATCH/disk0", "$LOCALSCRATCH/disk1"],
        description="node-local directory of each node, like /localscratch, on this "
                    "machine's own disk (ext4 or what holds the state directory), read "
                    "through the node's page cache; disk0 and disk1 stand for two disks "
                    "(they share this machine's one)"),
]), system="embedded-local", targets=[
    ScratchTarget(
        name="localscratch", path="$SCRATCHBENCH_LOCAL_SCRATCH", kind="local-disk",
        partitions=["default"],
        description="a directory of this machine (set by `scratchbench run`)"),
])
