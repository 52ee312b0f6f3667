"""The base of every scratchbench check: one scratch target, exclusive nodes.

A check derived from :class:`ScratchCheck` runs once per scratch target the site
declares (the ``scratch_target`` parameter), only on partitions that reach that
target (``valid_systems = ['+scratch_<name>']``), with exclusive nodes, and records
the target's name and kind, the node count and tasks per node with its figures
(they appear in the perflog and the run report).  References come from
``site_configs/references/<system>.yaml`` through ReFrame's ``$ref``, indexed by
partition and target, so each site keeps its own expectations as data.

Everything a report needs travels in ReFrame's run report as test variables:
``figures`` (what each performance variable means, from :func:`figure`),
``parameter_names`` (which fields of the case are its parameters), ``title``,
``variant_words`` and ``workload_words`` (the case in words), ``samples`` (per
repetition values), ``workload_tag`` and ``skip_reason``.
"""

import os
import shlex
import subprocess
import time
from collections.abc import Callable
from typing import Any

import reframe as rfm
import reframe.core.runtime as rt
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, performance_function, run_after, run_before, variable
from reframe.core.schedulers.slurm import SlurmJobScheduler
from reframe.core.systems import SystemPartition

from reframe_checks.lib.parsers import ParseError
from reframe_checks.lib.targets import declared_targets, target_info, workload
from scratchbench import fsconfig
from scratchbench.figures import FigureDeclaration
from scratchbench.sites import TAGS
from scratchbench.units import duration_words

_DECLARATION = "_scratchbench_figure"
# What the file system is (scratchbench/fsconfig.py), collected inside a job.
FSFACTS_SCRIPT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "fsfacts.sh"
)
FSFACTS_OUTPUT = "fsfacts.txt"
# Where a check keeps its parsed output files (ScratchCheck.parsed_output): a cache, never
# part of ReFrame's dump of the case (ScratchCheck.__rfm_json_encode__).
_PARSED_OUTPUTS = "_parsed_outputs"
# (partition, target, environment) whose facts a case of this run already collects: the
# first case to reach its job does it, once per run (ReFrame runs a whole run in one
# process), so a run pays the collector's fraction of a second a few times, not per case.
_FACTS_CLAIMED: set[tuple[str, ...]] = set()
# What a scheduler's final job state means to a person reading a failed check.
SCHEDULER_CAUSES = {
    "NODE_FAIL": "a node of the job failed",
    "BOOT_FAIL": "a node of the job failed to boot",
    "CANCELLED": "the job was cancelled (scancel, or an administrator)",
    "TIMEOUT": "the job hit its time limit",
    "DEADLINE": "the job reached its deadline",
    "OUT_OF_MEMORY": "the job ran out of memory",
    "PREEMPTED": "the job was preempted",
}


