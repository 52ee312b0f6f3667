"""History store and verdict commands.

The store on idempotent and concurrent ingests and on the quick runs of the embedded
cluster.  The statistics of the verdicts: test_verdicts.py; the pages: test_pages.py.
"""

import json
import multiprocessing
import re
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from conftest import REPO, scratchbench
from reports import commands, store
from reports.synthetic import make_case, make_report
from scratchbench.figures import SHORTEST_TRUSTED_PHASE_S, too_short, too_short_words


# ---- store ----------------------------------------------------------------------------------
def synthetic_run(i, value=100.0, target="fsA", samples=None):
    figures = {"write_bw": (value, "MiB/s", samples or []), "open_close_share": (5.0, "%", [])}
    return make_report(
        f"run{i:03d}",
        1_800_000_000 + 3600 * i,
        [
            (
                "KernelIOTest",
                {"scratch_target": target, "access": "fpp-posix"},
                "gnu",
                target,
                figures,
            )
        ],
    )


def count(db, table):
    return sqlite3.connect(db).execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def test_migrations_and_idempotent_ingest(tmp_path):
    db = tmp_path / "h.sqlite"
    conn = store.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == store.migrations()[-1][0]
    report = synthetic_run(1, samples=[99.0, 100.0, 101.0])
    assert store.ingest_report(conn, report) == 2
    before = [count(db, t) for t in ("runs", "cases", "figures", "samples")]
    assert before == [1, 1, 2, 3]
    assert store.ingest_report(conn, report) == 0
    assert [count(db, t) for t in ("runs", "cases", "figures", "samples")] == before
    conn.close()
    store.connect(db).close()  # reopening migrates nothing and loses nothing
    assert [count(db, t) for t in ("runs", "cases", "figures", "samples")] == before


def test_newer_schema_is_refused(tmp_path):
    db = tmp_path / "h.sqlite"
    store.connect(db).close()
    sqlite3.connect(db).execute("PRAGMA user_version = 999")
    with pytest.raises(store.StoreError, match="newer than this scratchbench knows"):
        store.connect(db)


def test_unknown_report_version_is_refused(tmp_path):
    report = synthetic_run(1)
    report["session_info"]["data_version"] = "2.0"
    with pytest.raises(store.StoreError, match="not a ReFrame 4 run report"):
        store.ingest_report(store.connect(tmp_path / "h.sqlite"), report)


def _ingest_in_process(db, reports, barrier):
    conn = store.connect(db)
    barrier.wait()
    for report in reports:
        store.ingest_report(conn, report)


def test_concurrent_ingests_lose_nothing(tmp_path):
    db = tmp_path / "h.sqlite"
    store.connect(db).close()
    reports = [synthetic_run(i) for i in range(40)]
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(3)
    # Two writers with different runs, a third repeating the first writer's runs.
    jobs = [
        ctx.Process(target=_ingest_in_process, args=(db, part, barrier))
        for part in (reports[:20], reports[20:], reports[:20])
    ]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(120)
        assert job.exitcode == 0
    assert count(db, "runs") == 40 and count(db, "figures") == 80


def _read_snapshots(db, barrier, seen, out_dir):
    """A reader during ingests: every snapshot holds whole runs only, and page builds
    (one read transaction each) never fail on a busy store."""
    from reports import pages

    barrier.wait()
    conn = store.connect(db)
    partial = 0
    for i in range(30):
        with store.snapshot(conn):
            per_run = conn.execute(
                "SELECT r.run_id, COUNT(f.figure_id) FROM runs r LEFT JOIN "
                "cases c USING (run_id) LEFT JOIN figures f USING (case_id) "
                "GROUP BY r.run_id"
            ).fetchall()
        partial += sum(1 for _, n in per_run if n != 2)
        if i % 10 == 0 and per_run:
            pages.build(out_dir / str(i), db_path=db)
    seen.value = partial
    conn.close()


def test_two_ingests_and_a_report_build_at_once(tmp_path):
    db = tmp_path / "h.sqlite"
    store.connect(db).close()
    reports = [synthetic_run(i) for i in range(60)]
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(3)
    seen = ctx.Value("i", -1)
    jobs = [
        ctx.Process(target=_ingest_in_process, args=(db, part, barrier))
        for part in (reports[:30], reports[30:])
    ]
    jobs.append(ctx.Process(target=_read_snapshots, args=(db, barrier, seen, tmp_path)))
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(300)
        assert job.exitcode == 0
    assert seen.value == 0, "a reader saw half a run"
    assert count(db, "runs") == 60 and count(db, "figures") == 120
    conn = sqlite3.connect(db)
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM (SELECT series, run_id FROM cases GROUP BY "
            "series, run_id HAVING COUNT(*) > 1)"
        ).fetchone()[0]
        == 0
    ), "duplicates"


