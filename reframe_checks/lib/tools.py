"""IOR and mdtest as ReFrame checks: where the tool comes from, how it runs, what it yields.

Where IOR (with mdtest, which modern Spack builds as part of the ``ior`` package) comes
from is the environment's business, said in its ``extras['ior']`` in the site config:

* ``"spack"``        build from the repository's ``spack.yaml`` with ReFrame's Spack build
                     system (one build per partition and environment; ``spack.lock`` is
                     kept with the run);
* ``"module:NAME"``  load the Lmod/Tcl module NAME, found on the ``MODULEPATH`` the
                     environment sets (its ``env_vars``) or the site's default one;
* ``"path"``         use ``ior``/``mdtest`` found on PATH; also what an environment
                     without ``extras['ior']`` does.

A provider states which MPI its binary is built with (``tool_mpi``): on PATH or from a
module, from the libraries ``ldd`` lists for its ``ior`` (the module loaded in a shell
set up as the job's); for a Spack build, the environment's own MPI (``extras['mpi']``),
which its externals provide.

What the site asked for must work: when an environment names a route in
``extras['ior']`` and that route gives no usable tool (no ``spack``, a module that does
not load or has no ``ior``, a binary built with another MPI than the environment's),
the provider FAILS with the cause (:class:`ToolUnavailableError`, one line), so the run
is not green.  Only an environment that asked for nothing is skipped with the reason
when PATH has no matching tool: visible, never a silent pass.

Each check runs the tool once per phase and repetition, as IO500 does (IOR: write, then
read what was written; mdtest: create, stat, read, remove), records every launch's exit
status before the working directory is removed, and drops the written files from the
page cache before they are read (or reads them with O_DIRECT, or from another node).
"""

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import reframe as rfm
import reframe.core.runtime as rt
import reframe.utility.sanity as sn
import yaml
from reframe.core.environments import Environment
from reframe.core.exceptions import EnvironError, ReframeError
from reframe.core.builtins import (
    fixture,
    parameter,
    run_after,
    run_before,
    sanity_function,
    variable,
)
from reframe.core.systems import SystemPartition

from reframe_checks.lib.base import ScratchCheck, SuiteTest, figure
from reframe_checks.lib.parsers import (
    ior_problems,
    mdtest_problems,
    parse_ior_json,
    parse_mdtest,
    parse_mdtest_rank_details,
)
from scratchbench import paths
from scratchbench.errors import one_line

SPACK_ENV = "spack_env"
#: one line per tool launch, "<phase> <exit status>", written by the job script
TOOL_STATUS = "tool_status.txt"
#: one line per cache drop, "<phase> <resident bytes> <bytes>", measured with fincore
CACHE_RESIDENCY = "cache_residency.txt"
#: largest share of the data still in the page cache before a read that counts as cold
MAX_RESIDENT_FRACTION = 0.01
#: the MPI families a provider can tell apart, by a library its binary links
_MPI_LIBRARIES = (
    ("openmpi", re.compile(r"\blib(open-pal|open-rte|mpi)\.so\.40\b")),
    ("mpich", re.compile(r"\blibmpich\.so")),
)
_MPI_NAMES = {"openmpi": "Open MPI", "mpich": "MPICH"}


def _mpi_of_ldd(out: str) -> tuple[str | None, str]:
    for family, pattern in _MPI_LIBRARIES:
        match = pattern.search(out)
        if match:
            return family, match.group(0)
    mpi = [ln.split()[0] for ln in out.splitlines() if "mpi" in ln.lower()]
    return None, f"ldd lists {', '.join(mpi) or 'no MPI library'}"


def mpi_of_binary(path: str) -> tuple[str | None, str]:
    """(MPI family, evidence) of an executable from ``ldd``; family None if unknown."""
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"ldd {path} failed: {exc}"
    return _mpi_of_ldd(out)


def mpi_of_module(
    partition: SystemPartition, environ: Environment, module: str
) -> tuple[str | None, str]:
    """(MPI family, evidence) of the ior a module provides in an environment, found by
    loading it in a shell as the job will (the partition's and environment's setup,
    then the module) and running ``ldd`` on its ior.  A module that does not load or
    gives no ior raises :class:`ToolUnavailableError` with the module system's words."""
    try:
        commands = list(partition.prepare_cmds) + rt.emit_loadenv_commands(
            partition.local_env, environ, Environment(f"ior-{module}", modules=[module])
        )
    except EnvironError as exc:
        raise ToolUnavailableError(
            f"IOR: module {module} cannot be loaded ({one_line(exc)[:400]})"
        ) from None
    # ldd fails on a static binary or a script: that is no MPI found, not a bad module
    script = "\n".join(commands + ["ior=$(command -v ior) || exit 7", 'ldd "$ior" || true'])
    try:
        result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolUnavailableError(f"IOR: loading module {module} failed: {exc}") from None
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no message"])[-1]
        why = "gives no ior on PATH" if result.returncode == 7 else f"failed to load: {last}"
        raise ToolUnavailableError(f"IOR: module {module} {why}")
    return _mpi_of_ldd(result.stdout)


