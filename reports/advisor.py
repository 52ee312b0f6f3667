"""The workload advisor: how long would this job's I/O take on each scratch target?

A job is described by a profile (``reports.job_profile``: from a Darshan log or a
YAML description).  The **prediction** (:func:`advise`) reads the history store and,
per scratch target, splits the job's I/O time into

* *data*: each size class and direction through the target's self-scaling model
  (``scratchbench.selfscale.Model``, rebuilt from the figures whose declarations carry
  a ``selfscale`` chart entry): each class the larger of bytes / predicted throughput
  and requests / request rate (roles ``read_requests_per_s``, ``write_requests_per_s``:
  the self-scaling check's smallest requests); how far the job lies outside what the
  model measured (:func:`extrapolation`) and the error known at that distance beside
  it: the model's validation error (roles ``model_error_median``, ``model_error_max``,
  and the interval that holds its median, ``model_error_median_low``, ``_high``)
  only inside the measured range, past it the error its far validation measured at
  that distance (:func:`far_error`), else none (:func:`error_words`); the regime as the check
  measured it (:func:`regime_words`); each other environment's (MPI's) models'
  prediction beside the newest environment's;
* *metadata*: files created (the files the job writes), other opens and stats at the
  stored rates (roles ``creations_per_s``, ``opens_per_s``, ``stats_per_s``);
* *deletion*: the files it writes, at the stored deletion rate (``deletions_per_s``) of the
  variant the check leads its pages with, and of the fastest variant (parallel
  removers) beside it;
* *staging*: when the job stages into the target (a description's ``stage_in`` and
  ``stage_out``, or ``--stage`` for a log: its read-only files in, its written files
  out), each leg as its files at the stored per-file rate, its first bytes (up to the
  size of the staging check's burst, which the page cache absorbs) at the burst's
  bandwidth and the rest at the sustained bandwidth (``stage_*`` roles: the staging
  check fits them from three sets of files).

Figures are found by what their declarations say (a role, a ``selfscale`` chart entry),
never by a check's or a metric's name.  Each part has an interval: the lowest and
highest prediction over the target's last ``RECENT_RUNS`` runs (the stored spread); with
one run there is none yet, and the table says so.  The prediction itself is the median
over the newest ``POINT_RUNS`` runs, so that one noisy night does not move it.  A target
without self-scaling curves says "no self-scaling curves yet" instead of a data time.

Assumptions, stated where they are made: the self-scaling model measures one node, so a
job on several nodes is predicted per node (its processes and bytes divided evenly) and
the nodes are taken to add up; the page cache holds what the job touches as it held what
the benchmark touched (uniqueBytes decides the regime); reads and writes take their
own time (a job's phases follow each other); metadata rates are those measured at the
check's rank count.
"""

import functools
import json
import math
import os
import sqlite3
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from reports import store
from reports.job_profile import AdvisorError, Profile
from scratchbench import selfscale as ss
from scratchbench import units
from scratchbench.errors import ScratchbenchError
from scratchbench.figures import too_short_words
from scratchbench.units import GIB, KIB, MIB, count_words, size_words

#: the runs of a series whose figures give a prediction its interval
RECENT_RUNS = store.RECENT_RUNS
#: the newest runs whose median is the prediction: one noisy night does not move it, a
#: real change moves it within three nights
POINT_RUNS = 5
#: the history store has no figure of any scratch target
EXIT_NO_FIGURES = store.NoHistory.exit_code
#: the roles (scratchbench.figures.ROLES) of the model's measured error
ERROR_ROLES = (
    "model_error_median",
    "model_error_median_low",
    "model_error_median_high",
    "model_error_max",
)
#: a figure's unit -> factor to the advisor's base units (bytes/s, operations/s, fraction)
UNIT_SCALE = {
    "B/s": 1.0,
    "KiB/s": KIB,
    "MiB/s": MIB,
    "GiB/s": GIB,
    "kB/s": 1e3,
    "MB/s": 1e6,
    "GB/s": 1e9,
    "ops/s": 1.0,
    "deletions/s": 1.0,
    "files/s": 1.0,
    "%": 0.01,
    "B": 1.0,
    "KiB": KIB,
    "MiB": MIB,
    "GiB": GIB,
}


# ---- what the store holds about each target ----------------------------------------------
@dataclass
class Rate:
    """A stored rate of one role on one target: the median of its newest POINT_RUNS
    values and the spread over the recent runs of its series, in base units."""

    role: str
    value: float
    low: float
    high: float
    runs: int
    date: float
    label: str
    variant: str
    ranks: int
    nodes: int
    leads: bool
    environ: str = ""
    #: the newest value was timed in a phase too short to trust (its length, s), or None
    short_phase: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def short_phase_note(rates: Sequence[Rate | None]) -> list[str]:
    """A note when a prediction rests on figures timed in phases too short to trust."""
    short = sorted({r.label for r in rates if r is not None and r.short_phase is not None})
    if not short:
        return []
    shortest = min(r.short_phase for r in rates if r is not None and r.short_phase is not None)
    return [
        f"rests on figures {too_short_words(shortest)} ({'; '.join(short)}): run a "
        "nightly or acceptance workload for figures to plan with"
    ]


@dataclass
class TargetFigures:
    """What the advisor computes with on one scratch target."""

    name: str
    kind: str = ""
    models: list = field(default_factory=list)  # [(run date, Model)], newest first
    #: the environment (programming environment: its MPI) the models were measured in
    environ: str = ""
    #: the other environments' newest models: {environ: [(run date, Model)]}
    other_models: dict = field(default_factory=dict)
    model_notes: list = field(default_factory=list)
    errors: dict = field(default_factory=dict)  # role -> Rate (a fraction)
    rates: dict = field(default_factory=dict)  # role -> [Rate], the leading one first


