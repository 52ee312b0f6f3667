"""Static performance pages from the history store.

The pages, and what each rests on:

* ``index.html``: the verdict of the latest run (what was decided, what could not be,
  how many more nights are needed); per headline figure (a workload a check declares
  as its headline), the latest value on every file system with its date and its spread
  over recent runs, and the best file system where the spreads allow naming one; each
  file system's latest run with its failures and skips and their causes.
* ``fs-NAME.html``: that file system's problems, advice, headline histories, the
  charts the checks declare, scaling, and every other figure folded by check.
* ``compare.html``: every file system side by side, the same variant next to the same
  variant, with the spread of recent runs.
* ``advisor.html``: which scratch for a job: common workloads predicted on every file
  system, and a form for a job of one's own (``reports.advisor``).
* ``run-ID.html``: one run: configuration, wall time, every case with its parameters as
  columns, result, cause, time and a link to its output; ``runs.html`` lists the runs.

Pages name no check and no metric: everything they say comes from what the checks
declared and the store keeps beside each figure (label, unit, which way is better,
headline workload, chart; the case's title, variant and workload in words).

Choices, and why:
* Plotly.js draws the plots: the plotly package ships ``plotly.min.js``, so the pages
  carry it as a local file and work offline.  Plot specifications are plain JSON built
  here (plotly's Python figure objects validate every property: too slow at scale).
* Jinja2 renders with autoescaping, so notes and names cannot inject markup; plot JSON
  goes through ``tojson``, which escapes ``<``, ``>``, ``&`` and quotes.
* Plots render when they scroll into view or their folded section opens, and a page
  opens with at most a screenful of them (``SCREENFUL`` headline plots; the rest one
  click away), with plotly's 2-D bundle unless 3-D surfaces are on its first screen
  (``Plots.bundle``): a file system's page held 195 plots and a 4.8 MB bundle.
* Cost does not grow with the store: the pages read the latest ``HISTORY_RUNS`` runs of
  each tag (histories and box plots show those), and a run's page, which never changes
  once its run is stored, is skipped on a rebuild when the manifest says it was built
  from the same run with the same templates.

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
* The latest value is coloured by the quarter of the earlier runs it falls in (NERSC's
  UMAMI), and the box plot of earlier runs is drawn only from ``MIN_EARLIER_FOR_BOX``
  earlier runs on: never from the latest value alone.
"""

import hashlib
import json
from html import escape
import math
import os
import re
import shutil
import statistics
import time
from collections import Counter, defaultdict
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup

from reports import advisor, fs_diary, naming, runreport, store
from scratchbench import units
from scratchbench.figures import DESCRIPTIVE_ROLES, SHORTEST_TRUSTED_PHASE_S, too_short_words

HISTORY_RUNS = 200        # runs of each tag the pages read and plot
RECENT_RUNS = store.RECENT_RUNS   # runs a spread, a ranking or a piece of advice rests on
MIN_RUNS_TO_RANK = 5      # runs on each side before a file system is named best
MIN_EARLIER_FOR_BOX = 4   # earlier runs before a box plot and quartile colours
LOG_SCALE_RATIO = 30      # bars on a log axis when values differ by more than this
UNSTEADY_SPREAD = 0.5     # advice warns when the recent range exceeds this share of the median
VARIANT_ADVICE_RATIO = 1.5  # advice compares variants that differ by at least this
RUNS_ON_INDEX = 10
QUARTILE_COLOURS = ["#c0392b", "#e67e22", "#9acd32", "#1e8449"]   # worst .. best quarter
QUARTILE_WORDS = ["worst quarter", "below median", "above median", "best quarter"]
LINE_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                "#17becf", "#7f7f7f", "#bcbd22", "#d62728"]
#: Plotly's (d3's) way of writing a number as units.number does: three significant
#: digits, thousands separators, no exponent ("18,400", not "1.836e+4")
HOVER_NUMBER = ",.3~r"
#: plots open before the reader asks for more (a screenful: the rest are in a fold)
SCREENFUL = 4
# at most this many labelled ticks on a numeric x axis of a line chart: more overlap at
# the charts' width
MOST_TICKS = 6
#: plotly.js bundles: the full one (3-D surfaces), shipped by the plotly package, and the
#: cartesian one (2-D plots only), vendored in templates/ at the same version
PLOTLY_FULL, PLOTLY_CARTESIAN = "plotly.min.js", "plotly-cartesian.min.js"
MANIFEST = ".scratchbench-pages.json"   # what each run page was built from
CACHE = ".scratchbench-cache"           # compiled templates, the advisor's predictions

# Verdict labels in words; a label not listed here is shown as it is.
VERDICT_WORDS = {"ok": "no change", "regression": "regression", "improvement": "improvement",
                 "suspect": "unconfirmed change (one bad night)",
                 "insufficient-history": "not enough history yet", "recovered": "recovered",
                 "ongoing regression": "still regressed", "too-short": "too short to trust"}
#: verdicts that decided nothing (a figure too short to trust never will, at its size)
UNDECIDED = {"insufficient-history", "suspect", "too-short"}

WINDOW = """WITH recent AS (
    SELECT run_id, started FROM (
        SELECT run_id, started, ROW_NUMBER() OVER (
            PARTITION BY tag ORDER BY started DESC, run_id DESC) AS newest
        FROM runs)
    WHERE newest <= ?)"""


# ---- formatting -----------------------------------------------------------------------
def when(ts):
    return datetime.fromtimestamp(ts or 0, timezone.utc).strftime("%Y-%m-%d %H:%M")


def day(ts):
    return datetime.fromtimestamp(ts or 0, timezone.utc).strftime("%Y-%m-%d")


def fs_page_name(target):
    """The page of one file system (the verdict file links a change to its chart there)."""
    return f"fs-{slug(target)}.html"


def slug(text):
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-") or "x"


fmt = units.number


def times(ratio):
    return f"{ratio:.3g}x" if math.isfinite(ratio) else "many times"


def duration(seconds):
    return "" if seconds is None else units.duration_words(seconds)


def verdict_words(label):
    return VERDICT_WORDS.get(label, str(label).replace("-", " ").replace("_", " "))


# ---- what the store holds ---------------------------------------------------------------
class Series:
    """One history: a case variant on one partition and environment, one figure."""

    __slots__ = ("key", "metric", "points", "target", "kind", "partition", "environ",
                 "tag", "unit", "label", "better", "headline", "chart", "check", "variant",
                 "workload_words", "params", "scaling", "case_id", "role",
                 "phase_seconds", "too_short")

    def __init__(self, key, metric, points, meta):
        self.key, self.metric, self.points = key, metric, points   # [(time, value, run)]
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
    def descriptive(self):
        """Describes a model, a search or the measurement, not the file system."""
        return self.role in DESCRIPTIVE_ROLES

    @property
    def figure(self):
        """One figure of one workload, comparable across file systems: the same tag,
        check, variant, sizes and declared meaning."""
        return (self.tag, self.check, self.variant, self.workload_words, self.label,
                self.unit, self.better)


def load(conn):
    """The histories of the latest HISTORY_RUNS runs of each tag:
    {(series key, metric): Series}."""
    points, latest_case = {}, {}
    for case_id, key, metric, value, started, run_id in conn.execute(
            f"{WINDOW} SELECT c.case_id, c.series, f.metric, f.value, recent.started, "
            "c.run_id FROM recent JOIN cases c ON c.run_id = recent.run_id "
            "JOIN figures f ON f.case_id = c.case_id WHERE f.value IS NOT NULL "
            "ORDER BY recent.started, c.run_id", (HISTORY_RUNS,)):
        if not math.isfinite(value):
            continue     # e.g. a rate over a zero time: no point to plot (the run page lists it)
        k = (key, metric)
        line = points.get(k)
        if line is None:
            line = points[k] = []
        line.append((started or 0, value, run_id))
        latest_case[k] = case_id       # rows come oldest first: the last one is the latest
    meta = {}
    ids = sorted(set(latest_case.values()))
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        for row in conn.execute(
                "SELECT c.*, f.metric, f.unit, f.label, f.better, f.headline, f.chart, f.role, "
                "f.phase_seconds, f.too_short "
                "FROM figures f JOIN cases c ON f.case_id = c.case_id WHERE f.case_id IN "
                f"({','.join('?' * len(chunk))})", chunk):
            meta[(row["case_id"], row["metric"])] = row
    return {k: Series(k[0], k[1], line, meta[(latest_case[k], k[1])])
            for k, line in points.items()}


