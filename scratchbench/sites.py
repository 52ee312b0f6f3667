"""Site configs and the scratch targets they declare.

A site config is a ReFrame configuration file (``site_configs/*.py``).  Its scratch
file systems are data: a list of :class:`ScratchTarget` passed to
:func:`with_scratch_targets`, which checks them and attaches them to the ReFrame
partitions that reach them, as a feature (``scratch_<name>``, which checks use in
``valid_systems``) and in the partition's ``extras['scratch_targets']`` (which checks
read for the path and kind).  Adding a file system never means editing a check.
"""

import importlib.util
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scratchbench import paths
from scratchbench.errors import ConfigError

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
KINDS = (
    "local-disk",
    "local-raid",
    "local-nvme",
    "san",
    "nfs",
    "parallel",
    "tmpfs",
    "burst-buffer",
    "object",
    "other",
)
CLEANUP_POLICIES = ("scheduler", "check", "none")
# The suite's tags: each an entry of reframe_checks/workloads.yaml, one per `run --tag`.
TAGS = ("quick", "nightly", "acceptance")
# Kinds whose one path is the same storage from every node (Jovian's remote placements
# need that); node-local kinds give each node its own.
SHARED_KINDS = ("san", "nfs", "parallel", "burst-buffer", "object")
# Directories a benchmark must never write into, however a target is spelled.
UNSAFE_PATHS = {
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib64",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
}


@dataclass
class ScratchTarget:
    """One scratch file system a site wants measured.

    ``path`` is an absolute path or a template expanded in the job's shell, such as
    ``$MYSANSCRATCH`` (seed 004's per-job directory) or ``/scratch/$USER``.
    ``per_job`` marks a directory the scheduler makes for each job and removes after
    it; the staging check then confirms the removal.  ``references`` holds expected
    figures per check and metric, as ReFrame reference tuples.
    """

    name: str
    path: str
    kind: str
    partitions: list
    per_job: bool = False
    cleanup: str = "check"
    description: str = ""
    references: dict = field(default_factory=dict)
    #: the directories of a node that sit on separate disks (seed 000's diskperf writes
    #: to all at once); empty: the target's path alone
    disks: list = field(default_factory=list)
    #: the same storage from every node; None: decided by the kind (san, nfs, parallel,
    #: burst-buffer and object are shared)
    shared: bool | None = None
    #: a shell command, run where ReFrame runs when a job on this target failed, that
    #: prints what is wrong with the file system, one problem a line ("storage server 2
    #: of sanscratch is down"), and nothing when it is healthy; the failed case's cause
    #: then starts with it.  Empty: none.
    health_command: str = ""
    #: a shell command, run inside a job on a node of the partition once per run (with
    #: the collector of what the file system is, ``reframe_checks/scripts/fsfacts.sh``),
    #: whose output is stored verbatim with the run as the site's own facts of this
    #: target (``lctl get_param osc.*.max_rpcs_in_flight``, say).  Empty: none.
    facts_command: str = ""

    def validate(self, where: str) -> None:
        if not isinstance(self.name, str) or not NAME_RE.match(self.name):
            raise ConfigError(
                f"{where}: scratch target name {self.name!r}: expected a letter "
                "followed by letters, digits or _"
            )
        if not isinstance(self.path, str) or not self.path:
            raise ConfigError(
                f"{where}: scratch target '{self.name}': path must be a non-empty string"
            )
        if not (self.path.startswith("/") or self.path.startswith("$")):
            raise ConfigError(
                f"{where}: scratch target '{self.name}': path {self.path!r} must "
                "be absolute or start with an environment variable such as "
                "$MYSANSCRATCH"
            )
        if self.path.startswith("/"):
            normal = os.path.normpath(self.path)
            if normal in UNSAFE_PATHS:
                raise ConfigError(
                    f"{where}: scratch target '{self.name}': refusing the system "
                    f"directory {normal} as a scratch path"
                )
        if self.kind not in KINDS:
            raise ConfigError(
                f"{where}: scratch target '{self.name}': kind {self.kind!r}: "
                f"expected one of {', '.join(KINDS)}"
            )
        if self.cleanup not in CLEANUP_POLICIES:
            raise ConfigError(
                f"{where}: scratch target '{self.name}': cleanup "
                f"{self.cleanup!r}: expected one of {', '.join(CLEANUP_POLICIES)}"
            )
        if self.per_job and self.cleanup != "scheduler":
            raise ConfigError(
                f"{where}: scratch target '{self.name}': a per_job directory is "
                "removed by the scheduler: set cleanup='scheduler'"
            )
        if not isinstance(self.partitions, (list, tuple)) or not self.partitions:
            raise ConfigError(
                f"{where}: scratch target '{self.name}': partitions must list "
                "at least one partition name"
            )
        if not isinstance(self.disks, (list, tuple)) or not all(
            isinstance(d, str) and (d.startswith("/") or d.startswith("$")) for d in self.disks
        ):
            raise ConfigError(
                f"{where}: scratch target '{self.name}': disks must list absolute "
                "paths or $VARIABLE templates, one per disk"
            )
        if self.shared is not None and not isinstance(self.shared, bool):
            raise ConfigError(
                f"{where}: scratch target '{self.name}': shared must be True, False or left out"
            )
        if not isinstance(self.health_command, str):
            raise ConfigError(
                f"{where}: scratch target '{self.name}': health_command must be "
                "a shell command (a string), or left out"
            )
        if not isinstance(self.facts_command, str):
            raise ConfigError(
                f"{where}: scratch target '{self.name}': facts_command must be "
                "a shell command (a string), or left out"
            )
        if not isinstance(self.references, dict):
            raise ConfigError(
                f"{where}: scratch target '{self.name}': references must be a "
                "dict of {check: {metric: (value, lower, upper, unit)}}"
            )