def _base(value: float | None, unit: str | None) -> float | None:
    scale = UNIT_SCALE.get(unit or "")
    return None if scale is None or value is None or not math.isfinite(value) else value * scale


def stored_figures(conn: sqlite3.Connection, recent: int = RECENT_RUNS) -> dict[str, TargetFigures]:
    """{target: TargetFigures} from the history store."""
    targets: dict[str, TargetFigures] = {}

    def target(row: sqlite3.Row) -> TargetFigures:
        name = row["scratch_target"] or "unspecified"
        t = targets.setdefault(name, TargetFigures(name))
        t.kind = t.kind or row["scratch_kind"] or ""
        return t

    _attach_models(conn, target, recent)
    _attach_rates(conn, target, recent)
    for t in targets.values():
        for role, rates in t.rates.items():
            # the variant the check leads its pages with, then the newest
            rates.sort(key=lambda r: (not r.leads, -r.date))
    return targets


def _attach_models(
    conn: sqlite3.Connection, target: Callable[[sqlite3.Row], TargetFigures], recent: int
) -> None:
    """Each target's self-scaling models (``target(row)`` gives its TargetFigures)."""
    # The self-scaling models: the cases with figures whose chart has a selfscale entry,
    # grouped by series; the newest series of each target gives its models.
    # Each case's figure rows; their charts (JSON) are read only for the models built,
    # the newest ``recent`` runs: decoding every stored night's was most of the time.
    cases: dict[int, dict[str, Any]] = {}
    for row in store.selfscale_figures(conn):
        cases.setdefault(row["case_id"], {"row": row, "rows": []})["rows"].append(row)
    by_series: dict[tuple[str | None, str], list[dict[str, Any]]] = {}
    for case_id, entry in cases.items():
        row = entry["row"]
        by_series.setdefault((row["scratch_target"], row["series"]), []).append(entry)
    # the newest series of each target and environment (one per MPI): the newest
    # environment's models predict, the others' are shown beside them, never dropped
    newest: dict[tuple[str | None, str], tuple[float, str]] = {}
    for (name, series), entries in by_series.items():
        environ = entries[0]["row"]["environ"] or ""
        last = max(e["row"]["started"] or 0 for e in entries)
        if (name, environ) not in newest or last > newest[name, environ][0]:
            newest[name, environ] = (last, series)
    leading: dict[str | None, tuple[float, str]] = {}
    for (name, environ), (last, _) in newest.items():
        if name not in leading or last > leading[name][0]:
            leading[name] = (last, environ)
    for (name, series), entries in by_series.items():
        environ = entries[0]["row"]["environ"] or ""
        if newest[name, environ][1] != series:
            continue
        t = target(entries[0]["row"])
        models = []
        for entry in sorted(entries, key=lambda e: e["row"]["started"] or 0, reverse=True)[:recent]:
            try:
                models.append((entry["row"]["started"], ss.Model.from_figures(_figures(entry))))
            except ss.SelfScaleError as exc:
                t.model_notes.append(f"a run's self-scaling figures give no model: {exc}")
        if leading[name][1] == environ:
            t.models, t.environ = models, environ
        elif models:
            t.other_models[environ] = models


def _figures(entry: Mapping[str, Any]) -> dict[str, tuple[float, dict[str, Any]]]:
    """A self-scaling case's figures as ss.Model.from_figures reads them."""
    return {
        row["metric"]: (
            row["value"],
            {
                "unit": row["unit"],
                "label": row["label"],
                "better": row["better"],
                "chart": json.loads(row["chart"]),
            },
        )
        for row in entry["rows"]
    }


def _attach_rates(
    conn: sqlite3.Connection, target: Callable[[sqlite3.Row], TargetFigures], recent: int
) -> None:
    """Each target's rates by role and its model's measured errors."""
    # Rates by role: per series, the median of the newest runs and the spread of the
    # recent runs.
    rows = store.figures_with_roles(conn)
    series: dict[tuple[str | None, str, str, str], list[tuple[sqlite3.Row, float]]] = {}
    for row in rows:
        value = _base(row["value"], row["unit"])
        # a rate of 0 would divide by zero; a share of 0 is a measurement (a request's
        # time all in its bytes)
        if value is None or value < 0 or (value == 0 and row["role"] not in SHARE_ROLES):
            continue
        # a figure renamed or redefined by a newer check is a series of its own
        series.setdefault(
            (row["scratch_target"], row["role"], row["series"], row["metric"]), []
        ).append((row, value))
    for (name, role, _, _), points in series.items():
        points = points[:recent]
        row = points[0][0]
        values = [v for _, v in points]
        rate = Rate(
            role=role,
            value=point(values),
            low=min(values),
            high=max(values),
            runs=len(values),
            date=row["started"] or 0,
            label=row["label"] or role,
            variant=row["variant"] or "",
            ranks=row["num_tasks"] or 0,
            nodes=row["nodes"] or 0,
            leads=bool(row["leads"]),
            environ=row["environ"] or "",
            short_phase=row["phase_seconds"] if row["too_short"] else None,
        )
        t = target(row)
        if role == "model_error_far":
            continue  # read with its model (ss.Model.far_errors)
        if role in ERROR_ROLES:
            if role not in t.errors or rate.date > t.errors[role].date:
                t.errors[role] = rate
        else:
            t.rates.setdefault(role, []).append(rate)


# ---- the prediction ------------------------------------------------------------------------
@dataclass
class Part:
    """One part of a target's predicted I/O time."""

    seconds: float | None = None  # None: cannot be predicted (see missing)
    low: float | None = None  # the interval over recent runs; None with one run
    high: float | None = None
    runs: int = 0
    date: float | None = None  # the newest figures it rests on
    rests_on: str = ""
    missing: str = ""
    notes: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _interval(values: Sequence[float]) -> tuple[float | None, float | None]:
    return (min(values), max(values)) if len(values) > 1 else (None, None)


