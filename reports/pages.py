"""Static performance pages from the history store.

Choices, and why:
* Plotly.js draws the plots: the plotly package ships ``plotly.min.js``, so the pages
  carry it as a local file and work offline, and users can hover and zoom.  The plot
  specifications are plain JSON written here (not built through plotly's Python figure
  objects, which validate every property and would make 100,000 figures too slow).
* Jinja2 renders the HTML with autoescaping on, so run notes and names can never
  inject markup; JSON for the plots goes through Jinja's ``tojson``, which escapes
  ``<``, ``>``, ``&`` and quotes.
* Plots render when they scroll into view, so a page with hundreds of them opens fast.

Layout per figure, after NERSC's UMAMI: the history on the left with the latest run
marked, a box plot of the earlier runs on the right with the latest value coloured by
the quartile it falls in (red = worst quarter, green = best, aware of whether bigger
is better).
"""

import json
import math
import re
import shutil
import statistics
import time
from collections import defaultdict
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

import jinja2

from reports import store
from reports.verdicts import higher_is_better

HISTORY_SHOWN = 200      # points on a history line; the box plot summarises every run
QUARTILE_COLOURS = ["#c0392b", "#e67e22", "#9acd32", "#1e8449"]   # worst .. best quarter
QUARTILE_WORDS = ["worst quarter", "below median", "above median", "best quarter"]
KEY_METRICS = ["write_bw", "read_bw", "create_rate", "open_close_rate", "delete_rate",
               "stage_in_bw", "stage_in_files_rate"]


def _when(ts):
    return datetime.fromtimestamp(ts or 0, timezone.utc).strftime("%Y-%m-%d %H:%M")


def _slug(text):
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def _fmt(value):
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def quartile(history, latest, unit):
    """0..3: the quarter of the history the latest value falls in, 3 = best."""
    if len(history) < 4:
        return None
    q1, q2, q3 = statistics.quantiles(history, n=4)
    position = 0 if latest < q1 else 1 if latest < q2 else 2 if latest < q3 else 3
    return position if higher_is_better(unit) else 3 - position


def series_label(series):
    """'sys:part|environ|Check %a=x %b=y' -> 'Check x y [environ]'."""
    _, environ, display = (series.split("|", 2) + ["", ""])[:3]
    values = [v for k, v in re.findall(r"%(\w+)=(\S+)", display) if k != "workload_tag"]
    return " ".join([display.split()[0] if display else "?", *values]) + f" [{environ}]"


def _label(row):
    """Short name of a case: its check and parameter values, without the tag."""
    params = json.loads(row["params"] or "{}")
    shown = [v for k, v in params.items() if k not in ("scratch_target", "workload_tag")]
    return " ".join([row["check_name"], *shown])


