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
  system, and a form for a job of one's own (``reports.advisor``, ``reports.advisor_report``).
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
  from the same run with the same templates; many of them at once (a first build)
  are written by forked processes, one per core (``PARALLEL_RUN_PAGES``).

The statistics behind a ranking and the advice: ``reports.rankings``; the plot
specifications and the plotly bundles: ``reports.plots``.
"""

import hashlib
import json
import math
import multiprocessing
import os
import re
import shutil
import sqlite3
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from reports import advisor_report, fs_diary, naming, runreport, store
from reports.plots import (
    LOG_SCALE_RATIO,
    PLOTLY_CARTESIAN,
    PLOTLY_FULL,
    SCREENFUL,
    Plots,
    bars_plot,
    history_plot,
    lines_plot,
    plot_json,
    surface_plots,
)
from reports.rankings import (
    HISTORY_RUNS,
    MIN_RUNS_TO_RANK,
    RECENT_RUNS,
    Ranking,
    Series,
    Standing,
    advice,
    in_environment,
    lead_environment,
    load,
    rankings,
)
from scratchbench import units
from scratchbench.figures import SHORTEST_TRUSTED_PHASE_S

RUNS_ON_INDEX = 10
MANIFEST = ".scratchbench-pages.json"  # what each run page was built from
CACHE = ".scratchbench-cache"  # compiled templates, the advisor's predictions

# Verdict labels in words; a label not listed here is shown as it is.
VERDICT_WORDS = {
    "ok": "no change",
    "regression": "regression",
    "improvement": "improvement",
    "suspect": "unconfirmed change (one bad night)",
    "insufficient-history": "not enough history yet",
    "recovered": "recovered",
    "ongoing regression": "still regressed",
    "too-short": "too short to trust",
}
#: verdicts that decided nothing (a figure too short to trust never will, at its size)
UNDECIDED = {"insufficient-history", "suspect", "too-short"}

fmt, when, day = units.number, units.date_time, units.date


# ---- formatting -----------------------------------------------------------------------
def fs_page_name(target: str) -> str:
    """The page of one file system (the verdict file links a change to its chart there)."""
    return f"fs-{slug(target)}.html"


def slug(text: object) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-") or "x"


def duration(seconds: float | None) -> str:
    return "" if seconds is None else units.duration_words(seconds)


def verdict_words(label: str) -> str:
    return VERDICT_WORDS.get(label, str(label).replace("-", " ").replace("_", " "))


def latest_cases(
    conn: sqlite3.Connection,
) -> dict[str, tuple[sqlite3.Row | None, list[sqlite3.Row]]]:
    """Every case of each file system's latest run (within the window):
    {target: (run row, [case rows])}."""
    return {
        target or "unspecified": (store.run(conn, run_id), store.target_cases(conn, run_id, target))
        for target, run_id in store.latest_run_of_each_target(conn, HISTORY_RUNS).items()
    }


# ---- the verdict banner --------------------------------------------------------------------
def nights_needed(entry: Mapping[str, Any]) -> int:
    """How many more nights a figure needs before it can be judged (0 when judged)."""
    for name in ("nights_needed", "runs_needed", "more_runs_needed"):
        if isinstance(entry.get(name), int):
            return entry[name]
    # the verdict's detail: "3 run(s) with a value, 8 needed" (older: "3 runs, 8 needed")
    found = re.search(
        r"(\d+) runs?(?:\(s\))?(?: with a value)?, (\d+) needed", entry.get("detail") or ""
    )
    return max(0, int(found.group(2)) - int(found.group(1))) if found else 0


#: changes the banner names one by one (the verdict file and the CLI name them all)
BANNER_CHANGES = 20


def regressions_of(
    series: Iterable[Series], verdicts: Mapping[tuple[str, str], dict[str, Any]]
) -> list[dict[str, Any]]:
    """The regression verdicts (new or ongoing) of these series (every environment)."""
    return [
        v
        for s in series
        for v in [verdicts.get((s.key, s.metric))]
        if v and v["verdict"] in ("regression", "ongoing-regression")
    ]


def banner(
    verdicts: Mapping[str, Any] | None, latest_run: sqlite3.Row | None
) -> dict[str, Any] | None:
    """What the nightly verdict of the latest run decided and what it could not."""
    if latest_run is None:
        return None
    run_id = latest_run["run_id"]
    if not verdicts or verdicts.get("run_id") != run_id:
        return {
            "state": "missing",
            "run": run_id,
            "when": when(latest_run["started"]),
            "text": f"No verdict for run {run_id} yet: run `scratchbench verdict nightly`.",
        }
    figures = verdicts.get("figures") or []
    undecided = [f for f in figures if f["verdict"] in UNDECIDED or nights_needed(f) > 0]
    decided = Counter(f["verdict"] for f in figures if f not in undecided)
    waiting = Counter(f["verdict"] for f in undecided)
    most = max((nights_needed(f) for f in undecided), default=0)
    bad = any("regress" in label for label in decided)
    changed = naming.changes(figures)
    return {
        "state": "bad" if bad else "unsure" if undecided else "good",
        "run": run_id,
        "changes": [
            {
                "sentence": naming.change_sentence(f),
                "chart": f.get("chart"),
                "verdict": f["verdict"],
            }
            for f in changed[:BANNER_CHANGES]
        ],
        "more_changes": max(0, len(changed) - BANNER_CHANGES),
        "when": when(latest_run["started"]),
        "total": len(figures),
        "decided": [(n, verdict_words(v), v) for v, n in decided.most_common()],
        "undecided_count": len(undecided),
        "undecided": [(n, verdict_words(v), v) for v, n in waiting.most_common()],
        "nights_needed": most,
    }


# ---- pages -----------------------------------------------------------------------------------
def headline_table(
    headline_rankings: Iterable[Ranking], targets: Sequence[str]
) -> list[dict[str, Any]]:
    """Rows of the index: one per headline figure, grouped by workload tag."""
    by_tag = defaultdict(list)
    for r in headline_rankings:
        by_tag[r.tag].append(r)
    newest = {
        tag: max(s.latest_time for r in rs for s in r.standings.values())
        for tag, rs in by_tag.items()
    }
    return [
        {
            "tag": tag,
            "words": naming.tag_words(tag),
            "rows": sorted(by_tag[tag], key=lambda r: (r.check, r.variant, r.name)),
            "targets": [t for t in targets if any(t in r.standings for r in by_tag[tag])],
        }
        for tag in sorted(by_tag, key=lambda t: -newest[t])
    ]


def problems(cases: Sequence[sqlite3.Row], with_target: bool = False) -> dict[str, Any]:
    """Failures and skips of a set of cases, grouped by cause."""
    failed, skipped = defaultdict(list), defaultdict(list)

    def name(c: sqlite3.Row) -> str:
        return (
            naming.case_words(c)
            + (f" on {c['scratch_target']}" if with_target and c["scratch_target"] else "")
            + (f" [{c['environ']}]" if c["environ"] else "")
        )

    for c in cases:  # named only when listed: a run page's cases mostly passed
        if c["result"] == "skip":
            skipped[c["skip_reason"] or "no reason given"].append(name(c))
        elif c["result"] not in ("pass", "success"):
            phase = f"failed in {c['fail_phase']}" if c["fail_phase"] else "failed"
            # a case whose dependency failed (ReFrame's fail_deps) carries that cause
            # as its skip reason: the history keeps no fixtures to show it
            reason = (c["fail_reason"] or c["skip_reason"] or "no reason given").strip()
            failed[f"{phase}: {reason}"].append(name(c))
    counts = Counter(
        "skip"
        if c["result"] == "skip"
        else "pass"
        if c["result"] in ("pass", "success")
        else "fail"
        for c in cases
    )
    return {
        "total": len(cases),
        "passed": counts["pass"],
        "failed": counts["fail"],
        "skipped": counts["skip"],
        "failures": sorted(failed.items(), key=lambda kv: -len(kv[1])),
        "skips": sorted(skipped.items(), key=lambda kv: -len(kv[1])),
    }


def fs_page(
    target: str,
    series: Mapping[tuple[str, str], Series],
    headline_rankings: Iterable[Ranking],
    verdicts: Mapping[tuple[str, str], dict[str, Any]],
    plots: Plots,
) -> dict[str, Any]:
    """The sections of one file system's page."""
    mine = [s for s in series.values() if s.target == target]
    headlines = []
    for r in headline_rankings:
        standing = r.standings.get(target)
        if standing is None:
            continue
        line = "value per run"
        spec, notes = history_plot(
            [(line, [(t, v, run) for t, run, v in standing.runs])],
            r.unit,
            r.better == "higher",
            short_latest={line} if standing.too_short else set(),
        )
        headlines.append(plots.add(spec, ranking=r, standing=standing, notes=notes))
    charts = _chart_sections(mine, plots)
    scaling = _scaling_sections(mine, plots)
    folded: defaultdict[
        tuple[str, str], defaultdict[tuple[str, str, tuple[str, ...]], list[dict[str, Any]]]
    ]
    folded = defaultdict(lambda: defaultdict(list))
    groups = defaultdict(list)
    for s in mine:
        if not s.chart:
            groups[(s.tag, s.check, s.variant, s.partition, s.label, s.unit, s.better)].append(s)
    for key, ss in sorted(groups.items()):
        tag, check, variant, partition, label, unit, better = key
        ss.sort(key=lambda s: s.environ)
        short = {s.environ or "value" for s in ss if s.too_short}
        spec, notes = history_plot(
            [(s.environ or "value", s.points) for s in ss], unit, better == "higher", short
        )
        judged = [(s.environ, verdicts.get((s.key, s.metric))) for s in ss]
        headline = any(s.headline for s in ss)
        folded[(tag, check)][
            (variant, partition, tuple(sorted({s.workload_words for s in ss})))
        ].append(
            plots.add(
                spec,
                label=label,
                unit=unit,
                notes=notes,
                short=short,
                headline=headline,
                verdicts=[(e, v) for e, v in judged if v],
                anchors=_anchors(ss),
            )
        )
    sections: list[dict[str, Any]]
    sections = [
        {
            "tag": tag,
            "check": check,
            "words": naming.tag_words(tag),
            "variants": [
                {
                    "variant": v,
                    "partition": p,
                    "workload": "; ".join(w),
                    "plots": sorted(ps, key=lambda p: (not p["headline"], p["label"])),
                }
                for (v, p, w), ps in sorted(variants.items())
            ],
        }
        for (tag, check), variants in sorted(folded.items())
    ]
    return {
        "headlines": headlines,
        "charts": charts,
        "scaling": scaling,
        "sections": sections,
        "partitions": sorted({s.partition for s in mine}),
        "kind": next((s.kind for s in mine if s.kind), None),
    }