def point(values: Sequence[float]) -> float:
    """The prediction from per-run values, newest first: their newest POINT_RUNS' median."""
    return statistics.median(values[:POINT_RUNS])


def workload_of(
    profile: Profile, size: float, direction: str, model: ss.Model, processes: int | None = None
) -> ss.Workload:
    """The self-scaling workload of one size class and direction, per node (with
    ``processes`` per node instead of the job's when given)."""
    per_node = processes or max(1, math.ceil(profile.processes / profile.nodes))
    unique = max(ss.UNIT, profile.unique_bytes / profile.nodes)
    return _workload(
        unique,
        min(max(size, ss.UNIT), GIB),
        1.0 if direction == "read" else 0.0,
        profile.consecutive[direction],
        per_node,
    )


@functools.lru_cache(maxsize=4096)
def _workload(
    unique_bytes: float, size_mean: float, read_frac: float, seq_frac: float, process_num: int
) -> ss.Workload:
    """One Workload per point (it is immutable): the advisor page's form asks for the
    same few hundred points of every model, and validating a point was most of a
    rebuild's prediction time."""
    return ss.Workload.from_dict(
        {
            "unique_bytes": unique_bytes,
            "size_mean": size_mean,
            "read_frac": read_frac,
            "seq_frac": seq_frac,
            "process_num": process_num,
        }
    )


#: the roles of a stored request rate per direction: requests per second of the
#: smallest requests the self-scaling check may use, sequential, in the page cache, on
#: one process (the check's ``request_rate_*`` figures)
REQUEST_ROLES = {"read": "read_requests_per_s", "write": "write_requests_per_s"}
#: the roles of the share of a request's time at the smallest size measured that does
#: not grow with its bytes (the check's ``request_fixed_share_*`` figures, from its
#: request rates at two sizes)
FIXED_SHARE_ROLES = {"read": "read_request_fixed_share", "write": "write_request_fixed_share"}
#: the roles of a request of the kernel's unit's time (ss.UNIT, below the smallest size
#: measured) as a share of one of the smallest size (the check's ``request_unit_share_*``)
UNIT_SHARE_ROLES = {"read": "read_request_unit_share", "write": "write_request_unit_share"}
#: roles whose figures are shares of something (0 to 1), where 0 is a value, not a gap
SHARE_ROLES = frozenset(FIXED_SHARE_ROLES.values()) | frozenset(UNIT_SHARE_ROLES.values())


@dataclass(frozen=True)
class RequestShape:
    """How a request's time grows with its size, as the check's request-rate probe
    measured it (request_rate_at_size): ``fixed``, the share of a smallest-size
    request's time that does not grow with its bytes (a FIXED_SHARE_ROLES Rate), and
    ``unit``, the time of a request of the kernel's unit as a share of a smallest-size
    one's (a UNIT_SHARE_ROLES Rate); None where not stored."""

    fixed: Rate | None = None
    unit: Rate | None = None


def request_shapes(figures: TargetFigures, environ: str | None = None) -> dict[str, RequestShape]:
    """Each direction's RequestShape stored for the target (the models' environment's,
    as _request_rate_of picks)."""
    return {
        d: RequestShape(
            fixed=_request_rate_of(figures, FIXED_SHARE_ROLES[d], environ),
            unit=_request_rate_of(figures, UNIT_SHARE_ROLES[d], environ),
        )
        for d in FIXED_SHARE_ROLES
    }


#: how a size class's request time and byte time combine: "max" (the larger) or "sum".
#: Chosen by measurement (ci/benchmarks/advisor_validation.py --only request prints
#: both): on 2026-11-26 at quick sizes (load 12 to 26 on 2 cores), over 18 rows of dd
#: requests of 1 B, 512 B and 4 KiB on node-local disk and the SAN, the max form's
#: median error was 45.8%, the sum form's 43.5% (sum better on 512 B, worse on 4 KiB
#: and on the SAN's reads): no clear winner, so the bound that never charges a request
#: twice stays.  At nightly sizes on 2026-12-07, with every row timed over at least
#: 0.6 s: 23.3% against 19.1% with each request priced at the smallest size's rate;
#: then, with a request priced by its size (request_rate_at_size) and the writes'
#: rates measured appending, 19.2% against 30.6% (the sum charges a request's bytes
#: twice once its rate grows with them): max.
REQUEST_COST = "max"


#: the roles of what a new open does to a file's cached pages (the self-scaling check's
#: reopen probe): the share it drops, and the rate of a first pass that reads them again
DROPPED_ROLE = "reopen_cache_dropped"
FIRST_PASS_ROLE = "first_pass_read_Bps"


@dataclass
class FirstPass:
    """The share of a job's read bytes that are its first pass over files it opened, on
    a target where a new open drops a file's cached pages (GlusterFS's FUSE client with
    fopen-keep-cache off), and the rate such a pass reads at (bytes/s per node).  The
    self-scaling curves are measured within one open, where the cache serves reads
    again: they price only the rest."""

    share: float
    rate: Rate
    dropped: Rate

    def seconds(self, seconds: float, moved: float, nodes: int) -> float:
        """A read size class's seconds (class_seconds') with its first-pass share
        taking the longer of those seconds and its bytes at the first-pass rate (the
        advisor page's form does the same: reports/templates/advisor.js)."""
        cold = max(seconds, moved / (self.rate.value * nodes))
        return (1.0 - self.share) * seconds + self.share * cold


def first_pass(
    profile: Profile, figures: TargetFigures, environ: str | None = None
) -> FirstPass | None:
    """The job's FirstPass on this target, or None where the target's opens keep the
    cache, nothing was measured, or the job opens or reads nothing.  The first pass is
    each byte touched, read once: min(bytes read, bytes touched), times the share of
    cached pages an open drops."""
    rates = first_pass_rates(figures, environ)
    if not (rates and profile.opens and profile.bytes_read):
        return None
    dropped, rate = rates
    touched = profile.unique_bytes or profile.bytes_read
    share = min(1.0, touched / profile.bytes_read) * min(1.0, dropped.value)
    return FirstPass(share=share, rate=rate, dropped=dropped)


