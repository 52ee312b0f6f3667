"""IOzone (seed 004) through scratchbench-kernel's iozone mode.

Seed 004 ran ``iozone -a -g 12G`` by hand on each storage tier and published 3-D graphs
of throughput over file size and record size, where throughput "nose-dives" at the
cache thresholds.  This check runs the same access patterns over the same kind of
matrix on every scratch target, from one process (IOzone's automatic mode) or several
at once (its throughput mode, where the random mix runs), and declares one figure per
pattern x file size x record size, drawn as one surface per pattern with the node's
CPU cache and memory marked on the file-size axis.

The matrix is the one the kernel ran (its JSON report lists every point), so a file
size given as ``memory`` (past the node's memory) is known only after the job: the
figures are declared then, before ReFrame evaluates them.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reframe.core.builtins import run_after, run_before, variable

from reframe_checks.lib.kernel import KernelCheck
from reframe_checks.lib.targets import target_info
from scratchbench.figures import FigureDeclaration
from scratchbench.units import MIB, parse_size, size_token, size_words

#: the kernel's pattern names (as its phases start) and in words, in IOzone's order
PATTERNS = {
    "write": "Write",
    "rewrite": "Re-write",
    "read": "Read",
    "reread": "Re-read",
    "random_read": "Random read",
    "random_write": "Random write",
    "backward_read": "Backward read",
    "record_rewrite": "Record re-write",
    "stride_read": "Stride read",
    "random_mix": "Random mix",
}
#: target kinds whose files live in memory: no file there can be larger than memory
IN_MEMORY_KINDS = ("tmpfs",)
#: the headline figures: (figure name, pattern, sequential: records near 1 MiB, else
#: the smallest records of the largest file)
HEADLINES = (
    ("write_bw_largest", "write", True),
    ("read_bw_largest", "read", True),
    ("random_read_bw_largest", "random_read", False),
    ("random_write_bw_largest", "random_write", False),
)


def phase_name(pattern: str, file_size: int, record_size: int) -> str:
    """The kernel's phase of one point: 'random_read_f65536_r4096'."""
    return f"{pattern}_f{file_size}_r{record_size}"


def figure_name(pattern: str, file_size: int, record_size: int) -> str:
    """The figure of one point: 'random_read_f64k_r4k'."""
    return f"{pattern}_f{size_token(file_size)}_r{size_token(record_size)}"


def headline_points(points: Sequence[tuple[int, int]]) -> dict[bool, tuple[int, int]]:
    """{pattern kind: (file, record)} of the headline figures: the largest file, with
    records of 1 MiB (or the nearest below) for sequential patterns and the smallest
    records measured on that file for random ones."""
    largest = max(f for f, _ in points)
    records = sorted(r for f, r in points if f == largest)
    sequential = max((r for r in records if r <= MIB), default=records[0])
    return {True: (largest, sequential), False: (largest, records[0])}


def cache_marks(config: Mapping[str, Any], processes: int) -> list[dict[str, Any]]:
    """The cache thresholds of the file-size axis, from what the kernel measured: the
    largest CPU cache, and the node's memory shared by the files of its ranks."""
    marks = []
    cache = int(config.get("cpu_cache_bytes") or 0)
    if cache:
        marks.append({"axis": "x", "value": cache, "label": f"CPU cache, {size_words(cache)}"})
    memory = int(config.get("node_memory_bytes") or 0)
    if memory:
        per_file = memory // max(1, processes)
        label = (
            f"node memory, {size_words(memory)}"
            if processes == 1
            else f"node memory / {processes} files, {size_words(per_file)}"
        )
        marks.append({"axis": "x", "value": per_file, "label": label})
    return marks


def matrix_problems(report: dict[str, Any]) -> list[str]:
    """Why a complete iozone run is still invalid: a point of the matrix or a pattern
    that did not run, a rank that did not cover its whole file (a rank stopped by the
    stonewall still finishes its pass, untimed), or several ranks without the stonewall."""
    config = report["config"]
    nranks = report["mpi"]["nranks"]
    expected = {
        phase_name(p.replace("-", "_"), pt["file_size"], pt["record_size"]): pt["file_size"]
        for p in config["patterns"]
        for pt in config["matrix"]["points"]
    }
    problems = []
    if nranks > 1 and config.get("stonewall") != "first-finisher":
        problems.append(
            f"{nranks} ranks ran without IOzone's stonewall (stonewall: {config.get('stonewall')})"
        )
    for rep in report.get("repetitions", []):
        phases = rep.get("phases", {})
        missing = sorted(set(expected) - set(phases))
        if missing:
            problems.append(
                f"repetition {rep['rep']}: {len(missing)} point(s) did not run, e.g. {missing[0]}"
            )
        for name, file_size in expected.items():
            moved = phases.get(name, {}).get("bytes_all")
            if name in phases and moved != nranks * file_size:
                problems.append(
                    f"repetition {rep['rep']} {name}: {moved} bytes moved, "
                    f"expected {nranks} x {file_size}"
                )
    return problems[:3]


