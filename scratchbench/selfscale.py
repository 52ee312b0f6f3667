"""Seed 003's self-scaling I/O benchmark (Chen and Patterson, 1993) as pure algorithm.

A workload is five numbers: ``unique_bytes`` (bytes it touches per node; small ones fit
the page cache, large ones do not), ``size_mean`` (mean request size), ``read_frac``,
``seq_frac`` (share of requests that continue the previous one) and ``process_num``
(processes issuing requests).  The benchmark explores a file system by itself:

1. **The search** (:func:`explore`).  Each parameter has a domain (:class:`Domain`:
   bounds from the node, a fixed grid, so that stored curve points keep their names
   from night to night).  Round after round:

   * uniqueBytes is swept over its grid, the others at their focal values; the curve's
     **knee** (:func:`find_knee`) splits it into a *cache* regime, whose focal
     uniqueBytes sits ``Rules.regime_margin`` below the knee, and a *device* regime, at
     the top of the range (beyond the node's memory).  When the caller reports the
     page-cache state and the page cache stopped holding the footprint within the
     range, the knee is sought where it stopped (:func:`page_cache_edge`), not at a
     larger fall from the CPU caches.  When the page cache still held the top of the
     range, the fall is not the device's but the CPU caches' (or the load's): it still
     splits the range in two (the shape curves differ on either side of any large
     fall), and the round records what the page cache held (``top_resident``) so
     that nobody reads it as the device's;
   * in each regime, each other parameter is swept with the rest at that regime's
     focal values, and its **focal value** (:func:`focal_value`) becomes the value where
     the curve sits ``Rules.focal_fraction`` of the way from its minimum to its maximum
     (the paper's exact rule is not attested in the sources: the fraction is a
     parameter, 0.5 by default, "the middle of the range"), taken to the nearest point
     the sweep measured, so that every focal point is a measured point;
   * each curve's **useful range** (:func:`useful_range`), where throughput still
     changes, is what the next round sweeps;
   * the search stops when no focal value moved by more than ``Rules.settle_steps``
     grid steps in a round, or after ``Rules.max_rounds``.

2. **The prediction** (:class:`Model`), the paper's product form: within a regime,
   ``T(w) = T_focal * prod_p C_p(w_p) / C_p(focal_p)``, where ``C_p`` is the measured
   one-parameter curve of ``p`` (uniqueBytes's curve included) and ``T_focal`` the
   throughput measured at the regime's focal point (on the curves that pass through it
   and in the repeated measurements).  Between the two regimes' focal uniqueBytes
   the two predictions are blended geometrically; below and above, one regime applies.
   How far throughput falls with the footprint depends on the request size (past a
   cache, small requests pay a device's latency each, large ones its bandwidth): no
   product of one-parameter curves holds that, so after the rounds the search measures
   the uniqueBytes curve again at other sizeMean values (:func:`size_curve_sizes`, the
   domain's smallest and largest among them) and a workload's uniqueBytes ratio is
   interpolated in log sizeMean between them (:meth:`Model.unique_ratio`).  Reads and
   writes fall with the footprint apart too (a page cache slows writes as its dirty data
   grows, reads only past its size): asked to (``Rules.direction_unique_curves``, off
   by default), the search measures the uniqueBytes curve with readFrac 1 and 0 as well
   (:attr:`Model.direction_unique`), and a workload's mix of reads and writes at its
   footprint is predicted from them (:meth:`Regime.shape_ratio`).
   A prediction never exceeds the fastest throughput per process that any curve
   measured, times the workload's processes (:attr:`Model.per_process_ceiling`): where
   several parameters favour a workload at once (a large sequential read), their
   ratios compound in the product although they draw on one limit, a process's copy
   bandwidth, and the product lands above anything the search saw (up to 2.5x here).

3. **Validation** (:func:`draw_workloads`, :func:`validate`): workloads drawn at random
   from the domain, never points of the search, measured and predicted; the median and
   the largest relative error are what the model is worth.

Nothing here does I/O: :func:`explore` calls a ``measure`` function the caller gives
(the job-side driver runs the kernel's ``selfscale`` mode; tests give synthetic
throughput functions).  Everything is plain data that round-trips through JSON
(``to_dict``/``from_dict``), and :meth:`Model.from_figures` rebuilds a model from the
figures a check stored in the history (their declarations carry a ``selfscale`` entry in
``chart``), which is how the pages and the workload advisor read it.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Mapping, MutableMapping, Sequence

import numpy as np

# Pure algorithm: numpy, the standard library and scratchbench.units (itself standard
# library only) are all it imports (tests/test_selfscale.py::test_the_module_is_pure_numpy).
from scratchbench.units import GIB, KIB, MIB, size_token, size_words

#: the five parameters, in the paper's order
PARAMETERS = ("unique_bytes", "size_mean", "read_frac", "seq_frac", "process_num")
#: the paper's names, for people
PAPER_NAMES = {
    "unique_bytes": "uniqueBytes",
    "size_mean": "sizeMean",
    "read_frac": "readFrac",
    "seq_frac": "seqFrac",
    "process_num": "processNum",
}
#: each parameter's axis in words
AXIS_WORDS = {
    "unique_bytes": "uniqueBytes (bytes touched per node)",
    "size_mean": "sizeMean (mean request size, bytes)",
    "read_frac": "readFrac (share of requests that read)",
    "seq_frac": "seqFrac (share of requests that continue the previous one)",
    "process_num": "processNum (processes issuing requests)",
}
LOG_SCALE = {"unique_bytes", "size_mean", "process_num"}
REGIMES = ("cache", "device")
SHAPE_PARAMETERS = PARAMETERS[1:]  # swept in each regime
UNIT = 512  # the kernel's request-size and offset unit
#: the self-scaling check measures request rates at the smallest request size and at
#: this many times it; the advisor charges a request between the two on the line
#: through them (reports/advisor.py, request_rate_at_size)
REQUEST_SIZE_STEP = 4
#: the direction curves: each of DIRECTED_PARAMETERS swept at each regime's focal point
#: with this readFrac
DIRECTIONS = {"read": 1.0, "write": 0.0}
DIRECTED_PARAMETERS = ("size_mean", "seq_frac", "process_num")
#: unique(direction, unique_bytes, unique_from): one direction's throughput at
#: unique_bytes over its throughput at unique_from (Model.direction_unique_ratio)
UniqueRatio = Callable[[str, float, float], float]
#: a footprint this much resident after its measurement was held by the page cache
HELD = 0.9


class SelfScaleError(ValueError):
    """Bad input to the self-scaling algorithm; the message is one line."""


# ---- workloads -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    """One point of the five-parameter workload space."""

    unique_bytes: int
    size_mean: int
    read_frac: float
    seq_frac: float
    process_num: int

    def __post_init__(self):
        checks = (
            (
                "unique_bytes",
                isinstance(self.unique_bytes, (int, np.integer)) and self.unique_bytes >= UNIT,
                "an integer number of bytes, at least 512",
            ),
            (
                "size_mean",
                isinstance(self.size_mean, (int, np.integer)) and UNIT <= self.size_mean <= GIB,
                "an integer number of bytes from 512 to 1 GiB",
            ),
            ("read_frac", _is_fraction(self.read_frac), "a fraction from 0 to 1"),
            ("seq_frac", _is_fraction(self.seq_frac), "a fraction from 0 to 1"),
            (
                "process_num",
                isinstance(self.process_num, (int, np.integer)) and self.process_num >= 1,
                "an integer of at least 1",
            ),
        )
        for name, ok, expected in checks:
            if not ok:
                raise SelfScaleError(
                    f"workload {PAPER_NAMES[name]}: expected {expected}, got "
                    f"{getattr(self, name)!r}"
                )

    def get(self, name: str) -> float:
        return getattr(self, name)

    def with_value(self, name: str, value: float) -> Workload:
        """This workload with one parameter changed (rounded to what the kernel runs)."""
        return replace(self, **{name: _kernel_value(name, value)})

    def as_dict(self) -> dict[str, float]:
        return {
            k: (int(v) if k in ("unique_bytes", "size_mean", "process_num") else float(v))
            for k, v in asdict(self).items()
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "workload") -> Workload:
        if not isinstance(data, dict):
            raise SelfScaleError(f"{where}: expected a mapping of the five parameters")
        missing = [PAPER_NAMES[p] for p in PARAMETERS if p not in data]
        if missing:
            raise SelfScaleError(f"{where}: missing {', '.join(missing)}")
        try:
            return cls(**{p: _kernel_value(p, data[p]) for p in PARAMETERS})
        except (TypeError, ValueError) as exc:
            raise SelfScaleError(f"{where}: {exc}") from None

    @property
    def memo_key(self) -> str:
        """The point's five values as a kept prediction's key (Model.remember_predictions);
        made once per point (the advisor's form looks each point up in every model; the
        point is immutable, so its key is kept beside its fields)."""
        if "_memo_key" not in self.__dict__:
            self.__dict__["_memo_key"] = (
                f"{self.unique_bytes}:{self.size_mean}:{float(self.read_frac)!r}:"
                f"{float(self.seq_frac)!r}:{self.process_num}"
            )
        return self.__dict__["_memo_key"]

    def kernel_point(self) -> str:
        """The kernel's ``--point`` argument: uniqueBytes:sizeMean:readFrac:seqFrac:processNum."""
        return (
            f"{self.unique_bytes}:{self.size_mean}:{self.read_frac:.6g}:"
            f"{self.seq_frac:.6g}:{self.process_num}"
        )

    def words(self) -> str:
        return (
            f"uniqueBytes {size_words(self.unique_bytes)}, sizeMean "
            f"{size_words(self.size_mean)}, readFrac {self.read_frac:.2f}, seqFrac "
            f"{self.seq_frac:.2f}, processNum {self.process_num}"
        )


def _is_fraction(value):
    return (
        isinstance(value, (int, float, np.floating))
        and not isinstance(value, bool)
        and 0.0 <= float(value) <= 1.0
    )


def _kernel_value(name, value):
    """A parameter value as the kernel runs it: sizes in whole units, processes whole."""
    if isinstance(value, bool):
        raise SelfScaleError(f"{PAPER_NAMES.get(name, name)}: expected a number, got {value!r}")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise SelfScaleError(
            f"{PAPER_NAMES.get(name, name)}: expected a number, got {value!r}"
        ) from None
    if not math.isfinite(value):
        raise SelfScaleError(
            f"{PAPER_NAMES.get(name, name)}: expected a finite number, got {value!r}"
        )
    if name in ("unique_bytes", "size_mean"):
        return max(UNIT, int(round(value / UNIT)) * UNIT)
    if name == "process_num":
        return max(1, int(round(value)))
    return min(1.0, max(0.0, round(value, 6)))


def value_token(name: str, value: float) -> str:
    """The grid value in a figure name: sizes as tokens, fractions as percent."""
    if name in ("unique_bytes", "size_mean"):
        return size_token(value)
    if name == "process_num":
        return str(int(value))
    return f"{int(round(float(value) * 100))}pct"


def value_words(name: str, value: float) -> str:
    if name in ("unique_bytes", "size_mean"):
        return size_words(value)
    if name == "process_num":
        return str(int(value))
    return f"{float(value):.2f}"