def latest_cases(conn):
    """Every case of each file system's latest run (within the window):
    {target: (run row, [case rows])}."""
    out = {}
    for target, run_id, _ in conn.execute(
            f"{WINDOW} SELECT c.scratch_target, c.run_id, MAX(recent.started) FROM cases c "
            "JOIN recent ON c.run_id = recent.run_id GROUP BY c.scratch_target",
            (HISTORY_RUNS,)).fetchall():
        run = conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        cases = conn.execute("SELECT * FROM cases WHERE run_id = ? AND scratch_target IS ? "
                             "ORDER BY title, check_name, variant, environ",
                             (run_id, target)).fetchall()
        out[target or "unspecified"] = (run, cases)
    return out


# ---- one number per run, spread, ranking ---------------------------------------------------
class Standing:
    """A figure of one file system: one value per run (the median over the partitions,
    and over the environments when given several, that measured it in that run; the
    rankings give it one environment: see lead_environment), and its recent spread."""

    def __init__(self, target, series):
        self.target, self.series = target, series
        by_run = {}
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
    def n(self):
        return len(self.recent)

    def spread_words(self, unit):
        if self.n == 1:
            return "one run so far"
        return f"{fmt(self.low)} to {fmt(self.high)} {unit} over {self.n} runs"

    def rests_on(self):
        dates = day(self.first) if self.n == 1 or day(self.first) == day(self.last) \
            else f"{day(self.first)} to {day(self.last)}"
        runs = "the latest run" if self.n == 1 else f"the last {self.n} runs"
        sizes = "; ".join(self.workload_words)
        return f"{runs} ({dates}){': ' + sizes if sizes else ''}"


def _apart(good, bad, better):
    """Every recent value of `good` beats every recent value of `bad`."""
    return good.low > bad.high if better == "higher" else good.high < bad.low


def _ratio(good, bad, better):
    """How many times better `good` is than `bad` on the medians (>= 1 when better)."""
    a, b = (good.median, bad.median) if better == "higher" else (bad.median, good.median)
    return a / b if b else math.inf


def lead_environment(series_by_target):
    """The one programming environment a headline value comes from: the one that
    measured the figure on the most file systems, then in the most runs, then the first
    by name.  Never a median across environments: MPI libraries differ by several times
    on metadata rates, so such a median would be neither's number."""
    targets, points = Counter(), Counter()
    for ss in series_by_target.values():
        targets.update({s.environ for s in ss})
        for s in ss:
            points[s.environ] += len(s.points)
    return min(targets, key=lambda e: (-targets[e], -points[e], e))


def in_environment(series, environ):
    """The series of one environment; where it did not run, those of the target's own
    lead environment (said beside the value)."""
    mine = [s for s in series if s.environ == environ]
    return mine or [s for s in series if s.environ == lead_environment({"": series})]


class Ranking:
    """Which file system is best for one figure, and whether the spreads allow saying so."""

    def __init__(self, figure, series_by_target):
        self.figure = figure
        (self.tag, self.check, self.variant, self.sizes, self.label, self.unit,
         self.better) = figure
        self.by_target = series_by_target
        self.environ = lead_environment(series_by_target)
        self.environs = sorted({s.environ for ss in series_by_target.values() for s in ss})
        self.standings = {t: Standing(t, in_environment(ss, self.environ))
                          for t, ss in series_by_target.items()}
        ranked = sorted(self.standings.values(), key=lambda s: s.median,
                        reverse=self.better == "higher")
        self.headline = next((s.headline for ss in series_by_target.values() for s in ss
                              if s.headline), "")
        self.best = ranked[0]
        self.second = ranked[1] if len(ranked) > 1 else None
        self.regressed = {}     # target: its regression verdicts (set from the nightly verdict)
        self.margin = self.runs_needed = None
        if any(s.descriptive for ss in series_by_target.values() for s in ss):
            self.status = "not ranked"
            return
        #: (target, phase seconds) where the latest run's phase was too short to time
        self.too_short = sorted({(s.target, s.phase_seconds) for ss in series_by_target.values()
                                 for s in ss if s.too_short})
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
    def name(self):
        return self.headline or self.label

    @property
    def workload_words(self):
        return sorted({w for s in self.standings.values() for w in s.workload_words})

    def margin_words(self):
        return f"{times(self.margin)} {'higher' if self.better == 'higher' else 'lower'}"

    def regression_words(self, target):
        """'' or what a recommendation of target must say: it just regressed here."""
        found = self.regressed.get(target)
        if not found:
            return ""
        v = max(found, key=lambda v: v.get("since") or "")
        state = "new" if v["verdict"] == "regression" else "ongoing"
        return (f"but {target} regressed on {v.get('since') or 'a recent night'} "
                f"({state}, {units.percent(v.get('relative_change'))}): its older runs "
                "may no longer hold")

    def verdict(self):
        """The ranking in words, as the index shows it (and the advice repeats)."""
        if self.status == "not ranked":
            return ("not ranked: it describes a model or the measurement, not the file "
                    "system")
        if self.status == "too short":
            target, seconds = min(self.too_short, key=lambda ts: ts[1])
            return f"not ranked: on {target}, {too_short_words(seconds)}"
        if self.status == "alone":
            return f"only measured on {self.best.target}"
        if self.status == "winner":
            caveat = self.regression_words(self.best.target)
            return (f"{self.best.target}: {self.margin_words()} than {self.second.target} "
                    f"(every one of the last {min(self.best.n, self.second.n)} runs)"
                    + (f"; {caveat}" if caveat else ""))
        if self.status == "no clear winner":
            return (f"no clear winner: the ranges of the last runs overlap "
                    f"({self.best.target} leads by {times(self.margin)} on the median)")
        return (f"not decided yet: {self.runs_needed} more run{'s' * (self.runs_needed > 1)} "
                f"needed (so far {self.best.target} leads by {times(self.margin)})")


def rankings(series):
    """A ranking of every figure (except those drawn on a declared chart), in the order
    the pages list them."""
    grouped = defaultdict(lambda: defaultdict(list))
    for s in series.values():
        if not s.chart:
            grouped[s.figure][s.target].append(s)
    return sorted((Ranking(figure, by_target) for figure, by_target in grouped.items()),
                  key=lambda r: (r.tag, r.check, r.variant, r.name))


# ---- advice ------------------------------------------------------------------------------
def advice(target, headline_rankings, series):
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
            lines.append(f"Best file system here for {what}: {r.margin_words()} than "
                         f"{r.second.target}, the next best (a median of {fmt(mine.median)} "
                         f"{r.unit} against {fmt(r.second.median)} {r.unit}). "
                         f"Rests on {mine.rests_on()}.{caveat}")
        elif r.status == "winner" and _apart(r.best, mine, r.better) and \
                min(r.best.n, mine.n) >= MIN_RUNS_TO_RANK:
            lines.append(f"For {what}, prefer {r.best.target}: "
                         f"{times(_ratio(r.best, mine, r.better))} "
                         f"{'higher' if r.better == 'higher' else 'lower'} there (a median of "
                         f"{fmt(r.best.median)} {r.unit} against {fmt(mine.median)} {r.unit} "
                         f"here). Rests on {mine.rests_on()}.{caveat}")
        elif r.status == "winner":
            level.append(what)
        elif r.status == "no clear winner":
            level.append(what)
        else:
            undecided.append((what, r.runs_needed))
    for r in headline_rankings:
        mine = r.standings.get(target)
        if mine is not None and r.status not in ("not ranked", "too short") and \
                mine.n >= MIN_RUNS_TO_RANK and mine.median and \
                (mine.high - mine.low) / abs(mine.median) > UNSTEADY_SPREAD:
            lines.append(f"{r.name} varies a lot from run to run here ({mine.spread_words(r.unit)}): "
                         f"plan with the lower figure.")
    lines.extend(_variant_advice(target, series))
    if level:
        lines.append("No clear difference from the other file systems (their recent ranges "
                      f"overlap) for: {'; '.join(level)}.")
    if short:
        lines.append("Not compared, their timed phases too short to trust (under "
                     f"{SHORTEST_TRUSTED_PHASE_S:g} s): {'; '.join(short)}.")
    if undecided:
        most = max(n for _, n in undecided)
        lines.append(f"Not enough data yet to compare file systems for: "
                     f"{'; '.join(w for w, _ in undecided)} "
                     f"({most} more run{'s' * (most > 1)} needed).")
    return lines


