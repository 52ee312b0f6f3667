"""What `scratchbench ingest | verdict | report` do; the CLI only parses arguments."""

import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from scratchbench import paths, units
from scratchbench.errors import ConfigError, ScratchbenchError
from scratchbench.figures import SHORTEST_TRUSTED_PHASE_S, too_short_words
from reports import fs_diary, naming, pages, store, suite, verdicts


def progress(message: str) -> None:
    print(f"scratchbench: {message}", file=sys.stderr, flush=True)


def verdict_dir() -> Path:
    return paths.results_dir() / "verdicts"


class NotAllStored(store.StoreError):
    """Some sources of an ingest could not be stored; the others were.  ``errors``: one
    per bad source, each naming it; ``stored``: (runs, figures, total) as ingest returns."""

    def __init__(self, errors: Sequence[ScratchbenchError], stored: tuple[int, int, int]) -> None:
        super().__init__(
            f"{len(errors)} source(s) not stored: " + "; ".join(str(e) for e in errors)
        )
        self.errors, self.stored = errors, stored


def ingest(
    sources: Sequence[str | os.PathLike[str]] = (), db: str | os.PathLike[str] | None = None
) -> tuple[int, int, int]:
    """Store runs: (runs added, figures added, figures in the store).  Every source is
    read and every good one stored, even after a bad one; then a bad source raises its
    own error, or NotAllStored naming each when there were several sources."""
    conn = store.connect(db)
    store.check_integrity(conn)
    runs = figures = 0
    bad = []
    if not sources:
        runs, figures = store.ingest_all(conn)
    for source in sources:
        try:
            added = _ingest_source(conn, Path(source))
        except ScratchbenchError as exc:
            bad.append(exc)
            continue
        runs += 1 if added else 0
        figures += added
    total = store.figure_count(conn)
    conn.close()
    if len(bad) == 1 and len(sources) == 1:
        raise bad[0]
    if bad:
        raise NotAllStored(bad, (runs, figures, total))
    return runs, figures, total


def _ingest_source(conn: sqlite3.Connection, path: Path) -> int:
    if path.is_dir():
        return store.ingest_run_dir(conn, path)
    if path.is_file():
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise store.StoreError(f"{path}: not a JSON run report ({exc})") from exc
        if not isinstance(report, dict):
            raise store.StoreError(
                f"{path}: not a ReFrame run report (a JSON "
                f"{type(report).__name__}, expected an object)"
            )
        return store.ingest_report(conn, report, source=str(path))
    raise store.StoreError(f"{path}: no such run directory or run report")


def _series_history(
    conn: sqlite3.Connection, run: sqlite3.Row
) -> dict[tuple[str, str], list[sqlite3.Row]]:
    """For each figure of the run: its series' values up to and including that run."""
    run_id = run["run_id"]
    rows = store.figure_rows(conn, "WHERE r.started <= ?", (run["started"],))
    history = defaultdict(list)
    latest = set()
    for row in rows:
        key = (row["series"], row["metric"])
        history[key].append(row)
        if row["run_id"] == run_id:
            latest.add(key)
    return {k: v for k, v in history.items() if k in latest}


def _dated(detail: str, started: Mapping[str, float]) -> str:
    """'since run 3f2a...' -> 'since the run of 2026-11-20': a reader knows a date, not a
    run id (the run ids stay in the verdict's fields)."""
    return re.sub(
        r"\brun (\S+?)(?=[\s),;:]|$)",
        lambda m: (
            f"the run of {units.date(started[m.group(1)])}" if m.group(1) in started else m.group(0)
        ),
        detail,
    )


