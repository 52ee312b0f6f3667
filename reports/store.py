"""The history store: every figure of every run, with its context, in SQLite.

Source: ReFrame's JSON run report.  It is versioned (``session_info.data_version``),
holds every test case with its parameters, variables, job id, nodes, result and
performance values with references and units, and it is exactly what ReFrame's own
results DB stores per session.  Perflogs, by contrast, have whatever layout a site
config gives them and lack the parameters.  Each run directory also has ``run.json``
(site, tag, revision, note) from ``scratchbench run``.

Tables: ``runs`` (one per run), ``cases`` (one per test case, with its target and
parameters), ``figures`` (each performance figure with its declaration), ``samples``
(per-repetition values) and ``filesystem_configs`` (what each scratch target was in the
run, as a job saw it: one row per target, partition and environment that collected it,
``facts`` the JSON of ``scratchbench.fsconfig.parse_collected``, ``problem`` why it or
part of it could not be read; a target no case collected gets a row with only the
problem).

Ingestion is idempotent (a run already stored is left as it is) and safe under
concurrency (each ingest is one ``BEGIN IMMEDIATE`` transaction; SQLite serialises
writers and a busy writer waits).  The schema evolves through numbered migrations in
``reports/migrations``, tracked with ``PRAGMA user_version``.
Every query of these tables is here: the pages, the advisor, the verdicts and the
commands ask this module (tests/test_architecture.py fails on SQL anywhere else).
A figure keeps how long its timed phase lasted (``phase_seconds``) and whether that was
too short to trust (``too_short``, scratchbench.figures' rule when it was stored).
"""

import contextlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from reports import runreport
from scratchbench import paths
from scratchbench.errors import ScratchbenchError
from scratchbench.figures import too_short

#: the newest runs of a series that a spread, a ranking, a piece of advice or a
#: prediction's interval rests on (the pages and the advisor)
RECENT_RUNS = 10


class StoreError(ScratchbenchError):
    exit_code = 5


class NoHistory(StoreError):
    """Nothing to read: the history store does not exist or holds no run.  Its own exit
    code, so that a script tells it from a regression (1) or a damaged store (5)."""

    exit_code = 7


def migrations() -> list[tuple[int, str]]:
    """[(version, sql)] in order, from reports/migrations/NNNN_*.sql."""
    found = []
    for entry in resources.files("reports").joinpath("migrations").iterdir():
        match = re.match(r"(\d{4})_.*\.sql$", entry.name)
        if match:
            found.append((int(match.group(1)), entry.read_text()))
    return sorted(found)


def connect(
    db_path: str | os.PathLike[str] | None = None, create: bool = True
) -> sqlite3.Connection:
    """Open (creating and migrating as needed) the history store.  ``create=False`` is
    for commands that only read: a store that does not exist is an error (NoHistory),
    never made empty by reading it."""
    db_path = Path(db_path or paths.history_db())
    if not create and not db_path.is_file():
        raise NoHistory(
            f"history store {db_path}: no such file: store a run first "
            "(`scratchbench run` or `scratchbench ingest`), or set "
            "SCRATCHBENCH_HISTORY to the store you meant"
        )
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(db_path, timeout=60, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"history store {db_path}: cannot open ({exc})") from exc
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 60000")
        # WAL: readers (a page build) never block the writer (an ingest) or see half a run.
        conn.execute("PRAGMA journal_mode = WAL")
        _migrate(conn, db_path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"history store {db_path}{_why_unwritable(db_path)}: {exc}") from exc
    return conn


def _statements(sql: str) -> Iterator[str]:
    """The SQL statements of a migration file (comments may hold semicolons)."""
    buffer = ""
    for line in sql.splitlines():
        if line.lstrip().startswith("--"):
            continue
        buffer += line + "\n"
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    if buffer.strip():
        raise StoreError(f"migration ends with an incomplete statement: {buffer.strip()[:60]}")