def first_pass_rates(
    figures: TargetFigures, environ: str | None = None
) -> tuple[Rate, Rate] | None:
    """(share of cached pages a new open drops, first-pass read rate) stored for the
    target, the rate of the models' environment (default: the one that predicts), or
    None where the target's opens keep the cache or nothing was measured."""
    dropped = _rate(figures, DROPPED_ROLE)
    rate = _request_rate_of(figures, FIRST_PASS_ROLE, environ)
    return (dropped, rate) if dropped and rate else None


def request_rate(
    profile: Profile, direction: str, model: ss.Model, stored: Rate | None = None
) -> float:
    """Requests per second per node of one direction.  The stored rate (a figure with a
    REQUEST_ROLES role, measured on one process) where there is one, scaled to the job's
    processes per node as the model scales its smallest requests; else the model's own
    at the smallest request size it measured (its throughput there over that size)."""
    return rate_of_terms(request_rate_terms(profile, direction, model), stored)


def request_rate_terms(
    profile: Profile, direction: str, model: ss.Model
) -> tuple[float, float, float]:
    """What request_rate needs of the model, whatever the stored rate: (its throughput
    at the smallest request size it measured with the job's processes per node, the
    same on one process, that size).  Kept per model by the advisor page's cache."""
    smallest = model.measured_range()["size_mean"][0]
    at_job = model.predict(workload_of(profile, smallest, direction, model))
    one = model.predict(workload_of(profile, smallest, direction, model, processes=1))
    return at_job, one, smallest


def rate_of_terms(terms: Sequence[float], stored: Rate | None) -> float:
    """request_rate from request_rate_terms and the stored rate (or None)."""
    at_job, one, smallest = terms
    return at_job / smallest if stored is None else stored.value * at_job / one


def request_rate_at_size(
    rate: float, size: float, smallest: float, shape: RequestShape | None
) -> float:
    """The request rate of requests of ``size`` bytes, from ``rate``, that of requests of
    ``smallest`` bytes (the smallest measured), and the shape the check measured
    (request_time_share).  Where no shape is stored, ``rate`` itself."""
    return rate / request_time_share(size, smallest, shape)


def request_time_share(size: float, smallest: float, shape: RequestShape | None) -> float:
    """A request of ``size`` bytes' time as a share of one of ``smallest`` bytes.  The
    check measured the rate at ``smallest`` and at ss.REQUEST_SIZE_STEP times it, stored
    as the share of a ``smallest`` request's time that does not grow with its bytes
    (``shape.fixed``): a request of any size from ``smallest`` to the larger one costs
    that share plus its bytes at the measured cost per byte; a larger one what the
    larger one did (its bytes are the throughput's).  Below ``smallest`` the probe's
    cost per byte is steeper than that line's (which put a 1-byte read from the page
    cache at 0.65 µs where loops took 0.45-0.52 µs: docs/benchmarks.md): where the check
    also timed the kernel's unit (``shape.unit``, its time as a share of a ``smallest``
    one's), a smaller request costs what the line through the two gives, carried below
    the unit and kept above the unit's time scaled by its bytes (a line that would reach
    0 before 0 bytes)."""
    if shape is None:
        return 1.0
    unit = share_fraction(shape.unit) if shape.unit is not None else 0.0
    if size < smallest and ss.UNIT < smallest and unit > 0.0:
        per_byte = (1.0 - unit) / (smallest - ss.UNIT)
        return max(unit - per_byte * (ss.UNIT - size), unit * min(size, ss.UNIT) / ss.UNIT)
    if shape.fixed is None:
        return 1.0
    share = share_fraction(shape.fixed)
    measured = min(size, ss.REQUEST_SIZE_STEP * smallest)
    return share + (1.0 - share) * measured / smallest


def share_fraction(share: Rate) -> float:
    """A stored share (SHARE_ROLES) as a fraction, 0 to 1 (the check stores it so; a
    history edited by hand could hold more)."""
    return max(0.0, min(1.0, share.value))


def class_seconds(
    profile: Profile,
    model: ss.Model,
    direction: str,
    size: float,
    moved: float,
    stored: Rate | None = None,
    form: str | None = None,
    first: FirstPass | None = None,
    shape: RequestShape | None = None,
) -> tuple[float, bool]:
    """(seconds, by requests?) of one size class: its bytes over the predicted
    throughput and its requests over the request rate, the larger of the two or their
    sum (``form``, default REQUEST_COST).  Below the smallest request size measured,
    the throughput curve is carried flat and would make a 1-byte request cost as little
    as 1/4096 of a 4 KiB one; the request rate says what a request of its size costs
    (request_rate_at_size, ``shape``).  ``first``: the job's
    reads' first pass (first_pass()), applied to reads."""
    form = form or REQUEST_COST
    if form not in ("max", "sum"):
        raise AdvisorError(f"request cost form: expected 'max' or 'sum', got {form!r}")
    throughput = model.predict(workload_of(profile, size, direction, model))
    smallest = model.measured_range()["size_mean"][0]
    rate = request_rate_at_size(
        request_rate(profile, direction, model, stored), size, smallest, shape
    )
    seconds, by_requests = seconds_of(throughput, rate, size, moved, profile.nodes, form)
    if first is None or direction != "read":
        return seconds, by_requests
    longer = first.seconds(seconds, moved, profile.nodes)
    return longer, by_requests and longer == seconds


