#!/bin/bash
# Slurm Epilog (root, on every node of the job, after it ends).
# Removes exactly the per-job scratch directory the prolog made, nothing else.
set -u
root='@SAN_ROOT@'
case "${SLURM_JOB_ID:-}" in ''|*[!0-9]*) exit 0 ;; esac
dir="$root/$SLURM_JOB_ID"
if [ -L "$dir" ]; then
    rm -f -- "$dir"          # a link planted in its place: drop the link, never its target
elif [ -d "$dir" ]; then
    rm -rf --one-file-system -- "$dir"
fi
exit 0
