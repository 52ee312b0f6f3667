"""Example LSF site, modelled on seed 004 (cluster greentail, LSF/Lava).

Queues: hp12 (nodes with one local 7.2K disk, QDR InfiniBand) and ehwfd (four nodes
with a seven-disk RAID 0 array as /localscratch).  The scheduler makes
/sanscratch/$LSB_JOBID for each job, exports it as MYSANSCRATCH and removes it after;
/home is NFS over IPoIB.  Copy this file and edit names, queues, modules and targets.

Job scripts must be standard LSF: 'lsf_std' writes -n and -R "span[ptile=N]" where
ReFrame's own 'lsf' backend writes the CSM-only -nnodes.
"""

import scratchbench.lsf  # noqa: F401  (registers the 'lsf_std' scheduler)
from scratchbench import paths
from scratchbench.sites import (ScratchTarget, polling, results_logging, results_storage,
                                with_scratch_targets)

RESULTS = paths.results_dir()

site_configuration = with_scratch_targets({
    "systems": [{
        "name": "greentail",
        "descr": "Example LSF cluster (seed 004)",
        "hostnames": [r"greentail.*", r"swallowtail.*"],
        "modules_system": "lmod",
        "stagedir": str(RESULTS / "stage"),
        "outputdir": str(RESULTS / "output"),
        "partitions": [
            {
                "name": "hp12",
                "descr": "queue hp12: 32 nodes x 8 cores, one local 7.2K disk, QDR IB",
                "scheduler": "lsf_std",
                "launcher": "mpirun",
                "access": ["-q hp12"],
                "environs": ["builtin", "gnu-openmpi"],
                "max_jobs": 8,
                "processor": {"num_cpus": 8},
                "extras": {"nodes": 32, "cpus_per_node": 8},
            },
            {
                "name": "ehwfd",
                "descr": "queue ehwfd: 4 nodes x 8 cores, 7 x 15K disks in RAID 0 as "
                         "/localscratch",
                "scheduler": "lsf_std",
                "launcher": "mpirun",
                "access": ["-q ehwfd"],
                "environs": ["builtin", "gnu-openmpi"],
                "max_jobs": 4,
                "processor": {"num_cpus": 8},
                "extras": {"nodes": 4, "cpus_per_node": 8},
            },
        ],
    }],
    "environments": [
        {"name": "builtin", "cc": "gcc", "features": ["serial"],
         "target_systems": ["greentail"]},
        {"name": "gnu-openmpi", "modules": ["openmpi/4.1.4"], "cc": "mpicc",
         "features": ["mpi", "openmpi"], "target_systems": ["greentail"]},
    ],
    "logging": results_logging(RESULTS),
    "storage": results_storage(RESULTS),
    "general": [polling()],
}, system="greentail", targets=[
    ScratchTarget(name="sanscratch", path="$MYSANSCRATCH", kind="nfs",
                  partitions=["hp12", "ehwfd"], per_job=True, cleanup="scheduler",
                  description="/sanscratch/$LSB_JOBID: 5 TB NFS over IPoIB, 24 x 1 TB 7.2K "
                              "disks; made and removed by the scheduler"),
    ScratchTarget(name="localscratch", path="/localscratch", kind="local-disk",
                  partitions=["hp12"], description="one 160 GB 7.2K local disk"),
    ScratchTarget(name="localraid", path="/localscratch", kind="local-raid",
                  partitions=["ehwfd"], description="7 x 36 GB 15K disks, RAID 0, 230 GB"),
    ScratchTarget(name="home", path="/home/$USER/scratchbench", kind="nfs",
                  partitions=["hp12", "ehwfd"],
                  description="/home: NFS over IPoIB, 12 x 1 TB 7.2K disks"),
])