def figure(
    unit: str, label: str, better: str = "higher", headline: str = "", role: str = ""
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@performance_function(unit)`` that also declares what the figure means.

    ``label`` says what the number is; ``better`` is ``"higher"`` or ``"lower"``;
    ``headline`` names the workload in words when this figure leads the pages; it
    applies to the variants the concrete check picks with ``headline_when``; ``role``
    (one of ``scratchbench.figures.ROLES``) says what it measures to programs that
    compute with it.
    """
    declared = FigureDeclaration(
        unit=unit, label=label, better=better, headline=headline, role=role
    )

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        perf = performance_function(unit)(function)
        setattr(perf, _DECLARATION, declared)
        return perf

    return wrap


def on_slurm(partition: SystemPartition) -> bool:
    """Whether the partition's jobs go to Slurm (under ReFrame's own backend or a site's
    subclass of it, such as the embedded cluster's)."""
    return isinstance(partition.scheduler, SlurmJobScheduler)


class SuiteTest(rfm.RegressionTestPlugin):
    """What every test of the suite has, fixtures included.

    ``workload_tag``: quick, nightly or acceptance, the entry of workloads.yaml this run
    uses; one run of the suite sets it for every test (`scratchbench run` passes
    ``-S workload_tag=TAG``), so it is a variable, not a parameter that would triple
    every variant.  ``skip_reason``: why a case was skipped, kept in the run report
    (ReFrame keeps no skip reason there).
    """

    workload_tag = variable(str, value="quick")
    skip_reason = variable(str, value="")

    @classmethod
    def loggable_attrs(cls) -> list[tuple[str, str | None]]:
        """ReFrame's loggable attributes but the deprecated ones (``variables``, the old
        name of ``env_vars``, logged as that).  ReFrame reads every loggable attribute at
        each of its log calls, and reading a deprecated one walks the whole Python stack
        to place a warning (``inspect.stack``, ~25 ms here) even while warnings are
        suppressed: at dozens of log calls per check and per poll, that was most of
        ReFrame's one loop, which then noticed a finished job seconds late
        (ci/benchmarks/site_scale.py)."""
        # (ReFrame is untyped: mypy takes its metaclass, which defines loggable_attrs,
        # for plain `type`)
        return [
            (name, alt)
            for name, alt in type(cls).loggable_attrs(cls)  # type: ignore[attr-defined]
            if not (name in cls.var_space and cls.var_space[name].is_deprecated())
        ]

    def skip_because(self, condition: bool, reason: str) -> None:
        if condition:
            self.skip_reason = reason
            self.skip(reason)


class ScratchCheck(rfm.RunOnlyRegressionTest, SuiteTest):
    scratch_target = parameter(declared_targets())
    #: the family in workloads.yaml (set by subclasses)
    workload_family = variable(str)
    #: the tags under which this check runs (a subclass may narrow them)
    run_in_tags = variable(list, value=list(TAGS))

    scratch_kind = variable(str, value="")
    #: what the target is, in the site config's words (kept with the figures)
    scratch_description = variable(str, value="")
    scratch_path = variable(str, value="")
    scratch_per_job = variable(bool, value=False)
    num_nodes_used = variable(int, value=1)
    tasks_per_node_used = variable(int, value=1)
    #: bytes per transfer and the I/O interface, where they apply (0 and "" otherwise)
    transfer_size = variable(int, value=0)
    io_api = variable(str, value="")
    #: the values of this variant's workload entry, with layout resolved
    params = variable(dict, value={})

    #: what each performance variable means: {name: FigureDeclaration.as_dict()}
    figures = variable(dict, value={})
    #: the names of this check's parameters (their values are fields of the run report)
    parameter_names = variable(list, value=[])
    check_class = variable(str, value="")
    #: the check in words ("Bandwidth, IOTest (seed 002)"), this variant in words
    #: ("file per process, POSIX"), and its workload in words (sizes, ranks, nodes)
    title = variable(str, value="")
    variant_words = variable(str, value="")
    workload_words = variable(str, value="")
    #: the parameter this check sweeps (its figures plot against it), if any
    scaling_parameter = variable(str, value="")
    #: whether this variant's headline figures lead the pages (see headline_when)
    leads_pages = variable(bool, value=False)
    #: per-repetition values of each performance variable, when the tool reports them;
    #: kept in the run report, so acceptance verdicts see each run's spread
    samples = variable(dict, value={})
    #: how long each performance variable's timed phase lasted, the shortest over the
    #: repetitions, in seconds (where the tool reports it): the store marks a figure
    #: whose phase was too short to time (scratchbench.figures.SHORTEST_TRUSTED_PHASE_S)
    phase_seconds = variable(dict, value={})
    #: what the scratch target was, as this case's job saw it (scratchbench.fsconfig),
    #: on the one case per target and environment of a run that collected it; {} else
    fs_facts = variable(dict, value={})
    collects_fs_facts = variable(bool, value=False)

    exclusive_access = True
    maintainers = ["scratchbench"]
    #: which variants lead the pages with their headline figures: parameter values
    #: they must have ({} = every variant, None = none)
    headline_when: dict[str, Any] | None = None

    @run_after("init")
    def select_target_and_workload(self) -> None:
        if self.workload_tag not in TAGS:
            raise ValueError(
                f"workload_tag {self.workload_tag!r}: expected one of {', '.join(TAGS)}"
            )
        self.valid_systems = [f"+scratch_{self.scratch_target}"]
        self.tags = {*self.run_in_tags, f"fs:{self.scratch_target}"}
        self.params = workload(self.workload_family, self.workload_tag)
        self.time_limit = self.params["time_limit"]
        self.check_class = type(self).__name__
        self.parameter_names = sorted(type(self).param_space.params)
        self.descr = (
            f"{type(self).__name__} on scratch target {self.scratch_target}, "
            f"{self.workload_tag} workload"
        )

    @run_after("init")
    def declare_figures(self) -> None:
        """Collect the @figure declarations of this class; every performance variable
        must have one, so no figure reaches the history without its meaning."""
        values = {name: str(getattr(self, name)) for name in self.parameter_names}
        when = self.headline_when
        leads = when is not None and all(values.get(k) == str(v) for k, v in when.items())
        self.leads_pages = leads
        declared = {}
        for klass in type(self).__mro__:
            for name, member in vars(klass).items():
                if name in declared or not hasattr(member, _DECLARATION):
                    continue
                declaration = getattr(member, _DECLARATION)
                declared[name] = dict(
                    declaration.as_dict(), headline=declaration.headline if leads else ""
                )
        self.figures = declared

    def add_figure(
        self, name: str, declaration: FigureDeclaration, evaluate: Callable[[], float]
    ) -> None:
        """A performance variable made at setup (one per point of a sweep, say), with its
        declaration; ``evaluate()`` returns the value once the job has run.  Its headline
        counts only on the variants that lead the pages (``headline_when``)."""
        self.perf_variables[name] = sn.make_performance_function(evaluate, declaration.unit)
        meaning = declaration.as_dict()
        if not self.leads_pages:
            meaning["headline"] = ""
        self.figures = dict(self.figures, **{name: meaning})

    @run_before("run")
    def every_figure_is_declared(self) -> None:
        missing = sorted(set(self.perf_variables) - set(self.figures))
        if missing:
            raise ValueError(
                f"{type(self).__name__}: performance variable(s) "
                f"{', '.join(missing)} have no @figure declaration"
            )

    @run_after("setup")
    def resolve_target(self) -> None:
        info = target_info(self.current_partition, self.scratch_target)
        self.scratch_kind = info["kind"]
        self.scratch_description = info.get("description") or ""
        self.scratch_path = info["path"]
        self.scratch_per_job = bool(info.get("per_job"))
        refs = os.path.join(
            rt.runtime().get_option("general/0/reference_prefix") or "",
            f"{self.current_system.name}.yaml",
        )
        if os.path.isfile(refs):
            self.reference = {"$ref": os.path.basename(refs)}

    def layout(self, nodes: int | str, tasks_per_node: int | str) -> None:
        """Nodes and tasks per node; 'cores' means the partition's cores per node."""
        extras = self.current_partition.extras
        cores = int(extras.get("cpus_per_node", self.current_partition.processor.num_cpus or 1))
        if tasks_per_node == "cores":
            tasks_per_node = cores
        self.num_nodes_used = int(nodes)
        self.tasks_per_node_used = int(tasks_per_node)
        self.num_tasks_per_node = self.tasks_per_node_used
        self.num_tasks = self.num_nodes_used * self.tasks_per_node_used
        available = int(self.current_partition.extras.get("nodes", self.num_nodes_used))
        self.skip_because(
            self.num_nodes_used > available,
            f"needs {self.num_nodes_used} nodes, partition "
            f"{self.current_partition.fullname} has {available}",
        )
        # More ranks than a node advertises would pend forever under Slurm.
        if extras.get("overcommit") and on_slurm(self.current_partition):
            self.job.options += ["--overcommit"]
            if self.tasks_per_node_used > cores:
                # Slurm refuses --ntasks-per-node above a node's CPUs even with
                # --overcommit ("Requested node configuration is not available"); it
                # takes the nodes and the tasks, which srun spreads evenly over them.
                self.num_tasks_per_node = None
                self.job.options += [f"--nodes={self.num_nodes_used}"]

    @run_after("setup")
    def no_silent_rerun(self) -> None:
        """A benchmark job Slurm requeues after a node failure would rerun later under
        other conditions and leave a job behind the run: fail it instead, with the
        scheduler's cause."""
        if on_slurm(self.current_partition):
            self.job.options += ["--no-requeue"]
            # Traceable to its run, so that no run leaves a job of its own behind.
            run_id = os.environ.get("SCRATCHBENCH_RUN_ID")
            if run_id:
                self.job.options += [f"--comment=scratchbench-run:{run_id}"]

    def scheduler_cause(self) -> str | None:
        """Why the job did not end normally, in words from the scheduler's own state
        (sacct for Slurm), or None when it completed.  Names the nodes that are down
        when a node failed."""
        job = self.job
        state = (getattr(job, "state", None) or "").split(",")[0].split()[0:1]
        state = state[0] if state else ""
        cause = SCHEDULER_CAUSES.get(state)
        if cause is None:
            return None
        where = f"job {job.jobid} ended {state}: {cause}"
        if state in ("NODE_FAIL", "BOOT_FAIL"):
            down = self._nodes_down(job.jobid)
            if down:
                where += f" ({'; '.join(down)})"
        if state == "TIMEOUT" and self.time_limit:
            where += f" of {duration_words(float(self.time_limit))}"
        return f"{where}, during {type(self).__name__} on {self.scratch_target}"

    @staticmethod
    def _nodes_down(jobid: str | int) -> list[str]:
        """['node n2 went down: Not responding'] for the job's nodes that went down while
        it ran: Slurm's node events (sacctmgr), since a node an administrator set down
        may be back in service by the time the check reads it."""

        def query(argv: list[str]) -> str:
            return subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout

        try:
            job = query(["sacct", "-n", "-X", "-P", "-j", str(jobid), "-o", "NodeList,Start"])
            nodes, _, start = (job.strip().splitlines() or [""])[0].partition("|")
            if not nodes or nodes == "None assigned":
                return []
            # slurmctld sends node events to slurmdbd asynchronously: on a loaded
            # controller the event may arrive a few seconds after the job's end.
            for attempt in range(6):
                events = query(
                    [
                        "sacctmgr",
                        "-n",
                        "-P",
                        "show",
                        "event",
                        f"nodes={nodes}",
                        f"start={start or 'now-1day'}",
                        "format=NodeName,State,Reason",
                    ]
                )
                if events.strip():
                    break
                time.sleep(2)
            if not events.strip():
                events = query(["sinfo", "-h", "-N", "-n", nodes, "-o", "%N|%T|%E"])
        except (OSError, subprocess.SubprocessError):
            return []
        down = []
        for line in events.splitlines():
            node, state, reason = (line.split("|") + ["", ""])[:3]
            state = state.strip().lower().rstrip("*")
            if state.startswith(("down", "drain", "fail")):
                down.append(
                    f"node {node.strip()} went {state}"
                    + (f": {reason.strip()}" if reason.strip() not in ("", "none") else "")
                )
        return sorted(set(down))

    @run_before("run")
    def collect_file_system_facts(self) -> None:
        """The first case of a run on each target and environment also records what the
        file system is: the collector runs in its job, before the benchmark, where the
        job sees the target (per-job directory, the node's own mounts)."""
        where = (self.current_partition.fullname, self.scratch_target)
        key = (*where, self.current_environ.name)
        if key in _FACTS_CLAIMED:
            return
        # the file system once per run; each other environment only its MPI's version
        versions_only = where in _FACTS_CLAIMED
        _FACTS_CLAIMED.update((key, where))
        self.collects_fs_facts = True
        site_command = (
            target_info(self.current_partition, self.scratch_target).get("facts_command") or ""
        )
        # the path stays a template ("$MYSANSCRATCH"), expanded by the job's shell
        path = self.scratch_path.replace('"', '\\"')
        mpi = shlex.quote(str(self.current_environ.extras.get("mpi") or ""))
        # (ReFrame's own variables, List[str]: mypy cannot see them, ReFrame being untyped)
        self.prerun_cmds: list[str] = [
            f'FSFACTS_MPI={mpi} bash {shlex.quote(FSFACTS_SCRIPT)} "{path}" '
            f"{shlex.quote(site_command)}{' versions' * versions_only} "
            f"> {FSFACTS_OUTPUT} 2>&1 || true",
            *self.prerun_cmds,
        ]
        self.keep_files: list[str] = [*self.keep_files, FSFACTS_OUTPUT]  # the evidence, in output/

    @run_before("sanity")
    def read_file_system_facts(self) -> None:
        if not self.collects_fs_facts:
            return
        output = os.path.join(self.stagedir, FSFACTS_OUTPUT)
        try:
            with open(output, errors="replace") as f:
                text = f.read()
        except OSError as exc:
            self.fs_facts = {
                "problems": [
                    f"the collector wrote nothing: {output}: {exc.strerror} (did the job start?)"
                ]
            }
            return
        try:
            self.fs_facts = fsconfig.parse_collected(text)
        except fsconfig.FactsError as exc:
            self.fs_facts = {"problems": [f"{output}: {exc}"]}

    @run_before("sanity")
    def blame_the_file_system(self) -> None:
        """A job that failed while its file system is unwell fails with the file system's
        own words first ("storage server 2 of sanscratch is down"), from the command the
        target declares (``health_command``); a healthy file system changes nothing."""
        command = target_info(self.current_partition, self.scratch_target).get("health_command")
        exitcode = getattr(self.job, "exitcode", None)
        # (a job Slurm ended itself, e.g. after the node's prolog failed on the file
        # system, may carry exit code 0)
        ended = self.scheduler_cause() if command else None
        if not command or (exitcode in (0, None) and not ended):
            return
        try:
            said = subprocess.run(
                command, shell=True, capture_output=True, text=True, timeout=60
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return
        problems = [line.strip() for line in said.splitlines() if line.strip()]
        if problems:
            how = ended or (
                f"job {self.job.jobid} exited {exitcode}, during "
                f"{type(self).__name__} on {self.scratch_target}"
            )
            raise sn.SanityError(f"{'; '.join(problems)} ({how})")

    def missing_output(self, what: str) -> str:
        """The one-line reason for an output file that is not there: the scheduler's
        cause when the job did not end normally, else what the caller says, with the
        job's stderr file when it exists."""
        cause = self.scheduler_cause()
        if cause:
            return cause
        stderr = os.path.join(self.stagedir, "rfm_job.err")
        if os.path.isfile(stderr) and os.path.getsize(stderr):
            with open(stderr, errors="replace") as f:
                lines = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
            # The program's own error line says more than the launcher's "task 0 exited".
            own = [
                ln
                for ln in lines
                if "error" in ln.lower() and not ln.startswith(("srun:", "mpirun", "--", "["))
            ]
            shown = (own or lines)[-1:] if own else lines[-1:]
            return (
                f"{what}; the job's error: {shown[0][:200]} ({stderr})"
                if shown
                else f"{what}; see {stderr}"
            )
        return f"{what}; the job wrote nothing on stderr"

    def __rfm_json_encode__(self) -> Any:
        """ReFrame's dump of the finished case (its stage directory's .rfm_testcase.json)
        without the parsed-output cache: an IOzone report parsed is a megabyte of
        numbers, which ReFrame's indented JSON dump (Python's pure-Python encoder) took
        seconds to write at every case's end, in its one loop, before it noticed the
        next job's end (ci/benchmarks/site_scale.py).  The file it reads back to
        restore a case (--restore-session) needs no cache: the check parses its output
        files again when asked."""
        cache = self.__dict__.pop(_PARSED_OUTPUTS, None)
        try:
            return super().__rfm_json_encode__()
        finally:
            if cache is not None:
                self.__dict__[_PARSED_OUTPUTS] = cache

    def ranks_in_words(self) -> str:
        nodes = self.num_nodes_used
        return (
            f"{self.num_tasks} rank{'s' * (self.num_tasks != 1)} on {nodes} "
            f"node{'s' * (nodes != 1)}"
        )

    def parsed_output(self, filename: str, parse: Callable[[str], Any], missing: str) -> Any:
        """parse(text of stagedir/filename), once per check: sanity and every figure
        share it.  A missing file or a ParseError is a SanityError every time."""
        cache = self.__dict__.setdefault(_PARSED_OUTPUTS, {})
        if filename not in cache:
            # A job the scheduler ended (node failure, scancel, time limit) may have left
            # a partial file: its cause is the one a person needs.
            cause = self.scheduler_cause()
            if cause:
                cache[filename] = ParseError(cause)
                raise sn.SanityError(cause)
            try:
                with open(os.path.join(self.stagedir, filename)) as f:
                    cache[filename] = parse(f.read())
            except FileNotFoundError:
                cache[filename] = ParseError(f"{filename} missing: {self.missing_output(missing)}")
            except ParseError as exc:
                cache[filename] = exc
        if isinstance(cache[filename], ParseError):
            raise sn.SanityError(str(cache[filename]))
        return cache[filename]