class ToolUnavailableError(ReframeError):
    """The route to IOR/mdtest that the site config asks for gives no usable tool.

    A ReFrame soft error, so the failure reads as one line with its cause (a
    ValueError would make ReFrame append a source excerpt)."""


class SpackEnvironmentError(ToolUnavailableError):
    """The Spack environment file is malformed, or a file it includes is missing or
    cannot be carried along."""


#: Spack's own configuration variables ("Config file variables" in Spack's docs):
#: paths using them are resolved by Spack, not here; ``$env`` is the environment's
#: directory, so what follows it is a relative include
_SPACK_VARIABLES = (
    "spack",
    "user",
    "tempdir",
    "user_cache_path",
    "architecture",
    "arch",
    "platform",
    "operating_system",
    "os",
    "target",
    "target_family",
    "date",
    "spack_short_version",
    "spack_instance_id",
)
_SPACK_VARIABLE = re.compile(r"\$(\{)?(" + "|".join(_SPACK_VARIABLES) + r")(?(1)\}|\b)")
_ENV_DIR_PREFIX = re.compile(r"^\$(env\b|\{env\})/")


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error in one line: where and what."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return where + " ".join(str(problem).split())


def spack_includes(spack_yaml: str | os.PathLike[str]) -> list[Any]:
    """The ``include:`` entries of a Spack environment file, checked for shape: the
    top level a mapping with a ``spack:`` mapping, ``include`` a list."""
    try:
        with open(spack_yaml) as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise SpackEnvironmentError(
            f"Spack environment {spack_yaml}: cannot read it ({exc.strerror})"
        ) from None
    except yaml.YAMLError as exc:
        raise SpackEnvironmentError(
            f"Spack environment {spack_yaml}: not valid YAML ({_yaml_problem(exc)})"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("spack"), dict):
        found = (
            "an empty 'spack:'"
            if isinstance(data, dict) and "spack" in data and data["spack"] is None
            else f"a {type(data).__name__} at the top level"
            if not isinstance(data, dict)
            else "no 'spack:' mapping"
        )
        raise SpackEnvironmentError(
            f"Spack environment {spack_yaml}: expected a mapping "
            f"'spack:' holding specs (and include), found {found}"
        )
    includes = data["spack"].get("include") or []
    if not isinstance(includes, list):
        raise SpackEnvironmentError(
            f"Spack environment {spack_yaml}: 'include' must be a "
            f"list of paths, found {includes!r} (write it as "
            f"'include: [{includes}]')"
        )
    return includes