def seconds_of(
    throughput: float, rate: float, size: float, moved: float, nodes: int, form: str
) -> tuple[float, bool]:
    """class_seconds from the predicted throughput (bytes/s per node) and request rate
    (requests/s per node): the advisor page's cache keeps those per model."""
    by_bytes = moved / (throughput * nodes)
    requests = moved / max(size, 1)
    by_requests = requests / (rate * nodes)
    seconds = max(by_bytes, by_requests) if form == "max" else by_bytes + by_requests
    return seconds, by_requests > by_bytes


def data_seconds(
    profile: Profile,
    model: ss.Model,
    stored_rates: Mapping[str, Rate | None] | None = None,
    form: str | None = None,
    first: FirstPass | None = None,
    shapes: Mapping[str, RequestShape] | None = None,
) -> float:
    """Seconds to move the profile's bytes with one model: each size class and
    direction by class_seconds, the nodes adding up."""
    seconds = 0.0
    for direction in ("read", "write"):
        for size, moved in profile.size_classes.get(direction, []):
            if moved > 0:
                seconds += class_seconds(
                    profile,
                    model,
                    direction,
                    size,
                    moved,
                    (stored_rates or {}).get(direction),
                    form,
                    first=first,
                    shape=(shapes or {}).get(direction),
                )[0]
    return seconds


#: a prediction this many times past the measured range (or less) is taken as inside it
INSIDE = 1.01


def distances(profile: Profile, model: ss.Model) -> dict[str, float]:
    """{parameter: times past the measured range} of each parameter in which the job lies
    outside what the model measured: processes per node, bytes touched per node, and
    its request sizes (the farthest of them)."""
    ranges = model.measured_range()
    values: dict[str, list[float]] = {
        "process_num": [math.ceil(profile.processes / profile.nodes)],
        "unique_bytes": [profile.unique_bytes / profile.nodes],
        "size_mean": _request_sizes(profile),
    }
    out = {}
    for parameter, found in values.items():
        far = max((ss.distance_past(ranges, parameter, v) for v in found), default=1.0)
        if far > INSIDE:
            out[parameter] = far
    return out


def _request_sizes(profile: Profile) -> list[float]:
    """The job's request sizes that moved bytes, read or written, smallest first."""
    return sorted({s for d in ("read", "write") for s, b in profile.size_classes.get(d, []) if b})


def extrapolation(
    profile: Profile, model: ss.Model, far: Mapping[str, float]
) -> tuple[float, list[str]]:
    """(factor, [words]): how far the job lies outside what the model measured, per
    parameter (processes per node, bytes touched per node, request sizes above or
    below the sizes measured; ``far``: distances()), and the largest of those factors
    (1.0: inside)."""
    ranges = model.measured_range()
    words = []
    if "process_num" in far:
        hi = ranges["process_num"][1]
        words.append(
            f"{math.ceil(profile.processes / profile.nodes)} processes per node, "
            f"{far['process_num']:,.1f}x the {hi:.0f} measured (the curve's end is used)"
        )
    if "unique_bytes" in far:
        hi = ranges["unique_bytes"][1]
        words.append(
            f"{size_words(profile.unique_bytes / profile.nodes)} touched per node, "
            f"{far['unique_bytes']:,.1f}x the {size_words(hi)} measured"
        )
    lo, hi = ranges["size_mean"]
    for s in _request_sizes(profile):
        if s > hi * INSIDE or s * INSIDE < lo:
            words.append(
                f"requests of {size_words(s)}, {ss.distance_past(ranges, 'size_mean', s):,.1f}x "
                f"{'above' if s > hi else 'below'} the {size_words(lo)} to "
                f"{size_words(hi)} measured"
            )
    return max(far.values(), default=1.0), words


def far_error(model: ss.Model, far: Mapping[str, float]) -> tuple[float, float, int] | None:
    """(band, median error, workloads): the error the model's far validation measured at
    the job's distance, or None where it measured none (a parameter it cannot push,
    processes; a distance past its last band).  Each parameter the job extrapolates in
    takes the band that covers its distance; with several, the largest band and error
    and the fewest workloads."""
    found = []
    for parameter, distance in far.items():
        band = next((b for b in ss.FAR_BANDS if distance <= b * INSIDE), None)
        error = model.far_errors.get((parameter, band))
        if error is None:
            return None
        found.append((band, *error))
    if not found:
        return None
    return (
        max(f[0] for f in found),
        max(f[1] for f in found),
        min(f[2] for f in found),
    )


def distance_terms(profile: Profile, model: ss.Model) -> list[float | None]:
    """[factor past the measured range, band, median error, workloads] of a job (the
    last three None where no error was measured at its distance): what error_words
    says."""
    far = distances(profile, model)
    error = far_error(model, far)
    return [max(far.values(), default=1.0), *(error or (None, None, None))]


def regime_words(profile: Profile, model: ss.Model) -> str:
    """The regime the job's footprint falls in, named only as it was measured: an
    upper regime the page cache still held when the check measured it is not "beyond
    the page cache"."""
    weight = model.regime_weight(workload_of(profile, MIB, "read", model))
    if weight <= 0.0:
        return "page cache regime"
    knee = model.knee
    if knee is not None and knee.upper_in_page_cache:
        upper = (
            f"upper regime, which the self-scaling check measured still in the page "
            f"cache ({knee.top_resident:.0%} of its largest footprint held)"
        )
    elif knee is None or knee.top_resident is None:
        upper = "upper regime (whether the page cache still held it was not recorded)"
    else:
        upper = "upper regime, beyond the page cache"
    return upper if weight >= 1.0 else f"between the page cache regime and the {upper}"