class Series:
    """One line of history: a check variant on one partition and environment, one metric."""

    def __init__(self, row):
        self.key, self.metric, self.unit = row["series"], row["metric"], row["unit"]
        self.label, self.environ = _label(row), row["environ"]
        self.partition = f"{row['system']}:{row['partition']}"
        self.check = row["check_name"]
        self.params = json.loads(row["params"] or "{}")
        self.points = []   # (time, value, run_id, tag)

    @property
    def latest(self):
        return self.points[-1]

    def plot(self, plot_id):
        shown = self.points[-HISTORY_SHOWN:]
        times = [int(p[0] * 1000) for p in shown]   # ms since the epoch, for Plotly
        values = [p[1] for p in shown]
        history = [p[1] for p in self.points[:-1]]
        latest = self.points[-1][1]
        q = quartile(history, latest, self.unit)
        colour = QUARTILE_COLOURS[q] if q is not None else "#34495e"
        runs = [p[2] for p in shown]
        data = [
            {"type": "scatter", "mode": "lines+markers", "x": times, "y": values,
             "text": runs, "name": "history", "line": {"color": "#7f8c8d", "width": 1},
             "marker": {"size": 5, "color": "#7f8c8d"},
             "hovertemplate": "%{x|%Y-%m-%d %H:%M}<br>%{y:.4g} " + self.unit +
                              "<br>run %{text}<extra></extra>"},
            {"type": "scatter", "mode": "markers", "x": [times[-1]], "y": [latest],
             "name": "latest", "marker": {"size": 11, "color": colour,
                                          "line": {"color": "#222", "width": 1}},
             "hovertemplate": "latest: %{y:.4g} " + self.unit + "<extra></extra>"},
            dict(_box_statistics(history or [latest]), type="box", name="past runs",
                 x=["past runs"], xaxis="x2", yaxis="y", marker={"color": "#95a5a6"},
                 hoverinfo="y"),
            {"type": "scatter", "mode": "markers", "x": ["past runs"], "y": [latest],
             "xaxis": "x2", "yaxis": "y", "name": "latest run",
             "marker": {"size": 12, "color": colour, "symbol": "diamond",
                        "line": {"color": "#222", "width": 1}},
             "hovertemplate": "latest: %{y:.4g}<extra></extra>"},
        ]
        layout = {"height": 230, "margin": {"l": 60, "r": 10, "t": 30, "b": 40},
                  "title": {"text": f"{self.metric} ({self.unit})", "font": {"size": 13},
                            "x": 0.01},
                  "showlegend": False, "xaxis": {"domain": [0, 0.74], "type": "date",
                                                 "nticks": 6},
                  "xaxis2": {"domain": [0.8, 1], "type": "category"},
                  "yaxis": {"rangemode": "tozero", "title": {"text": self.unit}},
                  "paper_bgcolor": "#ffffff", "plot_bgcolor": "#fbfbfb"}
        return {"id": plot_id, "spec": {"data": data, "layout": layout},
                "quartile": q, "colour": colour,
                "quartile_text": QUARTILE_WORDS[q] if q is not None else "too few runs to rank"}


def _box_statistics(values):
    """Plotly box from precomputed quartiles (Tukey fences): small pages, fast plots."""
    ordered = sorted(values)
    if len(ordered) >= 2:
        q1, median, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1 = median = q3 = ordered[0]
    iqr = q3 - q1
    low = min(v for v in ordered if v >= q1 - 1.5 * iqr)
    high = max(v for v in ordered if v <= q3 + 1.5 * iqr)
    return {"q1": [q1], "median": [median], "q3": [q3], "lowerfence": [low],
            "upperfence": [high]}


def collect(conn):
    """Figures grouped per scratch target: {target: {"series": {(key, metric): Series},
    "kind": ..., "partitions": {...}}}."""
    targets = defaultdict(lambda: {"series": {}, "kind": None, "partitions": set()})
    for row in store.figure_rows(conn):
        if row["value"] is None:
            continue
        target = row["scratch_target"] or "unspecified"
        t = targets[target]
        t["kind"] = row["scratch_kind"] or t["kind"]
        t["partitions"].add(f"{row['system']}:{row['partition']}")
        key = (row["series"], row["metric"])
        series = t["series"].get(key)
        if series is None:
            series = t["series"][key] = Series(row)
        series.points.append((row["started"] or 0, row["value"], row["run_id"], row["tag"]))
    return targets