# ---- verdict commands on a synthetic history --------------------------------------------
@pytest.fixture
def synthetic_store(tmp_path):
    db = tmp_path / "h.sqlite"
    conn = store.connect(db)
    rng = np.random.default_rng(5)
    for i in range(24):
        value = rng.normal(1000, 20) if i < 20 else rng.normal(700, 20)
        samples = list(rng.normal(1000 if i < 20 else 700, 20, 3))
        report = synthetic_run(i, value, samples=samples)
        report["session_info"]["extras"]["tag"] = "nightly"
        store.ingest_report(conn, report, {"note": "before" if i < 20 else "after"})
    conn.close()
    return db


def test_nightly_command_flags_and_notifies(synthetic_store, tmp_path):
    """The drop at run020 is news on run021 (two nights show it) and is notified then;
    on run023 it is an ongoing regression: still exit 1, no new notification."""
    flag = tmp_path / "notified"
    code, result, path = commands.nightly(
        run_id="run021",
        db=synthetic_store,
        out=tmp_path / "v.json",
        notify=[f'cp "$SCRATCHBENCH_VERDICT" {flag}'],
    )
    assert code == 1 and result["regressions"] == 1
    # The suite layer decides the notification: one alert for the check on fsA.
    assert result["alerts"] == 1 and result["ongoing_alerts"] == 0
    alert = result["suite"]["alerts"][0]
    assert " on fsA [gnu] (" in alert["group"] and alert["news"]
    assert [m["metric"] for m in alert["members"]] == ["write_bw"]
    assert json.loads(flag.read_text())["run_id"] == "run021"
    bad = [f for f in result["figures"] if f["verdict"] == "regression"][0]
    assert bad["metric"] == "write_bw" and bad["change_run"] == "run020"
    text = commands.format_nightly(result, path)
    assert re.search(
        r"Regression \(new\): write bw \(.*?\) on fsA \[gnu\], since "
        r"\d{4}-\d\d-\d\d: -\d\d\.\d% \(95% interval -\d\d\.\d% to -\d\d\.\d%\); "
        r"median 1,0\d\d MiB/s before, [67]\d\d MiB/s since\n +chart: "
        r"fs-fsA\.html#f-[0-9a-f]{12}",
        text,
    ), text
    flag.unlink()
    code, later, _ = commands.nightly(
        db=synthetic_store, out=tmp_path / "v2.json", notify=[f'cp "$SCRATCHBENCH_VERDICT" {flag}']
    )
    assert later["run_id"] == "run023" and code == 1
    assert later["regressions"] == 0 and later["ongoing_regressions"] == 1
    assert later["alerts"] == 0 and later["ongoing_alerts"] == 1
    assert not flag.exists(), "an ongoing regression is not notified again"


def test_acceptance_command_counts_runs_not_repetitions(synthetic_store, tmp_path):
    code, result, _ = commands.acceptance(
        "note:before,since:2027-01-01", "note:after", db=synthetic_store, out=tmp_path / "a.json"
    )
    assert code == 1
    write = [f for f in result["figures"] if f["metric"] == "write_bw"][0]
    assert write["verdict"] == "worse"
    assert write["runs_after"] == 4 and write["repetitions_after"] == 12
    with pytest.raises(Exception, match="matches no stored run"):
        commands.acceptance("note:nothing-like-this", "note:after", db=synthetic_store)
    with pytest.raises(Exception, match="unknown key 'ticket'"):
        commands.acceptance("ticket:1", "note:after", db=synthetic_store)