def _describe_change(entry: dict[str, Any], row: sqlite3.Row, started: Mapping[str, float]) -> None:
    """What the morning page and the CLI say of a change: the figure in the pages' words,
    where it ran, since when (a date), and a link to its chart."""
    since_run = entry.get("change_run") or entry["latest_run"]
    entry.update(
        what=row["headline"] or naming.figure_label(row),
        workload=naming.case_words(row),
        headline=bool(row["headline"]),
        target=row["scratch_target"] or "unspecified",
        environ=row["environ"] or "",
        partition=f"{row['system']}:{row['partition']}",
        since=units.date(started.get(since_run)),
        since_time=started.get(since_run),
        chart=f"{pages.fs_page_name(row['scratch_target'] or 'unspecified')}#"
        f"{naming.figure_anchor(entry['series'], entry['metric'])}",
    )
    entry["what"] = f"{entry['what']} ({entry['workload']})"


def _failed_cases(conn: sqlite3.Connection, run_id: str) -> list[dict[str, Any]]:
    """The judged run's cases that failed, with their cause, as verdict entries: a figure
    missing from the latest run is a verdict of its own, never the last night's value."""
    entries = []
    for row in store.failed_cases(conn, run_id):
        cause = row["fail_reason"] or "no reason recorded"
        entries.append(
            {
                "series": row["series"],
                "metric": None,
                "verdict": "failed",
                "name": naming.case_name(row),
                "what": naming.case_words(row),
                "target": row["scratch_target"] or "unspecified",
                "environ": row["environ"] or "",
                "detail": f"failed in {row['fail_phase'] or 'an unknown phase'}: {cause}",
            }
        )
    return entries


def _judged_histories(
    conn: sqlite3.Connection, run: sqlite3.Row
) -> tuple[
    list[verdicts.History], list[str], list[sqlite3.Row], list[dict[str, Any]], dict[str, float]
]:
    """The histories a nightly verdict judges: (histories, their figures' names, each
    one's latest row, the figures left unjudged (too short, undeclared) as verdict
    entries, {run: started})."""
    histories, names, latest_rows, unjudged = [], [], [], []
    started: dict[str, float] = {}
    run_id = run["run_id"]
    for (series, metric), rows in sorted(_series_history(conn, run).items()):
        started.update((r["run_id"], r["started"]) for r in rows)
        if rows[-1]["run_id"] != run_id or rows[-1]["value"] is None:
            continue  # not measured in the judged run: its case is judged as failed
        if rows[-1]["too_short"]:
            unjudged.append(
                {
                    "series": series,
                    "metric": metric,
                    "verdict": "too-short",
                    "notify": False,
                    "name": naming.figure_name(rows[-1]),
                    "phase_seconds": rows[-1]["phase_seconds"],
                    "detail": f"not judged: {too_short_words(rows[-1]['phase_seconds'])}",
                }
            )
            continue
        if rows[-1]["better"] not in verdicts.BETTER:
            unjudged.append(
                {
                    "series": series,
                    "metric": metric,
                    "verdict": "undeclared",
                    "notify": False,
                    "name": naming.figure_name(rows[-1]),
                    "detail": "not judged: the check does not declare whether "
                    "higher or lower is better",
                }
            )
            continue
        # (a night whose phase was too short to time is no point of the history)
        judged = [r for r in rows if r["value"] is not None and not r["too_short"]]
        histories.append(
            verdicts.History(
                [r["value"] for r in judged],
                [r["run_id"] for r in judged],
                rows[-1]["better"],
                series=series,
                metric=metric,
                unit=rows[-1]["unit"] or "",
            )
        )
        names.append(naming.figure_name(rows[-1]))
        latest_rows.append(rows[-1])
    return histories, names, latest_rows, unjudged, started


