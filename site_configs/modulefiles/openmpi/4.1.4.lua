-- Debian's Open MPI 4.1.4 for the embedded cluster, exposed as sites expose their MPIs.
help([[Open MPI 4.1.4 (Debian). srun starts it through PMIx.]])
whatis("Name: openmpi")
whatis("Version: 4.1.4")
family("mpi")
setenv("MPICC", "mpicc.openmpi")
setenv("MPIRUN", "mpirun.openmpi")
-- srun must use PMIx for Open MPI; the wrong plugin silently starts N single-rank jobs.
setenv("SLURM_MPI_TYPE", "pmix")
-- Several Slurm nodes share one host: keep MPI traffic on loopback TCP, since the
-- shared-memory transport crashes across two "nodes" of one machine.
setenv("OMPI_MCA_btl", "self,tcp")
setenv("OMPI_MCA_btl_tcp_if_include", "lo")
setenv("OMPI_MCA_oob_tcp_if_include", "lo")
setenv("OMPI_MCA_pml", "ob1")
-- PMIx's shared-memory data store (gds ds21) now and then crashes a rank in MPI_Init
-- under srun (signal 11; open-mpi/ompi#12495, openpmix#1114): use its hash store.
setenv("PMIX_MCA_gds", "hash")
setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
-- mpirun (the local-scheduler fallback) may start more ranks than cores.
setenv("OMPI_MCA_rmaps_base_oversubscribe", "1")
setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
