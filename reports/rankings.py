"""What the pages conclude from the store: each file system's figures run by run, their
spread, which file system is best for each figure, and the advice a user reads.

Statistics, and why:
* A figure of a file system in a run is the median over the partitions that measured
  it in that run, in one programming environment, the same on every file system
  (``lead_environment``: MPI libraries differ by several times on metadata rates, so a
  median across them would be neither's number).
* Spread = the range (lowest to highest) over the last ``RECENT_RUNS`` runs.
* A file system is named best only when its worst recent value beats the runner-up's
  best (the ranges do not overlap) with at least ``MIN_RUNS_TO_RANK`` runs on each side:
  two identical file systems give non-overlapping ranges of 5 runs each in 2 of 252
  orderings (under 1%, the nightly verdicts' false-alarm rate).  Otherwise the page
  says "no clear winner" or how many more runs are needed.
* A figure that describes a model or the measurement (``DESCRIPTIVE_ROLES``) is shown
  but never ranked; one whose latest phase was too short to time is not ranked either.
"""

import json
import math
import sqlite3
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from reports import naming, store
from scratchbench import units
from scratchbench.figures import DESCRIPTIVE_ROLES, SHORTEST_TRUSTED_PHASE_S, too_short_words

HISTORY_RUNS = 200  # runs of each tag the pages read and plot
RECENT_RUNS = store.RECENT_RUNS  # runs a spread, a ranking or a piece of advice rests on
MIN_RUNS_TO_RANK = 5  # runs on each side before a file system is named best
UNSTEADY_SPREAD = 0.5  # advice warns when the recent range exceeds this share of the median
VARIANT_ADVICE_RATIO = 1.5  # advice compares variants that differ by at least this

fmt, day = units.number, units.date


def times(ratio: float) -> str:
    return f"{ratio:.3g}x" if math.isfinite(ratio) else "many times"


# ---- what the store holds ---------------------------------------------------------------
class Series:
    """One history: a case variant on one partition and environment, one figure."""

    __slots__ = (
        "key",
        "metric",
        "points",
        "target",
        "kind",
        "partition",
        "environ",
        "tag",
        "unit",
        "label",
        "better",
        "headline",
        "chart",
        "check",
        "variant",
        "workload_words",
        "params",
        "scaling",
        "case_id",
        "role",
        "phase_seconds",
        "too_short",
    )

    def __init__(
        self,
        key: str,
        metric: str,
        points: list[tuple[float, float, str]],
        meta: sqlite3.Row | Mapping[str, Any],
    ) -> None:
        self.key, self.metric, self.points = key, metric, points  # [(time, value, run)]
        self.case_id = meta["case_id"]
        self.target = meta["scratch_target"] or "unspecified"
        self.kind = meta["scratch_kind"]
        self.partition = f"{meta['system']}:{meta['partition']}"
        self.environ = meta["environ"] or ""
        self.tag = meta["workload"] or ""
        self.unit = meta["unit"] or ""
        self.label = naming.figure_label(meta)
        self.better = meta["better"] if meta["better"] in ("higher", "lower") else "higher"
        self.headline = meta["headline"] or ""
        self.chart = json.loads(meta["chart"]) if meta["chart"] else None
        self.params = json.loads(meta["params"] or "{}")
        self.check = naming.check_words(meta)
        self.variant = naming.variant_words(meta, self.params)
        self.workload_words = meta["workload_words"] or ""
        self.scaling = meta["scaling_parameter"] or ""
        self.role = meta["role"] or (self.chart or {}).get("role") or ""
        # the latest run's: a figure whose phase was too short to time is not ranked
        self.phase_seconds, self.too_short = meta["phase_seconds"], bool(meta["too_short"])

    @property
    def descriptive(self) -> bool:
        """Describes a model, a search or the measurement, not the file system."""
        return self.role in DESCRIPTIVE_ROLES

    @property
    def figure(self) -> tuple[str, str, str, str, str, str, str]:
        """One figure of one workload, comparable across file systems: the same tag,
        check, variant, sizes and declared meaning."""
        return (
            self.tag,
            self.check,
            self.variant,
            self.workload_words,
            self.label,
            self.unit,
            self.better,
        )


