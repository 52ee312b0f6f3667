#!/bin/bash
# Slurm Prolog (root, on every node of the job, at allocation because PrologFlags=Alloc).
# Makes the per-job scratch directory, as seed 004's scheduler makes /sanscratch/$JOBID.
set -eu
root='@SAN_ROOT@'
case "${SLURM_JOB_ID:-}" in ''|*[!0-9]*) echo "prolog: SLURM_JOB_ID is not a number" >&2; exit 1 ;; esac
dir="$root/$SLURM_JOB_ID"
# The nodes of a multi-node job share this directory, as they would share a SAN.
mkdir -p -m 0700 -- "$dir"
chown "$SLURM_JOB_UID:$(id -g "$SLURM_JOB_UID")" -- "$dir"