def _anchors(series: Iterable[Series]) -> list[str]:
    """The ids a verdict's link to these figures' chart lands on (naming.figure_anchor)."""
    return [naming.figure_anchor(s.key, s.metric) for s in series]


def _chart_sections(mine, plots):
    """The charts the checks declared, from the latest run of each case."""
    groups = defaultdict(list)
    for s in mine:
        if s.chart:
            groups[
                (
                    s.tag,
                    s.check,
                    s.variant,
                    s.partition,
                    s.environ,
                    s.chart["title"],
                    s.chart["kind"],
                    s.unit,
                )
            ].append(s)
    out = []
    for key, ss in sorted(groups.items(), key=lambda kv: [str(k) for k in kv[0]]):
        tag, check, variant, partition, environ, title, kind, unit = key
        latest_time = max(s.points[-1][0] for s in ss)
        current = [s for s in ss if s.points[-1][0] == latest_time]
        caption = {
            "title": title,
            "check": check,
            "variant": variant,
            "environ": environ,
            "partition": partition,
            "when": when(latest_time),
            "unit": unit,
            "workload": "; ".join(sorted({s.workload_words for s in current if s.workload_words})),
        }
        x_name = current[0].chart["x"][0]
        if kind == "lines":
            lines = defaultdict(dict)
            for s in current:
                lines[s.chart.get("line") or s.label][s.chart["x"][1]] = s.points[-1][1]
            out.append(
                dict(
                    caption,
                    kind=kind,
                    line=None,
                    anchors=_anchors(ss),
                    plots=[plots.add(lines_plot(x_name, lines, unit))],
                )
            )
        else:
            y_name = current[0].chart["y"][0]
            surfaces = defaultdict(dict)
            for s in current:
                surfaces[s.chart.get("line") or s.label][(s.chart["x"][1], s.chart["y"][1])] = (
                    s.points[-1][1]
                )
            ticks, marks = chart_ticks(current), chart_marks(current)
            for line, cells in sorted(surfaces.items()):
                surface, heat = surface_plots(x_name, y_name, cells, unit, ticks, marks)
                out.append(
                    dict(
                        caption,
                        kind=kind,
                        line=line,
                        anchors=_anchors(s for s in ss if (s.chart.get("line") or s.label) == line),
                        thresholds=threshold_words(marks, cells, ticks),
                        plots=[plots.add(surface, surface=True), plots.add(heat)],
                    )
                )
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
            out.append(
                {
                    "check": check,
                    "label": label,
                    "unit": unit,
                    "parameter": naming.words(parameter),
                    "runs": runs,
                    "words": naming.tag_words(tag),
                    "plot": plots.add(lines_plot(naming.words(parameter), lines, unit, spreads)),
                }
            )
    return out