def _nightly_result(
    run_id: str,
    figures: list[dict[str, Any]],
    failed: list[dict[str, Any]],
    suite_verdict: suite.SuiteVerdict,
    started: Mapping[str, float],
) -> dict[str, Any]:
    """The nightly verdict file's content: the counts, the suite's alerts, every entry."""
    counts = Counter(f["verdict"] for f in figures)
    return {
        "kind": "nightly",
        "run_id": run_id,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "method": verdicts.NIGHTLY_METHOD,
        "alpha": verdicts.ALPHA,
        "false_alarm_rate": verdicts.NIGHTLY_FALSE_ALARMS,
        "labels": verdicts.NIGHTLY_LABELS,
        "regressions": counts["regression"],
        "ongoing_regressions": counts["ongoing-regression"],
        "recovered": counts["recovered"],
        "suspects": counts["suspect"],
        "improvements": counts["improvement"],
        "undecided": counts["insufficient-history"] + counts["invalid"] + counts["undeclared"],
        "too_short": counts["too-short"],
        "nights_needed": max([f.get("nights_needed", 0) for f in figures], default=0),
        "failed": len(failed),
        "suite": _suite_entry(suite_verdict, started),
        "alerts": sum(a.news for a in suite_verdict.regressions),
        "ongoing_alerts": sum(not a.news for a in suite_verdict.regressions),
        "figures": figures + failed,
    }


def nightly(
    run_id: str | None = None,
    tag: str | None = None,
    out: str | os.PathLike[str] | None = None,
    notify: Iterable[str] = (),
    db: str | os.PathLike[str] | None = None,
) -> tuple[int, dict[str, Any], Path]:
    """Returns (exit code, verdict dict, path written).

    Exit 1 when a figure regressed, 4 when checks of the run failed (and nothing
    regressed), 0 otherwise; 7 (NoHistory) when the store is missing or holds no run.
    ``notify``: commands or http(s) URLs told about a regression or a failed run; a
    failing notifier is reported and changes nothing."""
    conn = store.connect(db, create=False)
    store.check_integrity(conn)
    if run_id is None:
        run_id = store.latest_run_id(conn, tag)
        if run_id is None:
            conn.close()
            raise store.NoHistory(
                f"the history store {db or paths.history_db()} holds no run"
                + (f" tagged {tag}" if tag else "")
                + ": run the suite, then `scratchbench ingest`"
            )
    judged_run = store.run(conn, run_id)
    if judged_run is None:
        conn.close()
        raise ScratchbenchError(f"--run {run_id}: no such run in the history store")
    histories, names, latest_rows, unjudged, started = _judged_histories(conn, judged_run)
    # The suite layer decides what is notified and the exit code: figures that move
    # together (a check on one target, system and environment) are one group, the
    # run's common shift is removed, and one budget covers the whole suite.
    groups = [_group_words(row) for row in latest_rows]
    suite_verdict = suite.judge(histories, groups, sorted(started, key=lambda r: (started[r], r)))
    config_changes = fs_diary.ChangeFinder(conn)
    figures = [
        dict(
            verdicts.as_dict(v),
            name=name,
            nights_needed=max(0, verdicts.MIN_HISTORY - v.history)
            if v.verdict == "insufficient-history"
            else 0,
        )
        for v, name in zip(verdicts.nightly_many(histories), names)
    ]
    alert_of = {(m["series"], m["metric"]): a for a in suite_verdict.alerts for m in a.members}
    for entry, row, group in zip(figures, latest_rows, groups):
        entry["detail"] = _dated(entry["detail"], started)
        if entry["verdict"] in naming.CHANGE_WORDS:
            _describe_change(entry, row, started)
            # "since 2026-11-26, when sanscratch went from 2 to 4 servers"
            entry["config_change"] = config_changes.at(
                row["scratch_target"], entry.get("change_run") or entry["latest_run"]
            )
        entry["group"] = group
        alert = alert_of.get((entry["series"], entry["metric"]))
        # Notified: a figure that a new alert names, with a change of its own.
        entry["notify"] = bool(
            alert
            and alert.news
            and alert.direction == "regression"
            and entry["verdict"] in naming.CHANGE_WORDS
        )
    figures += unjudged
    failed = _failed_cases(conn, run_id)
    for entry in failed:
        entry["since"] = units.date(judged_run["started"])
    conn.close()
    if not figures and not failed:
        raise ScratchbenchError(
            f"run {run_id} has no figures to judge: its checks were skipped; see its run report",
            exit_code=4,
        )
    result = _nightly_result(run_id, figures, failed, suite_verdict, started)
    path = Path(out) if out else verdict_dir() / f"nightly-{run_id}.json"
    _write_json(path, result)
    # A suite alert of a regression keeps the night red while it lasts; notifiers hear
    # only what is news (a new alert, with every figure it affects) and every failed
    # check.  Per-figure verdicts stay in the file and on the pages.
    code = 1 if suite_verdict.regressions else 4 if failed else 0
    if failed or suite_verdict.notify:
        result["notified"] = notify_all(notify, result, path)
        if result["notified"]:
            _write_json(path, result)
    return code, result, path


