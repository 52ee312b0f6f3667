"""scratchbench-kernel in ReFrame: its build fixture and the base of its checks.

The build is a fixture scoped per environment, so one build serves every kernel check
of a partition and programming environment.  A kernel check writes the kernel's JSON
report into its stage directory; sanity reads that report (never the text), and a
run that was invalid (incomplete, wrong rank count, bad data, phase shorter than its
stonewall) fails sanity, while a low figure only fails performance.
"""

import os
from collections.abc import Callable
from typing import Any

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, run_after, run_before, sanity_function, variable

from reframe_checks.lib.base import ScratchCheck, SuiteTest, figure
from reframe_checks.lib.parsers import kernel_problems, parse_kernel_json
from reframe_checks.lib.targets import target_info
from scratchbench import paths
from scratchbench.figures import FigureDeclaration
from scratchbench.units import MIB, parse_size, size_token, size_words

KERNEL_REPORT = "kernel.json"


class KernelBuild(rfm.CompileOnlyRegressionTest, SuiteTest):
    """Builds scratchbench-kernel from src/ with the environment's MPI compiler."""

    descr = "build scratchbench-kernel (C11 + MPI) with make"
    sourcesdir = str(paths.KERNEL_SRC_DIR)
    build_system = "Make"
    build_locally = True
    #: a build directory of its own, so a developer's src/build is never reused
    build_dir = variable(str, value="build-reframe")

    @run_before("compile")
    def configure_make(self) -> None:
        # (ReFrame's build_system variable turns "Make" into a build system object; mypy,
        # without ReFrame's types, sees the class's str)
        self.build_system.flags_from_environ = False  # type: ignore[attr-defined]
        # every core of the node that builds (ReFrame's default is one: 4 s, not 2, here)
        self.build_system.max_concurrency = os.cpu_count()  # type: ignore[attr-defined]
        self.build_system.options = [  # type: ignore[attr-defined]
            f"MPICC={self.current_environ.cc}",
            f"BUILD={self.build_dir}",
        ]

    @property
    def binary(self) -> str:
        return os.path.join(self.stagedir, self.build_dir, "scratchbench-kernel")

    @sanity_function
    def binary_built(self) -> Any:
        return sn.assert_true(os.path.isfile(self.binary), msg=f"make produced no {self.binary}")