# ---- the domain ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Domain:
    """Where each parameter may go, and the fixed grid its sweeps use.

    Grids are fixed (powers of ``size_step``/``unique_step`` for sizes, steps of
    ``fraction_step`` for fractions, doubling processes) so that a curve point is the
    same figure from one night to the next; the search adapts which grid points it
    measures, not where they are."""

    unique_bytes: tuple = (MIB, 4 * GIB)
    size_mean: tuple = (KIB, 16 * MIB)
    process_num: tuple = (1, 8)
    #: uniqueBytes's grid is finer than the others (a knee can be sharp): the first
    #: round sweeps every other point of it, later rounds every point of its useful range
    unique_step: float = math.sqrt(2.0)
    size_step: float = 4.0
    fraction_step: float = 0.25
    size_spread: float = 0.5

    def __post_init__(self):
        for name in ("unique_bytes", "size_mean", "process_num"):
            lo, hi = getattr(self, name)
            if not (lo >= 1 and hi >= lo):
                raise SelfScaleError(
                    f"domain {PAPER_NAMES[name]}: expected 1 <= low <= high, got {lo}..{hi}"
                )
        if self.unique_bytes[0] < UNIT or self.size_mean[0] < UNIT:
            raise SelfScaleError("domain: uniqueBytes and sizeMean start at 512 bytes at least")
        if not (self.unique_step > 1 and self.size_step > 1 and 0 < self.fraction_step <= 1):
            raise SelfScaleError(
                "domain: steps must be more than 1 (sizes) and in (0, 1] (fractions)"
            )
        if not 0 <= self.size_spread < 1:
            raise SelfScaleError(
                f"domain size_spread: expected a number in [0, 1), got {self.size_spread}"
            )

    @classmethod
    def for_node(
        cls,
        memory_bytes: int,
        free_bytes: int,
        max_processes: int,
        rules: Rules | None = None,
        unique_max: int | None = None,
        **overrides: Any,
    ) -> Domain:
        """The domain on a node: uniqueBytes up to ``rules.memory_factor`` times its
        memory (the knee between the page cache and the device lies below), and never
        more than ``rules.free_space_fraction`` of the target's free space; or up to
        ``unique_max`` when a workload entry names one."""
        rules = rules or Rules()
        if memory_bytes <= 0:
            raise SelfScaleError(
                f"node memory: expected a positive number of bytes, got {memory_bytes}"
            )
        if max_processes < 1:
            raise SelfScaleError(f"processes: expected at least 1, got {max_processes}")
        bound = unique_max or rules.memory_factor * memory_bytes
        room = rules.free_space_fraction * max(0, free_bytes)
        hi = int(min(bound, room) // MIB * MIB)
        lo = overrides.pop("unique_min", MIB)
        if hi < 4 * lo:
            raise SelfScaleError(
                f"uniqueBytes: the target has room for {size_words(room)} "
                f"({rules.free_space_fraction:.0%} of its free space), less "
                f"than the {size_words(4 * lo)} a search needs"
            )
        return cls(unique_bytes=(lo, hi), process_num=(1, int(max_processes)), **overrides)

    def bounds(self, name: str) -> tuple[float, float]:
        if name in ("read_frac", "seq_frac"):
            return (0.0, 1.0)
        return getattr(self, name)

    def grid(self, name: str) -> Sequence[float]:
        """The fixed grid of a parameter, low to high, both bounds included."""
        lo, hi = self.bounds(name)
        if name in ("read_frac", "seq_frac"):
            n = int(round(1.0 / self.fraction_step))
            return [round(k / n, 6) for k in range(n + 1)]
        if name == "process_num":
            # every count up to 4, then doubling: the cliff where ranks outnumber the
            # cores lies at a small count on most nodes, and a curve interpolated
            # across it (2 to 4) would put a count of 3 half-way down the cliff
            values, k = [], 1
            while k < hi:
                if k >= lo:
                    values.append(k)
                k = k + 1 if k < 4 else k * 2
            return values + [int(hi)]
        step = self.unique_step if name == "unique_bytes" else self.size_step
        values, v = [], float(lo)
        while v < hi * (1 - 1e-9):
            values.append(_kernel_value(name, v))
            v *= step
        values.append(_kernel_value(name, hi))
        return sorted(set(values))

    def middle(self, name: str) -> float:
        """The middle of a parameter's range: geometric for sizes and processes."""
        lo, hi = self.bounds(name)
        if name in LOG_SCALE:
            return _kernel_value(name, math.sqrt(lo * hi))
        return _kernel_value(name, (lo + hi) / 2)

    def largest_size(self, unique_bytes: float) -> int:
        """The largest sizeMean whose requests fit in uniqueBytes (the kernel's rule)."""
        return int(unique_bytes / (1 + self.size_spread)) // UNIT * UNIT

    def fits(self, workload: Workload) -> bool:
        return (
            workload.size_mean <= self.largest_size(workload.unique_bytes)
            and workload.process_num <= self.process_num[1]
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Domain:
        data = dict(data)
        for key in ("unique_bytes", "size_mean", "process_num"):
            if key in data:
                data[key] = tuple(data[key])
        return cls(**data)


@dataclass(frozen=True)
class Rules:
    """The explicit rules of the search, each a documented parameter."""

    #: focal value: where a curve sits this far from its minimum to its maximum
    focal_fraction: float = 0.5
    #: useful range: from the last point within this share of the span of the curve's
    #: low end to the first point within it of its high end
    range_fraction: float = 0.1
    #: a curve whose span is below this share of its maximum is flat: its focal value is
    #: the middle of its range and its useful range the whole domain
    flat_span: float = 0.15
    #: a knee needs the uniqueBytes curve to fall to this share of its cache level or less
    knee_drop: float = 0.7
    #: the cache regime's focal uniqueBytes sits this factor below the knee
    regime_margin: float = 8.0
    #: the search has settled when no focal value moved more than this many grid steps
    #: (focal values are measured grid points: one step is a rule's value near the
    #: middle between two of them, which a noisy point tips either way)
    settle_steps: float = 1.0
    max_rounds: int = 3
    #: uniqueBytes goes up to this multiple of the node's memory...
    memory_factor: float = 1.25
    #: ...and never beyond this share of the target's free space
    free_space_fraction: float = 0.5
    #: after the rounds, sweep sizeMean at each regime's focal point with readFrac 1 and 0
    #: (the direction curves: Regime.size_ratio)
    direction_curves: bool = True
    #: after the rounds, sweep uniqueBytes again at other sizeMean values, the smallest
    #: and the largest of the domain's among them (the size curves: size_curve_sizes,
    #: Model.unique_ratio), so that how throughput falls with the footprint follows the
    #: request size
    size_curves: bool = True
    #: ...and with readFrac 1 and 0 (the direction uniqueBytes curves:
    #: Model.direction_unique), so that it follows the mix of reads and writes too (a
    #: page cache that holds reads of gigabytes at one speed slows its writes 2-3x as
    #: the dirty data grows).  Off by default: in the nightly searches here they
    #: lowered the largest held-out error on the node-local disk (62% to 39%) but
    #: raised the median on both targets (5.9% to 8.0%; on the SAN 23.8% to 36.9%,
    #: whose reads-only curve spans 160x, client cache to servers; docs/benchmarks.md)
    direction_unique_curves: bool = False
    #: after the curves, this many workloads spread over the whole domain (a Latin
    #: hypercube), measured only so that the correction of a prediction
    #: (Model.correction) has measured points near it: the curves' points lie on lines
    #: through the focal points, far from most workloads a job runs
    space_filling: int = 0

    def __post_init__(self):
        for name in (
            "focal_fraction",
            "range_fraction",
            "flat_span",
            "knee_drop",
            "free_space_fraction",
        ):
            value = getattr(self, name)
            if not 0 < value < 1:
                raise SelfScaleError(f"rule {name}: expected a number between 0 and 1, got {value}")
        if self.regime_margin <= 1 or self.memory_factor <= 0 or self.settle_steps <= 0:
            raise SelfScaleError(
                "rules: regime_margin must exceed 1, memory_factor and "
                "settle_steps must be positive"
            )
        if int(self.max_rounds) < 1:
            raise SelfScaleError(f"rule max_rounds: expected at least 1, got {self.max_rounds}")
        if int(self.space_filling) < 0:
            raise SelfScaleError(
                f"rule space_filling: expected 0 or more workloads, got {self.space_filling}"
            )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rules:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise SelfScaleError(
                f"rules: unknown {', '.join(unknown)}; expected some of {', '.join(sorted(known))}"
            )
        return cls(**data)


# ---- curves and their rules --------------------------------------------------------------------
def _axis(name, xs):
    xs = np.asarray(xs, dtype=float)
    return np.log(xs) if name in LOG_SCALE else xs


def _from_axis(name, a):
    return float(np.exp(a)) if name in LOG_SCALE else float(a)


@dataclass
class Curve:
    """Throughput against one parameter, the others held at ``fixed``."""

    parameter: str
    xs: list
    ys: list
    fixed: dict = field(default_factory=dict)
    regime: str | None = None

    def __post_init__(self):
        if self.parameter not in PARAMETERS:
            raise SelfScaleError(f"curve: unknown parameter {self.parameter!r}")
        pairs = sorted(zip((float(x) for x in self.xs), (float(y) for y in self.ys)))
        if not pairs:
            raise SelfScaleError(f"curve of {PAPER_NAMES[self.parameter]}: no points")
        bad = [y for _, y in pairs if not (math.isfinite(y) and y > 0)]
        if bad:
            raise SelfScaleError(
                f"curve of {PAPER_NAMES[self.parameter]}: throughput must be positive, got {bad[0]}"
            )
        self.xs = [x for x, _ in pairs]
        self.ys = [y for _, y in pairs]

    def _scaled(self):
        """(xs in the parameter's scale, log ys), computed once (a curve is not changed
        after it is made): a page build asks hundreds of thousands of points of the same
        few curves."""
        if "_scaled_cache" not in self.__dict__:
            log = self.parameter in LOG_SCALE
            self.__dict__["_scaled_cache"] = (
                [math.log(x) if log else x for x in self.xs],
                [math.log(y) for y in self.ys],
            )
        return self.__dict__["_scaled_cache"]

    def at(self, x: float) -> float:
        """Interpolated throughput at x: straight lines in the parameter's scale (log for
        sizes and processes) and in log throughput; flat beyond the measured ends.  Kept
        per x (a curve is not changed after it is made): every prediction of a model
        asks its curves at the focal point, and the advisor's form at a few values."""
        if len(self.xs) == 1:
            return self.ys[0]
        x = float(x)
        kept = self.__dict__.setdefault("_at_cache", {})
        if x not in kept:
            kept[x] = self._at(x)
        return kept[x]

    def _at(self, x: float) -> float:
        axis, logs = self._scaled()
        x = min(max(float(x), self.xs[0]), self.xs[-1])
        a = math.log(x) if self.parameter in LOG_SCALE else x
        k = min(max(bisect.bisect_right(axis, a), 1), len(axis) - 1)
        width = axis[k] - axis[k - 1]
        share = (a - axis[k - 1]) / width if width > 0 else 0.0
        return math.exp(logs[k - 1] + share * (logs[k] - logs[k - 1]))

    @property
    def span(self) -> float:
        return (max(self.ys) - min(self.ys)) / max(self.ys)

    def smoothed(self, split: float | None = None) -> Curve:
        """The curve with each point's log throughput averaged with its two neighbours'
        (the ends with their one), never across ``split`` (a knee): on a fine grid,
        one noisy point otherwise sets every ratio taken at it."""
        if len(self.xs) < 3:
            return self
        logs = np.log(self.ys)
        side = [split is not None and x > split for x in self.xs]
        ys = []
        for k in range(len(logs)):
            near = [j for j in (k - 1, k, k + 1) if 0 <= j < len(logs) and side[j] == side[k]]
            ys.append(float(np.exp(np.mean(logs[near]))))
        return Curve(self.parameter, list(self.xs), ys, dict(self.fixed), self.regime)

    def as_dict(self) -> dict[str, Any]:
        return {
            "parameter": self.parameter,
            "regime": self.regime,
            "xs": list(self.xs),
            "ys": list(self.ys),
            "fixed": dict(self.fixed),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Curve:
        return cls(
            parameter=data["parameter"],
            xs=list(data["xs"]),
            ys=list(data["ys"]),
            fixed=dict(data.get("fixed") or {}),
            regime=data.get("regime"),
        )


def focal_value(curve: Curve, rules: Rules, domain: Domain | None = None) -> float:
    """The value where the curve sits ``rules.focal_fraction`` of the way from its
    minimum to its maximum, found walking from the minimum towards the maximum and
    interpolated in the parameter's scale; a flat curve's focal value is the middle of
    its range."""
    name = curve.parameter
    xs, ys = curve.xs, curve.ys
    if curve.span < rules.flat_span or len(xs) < 2:
        if domain is not None:
            return domain.middle(name)
        a = _axis(name, [xs[0], xs[-1]])
        return _kernel_value(name, _from_axis(name, a.mean()))
    lo_i, hi_i = int(np.argmin(ys)), int(np.argmax(ys))
    level = ys[lo_i] + rules.focal_fraction * (ys[hi_i] - ys[lo_i])
    step = 1 if hi_i > lo_i else -1
    axis = _axis(name, xs)
    for k in range(lo_i, hi_i, step):
        y0, y1 = ys[k], ys[k + step]
        if (y0 - level) * (y1 - level) <= 0 and y1 != y0:
            t = (level - y0) / (y1 - y0)
            return _kernel_value(name, _from_axis(name, axis[k] + t * (axis[k + step] - axis[k])))
    return _kernel_value(name, xs[hi_i])


def useful_range(curve: Curve, rules: Rules) -> tuple[float, float]:
    """(low, high): the part of the swept values over which throughput changes: from
    the first to the last grid step that moves the curve by more than
    ``rules.range_fraction`` of its span, both in log throughput (as the model
    interpolates: from 20 to 80 MiB/s at the small-request end of a curve that reaches
    2 GiB/s is a step of 4x, which a share of the span in MiB/s calls flat, and a curve
    cut there predicts small requests at the throughput of larger ones).  Outside it the
    curve is flat within that share on both sides; a flat curve's useful range is the
    whole sweep."""
    xs, ys = curve.xs, curve.ys
    if curve.span < rules.flat_span or len(xs) < 2:
        return xs[0], xs[-1]
    logs = [math.log(y) for y in ys]
    span = max(logs) - min(logs)
    moving = [
        k for k in range(len(xs) - 1) if abs(logs[k + 1] - logs[k]) > rules.range_fraction * span
    ]
    if not moving:  # many small steps add up: the whole sweep
        return xs[0], xs[-1]
    return xs[moving[0]], xs[moving[-1] + 1]


@dataclass
class Knee:
    """Where the uniqueBytes curve falls from the cache level to the device level."""

    unique_bytes: int
    cache_level: float
    device_level: float
    throughput: float  # the curve at the knee
    #: the share of the largest uniqueBytes the page cache held after its measurement
    #: (None: not known): at HELD or more, the upper regime is still the page cache's
    top_resident: float | None = None

    @property
    def upper_in_page_cache(self) -> bool:
        return self.top_resident is not None and self.top_resident >= HELD

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def find_knee(
    curve: Curve, rules: Rules, between: tuple[float, float] | None = None
) -> Knee | None:
    """The knee of a uniqueBytes curve, or None when the curve does not fall to
    ``rules.knee_drop`` of its cache level within the range.

    The rule: the best least-squares fit to log throughput against log uniqueBytes of
    one logistic step, ``log T = log D + (log C - log D) / (1 + (U / K) ** (1 / w))``,
    over knees K from the second measured point to half-way between the last two (so
    both regimes hold a measured point) and widths w of 1/4 to 2 natural-log units;
    C is the cache level, D the device level, and K, where the step is half-way in log
    throughput, the knee.  One step fits the largest fall, so a smaller one (from a CPU
    cache to memory, say) or a noisy point does not move it.  But a fall from the CPU
    caches spread over several points can fit better than the page cache's over the
    last two (a nightly search here put the knee at 65 MiB on a node of 24 GiB, and
    every footprint between them was predicted from the device's curves): ``between``
    (uniqueBytes, uniqueBytes), where the page cache stopped holding the footprint
    (:func:`page_cache_edge`), keeps the knee's centre there."""
    if curve.parameter != "unique_bytes":
        raise SelfScaleError("find_knee: expected a uniqueBytes curve")
    if len(curve.xs) < 4:
        return None
    lx, ly = np.log(curve.xs), np.log(curve.ys)
    lo, hi = lx[1], (lx[-2] + lx[-1]) / 2
    if between is not None:
        lo, hi = max(lo, math.log(between[0])), min(hi, math.log(between[1]))
        assert lo <= hi, "two neighbouring points of the curve"
    best = None
    for width in (0.25, 0.5, 1.0, 2.0):
        for centre in np.linspace(lo, hi, 8 * len(lx)):
            step = 1.0 / (1.0 + np.exp(np.clip((lx - centre) / width, -50, 50)))
            design = np.column_stack([np.ones_like(lx), step])
            coef, *_ = np.linalg.lstsq(design, ly, rcond=None)
            error = float(np.sum((design @ coef - ly) ** 2))
            if best is None or error < best[0]:
                best = (error, centre, coef)
    assert best is not None  # the loops above always run
    _, centre, (device, height) = best
    if height <= 0 or math.exp(-height) > rules.knee_drop:
        return None
    knee = _kernel_value("unique_bytes", math.exp(centre))
    return Knee(
        unique_bytes=knee,
        cache_level=float(math.exp(device + height)),
        device_level=float(math.exp(device)),
        throughput=curve.at(knee),
    )


def page_cache_edge(
    xs: Sequence[float], held: Sequence[float | None]
) -> tuple[float, float] | None:
    """(uniqueBytes, uniqueBytes): the largest footprint the page cache held (``held``:
    the share of each footprint ``xs`` it held, HELD or more) and the next one measured,
    which it did not; None where it held the largest, held none, or a share is not
    known."""
    shares = [h for h in held if h is not None]
    if not xs or len(shares) != len(xs) or shares[-1] >= HELD:
        return None
    last = max((k for k, h in enumerate(shares) if h >= HELD), default=None)
    return None if last is None else (xs[last], xs[last + 1])


def regime_focals(
    knee: Knee | None, curve: Curve | None, domain: Domain, rules: Rules
) -> dict[str, float]:
    """{regime: focal uniqueBytes}.  The cache regime's sits ``regime_margin`` below the
    knee, on the grid; the device regime's is the top of the range, beyond the node's
    memory (``Rules.memory_factor``), where neither reads nor writes fit the page cache
    whatever the other parameters (the knee itself moves with them: the page cache
    holds reads up to about the node's memory, dirty pages only up to the kernel's
    write-back limits).  Without a knee there is one regime ('cache'), at the curve's
    focal value.  With a curve, the focal uniqueBytes are points it measured."""
    grid = domain.grid("unique_bytes") if curve is None else [int(x) for x in curve.xs]
    if knee is None:
        assert curve is not None  # without a knee, the curve says where the focal point is
        return {"cache": _nearest(grid, focal_value(curve, rules, domain), "unique_bytes")}
    below = [u for u in grid if u <= knee.unique_bytes / rules.regime_margin]
    return {"cache": below[-1] if below else grid[0], "device": grid[-1]}


def _nearest(grid, value, name):
    axis = _axis(name, grid)
    return grid[int(np.argmin(np.abs(axis - _axis(name, [value])[0])))]


def grid_steps(name: str, a: float, b: float, domain: Domain) -> float:
    """How many grid steps apart two values of a parameter are."""
    if name in LOG_SCALE:
        step = {
            "unique_bytes": domain.unique_step,
            "size_mean": domain.size_step,
            "process_num": 2.0,
        }[name]
        return abs(math.log(max(a, 1e-12) / max(b, 1e-12))) / math.log(step)
    return abs(a - b) / domain.fraction_step


# ---- the model -------------------------------------------------------------------------------
@dataclass
class Regime:
    """One regime of the model: its focal point, the throughput there, and each shape
    parameter's curve through it."""

    name: str
    focal: Workload
    throughput: float
    curves: dict  # {parameter: Curve} for the shape parameters
    #: {"read": {parameter: Curve}, "write": {...}}: each of DIRECTED_PARAMETERS swept at
    #: the focal point with readFrac 1 and 0 (DIRECTIONS); empty in a model measured
    #: without them
    directions: dict = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "focal": self.focal.as_dict(),
            "throughput": self.throughput,
            "curves": {p: c.as_dict() for p, c in self.curves.items()},
            "directions": {
                d: {p: c.as_dict() for p, c in curves.items()}
                for d, curves in self.directions.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Regime:
        return cls(
            name=data["name"],
            focal=Workload.from_dict(data["focal"]),
            throughput=float(data["throughput"]),
            curves={p: Curve.from_dict(c) for p, c in data["curves"].items()},
            directions={
                d: {p: Curve.from_dict(c) for p, c in curves.items()}
                for d, curves in (data.get("directions") or {}).items()
            },
        )

    def shape_ratio(self, workload: Workload, unique: UniqueRatio | None = None) -> float:
        """Throughput at ``workload`` over throughput at the focal point, by the shape
        curves (uniqueBytes aside).  The product form multiplies each curve's ratio,
        every curve measured at the focal readFrac.  With the direction curves, reads and
        writes are predicted apart, each by the product of its own curves (on a FUSE file
        system a small write costs a round trip where a small read comes from the page
        cache, and reads scale with processes where writes do not), and mixed as the
        workload mixes them (:meth:`directed`).  With ``unique`` (each direction's
        uniqueBytes ratio, :meth:`Model.direction_unique_ratio`), each direction also
        falls with the footprint by its own curve, and the ratio is taken to the focal
        point at the workload's uniqueBytes: the fall at the focal mix is the uniqueBytes
        curves' (:meth:`Model.unique_ratio`), and this is how the workload's mix differs
        from the focal one there."""
        if not self.directions:
            return math.prod(
                self.curves[p].at(workload.get(p)) / self.curves[p].at(self.focal.get(p))
                for p in SHAPE_PARAMETERS
            )
        if unique is None:
            return self.directed(workload) / self.directed(self.focal)
        at_focal = self.focal.with_value("unique_bytes", workload.unique_bytes)
        return self.directed(workload, unique) / self.directed(at_focal, unique)

    def _direction_seconds(
        self, workload: Workload, unique: UniqueRatio | None = None
    ) -> tuple[float, float]:
        """(seconds per byte of the workload's reads, of its writes), weighted by their
        shares: each direction's throughput the product of its own curves (and of its
        uniqueBytes ratio from the focal uniqueBytes, with ``unique``)."""
        seconds = []
        for direction in DIRECTIONS:
            curves = self.directions[direction]
            level = curves["size_mean"].at(self.focal.size_mean)
            for p in DIRECTED_PARAMETERS:
                level *= curves[p].at(workload.get(p)) / curves[p].at(self.focal.get(p))
            if unique is not None:
                level *= unique(direction, workload.unique_bytes, self.focal.unique_bytes)
            share = workload.read_frac if direction == "read" else 1.0 - workload.read_frac
            seconds.append(share / level)
        return seconds[0], seconds[1]

    def directed(self, workload: Workload, unique: UniqueRatio | None = None) -> float:
        """The direction curves' throughput at ``workload`` (uniqueBytes aside, unless
        ``unique`` is given: :meth:`_direction_seconds`): its reads take their time and
        its writes theirs, less the part of the shorter that runs beside the longer
        (:meth:`overlap`: a write-behind cache writes while the reads go on):
        seconds = reads + writes - overlap x min(reads, writes)."""
        reads, writes = self._direction_seconds(workload, unique)
        return 1.0 / (reads + writes - self.overlap(workload) * min(reads, writes))

    def overlap(self, workload: Workload) -> float:
        """The share of the shorter direction's time that ran beside the longer (-1 to 1:
        0 where reads and writes add up, 1 where the shorter is hidden, below 0 where
        mixing costs more): the readFrac curve's at the workload's readFrac, moved by how
        the share changes along each directed parameter's own curve from the focal value
        to the workload's (:meth:`_overlap_lines`).  With more processes, one process
        reads while another waits for a write: the share grows with processNum, which
        the processNum curve (measured at the focal readFrac, reads and writes mixed)
        shows beside the direction curves; so along each parameter's own curve the
        prediction is that curve's measurement, as in the product form."""
        lines = self._overlap_lines()
        if "read_frac" not in lines:
            return 0.0
        share = lines["read_frac"](workload.read_frac)
        for p in DIRECTED_PARAMETERS:
            if p in lines:
                share += lines[p](workload.get(p))
        return max(-1.0, min(1.0, share))

    def _overlap_lines(self) -> dict[str, Callable[[float], float]]:
        """{parameter: share at a value}: for readFrac and each directed parameter, the
        overlap share of each point of its curve (a mixed measurement) against the
        direction curves' reads and writes at that point, interpolated between the points
        (in the parameter's scale) whose shorter direction takes any time; a directed
        parameter's relative to its share at the focal value (what :meth:`overlap` adds).
        Made once: every prediction asks them."""
        if "_overlap_cache" not in self.__dict__:
            lines = {}
            for q in ("read_frac", *DIRECTED_PARAMETERS):
                curve = self.curves[q]
                at = self.focal
                for p, value in curve.fixed.items():
                    if p in DIRECTED_PARAMETERS or p == "read_frac":
                        at = at.with_value(p, value)
                xs, shares = [], []
                for x, y in zip(curve.xs, curve.ys):
                    reads, writes = self._direction_seconds(at.with_value(q, x))
                    if min(reads, writes) > 0:
                        xs.append(x)
                        shares.append(
                            max(-1.0, min(1.0, (reads + writes - 1.0 / y) / min(reads, writes)))
                        )
                if xs:
                    line = _interpolator(q, xs, shares)
                    if q != "read_frac":
                        shares = [v - line(self.focal.get(q)) for v in shares]
                        line = _interpolator(q, xs, shares)
                    lines[q] = line
            self.__dict__["_overlap_cache"] = lines
        return self.__dict__["_overlap_cache"]


def _interpolator(name: str, xs: Sequence[float], ys: Sequence[float]) -> Callable[[float], float]:
    """y at any x, straight lines between the points in the parameter's scale (log for
    sizes and processes), flat beyond the ends."""
    axis = _axis(name, xs)
    return lambda x: float(np.interp(_axis(name, [x])[0], axis, ys))


@dataclass
class Model:
    """Predicted throughput (bytes/s) of any workload, from the one-parameter curves."""

    unique_curve: Curve
    regimes: dict  # {"cache": Regime, "device": Regime (when a knee was found)}
    knee: Knee | None = None
    #: the error measured past the range: {(parameter, band): (median error, workloads)}
    #: (FAR_BANDS; the search's far validation)
    far_errors: dict = field(default_factory=dict)
    #: uniqueBytes curves measured at other sizeMean values than ``unique_curve`` (each
    #: at its ``fixed["size_mean"]``, the rest at unique_curve's): a footprint's fall
    #: past a cache differs with the request size (the uniqueBytes x sizeMean
    #: interaction, which no product of one-parameter curves holds); empty in a model
    #: measured without them (:meth:`unique_ratio`)
    size_curves: list = field(default_factory=list)
    #: {"read": Curve, "write": Curve}: the uniqueBytes curve measured again with readFrac
    #: 1 and 0 (DIRECTIONS), the rest at unique_curve's values: reads and writes fall
    #: with the footprint differently (a page cache slows its writes as the dirty data
    #: grows, not its reads); empty in a model measured without them
    #: (:meth:`direction_unique_ratio`)
    direction_unique: dict = field(default_factory=dict)
    #: [(Workload, bytes/s)]: every point the search measured (the median of its
    #: passes).  The curves miss their own search's points by a median of 15-25% (the
    #: parameters interact in ways no one-parameter curve holds), and those misses vary
    #: slowly over the workload space: a prediction is corrected by the curves' error
    #: at the measured points nearest it (:meth:`correction`).  Empty: the curves alone.
    points: list = field(default_factory=list)

    def __post_init__(self):
        if "cache" not in self.regimes:
            raise SelfScaleError("model: it needs at least the cache regime")
        for regime in self.regimes.values():
            missing = [PAPER_NAMES[p] for p in SHAPE_PARAMETERS if p not in regime.curves]
            if missing:
                raise SelfScaleError(
                    f"model: the {regime.name} regime has no curve of {', '.join(missing)}"
                )
        for curve in self.size_curves:
            if curve.parameter != "unique_bytes" or not curve.fixed.get("size_mean"):
                raise SelfScaleError(
                    "model: a size curve must be a uniqueBytes curve with its sizeMean in fixed"
                )
        if self.direction_unique and (
            set(self.direction_unique) != set(DIRECTIONS)
            or any(c.parameter != "unique_bytes" for c in self.direction_unique.values())
        ):
            raise SelfScaleError(
                "model: the direction uniqueBytes curves must be one uniqueBytes curve "
                f"for each of {', '.join(DIRECTIONS)}"
            )

    def predict_in(self, workload: Workload, regime_name: str) -> float:
        """Within one regime: the focal throughput, times the shape curves' ratio at the
        focal uniqueBytes (:meth:`Regime.shape_ratio`), times the uniqueBytes ratio from
        the focal uniqueBytes to the workload's at the workload's sizeMean
        (:meth:`unique_ratio`).  Where only uniqueBytes and sizeMean differ from the
        focal point, the two ratios are measured ones, T(uf, s)/T(uf, sf) and
        T(u, s)/T(uf, s): their product is T(u, s)/T(uf, sf), with no product-form
        assumption."""
        r = self.regimes[regime_name]
        value = r.throughput * self.unique_ratio(workload, r.focal.unique_bytes)
        unique = self.direction_unique_ratio if self.direction_unique else None
        return value * r.shape_ratio(workload, unique)

    def direction_unique_ratio(
        self, direction: str, unique_bytes: float, unique_from: float
    ) -> float:
        """One direction's throughput at ``unique_bytes`` over its throughput at
        ``unique_from``, by its direction uniqueBytes curve, smoothed as the others
        (:meth:`unique_ratio`)."""
        if "_direction_lines_cache" not in self.__dict__:
            split = self.knee.unique_bytes if self.knee else None
            self.__dict__["_direction_lines_cache"] = {
                d: c.smoothed(split) for d, c in self.direction_unique.items()
            }
        curve = self.__dict__["_direction_lines_cache"][direction]
        return curve.at(unique_bytes) / curve.at(unique_from)

    def unique_ratio(self, workload: Workload, unique_from: int) -> float:
        """Throughput at the workload's uniqueBytes over throughput at ``unique_from``,
        at the workload's sizeMean: each uniqueBytes curve's log ratio, interpolated in
        log sizeMean between the sizeMeans they were measured at (the nearest curve's
        beyond them).  Curves smoothed (their grid is fine, and a ratio to one noisy
        point at the focal uniqueBytes would move every prediction of the regime)."""
        sizes, curves = self._unique_lines()
        size = math.log(workload.size_mean)
        k = bisect.bisect_left(sizes, size)
        # only the curves the interpolation uses: one beyond the ends, two between
        if k == 0 or k == len(sizes):
            near = [curves[min(k, len(sizes) - 1)]]
        else:
            near = curves[k - 1 : k + 1]
        ratios = [math.log(c.at(workload.unique_bytes) / c.at(unique_from)) for c in near]
        if len(ratios) == 1:
            return math.exp(ratios[0])
        share = (size - sizes[k - 1]) / (sizes[k] - sizes[k - 1])
        return math.exp(ratios[0] + share * (ratios[1] - ratios[0]))

    def product_form(self) -> Model:
        """This model without its direction and size curves nor its correction: the
        paper's product form, which the search's validation measures beside it."""
        return replace(
            self,
            regimes={k: replace(r, directions={}) for k, r in self.regimes.items()},
            size_curves=[],
            direction_unique={},
            points=[],
        )

    def correction(self, workload: Workload) -> float:
        """The factor that corrects the curves' prediction of ``workload``: the curves'
        error (measured over predicted, in log) at the NEIGHBOURS measured points nearest
        it, weighted by the inverse of their distance (in the five parameters, each
        scaled to its spread over the points; sizes and processes in log); at a measured
        point, its own error.  1.0 without points.  What it does to the held-out error:
        docs/benchmarks.md, "The curves corrected by their own points"."""
        if not self.points:
            return 1.0
        if "_correction_cache" not in self.__dict__:
            coordinates = _coordinates([w for w, _ in self.points])
            spread = coordinates.std(axis=0)
            spread[spread == 0] = 1.0
            errors = np.log(
                [value / self._curves_predict(w) for w, value in self.points], dtype=float
            )
            self.__dict__["_correction_cache"] = (coordinates / spread, spread, errors)
        scaled, spread, errors = self.__dict__["_correction_cache"]
        distance = np.linalg.norm(scaled - _coordinates([workload])[0] / spread, axis=1)
        nearest = np.argsort(distance, kind="stable")[:NEIGHBOURS]
        on_point = nearest[distance[nearest] < 1e-9]
        if len(on_point):
            return float(np.exp(errors[on_point].mean()))
        weights = 1.0 / distance[nearest]
        return float(np.exp(np.dot(weights, errors[nearest]) / weights.sum()))

    def _unique_lines(self) -> tuple[list[float], list[Curve]]:
        """([log sizeMean], [smoothed uniqueBytes curve]), by sizeMean: unique_curve's and
        the size curves'; made once (a model is not changed after it is made; every
        prediction uses them).  unique_curve's sizeMean is the one it was measured at,
        or the cache regime's focal sizeMean (a model stored before the curves kept it)."""
        if "_lines_cache" not in self.__dict__:
            split = self.knee.unique_bytes if self.knee else None
            main_size = self.unique_curve.fixed.get(
                "size_mean", self.regimes["cache"].focal.size_mean
            )
            lines = {math.log(main_size): self.unique_curve.smoothed(split)}
            for curve in self.size_curves:
                lines.setdefault(math.log(curve.fixed["size_mean"]), curve.smoothed(split))
            ordered = sorted(lines.items(), key=lambda line: line[0])
            self.__dict__["_lines_cache"] = ([s for s, _ in ordered], [c for _, c in ordered])
        return self.__dict__["_lines_cache"]

    def regime_weight(self, workload: Workload) -> float:
        """0 in the cache regime, 1 in the device regime, between them in log uniqueBytes."""
        if "device" not in self.regimes:
            return 0.0
        lo = math.log(self.regimes["cache"].focal.unique_bytes)
        hi = math.log(self.regimes["device"].focal.unique_bytes)
        if hi <= lo:
            assert self.knee_bytes is not None  # a device regime comes with its knee
            return 0.0 if workload.unique_bytes <= self.knee_bytes else 1.0
        return min(1.0, max(0.0, (math.log(workload.unique_bytes) - lo) / (hi - lo)))

    @property
    def knee_bytes(self) -> int | None:
        return self.knee.unique_bytes if self.knee else None

    def measured_range(self) -> dict[str, tuple[float, float]]:
        """{parameter: (low, high)} the model's curves were measured over.  Computed
        once (the advisor's form asks it for every grid point); a copy is returned."""
        if "_range_cache" not in self.__dict__:
            ranges = {"unique_bytes": (min(self.unique_curve.xs), max(self.unique_curve.xs))}
            for regime in self.regimes.values():
                for p, curve in regime.curves.items():
                    lo, hi = ranges.get(p, (math.inf, -math.inf))
                    ranges[p] = (min(lo, min(curve.xs)), max(hi, max(curve.xs)))
            # the size curves measured their sizes too
            lo, hi = ranges["size_mean"]
            for curve in self.size_curves:
                size = curve.fixed["size_mean"]
                lo, hi = min(lo, size), max(hi, size)
            ranges["size_mean"] = (lo, hi)
            self.__dict__["_range_cache"] = ranges
        return dict(self.__dict__["_range_cache"])

    @property
    def per_process_ceiling(self) -> float:
        """The fastest throughput per process (bytes/s) of any measured point of the
        model: every curve point, the uniqueBytes curve's included, and the focal
        points.  A curve's processes are those it was measured with (``fixed``), or
        its regime's focal point's (a model rebuilt from stored figures).  Computed
        once."""
        if "_ceiling_cache" not in self.__dict__:
            self.__dict__["_ceiling_cache"] = self._per_process_ceiling()
        return self.__dict__["_ceiling_cache"]

    def _per_process_ceiling(self):
        def processes(curve: Curve, regime: Regime) -> int:
            return curve.fixed.get("process_num", regime.focal.process_num)

        cache = self.regimes["cache"]
        best = max(
            y / processes(curve, cache)
            for curve in [self.unique_curve, *self.size_curves, *self.direction_unique.values()]
            for y in curve.ys
        )
        for regime in self.regimes.values():
            best = max(best, regime.throughput / regime.focal.process_num)
            curves = list(regime.curves.items()) + [
                (p, c) for curves in regime.directions.values() for p, c in curves.items()
            ]
            for p, curve in curves:
                for x, y in zip(curve.xs, curve.ys):
                    best = max(best, y / (x if p == "process_num" else processes(curve, regime)))
        return best

    def remember_predictions(self, memo: MutableMapping[str, float]) -> None:
        """Keep this model's predictions in ``memo`` (workload's five values -> bytes/s)
        and answer from it first: a caller that keeps the memo across processes (the
        page build's cache, under a digest of the model) computes each point once."""
        self.__dict__["_memo"] = memo

    def predict(self, workload: Workload | dict[str, Any]) -> float:
        """Predicted throughput of a workload (bytes/s): the product form, at most
        per_process_ceiling per process."""
        if isinstance(workload, dict):
            workload = Workload.from_dict(workload)
        memo = self.__dict__.get("_memo")
        if memo is None:
            return self._predict(workload)
        key = workload.memo_key
        if key not in memo:
            memo[key] = self._predict(workload)
        return memo[key]

    def _predict(self, workload):
        value = self._curves_predict(workload) * self.correction(workload)
        return min(value, self.per_process_ceiling * workload.process_num)

    def _curves_predict(self, workload):
        """The curves' prediction, at most per_process_ceiling per process."""
        weight = self.regime_weight(workload)
        cache = self.predict_in(workload, "cache")
        if weight <= 0.0:
            value = cache
        elif weight >= 1.0:
            value = self.predict_in(workload, "device")
        else:
            device = self.predict_in(workload, "device")
            value = math.exp((1 - weight) * math.log(cache) + weight * math.log(device))
        return min(value, self.per_process_ceiling * workload.process_num)

    def as_dict(self) -> dict[str, Any]:
        return {
            "unique_curve": self.unique_curve.as_dict(),
            "regimes": {k: r.as_dict() for k, r in self.regimes.items()},
            "knee": self.knee.as_dict() if self.knee else None,
            "far_errors": [
                [p, band, *error] for (p, band), error in sorted(self.far_errors.items())
            ],
            "size_curves": [c.as_dict() for c in self.size_curves],
            "direction_unique": {d: c.as_dict() for d, c in self.direction_unique.items()},
            "points": points_as_rows(self.points),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Model:
        try:
            return cls(
                unique_curve=Curve.from_dict(data["unique_curve"]),
                regimes={k: Regime.from_dict(r) for k, r in data["regimes"].items()},
                knee=Knee(**data["knee"]) if data.get("knee") else None,
                far_errors={
                    (p, float(band)): (float(error), int(n))
                    for p, band, error, n in data.get("far_errors") or []
                },
                size_curves=[Curve.from_dict(c) for c in data.get("size_curves") or []],
                direction_unique={
                    d: Curve.from_dict(c) for d, c in (data.get("direction_unique") or {}).items()
                },
                points=points_from_rows(data.get("points") or []),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SelfScaleError(f"model: incomplete ({exc})") from None

    @classmethod
    def from_figures(
        cls, figures: Mapping[str, tuple[float | None, Mapping[str, Any] | None]]
    ) -> Model:
        """A model from stored figures: ``{name: (value, declaration)}``, value in the
        figure's unit, declaration the dict the store keeps (with ``chart``); figures
        without a ``selfscale`` entry are ignored.  SelfScaleError names what is missing."""
        curves: dict[tuple[str, str | None], list[tuple[float, float]]] = {}
        focal, knee, far, measured = {}, None, {}, []  # measured: the search's points
        directions: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
        at_sizes: dict[float, tuple[list[tuple[float, float]], dict[str, float]]] = {}
        direction_unique: dict[str, list[tuple[float, float]]] = {}
        fixed: dict[tuple[str, str | None, str | None], dict[str, float]] = {}
        for name, (value, declaration) in figures.items():
            chart = (declaration or {}).get("chart") or {}
            meta = chart.get("selfscale") if isinstance(chart, dict) else None
            if not meta or value is None:
                continue
            scale = float(meta.get("to_base", 1.0))
            role, parameter, regime = meta.get("role"), meta.get("parameter"), meta.get("regime")
            if role == "curve":
                point = (float(meta["x"]), float(value) * scale)
                direction = meta.get("direction")
                if meta.get("size_line"):
                    # a size curve: uniqueBytes at another sizeMean (Model.size_curves)
                    line, _ = at_sizes.setdefault(
                        float(meta["size_line"]), ([], dict(meta.get("fixed") or {}))
                    )
                    line.append(point)
                    continue
                fixed[parameter, regime, direction] = dict(meta.get("fixed") or {})
                if direction and regime is None:  # a direction uniqueBytes curve
                    direction_unique.setdefault(direction, []).append(point)
                elif direction:
                    directions.setdefault((regime, direction, parameter), []).append(point)
                else:
                    curves.setdefault((parameter, regime), []).append(point)
            elif role == "focal" and regime:
                workload = Workload.from_dict(meta["workload"], f"figure {name}")
                focal[regime] = (workload, float(value) * scale)
                measured += points_from_rows(meta.get("points") or [], f"figure {name}")
            elif role == "knee":
                knee = Knee(
                    unique_bytes=int(meta["x"]),
                    throughput=float(value) * scale,
                    cache_level=float(meta["cache_level"]) * scale,
                    device_level=float(meta["device_level"]) * scale,
                    top_resident=meta.get("top_resident"),
                )
            elif role == "far_error":
                far[parameter, float(meta["band"])] = (float(value) * scale, int(meta["workloads"]))
        if ("unique_bytes", None) not in curves:
            raise SelfScaleError("stored figures: no uniqueBytes curve of a self-scaling run")
        if "cache" not in focal:
            raise SelfScaleError("stored figures: no focal point of the cache regime")
        xs, ys = zip(*curves[("unique_bytes", None)])
        unique = Curve(
            "unique_bytes", list(xs), list(ys), fixed.get(("unique_bytes", None, None), {})
        )
        regimes = {}
        for regime, (workload, throughput) in focal.items():
            shape = {}
            for p in SHAPE_PARAMETERS:
                points = curves.get((p, regime))
                if not points:
                    raise SelfScaleError(
                        f"stored figures: no {PAPER_NAMES[p]} curve of the {regime} regime"
                    )
                xs, ys = zip(*points)
                shape[p] = Curve(p, list(xs), list(ys), fixed[p, regime, None], regime)
            directed = {
                d: {
                    p: Curve(
                        p, [x for x, _ in pts], [y for _, y in pts], fixed[p, regime, d], regime
                    )
                    for p in DIRECTED_PARAMETERS
                    if (pts := sorted(directions.get((regime, d, p)) or []))
                }
                for d in DIRECTIONS
            }
            complete = all(len(c) == len(DIRECTED_PARAMETERS) for c in directed.values())
            regimes[regime] = Regime(
                regime, workload, throughput, shape, directed if complete else {}
            )
        size_curves = [
            _unique_line(line, dict(others, size_mean=int(size)))
            for size, (line, others) in sorted(at_sizes.items())
        ]
        directed_unique = {
            d: _unique_line(line, fixed["unique_bytes", None, d])
            for d, line in direction_unique.items()
        }
        return cls(
            unique_curve=unique,
            regimes=regimes,
            knee=knee,
            far_errors=far,
            size_curves=size_curves,
            direction_unique=directed_unique if set(directed_unique) == set(DIRECTIONS) else {},
            points=measured,
        )


#: how many measured points correct a prediction (Model.correction): on three nightly
#: searches' held-out workloads, 8 did better than 4 or 16
NEIGHBOURS = 8


def _coordinates(workloads: Sequence[Workload]) -> np.ndarray:
    """The workloads as rows of their five parameters, sizes and processes in log."""
    return np.array(
        [
            [math.log(w.get(p)) if p in LOG_SCALE else float(w.get(p)) for p in PARAMETERS]
            for w in workloads
        ],
        dtype=float,
    )


def points_as_rows(points: Sequence[tuple[Workload, float]]) -> list[list[float]]:
    """Measured points as JSON rows: [uniqueBytes, sizeMean, readFrac, seqFrac,
    processNum, bytes/s]."""
    return [[*w.as_dict().values(), float(value)] for w, value in points]


def points_from_rows(rows: object, where: str = "model points") -> list[tuple[Workload, float]]:
    """The measured points of :func:`points_as_rows`; SelfScaleError if malformed."""
    if not isinstance(rows, list):
        raise SelfScaleError(f"{where}: expected a list of measured points")
    out = []
    for row in rows:
        if not isinstance(row, list) or len(row) != len(PARAMETERS) + 1:
            raise SelfScaleError(
                f"{where}: a measured point is {row!r}, expected the five parameters and bytes/s"
            )
        value = float(row[-1])
        if not (math.isfinite(value) and value > 0):
            raise SelfScaleError(f"{where}: a measured throughput is {value}, expected > 0")
        out.append((Workload.from_dict(dict(zip(PARAMETERS, row)), where), value))
    return out


def _unique_line(points: list[tuple[float, float]], fixed: dict[str, float]) -> Curve:
    """A uniqueBytes curve from stored (x, bytes/s) points."""
    return Curve("unique_bytes", [x for x, _ in points], [y for _, y in points], fixed)


# ---- the search ------------------------------------------------------------------------------
#: measure(workloads, reps) -> [[bytes/s per repetition] per workload]: at least ``reps``
#: measurements of each workload (a driver may take more, to average out a noisy
#: machine); a sweep uses their median
Measure = Callable[[Sequence[Workload], int], list]


@dataclass
class Exploration:
    """What a search found: the final curves, focal points, knee, and every round."""

    domain: Domain
    rules: Rules
    model: Model
    rounds: list  # per round: {"focal": ..., "knee": ..., "curves": [...]}
    settled: bool
    points_measured: int
    repeat: dict = field(default_factory=dict)  # {regime: [bytes/s per repetition]}

    @property
    def focal(self) -> dict[str, Workload]:
        return {name: r.focal for name, r in self.model.regimes.items()}

    def repeat_cv(self, regime: str) -> float | None:
        values = self.repeat.get(regime) or []
        if len(values) < 2:
            return None
        return float(np.std(values, ddof=1) / np.mean(values))

    def as_dict(self) -> dict[str, Any]:
        return {
            "domain": self.domain.as_dict(),
            "rules": self.rules.as_dict(),
            "model": self.model.as_dict(),
            "rounds": self.rounds,
            "settled": self.settled,
            "points_measured": self.points_measured,
            "repeat": self.repeat,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Exploration:
        return cls(
            domain=Domain.from_dict(data["domain"]),
            rules=Rules.from_dict(data["rules"]),
            model=Model.from_dict(data["model"]),
            rounds=list(data["rounds"]),
            settled=bool(data["settled"]),
            points_measured=int(data["points_measured"]),
            repeat={k: list(v) for k, v in (data.get("repeat") or {}).items()},
        )


def initial_focal(domain: Domain) -> Workload:
    """The search's starting point: the middle of every range."""
    # an int for sizes and processes, a float for fractions (as Workload checks)
    middle: dict[str, Any] = {p: domain.middle(p) for p in PARAMETERS}
    return Workload(**middle)


def _sweep_values(name, domain, previous, focal_value_now, workload):
    """Grid values to sweep: the previous round's useful range with one grid point more
    on each side (the whole grid in the first round), always including the grid points
    around the current focal value; sizes that fit the workload's uniqueBytes only."""
    grid = domain.grid(name)
    if name == "size_mean":
        grid = [s for s in grid if s <= domain.largest_size(workload.unique_bytes)] or [
            domain.largest_size(workload.unique_bytes)
        ]
    if previous is None:
        return grid
    lo, hi = previous
    inside = [i for i, v in enumerate(grid) if lo <= v <= hi]
    if not inside:
        return grid
    first, last = max(0, inside[0] - 1), min(len(grid) - 1, inside[-1] + 1)
    near = int(np.argmin(np.abs(_axis(name, grid) - _axis(name, [focal_value_now])[0])))
    first, last = min(first, max(0, near - 1)), max(last, min(len(grid) - 1, near + 1))
    chosen = grid[first : last + 1]
    return chosen if len(chosen) >= 3 else grid[max(0, first - 1) : last + 2]


def _unique_values(domain, knee, rules):
    """uniqueBytes to sweep: every other point of its fine grid, and every point within
    ``rules.regime_margin`` of the last knee (where the curve bends)."""
    grid = domain.grid("unique_bytes")
    chosen = set(grid[::2] + grid[-1:])
    if knee is not None:
        chosen |= {
            u
            for u in grid
            if knee.unique_bytes / rules.regime_margin
            <= u
            <= knee.unique_bytes * rules.regime_margin
        }
    return sorted(chosen)


def explore(
    measure: Measure,
    domain: Domain,
    rules: Rules | None = None,
    start: Workload | None = None,
    repeats: int = 0,
    progress: Callable[[str], None] | None = None,
    resident: Callable[[Workload], float | None] | None = None,
) -> Exploration:
    """Run the search with ``measure`` (see :data:`Measure`); returns an
    :class:`Exploration`.  ``repeats`` > 1 measures each regime's final focal point that
    many times (the variation of a repeated measurement); ``progress(line)`` hears what
    it does.  ``resident(workload)``, when given, tells the share of a measured
    workload's footprint the page cache held after its last measurement (or None):
    each round records it for the largest uniqueBytes (``top_resident``), and says so
    when a knee lies below a range the page cache held."""
    rules = rules or Rules()
    say = progress or (lambda line: None)
    focal_of = {"cache": start or initial_focal(domain)}
    # (regime or None, parameter) -> useful range of last round
    ranges: dict[tuple[str | None, str], tuple[float, float]] = {}
    rounds, measured = [], 0
    unique_curve: Curve | None
    knee: Knee | None
    knee_before: Knee | None
    unique_curve, knee, settled = None, None, False
    shapes: dict[tuple[str, str], Curve] = {}
    measure, seen = _keeping(measure)  # every measurement, for the model's correction

    def sweep(
        base: Workload, name: str, regime: str | None, values: Sequence[float] | None = None
    ) -> Curve:
        nonlocal measured
        if values is None:
            values = _sweep_values(name, domain, ranges.get((regime, name)), base.get(name), base)
        workloads = [base.with_value(name, v) for v in values]
        results = measure(workloads, 1)
        measured += len(workloads)
        if len(results) != len(workloads):
            raise SelfScaleError(
                f"measure returned {len(results)} results for {len(workloads)} workloads"
            )
        ys = [float(np.median(r)) for r in results]
        fixed = {p: base.get(p) for p in PARAMETERS if p != name}
        curve = Curve(name, [w.get(name) for w in workloads], ys, fixed, regime)
        ranges[(regime, name)] = useful_range(curve, rules)
        return curve

    for round_no in range(1, int(rules.max_rounds) + 1):
        before, knee_before = dict(focal_of), knee
        base = focal_of["cache"]
        # only the footprints the focal requests fit in (a focal sizeMean of 1 MiB
        # makes requests of up to 1.5 MiB, which 1 MiB cannot hold)
        values = [
            u
            for u in _unique_values(domain, knee, rules)
            if base.size_mean <= domain.largest_size(u)
        ]
        say(
            f"round {round_no}: sweeping {PAPER_NAMES['unique_bytes']} ({len(values)} points),"
            f" the others at {base.words()}"
        )
        unique_curve = sweep(base, "unique_bytes", None, values)
        held = [
            resident(base.with_value("unique_bytes", x)) if resident else None
            for x in unique_curve.xs
        ]
        knee = find_knee(unique_curve, rules, page_cache_edge(unique_curve.xs, held))
        top_resident = held[-1]
        if knee:
            knee.top_resident = top_resident
        unique_focal = regime_focals(knee, unique_curve, domain, rules)
        _say_knee(say, round_no, knee, top_resident, unique_curve)
        focal_of = _shape_focals(
            sweep, say, round_no, unique_focal, focal_of, shapes, domain, rules
        )
        rounds.append(_round_record(round_no, focal_of, knee, top_resident, unique_curve, shapes))
        # Settled: the knee (or its absence) and every shape parameter's focal value
        # stayed within settle_steps grid steps (the regimes' uniqueBytes follow the knee).
        if round_no > 1 and _settled(knee, knee_before, before, focal_of, domain, rules):
            settled = True
            say(f"round {round_no}: the focal values settled")
            break

    directions = _direction_curves(measure, say, focal_of, shapes) if rules.direction_curves else {}
    regimes, repeat = _focal_regimes(measure, say, focal_of, shapes, repeats, directions)
    assert unique_curve is not None  # max_rounds is at least 1
    size_curves, direction_unique = _more_unique_curves(measure, say, unique_curve, domain, rules)
    more = [*directions.values(), *size_curves, *direction_unique.values()]
    measured += len(repeat) + sum(len(c.xs) for c in more)
    measured += _space_filling(measure, say, domain, int(rules.space_filling))
    points = [(w, float(np.median(values))) for w, values in seen.items()]
    model = Model(unique_curve, regimes, knee, {}, size_curves, direction_unique, points)
    return Exploration(domain, rules, model, rounds, settled, measured, repeat)


def _round_record(
    round_no: int,
    focal_of: dict[str, Workload],
    knee: Knee | None,
    top_resident: float | None,
    unique_curve: Curve,
    shapes: dict[tuple[str, str], Curve],
) -> dict[str, Any]:
    """What a round of the search found, as stored in Exploration.rounds."""
    return {
        "round": round_no,
        "focal": {r: w.as_dict() for r, w in focal_of.items()},
        "knee": knee.as_dict() if knee else None,
        "top_resident": top_resident,
        "curves": [unique_curve.as_dict()]
        + [shapes[(r, p)].as_dict() for r in focal_of for p in SHAPE_PARAMETERS],
    }


#: the Latin hypercube of the space-filling workloads is drawn from this seed (the
#: held-out workloads from another: validation's default 2003 and the far bands' 2004)
SPACE_FILLING_SEED = 1993


def space_filling_workloads(domain: Domain, count: int) -> list[Workload]:
    """``count`` workloads spread over the domain (a Latin hypercube of its five
    parameters, mapped as :func:`draw_workloads` maps its random numbers); fewer where
    a footprint holds none of the domain's request sizes."""
    rng = np.random.default_rng(SPACE_FILLING_SEED)
    # each parameter's range cut in ``count`` equal strata, one workload in each, the
    # strata of the parameters paired at random
    strata = np.array([rng.permutation(count) for _ in PARAMETERS]).T
    cube = (strata + rng.random((count, len(PARAMETERS)))) / max(count, 1)
    return [w for w in (_workload_at(domain, u) for u in cube.tolist()) if w is not None]


def _space_filling(measure: Measure, say: Callable[[str], None], domain: Domain, count: int) -> int:
    """Measure the space-filling workloads (they only enter the model's points, through
    ``measure``); how many were measured."""
    workloads = space_filling_workloads(domain, count)
    if workloads:
        say(f"space filling: {len(workloads)} workloads spread over the domain")
        measure(workloads, 1)
    return len(workloads)


def _keeping(measure: Measure) -> tuple[Measure, dict[Workload, list[float]]]:
    """(``measure``, keeping every measurement, the measurements: workload -> values)."""
    seen: dict[Workload, list[float]] = {}

    def kept(workloads: Sequence[Workload], reps: int) -> list:
        results = measure(workloads, reps)
        for w, values in zip(workloads, results):
            seen.setdefault(w, []).extend(float(v) for v in values)
        return results

    return kept, seen


def _say_knee(
    say: Callable[[str], None],
    round_no: int,
    knee: Knee | None,
    top_resident: float | None,
    unique_curve: Curve,
) -> None:
    """Tell the round's knee (or that there is none), and when the page cache held the
    largest uniqueBytes, that the fall is not the device's."""
    if knee and top_resident is not None and top_resident >= HELD:
        say(
            f"round {round_no}: the page cache held {100 * top_resident:.0f}% of the "
            f"largest uniqueBytes ({size_words(unique_curve.xs[-1])}): the fall at "
            f"{size_words(knee.unique_bytes)} is not the device's (CPU caches to memory,"
            f" or the load); the upper regime is still in the page cache"
        )
    say(
        f"round {round_no}: "
        + (
            f"knee at {size_words(knee.unique_bytes)} (cache "
            f"{knee.cache_level / MIB:.1f} MiB/s, device "
            f"{knee.device_level / MIB:.1f} MiB/s)"
            if knee
            else "no knee within the range: one regime"
        )
    )


def _shape_focals(
    sweep: Callable[..., Curve],
    say: Callable[[str], None],
    round_no: int,
    unique_focal: dict[str, float],
    focal_of: dict[str, Workload],
    shapes: dict[tuple[str, str], Curve],
    domain: Domain,
    rules: Rules,
) -> dict[str, Workload]:
    """Each regime's new focal point: at its uniqueBytes, each shape parameter swept in
    turn (the curves go to ``shapes``) and set to its focal value."""
    new_focal = {}
    for regime, u in unique_focal.items():
        current = focal_of.get(regime) or focal_of["cache"]
        current = current.with_value("unique_bytes", u)
        if current.size_mean > domain.largest_size(u):
            current = current.with_value("size_mean", domain.largest_size(u))
        for name in SHAPE_PARAMETERS:
            curve = sweep(current, name, regime)
            shapes[(regime, name)] = curve
            # The focal value is the measured point nearest the rule's value: the
            # focal point is then a point of the curve, not an interpolation between
            # two (across a cliff, such as more ranks than cores, that is far off).
            value = _nearest(curve.xs, focal_value(curve, rules, domain), name)
            current = current.with_value(name, value)
            say(
                f"round {round_no}, {regime} regime: {PAPER_NAMES[name]} focal value "
                f"{value_words(name, value)} (curve of {len(curve.xs)} points, "
                f"{min(curve.ys) / MIB:.1f} to {max(curve.ys) / MIB:.1f} MiB/s)"
            )
        new_focal[regime] = current
    return new_focal


def _settled(
    knee: Knee | None,
    knee_before: Knee | None,
    before: dict[str, Workload],
    focal_of: dict[str, Workload],
    domain: Domain,
    rules: Rules,
) -> bool:
    """Whether the knee (or its absence) and every shape parameter's focal value stayed
    within settle_steps grid steps of the round before's."""
    same_knee = (knee is None) == (knee_before is None) and (
        knee is None
        or knee_before is not None
        and grid_steps("unique_bytes", knee.unique_bytes, knee_before.unique_bytes, domain)
        <= rules.settle_steps
    )
    return (
        same_knee
        and set(before) == set(focal_of)
        and all(
            grid_steps(p, before[r].get(p), focal_of[r].get(p), domain) <= rules.settle_steps
            for r in focal_of
            for p in SHAPE_PARAMETERS
        )
    )


def _direction_curves(
    measure: Measure,
    say: Callable[[str], None],
    focal_of: dict[str, Workload],
    shapes: dict[tuple[str, str], Curve],
) -> dict[tuple[str, str, str], Curve]:
    """{(regime, direction, parameter): Curve}: each regime's DIRECTED_PARAMETERS swept
    again at its focal point with readFrac 1 and 0, over the points of their curves; all
    of them in one call of ``measure`` (one launch of the kernel)."""
    planned = []
    for regime, workload in focal_of.items():
        for direction, read_frac in DIRECTIONS.items():
            base = workload.with_value("read_frac", read_frac)
            for p in DIRECTED_PARAMETERS:
                points = [base.with_value(p, x) for x in shapes[(regime, p)].xs]
                planned.append(((regime, direction, p), base, points))
    workloads = [w for _, _, points in planned for w in points]
    results = iter(measure(workloads, 1))
    out = {}
    for (regime, direction, p), base, points in planned:
        ys = [float(np.median(next(results))) for _ in points]
        fixed = {q: base.get(q) for q in PARAMETERS if q != p}
        out[(regime, direction, p)] = Curve(p, [w.get(p) for w in points], ys, fixed, regime)
    for regime in focal_of:
        for direction, read_frac in DIRECTIONS.items():
            say(
                f"{regime} regime, {direction}s only (readFrac {read_frac:g}): "
                + ", ".join(
                    f"{PAPER_NAMES[p]} {min(c.ys) / MIB:.1f} to {max(c.ys) / MIB:.1f} MiB/s"
                    for p in DIRECTED_PARAMETERS
                    for c in [out[(regime, direction, p)]]
                )
            )
    return out


#: a size curve needs this many uniqueBytes points that its sizeMean fits
SIZE_CURVE_POINTS = 3
#: neighbouring uniqueBytes curves lie at most this many sizeMean grid steps apart
SIZE_CURVE_GAP = 3.0


def size_curve_sizes(domain: Domain, measured_at: int) -> list[int]:
    """The sizeMean values of the size curves: the smallest and the largest of the
    domain's grid, and between neighbours (``measured_at``, unique_curve's, among them)
    more than SIZE_CURVE_GAP grid steps apart, the grid point nearest their geometric
    middle, until none are (the fall with the footprint is interpolated between them)."""
    grid = domain.grid("size_mean")
    sizes = {int(grid[0]), int(grid[-1]), int(measured_at)}
    while True:
        ordered = sorted(sizes)
        wide = [
            (a, b)
            for a, b in zip(ordered, ordered[1:])
            if grid_steps("size_mean", a, b, domain) > SIZE_CURVE_GAP
        ]
        if not wide:
            return [s for s in ordered if s != measured_at]
        a, b = wide[0]
        sizes.add(int(_nearest(grid, math.sqrt(a * b), "size_mean")))


def _more_unique_curves(
    measure: Measure,
    say: Callable[[str], None],
    unique_curve: Curve,
    domain: Domain,
    rules: Rules,
) -> tuple[list[Curve], dict[str, Curve]]:
    """(size curves, direction uniqueBytes curves): the uniqueBytes curve measured again
    at other sizeMean values (:func:`size_curve_sizes`, at its uniqueBytes points that
    each size fits; a size that fits fewer than SIZE_CURVE_POINTS of them is left out)
    and with readFrac 1 and 0 (DIRECTIONS), the other parameters at its values; all in
    one call of ``measure`` (one launch: the kernel writes the data once).  Each as
    ``rules`` asks (size_curves, direction_unique_curves)."""
    base = Workload(
        **{p: unique_curve.fixed[p] for p in PARAMETERS if p != "unique_bytes"},
        unique_bytes=int(unique_curve.xs[-1]),
    )
    planned: list[tuple[str | None, list[Workload]]] = []
    for size in size_curve_sizes(domain, base.size_mean) if rules.size_curves else []:
        points = [
            base.with_value("unique_bytes", u).with_value("size_mean", size)
            for u in unique_curve.xs
            if size <= domain.largest_size(u)
        ]
        if len(points) >= SIZE_CURVE_POINTS:
            planned.append((None, points))
    if rules.direction_unique_curves:
        for name, read_frac in DIRECTIONS.items():
            one_way = base.with_value("read_frac", read_frac)
            planned.append((name, [one_way.with_value("unique_bytes", u) for u in unique_curve.xs]))
    if not planned:
        return [], {}
    results = iter(measure([w for _, points in planned for w in points], 1))
    sized: list[Curve] = []
    directed: dict[str, Curve] = {}
    for direction, points in planned:
        ys = [float(np.median(next(results))) for _ in points]
        fixed = {p: points[0].get(p) for p in PARAMETERS if p != "unique_bytes"}
        curve = Curve("unique_bytes", [w.unique_bytes for w in points], ys, fixed)
        if direction:
            directed[direction] = curve
            words = f", {direction}s only (readFrac {fixed['read_frac']:g})"
        else:
            sized.append(curve)
            words = f" at sizeMean {size_words(fixed['size_mean'])}"
        say(
            f"uniqueBytes{words}: {len(points)} points, "
            f"{min(ys) / MIB:.1f} to {max(ys) / MIB:.1f} MiB/s"
        )
    return sized, directed


def _focal_regimes(
    measure: Measure,
    say: Callable[[str], None],
    focal_of: dict[str, Workload],
    shapes: dict[tuple[str, str], Curve],
    repeats: int,
    directions: Mapping[tuple[str, str, str], Curve],
) -> tuple[dict[str, Regime], dict[str, list[float]]]:
    """(the regimes at their focal points, {regime: its repeated measurements}); with
    ``repeats`` > 1 each focal point is measured that many times more."""
    regimes = {}
    repeat = {}
    for regime, workload in focal_of.items():
        curves = {p: shapes[(regime, p)] for p in SHAPE_PARAMETERS}
        # The throughput at the focal point: the median of its measurements, on the
        # curves that pass through it (the last one swept always does; one swept before a
        # later focal value moved was measured elsewhere) and every repeated measurement.
        through = [p for p in SHAPE_PARAMETERS if _passes_through(curves[p], workload)]
        estimates = [curves[p].ys[curves[p].xs.index(workload.get(p))] for p in through] or [
            curves[SHAPE_PARAMETERS[-1]].at(workload.get(SHAPE_PARAMETERS[-1]))
        ]
        if repeats and repeats > 1:
            values = [float(v) for v in measure([workload], int(repeats))[0]]
            repeat[regime] = values
            estimates += values
            cv = np.std(values, ddof=1) / np.mean(values)
            say(
                f"{regime} regime focal point measured {len(values)} times: "
                f"{np.mean(values) / MIB:.1f} MiB/s, variation {100 * cv:.1f}%"
            )
        regimes[regime] = Regime(
            regime,
            workload,
            float(np.median(estimates)),
            curves,
            {d: {p: directions[(regime, d, p)] for p in DIRECTED_PARAMETERS} for d in DIRECTIONS}
            if directions
            else {},
        )
    return regimes, repeat


def _passes_through(curve, workload):
    """Whether the curve measured the workload itself: the others at its values, and its
    own parameter's value among the measured points."""
    return (
        all(curve.fixed.get(p) == workload.get(p) for p in PARAMETERS if p != curve.parameter)
        and workload.get(curve.parameter) in curve.xs
    )


# ---- validation ------------------------------------------------------------------------------
def draw_workloads(domain: Domain, count: int, seed: int | None) -> list[Workload]:
    """``count`` workloads drawn at random from the domain (log-uniform sizes and
    processes, uniform fractions), each fitting it; reproducible from ``seed``."""
    if count < 1:
        raise SelfScaleError(f"validation: expected at least 1 workload, got {count}")
    rng = np.random.default_rng(seed)
    out: list[Workload] = []
    while len(out) < count:
        workload = _workload_at(domain, rng.random(len(PARAMETERS)).tolist())
        if workload is not None:
            out.append(workload)
    return out


def _workload_at(domain: Domain, u: Sequence[float]) -> Workload | None:
    """The workload at ``u``, five numbers in [0, 1) in PARAMETERS' order: uniqueBytes,
    sizeMean (up to the largest its footprint holds) and processNum log-uniform,
    readFrac and seqFrac uniform; None where the footprint holds no request size of the
    domain."""

    def log_between(lo: float, hi: float, x: float) -> float:
        return math.exp(math.log(lo) + x * (math.log(hi) - math.log(lo)))

    at = dict(zip(PARAMETERS, (float(x) for x in u)))
    low, high = domain.unique_bytes
    unique = _kernel_value(
        "unique_bytes", min(high, max(low, log_between(low, high, at["unique_bytes"]) // MIB * MIB))
    )
    largest = min(domain.size_mean[1], domain.largest_size(unique))
    if largest < domain.size_mean[0]:
        return None
    first, last = domain.process_num
    processes = math.floor(log_between(first, last + 1, at["process_num"]))
    return Workload(
        unique_bytes=unique,
        size_mean=_kernel_value(
            "size_mean", log_between(domain.size_mean[0], largest, at["size_mean"])
        ),
        read_frac=round(at["read_frac"], 3),
        seq_frac=round(at["seq_frac"], 3),
        process_num=int(min(last, max(first, processes))),
    )


@dataclass
class Validation:
    """Predicted against measured throughput of held-out workloads; ``passes`` keeps
    every measurement of each workload (``measured`` is their median), ``launches`` the
    median of each launch that measured them (empty: one launch)."""

    workloads: list
    predicted: list
    measured: list
    passes: list = field(default_factory=list)
    launches: list = field(default_factory=list)
    #: [(Workload, searched, now)]: some of the search's own points measured again in the
    #: same launches as the held-out workloads (bytes/s then and now); empty: none
    revisited: list = field(default_factory=list)

    @property
    def errors(self) -> list[float]:
        """|predicted - measured| / measured, per workload."""
        return self._errors(1.0)

    def _errors(self, scale: float) -> list[float]:
        return [abs(scale * p - m) / m for p, m in zip(self.predicted, self.measured)]

    @property
    def drift_level(self) -> float | None:
        """How the target moved between the search and the validation: the median over
        the revisited points of now / searched (0.9: 10% slower now), or None without
        them."""
        ratios = [now / searched for _, searched, now in self.revisited]
        return float(np.median(ratios)) if ratios else None

    @property
    def drift(self) -> float | None:
        """The floor under the errors that neither the passes nor the launches show: the
        median over the revisited points of how far they lie from the search's own
        measurement of them (relative; the noise of both measurements and the target's
        drift in between, together), or None without them.  A model built from points
        measured minutes before is judged against this."""
        moves = [abs(now - searched) / searched for _, searched, now in self.revisited]
        return float(np.median(moves)) if moves else None

    @property
    def drift_scaled_median_error(self) -> float | None:
        """The median error had the model been scaled by :attr:`drift_level`: how much
        of the error is the target moving as a whole (a reading aid, never the error)."""
        level = self.drift_level
        return None if level is None else float(np.median(self._errors(level)))

    @property
    def median_error(self) -> float:
        return float(np.median(self.errors))

    @property
    def median_error_interval(self) -> tuple[float, float, float] | None:
        """How far the median error of these few workloads can lie from the model's:
        :func:`median_interval` of the errors, or None with too few workloads."""
        return median_interval(self.errors)

    @property
    def max_error(self) -> float:
        return float(np.max(self.errors))

    @property
    def spread(self) -> float | None:
        """The noise floor the errors stand on: the median over workloads of how far one
        measurement lies from the median of its passes (relative), or None with one
        pass.  A prediction cannot be judged closer than this."""
        deviations = [
            abs(v - m) / m
            for values, m in zip(self.passes, self.measured)
            if len(values) > 1
            for v in values
        ]
        return float(np.median(deviations)) if deviations else None

    @property
    def retest(self) -> float | None:
        """The floor under the errors that passes within one launch do not show: the
        median over workloads of how far the second launch's median lies from the
        first's (relative), or None with one launch.  A shared file system drifts
        between launches minutes apart (the embedded SAN: 9-17% for the same 20
        workloads, where the passes of one launch lie 7-9% from their median)."""
        moves = [abs(b - a) / a for a, b, *_ in (m for m in self.launches if len(m) > 1)]
        return float(np.median(moves)) if moves else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "workloads": [w.as_dict() for w in self.workloads],
            "predicted": list(self.predicted),
            "measured": list(self.measured),
            "passes": [list(v) for v in self.passes],
            "launches": [list(v) for v in self.launches],
            "errors": self.errors,
            "median_error": self.median_error,
            "median_error_interval": self.median_error_interval,
            "max_error": self.max_error,
            "spread": self.spread,
            "retest": self.retest,
            "revisited": [
                {"workload": w.as_dict(), "searched": searched, "now": now}
                for w, searched, now in self.revisited
            ],
            "drift": self.drift,
            "drift_level": self.drift_level,
            "drift_scaled_median_error": self.drift_scaled_median_error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Validation:
        return cls(
            workloads=[Workload.from_dict(w) for w in data["workloads"]],
            predicted=list(data["predicted"]),
            measured=list(data["measured"]),
            passes=[list(v) for v in data.get("passes") or []],
            launches=[list(v) for v in data.get("launches") or []],
            revisited=[
                (Workload.from_dict(r["workload"]), float(r["searched"]), float(r["now"]))
                for r in data.get("revisited") or []
            ],
        )


#: the least confidence :func:`median_interval` gives
MEDIAN_CONFIDENCE = 0.9


def median_interval(
    values: Sequence[float], confidence: float = MEDIAN_CONFIDENCE
) -> tuple[float, float, float] | None:
    """(low, high, confidence): the narrowest interval of order statistics, the k-th
    smallest value to the k-th largest, that holds the median of the population the
    values were drawn from with at least ``confidence``, and the confidence it holds it
    with (binomial, free of any distribution: each value lies below the population's
    median with probability one half).  None where even the smallest and the largest
    value do not reach ``confidence`` (fewer than 5 values at 0.9).  Twenty held-out
    workloads put a median error of 15% between 4% and 32% (docs/benchmarks.md, "How
    far twenty workloads pin the median error"): one night's figure is no verdict."""
    ordered = sorted(float(v) for v in values)
    n = len(ordered)
    best, below = None, 0  # below: ways for fewer than k of n values to lie under it
    for k in range(1, n // 2 + 1):
        # P(the k-th smallest <= median <= the k-th largest) = 1 - 2 P(Binomial(n, 1/2) < k)
        below += math.comb(n, k - 1)
        held = 1.0 - 2.0 * below / 2.0**n
        if held < confidence:
            break
        best = (ordered[k - 1], ordered[n - k], held)
    return best


#: how far past the measured range the model is validated: a far workload lies, in one
#: parameter, (previous band, band] times past what the model's curves measured
FAR_BANDS = (2.0, 4.0)
#: the parameters a far workload pushes (processes cannot go past the ranks launched)
FAR_PARAMETERS = ("unique_bytes", "size_mean")


def distance_past(ranges: Mapping[str, tuple[float, float]], parameter: str, value: float) -> float:
    """How many times past the measured range ``value`` lies (1.0 inside it): above the
    range value / high, below it low / value."""
    lo, hi = ranges[parameter]
    return value / hi if value > hi else lo / max(value, 1) if value < lo else 1.0


@dataclass(frozen=True)
class FarWorkload:
    """A held-out workload past the measured range in one parameter."""

    workload: Workload
    parameter: str
    distance: float  # times past the measured range
    band: float  # the FAR_BANDS entry it validates

    def as_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload.as_dict(),
            "parameter": self.parameter,
            "distance": self.distance,
            "band": self.band,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FarWorkload:
        return cls(
            Workload.from_dict(data["workload"]),
            str(data["parameter"]),
            float(data["distance"]),
            float(data["band"]),
        )


def draw_far_workloads(
    model: Model, domain: Domain, per_band: int, seed: int | None, unique_limit: float
) -> list[FarWorkload]:
    """Up to ``per_band`` workloads for each of FAR_BANDS: a workload drawn inside the
    domain (draw_workloads) with one parameter pushed past the model's measured range,
    the parameters taking turns: sizeMean above or below its range (not under the
    kernel's 512-byte unit; uniqueBytes raised within its measured range when the
    requests need it), uniqueBytes above (not past ``unique_limit``, the bytes the target
    can hold).  Each distance is drawn log-uniform within its band and measured after
    the kernel's rounding, as the advisor measures a job's.  A band no parameter can
    reach (a range at the kernel's or the disk's limit) gets fewer workloads, or none."""
    if per_band < 1:
        raise SelfScaleError(f"far validation: expected at least 1 workload a band, got {per_band}")
    rng = np.random.default_rng(seed)
    ranges = model.measured_range()
    pushes = [("size_mean", "above"), ("unique_bytes", "above"), ("size_mean", "below")]
    tries = 20 * len(pushes)
    inside = iter(draw_workloads(domain, tries * per_band * len(FAR_BANDS), seed))
    out: list[FarWorkload] = []
    lower = 1.0
    for band in FAR_BANDS:
        for slot in range(per_band):
            # the parameters take turns; a slot one cannot fill goes to the next
            for attempt in range(tries):
                parameter, side = pushes[(slot + attempt) % len(pushes)]
                found = _push(
                    next(inside), parameter, side, rng, lower, band, ranges, domain, unique_limit
                )
                if found:
                    out.append(FarWorkload(*found, band))
                    break
        lower = band
    return out


def _push(
    base: Workload,
    parameter: str,
    side: str,
    rng: np.random.Generator,
    lower: float,
    band: float,
    ranges: Mapping[str, tuple[float, float]],
    domain: Domain,
    unique_limit: float,
) -> tuple[Workload, str, float] | None:
    """``base`` with ``parameter`` pushed past the measured range to a distance drawn
    log-uniform in (lower, band] (measured after the kernel's rounding), or None where
    that distance cannot be had (the kernel's unit, the target's room, requests that
    would not fit the measured uniqueBytes)."""
    wanted = math.exp(rng.uniform(math.log(lower), math.log(band)))
    lo, hi = ranges[parameter]
    value = _kernel_value(parameter, hi * wanted if side == "above" else lo / wanted)
    distance = distance_past(ranges, parameter, value)
    if not lower * 1.01 < distance <= band * 1.01:
        return None
    if parameter == "unique_bytes":
        if value > unique_limit:
            return None
        # the requests inside the measured sizes (the domain can reach past them)
        size = _kernel_value(
            "size_mean", min(max(base.size_mean, ranges["size_mean"][0]), ranges["size_mean"][1])
        )
        return replace(base, unique_bytes=value, size_mean=size), parameter, distance
    needed = math.ceil(value * (1 + domain.size_spread) / UNIT) * UNIT
    while domain.largest_size(needed) < value:
        needed += UNIT
    unique = max(base.unique_bytes, needed)
    if unique > ranges["unique_bytes"][1]:
        return None
    return replace(base, size_mean=value, unique_bytes=unique), parameter, distance


def far_errors(
    far: Sequence[FarWorkload], validation: Validation
) -> dict[tuple[str, float], tuple[float, int]]:
    """{(parameter, band): (median error, workloads)} of a validation of far workloads."""
    groups: dict[tuple[str, float], list[float]] = {}
    for workload, error in zip(far, validation.errors):
        groups.setdefault((workload.parameter, workload.band), []).append(error)
    return {key: (float(np.median(errors)), len(errors)) for key, errors in groups.items()}


def validate(
    model: Model,
    measure: Measure,
    workloads: Sequence[Workload],
    again: Measure | None = None,
    revisit: Sequence[tuple[Workload, float]] = (),
) -> Validation:
    """Measure the workloads and compare with the model's predictions.  With ``again``,
    they are measured in a second launch too: each workload's measurement is the median
    of both launches' passes, and the two launches' difference is the floor under the
    errors (:attr:`Validation.retest`).  ``revisit``: some of the search's own points
    (workload, bytes/s the search measured), measured again with the held-out workloads
    in the same launches (which shuffle them): how far they lie from the search's
    measurement of them (:attr:`Validation.drift`)."""
    if not workloads:
        raise SelfScaleError("validation: no workloads")
    listed = list(workloads) + [w for w, _ in revisit]
    launches = []
    for how in (measure, again) if again else (measure,):
        passes = [[float(v) for v in r] for r in how(listed, 1)]
        bad = [v for r in passes for v in r if not (math.isfinite(v) and v > 0)]
        if bad or not all(passes) or len(passes) != len(listed):
            raise SelfScaleError(
                f"validation: a measured throughput is "
                f"{bad[0] if bad else 'missing'}, expected a positive number"
            )
        launches.append({"held": passes[: len(workloads)], "revisit": passes[len(workloads) :]})
    passes = [[v for launch in launches for v in launch["held"][i]] for i in range(len(workloads))]
    return Validation(
        workloads=list(workloads),
        predicted=[model.predict(w) for w in workloads],
        measured=[float(np.median(r)) for r in passes],
        passes=passes,
        launches=(
            [
                [float(np.median(launch["held"][i])) for launch in launches]
                for i in range(len(workloads))
            ]
            if again
            else []
        ),
        revisited=[
            (
                workload,
                float(searched),
                float(np.median([v for launch in launches for v in launch["revisit"][j]])),
            )
            for j, (workload, searched) in enumerate(revisit)
        ],
    )