def _variant_advice(target, series):
    """Within one check, which variant does best for a headline figure's label on this
    file system (e.g. one file per process against one shared file), when the ranges
    of recent runs do not overlap."""
    labels = {(s.tag, s.check, s.label) for s in series.values()
              if s.target == target and s.headline and not s.descriptive}
    by_variant = defaultdict(lambda: defaultdict(list))
    for s in series.values():
        if s.target == target and (s.tag, s.check, s.label) in labels and not s.scaling \
                and not s.chart:
            by_variant[(s.tag, s.check, s.label, s.unit, s.better)][s.variant].append(s)
    lines = []
    for (tag, check, label, unit, better), variants in sorted(by_variant.items()):
        if len(variants) < 2:
            continue
        environ = lead_environment(variants)
        standings = [Standing(target, in_environment(ss, environ))
                     for ss in variants.values()]
        names = dict(zip(map(id, standings), variants))
        standings.sort(key=lambda s: s.median, reverse=better == "higher")
        best, worst = standings[0], standings[-1]
        if min(best.n, worst.n) < MIN_RUNS_TO_RANK or not worst.median or not best.median:
            continue
        ratio = _ratio(best, worst, better)
        if _apart(best, worst, better) and ratio >= VARIANT_ADVICE_RATIO:
            lines.append(f"{check}: {label[0].lower() + label[1:]} is {times(ratio)} "
                         f"{'higher' if better == 'higher' else 'lower'} with "
                         f"{names[id(best)]} ({fmt(best.median)} {unit}) than with "
                         f"{names[id(worst)]} ({fmt(worst.median)} {unit}). Rests on "
                         f"{best.rests_on()}.")
    return lines


# ---- the verdict banner --------------------------------------------------------------------
def nights_needed(entry):
    """How many more nights a figure needs before it can be judged (0 when judged)."""
    for name in ("nights_needed", "runs_needed", "more_runs_needed"):
        if isinstance(entry.get(name), int):
            return entry[name]
    # the verdict's detail: "3 run(s) with a value, 8 needed" (older: "3 runs, 8 needed")
    found = re.search(r"(\d+) runs?(?:\(s\))?(?: with a value)?, (\d+) needed",
                      entry.get("detail") or "")
    return max(0, int(found.group(2)) - int(found.group(1))) if found else 0


#: changes the banner names one by one (the verdict file and the CLI name them all)
BANNER_CHANGES = 20


def regressions_of(series, verdicts):
    """The regression verdicts (new or ongoing) of these series (every environment)."""
    return [v for s in series
            for v in [verdicts.get((s.key, s.metric))]
            if v and v["verdict"] in ("regression", "ongoing-regression")]


def banner(verdicts, latest_run):
    """What the nightly verdict of the latest run decided and what it could not."""
    if latest_run is None:
        return None
    run_id = latest_run["run_id"]
    if not verdicts or verdicts.get("run_id") != run_id:
        return {"state": "missing", "run": run_id, "when": when(latest_run["started"]),
                "text": f"No verdict for run {run_id} yet: run `scratchbench verdict nightly`."}
    figures = verdicts.get("figures") or []
    undecided = [f for f in figures if f["verdict"] in UNDECIDED or nights_needed(f) > 0]
    decided = Counter(f["verdict"] for f in figures if f not in undecided)
    waiting = Counter(f["verdict"] for f in undecided)
    most = max((nights_needed(f) for f in undecided), default=0)
    bad = any("regress" in label for label in decided)
    changed = naming.changes(figures)
    return {"state": "bad" if bad else "unsure" if undecided else "good", "run": run_id,
            "changes": [{"sentence": naming.change_sentence(f), "chart": f.get("chart"),
                         "verdict": f["verdict"]} for f in changed[:BANNER_CHANGES]],
            "more_changes": max(0, len(changed) - BANNER_CHANGES),
            "when": when(latest_run["started"]), "total": len(figures),
            "decided": [(n, verdict_words(v), v) for v, n in decided.most_common()],
            "undecided_count": len(undecided),
            "undecided": [(n, verdict_words(v), v) for v, n in waiting.most_common()],
            "nights_needed": most}


# ---- plots ---------------------------------------------------------------------------------
def _quartile(earlier, latest, higher):
    """0..3: the quarter of the earlier runs the latest value falls in, 3 = best."""
    if len(earlier) < MIN_EARLIER_FOR_BOX:
        return None
    q1, q2, q3 = statistics.quantiles(earlier, n=4)
    position = 0 if latest < q1 else 1 if latest < q2 else 2 if latest < q3 else 3
    return position if higher else 3 - position


def _box(values):
    """Plotly box statistics precomputed (Tukey fences): small pages, fast plots."""
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    iqr = q3 - q1
    return {"q1": [q1], "median": [median], "q3": [q3],
            "lowerfence": [min(v for v in values if v >= q1 - 1.5 * iqr)],
            "upperfence": [max(v for v in values if v <= q3 + 1.5 * iqr)]}


def _time_range(stamps):
    """A date axis that never zooms into milliseconds: at least two hours wide."""
    lo, hi = min(stamps), max(stamps)
    pad = max((hi - lo) * 0.05, 3600)
    return [(lo - pad) * 1000, (hi + pad) * 1000]


def history_plot(lines, unit, higher):
    """UMAMI's layout: the history on the left with the latest value marked and coloured
    by the quarter of earlier runs it falls in; a box plot of the earlier runs on the
    right (from MIN_EARLIER_FOR_BOX earlier runs on).  lines: [(name, [(t, v, run)])].
    Returns (spec, [(name, latest, quartile words or None)])."""
    data, notes, stamps = [], [], []
    boxes = any(len(points) - 1 >= MIN_EARLIER_FOR_BOX for _, points in lines)
    # One run so far: its value over its date, not a dot lost on a time axis of minutes.
    single = len({t for _, points in lines for t, _, _ in points}) == 1
    for i, (name, points) in enumerate(lines):
        colour = LINE_COLOURS[i % len(LINE_COLOURS)]
        xs = [f"{when(t)} UTC" if single else int(t * 1000) for t, _, _ in points]
        ys = [v for _, v, _ in points]
        stamps += [t for t, _, _ in points]
        earlier, latest = ys[:-1], ys[-1]
        q = _quartile(earlier, latest, higher)
        notes.append((name, latest, QUARTILE_WORDS[q] if q is not None else None))
        marker = QUARTILE_COLOURS[q] if q is not None else colour
        data.append({"type": "scatter", "mode": "lines+markers", "x": xs, "y": ys,
                     "text": [r for _, _, r in points], "name": name,
                     "line": {"color": colour, "width": 1}, "marker": {"size": 5, "color": colour},
                     "hovertemplate": f"{name}<br>%{{x{'' if single else '|%Y-%m-%d %H:%M'}}}"
                                      f"<br>%{{y:{HOVER_NUMBER}}} {unit}"
                                      "<br>run %{text}<extra></extra>"})
        data.append({"type": "scatter", "mode": "markers", "x": [xs[-1]], "y": [latest],
                     "showlegend": False, "name": f"{name}, latest",
                     "marker": {"size": 11, "color": marker, "line": {"color": "#222", "width": 1}},
                     "hovertemplate": f"{name}, latest: %{{y:{HOVER_NUMBER}}} {unit}<extra></extra>"})
        if boxes and len(earlier) >= MIN_EARLIER_FOR_BOX:
            data.append(dict(_box(earlier), type="box", name=name, x=[name], xaxis="x2",
                             showlegend=False, marker={"color": colour}, hoverinfo="y"))
            data.append({"type": "scatter", "mode": "markers", "x": [name], "y": [latest],
                         "xaxis": "x2", "showlegend": False, "name": f"{name}, latest",
                         "marker": {"size": 12, "color": marker, "symbol": "diamond",
                                    "line": {"color": "#222", "width": 1}},
                         "hovertemplate": f"latest: %{{y:{HOVER_NUMBER}}} {unit}<extra></extra>"})
    top = 30 + LINE_PX * (_legend_rows([name for name, _ in lines], 480)
                          if len(lines) > 1 else 0)
    layout = {"height": 220 + top, "margin": {"l": 60, "r": 10, "t": top, "b": 35},
              "showlegend": len(lines) > 1,
              "legend": {"orientation": "h", "x": 0, "y": 1, "yanchor": "bottom",
                         "font": {"size": 11}},
              "xaxis": {"domain": [0, 0.74 if boxes else 1], "type": "category",
                        "title": {"text": "the only run so far", "font": {"size": 11}}}
              if single else {"domain": [0, 0.74 if boxes else 1], "type": "date",
                              "range": _time_range(stamps), "nticks": 6},
              "yaxis": {"rangemode": "tozero", "title": {"text": unit}},
              "paper_bgcolor": "#ffffff", "plot_bgcolor": "#fbfbfb"}
    if boxes:
        layout["xaxis2"] = {"domain": [0.8, 1], "type": "category",
                            "title": {"text": "earlier runs", "font": {"size": 11}}}
    return {"data": data, "layout": layout}, notes


def _axis_type(values):
    """'category' for names (a placement of readers, say: a numeric axis draws no point
    of them), 'log' for positive numbers over 16x apart, else 'linear'."""
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in values):
        return "category"
    positive = [v for v in values if isinstance(v, (int, float)) and v > 0]
    return "log" if len(positive) == len(values) and positive and \
        max(positive) / min(positive) >= 16 else "linear"