class KernelCheck(ScratchCheck):
    """Runs one kernel mode on one scratch target; subclasses choose the arguments."""

    kernel = fixture(KernelBuild, scope="environment")
    valid_prog_environs = ["+mpi"]
    kernel_mode = variable(str)
    kernel_args = variable(list, value=[])
    #: the directories the kernel writes in: the target's path, or its disks
    kernel_dirs = variable(list, value=[])
    #: the timer of the mode's phases that spans a whole phase on a rank (src/SCHEMA.md)
    phase_clock = "total"

    @run_before("run")
    def set_kernel_command(self) -> None:
        self.executable = self.kernel.binary
        # The target path may be a template such as $MYSANSCRATCH: the job's shell
        # expands it, so it is quoted for the shell, not by Python.
        dirs = [
            arg for d in (self.kernel_dirs or [self.scratch_path]) for arg in ("--dir", f'"{d}"')
        ]
        self.executable_opts = [
            self.kernel_mode,
            *dirs,
            "--output",
            KERNEL_REPORT,
            *self.kernel_args,
        ]
        self.keep_files = [KERNEL_REPORT]

    def kernel_report(self) -> dict[str, Any]:
        return self.parsed_output(
            KERNEL_REPORT,
            lambda text: parse_kernel_json(text, source=KERNEL_REPORT),
            "the kernel died before writing its report",
        )

    def kernel_report_if_any(self) -> dict[str, Any] | None:
        """The kernel's report, or None where sanity will say why there is none.  Parsed
        once for the whole case (an IOzone report is a megabyte: a third of a second
        a parse under load)."""
        try:
            return self.kernel_report()
        except sn.SanityError:
            return None

    @run_before("sanity")
    def record_what_ran(self) -> None:
        """The transfer size as the kernel used it, the per-repetition samples and the
        length of each figure's phases, from its report (when there is one: sanity says
        why when there is not)."""
        report = self.kernel_report_if_any()
        if report is None:
            return
        self.transfer_size = int(report["config"].get("transfer_bytes") or 0)
        if not kernel_problems(
            report, expected_ranks=self.num_tasks, expected_nodes=self.num_nodes_used
        ):
            sources = self.figure_sources(report)
            self.samples = {
                name: self.per_rep(report, phase, key, scale)
                for name, (phase, key, scale) in sources.items()
            }
            self.phase_seconds = {
                name: min(durations)
                for name, (phase, _, _) in sources.items()
                if (durations := self.phase_durations(report, phase))
            }

    @sanity_function
    def validate_kernel_run(self) -> Any:
        report = self.kernel_report()
        problems = kernel_problems(
            report, expected_ranks=self.num_tasks, expected_nodes=self.num_nodes_used
        )
        if not problems:
            problems = self.mode_problems(report)
        return sn.assert_false(problems, msg="; ".join(problems))

    def mode_problems(self, report: dict[str, Any]) -> list[str]:
        """Reasons a complete run of this mode is still invalid; subclasses add theirs."""
        return []

    def cache_arguments(self) -> list[str]:
        """Cache defeat between writes and reads, as the workload entry says."""
        cache = self.params.get("cache", "fadvise")
        if cache == "fadvise":
            return ["--fadvise"]
        if cache == "direct":
            return ["--direct"]
        return []

    def figure_sources(self, report: dict[str, Any]) -> dict[str, tuple[str, str, float]]:
        """{performance variable: (phase, the figure's key in that phase, scale)}: where
        each figure's per-repetition values are in the report; subclasses map theirs."""
        return {}

    @staticmethod
    def per_rep(report: dict[str, Any], phase: str, key: str, scale: float = 1.0) -> list[float]:
        return [
            rep["phases"][phase][key] * scale
            for rep in report.get("repetitions", [])
            if phase in rep.get("phases", {}) and rep["phases"][phase].get(key) is not None
        ]

    def phase_durations(self, report: dict[str, Any], phase: str) -> list[float]:
        """How long PHASE lasted in each repetition: its clock on the slowest rank."""
        durations = []
        for rep in report.get("repetitions", []):
            clock = rep.get("phases", {}).get(phase, {}).get("time_s", {}).get(self.phase_clock)
            if clock and clock.get("max") is not None:
                durations.append(clock["max"])
        return durations

    def summary_value(self, *keys: str, scale: float = 1.0) -> float:
        """A number from the report's summary, e.g. summary_value('write',
        'bandwidth_min_Bps', 'trimmed_mean')."""
        value = self.kernel_report()["summary"]
        for key in keys:
            value = value[key]
        if value is None:
            raise sn.SanityError(f"kernel report has no value for {'/'.join(keys)}")
        return value * scale