def load(conn: sqlite3.Connection) -> dict[tuple[str, str], Series]:
    """The histories of the latest HISTORY_RUNS runs of each tag:
    {(series key, metric): Series}."""
    points: dict[tuple[str, str], list[tuple[float, float, str]]]
    points, latest_case = {}, {}
    for case_id, key, metric, value, started, run_id in store.recent_values(conn, HISTORY_RUNS):
        if not math.isfinite(value):
            continue  # e.g. a rate over a zero time: no point to plot (the run page lists it)
        k = (key, metric)
        line = points.get(k)
        if line is None:
            line = points[k] = []
        line.append((started or 0, value, run_id))
        latest_case[k] = case_id  # rows come oldest first: the last one is the latest
    meta = store.declarations_of(conn, latest_case.values())
    return {k: Series(k[0], k[1], line, meta[(latest_case[k], k[1])]) for k, line in points.items()}


# ---- one number per run, spread, ranking ---------------------------------------------------
class Standing:
    """A figure of one file system: one value per run (the median over the partitions,
    and over the environments when given several, that measured it in that run; the
    rankings give it one environment: see lead_environment), and its recent spread."""

    def __init__(self, target: str, series: Sequence[Series]) -> None:
        self.target, self.series = target, series
        by_run: dict[str, tuple[float, list[float]]] = {}
        for s in series:
            for t, v, run in s.points:
                by_run.setdefault(run, (t, []))[1].append(v)
        self.runs = sorted((t, run, statistics.median(vs)) for run, (t, vs) in by_run.items())
        self.environs = sorted({s.environ for s in series})
        self.workload_words = sorted({s.workload_words for s in series if s.workload_words})
        recent = self.runs[-RECENT_RUNS:]
        self.recent = [v for _, _, v in recent]
        self.first, self.last = recent[0][0], recent[-1][0]
        self.latest_time, self.latest_run, self.latest = self.runs[-1]
        self.median = statistics.median(self.recent)
        self.low, self.high = min(self.recent), max(self.recent)

    @property
    def n(self) -> int:
        return len(self.recent)

    @property
    def too_short(self) -> bool:
        """The latest run timed this figure in a phase too short to trust."""
        return any(s.too_short for s in self.series)

    def spread_words(self, unit: str) -> str:
        if self.n == 1:
            return "one run so far"
        return f"{fmt(self.low)} to {fmt(self.high)} {unit} over {self.n} runs"

    def rests_on(self) -> str:
        dates = (
            day(self.first)
            if self.n == 1 or day(self.first) == day(self.last)
            else f"{day(self.first)} to {day(self.last)}"
        )
        runs = "the latest run" if self.n == 1 else f"the last {self.n} runs"
        sizes = "; ".join(self.workload_words)
        return f"{runs} ({dates}){': ' + sizes if sizes else ''}"


def _apart(good: Standing, bad: Standing, better: str) -> bool:
    """Every recent value of `good` beats every recent value of `bad`."""
    return good.low > bad.high if better == "higher" else good.high < bad.low


def _ratio(good: Standing, bad: Standing, better: str) -> float:
    """How many times better `good` is than `bad` on the medians (>= 1 when better)."""
    a, b = (good.median, bad.median) if better == "higher" else (bad.median, good.median)
    return a / b if b else math.inf


def lead_environment(series_by_target: Mapping[str, Sequence[Series]]) -> str:
    """The one programming environment a headline value comes from: the one that
    measured the figure on the most file systems, then in the most runs, then the first
    by name.  Never a median across environments: MPI libraries differ by several times
    on metadata rates, so such a median would be neither's number."""
    targets: Counter[str]
    points: Counter[str]
    targets, points = Counter(), Counter()
    for ss in series_by_target.values():
        targets.update({s.environ for s in ss})
        for s in ss:
            points[s.environ] += len(s.points)
    return min(targets, key=lambda e: (-targets[e], -points[e], e))


def in_environment(series: Sequence[Series], environ: str) -> list[Series]:
    """The series of one environment; where it did not run, those of the target's own
    lead environment (said beside the value)."""
    mine = [s for s in series if s.environ == environ]
    return mine or [s for s in series if s.environ == lead_environment({"": series})]