def with_scratch_targets(
    configuration: dict[str, Any],
    system: str,
    targets: Iterable[ScratchTarget],
    where: str | None = None,
) -> dict[str, Any]:
    """Attach ``targets`` to the partitions of ``system`` in a ReFrame configuration.

    Raises ConfigError on the first problem, naming the target and what was expected.
    Returns the configuration, so a site config can end with
    ``site_configuration = with_scratch_targets({...}, 'mysystem', [...])``.
    """
    where = where or f"site config of system '{system}'"
    systems = {s.get("name"): s for s in configuration.get("systems", [])}
    if system not in systems:
        raise ConfigError(
            f"{where}: scratch targets name system '{system}', which the "
            f"configuration does not define (it has: {', '.join(systems) or 'none'})"
        )
    partitions = {p.get("name"): p for p in systems[system].get("partitions", [])}
    seen = set()
    for target in targets:
        if not isinstance(target, ScratchTarget):
            raise ConfigError(f"{where}: expected ScratchTarget entries, got {target!r}")
        target.validate(where)
        if target.name in seen:
            raise ConfigError(f"{where}: scratch target '{target.name}' is declared twice")
        seen.add(target.name)
        for part_name in target.partitions:
            if part_name not in partitions:
                raise ConfigError(
                    f"{where}: scratch target '{target.name}' names partition '{part_name}', "
                    f"which system '{system}' does not have (it has: {', '.join(partitions)})"
                )
            part = partitions[part_name]
            part.setdefault("features", [])
            feature = f"scratch_{target.name}"
            if feature not in part["features"]:
                part["features"].append(feature)
            info = {k: v for k, v in asdict(target).items() if k not in ("name", "partitions")}
            info["disks"] = list(target.disks) or [target.path]
            info["shared"] = target.kind in SHARED_KINDS if target.shared is None else target.shared
            part.setdefault("extras", {}).setdefault("scratch_targets", {})[target.name] = info
    return configuration


# The perflog line of every site: who ran what, where, on which scratch target, with how
# many nodes and tasks per node, transfer size and API, then each figure.
PERFLOG_FORMAT = (
    "%(check_job_completion_time)s|%(check_display_name)s|%(check_system)s|"
    "%(check_partition)s|%(check_environ)s|%(check_scratch_target)s|"
    "%(check_scratch_kind)s|%(check_num_nodes_used)s|"
    "%(check_tasks_per_node_used)s|%(check_transfer_size)s|%(check_io_api)s|"
    "%(check_jobid)s|%(check_result)s|"
    "%(check_perfvalues)s"
)