class IOTestCheckBase(KernelCheck):
    """seed 002's IOTest through the kernel: parameters pick layout and API.

    Nodes and tasks per node come from the workload entry unless a subclass sets
    ``nodes_wanted`` / ``tasks_per_node_wanted`` (the sweeps do).
    """

    kernel_mode = "iotest"
    workload_family = "iotest"
    title = "Bandwidth (IOTest, seed 002)"
    layout_kind = variable(str, value="fpp")
    io_api = "posix"
    collective = variable(bool, value=False)
    nodes_wanted = variable(int, value=0)
    tasks_per_node_wanted = variable(int, value=0)

    @run_after("setup")
    def set_layout_and_args(self) -> None:
        p = self.params
        self.layout(
            self.nodes_wanted or p.get("nodes", 1),
            self.tasks_per_node_wanted or p.get("tasks_per_node", "cores"),
        )
        transfer = int(p["nr"]) * 8  # NR 64-bit values: the kernel reports the size it used
        per_rank = transfer * int(p["nc"]) * int(p.get("niter", 1))
        self.workload_words = (
            f"{size_words(transfer)} transfers, {size_words(per_rank)} per rank, "
            f"{self.ranks_in_words()}, {p['reps']} repetitions"
        )
        self.kernel_args = [
            "--nr",
            str(p["nr"]),
            "--nc",
            str(p["nc"]),
            "--niter",
            str(p.get("niter", 1)),
            "--reps",
            str(p["reps"]),
            "--iread",
            "2",
            "--layout",
            self.layout_kind,
            "--api",
            self.io_api,
        ]
        if self.collective:
            self.kernel_args.append("--collective")
        # Cache defeat: a read must not be served from the page cache of the writer.
        cache = p.get("cache", "fadvise")
        if cache == "fadvise":
            self.kernel_args.append("--fadvise")
        elif cache == "direct" and self.io_api == "posix":
            self.kernel_args.append("--direct")
        if self.num_nodes_used > 1:
            # Read the next node's data, as IOR -C does, so reads miss the local cache.
            self.kernel_args += ["--shift", "auto"]

    def figure_sources(self, report: dict[str, Any]) -> dict[str, tuple[str, str, float]]:
        write = ("write", "bandwidth_min_Bps", 1 / MIB)
        return {
            "write_bw": write,
            "write_bw_worst": write,
            "read_bw": ("read", "bandwidth_min_Bps", 1 / MIB),
            "open_close_share": ("write", "open_close_fraction_max", 100.0),
        }

    @figure("MiB/s", "Write bandwidth at the slowest rank", headline="Sequential write")
    def write_bw(self) -> float:
        """Aggregate write bandwidth at the slowest rank (IOTest's minimum rate), trimmed
        mean over repetitions."""
        return self.summary_value("write", "bandwidth_min_Bps", "trimmed_mean", scale=1 / MIB)

    @figure("MiB/s", "Read bandwidth at the slowest rank", headline="Sequential read")
    def read_bw(self) -> float:
        return self.summary_value("read", "bandwidth_min_Bps", "trimmed_mean", scale=1 / MIB)

    @figure("MiB/s", "Write bandwidth in the worst repetition")
    def write_bw_worst(self) -> float:
        """The worst repetition: seed 000 says min and max matter as much as the mean."""
        return self.summary_value("write", "bandwidth_min_Bps", "min", scale=1 / MIB)

    @figure("%", "Largest share of a rank's write time spent opening and closing", better="lower")
    def open_close_share(self) -> float:
        """Largest share of a rank's write time spent in open + close (seed 002: 25%)."""
        return self.summary_value("write", "open_close_fraction_max", "max", scale=100.0)


