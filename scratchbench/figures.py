"""What a figure means, declared once by the check that produces it.

A check declares each performance variable next to the function that computes it
(``reframe_checks.lib.base.figure``): its label in words, its unit, whether higher or
lower is better, and, for the few figures the pages lead with, a headline naming the
workload in words.  The declaration travels in ReFrame's run report (a test variable),
the history store keeps it with each figure, and the pages and verdicts read it from
there, so renaming a check or adding a mode never silently empties a page.

This module is the one format both sides agree on.
"""

from dataclasses import dataclass, fields
from typing import Any

from scratchbench.units import duration_words

BETTER = ("higher", "lower")
CHART_KINDS = ("lines", "surface")
#: What a figure measures, for programs that compute with figures (the workload advisor
#: turns a job's operation counts into time with them): a check that measures one of
#: these says so with ``role``, and readers find the figure by its role, never by the
#: check's or the metric's name.  Each role has one meaning and a unit family.
ROLES = {
    "creations_per_s": "files created per second, all ranks together",
    "opens_per_s": "opens and closes of existing files per second, all ranks together",
    "stats_per_s": "stats of existing files per second, all ranks together",
    "deletions_per_s": "files deleted per second, all ranks together",
    # a copy's time = files / files_per_s + its first bytes (up to stage_first_bytes)
    # / first_bytes_per_s + the rest / bytes_per_s: the costs apart
    "stage_in_bytes_per_s": "bytes copied into the scratch target per second past the "
    "first stage_first_bytes of a copy, the per-file cost taken "
    "out (of the whole copy where no first-bytes rate is stored)",
    "stage_out_bytes_per_s": "bytes copied out of the scratch target per second past the "
    "first stage_first_bytes of a copy, the per-file cost taken "
    "out (of the whole copy where no first-bytes rate is stored)",
    "stage_in_first_bytes_per_s": "bytes copied into the scratch target per second by a "
    "copy of stage_first_bytes (the page cache absorbs it), "
    "the per-file cost taken out",
    "stage_out_first_bytes_per_s": "bytes copied out of the scratch target per second by "
    "a copy of stage_first_bytes, the per-file cost taken out",
    "stage_first_bytes": "the size of the copy the first-bytes rates were measured on",
    "stage_largest_bytes": "the size of the largest copy the staging rates were measured "
    "on: a larger copy is predicted past what was measured",
    "stage_in_files_per_s": "files copied into the scratch target per second, their "
    "bytes' time taken out",
    "stage_out_files_per_s": "files copied out of the scratch target per second, their "
    "bytes' time taken out",
    "read_requests_per_s": "read requests per second of the smallest requests measured, "
    "all ranks of one node together: what a request costs "
    "whatever its size",
    "write_requests_per_s": "write requests per second of the smallest requests "
    "measured, all ranks of one node together",
    "read_request_fixed_share": "share of a read request's time at the smallest size "
    "measured (the read_requests_per_s figure's) that does not grow with its bytes: a "
    "smaller request costs that share plus its bytes at the same cost per byte",
    "write_request_fixed_share": "share of a write request's time at the smallest size "
    "measured (the write_requests_per_s figure's) that does not grow with its bytes",
    "read_request_unit_share": "time of a read request of the kernel's smallest size "
    "(512 B) as a share of one of the smallest size measured: a smaller request costs "
    "what the line through the two gives",
    "write_request_unit_share": "time of a write request of the kernel's smallest size "
    "(512 B) as a share of one of the smallest size measured",
    "reopen_cache_dropped": "share of a file's cached pages that a new open of the file "
    "dropped (GlusterFS's FUSE client with fopen-keep-cache off drops them all)",
    "first_pass_read_Bps": "bytes read per second by one process's first pass over a "
    "freshly opened file whose cached pages the open dropped: what a job's first read of "
    "each file it opens costs there",
    "model_error_median": "median relative error of a prediction model on workloads it "
    "was not built from",
    "model_error_median_low": "lower end of the interval that holds a prediction model's "
    "own median error (on workloads it was not built from) with at least 90% confidence",
    "model_error_median_high": "upper end of the interval that holds a prediction model's "
    "own median error (on workloads it was not built from) with at least 90% confidence",
    "model_error_max": "largest relative error of a prediction model on workloads it was "
    "not built from",
    "model_error_far": "median relative error of a prediction model on workloads it was "
    "not built from, lying up to a given distance past the range it was measured over",
    "knee": "where a search found throughput fall from one level to another (the page "
    "cache's to the device's): it moves with the search, not a speed to rank",
    "focal": "throughput at a workload a search chose on each file system: file systems "
    "whose searches chose different workloads are not compared on it",
}

#: Roles of figures that describe a model, a search or the measurement itself rather
#: than the file system (a model's error, the size a staging rate was measured up to;
#: on charts, a knee, a focal point, a marker): shown, never ranked nor recommended on.
DESCRIPTIVE_ROLES = frozenset(
    {
        "model_error_median",
        "model_error_median_low",
        "model_error_median_high",
        "model_error_max",
        "model_error_far",
        "stage_first_bytes",
        "stage_largest_bytes",
        "reopen_cache_dropped",
        "read_request_fixed_share",
        "write_request_fixed_share",
        "read_request_unit_share",
        "write_request_unit_share",
        "knee",
        "focal",
        "marker",
    }
)

