"""What each file system was, run by run, on the pages: seed 002's dated diary.

The history store keeps, with every run, what each scratch target was as a job saw it
(``filesystem_configs``, from ``scratchbench/fsconfig.py``).  This module turns that into:
the run page's "File systems" section, the file-system page's diary (a dated entry only
where the configuration changed: "2026-11-24 2 servers, no stripes -> 2026-11-26 4
servers, 4 MiB shards"), the marks of those dates on the history plots, the words a
nightly verdict adds when a figure changed on such a night ("when sanscratch went from 2
to 4 servers"), and the acceptance page's configuration before and after, side by side.
"""

import html
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from markupsafe import Markup

from reports import store
from scratchbench import fsconfig, units

#: the colour of a configuration change on the history plots
MARK_COLOUR = "#b35900"


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


# ---- one run's configuration of one target ---------------------------------------------
def configuration(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The rows of one run and target (one per environment) as one configuration:
    {summary, mpi: {environ: version}, problems, rows, facts (of the first readable
    row)}.  The file system's facts are the same whatever the environment; the MPI is
    the environment's."""
    readable = [r for r in rows if r["facts"]]
    # the row that described the file system (the others recorded only their MPI)
    full = [r for r in readable if "mount" in r["facts"] or "statfs" in r["facts"]]
    # (without it the run says nothing comparable of the file system: no diary entry)
    facts = full[0]["facts"] if full else None
    summary = fsconfig.summary(facts) if facts else {}
    mpi = {}
    for row in readable:
        if row["facts"].get("mpi") and row["environ"]:
            mpi[row["environ"]] = row["facts"]["mpi"]
    if summary:
        for environ, version in sorted(mpi.items()):
            summary[f"MPI ({environ})"] = version
    problems = []
    for row in rows:
        for line in (row["problem"] or "").splitlines():
            where = f"[{row['environ']}] " if row["environ"] else ""
            problems.append(f"{where}{line}")
    return {
        "summary": summary,
        "facts": facts,
        "mpi": mpi,
        "problems": problems,
        "rows": rows,
        "run_id": rows[0]["run_id"],
        "started": rows[0]["started"],
        "revision": rows[0]["revision"],
    }


def configurations(
    conn: sqlite3.Connection, target: str | None = None, run_ids: Iterable[str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """{target: [configuration of each run, oldest first]}."""
    grouped: defaultdict[str, defaultdict[str, list[dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for row in store.filesystem_configs(conn, run_ids=run_ids, target=target):
        grouped[row["scratch_target"]][row["run_id"]].append(row)
    return {
        t: sorted(
            (configuration(rows) for rows in runs.values()),
            key=lambda c: (c["started"] or 0, c["run_id"]),
        )
        for t, runs in grouped.items()
    }


def differences(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """Where two configurations differ.  An environment's MPI counts only when both
    runs recorded that environment (a run of a few checks may not use every one)."""
    found = fsconfig.differences(before["summary"], after["summary"])
    return [
        (k, old, new)
        for k, old, new in found
        if not (k.startswith("MPI (") and (old is None or new is None))
    ]


# ---- the diary ---------------------------------------------------------------------------
def diary(configs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """[{date, run_id, words, changes, change_words}] of one target: its first
    configuration, then one entry per run whose configuration differs from the run
    before it (runs whose configuration could not be read are passed over)."""
    entries: list[dict[str, Any]] = []
    previous: Mapping[str, Any] | None = None
    for config in configs:
        if not config["summary"]:
            continue
        changes = differences(previous, config) if previous else []
        if previous is None or changes:
            entries.append(
                {
                    "date": units.date(config["started"]),
                    "run_id": config["run_id"],
                    "started": config["started"],
                    "words": fsconfig.summary_words(config["summary"]),
                    "changes": changes,
                    "change_words": fsconfig.change_words(
                        config["rows"][0]["scratch_target"], changes
                    ),
                }
            )
        previous = config
    return entries


def change_dates(conn: sqlite3.Connection) -> dict[str, list[tuple[float, str]]]:
    """{target: [(Unix time, words)]}: the runs at which a target's configuration changed
    (its first configuration is not a change)."""
    return {
        target: [(e["started"], f"{e['date']}: {e['change_words']}") for e in diary(configs)[1:]]
        for target, configs in configurations(conn).items()
    }


def change_at(conn: sqlite3.Connection, target: str | None, run_id: str) -> str | None:
    """'sanscratch went from 2 to 4 servers' when the target's configuration in run_id
    differs from the run before it that recorded one; None otherwise."""
    return ChangeFinder(conn).at(target, run_id)


def mark_plots(page: dict[str, Any], marks: Sequence[tuple[float, str]] | None) -> None:
    """Draw each configuration change of the target on its history plots (date axes): a
    dotted vertical line at the run, its date and what changed on hover."""
    if not marks:
        return
    plots = list(page.get("headlines", []))
    for section in page.get("sections", []):
        for variant in section["variants"]:
            plots += variant["plots"]
    for p in plots:
        layout = p["spec"]["layout"]
        if layout.get("xaxis", {}).get("type") != "date":
            continue
        shapes = layout.setdefault("shapes", [])
        notes = layout.setdefault("annotations", [])
        for started, words in marks:
            x = int(started * 1000)
            shapes.append(
                {
                    "type": "line",
                    "xref": "x",
                    "yref": "paper",
                    "x0": x,
                    "x1": x,
                    "y0": 0,
                    "y1": 1,
                    "line": {"color": MARK_COLOUR, "width": 1, "dash": "dot"},
                }
            )
            notes.append(
                {
                    "x": x,
                    "y": 1,
                    "xref": "x",
                    "yref": "paper",
                    "text": units.date(started),
                    "hovertext": words,
                    "showarrow": False,
                    "yanchor": "bottom",
                    "font": {"size": 10, "color": MARK_COLOUR},
                }
            )


# ---- HTML ------------------------------------------------------------------------------
def _summary_rows(summary: Mapping[str, Any]) -> str:
    return "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in summary.items())


def run_section(conn: sqlite3.Connection, run_id: str) -> Markup:
    """The run page's "File systems" section: per target, what it was, the tools'
    outputs verbatim, and what could not be read and why."""
    found = configurations(conn, run_ids=[run_id])
    if not found:
        return Markup("")
    parts = [
        '<section class="filesystems"><h2>File systems</h2>'
        '<p class="sub">What each scratch target was in this run, as a job on a node '
        "of the partition saw it.</p>"
    ]
    for target, (config,) in sorted(found.items()):
        parts.append(f'<h3 id="fs-{_esc(target)}">{_esc(target)}</h3>')
        facts = config["facts"] or {}
        if config["summary"]:
            mount = facts.get("mount") or {}
            extra = {
                "path": facts.get("path", ""),
                "mount": f"{mount.get('source', '')} on {mount.get('mount_point', '')}",
            }
            statfs = facts.get("statfs")
            if statfs:
                extra["free"] = units.quantity(statfs["available_bytes"], "B")
            extra["scratchbench revision"] = config["revision"] or ""
            if facts.get("collector_seconds") is not None:
                extra["collected in"] = f"{facts['collector_seconds']:.2f} s"
            parts.append(
                '<table class="config fsconfig">'
                + _summary_rows({**config["summary"], **extra})
                + "</table>"
            )
        if config["problems"]:
            parts.append(
                '<ul class="fs-problems">'
                + "".join(f"<li>{_esc(p)}</li>" for p in config["problems"])
                + "</ul>"
            )
        for name, text in sorted((facts.get("raw") or {}).items()):
            parts.append(
                f"<details><summary>{_esc(name)} (verbatim)</summary>"
                f"<pre>{_esc(text)}</pre></details>"
            )
        if facts.get("site_facts"):
            parts.append(
                "<details open><summary>the site's facts (verbatim)</summary>"
                f"<pre>{_esc(facts['site_facts'])}</pre></details>"
            )
    parts.append("</section>")
    return Markup("\n".join(parts))


def diary_section(conn: sqlite3.Connection, target: str, run_page: Callable[[str], str]) -> Markup:
    """The file-system page's diary: a dated entry where the configuration changed."""
    entries = diary(configurations(conn, target=target).get(target, []))
    if not entries:
        return Markup(
            '<section class="diary"><h2>Diary</h2><p>No configuration recorded '
            "yet: runs record what the file system is from this version on.</p>"
            "</section>"
        )
    items = []
    for e in reversed(entries):
        what = (
            f' <span class="change">({_esc(e["change_words"])})</span>'
            if e["change_words"]
            else " (first recorded)"
        )
        items.append(
            f'<li><b>{_esc(e["date"])}</b> <a href="{_esc(run_page(e["run_id"]))}">'
            f"{_esc(e['words'])}</a>{what}</li>"
        )
    return Markup(
        '<section class="diary"><h2>Diary</h2><p class="sub">What this file '
        "system was, dated where it changed (the history plots mark these "
        f"dates): {_esc(diary_line(entries))}</p><ul>{''.join(items)}</ul></section>"
    )


def diary_line(entries: Sequence[Mapping[str, Any]]) -> str:
    """'2026-11-24 2 servers, no stripes -> 2026-11-26 4 servers, 4 MiB shards': each
    entry as its summary, or as what changed where the summary reads the same (an
    option, which the summary leaves out)."""
    parts, shown = [], None
    for e in entries:
        same = e["words"] == shown and e["change_words"]
        parts.append(f"{e['date']} {e['change_words'] if same else e['words']}")
        shown = e["words"]
    return " -> ".join(parts)


# ---- acceptance ----------------------------------------------------------------------
def acceptance_sides(
    conn: sqlite3.Connection, before_ids: Iterable[str], after_ids: Iterable[str]
) -> list[dict[str, Any]]:
    """[{target, rows: [(label, before, after, differs)], before_run, after_run,
    problems}]: each target's configuration in the last run before and the last run
    after, side by side; also when the runs on one side differ among themselves."""
    before = configurations(conn, run_ids=before_ids)
    after = configurations(conn, run_ids=after_ids)
    out: list[dict[str, Any]] = []
    for target in sorted(set(before) | set(after)):
        b = [c for c in before.get(target, []) if c["summary"]]
        a = [c for c in after.get(target, []) if c["summary"]]
        if not b or not a:
            out.append(
                {
                    "target": target,
                    "rows": [],
                    "before_run": None,
                    "after_run": None,
                    "problems": [
                        f"{target}: no configuration recorded in the runs "
                        f"{'before' if not b else 'after'}"
                    ],
                }
            )
            continue
        last_b, last_a = b[-1], a[-1]
        differing = {k for k, _, _ in differences(last_b, last_a)}
        labels = list(last_b["summary"]) + [
            k for k in last_a["summary"] if k not in last_b["summary"]
        ]
        rows = [
            (k, last_b["summary"].get(k), last_a["summary"].get(k), k in differing) for k in labels
        ]
        problems = []
        for side, configs in (("before", b), ("after", a)):
            inside = {k for c in configs[:-1] for k, _, _ in differences(c, configs[-1])}
            if inside:
                problems.append(
                    f"the runs {side} the change differ among themselves in "
                    f"{', '.join(sorted(inside))}"
                )
        out.append(
            {
                "target": target,
                "rows": rows,
                "before_run": last_b["run_id"],
                "after_run": last_a["run_id"],
                "problems": problems,
                "changes": fsconfig.change_words(target, differences(last_b, last_a)),
            }
        )
    return out


def note_unexplained_changes(
    sides: Iterable[dict[str, Any]], figures: Iterable[Mapping[str, Any]]
) -> None:
    """Add to each target whose configuration is the same before and after a note when
    its figures moved all the same: a control that says the runs differ in something the
    configuration does not record (the machine's load, the host, another job), against
    which the changed target's verdicts are to be read."""
    moved: dict[str, list[str]] = defaultdict(list)
    for f in figures:
        if f.get("target") and f["verdict"] in ("better", "worse"):
            moved[f["target"]].append(f["verdict"])
    for side in sides:
        verdicts = moved.get(side["target"])
        if not side["rows"] or any(r[3] for r in side["rows"]) or not verdicts:
            continue
        counts = ", ".join(f"{verdicts.count(v)} {v}" for v in ("better", "worse") if v in verdicts)
        side["problems"].append(
            f"{len(verdicts)} figure(s) of {side['target']} changed ({counts}) although its "
            "configuration did not: the runs before and after differ in something the "
            "configuration does not record (load, the host, other jobs); read the other "
            "targets' changes against it"
        )


def _value_shown(label: str, value: Any, absent: str) -> str:
    """A configuration value as shown; an option a run did not find set is at the file
    system's default (a no-op change that sets it to that value reads "(default) -> on")."""
    if value is not None and value != "":
        return str(value)
    return "(default)" if label.startswith("option ") else absent


def acceptance_lines(sides: Iterable[Mapping[str, Any]]) -> list[str]:
    """The configuration difference in words for `verdict acceptance` (CLI)."""
    lines = []
    for side in sides:
        changed = [(k, b, a) for k, b, a, differs in side["rows"] if differs]
        if changed:
            lines.append(
                f"  configuration of {side['target']}: "
                + "; ".join(
                    f"{k}: {_value_shown(k, b, '(none)')} -> {_value_shown(k, a, '(none)')}"
                    for k, b, a in changed
                )
            )
        elif side["rows"]:
            lines.append(f"  configuration of {side['target']}: the same before and after")
        lines += [f"  note: {p}" for p in side["problems"]]
    return lines


def acceptance_table(sides: Iterable[Mapping[str, Any]]) -> str:
    """The acceptance page's configuration before and after, differences highlighted."""
    parts = ['<section class="fs-compare"><h2>Configuration before and after</h2>']
    for side in sides:
        parts.append(f"<h3>{_esc(side['target'])}</h3>")
        if side["rows"]:
            parts.append(
                f'<table class="config compare"><thead><tr><th></th><th>before (run '
                f"{_esc(side['before_run'])})</th><th>after (run "
                f"{_esc(side['after_run'])})</th></tr></thead><tbody>"
            )
            for label, b, a, differs in side["rows"]:
                cls = ' class="differs"' if differs else ""
                parts.append(
                    f"<tr{cls}><th>{_esc(label)}</th><td>{_esc(_value_shown(label, b, ''))}</td>"
                    f"<td>{_esc(_value_shown(label, a, ''))}</td></tr>"
                )
            parts.append("</tbody></table>")
        for p in side["problems"]:
            parts.append(f'<p class="fs-problems">{_esc(p)}</p>')
    parts.append("</section>")
    return "\n".join(parts)


def acceptance_page(result: Mapping[str, Any], sides: Iterable[Mapping[str, Any]]) -> str:
    """A standalone page of one acceptance verdict: the configuration before and after
    above the per-figure verdicts (written beside the verdict file)."""
    figures = "".join(
        f'<tr class="v-{_esc(f["verdict"].replace(" ", "-"))}"><td>{_esc(f["verdict"])}</td>'
        f"<td>{_esc(f['name'])}</td><td>{_esc(f['detail'])}</td></tr>"
        for f in result["figures"]
    )
    style = (
        "body{font-family:sans-serif;margin:1.5em;max-width:75em}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .5em;"
        "text-align:left;vertical-align:top}tr.differs td,tr.differs th{background:#ffe3b3;"
        "font-weight:bold}.fs-problems{color:#8a3b00}"
    )
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>Acceptance verdict'
        f"</title><style>{style}</style></head><body><h1>Acceptance verdict</h1>"
        f"<p>{len(result['before']['runs'])} run(s) before ({_esc(result['before']['selection'])})"
        f" against {len(result['after']['runs'])} after ({_esc(result['after']['selection'])}); "
        f"{result['better']} better, {result['worse']} worse, "
        f"{result['no_significant_change']} no significant change"
        + (
            f", {result['too_short_to_trust']} too short to trust (not judged)"
            if result.get("too_short_to_trust")
            else ""
        )
        + ".</p>"
        f"{acceptance_table(sides)}<h2>Per figure</h2><table><thead><tr><th>verdict</th>"
        f"<th>figure</th><th>detail</th></tr></thead><tbody>{figures}</tbody></table>"
        "</body></html>\n"
    )


class ChangeFinder:
    """change_at for many figures of one verdict: each target's configurations read once."""

    configs: dict[str, list[dict[str, Any]]]

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn, self.configs = conn, {}

    def at(self, target: str | None, run_id: str) -> str | None:
        if not target:
            return None
        if target not in self.configs:
            found = configurations(self.conn, target=target).get(target, [])
            self.configs[target] = [c for c in found if c["summary"]]
        configs = self.configs[target]
        for previous, config in zip(configs, configs[1:]):
            if config["run_id"] == run_id:
                changes = differences(previous, config)
                return fsconfig.change_words(target, changes) if changes else None
        return None