def _group_words(row: sqlite3.Row) -> str:
    """A suite group in words: a check on one target, system and environment."""
    return (
        f"{naming.check_words(row)} on {row['scratch_target'] or 'unspecified'} "
        f"[{row['environ'] or 'no environment'}] ({row['system']}:{row['partition']}"
        + (f", {row['workload']}" if row["workload"] else "")
        + ")"
    )


def _suite_entry(verdict: suite.SuiteVerdict, started: Mapping[str, float]) -> dict[str, Any]:
    """The suite layer's part of the verdict file: its method, budget and alerts."""
    return {
        "method": suite.METHOD,
        "false_notifications": suite.FALSE_NOTIFICATIONS,
        "alpha": suite.SUITE_ALPHA,
        "tests": verdict.tests,
        "groups": verdict.groups,
        "group_threshold": verdict.group_threshold,
        "figure_threshold": verdict.figure_threshold,
        "run_effect": verdict.run_effect,
        "alerts": [
            dict(
                verdicts.as_dict(a),
                since=units.date(started[a.change_run])
                if a.change_run in started
                else a.change_run,
            )
            for a in verdict.alerts
        ],
    }


def alert_sentence(alert: Mapping[str, Any]) -> str:
    """A suite alert in words: the group, new or ongoing, since when, how much, and how
    many of its figures moved."""
    kind = "Regression" if alert["direction"] == "regression" else "Improvement"
    much = (
        units.percent(alert["relative_change"])
        if alert["relative_change"] is not None and math.isfinite(alert["relative_change"])
        else "n/a"
    )
    return (
        f"{kind} alert ({'new' if alert['news'] else 'ongoing'}): {alert['group']}, "
        f"since {alert['since']}: median {much} over {len(alert['members'])} figure(s) "
        f"(z {alert['z']:+.1f} beyond {alert['threshold']:.1f})"
    )


def notify_all(
    targets: Iterable[str] | None, result: Mapping[str, Any], path: str | os.PathLike[str]
) -> list[dict[str, Any]]:
    """Tell every notifier about a regression or a failed run: a shell command (with
    $SCRATCHBENCH_VERDICT naming the verdict file) or an http(s) URL (a JSON POST, as
    chat and ticket webhooks take).  A notifier that fails is reported, never fatal."""
    outcomes = []
    for target in targets or ():
        progress(f"notifying {target}")
        try:
            if target.startswith(("http://", "https://")):
                _post(target, _notification(result, path))
            else:
                done = subprocess.run(
                    target,
                    shell=True,
                    timeout=120,
                    capture_output=True,
                    text=True,
                    env={**os.environ, "SCRATCHBENCH_VERDICT": str(path)},
                )
                if done.returncode:
                    raise RuntimeError(
                        f"exited {done.returncode}: {(done.stderr or done.stdout).strip()[-200:]}"
                    )
            outcomes.append({"target": target, "ok": True})
        except Exception as exc:  # any notifier failure: say it, keep the verdict
            progress(f"warning: notification to {target} failed: {exc}")
            outcomes.append({"target": target, "ok": False, "error": str(exc)})
    return outcomes