#: A figure whose timed phase lasted less than this (the shortest over its repetitions)
#: is "too short to trust": stored so marked, shown, never ranked nor judged.  Such a
#: phase times the caches in front of the file system (it never meets writeback or a
#: journal commit, which a job working for seconds does), and one stall in it is the
#: whole figure: quick mdtest phases of ~40 ms differed up to 12x between two
#: repetitions (docs/benchmarks.md, "Phases long enough to time").
SHORTEST_TRUSTED_PHASE_S = 0.5


def too_short(phase_seconds: float | None) -> bool:
    """Whether a phase of this length (None: not reported) is too short to trust."""
    return phase_seconds is not None and phase_seconds < SHORTEST_TRUSTED_PHASE_S


def too_short_words(phase_seconds: float | None) -> str:
    """Why a figure is not ranked nor judged, in words."""
    return (
        f"too short to trust: its timed phase lasted {duration_words(phase_seconds)}, "
        f"under the {SHORTEST_TRUSTED_PHASE_S:g} s a figure needs"
    )


@dataclass(frozen=True)
class FigureDeclaration:
    """One performance variable of one check variant."""

    unit: str
    label: str  # what the number is, in words: "Write bandwidth, slowest rank"
    better: str  # "higher" or "lower"
    headline: str = ""  # the workload in words when this is a headline figure, else ""
    #: where this figure sits on a chart drawn from several figures of one case, e.g.
    #: {"title": "Read bandwidth against queue depth", "kind": "lines",
    #:  "x": ["queue depth", 16], "line": "4 KiB blocks"}  or, for a surface,
    #: {"title": "...", "kind": "surface", "x": ["file size", 65536],
    #:  "y": ["record size", 4096], "line": "read"}; None when the figure stands alone.
    #: An axis may carry the value in words as a third item, shown as its tick label
    #: (["file size", 65536, "64 KiB"]); "marks" (optional) are thresholds to draw on the
    #: chart: [{"axis": "x", "value": 25769803776, "label": "node memory, 24 GiB"}]
    chart: dict[str, Any] | None = None
    #: what the figure measures, one of ROLES, for programs that compute with it; ""
    #: when nothing computes with it
    role: str = ""

    def __post_init__(self):
        if self.better not in BETTER:
            raise ValueError(
                f"figure '{self.label}': better={self.better!r}, expected 'higher' or 'lower'"
            )
        if not self.unit or not self.label:
            raise ValueError(f"figure declaration {self!r}: unit and label are required")
        if self.role and self.role not in ROLES:
            raise ValueError(
                f"figure '{self.label}': role {self.role!r}, expected one of {', '.join(ROLES)}"
            )
        if self.chart is not None:
            chart = self.chart
            if (
                not isinstance(chart, dict)
                or chart.get("kind") not in CHART_KINDS
                or not chart.get("title")
                or not _axis(chart.get("x"))
                or (chart["kind"] == "surface" and not _axis(chart.get("y")))
                or not _marks(chart.get("marks", []))
            ):
                raise ValueError(
                    f"figure '{self.label}': chart {chart!r}: expected "
                    "{title, kind: lines|surface, x: [name, value(, words)], "
                    "y: [name, value(, words)] for a surface, line: name, "
                    "marks: [{axis: x|y, value, label}] (optional)}"
                )

    def as_dict(self) -> dict[str, Any]:
        """Every field, copied as dataclasses.asdict copies them, without its deepcopy of
        each leaf (half a millisecond a figure: a tenth of a second and more for an
        IOzone case's 254 figures, in ReFrame's one loop)."""
        return {f.name: _copied(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: object, where: str = "figure declaration") -> "FigureDeclaration":
        """From the dict a run report or the store holds; a one-line error if malformed."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a mapping, got {type(data).__name__}")
        try:
            return cls(
                unit=str(data["unit"]),
                label=str(data["label"]),
                better=data["better"],
                headline=str(data.get("headline") or ""),
                chart=data.get("chart"),
                role=str(data.get("role") or ""),
            )
        except KeyError as exc:
            raise ValueError(f"{where}: no '{exc.args[0]}' field") from None


def _copied(value: Any) -> Any:
    """A copy of a JSON-like value: its dicts, lists and tuples new, its leaves shared
    (strings and numbers, immutable)."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(item) for item in value)
    return value


def _axis(axis):
    return (
        isinstance(axis, (list, tuple))
        and len(axis) in (2, 3)
        and isinstance(axis[0], str)
        and (len(axis) == 2 or isinstance(axis[2], str))
    )


def _marks(marks):
    return isinstance(marks, list) and all(
        isinstance(m, dict)
        and m.get("axis") in ("x", "y")
        and isinstance(m.get("value"), (int, float))
        and isinstance(m.get("label"), str)
        for m in marks
    )
