#!/usr/bin/env bash
# Install what scratchbench needs on Debian 12, idempotently:
#   - Debian packages: Slurm (slurmctld, slurmd, slurmdbd, client), munge, MariaDB,
#     Open MPI and MPICH, Lmod, fio, Chromium (for the page tests), build tools,
#     GlusterFS server and client with xfsprogs (the embedded cluster's SAN),
#     liburing (the kernel's io_uring engine) and strace (tests read the kernel's
#     system calls);
#   - a Python venv in .venv with the pinned harness (and test) dependencies.
# Usage: ci/setup.sh [--test]      (--test adds pytest and Playwright)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(slurmctld slurmd slurm-client slurmdbd munge mariadb-server
          openmpi-bin libopenmpi-dev mpich libmpich-dev lmod fio chromium
          make gcc liburing-dev python3-venv git strace
          glusterfs-server glusterfs-client xfsprogs)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "setup: error: Debian packages missing (${missing[*]}); run as root or install them" >&2
        exit 2
    fi
    echo "setup: installing Debian packages: ${missing[*]} (log: /tmp/scratchbench-apt.log)" >&2
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -q && apt-get install -y -q "${missing[@]}"; } \
            > /tmp/scratchbench-apt.log 2>&1; then
        echo "setup: error: apt-get failed; see /tmp/scratchbench-apt.log" >&2
        tail -5 /tmp/scratchbench-apt.log >&2
        exit 2
    fi
fi

extras=""
[ "${1:-}" = "--test" ] && extras="[test]"
stamp=".venv/.installed$extras"
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating the Python venv in .venv" >&2
    python3 -m venv .venv
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "setup: installing scratchbench$extras and its pinned dependencies into .venv" \
         "(log: /tmp/scratchbench-pip.log)" >&2
    if ! .venv/bin/pip install -q --disable-pip-version-check -e ".$extras" \
            > /tmp/scratchbench-pip.log 2>&1; then
        echo "setup: error: pip failed; see /tmp/scratchbench-pip.log" >&2
        tail -5 /tmp/scratchbench-pip.log >&2
        exit 2
    fi
    touch "$stamp"
fi
