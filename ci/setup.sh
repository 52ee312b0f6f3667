#!/usr/bin/env bash
# Install what scratchbench needs, idempotently.
#
#   ci/setup.sh [--test]    Debian 12, as root: the Debian packages of the embedded
#                           cluster and the tests (Slurm: slurmctld, slurmd, slurmdbd,
#                           client; munge, MariaDB, Open MPI and MPICH, Lmod, fio,
#                           Chromium for the page tests, build tools, liburing for the
#                           kernel's io_uring engine, strace, GlusterFS server and client
#                           with xfsprogs for the embedded cluster's SAN), then the
#                           harness in .venv;
#                           --test adds pytest and Playwright.
#   ci/setup.sh --harness-only
#                           any Linux, any user, no root, no system packages: only the
#                           harness in .venv, for a site's login node (its own Slurm or
#                           LSF, MPI modules and compilers are used).  The Python is
#                           $PYTHON, else python3; it must meet pyproject's requires-python.
#
# Logs go to $SCRATCHBENCH_HOME/logs/ (default var/logs/ of this checkout), never to a
# shared fixed path.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in
    ""|--test|--harness-only) ;;
    *) echo "setup: error: unknown option '$mode'; expected --test or --harness-only" >&2
       exit 2 ;;
esac

logs="${SCRATCHBENCH_HOME:-$PWD/var}/logs"
if ! mkdir -p "$logs" 2>/dev/null || [ ! -w "$logs" ]; then
    echo "setup: error: cannot write logs in $logs; set SCRATCHBENCH_HOME to a directory" \
         "of yours" >&2
    exit 2
fi

# The oldest Python the pinned dependencies install on, as pyproject states it.
python=${PYTHON:-python3}
needed=$(sed -n 's/^requires-python = ">=\([0-9.]*\)"$/\1/p' pyproject.toml)
if [ -z "$needed" ]; then
    echo "setup: error: pyproject.toml states no requires-python = \">=X.Y\"" >&2
    exit 2
fi
if ! have=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null); then
    echo "setup: error: no Python at '$python'; set PYTHON to a Python >= $needed" >&2
    exit 2
fi
if [ "$(printf '%s\n%s\n' "$needed" "$have" | sort -V | head -1)" != "$needed" ]; then
    echo "setup: error: $python is Python $have; scratchbench needs Python >= $needed" \
         "(set PYTHON to a newer one, e.g. from a module)" >&2
    exit 2
fi

if [ "$mode" != --harness-only ]; then
    packages=(slurmctld slurmd slurm-client slurmdbd munge mariadb-server
              openmpi-bin libopenmpi-dev mpich libmpich-dev lmod fio chromium
              make gcc liburing-dev python3-venv git strace clang-format
              glusterfs-server glusterfs-client xfsprogs)
    if ! command -v dpkg-query > /dev/null; then
        echo "setup: error: not a Debian system: the embedded cluster and the tests need" \
             "Debian 12; for the harness alone run ci/setup.sh --harness-only" >&2
        exit 2
    fi
    missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        if [ "$(id -u)" != 0 ]; then
            echo "setup: error: Debian packages missing (${missing[*]}); run as root, or" \
                 "for the harness alone ci/setup.sh --harness-only" >&2
            exit 2
        fi
        echo "setup: installing Debian packages: ${missing[*]} (log: $logs/setup-apt.log)" >&2
        export DEBIAN_FRONTEND=noninteractive
        if ! { apt-get update -q && apt-get install -y -q "${missing[@]}"; } \
                > "$logs/setup-apt.log" 2>&1; then
            echo "setup: error: apt-get failed; see $logs/setup-apt.log" >&2
            tail -5 "$logs/setup-apt.log" >&2
            exit 2
        fi
    fi
fi

extras=""
[ "$mode" = --test ] && extras="[test]"
stamp=".venv/.installed$extras"
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating the Python venv in .venv with $python ($have)" >&2
    if ! "$python" -m venv .venv > "$logs/setup-venv.log" 2>&1; then
        echo "setup: error: $python -m venv failed (on Debian: install python3-venv); see" \
             "$logs/setup-venv.log" >&2
        rm -rf .venv
        exit 2
    fi
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "setup: installing scratchbench$extras and its pinned dependencies into .venv" \
         "(log: $logs/setup-pip.log)" >&2
    if ! .venv/bin/pip install -q --disable-pip-version-check -e ".$extras" \
            > "$logs/setup-pip.log" 2>&1; then
        echo "setup: error: pip failed; see $logs/setup-pip.log" >&2
        tail -5 "$logs/setup-pip.log" >&2
        exit 2
    fi
    touch "$stamp"
fi