def _notification(result: Mapping[str, Any], path: str | os.PathLike[str]) -> dict[str, Any]:
    bad = [
        f for f in naming.changes(result["figures"]) if f.get("notify") or f["verdict"] == "failed"
    ]
    alerts = [
        a
        for a in result.get("suite", {}).get("alerts", [])
        if a["news"] and a["direction"] == "regression"
    ]
    # The news in words, one line each, newest first (as the banner says it); then the
    # suite alerts, each once with how many figures it covers.
    text = "\n".join(
        [
            f"scratchbench nightly run {result['run_id']}: {result['alerts']} "
            f"new alert(s), {result['regressions']} figure(s) newly regressed, "
            f"{result['failed']} failed check(s)"
        ]
        + [naming.change_sentence(f) for f in bad]
        + [alert_sentence(a) for a in alerts]
    )
    return {
        "text": text,
        "run_id": result["run_id"],
        "verdict_file": str(path),
        "alerts": alerts,
        "regressions": result["regressions"],
        "recovered": result["recovered"],
        "failed": result["failed"],
        "figures": [
            {
                "name": f["name"],
                "verdict": f["verdict"],
                "detail": f["detail"],
                "words": naming.change_sentence(f),
                "chart": f.get("chart"),
            }
            for f in bad
        ],
    }


def _post(url: str, payload: Mapping[str, Any]) -> None:
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        if response.status >= 300:
            raise RuntimeError(f"HTTP {response.status}")