def _spaced_ticks(values, log, most=MOST_TICKS):
    """Of sorted x values, the ones to label: the first, then each at least 1/most of the
    axis beyond the last labelled (self-scaling's sizes crowd: 64 KiB, 96 KiB, 128 KiB
    ... labelled each would overlap), and the last in place of a too-close neighbour."""
    if len(values) <= 2:
        return list(values)
    where = [math.log10(v) for v in values] if log else list(values)
    gap = (where[-1] - where[0]) / most
    kept = [0]
    for i in range(1, len(values)):
        if where[i] - where[kept[-1]] >= gap * 0.999:
            kept.append(i)
    if kept[-1] != len(values) - 1:
        kept[-1 if len(kept) > 1 else len(kept):] = [len(values) - 1]
    return [values[i] for i in kept]


def lines_plot(x_name, lines, unit, error_bars=None):
    """x against value, one line per name: lines = {name: {x: value}};
    error_bars = {name: {x: (low, high)}} for the spread of recent runs."""
    data, xs_all = [], []
    for i, (name, points) in enumerate(sorted(lines.items(), key=lambda kv: str(kv[0]))):
        xs = sorted(points, key=lambda x: (isinstance(x, str), x if not isinstance(x, str)
                                           else 0, str(x)))
        xs_all += xs
        trace = {"type": "scatter", "mode": "lines+markers", "name": str(name),
                 "x": xs, "y": [points[x] for x in xs],
                 "line": {"color": LINE_COLOURS[i % len(LINE_COLOURS)]},
                 "hovertemplate": f"{name}<br>{x_name} %{{x}}<br>%{{y:{HOVER_NUMBER}}} {unit}<extra></extra>"}
        if error_bars and name in error_bars:
            spread = error_bars[name]
            trace["error_y"] = {"type": "data", "symmetric": False,
                                "array": [spread[x][1] - points[x] for x in xs],
                                "arrayminus": [points[x] - spread[x][0] for x in xs],
                                "thickness": 1}
        data.append(trace)
    kind = _axis_type(xs_all)
    ticks = list(dict.fromkeys(xs_all)) if kind == "category" else sorted(set(xs_all))
    xaxis = {"title": {"text": x_name}, "type": kind}
    if kind == "category":
        xaxis["categoryorder"] = "array"
        xaxis["categoryarray"] = [str(x) for x in ticks]
    elif kind == "log" or len(ticks) <= 12:
        ticks = _spaced_ticks(ticks, log=kind == "log")
        xaxis.update(tickvals=ticks, ticktext=[fmt(x) for x in ticks])
    # the legend's rows add to the height: they never squeeze the plot
    top = 30 + LINE_PX * (_legend_rows([d["name"] for d in data], 480) if len(data) > 1 else 0)
    return {"data": data, "layout": {
        "height": 250 + top, "margin": {"l": 60, "r": 10, "t": top, "b": 45},
        "showlegend": len(data) > 1,
        "legend": {"orientation": "h", "x": 0, "y": 1, "yanchor": "bottom"},
        "xaxis": xaxis, "yaxis": {"title": {"text": unit}, "rangemode": "tozero"}}}


def surface_plots(x_name, y_name, cells, unit, ticks=None, marks=(), zrange=None):
    """A 3-D surface and a heat map of value over (x, y); cells = {(x, y): value}.
    Missing cells (e.g. small records of large files) stay empty.  ``ticks``: the
    declared words of axis values ({"x": {65536: "64 KiB"}}); ``marks``: declared
    thresholds, drawn where they fall inside the measured range (see chart_marks);
    ``zrange``: (low, high) shared by plots set side by side, so their colours compare.
    Values spread over more than LOG_SCALE_RATIO are coloured on a log scale."""
    ticks = ticks or {}
    xs = sorted({x for x, _ in cells})
    ys = sorted({y for _, y in cells})
    z = [[cells.get((x, y)) for x in xs] for y in ys]
    values = [v for v in cells.values() if v is not None and math.isfinite(v)]
    low, high = zrange or (min(values, default=0), max(values, default=0))
    log = low > 0 and high / low > LOG_SCALE_RATIO
    colour = _colour_scale(low, high, log, unit)

    def words(axis, v):
        return ticks.get(axis, {}).get(v) or fmt(v)

    text = [[f"{words('x', x)}, {words('y', y)}: {fmt(cells[(x, y)])} {unit}"
             if cells.get((x, y)) is not None else "" for x in xs] for y in ys]
    shade = [[math.log10(v) if log and v and v > 0 else v for v in row] for row in z]
    scene_axis = {"x": (x_name, xs), "y": (y_name, ys)}
    scene = {f"{a}axis": {"title": {"text": name}, "type": _axis_type(values_),
                          "tickvals": values_, "ticktext": [words(a, v) for v in values_]}
             for a, (name, values_) in scene_axis.items()}
    scene["zaxis"] = {"title": {"text": unit}, "type": "log" if log else "linear"}
    if log:
        scene["zaxis"]["dtick"] = 1      # a tick per power of ten, no crowded minor labels
    if high > low and log:
        scene["zaxis"]["range"] = [math.log10(low), math.log10(high)]
    elif high > low:
        # Ticks above zero only (a "0" sits on the corner where the x and y labels
        # meet) and room above the top one (at the very top its label was cut: "000").
        values_ = _round_ticks(high)
        scene["zaxis"].update(range=[0, max(high, values_[-1]) * 1.1], tickvals=values_,
                              ticktext=[fmt(v) for v in values_])
    surface = {"data": [dict(colour, type="surface", x=xs, y=ys, z=z, surfacecolor=shade,
                             text=text, hovertemplate="%{text}<extra></extra>")],
               "layout": {"height": 420, "margin": {"l": 0, "r": 0, "t": 30, "b": 0},
                          "scene": dict(scene, camera={"eye": {"x": 1.7, "y": 1.7, "z": 1.0}})}}
    heat = {"data": [dict(colour, type="heatmap", x=[words("x", x) for x in xs],
                          y=[words("y", y) for y in ys], z=shade, text=text,
                          hovertemplate="%{text}<extra></extra>")],
            "layout": {"height": 420, "margin": {"l": 80, "r": 10, "t": 30, "b": 60},
                       "xaxis": {"title": {"text": x_name}, "type": "category"},
                       "yaxis": {"title": {"text": y_name}, "type": "category"}}}
    for mark in marks:
        axis = mark["axis"]
        position = _category_position(xs if axis == "x" else ys, mark["value"])
        if position is None:
            continue
        other = ys if axis == "x" else xs
        plane = {"x": [[mark["value"]] * 2] * 2, "y": [[other[0], other[-1]]] * 2} \
            if axis == "x" else {"y": [[mark["value"]] * 2] * 2, "x": [[other[0], other[-1]]] * 2}
        bottom, top = (low, high) if high > low else (low or 0, (low or 0) + 1)
        surface["data"].append(dict(
            plane, type="surface", z=[[bottom, bottom], [top, top]], opacity=0.25,
            showscale=False, colorscale=[[0, "#c0392b"], [1, "#c0392b"]], name=mark["label"],
            hovertemplate=f"{escape(mark['label'])}<extra></extra>"))
        where = {"x": [mark["value"]], "y": [other[-1]]} if axis == "x" else \
            {"y": [mark["value"]], "x": [other[-1]]}
        surface["data"].append(dict(where, type="scatter3d", mode="text", z=[top],
                                    text=[mark["label"]], showlegend=False, hoverinfo="skip",
                                    textfont={"color": "#c0392b"}))
        line = {"type": "line", "line": {"color": "#c0392b", "width": 2, "dash": "dash"}}
        note = {"text": mark["label"], "showarrow": False, "font": {"color": "#c0392b"}}
        if axis == "x":
            heat["layout"].setdefault("shapes", []).append(dict(
                line, xref="x", yref="paper", x0=position, x1=position, y0=0, y1=1))
            heat["layout"].setdefault("annotations", []).append(dict(
                note, xref="x", yref="paper", x=position, y=1.02, yanchor="bottom"))
        else:
            heat["layout"].setdefault("shapes", []).append(dict(
                line, xref="paper", yref="y", y0=position, y1=position, x0=0, x1=1))
            heat["layout"].setdefault("annotations", []).append(dict(
                note, xref="paper", yref="y", y=position, x=1, xanchor="right"))
    return surface, heat