def predict_data(profile: Profile, figures: TargetFigures) -> Part:
    if not figures.models:
        return Part(missing="no self-scaling curves yet", notes=list(figures.model_notes))
    if not (profile.bytes_read or profile.bytes_written):
        return Part(
            seconds=0.0,
            rests_on="no data moved",
            runs=len(figures.models),
            date=figures.models[0][0],
        )
    date, model = figures.models[0]
    stored = {d: _request_rate_of(figures, role) for d, role in REQUEST_ROLES.items()}
    shapes = request_shapes(figures)
    first = first_pass(profile, figures)
    values = [
        data_seconds(profile, m, stored, first=first, shapes=shapes) for _, m in figures.models
    ]
    low, high = _interval(values)
    seconds = point(values)
    throughput = (profile.bytes_read + profile.bytes_written) / seconds if seconds else 0
    distance = distances(profile, model)
    factor, far = extrapolation(profile, model, distance)
    within = f" of the {figures.environ} environment" if figures.other_models else ""
    part = Part(
        seconds=seconds,
        low=low,
        high=high,
        runs=len(values),
        date=date,
        rests_on=f"self-scaling model{within} ({regime_words(profile, model)}), "
        f"{units.quantity(throughput, 'B/s')} predicted",
        notes=far + list(figures.model_notes),
    )
    part.extra["extrapolation"] = factor
    measured_far = far_error(model, distance)
    if measured_far is not None:
        far_band, far_median, far_count = measured_far
        part.extra.update(far_band=far_band, far_error=far_median, far_workloads=far_count)
    for environ, models in sorted(figures.other_models.items()):
        own = {d: _request_rate_of(figures, role, environ) for d, role in REQUEST_ROLES.items()}
        own_shapes = request_shapes(figures, environ)
        own_first = first_pass(profile, figures, environ)
        other = point(
            [data_seconds(profile, m, own, first=own_first, shapes=own_shapes) for _, m in models]
        )
        part.extra.setdefault("other_environments", {})[environ] = other
        part.notes.append(
            f"with the self-scaling model of the {environ} environment (another MPI): "
            f"{seconds_words(other)}; the table uses {figures.environ}'s, the newest (the "
            f"advisor does not know which MPI the job used)"
        )
    for direction in ("read", "write"):
        words = request_bound_words(profile, figures, direction, stored, shapes, first)
        if words:
            part.notes.append(words)
    if first is not None:
        part.notes.append(first_pass_words(profile, first))
    for role in ERROR_ROLES:
        error = figures.errors.get(role)
        part.extra[role] = error.value if error else None
    if not figures.errors:
        part.notes.append(
            "the model's validation error is not in the store (no figure "
            "declares the roles model_error_median/max)"
        )
    part.extra["error_words"] = error_words(part.extra)
    return part


def request_bound_words(
    profile: Profile,
    figures: TargetFigures,
    direction: str,
    stored: Mapping[str, Rate | None],
    shapes: Mapping[str, RequestShape],
    first: FirstPass | None,
) -> str:
    """The note on a direction's size classes timed by their number of requests, not
    their bytes: each size's request rate and where it comes from ("" when none is)."""
    model = figures.models[0][1]
    smallest = model.measured_range()["size_mean"][0]
    shape = shapes[direction]
    bound = [
        size
        for size, moved in profile.size_classes.get(direction, [])
        if moved
        and class_seconds(
            profile,
            model,
            direction,
            size,
            moved,
            stored[direction],
            first=first,
            shape=shape,
        )[1]
    ]
    if not bound:
        return ""
    rate = point(
        [request_rate(profile, direction, m, stored[direction]) for _, m in figures.models]
    )
    rates = ", ".join(
        f"{size_words(b)} at "
        f"{units.quantity(request_rate_at_size(rate, b, smallest, shape) * profile.nodes, 'requests/s')}"
        for b in bound
    )
    source = (
        f"the stored {REQUEST_ROLES[direction].replace('_', ' ')} of {size_words(smallest)}"
        if stored[direction]
        else f"the model's at its smallest requests measured ({size_words(smallest)})"
    )
    # a share counts (and its timing is worth a word) only for the sizes it prices
    below = shape.unit is not None and ss.UNIT < smallest and any(b < smallest for b in bound)
    share = (
        shape.fixed if any(b != smallest and not (below and b < smallest) for b in bound) else None
    )
    if share is not None:
        larger = ss.REQUEST_SIZE_STEP * smallest
        source += (
            f"; a request of another size costs the {share_fraction(share):.0%} of a "
            f"{size_words(smallest)} request's time that does not grow with its bytes, plus "
            f"its own bytes up to {size_words(larger)} (the larger size measured), one of "
            f"{size_words(larger)} above"
        )
    unit = shape.unit if below else None
    if unit is not None:
        source += (
            f"; a request under {size_words(smallest)} costs on the line through the "
            f"{size_words(smallest)} request's time and the {size_words(ss.UNIT)} one's "
            f"({share_fraction(unit):.0%} of it, measured)"
        )
    words = f"{direction} requests timed by their number, not their bytes: {rates} ({source})"
    return "; ".join([words, *short_phase_note([stored[direction], share, unit])])


def first_pass_words(profile: Profile, first: FirstPass) -> str:
    """What the prediction of a job's reads charges at the first-pass rate, and why."""
    words = (
        f"{size_words(first.share * profile.bytes_read)} of the reads are a first pass over "
        f"files the job opens, at {units.quantity(first.rate.value * profile.nodes, 'B/s')} "
        f"(the stored first-pass read rate): a new open on this target drops "
        f"{first.dropped.value:.0%} of a file's cached pages, so the page cache serves "
        f"only what is read again within one open"
    )
    short = short_phase_note([first.rate])
    return "; ".join([words, *short])