class MetadataCheckBase(KernelCheck):
    """Open/close at scale and deletion cost through the kernel's metadata mode."""

    kernel_mode = "metadata"
    io_api = "posix"
    workload_family = "metadata"
    title = "Open/close at scale and deletion cost (seed 002)"
    phase_clock = "time"
    dir_per_rank = variable(bool, value=False)
    removers = variable(int, value=1)
    files_per_rank = variable(int, value=0)

    @run_after("setup")
    def set_layout_and_args(self) -> None:
        p = self.params
        self.layout(p["nodes"], p["tasks_per_node"])
        self.files_per_rank = max(1, int(p["files_per_node"]) // self.tasks_per_node_used)
        self.workload_words = (
            f"{self.files_per_rank} files per rank, "
            f"{self.ranks_in_words()}, {p['reps']} repetitions"
        )
        self.kernel_args = [
            "--files",
            str(self.files_per_rank),
            "--reps",
            str(p["reps"]),
            "--removers",
            str(self.removers),
        ]
        if self.dir_per_rank:
            self.kernel_args.append("--dir-per-rank")

    def figure_sources(self, report: dict[str, Any]) -> dict[str, tuple[str, str, float]]:
        remove = ("remove", "rate_ops", 1.0)
        return {
            "create_rate": ("create", "rate_ops", 1.0),
            "open_close_rate": ("open", "rate_ops", 1.0),
            "stat_rate": ("stat", "rate_ops", 1.0),
            "delete_rate": remove,
            "delete_rate_worst": remove,
        }

    @figure(
        "ops/s",
        "File creations per second (all ranks)",
        headline="Create empty files",
        role="creations_per_s",
    )
    def create_rate(self) -> float:
        return self.summary_value("create", "rate_ops", "trimmed_mean")

    @figure(
        "ops/s",
        "Opens and closes of existing files per second (all ranks)",
        headline="Open and close existing files",
        role="opens_per_s",
    )
    def open_close_rate(self) -> float:
        return self.summary_value("open", "rate_ops", "trimmed_mean")

    @figure("ops/s", "Stats per second (all ranks)", role="stats_per_s")
    def stat_rate(self) -> float:
        return self.summary_value("stat", "rate_ops", "trimmed_mean")

    @figure(
        "deletions/s",
        "Deletions per second (all ranks)",
        headline="Delete files",
        role="deletions_per_s",
    )
    def delete_rate(self) -> float:
        """Deletions per second with this many parallel removers per rank."""
        return self.summary_value("remove", "rate_ops", "trimmed_mean")

    @figure("deletions/s", "Deletions per second in the worst repetition")
    def delete_rate_worst(self) -> float:
        return self.summary_value("remove", "rate_ops", "min")


def size_list(text: str | int) -> list[int]:
    return [parse_size(part) for part in str(text).split(",") if part.strip()]


class DiskperfCheckBase(KernelCheck):
    """Seed 000's diskperf: queued asynchronous writes to every disk of a node at once, a
    barrier, then reads; one job sweeps block sizes x queue depths.  One figure per
    point and direction, drawn as bandwidth against queue depth, a line per block size."""

    kernel_mode = "diskperf"
    workload_family = "diskperf"
    title = "Asynchronous I/O over a node's disks (diskperf, seed 000)"
    io_api = "io_uring"
    block_sizes = variable(list, value=[])
    queue_depths = variable(list, value=[])

    @run_after("setup")
    def set_sweep(self) -> None:
        p = self.params
        self.layout(p.get("nodes", 1), p.get("tasks_per_node", 1))
        self.kernel_dirs = list(target_info(self.current_partition, self.scratch_target)["disks"])
        self.block_sizes = size_list(p["block_sizes"])
        self.queue_depths = [int(q) for q in str(p["queue_depths"]).split(",")]
        self.transfer_size = max(self.block_sizes)
        self.kernel_args = [
            "--block-sizes",
            ",".join(str(b) for b in self.block_sizes),
            "--queue-depths",
            ",".join(str(q) for q in self.queue_depths),
            "--file-size",
            str(p["file_size"]),
            "--reps",
            str(p["reps"]),
            "--engine",
            p.get("engine", "io_uring"),
            *self.cache_arguments(),
        ]
        size = (
            "as large as the node's memory"
            if p["file_size"] == "memory"
            else f"{size_words(parse_size(p['file_size']))} per file"
        )
        self.workload_words = (
            f"{len(self.kernel_dirs)} director"
            f"{'ies' if len(self.kernel_dirs) > 1 else 'y'}, {size}, "
            f"{self.ranks_in_words()}, {p['reps']} repetitions"
        )
        deepest, largest = max(self.queue_depths), max(self.block_sizes)
        for block in self.block_sizes:
            for depth in self.queue_depths:
                for op in ("write", "read"):
                    headline = (
                        f"Asynchronous {op}s, {size_words(block)} blocks, {depth} in flight"
                        if (block, depth) == (largest, deepest)
                        else ""
                    )
                    self.add_figure(
                        f"{op}_bw_{size_token(block)}_qd{depth}",
                        FigureDeclaration(
                            unit="MiB/s",
                            better="higher",
                            headline=headline,
                            label=f"{op.capitalize()} bandwidth, {size_words(block)} blocks, "
                            f"{depth} in flight per rank",
                            chart={
                                "title": f"{op.capitalize()} bandwidth against queue depth",
                                "kind": "lines",
                                "x": ["requests in flight per rank", depth],
                                "line": f"{size_words(block)} blocks",
                            },
                        ),
                        self._point(op, block, depth),
                    )

    def _point(self, op: str, block: int, depth: int) -> Callable[[], float]:
        phase = f"{op}_bs{block}_qd{depth}"
        return lambda: self.summary_value(phase, "bandwidth_Bps", "trimmed_mean", scale=1 / MIB)

    def mode_problems(self, report: dict[str, Any]) -> list[str]:
        """The queue must fill: a point whose depth was never reached measured less."""
        problems = []
        self.io_api = report["config"].get("engine", self.io_api)
        for rep in report.get("repetitions", []):
            for name, phase in rep.get("phases", {}).items():
                wanted, reached = phase.get("queue_depth"), phase.get("queue_depth_reached")
                if wanted and reached is not None and reached < wanted:
                    problems.append(
                        f"repetition {rep['rep']} {name}: only {reached} of "
                        f"{wanted} requests were in flight at once"
                    )
        return problems[:3]

    def figure_sources(self, report: dict[str, Any]) -> dict[str, tuple[str, str, float]]:
        return {
            f"{op}_bw_{size_token(b)}_qd{q}": (f"{op}_bs{b}_qd{q}", "bandwidth_Bps", 1 / MIB)
            for b in self.block_sizes
            for q in self.queue_depths
            for op in ("write", "read")
        }


PLACEMENTS = ("local", "one-to-many", "many-to-many")


class JovianCheckBase(KernelCheck):
    """Seed 001's Jovian-2 modes: where the readers sit relative to the writers (each on
    its own node; one client and every other node serving; every node both), request
    size = stripe size x number of disks."""

    kernel_mode = "jovian"
    workload_family = "jovian"
    title = "Readers placed against writers (Jovian-2, seed 001)"
    io_api = "io_uring"
    placements = variable(list, value=[])

    @run_after("setup")
    def set_placements(self) -> None:
        p = self.params
        self.layout(p.get("nodes", 2), p.get("tasks_per_node", 1))
        info = target_info(self.current_partition, self.scratch_target)
        self.kernel_dirs = list(info["disks"])
        remote = info.get("shared") and self.num_nodes_used > 1
        self.placements = list(PLACEMENTS if remote else PLACEMENTS[:1])
        stripe = parse_size(p["stripe_size"])
        self.transfer_size = stripe * len(self.kernel_dirs)
        self.kernel_args = [
            "--stripe-size",
            str(stripe),
            "--data-per-client",
            str(p["data_per_client"]),
            "--inflight",
            str(p.get("inflight", 1)),
            "--placement",
            ",".join(self.placements),
            "--reps",
            str(p["reps"]),
            "--engine",
            p.get("engine", "io_uring"),
            *self.cache_arguments(),
        ]
        why = (
            ""
            if remote
            else (
                ": the target is node-local, so only local reads apply"
                if not info.get("shared")
                else ": one node only"
            )
        )
        self.variant_words = ", ".join(self.placements) + why
        self.workload_words = (
            f"{size_words(self.transfer_size)} requests ({size_words(stripe)} x "
            f"{len(self.kernel_dirs)} director"
            f"{'ies' if len(self.kernel_dirs) > 1 else 'y'}), "
            f"{size_words(parse_size(p['data_per_client']))} per client, "
            f"{self.ranks_in_words()}, {p['reps']} repetitions"
        )
        for placement in self.placements:
            key = placement.replace("-", "_")
            for op in ("write", "read"):
                self.add_figure(
                    f"{op}_bw_{key}",
                    FigureDeclaration(
                        unit="MiB/s",
                        better="higher",
                        headline=f"Reads, {placement} placement"
                        if op == "read" and placement == self.placements[-1]
                        else "",
                        label=f"{op.capitalize()} bandwidth, {placement} placement",
                        chart={
                            "title": "Bandwidth by placement of readers",
                            "kind": "lines",
                            "x": ["placement", placement],
                            "line": op,
                        },
                    ),
                    self._placement(op, key),
                )

    def _placement(self, op: str, key: str) -> Callable[[], float]:
        return lambda: self.summary_value(
            f"{op}_{key}", "bandwidth_Bps", "trimmed_mean", scale=1 / MIB
        )

    def mode_problems(self, report: dict[str, Any]) -> list[str]:
        self.io_api = report["config"].get("engine", self.io_api)
        return []

    def figure_sources(self, report: dict[str, Any]) -> dict[str, tuple[str, str, float]]:
        return {
            f"{op}_bw_{p.replace('-', '_')}": (
                f"{op}_{p.replace('-', '_')}",
                "bandwidth_Bps",
                1 / MIB,
            )
            for p in self.placements
            for op in ("write", "read")
        }