def advice(name, target, all_targets):
    """Short, figure-derived advice for users of one file system."""
    out = []
    latest = defaultdict(list)
    for s in target["series"].values():
        latest[(s.check, s.metric)].append(s.latest[1])

    def med(check, metric, t=None):
        values = latest.get((check, metric)) if t is None else [
            s.latest[1] for s in t["series"].values() if s.check == check and s.metric == metric]
        return statistics.median(values) if values else None

    others = {n: t for n, t in all_targets.items() if n != name}
    stage_files, stage_bw = med("StageInOut", "stage_in_files_rate"), med("StageInOut",
                                                                          "stage_in_bw")
    if stage_files:
        out.append(f"Staging a data set into {name} ran at {_fmt(stage_files)} files/s "
                   f"({_fmt(stage_bw)} MiB/s): staging 1,000 input files costs about "
                   f"{_fmt(1000 / stage_files)} s before the job computes.")
    opens = med("KernelMetadata", "open_close_rate")
    if opens and stage_files:
        best = max(((med("KernelMetadata", "open_close_rate", t) or 0, n)
                    for n, t in others.items()), default=(0, None))
        if best[1] and opens > best[0] > 0:
            per_file_saving = 1 / best[0] - 1 / opens
            k = (1 / stage_files) / per_file_saving
            out.append(f"Files open {opens / best[0]:.1f}x faster here than on {best[1]}: "
                       f"staging pays for a job that opens each small input file more than "
                       f"{_fmt(k)} times.")
    deletes = med("KernelMetadata", "delete_rate")
    if deletes:
        seconds = 2048 / deletes
        line = (f"Removing 2,048 files takes about {_fmt(seconds)} s here "
                f"({_fmt(deletes)} deletions/s).")
        if seconds > 60:
            line += " Leave clean-up to the scheduler or do it after the job, as seed 002 learnt."
        out.append(line)
    share = med("KernelIOTest", "open_close_share")
    if share is not None and share > 10:
        out.append(f"Opening and closing files takes up to {_fmt(share)}% of a write phase: "
                   "keep files open instead of reopening them.")
    write = med("KernelIOTest", "write_bw")
    if write:
        ranked = sorted(((med("KernelIOTest", "write_bw", t) or 0, n)
                         for n, t in all_targets.items()), reverse=True)
        if ranked and ranked[0][1] == name and len(ranked) > 1:
            out.append(f"Fastest scratch target here for large sequential writes "
                       f"({_fmt(write)} MiB/s, {write / max(ranked[1][0], 1e-9):.1f}x "
                       f"{ranked[1][1]}).")
    return out


def build(out_dir, db_path=None, nightly_verdicts=None, title="Scratch file system performance"):
    """Write the site into out_dir; returns (number of pages, number of figures, seconds)."""
    t0 = time.monotonic()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "assets").mkdir(exist_ok=True)
    conn = store.connect(db_path)
    targets = collect(conn)
    runs = store.runs(conn)
    verdicts = {}
    for v in (nightly_verdicts or {}).get("figures", []):
        verdicts[(v["series"], v["metric"])] = v

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.files("reports") /
                                           "templates")),
        autoescape=jinja2.select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = _fmt
    env.filters["when"] = _when
    env.filters["slug"] = _slug
    _copy_assets(out)

    common = {"title": title, "generated": _when(time.time()), "runs": runs,
              "targets": sorted(targets), "fs_pages": {n: f"fs-{_slug(n)}.html" for n in targets}}
    pages = 0
    figures = sum(len(s.points) for t in targets.values() for s in t["series"].values())
    summary = []
    for name, target in sorted(targets.items()):
        plot_no = 0
        sections = defaultdict(list)
        status = defaultdict(int)
        for (_, metric), series in sorted(target["series"].items(),
                                          key=lambda kv: (kv[1].check, kv[1].label,
                                                          kv[1].environ, kv[1].metric)):
            plot_no += 1
            plot = series.plot(f"p{plot_no}")
            plot["series"] = series
            plot["verdict"] = verdicts.get((series.key, metric))
            if plot["verdict"]:
                status[plot["verdict"]["verdict"]] += 1
            else:
                status[plot["quartile_text"]] += 1
            sections[series.check].append(plot)
        scaling = _scaling_plots(target)
        key_figures = []
        for metric in KEY_METRICS:
            values = [s.latest[1] for s in target["series"].values() if s.metric == metric]
            units = [s.unit for s in target["series"].values() if s.metric == metric]
            if values:
                key_figures.append((metric, statistics.median(values), units[0]))
        latest_run = max((s.latest[0] for s in target["series"].values()), default=0)
        summary.append({"name": name, "kind": target["kind"],
                        "partitions": sorted(target["partitions"]),
                        "latest": latest_run, "key_figures": key_figures,
                        "status": dict(status), "page": common["fs_pages"][name]})
        html = env.get_template("fs.html").render(
            common, name=name, target=target, sections=dict(sections), scaling=scaling,
            advice=advice(name, target, targets), key_figures=key_figures)
        (out / common["fs_pages"][name]).write_text(html)
        pages += 1

    comparison = _comparison_plots(targets)
    (out / "compare.html").write_text(env.get_template("compare.html").render(
        common, comparison=comparison))
    pages += 1
    cases_of = defaultdict(list)
    for c in conn.execute("SELECT * FROM cases ORDER BY check_name, display_name, environ"):
        cases_of[c["run_id"]].append(dict(c))
    figures_of = defaultdict(list)
    for f in conn.execute("SELECT case_id, metric, value, unit FROM figures"):
        figures_of[f[0]].append(f"{f[1]} {_fmt(f[2])} {f[3] or ''}")
    run_template = env.get_template("run.html")
    for run in runs:
        (out / f"run-{_slug(run['run_id'])}.html").write_text(run_template.render(
            common, run=dict(run), cases=cases_of[run["run_id"]], figures=figures_of))
        pages += 1
    (out / "index.html").write_text(env.get_template("index.html").render(
        common, summary=summary, verdicts=nightly_verdicts))
    pages += 1
    conn.close()
    return pages, figures, time.monotonic() - t0