def test_a_figure_whose_phase_was_too_short_is_marked_and_never_judged(tmp_path):
    """A figure whose timed phase lasted under the rule's minimum is stored with its
    phase's length and marked; the nightly and acceptance verdicts name it too short to
    trust instead of judging it, even when it halved; a figure with long phases beside
    it is judged as before."""
    db = tmp_path / "h.sqlite"
    conn = store.connect(db)
    rng = np.random.default_rng(7)
    short = SHORTEST_TRUSTED_PHASE_S / 10
    for i in range(24):
        level = 1000 if i < 20 else 500
        figures = {
            "write_bw": (float(rng.normal(level, 10)), "MiB/s", []),
            "read_bw": (float(rng.normal(level, 10)), "MiB/s", []),
            "open_close_share": (5.0, "%", []),
        }
        case = make_case(
            "KernelIOTest",
            {"scratch_target": "fsA", "access": "fpp-posix"},
            "gnu",
            "fsA",
            figures,
            phase_seconds={"write_bw": 2.0, "read_bw": short},
        )
        store.ingest_report(
            conn,
            make_report(f"run{i:03d}", 1_800_000_000 + 3600 * i, [case]),
            {"note": "before" if i < 20 else "after"},
        )
    stored = {
        row[0]: tuple(row[1:])
        for row in conn.execute(
            "SELECT metric, phase_seconds, too_short FROM figures WHERE case_id = 1"
        )
    }
    conn.close()
    assert stored == {"write_bw": (2.0, 0), "read_bw": (short, 1), "open_close_share": (None, None)}
    code, result, path = commands.nightly(run_id="run021", db=db, out=tmp_path / "v.json")
    by_metric = {f["metric"]: f for f in result["figures"]}
    assert code == 1 and by_metric["write_bw"]["verdict"] == "regression"
    read = by_metric["read_bw"]
    assert read["verdict"] == "too-short" and not read["notify"]
    assert read["detail"] == f"not judged: {too_short_words(short)}"
    assert result["too_short"] == 1
    assert (
        "1 figure(s) not judged, their timed phase too short to trust"
        in commands.format_nightly(result, path)
    )
    code, result, path = commands.acceptance(
        "note:before", "note:after", db=db, out=tmp_path / "a.json"
    )
    by_metric = {f["metric"]: f for f in result["figures"]}
    assert code == 1 and by_metric["write_bw"]["verdict"] == "worse"
    assert by_metric["read_bw"]["verdict"] == "too short to trust"
    assert by_metric["read_bw"]["detail"].startswith(f"not judged: {too_short_words(short)}")
    assert result["too_short_to_trust"] == 1
    assert ", 1 too short to trust" in commands.format_acceptance(result, path)


def test_the_rule_in_words():
    assert too_short_words(0.041) == (
        "too short to trust: its timed phase lasted 41 ms, "
        f"under the {SHORTEST_TRUSTED_PHASE_S:g} s a figure needs"
    )
    assert not too_short(None) and too_short(SHORTEST_TRUSTED_PHASE_S * 0.99)
    assert not too_short(SHORTEST_TRUSTED_PHASE_S)


# ---- real runs ------------------------------------------------------------------------------
def test_both_runs_are_in_the_history(quick_runs, sb_home):
    db = sb_home / "history.sqlite"
    stored = {row[0] for row in sqlite3.connect(db).execute("SELECT run_id FROM runs")}
    assert {r["run_dir"].name for r in quick_runs} <= stored
    again = scratchbench("ingest")
    assert again.returncode == 0 and "ingested 0 run(s), 0 figure(s)" in again.stdout


def test_verdict_commands_on_the_quick_runs(quick_runs):
    first, second = (r["run_dir"].name for r in quick_runs)
    nightly = scratchbench("verdict", "nightly", "--run", second)
    assert nightly.returncode == 0, nightly.stderr
    assert "insufficient-history" in nightly.stdout and "verdict file:" in nightly.stdout
    assert re.search(r"\(\d{2,} figures;", nightly.stdout)
    accept = scratchbench(
        "verdict", "acceptance", "--before", f"run:{first}", "--after", f"run:{second}"
    )
    assert accept.returncode == 3
    line = accept.stderr.strip().splitlines()[-1]
    assert re.search(
        r"too few runs to decide any figure: \d+ more run\(s\) before and "
        r"\d+ more run\(s\) after are needed",
        line,
    )


def test_nightly_refuses_a_run_without_figures(tmp_path):
    db = tmp_path / "h.sqlite"
    conn = store.connect(db)
    report = make_report("failed-run", 1_800_000_000, [])
    store.ingest_report(conn, report)
    conn.close()
    with pytest.raises(Exception, match="run failed-run has no figures to judge") as err:
        commands.nightly(db=db, out=tmp_path / "v.json")
    assert err.value.exit_code == 4


