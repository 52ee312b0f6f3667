#!/bin/bash
# Slurm Prolog (root, on every node of the job, at allocation because PrologFlags=Alloc).
# Makes the per-job scratch directory, as seed 004's scheduler makes /sanscratch/$JOBID.
set -eu
root='@SAN_ROOT@'
case "${SLURM_JOB_ID:-}" in ''|*[!0-9]*) echo "prolog: SLURM_JOB_ID is not a number" >&2; exit 1 ;; esac
dir="$root/$SLURM_JOB_ID"
# The nodes of a multi-node job share this directory, as they would share a SAN. Every
# node's prolog makes it at the same moment, each through its own GlusterFS client: the
# servers may tell the loser "File exists" for a directory its client cannot see yet
# (`mkdir -p` then fails and Slurm drains the node). Try again until it is there.
for attempt in 1 2 3 4 5 6 7 8 9 10; do
    mkdir -p -m 0700 -- "$dir" 2>/dev/null && break
    [ -d "$dir" ] && break
    sleep 0.2
done
if [ ! -d "$dir" ]; then
    mkdir -p -m 0700 -- "$dir"      # says why, and fails the prolog
fi
chown "$SLURM_JOB_UID:$(id -g "$SLURM_JOB_UID")" -- "$dir"
