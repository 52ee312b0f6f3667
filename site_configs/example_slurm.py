"""Example Slurm site: a Lustre /scratch and node-local NVMe, with exclusive nodes.

Copy this file and edit the names, partitions, modules and targets.  Scratch targets
are data: add one here and every check runs on it.
"""

from scratchbench import paths
from scratchbench.sites import (ScratchTarget, polling, results_logging, results_storage,
                                with_scratch_targets)

RESULTS = paths.results_dir()

site_configuration = with_scratch_targets({
    "systems": [{
        "name": "example",
        "descr": "Example Slurm cluster",
        "hostnames": [r"login\d+\.example\.org"],
        "modules_system": "lmod",
        "stagedir": str(RESULTS / "stage"),
        "outputdir": str(RESULTS / "output"),
        "partitions": [{
            "name": "compute",
            "descr": "256 nodes x 64 cores, HDR InfiniBand",
            "scheduler": "slurm",
            "launcher": "srun",
            "access": ["--partition=compute", "--account=storage"],
            "environs": ["builtin", "gnu-openmpi"],
            "max_jobs": 16,
            "processor": {"num_cpus": 64},
            "extras": {"nodes": 256, "cpus_per_node": 64},
        }],
    }],
    "environments": [
        {"name": "builtin", "cc": "gcc", "features": ["serial"],
         "target_systems": ["example"]},
        # IOR and mdtest: built by Spack from the repository's spack.yaml against this
        # environment's MPI (the site's spack-externals.yaml beside it declares
        # openmpi@4.1 as an external and `mpi` non-buildable); `spack` must be on PATH.
        # A module instead: "ior": "module:ior/4.1.0", with MODULEPATH in env_vars if
        # it is not on the default one.
        {"name": "gnu-openmpi", "modules": ["gcc/12", "openmpi/4.1"], "cc": "mpicc",
         "env_vars": [["SLURM_MPI_TYPE", "pmix"]],
         "features": ["mpi", "openmpi"], "extras": {"mpi": "openmpi", "ior": "spack"},
         "target_systems": ["example"]},
    ],
    "logging": results_logging(RESULTS),
    "storage": results_storage(RESULTS),
    "general": [polling()],
}, system="example", targets=[
    ScratchTarget(name="scratch", path="/scratch/$USER", kind="parallel",
                  partitions=["compute"], description="Lustre, 8 OSS, 1 MiB stripes",
                  # the site's own facts, stored verbatim with every run
                  facts_command="lctl get_param osc.*.max_rpcs_in_flight"),
    ScratchTarget(name="nvme", path="$TMPDIR", kind="local-nvme", partitions=["compute"],
                  per_job=True, cleanup="scheduler",
                  description="per-job directory on node-local NVMe (job_container/tmpfs)"),
])