def _scaling_plots(target):
    """Node-count scaling of the latest run, for checks with a node_count parameter."""
    lines = defaultdict(dict)
    for s in target["series"].values():
        if "node_count" in s.params and s.metric in ("write_bw", "read_bw"):
            lines[(s.check, s.metric, s.environ, s.unit)][int(s.params["node_count"])] = \
                s.latest[1]
    plots = []
    for i, ((check, metric, environ, unit), points) in enumerate(sorted(lines.items())):
        nodes = sorted(points)
        plots.append({"id": f"scaling{i}", "title": f"{check} {metric} [{environ}]",
                      "spec": {"data": [{"type": "scatter", "mode": "lines+markers",
                                         "x": nodes, "y": [points[n] for n in nodes],
                                         "name": metric}],
                               "layout": {"height": 260, "margin": {"l": 60, "r": 10, "t": 30,
                                                                    "b": 45},
                                          "title": {"text": f"{metric} vs nodes ({unit})",
                                                    "font": {"size": 13}},
                                          "xaxis": {"title": {"text": "nodes"},
                                                    "type": "log", "dtick": 0.30103},
                                          "yaxis": {"title": {"text": unit},
                                                    "rangemode": "tozero"}}}})
    return plots


def _comparison_plots(targets):
    """All file systems side by side: the latest value of each check variant."""
    by_metric = defaultdict(lambda: defaultdict(dict))
    units = {}
    for name, t in targets.items():
        for s in t["series"].values():
            label = f"{s.label} [{s.environ}]"
            by_metric[s.metric][name][label] = s.latest[1]
            units[s.metric] = s.unit
    plots = []
    order = {m: i for i, m in enumerate(KEY_METRICS)}
    for i, metric in enumerate(sorted(by_metric, key=lambda m: (order.get(m, len(order)), m))):
        per_target = by_metric[metric]
        labels = sorted({lab for d in per_target.values() for lab in d})
        data = [{"type": "bar", "name": name, "x": labels,
                 "y": [per_target[name].get(lab) for lab in labels]}
                for name in sorted(per_target)]
        plots.append({"id": f"cmp{i}", "metric": metric, "unit": units[metric],
                      "better": "higher" if higher_is_better(units[metric]) else "lower",
                      "table": [(lab, [per_target[n].get(lab) for n in sorted(per_target)])
                                for lab in labels], "targets": sorted(per_target),
                      "spec": {"data": data, "layout": {
                          "barmode": "group", "height": 320,
                          "margin": {"l": 60, "r": 10, "t": 30, "b": 110},
                          "title": {"text": f"{metric} ({units[metric]})", "font": {"size": 13}},
                          "yaxis": {"title": {"text": units[metric]}},
                          "xaxis": {"tickangle": -25, "automargin": True}}}})
    return plots


def _copy_assets(out):
    assets = resources.files("reports") / "templates"
    for name in ("style.css", "pages.js"):
        shutil.copyfile(str(assets / name), out / "assets" / name)
    plotly_js = Path(resources.files("plotly")) / "package_data" / "plotly.min.js"
    target = out / "assets" / "plotly.min.js"
    if not target.exists() or target.stat().st_size != plotly_js.stat().st_size:
        shutil.copyfile(plotly_js, target)