def error_words(extra: Mapping[str, Any]) -> str:
    """The error to print beside a data prediction: the model's validation error where
    the job lies inside the range the check measured (its held-out workloads lie
    there); past it, the error the far validation measured at that distance, else that
    none is known that far (advisor.js says the same)."""
    factor = extra.get("extrapolation") or 1.0
    if factor > INSIDE:
        said = f"extrapolated {factor:,.1f}x beyond what was measured; "
        if extra.get("far_error") is None:
            return said + "no error known at that distance"
        return said + (
            f"median error {extra['far_error']:.0%} on "
            f"{count_words(extra['far_workloads'], 'held-out workload')} up to "
            f"{extra['far_band']:g}x past the measured range"
        )
    med, top = extra.get("model_error_median"), extra.get("model_error_max")
    if med is None:
        return ""
    low, high = extra.get("model_error_median_low"), extra.get("model_error_median_high")
    return (
        f"inside the measured range: validation error median {med:.0%}"
        + (
            f" ({low:.0%} to {high:.0%} with {ss.MEDIAN_CONFIDENCE:.0%} confidence)"
            if low is not None and high is not None
            else ""
        )
        + (f", max {top:.0%}" if top is not None else "")
    )


def _request_rate_of(figures: TargetFigures, role: str, environ: str | None = None) -> Rate | None:
    """The stored request rate measured in the environment of the models (the
    self-scaling check measures both in one job; default: the environment that
    predicts), else the leading one."""
    environ = figures.environ if environ is None else environ
    same = [r for r in figures.rates.get(role) or [] if r.environ == environ]
    return same[0] if same else _rate(figures, role)


def _rate(figures: TargetFigures, role: str) -> Rate | None:
    rates = figures.rates.get(role) or []
    return rates[0] if rates else None


def _counted(parts: Sequence[tuple[int, Rate, tuple[str, ...]]], what: str) -> Part:
    """Seconds (and interval) of [(count, Rate, words)]: count / rate, summed."""
    seconds = low = high = 0.0
    runs, dates, rests = [], [], []
    for count, rate, words in parts:
        if not count:
            continue
        seconds += count / rate.value
        low += count / rate.high
        high += count / rate.low
        runs.append(rate.runs)
        dates.append(rate.date)
        rests.append(f"{count_words(count, *words)} at {units.number(rate.value)}/s")
    notes = short_phase_note([rate for count, rate, _ in parts if count])
    return _part(seconds, low, high, runs, dates, "; ".join(rests) or "nothing to do", notes)


def _part(
    seconds: float,
    low: float,
    high: float,
    runs: Sequence[int],
    dates: Sequence[float],
    rests_on: str,
    notes: list[str],
) -> Part:
    """A part of the prediction: its interval only where every rate it used has a
    spread (more than one run), its age that of its newest rate."""
    spread = bool(runs) and min(runs) > 1
    return Part(
        seconds=seconds,
        low=low if spread else None,
        high=high if spread else None,
        runs=min(runs) if runs else 0,
        date=max(dates) if dates else None,
        rests_on=rests_on,
        notes=notes,
    )


def predict_metadata(profile: Profile, figures: TargetFigures) -> Part:
    creations = profile.files_written
    others = max(0, profile.opens - creations)
    needed = [
        (creations, "creations_per_s", ("creation",)),
        (others, "opens_per_s", ("open of an existing file", "opens of existing files")),
        (profile.stats, "stats_per_s", ("stat",)),
    ]
    parts = []
    for count, role, words in needed:
        rate = _rate(figures, role)
        if count and rate is None:
            return Part(
                missing=f"no stored {role.replace('_', ' ')} (no figure declares the role {role})"
            )
        if rate is not None:
            parts.append((count, rate, words))
    part = _counted(parts, "metadata")
    ranks = {(r.ranks, r.nodes) for _, r, _ in parts if r.ranks}
    if ranks:
        part.notes.append(
            "rates measured with "
            + ", ".join(
                f"{n} rank{'s' * (n != 1)} on {m} node{'s' * (m != 1)}" for n, m in sorted(ranks)
            )
        )
    return part


def predict_deletion(profile: Profile, figures: TargetFigures) -> Part:
    rates = figures.rates.get("deletions_per_s") or []
    if not profile.files_written:
        return Part(seconds=0.0, rests_on="the job writes no file")
    if not rates:
        return Part(missing="no stored deletion rate (no figure declares the role deletions_per_s)")
    part = _counted([(profile.files_written, rates[0], ("deletion",))], "deletion")
    if rates[0].variant:
        part.rests_on += f" ({rates[0].variant})"
    fastest = max(rates, key=lambda r: r.value)
    if fastest is not rates[0] and fastest.value > rates[0].value * 1.1:
        part.extra["faster"] = {
            "seconds": profile.files_written / fastest.value,
            "variant": fastest.variant or fastest.label,
        }
        part.notes.append(
            f"with {fastest.variant or fastest.label}: "
            f"{seconds_words(profile.files_written / fastest.value)}"
        )
    return part