def format_nightly(result: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    lines = [
        f"Nightly verdict for run {result['run_id']} ({len(result['figures'])} figures; "
        f"false-alarm rate {result['false_alarm_rate']}):"
    ]
    for alert in result.get("suite", {}).get("alerts", []):
        lines.append(f"  {alert_sentence(alert)}")
    for f in naming.changes(result["figures"]):
        lines.append(f"  {naming.change_sentence(f)}")
        if f.get("chart"):
            lines.append(f"    chart: {f['chart']}")
    short = [f for f in result["figures"] if f["verdict"] == "too-short"]
    if short:
        lines.append(
            f"  {len(short)} figure(s) not judged, their timed phase too short to "
            f"trust (under {SHORTEST_TRUSTED_PHASE_S:g} s; each named in the "
            "verdict file)"
        )
    for f in result["figures"]:
        if (
            f["verdict"] not in ("ok", "insufficient-history", "too-short")
            and f["verdict"] not in naming.CHANGE_WORDS
        ):
            lines.append(f"  {f['verdict'].upper():<11} {f['name']}: {f['detail']}")
    counts: defaultdict[str, int] = defaultdict(int)
    for f in result["figures"]:
        counts[f["verdict"]] += 1
    lines.append("  " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    for note in result.get("notified", []):
        lines.append(
            f"  notified {note['target']}"
            if note["ok"]
            else f"  NOTIFICATION FAILED {note['target']}: {note['error']}"
        )
    lines.append(f"verdict file: {path}")
    return "\n".join(lines)


def _select(conn: sqlite3.Connection, spec: str, option: str) -> list[str]:
    """Runs matching 'key:value,key:value' (tag, note, since, until, run)."""
    conditions: list[tuple[str, str | float | list[str]]] = []
    for part in [p.strip() for p in spec.split(",") if p.strip()]:
        key, _, value = part.partition(":")
        if not value:
            raise ConfigError(
                f"{option} {spec}: expected key:value items (tag, note, since, until, run)"
            )
        if key in ("tag", "note"):
            conditions.append((key, value))
        elif key in ("since", "until"):
            try:
                ts = datetime.fromisoformat(value).replace(tzinfo=timezone.utc).timestamp()
            except ValueError:
                raise ConfigError(
                    f"{option} {key}:{value}: expected a date such as 2026-11-22"
                ) from None
            conditions.append((key, ts))
        elif key == "run":
            conditions.append((key, value.split("|")))
        else:
            raise ConfigError(
                f"{option} {spec}: unknown key '{key}' (expected tag, note, since, until or run)"
            )
    if not conditions:
        raise ConfigError(f"{option}: empty selection")
    ids = store.runs_matching(conn, conditions)
    if not ids:
        raise ConfigError(f"{option} {spec} matches no stored run")
    return ids


def _runs_of(
    conn: sqlite3.Connection, run_ids: Sequence[str]
) -> dict[tuple[str, str], dict[str, Any]]:
    """{(series, metric): {"runs": [[repetitions of a run], ...], ...}}: the run is the
    unit of independence, its repetitions only summarise it."""
    marks = ",".join("?" * len(run_ids))
    rows = store.figure_rows(conn, f"WHERE r.run_id IN ({marks})", run_ids)
    extra = store.samples_of(conn, [r["figure_id"] for r in rows])
    grouped: defaultdict[tuple[str, str], dict[str, Any]] = defaultdict(lambda: {"runs": []})
    for row in rows:
        if row["value"] is None:
            continue
        g = grouped[(row["series"], row["metric"])]
        g.update(
            unit=row["unit"],
            better=row["better"],
            name=naming.figure_name(row),
            target=row["scratch_target"],
        )
        g["runs"].append(extra.get(row["figure_id"]) or [row["value"]])
        if row["too_short"]:
            g["shortest_phase"] = min(g.get("shortest_phase", math.inf), row["phase_seconds"])
    return grouped


def acceptance(
    before: str,
    after: str,
    out: str | os.PathLike[str] | None = None,
    db: str | os.PathLike[str] | None = None,
) -> tuple[int, dict[str, Any], Path]:
    conn = store.connect(db, create=False)
    store.check_integrity(conn)
    before_ids = _select(conn, before, "--before")
    after_ids = _select(conn, after, "--after")
    overlap = set(before_ids) & set(after_ids)
    if overlap:
        raise ConfigError(f"--before and --after both select run(s) {', '.join(sorted(overlap))}")
    b, a = _runs_of(conn, before_ids), _runs_of(conn, after_ids)
    configuration = fs_diary.acceptance_sides(conn, before_ids, after_ids)
    conn.close()
    keys = [k for k in sorted(set(b) & set(a)) if b[k]["better"] in verdicts.BETTER]
    # (a figure whose check does not say which way is better has nothing to decide)
    arguments = {
        key: dict(
            before_runs=b[key]["runs"],
            after_runs=a[key]["runs"],
            better=b[key]["better"],
            series=key[0],
            metric=key[1],
            unit=b[key]["unit"] or "",
        )
        for key in keys
    }
    shortest = {
        key: min(b[key].get("shortest_phase", math.inf), a[key].get("shortest_phase", math.inf))
        for key in keys
    }
    judged = [key for key in keys if shortest[key] == math.inf]
    decided = dict(zip(judged, verdicts.acceptance_together([arguments[k] for k in judged])))
    figures = []
    for key in keys:
        v = decided.get(key) or verdicts.acceptance(**arguments[key])
        if key not in decided:
            # shown with its change, never called better or worse
            v.verdict = "too short to trust"
            v.detail = f"not judged: {too_short_words(shortest[key])} in a run ({v.detail})"
        figures.append(dict(verdicts.as_dict(v), name=b[key]["name"], target=b[key]["target"]))
    fs_diary.note_unexplained_changes(configuration, figures)
    if not figures:
        raise ConfigError(
            "the runs before and after share no figure: select runs of the same checks and tag"
        )
    result: dict[str, Any]
    result = {
        "kind": "acceptance",
        "before": {"selection": before, "runs": before_ids},
        "after": {"selection": after, "runs": after_ids},
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "method": verdicts.ACCEPTANCE_METHOD,
        "alpha": verdicts.ACCEPTANCE_ALPHA,
        "configuration": configuration,
        "figures": figures,
    }
    for label in verdicts.ACCEPTANCE_LABELS:
        result[label.replace(" ", "_")] = sum(f["verdict"] == label for f in figures)
    path = (
        Path(out)
        if out
        else verdict_dir()
        / f"acceptance-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}.json"
    )
    _write_json(path, result)
    # the acceptance page: the configuration before and after above the verdicts
    result["page"] = str(path.with_suffix(".html"))
    Path(result["page"]).write_text(fs_diary.acceptance_page(result, configuration))
    short = result["too_short_to_trust"]
    if result["insufficient"] + short == len(figures):
        if not result["insufficient"]:
            raise ScratchbenchError(
                f"no figure can be decided: the timed phase of every one was too short to "
                f"trust (under {SHORTEST_TRUSTED_PHASE_S:g} s); compare runs of a larger "
                f"workload (details in {path})",
                exit_code=3,
            )
        waiting = [f for f in figures if f["verdict"] == "insufficient"]
        need_b = max(f["runs_needed_before"] for f in waiting)
        need_a = max(f["runs_needed_after"] for f in waiting)
        raise ScratchbenchError(
            f"too few runs to decide any figure: {need_b} more run(s) before and {need_a} "
            f"more run(s) after are needed"
            + (f" ({short} more too short to trust)" if short else "")
            + f" (details in {path})",
            exit_code=3,
        )
    return (1 if result["worse"] else 0), result, path


def format_acceptance(result: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    lines = [
        f"Acceptance verdict: {len(result['before']['runs'])} run(s) before "
        f"({result['before']['selection']}) vs {len(result['after']['runs'])} after "
        f"({result['after']['selection']})"
    ]
    lines += fs_diary.acceptance_lines(result.get("configuration") or [])
    for f in result["figures"]:
        lines.append(f"  {f['verdict']:<22} {f['name']}: {f['detail']}")
    lines.append(
        f"  {result['better']} better, {result['worse']} worse, "
        f"{result['no_significant_change']} no significant change, "
        f"{result['insufficient']} undecided (too few runs)"
        + (
            f", {result['too_short_to_trust']} too short to trust"
            if result["too_short_to_trust"]
            else ""
        )
    )
    lines.append(f"verdict file: {path}")
    if result.get("page"):
        lines.append(f"verdict page: {result['page']}")
    return "\n".join(lines)


def report(
    out_dir: str | os.PathLike[str],
    db: str | os.PathLike[str] | None = None,
    prepare_out: Callable[[], object] | None = None,
) -> tuple[int, int, float]:
    """Build the pages; the verdict banner uses the nightly verdict of the latest run
    (``nightly-RUN.json`` as `verdict nightly` writes it), and says so when there is none.
    ``prepare_out`` (checks or makes the output directory) runs only once the store is
    known to hold figures: a missing or empty store creates nothing."""
    conn = store.connect(db, create=False)
    store.check_integrity(conn)
    stored = store.figure_count(conn)
    latest = store.latest_run_id(conn)
    conn.close()
    if not stored:
        raise store.NoHistory(
            f"the history store {db or paths.history_db()} holds no "
            "figures yet: run the suite (`scratchbench run`) first"
        )
    nightly_result = None
    verdict_file = verdict_dir() / f"nightly-{latest}.json"
    if verdict_file.exists():
        try:
            nightly_result = json.loads(verdict_file.read_text())
        except ValueError as exc:
            raise ScratchbenchError(
                f"{verdict_file}: not a verdict file ({exc}); run "
                "`scratchbench verdict nightly` again"
            ) from None
    if prepare_out:
        prepare_out()
    progress(f"building the pages in {out_dir}")
    return pages.build(out_dir, db_path=db, nightly_verdicts=nightly_result)


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=_jsonable) + "\n")
    tmp.replace(path)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {value!r}")