# ---- migration of a history written by the previous code -----------------------------------
FIXTURES_HERE = REPO / "tests" / "fixtures"


def old_history(path):
    """The history a quick run stored with schema version 1 (the previous code)."""
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES_HERE / "history-v1.sql").read_text())
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    return path


def test_a_version_1_history_migrates_and_new_runs_join_its_series(tmp_path):
    db = old_history(tmp_path / "h.sqlite")
    before = sqlite3.connect(db)
    old_series = {row[0] for row in before.execute("SELECT series FROM cases")}
    old_values = sorted(row[0] for row in before.execute("SELECT value FROM figures"))
    before.close()
    assert all("%workload_tag=quick" in s for s in old_series)

    conn = store.connect(db)  # migrates
    assert conn.execute("PRAGMA user_version").fetchone()[0] == store.migrations()[-1][0]
    migrated = {row[0] for row in conn.execute("SELECT series FROM cases")}
    assert len(migrated) == len(old_series), "one series per old series"
    with_figures = "SELECT DISTINCT series FROM cases JOIN figures USING (case_id)"
    migrated_figures = {row[0] for row in conn.execute(with_figures)}
    assert not any("workload_tag" in s for s in migrated)
    assert all(s.endswith("|quick") for s in migrated)
    assert sorted(r[0] for r in conn.execute("SELECT value FROM figures")) == old_values
    # "Better" of the old figures is what version 1 derived from the unit.
    assert {r[0]: r[1] for r in conn.execute("SELECT DISTINCT unit, better FROM figures")} == {
        "MiB/s": "higher",
        "%": "lower",
        "ops/s": "higher",
        "deletions/s": "higher",
        "files/s": "higher",
    }

    # A run of today's checks: every one of its cases continues an old series.
    report = json.loads((FIXTURES_HERE / "report-v2-quick.json").read_text())
    added = store.ingest_report(conn, report, source="report-v2-quick.json")
    assert added == len(old_values)
    after = {row[0] for row in conn.execute(with_figures)}
    assert after == migrated_figures, sorted(after ^ migrated_figures)[:4]
    lengths = {
        row[0]
        for row in conn.execute(
            "SELECT COUNT(*) FROM figures f JOIN cases c USING (case_id) GROUP BY series, metric"
        )
    }
    assert lengths == {2}, "each figure's history now has the old run and the new one"
    # Declarations travel with the new figures; skipped cases keep their reason.
    label = conn.execute(
        "SELECT label, better, headline FROM figures f JOIN cases c "
        "USING (case_id) WHERE c.run_id = ? AND f.metric = 'write_bw' AND "
        "c.params LIKE '%fpp-posix%'",
        (report["session_info"]["scratchbench_run"],),
    ).fetchone()
    assert tuple(label) == (
        "Write bandwidth at the slowest rank",
        "higher",
        "Large sequential write",
    )
    reasons = {r[0] for r in conn.execute("SELECT skip_reason FROM cases WHERE result='skip'")}
    assert any((r or "").startswith("IOR/mdtest not available") for r in reasons), reasons
    conn.close()


# ---- notification, and a run whose checks failed -----------------------------------------
class _Receiver(BaseHTTPRequestHandler):
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((self.path, self.headers["Content-Type"], json.loads(body)))
        self.send_response(200 if "fail" not in self.path else 500)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook():
    """A small HTTP receiver on 127.0.0.1, as a chat or ticket webhook would be."""
    _Receiver.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Receiver.received
    server.shutdown()


def test_a_regression_reaches_a_webhook_and_a_command(synthetic_store, tmp_path, webhook):
    url, received = webhook
    flag = tmp_path / "notified"
    code, result, path = commands.nightly(
        run_id="run021",
        db=synthetic_store,
        out=tmp_path / "v.json",
        notify=[f"{url}/hook", f'cp "$SCRATCHBENCH_VERDICT" {flag}'],
    )
    assert code == 1
    assert len(received) == 1
    where, kind, payload = received[0]
    assert where == "/hook" and kind == "application/json"
    assert payload["run_id"] == "run021" and payload["regressions"] == 1
    assert len(payload["alerts"]) == 1 and " on fsA [gnu]" in payload["alerts"][0]["group"]
    assert re.search(
        r"Regression alert \(new\): .* on fsA \[gnu\] .*, since \d{4}-\d\d-\d\d: "
        r"median -\d\d\.\d% over 1 figure",
        payload["text"],
    ), payload["text"]
    assert payload["figures"][0]["verdict"] == "regression"
    assert "write bw" in payload["figures"][0]["name"]
    assert payload["figures"][0]["words"].startswith("Regression (new): write bw")
    assert payload["text"].splitlines()[1] == payload["figures"][0]["words"], (
        "the chat message names the change in words"
    )
    assert json.loads(flag.read_text())["run_id"] == "run021"
    assert [n["ok"] for n in result["notified"]] == [True, True]