def predict_staging(profile: Profile, figures: TargetFigures) -> Part:
    if not profile.staging:
        return Part(
            seconds=0.0,
            rests_on="the job does not stage"
            + (" (--stage: stage its inputs in and outputs out)" if profile.inputs else ""),
        )
    seconds = low = high = 0.0
    runs, dates, rests, notes = [], [], [], []
    for leg in ("in", "out"):
        amount = profile.staging.get(leg)
        if not amount or not (amount["bytes"] or amount["files"]):
            continue
        bandwidth = _rate(figures, f"stage_{leg}_bytes_per_s")
        files = _rate(figures, f"stage_{leg}_files_per_s")
        if bandwidth is None or files is None:
            return Part(
                missing=f"no stored stage-{leg} rates (no figures declare the roles "
                f"stage_{leg}_bytes_per_s and stage_{leg}_files_per_s)"
            )
        # a copy pays for each file and for each byte, its first bytes (as many as the
        # staging check's burst: the page cache absorbs them) at their own bandwidth:
        # the staging check separates the costs with three sets of files
        burst = _rate(figures, f"stage_{leg}_first_bytes_per_s")
        burst_bytes = _rate(figures, "stage_first_bytes")
        first = min(amount["bytes"], burst_bytes.value) if burst and burst_bytes else 0
        costs = [(amount["files"], files), (first, burst), (amount["bytes"] - first, bandwidth)]
        # (the burst is None only when first is 0)
        rated = [(count, rate) for count, rate in costs if count and rate is not None]
        if first and amount["bytes"] > first:
            notes.append(
                f"stage-{leg}: {size_words(amount['bytes'] - first)} past the "
                f"{size_words(first)} burst at the sustained bandwidth; how much "
                "more a node's page cache absorbs varies with its free memory"
            )
        largest = _rate(figures, "stage_largest_bytes")
        if largest and amount["bytes"] > largest.value:
            notes.append(
                f"stage-{leg}: {size_words(amount['bytes'])} is "
                f"{amount['bytes'] / largest.value:,.1f}x the largest copy "
                f"the staging check timed ({size_words(largest.value)}): its "
                "sustained bandwidth is carried past what was measured"
            )
        notes += short_phase_note([rate for _, rate in rated])
        seconds += sum(count / rate.value for count, rate in rated)
        low += sum(count / rate.high for count, rate in rated)
        high += sum(count / rate.low for count, rate in rated)
        runs += [rate.runs for _, rate in rated]
        dates += [rate.date for _, rate in rated]
        rests.append(
            f"{leg}: {size_words(amount['bytes'])} in "
            f"{count_words(amount['files'], 'file')}: "
            + ", ".join(
                f"{count_words(count, 'file')} at {units.number(rate.value)}/s"
                if rate is files
                else f"{size_words(count)} at {units.quantity(rate.value, 'B/s')}"
                + (" (a burst)" if rate is burst else "")
                for count, rate in rated
            )
        )
    return _part(seconds, low, high, runs, dates, "; ".join(rests) or "nothing staged", notes)


PARTS = ("data", "metadata", "deletion", "staging")


def predict_target(profile: Profile, figures: TargetFigures) -> dict[str, Any]:
    parts = {
        "data": predict_data(profile, figures),
        "metadata": predict_metadata(profile, figures),
        "deletion": predict_deletion(profile, figures),
        "staging": predict_staging(profile, figures),
    }
    missing = [name for name, p in parts.items() if p.seconds is None]
    if missing:
        total = Part(missing=f"incomplete: {', '.join(missing)} cannot be predicted")
    else:
        seconds = sum(p.seconds for p in parts.values() if p.seconds is not None)
        spread = all(p.low is not None or p.seconds == 0 for p in parts.values())
        total = Part(
            seconds=seconds,
            low=sum(
                p.low if p.low is not None else p.seconds
                for p in parts.values()
                if p.seconds is not None
            )
            if spread
            else None,
            high=sum(
                p.high if p.high is not None else p.seconds
                for p in parts.values()
                if p.seconds is not None
            )
            if spread
            else None,
            date=max((p.date for p in parts.values() if p.date), default=None),
        )
    dates = [p.date for p in parts.values() if p.date]
    return {
        "target": figures.name,
        "kind": figures.kind,
        "figures_from": min(dates) if dates else None,
        "figures_to": max(dates) if dates else None,
        "parts": {name: p.as_dict() for name, p in parts.items()},
        "total": total.as_dict(),
    }


def recommend(predictions: Sequence[Mapping[str, Any]]) -> dict[str, str | None]:
    """The target to use, when the intervals allow naming one; else why not."""
    complete = [p for p in predictions if p["total"]["seconds"] is not None]
    if not complete:
        return {"target": None, "words": "no target has every figure the prediction needs"}
    complete.sort(key=lambda p: p["total"]["seconds"])
    best = complete[0]
    if len(complete) == 1:
        return {
            "target": best["target"],
            "words": f"{best['target']}: the only target with a complete prediction",
        }
    runner = complete[1]
    if best["total"]["high"] is None or runner["total"]["low"] is None:
        return {
            "target": None,
            "words": f"fastest predicted: {best['target']}, but without "
            "an interval (one stored run), so no target can be "
            "named best yet",
        }
    if best["total"]["high"] < runner["total"]["low"]:
        return {
            "target": best["target"],
            "words": f"{best['target']}: its slowest prediction beats the fastest of "
            f"{runner['target']} (recent runs)",
        }
    return {
        "target": None,
        "words": f"no clear winner: {best['target']} and "
        f"{runner['target']} overlap over recent runs",
    }


def predict_all(profile: Profile, figures: Mapping[str, TargetFigures]) -> dict[str, Any]:
    """{"profile", "targets": [per target], "recommendation"} from stored_figures()."""
    predictions = [predict_target(profile, figures[name]) for name in sorted(figures)]
    return {
        "profile": profile.as_dict(),
        "profile_words": profile.words(),
        "targets": predictions,
        "recommendation": recommend(predictions),
    }


def load_figures(
    conn: sqlite3.Connection | None = None, db_path: str | os.PathLike[str] | None = None
) -> dict[str, TargetFigures]:
    """stored_figures() of the history store, read in one snapshot; an error when it has
    no figures of any target."""
    own = conn is None
    conn = conn or store.connect(db_path, create=False)
    try:
        with store.snapshot(conn):
            figures = stored_figures(conn)
    finally:
        if own:
            conn.close()
    if not figures:
        raise ScratchbenchError(
            "the history store has no figures of any scratch target that "
            "the advisor computes with: run the suite first "
            "(`scratchbench run`)",
            EXIT_NO_FIGURES,
        )
    return figures


def advise(
    profile: Profile,
    conn: sqlite3.Connection | None = None,
    db_path: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    return predict_all(profile, load_figures(conn, db_path))


def seconds_words(seconds: float | None) -> str:
    """0.0042 -> '4.2 ms', 75 -> '1 min 15 s', None -> '-' (scratchbench.units)."""
    return "-" if seconds is None else units.duration_words(seconds)