class Ranking:
    """Which file system is best for one figure, and whether the spreads allow saying so."""

    regressed: dict[str, list[dict[str, Any]]]  # nightly verdict entries, by target

    def __init__(
        self,
        figure: tuple[str, str, str, str, str, str, str],
        series_by_target: Mapping[str, Sequence[Series]],
    ) -> None:
        self.figure = figure
        (self.tag, self.check, self.variant, self.sizes, self.label, self.unit, self.better) = (
            figure
        )
        self.by_target = series_by_target
        self.environ = lead_environment(series_by_target)
        self.environs = sorted({s.environ for ss in series_by_target.values() for s in ss})
        self.standings = {
            t: Standing(t, in_environment(ss, self.environ)) for t, ss in series_by_target.items()
        }
        ranked = sorted(
            self.standings.values(), key=lambda s: s.median, reverse=self.better == "higher"
        )
        self.headline = next(
            (s.headline for ss in series_by_target.values() for s in ss if s.headline), ""
        )
        self.best = ranked[0]
        self.second = ranked[1] if len(ranked) > 1 else None
        self.regressed = {}  # target: its regression verdicts (set from the nightly verdict)
        self.margin = self.runs_needed = None
        self.descriptive = any(s.descriptive for ss in series_by_target.values() for s in ss)
        if self.descriptive:
            self.status = "not ranked"
            return
        #: (target, phase seconds) where the latest run's phase was too short to time
        self.too_short = sorted(
            {
                (s.target, s.phase_seconds)
                for ss in series_by_target.values()
                for s in ss
                if s.too_short
            }
        )
        if self.too_short:
            self.status = "too short"
            return
        if self.second is None:
            self.status = "alone"
            return
        self.margin = _ratio(self.best, self.second, self.better)
        self.runs_needed = max(0, MIN_RUNS_TO_RANK - min(self.best.n, self.second.n))
        if self.runs_needed:
            self.status = "too few runs"
        elif _apart(self.best, self.second, self.better):
            self.status = "winner"
        else:
            self.status = "no clear winner"

    @property
    def name(self) -> str:
        return self.headline or self.label

    @property
    def workload_words(self) -> list[str]:
        return sorted({w for s in self.standings.values() for w in s.workload_words})

    def margin_words(self) -> str:
        assert self.margin is not None  # ranked: set with self.second
        return f"{times(self.margin)} {'higher' if self.better == 'higher' else 'lower'}"

    def regression_words(self, target: str) -> str:
        """'' or what a recommendation of target must say: it just regressed here."""
        found = self.regressed.get(target)
        if not found:
            return ""
        v = max(found, key=lambda v: v.get("since") or "")
        state = "new" if v["verdict"] == "regression" else "ongoing"
        return (
            f"but {target} regressed on {v.get('since') or 'a recent night'} "
            f"({state}, {units.percent(v.get('relative_change'))}): its older runs "
            "may no longer hold"
        )

    @property
    def direction_words(self) -> str:
        """ "higher is better" or "lower is better"; "" for a figure that describes a model
        or the measurement, where neither way is better."""
        return "" if self.descriptive else f"{self.better} is better"

    def verdict(self) -> str:
        """The ranking in words, as the index shows it (and the advice repeats)."""
        if self.status == "not ranked":
            return "not ranked: it describes a model or the measurement, not the file system"
        if self.status == "too short":
            target, seconds = min(self.too_short, key=lambda ts: ts[1])
            return f"not ranked: on {target}, {too_short_words(seconds)}"
        if self.status == "alone":
            return f"only measured on {self.best.target}"
        # ranked against a second file system: margin and runs needed are set
        assert self.second is not None and self.margin is not None and self.runs_needed is not None
        if self.status == "winner":
            caveat = self.regression_words(self.best.target)
            return (
                f"{self.best.target}: {self.margin_words()} than {self.second.target} "
                f"(every one of the last {min(self.best.n, self.second.n)} runs)"
                + (f"; {caveat}" if caveat else "")
            )
        if self.status == "no clear winner":
            return (
                f"no clear winner: the ranges of the last runs overlap "
                f"({self.best.target} leads by {times(self.margin)} on the median)"
            )
        return (
            f"not decided yet: {self.runs_needed} more run{'s' * (self.runs_needed > 1)} "
            f"needed (so far {self.best.target} leads by {times(self.margin)})"
        )


def rankings(series: Mapping[tuple[str, str], Series]) -> list[Ranking]:
    """A ranking of every figure (except those drawn on a declared chart), in the order
    the pages list them."""
    grouped: defaultdict[tuple[str, str, str, str, str, str, str], defaultdict[str, list[Series]]]
    grouped = defaultdict(lambda: defaultdict(list))
    for s in series.values():
        if not s.chart:
            grouped[s.figure][s.target].append(s)
    return sorted(
        (Ranking(figure, by_target) for figure, by_target in grouped.items()),
        key=lambda r: (r.tag, r.check, r.variant, r.name),
    )