def _round_ticks(high, count=4):
    """About ``count`` round values above zero up to ``high``: 8000 -> 2000 ... 8000."""
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [step * i for i in range(1, int(high // step) + 1)] or [high]


def _colour_scale(low, high, log, unit):
    """The colour scale of a surface and its heat map: linear, or over log10 of the values
    with ticks at powers of ten (in the values' own unit)."""
    scale = {"colorscale": "Viridis", "colorbar": {"title": {"text": unit}}}
    if high <= low:
        return scale
    if not log:
        return dict(scale, cmin=low, cmax=high, zmin=low, zmax=high)
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    scale["colorbar"].update(tickvals=list(range(first, last + 1)),
                             ticktext=[fmt(10.0 ** k) for k in range(first, last + 1)])
    scale["colorbar"]["title"]["text"] = f"{unit} (log scale)"
    bounds = {"cmin": math.log10(low), "cmax": math.log10(high)}
    return dict(scale, **bounds, zmin=bounds["cmin"], zmax=bounds["cmax"])


def _category_position(values, value):
    """Where a value falls among sorted axis values, as a fractional index (interpolated
    on a log scale for log axes), or None outside them."""
    if not values or value < values[0] or value > values[-1]:
        return None
    for i in range(len(values) - 1):
        a, b = values[i], values[i + 1]
        if a <= value <= b:
            if _axis_type(values) == "log":
                return i + math.log(value / a) / math.log(b / a)
            return i + (value - a) / (b - a)
    return float(len(values) - 1)


def bars_plot(categories, traces, unit, highlight=None, width=480):
    """Bars of the recent median with the recent range as error bars.
    traces: [(name, {category: Standing})]; a log axis when values differ by orders;
    width: the narrowest the plot is drawn (labels and legend are laid out for it)."""
    data, values = [], []
    for i, (name, by_category) in enumerate(traces):
        ys, lo, hi, colours = [], [], [], []
        for c in categories:
            s = by_category.get(c)
            ys.append(s.median if s else None)
            lo.append(s.median - s.low if s else 0)
            hi.append(s.high - s.median if s else 0)
            colours.append("#1e8449" if highlight and c == highlight else
                           LINE_COLOURS[i % len(LINE_COLOURS)])
            if s:
                values += [s.low, s.high]
        data.append({"type": "bar", "name": str(name), "x": list(categories), "y": ys,
                     "marker": {"color": colours},
                     "error_y": {"type": "data", "symmetric": False, "array": hi,
                                 "arrayminus": lo, "thickness": 1.2, "color": "#222"},
                     "hovertemplate": f"{name}<br>%{{x}}<br>median %{{y:{HOVER_NUMBER}}} {unit}"
                                      "<extra></extra>"})
    positive = [v for v in values if v and v > 0]
    log = bool(positive) and len(positive) == len(values) and \
        max(positive) / min(positive) > LOG_SCALE_RATIO
    # Long names of variants wrapped to the width of their bar group, and the room for
    # them and for the legend's rows added to the plot's height, not taken from it
    # (labels drawn over each other and a plot squeezed to 70 px, before).
    per_group = max(12, int(width / max(1, len(categories)) / CHAR_PX))
    ticktext = [_wrap(str(c), per_group) for c in categories]
    label_lines = max((t.count("<br>") + 1 for t in ticktext), default=1)
    legend_rows = _legend_rows([str(name) for name, _ in traces], width) \
        if len(traces) > 1 else 0
    top, bottom = 30 + LINE_PX * legend_rows, 25 + LINE_PX * label_lines
    yaxis = {"title": {"text": unit + (" (log scale)" if log else "")},
             "type": "log" if log else "linear"}
    if log:
        yaxis["dtick"] = 1      # a tick per power of ten, no crowded minor labels
    if not log:
        yaxis["rangemode"] = "tozero"
    return {"data": data, "layout": {
        "barmode": "group", "height": 230 + top + bottom,
        "margin": {"l": 70, "r": 10, "t": top, "b": bottom},
        "showlegend": len(traces) > 1,
        "legend": {"orientation": "h", "x": 0, "y": 1, "yanchor": "bottom"},
        "yaxis": yaxis, "xaxis": {"type": "category", "tickvals": list(categories),
                                  "ticktext": ticktext, "tickangle": 0}}}, log


#: what a plot's text takes: a character of 12 px text, and a line of it
CHAR_PX, LINE_PX = 7, 18


def _wrap(text, width):
    """Text in lines of at most ``width`` characters (words kept whole), for a tick label."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "<br>".join(lines + [line])


def _legend_rows(names, width):
    """Rows a horizontal legend of these names takes in ``width`` pixels."""
    rows, used = 1, 0
    for name in names:
        need = 40 + CHAR_PX * len(name)     # the symbol, the gap and the name
        if used and used + need > width:
            rows, used = rows + 1, 0
        used += need
    return rows


# ---- pages -----------------------------------------------------------------------------------
class Plots:
    """Numbers the plots of one page, and says which plotly bundle its first screen
    needs: the cartesian one (a third of the full one's size) unless a 3-D surface is
    among the first ``SCREENFUL`` plots (folded surfaces load the full bundle when they
    are opened: pages.js)."""

    def __init__(self, prefix="p"):
        self.prefix, self.count, self.first_3d = prefix, 0, None

    def add(self, spec, **info):
        self.count += 1
        if info.get("surface") and self.first_3d is None:
            self.first_3d = self.count
        return dict(info, id=f"{self.prefix}{self.count}", spec=spec)

    @property
    def bundle(self):
        """The plotly bundle the page loads with it."""
        return PLOTLY_FULL if self.first_3d is not None and self.first_3d <= SCREENFUL \
            else PLOTLY_CARTESIAN


def headline_table(headline_rankings, targets):
    """Rows of the index: one per headline figure, grouped by workload tag."""
    by_tag = defaultdict(list)
    for r in headline_rankings:
        by_tag[r.tag].append(r)
    newest = {tag: max(s.latest_time for r in rs for s in r.standings.values())
              for tag, rs in by_tag.items()}
    return [{"tag": tag, "words": naming.tag_words(tag),
             "rows": sorted(by_tag[tag], key=lambda r: (r.check, r.variant, r.name)),
             "targets": [t for t in targets if any(t in r.standings for r in by_tag[tag])]}
            for tag in sorted(by_tag, key=lambda t: -newest[t])]


def problems(cases, with_target=False):
    """Failures and skips of a set of cases, grouped by cause."""
    failed, skipped = defaultdict(list), defaultdict(list)
    for c in cases:
        name = naming.case_words(c) + \
            (f" on {c['scratch_target']}" if with_target and c["scratch_target"] else "") + \
            (f" [{c['environ']}]" if c["environ"] else "")
        if c["result"] == "skip":
            skipped[c["skip_reason"] or "no reason given"].append(name)
        elif c["result"] not in ("pass", "success"):
            phase = f"failed in {c['fail_phase']}" if c["fail_phase"] else "failed"
            # a case whose dependency failed (ReFrame's fail_deps) carries that cause
            # as its skip reason: the history keeps no fixtures to show it
            reason = (c["fail_reason"] or c["skip_reason"] or "no reason given").strip()
            failed[f"{phase}: {reason}"].append(name)
    counts = Counter("skip" if c["result"] == "skip" else
                     "pass" if c["result"] in ("pass", "success") else "fail" for c in cases)
    return {"total": len(cases), "passed": counts["pass"], "failed": counts["fail"],
            "skipped": counts["skip"],
            "failures": sorted(failed.items(), key=lambda kv: -len(kv[1])),
            "skips": sorted(skipped.items(), key=lambda kv: -len(kv[1]))}


def fs_page(target, series, headline_rankings, verdicts, plots):
    """The sections of one file system's page."""
    mine = [s for s in series.values() if s.target == target]
    headlines = []
    for r in headline_rankings:
        standing = r.standings.get(target)
        if standing is None:
            continue
        spec, notes = history_plot([("value per run", [(t, v, run) for t, run, v in
                                                       standing.runs])],
                                   r.unit, r.better == "higher")
        headlines.append(plots.add(spec, ranking=r, standing=standing, notes=notes))
    charts = _chart_sections(mine, plots)
    scaling = _scaling_sections(mine, plots)
    folded = defaultdict(lambda: defaultdict(list))
    groups = defaultdict(list)
    for s in mine:
        if not s.chart:
            groups[(s.tag, s.check, s.variant, s.partition, s.label, s.unit, s.better)].append(s)
    for key, ss in sorted(groups.items()):
        tag, check, variant, partition, label, unit, better = key
        ss.sort(key=lambda s: s.environ)
        spec, notes = history_plot([(s.environ or "value", s.points) for s in ss], unit,
                                   better == "higher")
        judged = [(s.environ, verdicts.get((s.key, s.metric))) for s in ss]
        headline = any(s.headline for s in ss)
        folded[(tag, check)][(variant, partition, tuple(sorted({s.workload_words for s in ss})))]\
            .append(plots.add(spec, label=label, unit=unit, notes=notes, headline=headline,
                              verdicts=[(e, v) for e, v in judged if v],
                              anchors=_anchors(ss)))
    sections = [{"tag": tag, "check": check, "words": naming.tag_words(tag),
                 "variants": [{"variant": v, "partition": p, "workload": "; ".join(w),
                               "plots": sorted(ps, key=lambda p: (not p["headline"], p["label"]))}
                              for (v, p, w), ps in sorted(variants.items())]}
                for (tag, check), variants in sorted(folded.items())]
    return {"headlines": headlines, "charts": charts, "scaling": scaling,
            "sections": sections, "partitions": sorted({s.partition for s in mine}),
            "kind": next((s.kind for s in mine if s.kind), None)}


def _anchors(series):
    """The ids a verdict's link to these figures' chart lands on (naming.figure_anchor)."""
    return [naming.figure_anchor(s.key, s.metric) for s in series]


def _chart_sections(mine, plots):
    """The charts the checks declared, from the latest run of each case."""
    groups = defaultdict(list)
    for s in mine:
        if s.chart:
            groups[(s.tag, s.check, s.variant, s.partition, s.environ, s.chart["title"],
                    s.chart["kind"], s.unit)].append(s)
    out = []
    for key, ss in sorted(groups.items(), key=lambda kv: [str(k) for k in kv[0]]):
        tag, check, variant, partition, environ, title, kind, unit = key
        latest_time = max(s.points[-1][0] for s in ss)
        current = [s for s in ss if s.points[-1][0] == latest_time]
        caption = {"title": title, "check": check, "variant": variant, "environ": environ,
                   "partition": partition, "when": when(latest_time), "unit": unit,
                   "workload": "; ".join(sorted({s.workload_words for s in current
                                                 if s.workload_words}))}
        x_name = current[0].chart["x"][0]
        if kind == "lines":
            lines = defaultdict(dict)
            for s in current:
                lines[s.chart.get("line") or s.label][s.chart["x"][1]] = s.points[-1][1]
            out.append(dict(caption, kind=kind, line=None, anchors=_anchors(ss),
                            plots=[plots.add(lines_plot(x_name, lines, unit))]))
        else:
            y_name = current[0].chart["y"][0]
            surfaces = defaultdict(dict)
            for s in current:
                surfaces[s.chart.get("line") or s.label][(s.chart["x"][1], s.chart["y"][1])] = \
                    s.points[-1][1]
            ticks, marks = chart_ticks(current), chart_marks(current)
            for line, cells in sorted(surfaces.items()):
                surface, heat = surface_plots(x_name, y_name, cells, unit, ticks, marks)
                out.append(dict(caption, kind=kind, line=line,
                                anchors=_anchors(s for s in ss if (
                                    s.chart.get("line") or s.label) == line),
                                thresholds=threshold_words(marks, cells, ticks),
                                plots=[plots.add(surface, surface=True),
                                       plots.add(heat)]))
    return out


def _scaling_sections(mine, plots):
    """Checks that sweep a parameter: each figure against it, from the recent runs."""
    groups = defaultdict(lambda: defaultdict(list))
    for s in mine:
        if s.scaling and s.scaling in s.params and not s.chart:
            groups[(s.tag, s.check, s.scaling, s.label, s.unit)][s.environ].append(s)
    out = []
    for (tag, check, parameter, label, unit), by_env in sorted(groups.items()):
        lines, spreads, runs = defaultdict(dict), defaultdict(dict), 0
        for environ, ss in by_env.items():
            for s in ss:
                try:
                    x = float(s.params[parameter])
                except ValueError:
                    continue
                st = Standing(s.target, [s])
                lines[environ or label][x] = st.median
                spreads[environ or label][x] = (st.low, st.high)
                runs = max(runs, st.n)
        if lines:
            out.append({"check": check, "label": label, "unit": unit,
                        "parameter": naming.words(parameter), "runs": runs,
                        "words": naming.tag_words(tag),
                        "plot": plots.add(lines_plot(naming.words(parameter), lines, unit,
                                                     spreads))})
    return out


def compare_page(all_rankings, plots):
    """Headline figures across file systems, then every figure, the same variant side by
    side."""
    headlines = []
    for r in sorted((r for r in all_rankings if r.headline),
                    key=lambda r: (r.tag, r.check, r.variant, r.name)):
        targets = sorted(r.standings)
        spec, log = bars_plot(targets, [(r.name, r.standings)], r.unit,
                              highlight=r.best.target if r.status == "winner" else None)
        headlines.append(plots.add(spec, ranking=r, log=log, targets=targets))
    grouped = defaultdict(lambda: defaultdict(dict))
    # A variant measured with different sizes on different file systems is not one bar
    # group: its sizes tell the groups apart.
    sized = Counter((r.tag, r.check, r.variant, r.label) for r in all_rankings)
    for r in all_rankings:
        variant = f"{r.variant} ({r.sizes})" if sized[(r.tag, r.check, r.variant, r.label)] > 1 \
            else r.variant
        grouped[(r.tag, r.check, r.label, r.unit, r.better)][variant] = r
    sections = defaultdict(list)
    for (tag, check, label, unit, better), by_variant in sorted(grouped.items()):
        variants = sorted(by_variant)
        targets = sorted({t for r in by_variant.values() for t in r.standings})
        traces = [(t, {v: by_variant[v].standings.get(t) for v in variants
                       if t in by_variant[v].standings}) for t in targets]
        spec, log = bars_plot(variants, traces, unit, width=1100)
        sections[(tag, check)].append(plots.add(
            spec, label=label, unit=unit, better=better, log=log, targets=targets,
            table=[(v, [by_variant[v].standings.get(t) for t in targets],
                    by_variant[v].verdict()) for v in variants]))
    return headlines, [{"tag": tag, "check": check, "words": naming.tag_words(tag),
                        "plots": ps} for (tag, check), ps in sorted(sections.items())]


def compare_charts(series, plots):
    """The 'lines' charts the checks declare, every file system on the same graph (as
    seed 003 compares two systems): the latest run of each, one line per file system
    and chart line."""
    groups = defaultdict(list)
    for s in series.values():
        if s.chart and s.chart["kind"] == "lines":
            groups[(s.tag, s.check, s.variant, s.environ, s.chart["title"], s.unit,
                    s.workload_words)].append(s)
    out = []
    for (tag, check, variant, environ, title, unit, sizes), ss in sorted(groups.items()):
        targets = sorted({s.target for s in ss})
        if len(targets) < 2:
            continue
        lines = defaultdict(dict)
        for target in targets:
            mine = [s for s in ss if s.target == target]
            newest = max(s.points[-1][0] for s in mine)
            for s in mine:
                if s.points[-1][0] == newest:
                    lines[f"{target}: {s.chart.get('line') or s.label}"][s.chart["x"][1]] = \
                        s.points[-1][1]
        out.append(plots.add(lines_plot(ss[0].chart["x"][0], lines, unit), title=title,
                             check=check, variant=variant, environ=environ, unit=unit,
                             words=naming.tag_words(tag) + (f", {sizes}" if sizes else "")))
    return out


# ---- declared charts: axis words, thresholds, and every file system side by side ----------
# A chart a check declares (lines or a surface) appears on each file system's page; here
# its axis words and thresholds (e.g. the node's memory on a file-size axis), and a page
# per chart title that sets every file system's latest chart side by side: surfaces in a
# row on one colour scale, lines on the same axes.
def chart_ticks(series):
    """{"x": {value: words}, "y": {...}} from the axis words the charts declare."""
    ticks = {"x": {}, "y": {}}
    for s in series:
        for axis in ("x", "y"):
            declared = s.chart.get(axis)
            if declared and len(declared) == 3:
                ticks[axis][declared[1]] = declared[2]
    return ticks


def chart_marks(series):
    """The thresholds declared with a chart (the same for every figure of a case)."""
    marks = {}
    for s in series:
        for m in s.chart.get("marks") or []:
            marks[(m["axis"], m["value"], m["label"])] = m
    return sorted(marks.values(), key=lambda m: (m["axis"], m["value"]))


def threshold_words(marks, cells, ticks):
    """Each threshold in words, and whether the chart shows it: 'node memory, 24 GiB:
    beyond the largest file size measured (1 MiB)'."""
    out = []
    for m in marks:
        values = sorted({(x if m["axis"] == "x" else y) for x, y in cells})
        words = ticks.get(m["axis"], {})
        if values and m["value"] > values[-1]:
            where = f"beyond the largest value measured ({words.get(values[-1], fmt(values[-1]))})"
        elif values and m["value"] < values[0]:
            where = f"below the smallest value measured ({words.get(values[0], fmt(values[0]))})"
        else:
            where = "marked"
        out.append(f"{m['label']}: {where}")
    return out


def across_page_name(title):
    return f"across-{slug(title)}.html"


def _latest_cells(series):
    """A file system's latest run of one chart: {line: {x or (x, y): value}}, each value
    the median over the partitions that measured it in that run (the caller gives the
    series of one environment: see lead_environment), with that run's time and series."""
    newest = max(s.points[-1][0] for s in series)
    current = [s for s in series if s.points[-1][0] == newest]
    values = defaultdict(lambda: defaultdict(list))
    for s in current:
        where = s.chart["x"][1] if s.chart["kind"] == "lines" else \
            (s.chart["x"][1], s.chart["y"][1])
        values[s.chart.get("line") or s.label][where].append(s.points[-1][1])
    cells = {line: {k: statistics.median(v) for k, v in points.items()}
             for line, points in values.items()}
    return cells, newest, current


def across_pages(series):
    """Per declared chart title: every file system's latest chart of each workload, side
    by side.  Returns [{"title", "file", "kind", "checks", "targets", "groups"}]."""
    by_title = defaultdict(list)
    for s in series.values():
        if s.chart:
            by_title[s.chart["title"]].append(s)
    pages_out = []
    for title, members in sorted(by_title.items()):
        plots = Plots("a")
        groups = defaultdict(lambda: defaultdict(list))
        for s in members:
            # lines of different work (2 directories against 1) are not drawn as one
            # comparison; a surface's cells are each a (file size, record size), the
            # work on its axes, so surfaces of different size ranges still compare
            sizes = s.workload_words if s.chart["kind"] == "lines" else ""
            groups[(s.tag, s.check, s.variant, s.chart["kind"], s.unit, sizes)][
                s.target].append(s)
        rows = []
        for (tag, check, variant, kind, unit, _), by_target in sorted(
                groups.items(), key=lambda kv: [str(k) for k in kv[0]]):
            targets = sorted(by_target)
            # one environment on every file system, never a median across them
            environ = lead_environment(by_target)
            latest = {t: _latest_cells(in_environment(by_target[t], environ))
                      for t in targets}
            row = {"tag": tag, "words": naming.tag_words(tag), "check": check,
                   "variant": variant, "kind": kind, "unit": unit, "targets": targets,
                   "workload": "; ".join(sorted({s.workload_words for t in targets
                                                 for s in latest[t][2] if s.workload_words})),
                   "runs": [{"target": t, "when": when(latest[t][1]),
                             "run": latest[t][2][0].points[-1][2],
                             "environs": sorted({s.environ for s in latest[t][2]})}
                            for t in targets]}
            first = latest[targets[0]][2][0].chart
            if kind == "lines":
                lines = {f"{t}: {line}": points for t in targets
                         for line, points in latest[t][0].items()}
                row["plot"] = plots.add(lines_plot(first["x"][0], lines, unit))
            else:
                row["surfaces"] = _surfaces_side_by_side(first, latest, targets, unit, plots)
            rows.append(row)
        pages_out.append({"title": title, "file": across_page_name(title),
                          "kind": sorted({r["kind"] for r in rows}),
                          "checks": sorted({r["check"] for r in rows}),
                          "targets": sorted({t for r in rows for t in r["targets"]}),
                          # its 3-D surfaces are folded (across.html)
                          "groups": rows, "bundle": PLOTLY_CARTESIAN})
    return pages_out


def _surfaces_side_by_side(chart, latest, targets, unit, plots):
    """One row per chart line: each file system's surface and heat map on one shared
    colour and value range, with its own thresholds."""
    out = []
    lines = sorted({line for t in targets for line in latest[t][0]})
    for line in lines:
        values = [v for t in targets for v in latest[t][0].get(line, {}).values()
                  if v is not None and math.isfinite(v)]
        shared = (min(values), max(values)) if values else None
        cells_of = {t: latest[t][0].get(line) for t in targets if latest[t][0].get(line)}
        panels = []
        for t, cells in cells_of.items():
            ticks, marks = chart_ticks(latest[t][2]), chart_marks(latest[t][2])
            surface, heat = surface_plots(chart["x"][0], chart["y"][0], cells, unit, ticks,
                                          marks, zrange=shared)
            panels.append({"target": t, "thresholds": threshold_words(marks, cells, ticks),
                           "surface": plots.add(surface, surface=True),
                           "heat": plots.add(heat)})
        out.append({"line": line, "panels": panels, "log": bool(
            shared and shared[0] > 0 and shared[1] / shared[0] > LOG_SCALE_RATIO)})
    return out


def run_extras(source):
    """Per case of a run report: wall time and output directory (kept in the run
    report, not in the store): {series key: {...}}."""
    try:
        report = json.loads(Path(source).read_text())
    except (OSError, ValueError, TypeError):
        return {}
    extras = {}
    for case in runreport.final_cases(report):
        display = case.get("display_name") or case.get("name")
        extras[store.series_key(case, display)] = {
            "time": case.get("time_total"),
            "output": next((d for d in (case.get("outputdir"), case.get("stagedir"))
                            if d and os.path.isdir(d)), None)}
    return extras


FIGURE_COLUMNS = 8   # a check with more figures than this lists them in a fold per case


def _short_mark(phase):
    """The mark of a value whose timed phase was too short to trust (the phase's length
    on hover; the rule under the table: a run has thousands of such values)."""
    return (f' <abbr class="short" title="timed over {duration(phase)}">(too short)</abbr>'
            if phase is not None else "")


def _figure_cell(value, short):
    return f'<td class="num">{escape(value)}{_short_mark(short)}</td>'


def case_rows_html(rows, parameters, figure_columns):
    """The rows of a run's table of cases: parameters and figures as columns.

    Built here with ``html.escape`` rather than in the template: a run of the suite has
    hundreds of cases and thousands of cells, a full build writes a page per stored run,
    and Jinja's per-cell attribute lookups made that several times slower."""
    out = []
    for r in rows:
        c = r["case"]
        result = c["result"] or ""
        title = ""
        if result == "skip" and c["skip_reason"]:
            # the full reason heads the page, under "What did not run"
            reason = c["skip_reason"]
            result_text = f"skipped: {reason[:60]}{'…' if len(reason) > 60 else ''}"
            title = f' title="{escape(reason)}"'
        elif c["fail_reason"] or c["skip_reason"]:
            phase = f" in {c['fail_phase']}" if c["fail_phase"] else ""
            result_text = f"{result}{phase}: {c['fail_reason'] or c['skip_reason']}"
        else:
            result_text = result
        cells = [r["variant"], *(r["params"].get(k, "") for k in parameters),
                 c["environ"] or "", c["partition"] or "",
                 "" if c["nodes"] is None else c["nodes"],
                 "" if c["tasks_per_node"] is None else c["tasks_per_node"],
                 "yes" if c["exclusive"] else "no",
                 f"{c['jobid'] or ''} {c['nodelist'] or ''}".strip()]
        html = "".join(f"<td>{escape(str(v))}</td>" for v in cells)
        html += f'<td class="result"{title}>{escape(result_text)}</td>'
        html += f'<td class="time">{escape(r["time"])}</td>'
        if figure_columns:
            values = {label: (value, short) for label, value, _, short in r["figures"]}
            html += "".join(_figure_cell(*values.get(label, ("", None)))
                            for label, _ in figure_columns)
        else:
            listed = "".join(f'<div class="fig">{escape(label)}: <b>{escape(value)}</b> '
                             f'{escape(unit)}{_short_mark(short)}</div>'
                             for label, value, unit, short in r["figures"])
            html += (f'<td class="figures"><details><summary>{len(r["figures"])} figures'
                     f"</summary>{listed}</details></td>" if r["figures"] else "<td></td>")
        html += (f'<td><a href="{escape(r["output"])}/">files</a></td>' if r["output"]
                 else "<td></td>")
        out.append(f'<tr class="r-{slug(result)}">{html}</tr>')
    return Markup("\n".join(out))


def run_page_data(conn, run, out):
    cases = conn.execute("SELECT * FROM cases WHERE run_id = ? ORDER BY title, check_name, "
                         "variant, scratch_target, environ, display_name",
                         (run["run_id"],)).fetchall()
    figures = defaultdict(list)
    for case_id, value, unit, label, metric, phase, short in conn.execute(
            "SELECT f.case_id, f.value, f.unit, f.label, f.metric, f.phase_seconds, "
            "f.too_short FROM figures f JOIN cases c ON f.case_id = c.case_id "
            "WHERE c.run_id = ? ORDER BY f.figure_id", (run["run_id"],)):
        figures[case_id].append((label or metric, fmt(value), unit or "",
                                 phase if short else None))
    extras = run_extras(run["source"]) if run["source"] else {}
    groups = defaultdict(list)
    for c in cases:
        params = json.loads(c["params"] or "{}")
        extra = extras.get(c["series"], {})
        link = os.path.relpath(extra["output"], out) if extra.get("output") else None
        groups[naming.check_words(c)].append({
            "case": c, "params": params, "variant": naming.variant_words(c, params),
            "figures": figures[c["case_id"]], "time": duration(extra.get("time")),
            "output": link})
    tables = []
    for check, rows in groups.items():
        names = sorted({k for r in rows for k in r["params"]})
        figure_columns = {}
        for r in rows:
            for label, _, unit, _ in r["figures"]:
                figure_columns.setdefault(label, unit)
        figure_columns = list(figure_columns.items())
        if len(figure_columns) > FIGURE_COLUMNS:
            figure_columns = []
        tables.append({"check": check, "columns": [naming.words(k) for k in names],
                       "figure_columns": figure_columns,
                       "rows_html": case_rows_html(rows, names, figure_columns),
                       "workload": sorted({r["case"]["workload_words"] for r in rows
                                           if r["case"]["workload_words"]}),
                       "too_short": sum(f[3] is not None for r in rows for f in r["figures"])})
    wall = (run["finished"] - run["started"]) if run["finished"] and run["started"] else None
    return {"tables": tables, "problems": problems(cases, with_target=True),
            "wall": duration(wall), "filesystems": fs_diary.run_section(conn, run["run_id"]),
            "shortest_trusted_phase": f"{SHORTEST_TRUSTED_PHASE_S:g}"}


# ---- the build -----------------------------------------------------------------------------
def plot_json(spec):
    """A plot specification as JSON safe inside <script>: what Jinja's ``tojson`` does,
    without sorting keys or indenting (plots are most of a page's bytes and build time)."""
    text = json.dumps(spec, separators=(",", ":"), allow_nan=False)
    return Markup(text.replace("&", "\\u0026").replace("<", "\\u003c")
                  .replace(">", "\\u003e").replace("'", "\\u0027"))


def _environment(cache):
    cache.mkdir(exist_ok=True)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.files("reports") / "templates")),
        autoescape=jinja2.select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        # compiled templates kept between builds: compiling them is a tenth of a rebuild
        bytecode_cache=jinja2.FileSystemBytecodeCache(str(cache)))
    env.filters.update(fmt=fmt, percent=units.percent, quantity=units.quantity, when=when, day=day, slug=slug, verdict_words=verdict_words,
                       plot_json=plot_json)
    return env


def _code_digest():
    """Changes whenever the page code or a template changes: every page is rebuilt then."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(Path(fs_diary.__file__).read_bytes())
    for path in sorted((Path(__file__).parent / "templates").iterdir()):
        if path.name != PLOTLY_CARTESIAN:    # 1.5 MB that no run page loads
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def build(out_dir, db_path=None, nightly_verdicts=None, title="Scratch file system performance"):
    """Write the site into out_dir; returns (pages written, figures stored, seconds).

    ``nightly_verdicts``: the verdict file of a nightly run; the banner uses it only when
    it is the latest run's."""
    t0 = time.monotonic()
    out = Path(out_dir)
    conn = store.connect(db_path, create=False)
    out.mkdir(parents=True, exist_ok=True)
    (out / "assets").mkdir(exist_ok=True)
    _copy_assets(out)
    try:
        with store.snapshot(conn):
            written = _build(conn, out, nightly_verdicts, title)
            stored = conn.execute("SELECT COUNT(*) FROM figures").fetchone()[0]
    finally:
        conn.close()
    return written, stored, time.monotonic() - t0


def _build(conn, out, nightly_verdicts, title):
    env = _environment(out / CACHE)
    series = load(conn)
    latest = latest_cases(conn)
    runs = conn.execute("SELECT * FROM runs ORDER BY started, run_id").fetchall()
    latest_run = runs[-1] if runs else None
    verdicts = {}
    if nightly_verdicts:
        for v in nightly_verdicts.get("figures", []):
            verdicts[(v["series"], v["metric"])] = v
    targets = sorted({s.target for s in series.values()} | set(latest))
    fs_pages = {t: fs_page_name(t) for t in targets}
    common = {"title": title, "generated": when(time.time()), "run_count": len(runs),
              "targets": targets, "fs_pages": fs_pages, "run_page": _run_page_name,
              "min_runs": MIN_RUNS_TO_RANK, "recent_runs": RECENT_RUNS,
              "log_ratio": LOG_SCALE_RATIO, "quartiles": False, "screenful": SCREENFUL,
              "latest_run_of": {t: run["run_id"] for t, (run, _) in latest.items()}}
    all_rankings = rankings(series)
    headline_rankings = [r for r in all_rankings if r.headline]
    for r in headline_rankings:
        r.regressed = {t: found for t, ss in r.by_target.items()
                       for found in [regressions_of(ss, verdicts)] if found}
    across = across_pages(series)
    common["chart_pages"] = {page["title"]: page["file"] for page in across}
    written = 0

    def write(file_name, template, **context):
        nonlocal written
        (out / file_name).write_text(env.get_template(template).render(common, **context))
        written += 1

    summary = []
    verdict_counts = defaultdict(Counter)
    for (key, metric), v in verdicts.items():
        s = series.get((key, metric))
        if s is not None:
            verdict_counts[s.target][v["verdict"]] += 1
    config_changes = fs_diary.change_dates(conn)
    for target in targets:
        run, cases = latest.get(target, (None, []))
        state = problems(cases)
        fs_plots = Plots()
        page = fs_page(target, series, headline_rankings, verdicts, fs_plots)
        fs_diary.mark_plots(page, config_changes.get(target))
        # what the target was in its latest run, in the site's words
        page["kind"] = next((c["scratch_kind"] for c in cases if c["scratch_kind"]),
                            page["kind"])
        page["description"] = next((c["scratch_description"] for c in cases
                                    if c["scratch_description"]), "")
        write(fs_pages[target], "fs.html", name=target, page=page, run=run, state=state,
              advice=advice(target, headline_rankings, series),
              diary=fs_diary.diary_section(conn, target, _run_page_name),
              verdict_counts=sorted(verdict_counts[target].items()), plots=fs_plots.bundle,
              quartiles=True)
        summary.append({"name": target, "kind": page["kind"], "partitions": page["partitions"],
                        "description": page["description"],
                        "page": fs_pages[target],
                        "run": run, "state": state,
                        "verdicts": [(verdict_words(v), n, v) for v, n in
                                     sorted(verdict_counts[target].items())]})

    compare_plots = Plots("c")
    headlines, sections = compare_page(all_rankings, compare_plots)
    write("compare.html", "compare.html", headlines=headlines, sections=sections,
          charts=compare_charts(series, compare_plots), plots=compare_plots.bundle)
    write("index.html", "index.html", summary=summary, banner=banner(nightly_verdicts, latest_run),
          tables=headline_table(headline_rankings, targets), recent=list(reversed(runs))[:RUNS_ON_INDEX],
          across=across, plots=False)
    write("runs.html", "runs.html", runs=list(reversed(runs)), plots=False)
    # The advisor: pre-computed here (one implementation of the prediction, in Python);
    # its form does only the arithmetic on what this build computed (see advisor.py).
    advisor_data = advisor.page_data(conn, cache_dir=out / CACHE)
    write("advisor.html", "advisor.html", advisor=advisor_data,
          advisor_json=plot_json(advisor_data),
          seconds=advisor.seconds_words, size=advisor.ss.size_words, plots=False)
    for page in across:
        write(page["file"], "across.html", page=page, plots=page["bundle"])
    written += _run_pages(conn, env, common, out, runs)
    return written


def _run_page_name(run_id):
    return f"run-{slug(run_id)}.html"


def _run_pages(conn, env, common, out, runs):
    """Write the pages of runs not yet written from the same run and templates."""
    manifest_path = out / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        manifest = {}
    code = _code_digest()
    nav = hashlib.sha256(json.dumps(common["targets"]).encode()).hexdigest()[:16]
    template = env.get_template("run.html")
    written = 0
    for run in runs:
        name = _run_page_name(run["run_id"])
        fingerprint = f"{code}:{nav}:{run['ingested_at']}:{run['source'] or ''}"
        if manifest.get(name) == fingerprint and (out / name).exists():
            continue
        (out / name).write_text(template.render(common, run=run, plots=False,
                                                **run_page_data(conn, run, out)))
        manifest[name] = fingerprint
        written += 1
    tmp = manifest_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest))
    tmp.replace(manifest_path)
    return written


def _copy_assets(out):
    assets = resources.files("reports") / "templates"
    for name in ("style.css", "pages.js", "advisor.js", PLOTLY_CARTESIAN):
        source = Path(str(assets / name))
        target = out / "assets" / name
        if not target.exists() or target.read_bytes() != source.read_bytes():
            shutil.copyfile(source, target)
    plotly_js = Path(resources.files("plotly")) / "package_data" / PLOTLY_FULL
    target = out / "assets" / PLOTLY_FULL
    if not target.exists() or target.stat().st_size != plotly_js.stat().st_size:
        shutil.copyfile(plotly_js, target)