def compare_page(
    all_rankings: Sequence[Ranking], plots: Plots
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Headline figures across file systems, then every figure, the same variant side by
    side."""
    headlines = []
    for r in sorted(
        (r for r in all_rankings if r.headline), key=lambda r: (r.tag, r.check, r.variant, r.name)
    ):
        targets = sorted(r.standings)
        spec, log = bars_plot(
            targets,
            [(r.name, r.standings)],
            r.unit,
            highlight=r.best.target if r.status == "winner" else None,
        )
        headlines.append(plots.add(spec, ranking=r, log=log, targets=targets))
    grouped: defaultdict[tuple[str, str, str, str, str], dict[str, Ranking]]
    grouped = defaultdict(dict)
    # A variant measured with different sizes on different file systems is not one bar
    # group: its sizes tell the groups apart.
    sized = Counter((r.tag, r.check, r.variant, r.label) for r in all_rankings)
    for r in all_rankings:
        variant = (
            f"{r.variant} ({r.sizes})"
            if sized[(r.tag, r.check, r.variant, r.label)] > 1
            else r.variant
        )
        grouped[(r.tag, r.check, r.label, r.unit, r.better)][variant] = r
    sections = defaultdict(list)
    for (tag, check, label, unit, better), by_variant in sorted(grouped.items()):
        variants = sorted(by_variant)
        targets = sorted({t for r in by_variant.values() for t in r.standings})
        traces = [
            (
                t,
                {
                    v: by_variant[v].standings.get(t)
                    for v in variants
                    if t in by_variant[v].standings
                },
            )
            for t in targets
        ]
        spec, log = bars_plot(variants, traces, unit, width=1100)
        sections[(tag, check)].append(
            plots.add(
                spec,
                label=label,
                unit=unit,
                direction=next(iter(by_variant.values())).direction_words,
                log=log,
                targets=targets,
                table=[
                    (v, [by_variant[v].standings.get(t) for t in targets], by_variant[v].verdict())
                    for v in variants
                ],
            )
        )
    return headlines, [
        {"tag": tag, "check": check, "words": naming.tag_words(tag), "plots": ps}
        for (tag, check), ps in sorted(sections.items())
    ]


def compare_charts(series: Mapping[tuple[str, str], Series], plots: Plots) -> list[dict[str, Any]]:
    """The 'lines' charts the checks declare, every file system on the same graph (as
    seed 003 compares two systems): the latest run of each, one line per file system
    and chart line."""
    groups = defaultdict(list)
    for s in series.values():
        if s.chart and s.chart["kind"] == "lines":
            groups[
                (s.tag, s.check, s.variant, s.environ, s.chart["title"], s.unit, s.workload_words)
            ].append(s)
    out = []
    for (tag, check, variant, environ, title, unit, sizes), ss in sorted(groups.items()):
        targets = sorted({s.target for s in ss})
        if len(targets) < 2:
            continue
        lines: defaultdict[str, dict[Any, float]]
        lines = defaultdict(dict)
        line_groups = {}
        for target in targets:
            mine = [s for s in ss if s.target == target]
            newest = max(s.points[-1][0] for s in mine)
            for s in mine:
                assert s.chart is not None  # grouped by its chart
                if s.points[-1][0] == newest:
                    lines[f"{target}: {s.chart.get('line') or s.label}"][s.chart["x"][1]] = (
                        s.points[-1][1]
                    )
            # a chart's lines name values that differ between file systems (the focal
            # uniqueBytes), so the k-th line of each takes the k-th colour
            names = sorted(n for n in lines if n.startswith(f"{target}: "))
            line_groups.update({n: (target, f"{k:03d}") for k, n in enumerate(names)})
        assert ss[0].chart is not None
        out.append(
            plots.add(
                lines_plot(ss[0].chart["x"][0], lines, unit, groups=line_groups),
                title=title,
                check=check,
                variant=variant,
                environ=environ,
                unit=unit,
                words=naming.tag_words(tag) + (f", {sizes}" if sizes else ""),
            )
        )
    return out


# ---- declared charts: axis words, thresholds, and every file system side by side ----------
# A chart a check declares (lines or a surface) appears on each file system's page; here
# its axis words and thresholds (e.g. the node's memory on a file-size axis), and a page
# per chart title that sets every file system's latest chart side by side: surfaces in a
# row on one colour scale, lines on the same axes.
def chart_ticks(series: Iterable[Series]) -> dict[str, dict[Any, str]]:
    """{"x": {value: words}, "y": {...}} from the axis words the charts declare."""
    ticks: dict[str, dict[Any, str]] = {"x": {}, "y": {}}
    for s in series:
        assert s.chart is not None  # the series of a chart
        for axis in ("x", "y"):
            declared = s.chart.get(axis)
            if declared and len(declared) == 3:
                ticks[axis][declared[1]] = declared[2]
    return ticks


def chart_marks(series: Iterable[Series]) -> list[dict[str, Any]]:
    """The thresholds declared with a chart (the same for every figure of a case)."""
    marks = {}
    for s in series:
        assert s.chart is not None  # the series of a chart
        for m in s.chart.get("marks") or []:
            marks[(m["axis"], m["value"], m["label"])] = m
    return sorted(marks.values(), key=lambda m: (m["axis"], m["value"]))


def threshold_words(
    marks: Iterable[Mapping[str, Any]],
    cells: Mapping[tuple[Any, Any], float | None],
    ticks: Mapping[str, Mapping[Any, str]],
) -> list[str]:
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


def across_page_name(title: str) -> str:
    return f"across-{slug(title)}.html"


def _latest_cells(series):
    """A file system's latest run of one chart: {line: {x or (x, y): value}}, each value
    the median over the partitions that measured it in that run (the caller gives the
    series of one environment: see lead_environment), with that run's time and series."""
    newest = max(s.points[-1][0] for s in series)
    current = [s for s in series if s.points[-1][0] == newest]
    values = defaultdict(lambda: defaultdict(list))
    for s in current:
        where = (
            s.chart["x"][1] if s.chart["kind"] == "lines" else (s.chart["x"][1], s.chart["y"][1])
        )
        values[s.chart.get("line") or s.label][where].append(s.points[-1][1])
    cells = {
        line: {k: statistics.median(v) for k, v in points.items()}
        for line, points in values.items()
    }
    return cells, newest, current


def across_pages(series: Mapping[tuple[str, str], Series]) -> list[dict[str, Any]]:
    """Per declared chart title: every file system's latest chart of each workload, side
    by side.  Returns [{"title", "file", "kind", "checks", "targets", "groups"}]."""
    by_title = defaultdict(list)
    for s in series.values():
        if s.chart:
            by_title[s.chart["title"]].append(s)
    pages_out = []
    for title, members in sorted(by_title.items()):
        plots = Plots("a")
        groups: defaultdict[tuple[str, str, str, str, str, str], defaultdict[str, list[Series]]]
        groups = defaultdict(lambda: defaultdict(list))
        for s in members:
            assert s.chart is not None  # grouped by its chart's title
            # lines of different work (2 directories against 1) are not drawn as one
            # comparison; a surface's cells are each a (file size, record size), the
            # work on its axes, so surfaces of different size ranges still compare
            sizes = s.workload_words if s.chart["kind"] == "lines" else ""
            groups[(s.tag, s.check, s.variant, s.chart["kind"], s.unit, sizes)][s.target].append(s)
        rows = []
        for (tag, check, variant, kind, unit, _), by_target in sorted(
            groups.items(), key=lambda kv: [str(k) for k in kv[0]]
        ):
            targets = sorted(by_target)
            # one environment on every file system, never a median across them
            environ = lead_environment(by_target)
            latest = {t: _latest_cells(in_environment(by_target[t], environ)) for t in targets}
            row: dict[str, Any]
            row = {
                "tag": tag,
                "words": naming.tag_words(tag),
                "check": check,
                "variant": variant,
                "kind": kind,
                "unit": unit,
                "targets": targets,
                "workload": "; ".join(
                    sorted(
                        {
                            s.workload_words
                            for t in targets
                            for s in latest[t][2]
                            if s.workload_words
                        }
                    )
                ),
                "runs": [
                    {
                        "target": t,
                        "when": when(latest[t][1]),
                        "run": latest[t][2][0].points[-1][2],
                        "environs": sorted({s.environ for s in latest[t][2]}),
                    }
                    for t in targets
                ],
            }
            first = latest[targets[0]][2][0].chart
            if kind == "lines":
                lines = {
                    f"{t}: {line}": points for t in targets for line, points in latest[t][0].items()
                }
                row["plot"] = plots.add(lines_plot(first["x"][0], lines, unit))
            else:
                row["surfaces"] = _surfaces_side_by_side(first, latest, targets, unit, plots)
            rows.append(row)
        distinct_headings(rows)
        pages_out.append(
            {
                "title": title,
                "file": across_page_name(title),
                "kind": sorted({r["kind"] for r in rows}),
                "checks": sorted({r["check"] for r in rows}),
                "targets": sorted({t for r in rows for t in r["targets"]}),
                # its 3-D surfaces are folded (across.html)
                "groups": rows,
                "bundle": PLOTLY_CARTESIAN,
            }
        )
    return pages_out


def distinct_headings(rows: list[dict[str, Any]]) -> None:
    """Sets each row's "heading", what a folded workload shows: its check and variant, and
    where two rows of a page would read the same, what tells them apart: their workloads
    (1 directory against 2), then their tags."""
    for r in rows:
        r["heading"] = f"{r['check']}: {r['variant']}" if r["variant"] else r["check"]
    for key, form in (("workload", " ({})"), ("words", ", {}")):
        counts = Counter(r["heading"] for r in rows)
        for r in rows:
            if counts[r["heading"]] > 1 and r[key]:
                r["heading"] += form.format(r[key])


def _surfaces_side_by_side(chart, latest, targets, unit, plots):
    """One row per chart line: each file system's surface and heat map on one shared
    colour and value range, with its own thresholds."""
    out = []
    lines = sorted({line for t in targets for line in latest[t][0]})
    for line in lines:
        values = [
            v
            for t in targets
            for v in latest[t][0].get(line, {}).values()
            if v is not None and math.isfinite(v)
        ]
        shared = (min(values), max(values)) if values else None
        cells_of = {t: latest[t][0].get(line) for t in targets if latest[t][0].get(line)}
        panels = []
        for t, cells in cells_of.items():
            ticks, marks = chart_ticks(latest[t][2]), chart_marks(latest[t][2])
            surface, heat = surface_plots(
                chart["x"][0], chart["y"][0], cells, unit, ticks, marks, zrange=shared
            )
            panels.append(
                {
                    "target": t,
                    "thresholds": threshold_words(marks, cells, ticks),
                    "surface": plots.add(surface, surface=True),
                    "heat": plots.add(heat),
                }
            )
        out.append(
            {
                "line": line,
                "panels": panels,
                "log": bool(shared and shared[0] > 0 and shared[1] / shared[0] > LOG_SCALE_RATIO),
            }
        )
    return out


def run_extras(source: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
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
            "output": next(
                (
                    d
                    for d in (case.get("outputdir"), case.get("stagedir"))
                    if d and os.path.isdir(d)
                ),
                None,
            ),
        }
    return extras


FIGURE_COLUMNS = 8  # a check with more figures than this lists them in a fold per case


def _short_mark(phase: float | None) -> str:
    """The mark of a value whose timed phase was too short to trust (the phase's length
    on hover; the rule under the table: a run has thousands of such values)."""
    return (
        f' <abbr class="short" title="timed over {duration(phase)}">(too short)</abbr>'
        if phase is not None
        else ""
    )


class _Memo(dict[Any, Any]):
    """compute(key) of each key computed once, at most LIMIT keys kept: the run pages
    repeat the same texts (three-digit numbers, variants, environments, parameters) in
    millions of cells of thousands of pages."""

    LIMIT = 100_000

    def __init__(self, compute: Callable[[Any], Any]) -> None:
        super().__init__()
        self.compute = compute

    def __missing__(self, key: Any) -> Any:
        if len(self) >= self.LIMIT:
            self.clear()
        self[key] = value = self.compute(key)
        return value


_ESCAPED = _Memo(escape)
#: a case's parameters by their stored JSON (shared between pages: never changed)
_PARAMS = _Memo(lambda text: json.loads(text or "{}"))
_ROW_START = _Memo(lambda result: f'<tr class="r-{slug(result)}">')
_EMPTY_FIGURE_CELL = '<td class="num"></td>'


def case_rows_html(
    rows: Iterable[Mapping[str, Any]],
    parameters: Sequence[str],
    figure_columns: Sequence[tuple[str, str]],
) -> Markup:
    """The rows of a run's table of cases: parameters and figures as columns.

    Built here with ``html.escape`` rather than in the template: a run of the suite has
    hundreds of cases and thousands of cells, a full build writes a page per stored run,
    and Jinja's per-cell attribute lookups made that several times slower."""
    out = []
    escaped = _ESCAPED
    figure_cells: dict[str, str] = {}  # a figure's cell by its text, when not too short
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
        params = r["params"]
        cells = [
            r["variant"],
            *[params.get(k, "") for k in parameters],
            c["environ"] or "",
            c["partition"] or "",
            "" if c["nodes"] is None else c["nodes"],
            "" if c["tasks_per_node"] is None else c["tasks_per_node"],
            "yes" if c["exclusive"] else "no",
            f"{c['jobid'] or ''} {c['nodelist'] or ''}".strip(),
        ]
        parts = [f"<td>{escaped[str(v)]}</td>" for v in cells]
        parts.append(f'<td class="result"{title}>{escaped[result_text]}</td>')
        parts.append(f'<td class="time">{escaped[r["time"]]}</td>')
        if figure_columns:
            by_label = {}
            for label, value, _, short in r["figures"]:
                if short is None:
                    cell = figure_cells.get(value)
                    if cell is None:
                        cell = figure_cells[value] = f'<td class="num">{escaped[value]}</td>'
                else:
                    cell = f'<td class="num">{escaped[value]}{_short_mark(short)}</td>'
                by_label[label] = cell
            parts += [by_label.get(label, _EMPTY_FIGURE_CELL) for label, _ in figure_columns]
        elif r["figures"]:
            listed = "".join(
                [
                    f'<div class="fig">{escaped[label]}: <b>{escaped[value]}</b> '
                    f"{escaped[unit]}{_short_mark(short)}</div>"
                    for label, value, unit, short in r["figures"]
                ]
            )
            parts.append(
                f'<td class="figures"><details><summary>{len(r["figures"])} figures'
                f"</summary>{listed}</details></td>"
            )
        else:
            parts.append("<td></td>")
        parts.append(
            f'<td><a href="{escape(r["output"])}/">files</a></td>' if r["output"] else "<td></td>"
        )
        out.append(f"{_ROW_START[result]}{''.join(parts)}</tr>")
    return Markup("\n".join(out))


def run_page_data(
    conn: sqlite3.Connection, run: sqlite3.Row, out: str | os.PathLike[str]
) -> dict[str, Any]:
    cases = store.run_cases(conn, run["run_id"])
    figures = defaultdict(list)
    for case_id, value, label, unit, short in store.run_figures(conn, run["run_id"]):
        figures[case_id].append((label, fmt(value), unit, short))
    extras = run_extras(run["source"]) if run["source"] else {}
    groups = defaultdict(list)
    for c in cases:
        params = _PARAMS[c["params"]]
        extra = extras.get(c["series"], {})
        link = os.path.relpath(extra["output"], out) if extra.get("output") else None
        groups[naming.check_words(c)].append(
            {
                "case": c,
                "params": params,
                "variant": naming.variant_words(c, params),
                "figures": figures[c["case_id"]],
                "time": duration(extra.get("time")),
                "output": link,
            }
        )
    tables = []
    for check, rows in groups.items():
        names = sorted({k for r in rows for k in r["params"]})
        figure_columns: dict[str, str] | list[tuple[str, str]]
        figure_columns = {}
        for r in rows:
            for label, _, unit, _ in r["figures"]:
                figure_columns.setdefault(label, unit)
        figure_columns = list(figure_columns.items())
        if len(figure_columns) > FIGURE_COLUMNS:
            figure_columns = []
        tables.append(
            {
                "check": check,
                "columns": [naming.words(k) for k in names],
                "figure_columns": figure_columns,
                "rows_html": case_rows_html(rows, names, figure_columns),
                "workload": sorted(
                    {r["case"]["workload_words"] for r in rows if r["case"]["workload_words"]}
                ),
                "too_short": sum(f[3] is not None for r in rows for f in r["figures"]),
            }
        )
    wall = (run["finished"] - run["started"]) if run["finished"] and run["started"] else None
    return {
        "tables": tables,
        "problems": problems(cases, with_target=True),
        "wall": duration(wall),
        "filesystems": fs_diary.run_section(conn, run["run_id"]),
        "shortest_trusted_phase": f"{SHORTEST_TRUSTED_PHASE_S:g}",
    }


# ---- the build -----------------------------------------------------------------------------
def _environment(cache):
    cache.mkdir(exist_ok=True)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.files("reports") / "templates")),
        autoescape=jinja2.select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        # compiled templates kept between builds: compiling them is a tenth of a rebuild
        bytecode_cache=jinja2.FileSystemBytecodeCache(str(cache)),
    )
    env.filters.update(
        fmt=fmt,
        percent=units.percent,
        quantity=units.quantity,
        when=when,
        day=day,
        slug=slug,
        verdict_words=verdict_words,
        plot_json=plot_json,
    )
    return env