def results_logging(results_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """ReFrame's `logging` section: perflogs under results_dir/perflogs, one file per
    check and partition, appended to (never overwritten).

    Nothing below ReFrame's "verbose" level is logged (its stage timings are): ReFrame
    formats each message with every loggable attribute of its check before a handler
    filters it, ~2 ms a message here, and its debug messages (thousands per run, a few
    per check at every poll) kept its one loop from noticing finished jobs for seconds.

    ReFrame's own log goes to the run's directory (``$SCRATCHBENCH_REFRAME_LOG``, set by
    `scratchbench run`); without it ReFrame makes a new file in /tmp for every run."""
    return [
        {
            "level": "verbose",
            "handlers": [
                {
                    "type": "file",
                    "name": os.environ.get("SCRATCHBENCH_REFRAME_LOG", ""),
                    "level": "verbose",
                    "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s",
                    "append": True,
                }
            ],
            "handlers_perflog": [
                {
                    "type": "filelog",
                    "basedir": str(Path(results_dir) / "perflogs"),
                    "prefix": "%(check_system)s/%(check_partition)s",
                    "level": "info",
                    "format": PERFLOG_FORMAT,
                    "format_perfvars": "%(check_perf_var)s=%(check_perf_value)s %(check_perf_unit)s|",
                    "append": True,
                }
            ],
        }
    ]


def polling(rate_min: float = 2.0, rate_max: float = 10.0) -> dict[str, float]:
    """ReFrame's `general` poll settings: how often job states are asked for.

    ReFrame's defaults slow down to one poll every 10 s, which adds seconds to every
    check; twice a second (one sacct or bjobs call for all the run's jobs) keeps a
    check's overhead near a second.  A site whose scheduler is busy may poll less."""
    return {"poll_rate_min": rate_min, "poll_rate_max": rate_max, "poll_rate_decay": 0.1}


def results_storage(results_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """ReFrame's results DB (off by default in ReFrame) in results_dir/results.db."""
    return [{"enable": True, "sqlite_db_file": str(Path(results_dir) / "results.db")}]


def resolve_site_config(site: str) -> Path:
    """A site name (``local``) or a path to a config file -> the config file's Path."""
    candidate = Path(site)
    if candidate.suffix in (".py", ".yaml", ".yml", ".json") or os.sep in site:
        path = candidate
    else:
        path = paths.SITE_CONFIGS_DIR / f"{site}.py"
    if not path.is_file():
        known = sorted(
            p.stem for p in paths.SITE_CONFIGS_DIR.glob("*.py") if not p.name.startswith("_")
        )
        raise ConfigError(
            f"site config {site!r}: no file {path} (known sites: "
            f"{', '.join(known)}; or give a path to a config file)"
        )
    return path.resolve()


def load_site_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Import a Python site config and return its ``site_configuration`` dict.

    Every failure becomes one line naming the file and the cause, including ReFrame's
    own schema validation, so a malformed config never reaches a run.
    """
    path = Path(path)
    if path.suffix != ".py":
        raise ConfigError(
            f"site config {path}: only Python site configs are supported "
            "(they declare scratch targets with with_scratch_targets)"
        )
    module_name = f"_scratchbench_site_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None  # a .py file always has both
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ConfigError as exc:
        raise ConfigError(f"site config {path}: {exc}") from exc
    except SyntaxError as exc:
        raise ConfigError(f"site config {path}: line {exc.lineno}: {exc.msg}") from exc
    except Exception as exc:  # a site config is user code: report, never trace back
        raise ConfigError(f"site config {path}: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.modules.pop(module_name, None)
    config = getattr(module, "site_configuration", None)
    if not isinstance(config, dict):
        raise ConfigError(f"site config {path}: defines no site_configuration dict")
    _validate_with_reframe(path, config)
    return config


def _validate_with_reframe(path, config):
    """Run ReFrame's JSON-schema validation and keep only its first line."""
    import jsonschema
    import json
    import reframe

    schema_file = Path(reframe.__file__).parent / "schemas" / "config.json"
    schema = json.loads(schema_file.read_text())
    try:
        jsonschema.validate(config, schema)
    except jsonschema.ValidationError as exc:
        location = "/".join(str(p) for p in exc.absolute_path) or "top level"
        raise ConfigError(f"site config {path}: {location}: {exc.message}") from exc


def scratch_targets(
    config: Mapping[str, Any], system: str | None = None
) -> dict[str, dict[str, Any]]:
    """{partition name: {target name: target dict}} for one system of a config."""
    systems = config.get("systems", [])
    chosen = [s for s in systems if system is None or s.get("name") == system]
    if not chosen:
        raise ConfigError(
            f"system '{system}' is not in the site config (it has: "
            f"{', '.join(s.get('name', '?') for s in systems)})"
        )
    return {
        p["name"]: p.get("extras", {}).get("scratch_targets", {})
        for p in chosen[0].get("partitions", [])
    }