def stage_spack_environment(
    spack_yaml: str | os.PathLike[str], env_dir: str | os.PathLike[str]
) -> list[str]:
    """Copy a Spack environment into env_dir: spack.yaml and every file it includes by
    a relative path (such as the site's spack-externals.yaml), at the same relative
    place, so the staged environment concretizes as the original would.  Absolute
    includes, URLs, git includes and paths with Spack's own variables (``$spack``,
    ``$user``, ...) are left for Spack to resolve.  Returns the staged files,
    spack.yaml first.

    Spack resolves relative includes against the environment's directory and skips
    a missing optional one silently, so a copy of spack.yaml alone would quietly lose
    the site's externals and mirror; a missing required include is an error here.
    """
    source_dir = os.path.dirname(os.path.abspath(spack_yaml))
    includes = spack_includes(spack_yaml)
    os.makedirs(env_dir, exist_ok=True)
    shutil.copy(spack_yaml, os.path.join(env_dir, "spack.yaml"))
    staged = ["spack.yaml"]
    for entry in includes:
        if isinstance(entry, dict) and "git" in entry:
            continue  # fetched by Spack from the repository
        path = entry if isinstance(entry, str) else (entry or {}).get("path")
        optional = isinstance(entry, dict) and bool(entry.get("optional", False))
        if not isinstance(path, str) or not path:
            raise SpackEnvironmentError(
                f"Spack environment {spack_yaml}: include entry {entry!r} names no path"
            )
        path = _ENV_DIR_PREFIX.sub("", path)
        if "://" in path or _SPACK_VARIABLE.search(path):
            continue  # a URL or a path only Spack can resolve
        expanded = os.path.expanduser(os.path.expandvars(path))
        source = os.path.normpath(os.path.join(source_dir, expanded))
        if not os.path.exists(source):
            if optional:
                continue
            raise SpackEnvironmentError(
                f"{spack_yaml} includes {path}, which is not at {source}: put the site's "
                "file there (for spack-externals.yaml, the compilers, MPI and mirror; "
                "spack.yaml's comments show an example)"
            )
        if os.path.isabs(expanded):
            continue
        relative = os.path.normpath(expanded)
        if relative.startswith(".."):
            raise SpackEnvironmentError(
                f"{spack_yaml} includes {path}, outside the "
                "environment's directory: give it as an absolute path"
            )
        target = os.path.join(env_dir, relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.isdir(source):
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy(source, target)
        staged.append(relative)
    return staged


def environ_mpi(environ: Environment) -> str | None:
    """The MPI family a programming environment uses: extras['mpi'], else a feature."""
    declared = environ.extras.get("mpi")
    if declared:
        return str(declared)
    return next((f for f in environ.features if f in _MPI_NAMES), None)


class IORProvider(rfm.CompileOnlyRegressionTest, SuiteTest):
    """Makes ior and mdtest available: fails with the cause when the route the
    environment asks for does not work, skips with the reason when it asked for none."""

    descr = "provide IOR and mdtest (Spack build, module or PATH)"
    build_locally = True
    source = variable(str, value="path")
    #: the MPI family the tool is built with (openmpi, mpich), see the module docstring
    tool_mpi = variable(str, value="")
    #: commands a dependent check runs before the tool (module loads, spack load)
    load_cmds = variable(list, value=[])
    modules_needed = variable(list, value=[])
    #: the Spack environment built for extras {'ior': 'spack'}; its relative includes
    #: are staged with it (`scratchbench run --spack-env PATH`, which passes ReFrame's
    #: -S spack_env_file=PATH, points at a site's own one)
    spack_env_file = variable(str, value=str(paths.SPACK_ENV_FILE))
    #: the files of the staged Spack environment (spack.yaml and its includes)
    spack_files = variable(list, value=[])

    @run_after("setup")
    def choose_source(self) -> None:
        asked = self.current_environ.extras.get("ior")
        self.source = str(asked or "path")
        env_mpi = environ_mpi(self.current_environ)
        env = self.current_environ.name
        if self.source not in ("spack", "path") and not self.source.startswith("module:"):
            raise ToolUnavailableError(
                f"IOR: extras 'ior' of environment {env} is {asked!r}; expected 'spack', "
                "'module:NAME' or 'path'"
            )
        self.unavailable(
            env_mpi is None,
            f"IOR: environment {env} does not say which MPI it uses (set extras "
            "{'mpi': 'openmpi'} or a feature 'openmpi'/'mpich'), so no IOR build "
            "can be matched to it",
        )
        assert env_mpi is not None  # (unavailable() raised or skipped)
        # (ReFrame's build_system variable turns a build system's name into the object;
        # mypy, without ReFrame's types, sees the str)
        if self.source == "spack":
            self.unavailable(
                shutil.which("spack") is None,
                f"IOR: environment {env} asks for a Spack build (extras 'ior': "
                "'spack') but 'spack' is not on PATH: load Spack's setup-env.sh "
                "before `scratchbench run`",
            )
            self.tool_mpi = env_mpi
            self.build_system = "Spack"
            self.build_system.environment = SPACK_ENV  # type: ignore[attr-defined]
        elif self.source.startswith("module:"):
            name = self.source.split(":", 1)[1]
            self.tool_mpi = self.built_with(
                f"module {name}'s ior",
                mpi_of_module(self.current_partition, self.current_environ, name),
                env_mpi,
            )
            self.modules_needed = [name]
            self.build_system = "CustomBuild"
            self.build_system.commands = [  # type: ignore[attr-defined]
                "command -v ior && command -v mdtest"
            ]
            self.modules = self.modules_needed
        else:
            missing = [t for t in ("ior", "mdtest") if shutil.which(t) is None]
            self.unavailable(
                bool(missing),
                f"IOR/mdtest not available: {' and '.join(missing)} not on PATH"
                + (
                    f" (environment {env} asks for it with extras 'ior': 'path')"
                    if asked
                    else ", no module or Spack build configured for this environment "
                    "(set extras {'ior': 'spack'} or {'ior': 'module:NAME'} in "
                    "the site config; see spack.yaml)"
                ),
            )
            binary = shutil.which("ior")
            assert binary is not None  # (unavailable() raised or skipped)
            self.tool_mpi = self.built_with(binary, mpi_of_binary(binary), env_mpi)
            self.build_system = "CustomBuild"
            self.build_system.commands = [  # type: ignore[attr-defined]
                "command -v ior && command -v mdtest"
            ]

    def unavailable(self, condition: bool, reason: str) -> None:
        """The tool cannot be had this way: a failure with the reason when the
        environment asked for this route (extras 'ior'), else a skip with it."""
        if not condition:
            return
        if self.current_environ.extras.get("ior"):
            raise ToolUnavailableError(reason)
        self.skip_because(True, reason)

    def built_with(self, what: str, detected: tuple[str | None, str], env_mpi: str) -> str:
        """The MPI family of the tool, or unavailable: unknown, or not the environment's.

        ``extras['ior_mpi']`` states it for binaries ldd cannot read (static builds,
        wrapper scripts); it must not contradict what ldd finds.
        """
        family, evidence = detected
        declared = self.current_environ.extras.get("ior_mpi")
        env = self.current_environ.name
        if declared and family and declared != family:
            self.unavailable(
                True,
                f"IOR: {what} is built with {_MPI_NAMES[family]} "
                f"({evidence}), but extras 'ior_mpi' of environment {env} says "
                f"{declared}",
            )
        if declared and not family:
            family, evidence = str(declared), f"extras 'ior_mpi' of environment {env}"
        self.unavailable(
            family is None,
            f"IOR: cannot tell which MPI {what} is built with ({evidence}); state "
            "it with extras {'ior_mpi': 'openmpi'} or use a dynamically linked "
            "build",
        )
        assert family is not None  # (unavailable() raised or skipped)
        self.unavailable(
            family != env_mpi,
            f"IOR: {what} is built with {_MPI_NAMES.get(family, family)} "
            f"({evidence}), environment {env} uses "
            f"{_MPI_NAMES.get(env_mpi, env_mpi)}",
        )
        return family

    @run_before("compile")
    def copy_spack_environment(self) -> None:
        if self.source == "spack":
            env = os.path.join(self.stagedir, SPACK_ENV)
            self.spack_files = stage_spack_environment(self.spack_env_file, env)
            # kept with the run: what was asked for, with the site's includes, and
            # what Spack made of it
            self.keep_files = [
                os.path.join(SPACK_ENV, f) for f in self.spack_files + ["spack.lock"]
            ]
            self.load_cmds = [f'eval "$(spack -e {env} load --sh ior)"']

    @sanity_function
    def provided(self) -> Any:
        if self.source == "spack":
            lock = os.path.join(self.stagedir, SPACK_ENV, "spack.lock")
            return sn.assert_true(
                os.path.isfile(lock),
                msg="Spack wrote no spack.lock: the environment did not "
                "concretize; see rfm_build.err",
            )
        return sn.assert_found(
            r"/mdtest$", self.stdout, msg="ior/mdtest not found after loading the tool"
        )


class ToolCheck(ScratchCheck):
    """Runs of IOR or mdtest in a fresh directory of the scratch target, in one of
    IO500's two shapes, one launch per phase and repetition."""

    tool = fixture(IORProvider, scope="environment")
    valid_prog_environs = ["+mpi"]
    io500_shape = parameter(["easy", "hard"])
    headline_when = {"io500_shape": "easy"}
    #: where the tool came from and which MPI it is built with (see IORProvider)
    tool_source = variable(str, value="")
    tool_mpi = variable(str, value="")
    #: IO500's stonewall in seconds (-D with wear-out for IOR, -W for mdtest); 0: none
    stonewall_s = variable(float, value=0.0)
    #: how reads avoid the page cache: "fadvise", "direct", "shift" (another node's
    #: data), or two joined by '+'; recorded with the figures
    cache_method = variable(str, value="")
    #: per read phase, the share of its data that was in the page cache before it
    cache_resident = variable(dict, value={})
    #: the phases launched, in order: [(name, arguments, drop the cache before it)]
    phases = variable(list, value=[])
    #: name of the fresh working directory variable in the job script
    workdir_var = "SB_WORKDIR"

    @run_after("setup")
    def use_the_tool(self) -> None:
        self.modules = list(self.tool.modules_needed)
        self.tool_source = self.tool.source
        self.tool_mpi = self.tool.tool_mpi
        self.stonewall_s = float(self.params.get("stonewall_s", 0) or 0)

    @property
    def shape(self) -> str:
        return self.io500_shape

    @property
    def data_dir(self) -> str:
        return f'"${self.workdir_var}/data"'

    def choose_cache_method(self, allowed: Sequence[str]) -> None:
        """The workload's cache choice, plus 'shift' across nodes."""
        cache = str(self.params.get("cache", "fadvise"))
        if cache not in allowed:
            raise ValueError(
                f"workloads.yaml {self.workload_family}.{self.workload_tag}: "
                f"cache {cache!r}, expected one of {', '.join(allowed)}"
            )
        methods = ([cache] if cache else []) + (["shift"] if self.num_nodes_used > 1 else [])
        self.cache_method = "+".join(methods)

    @run_before("run")
    def write_job_steps(self) -> None:
        """The first phase is ReFrame's launch line; the others follow it, each run only
        if every earlier one exited 0.  Every exit status is recorded before the
        working directory is removed, and the job exits with the first non-zero one."""
        if not self.phases:
            raise ValueError(f"{type(self).__name__}: no phases to run")
        launch = " ".join(self.job.launcher.run_command(self.job).split())
        self.prerun_cmds = list(self.tool.load_cmds) + [
            f'{self.workdir_var}=$(mktemp -d "{self.scratch_path}/sbtool.XXXXXX") || exit 3',
            f"mkdir {self.data_dir} || exit 3",
            f"rm -f {TOOL_STATUS} {CACHE_RESIDENCY}",
            # srun and mpirun exit with the highest exit status of all ranks
            f'sb_status() {{ local rc=$?; echo "$1 $rc" >> {TOOL_STATUS}; '
            'if [ "$rc" -ne 0 ] && [ -z "$SB_FAILED" ]; then SB_FAILED=$rc; fi; }',
            'sb_ok() { [ -z "$SB_FAILED" ]; }',
            # Drop the written files from this node's page cache (fsync, then
            # POSIX_FADV_DONTNEED through dd) and measure what stays resident (whole
            # pages: a file's share is capped at its size).
            'sb_drop_cache() { sync -f "$2" 2>/dev/null || sync; '
            'find "$2" -type f -exec dd if={} iflag=nocache count=0 status=none \\; ; '
            'echo "$1 $(find "$2" -type f -exec fincore --bytes --raw --noheadings '
            "--output RES,SIZE {} + | awk '{r += ($1 < $2 ? $1 : $2); s += $2} "
            'END {printf "%.0f %.0f", r, s}\')"'
            f" >> {CACHE_RESIDENCY}; }}",
        ]
        first_name, first_args, _ = self.phases[0]
        self.executable_opts = list(first_args)
        steps = [f"sb_status {first_name}"]
        for name, args, drop_cache in self.phases[1:]:
            if drop_cache:
                steps.append(f"if sb_ok; then sb_drop_cache {name} {self.data_dir}; fi")
            steps.append(
                f"if sb_ok; then {launch} {self.executable} {' '.join(args)}; sb_status {name}; fi"
            )
        self.postrun_cmds = steps + [f'rm -rf -- "${self.workdir_var}"', 'exit "${SB_FAILED:-0}"']

    def tool_problems(self) -> list[str]:
        """Exit statuses of the phases: a missing or non-zero one makes the run invalid."""
        try:
            with open(os.path.join(self.stagedir, TOOL_STATUS)) as f:
                statuses = dict(line.split() for line in f if line.strip())
        except (OSError, ValueError):
            statuses = {}
        for name, _, _ in self.phases:
            status = statuses.get(name)
            if status is None:
                return [
                    f"{self.executable} phase {name} never finished: the job stopped "
                    "before it (killed, out of time, or the working directory could "
                    "not be made); see rfm_job.err"
                ]
            if status != "0":
                return [
                    f"{self.executable} exited with code {status} in phase {name} (the "
                    "launcher reports the highest exit code of all ranks); see "
                    "rfm_job.err"
                ]
        return []

    def cache_problems(self, read_phases: Iterable[str]) -> list[str]:
        """The fadvise method must leave (almost) nothing of the data in the page cache."""
        if "fadvise" not in self.cache_method.split("+"):
            return []
        try:
            with open(os.path.join(self.stagedir, CACHE_RESIDENCY)) as f:
                rows = {
                    p[0]: (float(p[1]), float(p[2]))
                    for p in (line.split() for line in f)
                    if len(p) == 3
                }
        except (OSError, ValueError):
            rows = {}
        problems, shares = [], {}
        for name in read_phases:
            resident, size = rows.get(name, (0.0, 0.0))
            if size <= 0:
                problems.append(
                    f"phase {name}: the page-cache residency of the data could not "
                    "be measured (no files, or no fincore from util-linux): a "
                    "cache-served read cannot be ruled out"
                )
                continue
            shares[name] = resident / size
            if resident > MAX_RESIDENT_FRACTION * size:
                problems.append(
                    f"phase {name} would read from the page cache: "
                    f"{100 * resident / size:.0f}% of the {size:.0f} bytes stayed "
                    "resident after the cache drop (a memory file system, or one "
                    "that ignores POSIX_FADV_DONTNEED): not a file-system figure"
                )
        self.cache_resident = shares
        return problems

    def parsed_phase(self, filename: str, parse: Callable[..., Any]) -> Any:
        return self.parsed_output(
            filename,
            lambda text: parse(text, source=filename),
            f"{self.executable} wrote no {filename}; see rfm_job.err",
        )

    def mean_over_reps(self, values: Sequence[float], what: str) -> float:
        if not values:
            raise sn.SanityError(f"no {what} figure")
        return sum(values) / len(values)


class IORCheckBase(ToolCheck):
    """IOR in IO500's easy or hard shape: per repetition a write (with IO500's stonewall
    and wear-out on nightly and acceptance), then a read of exactly what was written,
    each read from its JSON summary."""

    executable = "ior"
    io_api = "POSIX"
    title = "IOR in IO500's shapes"

    @run_after("setup")
    def set_ior_phases(self) -> None:
        """ior-easy: file per process, 2 MiB transfers; ior-hard: one shared file,
        47008-byte transfers."""
        p = self.params
        self.layout(p.get("nodes", 1), p.get("tasks_per_node", "cores"))
        if self.shape == "easy":
            self.transfer_size = 2 * 1024 * 1024
            shape = ["-F", "-t", "2m", "-b", str(p["block"])]
        else:
            self.transfer_size = 47008
            shape = ["-t", "47008", "-b", "47008", "-s", str(p["segments"])]
        self.choose_cache_method(("fadvise", "direct"))
        if "direct" in self.cache_method and self.transfer_size % 4096:
            raise ValueError(
                f"workloads.yaml ior.{self.workload_tag}: cache 'direct' needs "
                f"transfers aligned to 4096 bytes; ior-{self.shape}'s "
                f"{self.transfer_size} are not (use 'fadvise')"
            )
        target = ["-o", f'"${self.workdir_var}/data/ior_file_{self.shape}"']
        status = f'"${self.workdir_var}/stonewall.status"'
        common = ["-a", self.io_api, "-k", "-i", "1", "-O", "summaryFormat=JSON"]
        write_sw = read_sw = []
        if self.stonewall_s:
            write_sw = [
                "-D",
                f"{self.stonewall_s:g}",
                "-O",
                "stoneWallingWearOut=1",
                "-O",
                f"stoneWallingStatusFile={status}",
            ]
            read_sw = ["-O", f"stoneWallingStatusFile={status}"]
        read_cache = (["-C"] if "shift" in self.cache_method else []) + (
            ["--posix.odirect"] if "direct" in self.cache_method else []
        )
        self.phases = []
        for rep in range(1, int(p["reps"]) + 1):
            self.phases.append(
                (
                    f"write-{rep}",
                    common
                    + ["-w", "-e"]
                    + write_sw
                    + ["-O", f"summaryFile=ior-write-{rep}.json"]
                    + shape
                    + target,
                    False,
                )
            )
            self.phases.append(
                (
                    f"read-{rep}",
                    common
                    + ["-r"]
                    + read_sw
                    + read_cache
                    + ["-O", f"summaryFile=ior-read-{rep}.json"]
                    + shape
                    + target,
                    "fadvise" in self.cache_method,
                )
            )
        self.variant_words = (
            "easy: file per process, 2 MiB transfers"
            if self.shape == "easy"
            else "hard: one shared file, 47008-byte transfers"
        )
        self.workload_words = f"{self.ranks_in_words()}, {p['reps']} repetitions" + (
            f", {self.stonewall_s:g} s stonewall" if self.stonewall_s else ""
        )
        self.keep_files = [TOOL_STATUS, CACHE_RESIDENCY] + [
            f"ior-{op}-{rep}.json"
            for rep in range(1, int(p["reps"]) + 1)
            for op in ("write", "read")
        ]

    def reps(self) -> range:
        return range(1, len(self.phases) // 2 + 1)

    def ior_result(self, op: str, rep: int) -> dict[str, Any]:
        return self.parsed_phase(f"ior-{op}-{rep}.json", parse_ior_json)

    @sanity_function
    def valid_ior_run(self) -> Any:
        problems = self.tool_problems()
        if not problems:
            for rep in self.reps():
                write, read = self.ior_result("write", rep), self.ior_result("read", rep)
                written = write["operations"]["write"]["aggregate_MiB"]
                problems += [
                    f"write-{rep}: {p}"
                    for p in ior_problems(
                        write, expected_tasks=self.num_tasks, stonewall_s=self.stonewall_s
                    )
                ]
                problems += [
                    f"read-{rep}: {p}"
                    for p in ior_problems(
                        read, expected_tasks=self.num_tasks, stonewall_s=0, expected_MiB=written
                    )
                ]
                problems += self.read_cache_problems(read, rep)
            problems += self.cache_problems([f"read-{rep}" for rep in self.reps()])
        return sn.assert_false(problems, msg="; ".join(problems))

    @run_before("performance")
    def record_samples(self) -> None:
        """Per-repetition values, for the acceptance verdict (sanity passed)."""
        if self.is_dry_run():
            return
        self.samples = {f"{op}_bw": self.per_rep(op) for op in ("write", "read")}
        # IOR's totalTime: first open to last close of one iteration
        self.phase_seconds = {
            f"{op}_bw": min(
                r["totalTime"]
                for rep in self.reps()
                for r in self.ior_result(op, rep)["results"]
                if r["access"] == op
            )
            for op in ("write", "read")
        }

    def read_cache_problems(self, read: dict[str, Any], rep: int) -> list[str]:
        """O_DIRECT and the node shift must show in what IOR reports it did."""
        problems = []
        if "direct" in self.cache_method and "--posix.odirect" not in read["command_line"]:
            problems.append(f"read-{rep}: IOR's command line lacks --posix.odirect")
        if "shift" in self.cache_method and not read["operations"]["read"]["reorder_tasks"]:
            problems.append(f"read-{rep}: IOR did not shift reads to another node (-C)")
        return problems

    def per_rep(self, op: str) -> list[float]:
        return [self.ior_result(op, rep)["operations"][op]["bw_mean"] for rep in self.reps()]

    @figure("MiB/s", "Write bandwidth (IOR, mean over repetitions)", headline="IOR write")
    def write_bw(self) -> float:
        """Mean over repetitions of IOR's write bandwidth (first open to last close)."""
        return self.mean_over_reps(self.per_rep("write"), "write bandwidth")

    @figure("MiB/s", "Read bandwidth (IOR, mean over repetitions)", headline="IOR read")
    def read_bw(self) -> float:
        return self.mean_over_reps(self.per_rep("read"), "read bandwidth")


# mdtest's phase flags, the operation each measures, and the figure it yields
_MDTEST_PHASES = {
    "create": ("-C", "file_creation", "create_rate"),
    "stat": ("-T", "file_stat", "stat_rate"),
    "read": ("-E", "file_read", "read_rate"),
    "remove": ("-r", "file_removal", "remove_rate"),
}


class MdtestCheckBase(ToolCheck):
    """mdtest in IO500's easy or hard shape: per repetition create (with IO500's
    stonewall on nightly and acceptance), stat, read (hard only) and remove, each its
    own launch reading the same files, each read from its summary table and its
    per-rank CSV."""

    executable = "mdtest"
    io_api = "POSIX"
    title = "mdtest in IO500's shapes"
    files_per_rank = variable(int, value=0)

    @run_after("init")
    def only_hard_reads(self) -> None:
        # mdtest-easy's files are empty: IO500 reads only mdtest-hard's.
        if self.shape == "easy":
            self.perf_variables.pop("read_rate", None)

    def phase_names(self) -> list[str]:
        return ["create", "stat"] + (["read"] if self.shape == "hard" else []) + ["remove"]

    @run_after("setup")
    def set_mdtest_phases(self) -> None:
        """mdtest-easy: a directory per rank, empty files; mdtest-hard: one shared
        directory, 3901-byte files."""
        p = self.params
        self.layout(p.get("nodes", 1), p.get("tasks_per_node", "cores"))
        self.files_per_rank = max(1, int(p["files_per_node"]) // self.tasks_per_node_used)
        self.choose_cache_method(("fadvise",))
        if "read" not in self.phase_names():
            self.cache_method = "none: no read phase"
        # -N: operate on the files of the rank this many ranks away: the next node's
        # (IO500 uses 1, which on one node is the neighbour rank)
        stride = self.tasks_per_node_used if self.num_nodes_used > 1 else 1
        base = ["-F", "-N", str(stride), "-n", str(self.files_per_rank), "-d", self.data_dir]
        base += ["-u", "-L"] if self.shape == "easy" else ["-t"]
        status = ["-x", f'"${self.workdir_var}/stonewall.status"'] if self.stonewall_s else []
        extra = {
            "create": (["-W", f"{self.stonewall_s:g}"] if self.stonewall_s else [])
            + (["-w", "3901"] if self.shape == "hard" else []),
            "read": ["-e", "3901"],
        }
        self.phases = []
        for rep in range(1, int(p["reps"]) + 1):
            for phase in self.phase_names():
                name = f"{phase}-{rep}"
                # each phase's table to a file of its own (mdtest has no summary file)
                args = (
                    [_MDTEST_PHASES[phase][0]]
                    + extra.get(phase, [])
                    + base
                    + status
                    + [f"--saveRankPerformanceDetails=mdtest-{name}.csv", ">", f"mdtest-{name}.out"]
                )
                self.phases.append((name, args, phase == "read"))
        self.variant_words = (
            "easy: a directory per rank, empty files"
            if self.shape == "easy"
            else "hard: one shared directory, 3901-byte files"
        )
        self.workload_words = f"{self.files_per_rank} files per rank, {self.ranks_in_words()}" + (
            f", {self.stonewall_s:g} s stonewall" if self.stonewall_s else ""
        )
        self.keep_files = [TOOL_STATUS, CACHE_RESIDENCY] + [
            f"mdtest-{name}.{ext}" for name, _, _ in self.phases for ext in ("out", "csv")
        ]

    def reps(self) -> range:
        return range(1, len(self.phases) // len(self.phase_names()) + 1)

    def mdtest_result(self, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
        return (
            self.parsed_phase(f"mdtest-{name}.out", parse_mdtest),
            self.parsed_phase(f"mdtest-{name}.csv", parse_mdtest_rank_details),
        )

    @sanity_function
    def valid_mdtest_run(self) -> Any:
        problems = self.tool_problems()
        if not problems:
            for rep in self.reps():
                created = None
                for phase in self.phase_names():
                    result, details = self.mdtest_result(f"{phase}-{rep}")
                    if phase == "create":
                        # With a stonewall every rank creates as many files as the
                        # fastest did before it (wear-out); without, what -n said.
                        hit = result["stonewall"]
                        created = hit["max"] if hit else self.files_per_rank
                    problems += [
                        f"{phase}-{rep}: {p}"
                        for p in mdtest_problems(
                            result,
                            details,
                            expected_tasks=self.num_tasks,
                            phases=[_MDTEST_PHASES[phase][1]],
                            stonewall_s=self.stonewall_s if phase == "create" else None,
                            expected_items=created,
                        )
                    ]
            if "read" in self.phase_names():
                problems += self.cache_problems([f"read-{rep}" for rep in self.reps()])
        return sn.assert_false(problems, msg="; ".join(problems))

    @run_before("performance")
    def record_samples(self) -> None:
        """Per-repetition values, for the acceptance verdict (sanity passed)."""
        if self.is_dry_run():
            return
        self.samples = {_MDTEST_PHASES[ph][2]: self.per_rep(ph) for ph in self.phase_names()}
        # the phase's time to after its closing barrier, from the rank details
        self.phase_seconds = {}
        for ph in self.phase_names():
            times = [
                self.mdtest_result(f"{ph}-{rep}")[1]["phases"]
                .get(_MDTEST_PHASES[ph][1], {})
                .get("time")
                for rep in self.reps()
            ]
            if times and None not in times:
                self.phase_seconds[_MDTEST_PHASES[ph][2]] = min(times)

    def per_rep(self, phase: str) -> list[float]:
        op = _MDTEST_PHASES[phase][1]
        return [self.mdtest_result(f"{phase}-{rep}")[0]["rate"][op]["mean"] for rep in self.reps()]

    @figure("ops/s", "File creations per second (mdtest)", headline="mdtest create")
    def create_rate(self) -> float:
        return self.mean_over_reps(self.per_rep("create"), "file creation rate")

    @figure("ops/s", "Stats per second (mdtest)")
    def stat_rate(self) -> float:
        return self.mean_over_reps(self.per_rep("stat"), "file stat rate")

    @figure("ops/s", "File reads per second (mdtest-hard: open, read 3901 bytes, close)")
    def read_rate(self) -> float:
        """mdtest-hard's read rate: open, read 3901 bytes, close, after a cache drop."""
        return self.mean_over_reps(self.per_rep("read"), "file read rate")

    @figure("ops/s", "File removals per second (mdtest)", headline="mdtest remove")
    def remove_rate(self) -> float:
        return self.mean_over_reps(self.per_rep("remove"), "file removal rate")