def _migrate(conn: sqlite3.Connection, db_path: str | os.PathLike[str]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = conn.execute("PRAGMA user_version").fetchone()[0]
        known = migrations()
        newest = known[-1][0] if known else 0
        if current > newest:
            raise StoreError(
                f"history store {db_path} has schema version {current}, newer "
                f"than this scratchbench knows ({newest}); upgrade scratchbench"
            )
        for version, sql in known:
            if version > current:
                for statement in _statements(sql):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _num(value: object) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _insert(conn: sqlite3.Connection, table: str, row: Mapping[str, Any]) -> sqlite3.Cursor:
    """INSERT by column name: a new column never shifts the others."""
    columns = list(row)
    return conn.execute(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        [row[c] for c in columns],
    )


def series_key(case: Mapping[str, Any], display: str | None) -> str:
    """One history line: where it ran, with which environment, which variant, which
    workload (quick, nightly and acceptance sizes are different series)."""
    return (
        f"{case.get('system')}:{case.get('partition')}|{case.get('environ')}|{display}|"
        f"{case.get('workload_tag') or ''}"
    )


def ingest_report(
    conn: sqlite3.Connection,
    report: Mapping[str, Any],
    meta: Mapping[str, Any] | None = None,
    source: str = "",
) -> int:
    """Store one ReFrame run report.  Returns the number of figures added (0 when the
    run was already stored)."""
    meta = meta or {}
    info = report.get("session_info", {})
    version = str(info.get("data_version", ""))
    if not version.startswith(runreport.SUPPORTED_DATA_VERSION):
        raise StoreError(
            f"{source or 'run report'}: data_version {version!r} is not a ReFrame 4 run report"
        )
    # ReFrame merges --session-extras into session_info; older reports nest them.
    extras = {**info, **(info.get("extras") or {})}
    session = info.get("uuid")
    run_id = meta.get("run_id") or extras.get("scratchbench_run") or session
    if not run_id:
        raise StoreError(f"{source or 'run report'}: no session uuid and no run id")
    partitions = meta.get("partitions", {})
    cases = runreport.final_cases(report)
    reasons = runreport.skip_reasons(cases)
    added = 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        exists = conn.execute(
            "SELECT 1 FROM runs WHERE run_id = ? OR session_uuid = ?", (run_id, session)
        ).fetchone()
        if exists:
            conn.execute("ROLLBACK")
            return 0
        _insert(conn, "runs", _run_row(run_id, session, meta, info, extras, source))
        for index, case in enumerate(cases):
            if case.get("fixture"):
                continue  # builds and tool providers: no figures of their own
            row = _case_row(run_id, case, reasons.get(index), partitions)
            added += _insert_figures(conn, _insert(conn, "cases", row).lastrowid, case)
        _insert_filesystem_configs(conn, run_id, cases)
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        conn.execute("ROLLBACK")
        raise StoreError(
            f"{_db_name(conn)}: {exc}: nothing of run {run_id} was stored "
            "(its run report is unchanged; ingest it again once the store "
            "can take it)"
        ) from exc
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return added


def _run_row(run_id, session, meta, info, extras, source):
    """The runs row of a run report's session."""
    return {
        "run_id": run_id,
        "session_uuid": session,
        "site": meta.get("site"),
        "system": meta.get("system") or None,
        "tag": meta.get("tag") or extras.get("tag"),
        "revision": meta.get("revision") or extras.get("revision"),
        "note": meta.get("note", ""),
        "started": info.get("time_start_unix"),
        "finished": info.get("time_end_unix"),
        "reframe_version": info.get("version"),
        "hostname": info.get("hostname"),
        "source": source,
        "ingested_at": time.time(),
    }


def _case_row(run_id, case, skip_reason, partitions):
    """The cases row of one test case of a run report."""
    display = case.get("display_name") or case.get("name")
    params = {k: str(v) for k, v in runreport.parameters(case).items()}
    return {
        "run_id": run_id,
        "series": series_key(case, display),
        "check_name": runreport.check_name(case),
        "display_name": display,
        "system": case.get("system"),
        "partition": case.get("partition"),
        "environ": case.get("environ"),
        "scratch_target": case.get("scratch_target"),
        "scratch_kind": case.get("scratch_kind"),
        "scratch_description": case.get("scratch_description") or None,
        "nodes": _num(case.get("num_nodes_used")),
        "tasks_per_node": _num(case.get("tasks_per_node_used")),
        "num_tasks": _num(case.get("num_tasks")),
        "transfer_size": _num(case.get("transfer_size")) or None,
        "api": case.get("io_api") or None,
        "workload": case.get("workload_tag"),
        "params": json.dumps(params, sort_keys=True),
        "result": case.get("result"),
        "fail_phase": case.get("fail_phase"),
        "fail_reason": case.get("fail_reason"),
        "skip_reason": skip_reason,
        "jobid": str(case.get("jobid") or ""),
        "nodelist": ",".join(case.get("job_nodelist") or []),
        "exclusive": int(bool(case.get("exclusive_access"))),
        "access": " ".join(partitions.get(case.get("partition"), {}).get("access", [])),
        "completed": case.get("job_completion_time_unix"),
        "title": case.get("title") or None,
        "variant": case.get("variant_words") or None,
        "workload_words": case.get("workload_words") or None,
        "scaling_parameter": case.get("scaling_parameter") or None,
    }


def _insert_figures(conn, case_id, case):
    """Insert one case's performance figures and their samples; returns how many."""
    added = 0
    samples = case.get("samples") or {}
    phases = case.get("phase_seconds") or {}
    declared = case.get("figures") or {}
    for metric, value, unit, ref, lower, upper, result in runreport.perf_figures(case):
        meaning = declared.get(metric) or {}
        fig = _insert(
            conn,
            "figures",
            {
                "case_id": case_id,
                "metric": metric,
                "value": _num(value),
                "unit": unit,
                "reference": _num(ref),
                "lower": _num(lower),
                "upper": _num(upper),
                "result": result,
                "label": meaning.get("label"),
                "better": meaning.get("better"),
                "headline": meaning.get("headline") or None,
                "chart": json.dumps(meaning["chart"]) if meaning.get("chart") else None,
                "role": meaning.get("role") or None,
                "phase_seconds": _num(phases.get(metric)),
                "too_short": None
                if _num(phases.get(metric)) is None
                else int(too_short(phases[metric])),
            },
        )
        added += 1
        values = samples.get(metric) or []
        conn.executemany(
            "INSERT INTO samples (figure_id, idx, value) VALUES (?,?,?)",
            [(fig.lastrowid, i, v) for i, v in enumerate(values) if _num(v) is not None],
        )
    return added


def _insert_filesystem_configs(conn, run_id, cases):
    """What each scratch target was in this run (the ``fs_facts`` of the case that
    collected it: one per target, partition and environment), and, for a target none of
    whose cases collected it, a row saying why."""
    collected, targets = set(), {}
    for case in cases:
        target = case.get("scratch_target")
        if case.get("fixture") or not target:
            continue
        targets.setdefault(target, []).append(case)
        facts = case.get("fs_facts") or {}
        if not case.get("collects_fs_facts") and not facts:
            continue
        problems = facts.get("problems") or []
        readable = {k: v for k, v in facts.items() if k != "problems"}
        conn.execute(
            "INSERT OR IGNORE INTO filesystem_configs (run_id, scratch_target, system, "
            "partition, environ, collected, facts, problem) VALUES (?,?,?,?,?,?,?,?)",
            (
                run_id,
                target,
                case.get("system"),
                case.get("partition"),
                case.get("environ"),
                case.get("job_completion_time_unix"),
                json.dumps(facts, sort_keys=True) if readable else None,
                "\n".join(problems)
                or (
                    None
                    if readable
                    else f"the case that collected it ({case.get('display_name')}) "
                    f"ended {case.get('result')} before its job ran"
                ),
            ),
        )
        collected.add(target)
    for target, mine in targets.items():
        if target in collected:
            continue
        results = sorted({str(c.get("result")) for c in mine})
        conn.execute(
            "INSERT OR IGNORE INTO filesystem_configs (run_id, scratch_target, system, "
            "partition, environ, problem) VALUES (?,?,?,?,?,?)",
            (
                run_id,
                target,
                mine[0].get("system"),
                mine[0].get("partition"),
                "",
                f"not recorded: none of its {len(mine)} case(s) ran a job in this run "
                f"({', '.join(results)}), or the run predates the collector",
            ),
        )


def filesystem_configs(
    conn: sqlite3.Connection, run_ids: Iterable[str] | None = None, target: str | None = None
) -> list[dict[str, Any]]:
    """Rows of filesystem_configs with the run's start, oldest run first; ``facts``
    decoded (None when none were read)."""
    clauses, args = [], []
    if run_ids is not None:
        run_ids = list(run_ids)
        clauses.append(f"c.run_id IN ({','.join('?' * len(run_ids))})")
        args += run_ids
    if target is not None:
        clauses.append("c.scratch_target = ?")
        args.append(target)
    rows = conn.execute(
        "SELECT c.*, r.started, r.revision, r.tag FROM filesystem_configs c JOIN runs r "
        f"ON c.run_id = r.run_id {'WHERE ' + ' AND '.join(clauses) if clauses else ''} "
        "ORDER BY r.started, c.run_id, c.scratch_target, c.environ",
        args,
    ).fetchall()
    out = []
    for row in rows:
        entry = dict(row)
        entry["facts"] = json.loads(row["facts"]) if row["facts"] else None
        out.append(entry)
    return out


def _db_name(conn: sqlite3.Connection) -> str:
    row = conn.execute("PRAGMA database_list").fetchone()
    return f"history store {row[2]}" + _why_unwritable(row[2]) if row else "history store"


def _why_unwritable(db_path: str | os.PathLike[str]) -> str:
    """What the file system says, since SQLite's own words ('disk I/O error', 'unable to
    open database file') do not tell a full disk from a read-only one."""
    folder = os.path.dirname(os.path.abspath(db_path)) or "."
    try:
        fs = os.statvfs(folder)
    except OSError:
        return ""
    if fs.f_flag & os.ST_RDONLY:
        return " (its file system is mounted read-only)"
    if fs.f_bavail * fs.f_frsize < 1024 * 1024:
        return f" (its file system is full: {fs.f_bavail * fs.f_frsize} bytes free)"
    if not os.access(folder, os.W_OK):
        return f" ({folder} is not writable by this user)"
    return ""


@contextlib.contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One consistent view of the store for a whole read (a page build): in WAL mode a
    read transaction sees the runs committed when it began, whole, and none after."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("ROLLBACK")


def check_integrity(conn: sqlite3.Connection) -> None:
    """SQLite's own check; a damaged store is an error before anything is written."""
    try:
        problems = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
    except sqlite3.DatabaseError as exc:
        problems = [str(exc)]
    if problems != ["ok"]:
        first = " ".join(" ".join(problems).split())[:200]
        raise StoreError(
            f"{_db_name(conn)} is damaged ({first}): restore it from a "
            "backup, or save what is readable with `sqlite3 FILE .recover`"
        )


def ingest_run_dir(conn: sqlite3.Connection, run_dir: str | os.PathLike[str]) -> int:
    """Ingest results/runs/<id>/ (report.json + run.json)."""
    run_dir = Path(run_dir)
    report_path = run_dir / "report.json"
    try:
        report = json.loads(report_path.read_text())
    except FileNotFoundError:
        raise StoreError(f"{run_dir}: no report.json (did the run finish?)") from None
    except (OSError, ValueError) as exc:
        raise StoreError(f"{report_path}: unreadable run report ({exc})") from exc
    meta = {}
    if (run_dir / "run.json").exists():
        try:
            meta = json.loads((run_dir / "run.json").read_text())
        except ValueError as exc:
            raise StoreError(f"{run_dir / 'run.json'}: not valid JSON ({exc})") from exc
    meta.setdefault("run_id", run_dir.name)
    return ingest_report(conn, report, meta, source=str(report_path))


def ingest_all(
    conn: sqlite3.Connection, runs_dir: str | os.PathLike[str] | None = None
) -> tuple[int, int]:
    """Ingest every finished run directory not yet stored: (runs added, figures added)."""
    runs_dir = Path(runs_dir or paths.results_dir() / "runs")
    stored = {row[0] for row in conn.execute("SELECT run_id FROM runs")}
    runs = figures = 0
    for run_dir in sorted(p for p in runs_dir.glob("*") if p.is_dir()):
        if run_dir.name in stored or not (run_dir / "report.json").exists():
            continue
        added = ingest_run_dir(conn, run_dir)
        runs += 1
        figures += added
    return runs, figures


def figure_rows(
    conn: sqlite3.Connection, where: str = "", args: Sequence[Any] = ()
) -> list[sqlite3.Row]:
    """Every figure with its case and run, oldest run first."""
    return conn.execute(
        "SELECT f.figure_id, f.metric, f.value, f.unit, f.reference, f.lower, f.upper,"
        " f.result AS figure_result, f.label, f.better, f.headline, f.chart, f.role,"
        " f.phase_seconds, f.too_short, c.*, r.tag, r.note, r.revision, r.site, r.started,"
        " r.finished, r.reframe_version "
        "FROM figures f JOIN cases c ON f.case_id = c.case_id JOIN runs r ON c.run_id = r.run_id "
        f"{where} ORDER BY r.started, r.run_id",
        args,
    ).fetchall()


def samples_of(conn: sqlite3.Connection, figure_ids: Iterable[int]) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    ids = list(figure_ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            f"SELECT figure_id, value FROM samples WHERE figure_id IN "
            f"({marks}) ORDER BY figure_id, idx",
            chunk,
        ):
            out.setdefault(row[0], []).append(row[1])
    return out


def runs(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    return conn.execute("SELECT * FROM runs ORDER BY started, run_id").fetchall()


def figure_count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM figures").fetchone()[0]


def database_file(conn: sqlite3.Connection) -> str:
    """The file of the store a connection has open (for another connection to it)."""
    return conn.execute("PRAGMA database_list").fetchone()[2]


def run(conn: sqlite3.Connection, run_id: str) -> sqlite3.Row | None:
    """One run's row, or None."""
    return conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()


def latest_run_id(conn: sqlite3.Connection, tag: str | None = None) -> str | None:
    """The newest run (of one tag), or None."""
    row = conn.execute(
        "SELECT run_id FROM runs "
        + ("WHERE tag = ? " if tag else "")
        + "ORDER BY started DESC, run_id DESC LIMIT 1",
        (tag,) if tag else (),
    ).fetchone()
    return row[0] if row else None


#: the order the pages list a run's cases in
_CASE_ORDER = "ORDER BY title, check_name, variant, scratch_target, environ, display_name"


def run_cases(conn: sqlite3.Connection, run_id: str) -> list[sqlite3.Row]:
    """A run's cases in the pages' order (title, check, variant, ...)."""
    return conn.execute(f"SELECT * FROM cases WHERE run_id = ? {_CASE_ORDER}", (run_id,)).fetchall()


def target_cases(conn: sqlite3.Connection, run_id: str, target: str | None) -> list[sqlite3.Row]:
    """A run's cases on one target (None: those on no target), in the pages' order."""
    return conn.execute(
        f"SELECT * FROM cases WHERE run_id = ? AND scratch_target IS ? {_CASE_ORDER}",
        (run_id, target),
    ).fetchall()


def _tuples(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """A cursor whose rows are plain tuples: for the queries whose every row a caller
    unpacks (a page build reads a million figures), where making a sqlite3.Row of each
    cost more than reading it."""
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor


def run_figures(conn: sqlite3.Connection, run_id: str) -> list[tuple[Any, ...]]:
    """(case_id, value, label or else metric, unit or '', phase_seconds if too_short else
    None) of a run's figures, in the order they were stored (plain tuples: see _tuples;
    the choices made here, not per figure in Python: a full build reads a million)."""
    return (
        _tuples(conn)
        .execute(
            "SELECT f.case_id, f.value, COALESCE(NULLIF(f.label, ''), f.metric), "
            "COALESCE(f.unit, ''), CASE WHEN f.too_short THEN f.phase_seconds END "
            "FROM figures f JOIN cases c ON f.case_id = c.case_id WHERE c.run_id = ? "
            "ORDER BY f.figure_id",
            (run_id,),
        )
        .fetchall()
    )


#: the newest ``?`` runs of each tag: the window the pages read
_NEWEST_OF_EACH_TAG = """WITH recent AS (
    SELECT run_id, started FROM (
        SELECT run_id, started, ROW_NUMBER() OVER (
            PARTITION BY tag ORDER BY started DESC, run_id DESC) AS newest
        FROM runs)
    WHERE newest <= ?)"""


def recent_values(conn: sqlite3.Connection, runs_per_tag: int) -> sqlite3.Cursor:
    """(case_id, series, metric, value, started, run_id) of every stored value of the
    newest ``runs_per_tag`` runs of each tag, the oldest run first (plain tuples: see
    _tuples)."""
    return _tuples(conn).execute(
        f"{_NEWEST_OF_EACH_TAG} SELECT c.case_id, c.series, f.metric, f.value, "
        "recent.started, c.run_id FROM recent JOIN cases c ON c.run_id = recent.run_id "
        "JOIN figures f ON f.case_id = c.case_id WHERE f.value IS NOT NULL "
        "ORDER BY recent.started, c.run_id",
        (runs_per_tag,),
    )


def declarations_of(
    conn: sqlite3.Connection, case_ids: Iterable[int]
) -> dict[tuple[int, str], sqlite3.Row]:
    """{(case_id, metric): the case's row with the figure's declaration (metric, unit,
    label, better, headline, chart, role, phase_seconds, too_short)}."""
    out, ids = {}, sorted(set(case_ids))
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        for row in conn.execute(
            "SELECT c.*, f.metric, f.unit, f.label, f.better, f.headline, f.chart, "
            "f.role, f.phase_seconds, f.too_short FROM figures f JOIN cases c ON "
            f"f.case_id = c.case_id WHERE f.case_id IN ({','.join('?' * len(chunk))})",
            chunk,
        ):
            out[(row["case_id"], row["metric"])] = row
    return out


def latest_run_of_each_target(conn: sqlite3.Connection, runs_per_tag: int) -> dict[str | None, str]:
    """{target or None: its latest run's id} within the newest ``runs_per_tag`` runs of
    each tag."""
    return {
        target: run_id
        for target, run_id, _ in conn.execute(
            f"{_NEWEST_OF_EACH_TAG} SELECT c.scratch_target, c.run_id, MAX(recent.started) "
            "FROM cases c JOIN recent ON c.run_id = recent.run_id GROUP BY c.scratch_target",
            (runs_per_tag,),
        ).fetchall()
    }


def failed_cases(conn: sqlite3.Connection, run_id: str) -> list[sqlite3.Row]:
    """A run's cases that neither passed nor were skipped (failed, errored, ...)."""
    return conn.execute(
        "SELECT * FROM cases WHERE run_id = ? AND result NOT IN "
        "('pass', 'xfail', 'skip') ORDER BY check_name, display_name, "
        "environ",
        (run_id,),
    ).fetchall()


#: how each condition of runs_matching is asked of the runs table
_RUN_CONDITIONS = {
    "tag": "tag = ?",
    "note": "note LIKE '%' || ? || '%'",
    "since": "started >= ?",
    "until": "started < ?",
}


def runs_matching(conn: sqlite3.Connection, conditions: Iterable[tuple[str, Any]]) -> list[str]:
    """The ids of the runs meeting every (key, value) of conditions: tag, note (a part
    of it), since and until (Unix times), run (a list of run ids)."""
    clauses, args = [], []
    for key, value in conditions:
        if key == "run":
            clauses.append(f"run_id IN ({','.join('?' * len(value))})")
            args.extend(value)
        else:
            clauses.append(_RUN_CONDITIONS[key])
            args.append(value)
    return [
        r[0] for r in conn.execute(f"SELECT run_id FROM runs WHERE {' AND '.join(clauses)}", args)
    ]


def selfscale_figures(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """Every stored figure of the self-scaling checks (those whose chart carries a
    model), with its case and the run's start.  Its condition on the chart is the one
    of the partial index figures_selfscale (migration 0007), word for word."""
    return conn.execute(
        "SELECT f.metric, f.value, f.unit, f.label, f.better, f.chart, c.case_id, "
        "c.series, c.scratch_target, c.scratch_kind, c.environ, r.started FROM figures f "
        "JOIN cases c ON f.case_id = c.case_id JOIN runs r ON r.run_id = c.run_id "
        "WHERE f.chart LIKE '%\"selfscale\"%' AND f.value IS NOT NULL"
    )


def figures_with_roles(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """Every stored figure that declares a role, with its case, the run's start and
    whether its case leads its check's pages (has a headline figure), the newest first."""
    return conn.execute(
        "SELECT f.role, f.metric, f.value, f.unit, f.label, c.case_id, c.series, "
        "c.scratch_target, c.scratch_kind, c.variant, c.num_tasks, c.nodes, c.environ, "
        "r.started, f.phase_seconds, f.too_short, "
        "EXISTS (SELECT 1 FROM figures h WHERE h.case_id = c.case_id AND h.headline IS NOT "
        "NULL AND h.headline != '') AS leads FROM figures f JOIN cases c ON "
        "f.case_id = c.case_id JOIN runs r ON r.run_id = c.run_id WHERE f.role IS NOT NULL "
        "AND f.role != '' AND f.value IS NOT NULL ORDER BY r.started DESC"
    ).fetchall()