def test_a_failing_notifier_never_hides_the_verdict(synthetic_store, tmp_path, webhook):
    url, _ = webhook
    code, result, path = commands.nightly(
        run_id="run021",
        db=synthetic_store,
        out=tmp_path / "v.json",
        notify=[f"{url}/fail", "exit 3", "http://127.0.0.1:9/nobody-listens"],
    )
    assert code == 1 and result["regressions"] == 1, "the verdict stands"
    assert [n["ok"] for n in result["notified"]] == [False, False, False]
    assert "HTTP Error 500" in result["notified"][0]["error"]
    assert "exited 3" in result["notified"][1]["error"]
    text = commands.format_nightly(result, path)
    assert text.count("NOTIFICATION FAILED") == 3
    assert json.loads(path.read_text())["notified"][0]["ok"] is False


def test_a_failed_check_is_a_verdict_and_never_exits_zero(tmp_path, webhook):
    """The latest run's check failed: the verdict says so with the cause, instead of
    judging the previous night's value as 'latest'."""
    url, received = webhook
    db = tmp_path / "h.sqlite"
    conn = store.connect(db)
    for i in range(10):
        store.ingest_report(conn, synthetic_run(i))
    broken = make_case(
        "KernelIOTest",
        {"scratch_target": "fsA", "access": "fpp-posix"},
        "gnu",
        "fsA",
        {},
        result="fail",
        fail_phase="sanity",
        fail_reason="job 77 ended NODE_FAIL: a node of the job failed",
    )
    store.ingest_report(conn, make_report("run010", 1_800_000_000 + 3600 * 10, [broken]))
    conn.close()
    code, result, path = commands.nightly(db=db, out=tmp_path / "v.json", notify=[url])
    assert code == 4
    assert result["run_id"] == "run010" and result["failed"] == 1
    failed = [f for f in result["figures"] if f["verdict"] == "failed"]
    assert len(failed) == 1 and "NODE_FAIL" in failed[0]["detail"]
    assert not any(f["verdict"] != "failed" for f in result["figures"]), (
        "no figure of an earlier night is judged as the latest"
    )
    assert received and received[0][2]["failed"] == 1
    assert re.search(
        r"Failed check \(in this run, \d{4}-\d\d-\d\d\): .* NODE_FAIL",
        commands.format_nightly(result, path),
    )