def _code_digest() -> str:
    """Changes whenever the code a run page comes from or a template changes: every page
    is rebuilt then."""
    digest = hashlib.sha256()
    for module in (__file__, fs_diary.__file__, naming.__file__, store.__file__, units.__file__):
        digest.update(Path(module).read_bytes())
    for path in sorted((Path(__file__).parent / "templates").iterdir()):
        if path.name != PLOTLY_CARTESIAN:  # 1.5 MB that no run page loads
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def build(
    out_dir: str | os.PathLike[str],
    db_path: str | os.PathLike[str] | None = None,
    nightly_verdicts: Mapping[str, Any] | None = None,
    title: str = "Scratch file system performance",
) -> tuple[int, int, float]:
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
            stored = store.figure_count(conn)
    finally:
        conn.close()
    return written, stored, time.monotonic() - t0


def _build(conn, out, nightly_verdicts, title):
    env = _environment(out / CACHE)
    series = load(conn)
    latest = latest_cases(conn)
    runs = store.runs(conn)
    latest_run = runs[-1] if runs else None
    verdicts = {}
    if nightly_verdicts:
        for v in nightly_verdicts.get("figures", []):
            verdicts[(v["series"], v["metric"])] = v
    targets = sorted({s.target for s in series.values()} | set(latest))
    fs_pages = {t: fs_page_name(t) for t in targets}
    common = _common_context(title, runs, targets, fs_pages, latest)
    all_rankings = rankings(series)
    headline_rankings = [r for r in all_rankings if r.headline]
    for r in headline_rankings:
        r.regressed = {
            t: found
            for t, ss in r.by_target.items()
            for found in [regressions_of(ss, verdicts)]
            if found
        }
    across = across_pages(series)
    common["chart_pages"] = {page["title"]: page["file"] for page in across}
    written = 0

    def write(file_name: str, template: str, **context: Any) -> None:
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
        summary.append(
            _write_fs_page(
                conn,
                write,
                target,
                latest,
                series,
                headline_rankings,
                verdicts,
                config_changes,
                verdict_counts,
                fs_pages,
            )
        )

    compare_plots = Plots("c")
    headlines, sections = compare_page(all_rankings, compare_plots)
    write(
        "compare.html",
        "compare.html",
        headlines=headlines,
        sections=sections,
        charts=compare_charts(series, compare_plots),
        plots=compare_plots.bundle,
    )
    write(
        "index.html",
        "index.html",
        summary=summary,
        banner=banner(nightly_verdicts, latest_run),
        tables=headline_table(headline_rankings, targets),
        recent=list(reversed(runs))[:RUNS_ON_INDEX],
        across=across,
        plots=False,
    )
    write("runs.html", "runs.html", runs=list(reversed(runs)), plots=False)
    # The advisor: pre-computed here (one implementation of the prediction, in Python);
    # its form does only the arithmetic on what this build computed (see advisor_report.py).
    advisor_data = advisor_report.page_data(conn, cache_dir=out / CACHE)
    write(
        "advisor.html",
        "advisor.html",
        advisor=advisor_data,
        advisor_json=plot_json(advisor_data),
        seconds=advisor_report.seconds_words,
        size=units.size_words,
        plots=False,
    )
    for page in across:
        write(page["file"], "across.html", page=page, plots=page["bundle"])
    written += _run_pages(conn, env, common, out, runs)
    return written