class IOzoneCheckBase(KernelCheck):
    """IOzone's patterns over its file-size x record-size matrix, one figure per point."""

    kernel_mode = "iozone"
    workload_family = "iozone"
    title = "IOzone patterns over file and record sizes (seed 004)"
    io_api = "posix"
    phase_clock = "time"
    #: ranks on one node: 1 is IOzone's automatic mode, more its throughput mode
    processes_wanted = variable(int, value=1)
    file_sizes = variable(str, value="")

    @run_after("setup")
    def set_matrix(self) -> None:
        p = self.params
        self.layout(p.get("nodes", 1), self.processes_wanted)
        kind = target_info(self.current_partition, self.scratch_target)["kind"]
        self.file_sizes = str(p["file_sizes"])
        smallest, _, largest = self.file_sizes.partition(":")
        capped = largest == "memory" and kind in IN_MEMORY_KINDS
        if capped:
            # a file past memory cannot live in memory: stop where the target allows
            largest = str(p["in_memory_max_file_size"])
            self.file_sizes = f"{smallest}:{largest}"
        self.kernel_args = [
            "--file-sizes",
            self.file_sizes,
            "--record-sizes",
            str(p["record_sizes"]),
            "--fsync",
            str(p.get("fsync", "outside")),
            "--reps",
            str(p["reps"]),
            *self.cache_arguments(),
        ]
        if p.get("all_records"):
            self.kernel_args.append("--all-records")
        files = (
            f"files {size_words(parse_size(smallest))} to past the node's memory"
            if largest == "memory"
            else f"files {size_words(parse_size(smallest))} to "
            f"{size_words(parse_size(largest or smallest))}"
        )
        if capped:
            files += f" (not past memory: a {kind} keeps its files in memory)"
        record_lo, _, record_hi = str(p["record_sizes"]).partition(":")
        records = (
            f"records {size_words(parse_size(record_lo))} to "
            f"{size_words(parse_size(record_hi or record_lo))}"
        )
        self.workload_words = (
            f"{files} x {records}, {self.ranks_in_words()}, "
            f"{p['reps']} repetition{'s' * (int(p['reps']) != 1)}"
        )
        self.variant_words = (
            "one process (IOzone's automatic mode)"
            if self.num_tasks == 1
            else f"{self.num_tasks} processes at once (IOzone's throughput mode, stonewall at "
            "the first finisher)"
        )

    @run_before("performance")
    def declare_matrix(self) -> None:
        """One figure per pattern and point of the matrix the kernel ran, each on its
        pattern's surface, and the headline figures in words."""
        report = self.kernel_report_if_any()
        if report is None:
            return
        config = report["config"]
        points = [(pt["file_size"], pt["record_size"]) for pt in config["matrix"]["points"]]
        patterns = [name.replace("-", "_") for name in config["patterns"]]
        marks = cache_marks(config, self.tasks_per_node_used)
        for pattern in patterns:
            for file_size, record in points:
                self.add_figure(
                    figure_name(pattern, file_size, record),
                    FigureDeclaration(
                        unit="MiB/s",
                        better="higher",
                        label=f"{PATTERNS[pattern]}, {size_words(file_size)} file, "
                        f"{size_words(record)} records",
                        chart={
                            "title": f"{PATTERNS[pattern]} throughput",
                            "kind": "surface",
                            "x": ["file size", file_size, size_words(file_size)],
                            "y": ["record size", record, size_words(record)],
                            "line": "by file size and record size",
                            "marks": marks,
                        },
                    ),
                    self._point(pattern, file_size, record),
                )
        if not points:
            return
        chosen = headline_points(points)
        memory = int(config.get("node_memory_bytes") or 0)
        for name, pattern, sequential in HEADLINES:
            if pattern not in patterns:
                continue
            file_size, record = chosen[sequential]
            past = memory and file_size * self.tasks_per_node_used > memory
            # A file that fits in memory is read and written in the page cache: memory
            # speed, not the file system's (IOzone's 1 MiB headline read 10 GiB/s).
            where = (
                f"a file larger than the node's memory ({size_words(file_size)})"
                if past
                else f"a {size_words(file_size)} file, in the page cache (memory speed)"
            )
            self.add_figure(
                name,
                FigureDeclaration(
                    unit="MiB/s",
                    better="higher",
                    label=f"{PATTERNS[pattern]} throughput, {size_words(file_size)} file, "
                    f"{size_words(record)} records",
                    headline=f"IOzone {PATTERNS[pattern].lower()} of {where}, "
                    f"{size_words(record)} records",
                ),
                self._point(pattern, file_size, record),
            )

    def _point(self, pattern: str, file_size: int, record: int) -> Callable[[], float]:
        phase = phase_name(pattern, file_size, record)
        return lambda: self.summary_value(phase, "throughput_Bps", "trimmed_mean", scale=1 / MIB)

    def mode_problems(self, report: dict[str, Any]) -> list[str]:
        return matrix_problems(report)

    def figure_sources(self, report: dict[str, Any]) -> dict[str, tuple[str, str, float]]:
        out = {}
        for pattern in (p.replace("-", "_") for p in report["config"]["patterns"]):
            for pt in report["config"]["matrix"]["points"]:
                f, r = pt["file_size"], pt["record_size"]
                out[figure_name(pattern, f, r)] = (
                    phase_name(pattern, f, r),
                    "throughput_Bps",
                    1 / MIB,
                )
        points = [
            (pt["file_size"], pt["record_size"]) for pt in report["config"]["matrix"]["points"]
        ]
        if points:
            chosen = headline_points(points)
            for name, pattern, sequential in HEADLINES:
                source = figure_name(pattern, *chosen[sequential])
                if source in out:
                    out[name] = out[source]
        return out