# ---- bad input: reading creates nothing, an empty history is its own exit code ----------
def test_reading_a_missing_history_creates_nothing(tmp_path):
    missing = tmp_path / "nowhere" / "history.sqlite"
    env = {"SCRATCHBENCH_HOME": str(tmp_path / "home"), "SCRATCHBENCH_HISTORY": str(missing)}
    workload = tmp_path / "job.yaml"
    workload.write_text("processes: 4\nbytes: 1GiB\nrequest_size: 1MiB\n")
    for args in (
        ["verdict", "nightly"],
        ["report", "--out", str(tmp_path / "pages")],
        ["verdict", "acceptance", "--before", "tag:a", "--after", "tag:b"],
        ["advise", str(workload)],
    ):
        result = scratchbench(*args, env=env)
        assert result.returncode == store.NoHistory.exit_code, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and f"history store {missing}: no such file" in lines[0], (
            args,
            result.stderr,
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.yaml"], "reading made files"


def test_an_empty_history_is_not_a_regression(tmp_path):
    db = tmp_path / "h.sqlite"
    store.connect(db).close()
    env = {"SCRATCHBENCH_HOME": str(tmp_path / "home"), "SCRATCHBENCH_HISTORY": str(db)}
    nightly = scratchbench("verdict", "nightly", env=env)
    assert nightly.returncode == 7 != 1, nightly.stderr
    assert nightly.stderr.strip() == (
        f"scratchbench: error: the history store {db} holds "
        "no run: run the suite, then `scratchbench ingest`"
    )
    report = scratchbench("report", "--out", str(tmp_path / "pages"), env=env)
    assert report.returncode == 7 and "holds no figures yet" in report.stderr
    assert not (tmp_path / "pages").exists()
    helptext = scratchbench("verdict", "nightly", "--help").stdout
    assert "7 when the history store does not exist or holds no run" in " ".join(helptext.split())


def test_ingest_reads_every_source_and_names_each_bad_one(tmp_path):
    db = tmp_path / "h.sqlite"
    good_a, good_b = tmp_path / "a.json", tmp_path / "b.json"
    good_a.write_text(json.dumps(synthetic_run(1)))
    good_b.write_text(json.dumps(synthetic_run(2)))
    broken, missing = tmp_path / "broken.json", tmp_path / "missing-run"
    broken.write_text("{ not json")
    env = {"SCRATCHBENCH_HOME": str(tmp_path / "home"), "SCRATCHBENCH_HISTORY": str(db)}
    result = scratchbench("ingest", good_a, broken, missing, good_b, env=env)
    assert result.returncode == store.StoreError.exit_code, result.stderr
    assert "ingested 2 run(s), 4 figure(s)" in result.stdout
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 2, result.stderr
    assert errors[0].startswith(f"scratchbench: error: {broken}: not a JSON run report")
    assert errors[1] == (f"scratchbench: error: {missing}: no such run directory or run report")
    assert {r[0] for r in sqlite3.connect(db).execute("SELECT run_id FROM runs")} == {
        "run001",
        "run002",
    }
    again = scratchbench("ingest", good_a, good_b, env=env)
    assert again.returncode == 0 and "ingested 0 run(s)" in again.stdout


# ---- numbers in words ------------------------------------------------------------------------
def test_numbers_read_as_a_reader_expects():
    from scratchbench import units

    assert units.number(18364.2) == "18,400" and units.number(902.4) == "902"
    assert units.number(999.6) == "1,000" and units.number(0.012345) == "0.0123"
    assert units.number(1.5) == "1.5" and units.number(float("inf")) == "n/a"
    assert units.quantity(18364.2, "ops/s") == "18,400 ops/s"  # was 1.836e+04 ops/s
    assert units.quantity(902, "us") == "902 µs"
    assert units.quantity(1536, "MiB/s") == "1.5 GiB/s"
    assert units.quantity(1020, "MiB") == "1,020 MiB"  # was 1.02e+03 MiB
    assert units.quantity(5400, "s") == "1.5 h" and units.quantity(0.0042, "s") == "4.2 ms"
    assert units.percent(-0.1612) == "-16.1%" and units.percent(0.004) == "+0.4%"


def test_verdict_details_name_dates_not_run_ids(synthetic_store, tmp_path):
    _, result, _ = commands.nightly(run_id="run021", db=synthetic_store, out=tmp_path / "v.json")
    bad = [f for f in result["figures"] if f["verdict"] == "regression"][0]
    assert bad["change_run"] == "run020", "the verdict's fields keep the run ids"
    assert "run020" not in bad["detail"] and "run0" not in bad["detail"], bad["detail"]
    assert re.search(r"since the run of \d{4}-\d\d-\d\d", bad["detail"]), bad["detail"]


def test_the_self_scaling_figures_are_found_by_their_index(tmp_path):
    """The advisor reads the self-scaling figures at every page build: through the
    partial index of migration 0007, not a scan of every stored figure (a query whose
    condition drifts from the index's falls back to the scan and fails here)."""
    model = {"unit": "MiB/s", "label": "x", "better": "higher", "chart": {"selfscale": {}}}
    plain = {"unit": "MiB/s", "label": "y", "better": "higher"}
    conn = store.connect(tmp_path / "h.sqlite")
    store.ingest_report(
        conn,
        make_report(
            "r1",
            1_700_000_000,
            [
                make_case(
                    "SelfScale",
                    {"scratch_target": "fsA"},
                    "gnu",
                    "fsA",
                    {"curve_point": (5.0, "MiB/s", []), "plain": (7.0, "MiB/s", [])},
                    declarations={"curve_point": model, "plain": plain},
                )
            ],
        ),
    )
    asked = []
    conn.set_trace_callback(asked.append)
    found = [row["metric"] for row in store.selfscale_figures(conn)]
    conn.set_trace_callback(None)
    assert found == ["curve_point"]
    plan = " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + asked[-1]))
    assert "USING INDEX figures_selfscale" in plan, plan