def _common_context(title, runs, targets, fs_pages, latest):
    """What every page's template is given."""
    return {
        "title": title,
        "generated": when(time.time()),
        "run_count": len(runs),
        "targets": targets,
        "fs_pages": fs_pages,
        "run_page": _run_page_name,
        "min_runs": MIN_RUNS_TO_RANK,
        "recent_runs": RECENT_RUNS,
        "log_ratio": LOG_SCALE_RATIO,
        "quartiles": False,
        "screenful": SCREENFUL,
        "latest_run_of": {t: run["run_id"] for t, (run, _) in latest.items()},
    }


def _write_fs_page(
    conn,
    write,
    target,
    latest,
    series,
    headline_rankings,
    verdicts,
    config_changes,
    verdict_counts,
    fs_pages,
):
    """Write one scratch target's page; returns its entry in the index's summary."""
    run, cases = latest.get(target, (None, []))
    state = problems(cases)
    fs_plots = Plots()
    page = fs_page(target, series, headline_rankings, verdicts, fs_plots)
    fs_diary.mark_plots(page, config_changes.get(target))
    # what the target was in its latest run, in the site's words
    page["kind"] = next((c["scratch_kind"] for c in cases if c["scratch_kind"]), page["kind"])
    page["description"] = next(
        (c["scratch_description"] for c in cases if c["scratch_description"]), ""
    )
    write(
        fs_pages[target],
        "fs.html",
        name=target,
        page=page,
        run=run,
        state=state,
        advice=advice(target, headline_rankings, series),
        diary=fs_diary.diary_section(conn, target, _run_page_name),
        verdict_counts=sorted(verdict_counts[target].items()),
        plots=fs_plots.bundle,
        quartiles=True,
    )
    return {
        "name": target,
        "kind": page["kind"],
        "partitions": page["partitions"],
        "description": page["description"],
        "page": fs_pages[target],
        "run": run,
        "state": state,
        "verdicts": [(verdict_words(v), n, v) for v, n in sorted(verdict_counts[target].items())],
    }


