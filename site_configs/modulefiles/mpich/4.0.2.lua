-- Debian's MPICH 4.0.2 for the embedded cluster, exposed as sites expose their MPIs.
help([[MPICH 4.0.2 (Debian). srun starts it through PMI-2.]])
whatis("Name: mpich")
whatis("Version: 4.0.2")
family("mpi")
setenv("MPICC", "mpicc.mpich")
setenv("MPIRUN", "mpirun.mpich")
-- srun must use PMI-2 for MPICH; with another plugin it runs N single-rank copies.
setenv("SLURM_MPI_TYPE", "pmi2")
