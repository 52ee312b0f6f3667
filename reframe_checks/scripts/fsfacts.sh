#!/bin/bash
# fsfacts.sh PATH [SITE_COMMAND] [versions]: what the file system holding PATH is, as this
# job sees it on this node; with "versions", only the path, kernel and MPI (another
# environment's job on a file system already described in this run).  One section per
# command, "### fsfacts: NAME (exit N)" then the command's own output, parsed by
# scratchbench/fsconfig.py.  Never fails: a command that is missing (exit 127), slow
# (124) or failing is recorded as such; each has 20 s.
target=${1:?usage: fsfacts.sh PATH [SITE_COMMAND] [versions]}
site_command=${2:-}
only_versions=${3:-}
export PATH="$PATH:/usr/sbin:/sbin:/usr/lpp/mmfs/bin"
started=$EPOCHREALTIME

section() {
    local name=$1 out rc
    shift
    out=$(timeout 20 "$@" 2>&1)
    rc=$?
    printf '### fsfacts: %s (exit %d)\n%s\n' "$name" "$rc" "$out"
}

elapsed() {
    printf '### fsfacts: elapsed (exit 0)\n%s\n' \
        "$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')"
}

real=$(readlink -f -- "$target" 2>/dev/null || echo "$target")
section path readlink -f -- "$target"
section kernel uname -r
# the environment's MPI (FSFACTS_MPI: the environment's extras['mpi']; none: no MPI), by
# the launcher its module names ($MPIRUN) or the family's own version command
if [ -n "${FSFACTS_MPI:-}" ]; then
    if [ -n "${MPIRUN:-}" ]; then section mpi "$MPIRUN" --version
    elif [ "$FSFACTS_MPI" = mpich ]; then section mpi mpichversion
    elif [ "$FSFACTS_MPI" = openmpi ]; then section mpi ompi_info --version
    else section mpi mpirun --version
    fi
fi
if [ "$only_versions" = versions ]; then
    elapsed
    exit 0
fi
section mount cat /proc/self/mountinfo
section statfs stat -f -- "$real"
if command -v sinfo >/dev/null 2>&1; then section slurm sinfo --version; fi
if command -v lsid >/dev/null 2>&1; then section lsf lsid; fi

# the file system holding the path (the last of mounts stacked on one point is the one seen)
fstype=$(findmnt -n -o FSTYPE -T "$real" 2>/dev/null | tail -n 1)
source=$(findmnt -n -o SOURCE -T "$real" 2>/dev/null | tail -n 1)
case "$fstype" in
    fuse.glusterfs|glusterfs)
        # SOURCE is HOST:VOLUME (or HOST:/VOLUME): ask that host's glusterd
        host=${source%%:*}
        volume=${source#*:}
        section gluster gluster --remote-host="$host" --mode=script --log-file=/dev/null \
            volume info "${volume#/}" ;;
    lustre)
        section lfs-getstripe lfs getstripe -d "$real"
        section lfs-df lfs df "$real" ;;
    gpfs)
        section mmlsfs mmlsfs "$source" ;;
esac
if [ -n "$site_command" ]; then
    section site bash -c "$site_command"
fi
elapsed     # what the collector cost the job, in seconds
exit 0
