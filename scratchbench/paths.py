"""Where scratchbench keeps its files.

Everything scratchbench writes lives under one state directory: the embedded
cluster, ReFrame's stage/output/perflogs and results DB, the history store and
the pages.  It defaults to ``var/`` in the checkout so a newcomer finds it, and
``SCRATCHBENCH_HOME`` moves it (CI and tests use that to stay isolated).
"""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CHECKS_DIR = REPO_ROOT / "reframe_checks"
SITE_CONFIGS_DIR = REPO_ROOT / "site_configs"
KERNEL_SRC_DIR = REPO_ROOT / "src"
SPACK_ENV_FILE = REPO_ROOT / "spack.yaml"


def checkout_problem() -> str | None:
    """Why this installation is not a scratchbench checkout, or None when it is.

    scratchbench builds the kernel from src/ and hands reframe_checks/ and site_configs/
    to ReFrame by path, so it runs from a checkout (installed editable), not a wheel.
    """
    missing = [
        p for p in (KERNEL_SRC_DIR / "Makefile", CHECKS_DIR, SITE_CONFIGS_DIR) if not p.exists()
    ]
    if not missing:
        return None
    return (
        f"{REPO_ROOT} is not a scratchbench checkout ({missing[0]} is missing): "
        "scratchbench runs from a git checkout; install it there with "
        "`pip install -e CHECKOUT` (ci/setup.sh does), not as a wheel"
    )


def state_dir() -> Path:
    """The state directory (not created here)."""
    return Path(os.environ.get("SCRATCHBENCH_HOME", REPO_ROOT / "var")).resolve()


def cluster_dir() -> Path:
    return state_dir() / "cluster"


def results_dir() -> Path:
    """ReFrame's prefix: stage, output, perflogs, run reports, results DB."""
    return state_dir() / "results"


def history_db() -> Path:
    """The history store; SCRATCHBENCH_HISTORY puts it elsewhere (a shared file system
    that keeps years of nights, say)."""
    where = os.environ.get("SCRATCHBENCH_HISTORY")
    return Path(where).resolve() if where else state_dir() / "history.sqlite"