def _run_page_name(run_id: str) -> str:
    return f"run-{slug(run_id)}.html"


#: a build with this many run pages to write splits them over processes (a full build
#: of 2,083 pages: 7.1 s in one, 4 s in two); a nightly rebuild writes one in-process
PARALLEL_RUN_PAGES = 200
_FORKED: dict[str, Any] = {}  # what the forked writers of run pages inherit


def _run_pages(conn, env, common, out, runs):
    """Write the pages of runs not yet written from the same run and templates.  A stored
    run never changes (the manifest relies on it), so processes that read it through
    their own connections write the same pages."""
    manifest_path = out / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        manifest = {}
    code = _code_digest()
    nav = hashlib.sha256(json.dumps(common["targets"]).encode()).hexdigest()[:16]
    pending = []
    for run in runs:
        name = _run_page_name(run["run_id"])
        fingerprint = f"{code}:{nav}:{run['ingested_at']}:{run['source'] or ''}"
        if manifest.get(name) != fingerprint or not (out / name).exists():
            pending.append((run, name, fingerprint))
    workers = min(os.cpu_count() or 1, 4)
    if len(pending) >= PARALLEL_RUN_PAGES and workers > 1:
        db_file = store.database_file(conn)
        env.get_template("run.html")  # compiled once, here: the writers share it
        _FORKED.update(
            env=env, common=common, out=out, pending=pending, db=db_file, workers=workers
        )
        try:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                pool.map(_write_run_pages_forked, range(workers))  # raises what a writer raised
        finally:
            _FORKED.clear()
    else:
        _write_run_pages(conn, env, common, out, pending)
    manifest.update((name, fingerprint) for _, name, fingerprint in pending)
    tmp = manifest_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest))
    tmp.replace(manifest_path)
    return len(pending)


def _write_run_pages(conn, env, common, out, pending):
    """Render and write the page of each (run, page name, fingerprint)."""
    template = env.get_template("run.html")
    for run, name, _ in pending:
        (out / name).write_text(
            template.render(common, run=run, plots=False, **run_page_data(conn, run, out))
        )


def _write_run_pages_forked(part):
    """In a forked writer: every workers-th pending page, from part on, read through a
    connection of its own (an SQLite connection must not cross a fork)."""
    pending = _FORKED["pending"][part :: _FORKED["workers"]]
    conn = store.connect(_FORKED["db"], create=False)
    try:
        with store.snapshot(conn):
            return _write_run_pages(
                conn, _FORKED["env"], _FORKED["common"], _FORKED["out"], pending
            )
    finally:
        conn.close()


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