# ---- advice ------------------------------------------------------------------------------
def advice(
    target: str, headline_rankings: Sequence[Ranking], series: Mapping[tuple[str, str], Series]
) -> list[str]:
    """What a user of one file system should know, from the declared figures only.

    Each line says which runs and sizes it rests on; nothing is said where the spread
    does not support it (only "not enough data" for the figures concerned)."""
    lines, undecided, level, short = [], [], [], []
    for r in headline_rankings:
        mine = r.standings.get(target)
        if mine is None or r.status in ("alone", "not ranked"):
            continue
        what = f"{r.name} ({r.variant})" if r.variant else r.name
        if r.status == "too short":
            short.append(what)
            continue
        caveat = r.regression_words(r.best.target)
        caveat = f" {caveat[0].upper()}{caveat[1:]}." if caveat else ""
        if r.status == "winner" and r.best.target == target:
            assert r.second is not None  # a winner has a runner-up
            lines.append(
                f"Best file system here for {what}: {r.margin_words()} than "
                f"{r.second.target}, the next best (a median of {fmt(mine.median)} "
                f"{r.unit} against {fmt(r.second.median)} {r.unit}). "
                f"Rests on {mine.rests_on()}.{caveat}"
            )
        elif (
            r.status == "winner"
            and _apart(r.best, mine, r.better)
            and min(r.best.n, mine.n) >= MIN_RUNS_TO_RANK
        ):
            lines.append(
                f"For {what}, prefer {r.best.target}: "
                f"{times(_ratio(r.best, mine, r.better))} "
                f"{'higher' if r.better == 'higher' else 'lower'} there (a median of "
                f"{fmt(r.best.median)} {r.unit} against {fmt(mine.median)} {r.unit} "
                f"here). Rests on {mine.rests_on()}.{caveat}"
            )
        elif r.status == "winner":
            level.append(what)
        elif r.status == "no clear winner":
            level.append(what)
        else:
            assert r.runs_needed is not None  # too few runs: ranked against a second
            undecided.append((what, r.runs_needed))
    for r in headline_rankings:
        mine = r.standings.get(target)
        if (
            mine is not None
            and r.status not in ("not ranked", "too short")
            and mine.n >= MIN_RUNS_TO_RANK
            and mine.median
            and (mine.high - mine.low) / abs(mine.median) > UNSTEADY_SPREAD
        ):
            lines.append(
                f"{r.name} varies a lot from run to run here ({mine.spread_words(r.unit)}): "
                f"plan with the lower figure."
            )
    lines.extend(_variant_advice(target, series))
    if level:
        lines.append(
            "No clear difference from the other file systems (their recent ranges "
            f"overlap) for: {'; '.join(level)}."
        )
    if short:
        lines.append(
            "Not compared, their timed phases too short to trust (under "
            f"{SHORTEST_TRUSTED_PHASE_S:g} s): {'; '.join(short)}."
        )
    if undecided:
        most = max(n for _, n in undecided)
        lines.append(
            f"Not enough data yet to compare file systems for: "
            f"{'; '.join(w for w, _ in undecided)} "
            f"({most} more run{'s' * (most > 1)} needed)."
        )
    return lines


def _variant_advice(target, series):
    """Within one check, which variant does best for a headline figure's label on this
    file system (e.g. one file per process against one shared file), when the ranges
    of recent runs do not overlap."""
    labels = {
        (s.tag, s.check, s.label)
        for s in series.values()
        if s.target == target and s.headline and not s.descriptive
    }
    by_variant = defaultdict(lambda: defaultdict(list))
    for s in series.values():
        if (
            s.target == target
            and (s.tag, s.check, s.label) in labels
            and not s.scaling
            and not s.chart
        ):
            by_variant[(s.tag, s.check, s.label, s.unit, s.better)][s.variant].append(s)
    lines = []
    for (tag, check, label, unit, better), variants in sorted(by_variant.items()):
        if len(variants) < 2:
            continue
        environ = lead_environment(variants)
        standings = [Standing(target, in_environment(ss, environ)) for ss in variants.values()]
        names = dict(zip(map(id, standings), variants))
        standings.sort(key=lambda s: s.median, reverse=better == "higher")
        best, worst = standings[0], standings[-1]
        if min(best.n, worst.n) < MIN_RUNS_TO_RANK or not worst.median or not best.median:
            continue
        ratio = _ratio(best, worst, better)
        if _apart(best, worst, better) and ratio >= VARIANT_ADVICE_RATIO:
            lines.append(
                f"{check}: {label[0].lower() + label[1:]} is {times(ratio)} "
                f"{'higher' if better == 'higher' else 'lower'} with "
                f"{names[id(best)]} ({fmt(best.median)} {unit}) than with "
                f"{names[id(worst)]} ({fmt(worst.median)} {unit}). Rests on "
                f"{best.rests_on()}."
            )
    return lines
