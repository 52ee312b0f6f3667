"""What the loaded site config says: scratch targets, partition sizes, workloads.

Checks are parameterised at class-definition time, after ReFrame has loaded the site
config, so these functions read ReFrame's runtime: adding a target or a node to a
site config changes the checks without touching them.
"""

import copy
import functools
import os
from pathlib import Path
from typing import Any

import reframe.core.runtime as rt
import yaml
from reframe.core.exceptions import ReframeFatalError
from reframe.core.systems import SystemPartition

from scratchbench import paths

WORKLOADS_FILE = paths.CHECKS_DIR / "workloads.yaml"


def _runtime():
    """ReFrame's runtime, or None when imported outside a ReFrame run (unit tests)."""
    try:
        return rt.runtime()
    except ReframeFatalError:
        return None


def _partitions():
    runtime = _runtime()
    return runtime.system.partitions if runtime else []


def declared_targets() -> list[str]:
    """Sorted names of the scratch targets of the current system's partitions.

    Inside a ReFrame run a system without any is an error naming the site config: an
    empty parameter would make every check silently vanish.
    """
    names = sorted(
        {name for part in _partitions() for name in part.extras.get("scratch_targets", {})}
    )
    runtime = _runtime()
    if runtime and not names:
        sources = (
            ", ".join(
                str(s)
                for s in getattr(runtime.site_config, "sources", [])
                if str(s).endswith(".py")
            )
            or "the site config"
        )
        raise ValueError(
            f"{sources}: system '{runtime.system.name}' declares no scratch "
            "targets: add ScratchTarget entries with with_scratch_targets()"
        )
    return names


def per_job_somewhere(name: str) -> bool:
    """Whether any partition of the current system declares target `name` per job."""
    return any(
        part.extras.get("scratch_targets", {}).get(name, {}).get("per_job")
        for part in _partitions()
    )


def target_info(partition: SystemPartition, name: str) -> dict[str, Any]:
    return partition.extras["scratch_targets"][name]


def max_nodes() -> int:
    """The largest partition's node count (extras['nodes']), 1 if none says."""
    return max([int(p.extras.get("nodes", 1)) for p in _partitions()] or [1])


def max_cores() -> int:
    return max(
        [int(p.extras.get("cpus_per_node", p.processor.num_cpus or 1)) for p in _partitions()]
        or [1]
    )


def halving(n: int) -> list[int]:
    """n, n/2, ..., 1: seed 002's sweep."""
    out = []
    while n >= 1:
        out.append(n)
        n //= 2
    return out


def doubling(n: int) -> list[int]:
    """1, 2, 4, ... up to n (n itself included)."""
    out, k = [], 1
    while k < n:
        out.append(k)
        k *= 2
    return out + [n]


def load_workloads(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The workloads file as a new mapping (the caller may change it)."""
    path = Path(path or os.environ.get("SCRATCHBENCH_WORKLOADS") or WORKLOADS_FILE)
    try:
        stat = path.stat()
        data = _parsed_workloads(path, stat.st_mtime_ns, stat.st_size)
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"workloads file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"workloads file {path}: expected a mapping of check families")
    return copy.deepcopy(data)


@functools.lru_cache(maxsize=8)
def _parsed_workloads(path: Path, _mtime_ns: int, _size: int) -> Any:
    """The file parsed once per version (a run's ~190 checks each read it: 70 ms a
    parse with PyYAML's Python loader, seconds of every run's start)."""
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


# A job that hangs must not hold the nodes for the night: unless an entry of
# workloads.yaml says otherwise, each job gets this time limit.
DEFAULT_TIME_LIMITS = {"quick": "10m", "nightly": "2h", "acceptance": "6h"}


def workload(family: str, tag: str) -> dict[str, Any]:
    table = load_workloads()
    try:
        entry = dict(table[family][tag])
    except KeyError:
        raise ValueError(f"workloads file has no '{family}.{tag}' entry") from None
    entry.setdefault("time_limit", DEFAULT_TIME_LIMITS[tag])
    return entry
