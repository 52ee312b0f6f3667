"""The performance pages, read as a user reads them: in a real headless Chromium.

Two sites are built: one from a made-up history whose answers are known (which file
system is best for what, which figures cannot be judged yet, which check failed and
why), and one after two real quick runs on the embedded cluster.  Every page of each is
opened, every folded section opened and scrolled through until every plot has
rendered, the console must stay free of errors, and every link must lead somewhere.
Screenshots of each page kind go to var/test-artifacts/ for review.
"""

import contextlib
import html
import json
import re
import sqlite3
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import REPO, failures_of, launch_chromium
from reports import commands, pages, plots, rankings, store
from reports.synthetic import make_case, make_report
from scratchbench import units
from scratchbench.figures import SHORTEST_TRUSTED_PHASE_S, too_short_words

ARTIFACTS = REPO / "var" / "test-artifacts"
DAY = 86400
START = 1_800_000_000
RUNS = 12
ENVIRONS = ("gnu-openmpi", "gnu-mpich")
# Chromium's software WebGL (no GPU here) comments on its own speed; not the page's doing.
BROWSER_NOTES = ("GPU stall due to ReadPixels", "willReadFrequently")


# ---- a made-up history with known answers ------------------------------------------------
def declared(label, unit, better="higher", headline="", chart=None):
    return {"label": label, "unit": unit, "better": better, "headline": headline, "chart": chart}


def kib_words(kib):
    return f"{kib // 1024} MiB" if kib >= 1024 else f"{kib} KiB"


#: the made-up IOzone-like patterns (each a surface on a page) and their relative speed
PATTERNS = {
    "re-read": 1.0,
    "read": 0.8,
    "write": 0.6,
    "re-write": 0.7,
    "random read": 0.3,
    "random write": 0.25,
    "backward read": 0.5,
}
#: (file KiB, record KiB) measured; records larger than the file and small records of
#: the largest file are left out, as IOzone skips them: holes in the surface
SURFACE_CELLS = [
    (f, r)
    for f in (64, 256, 1024, 4096)
    for r in (4, 16, 64, 256)
    if r <= f and not (f >= 4096 and r < 16)
]


def made_up_history(home):
    """RUNS nightly runs, one a day, on two file systems, stored as run directories
    under home/results/runs (with output directories, as real runs have them).

    Known answers:
    * Large sequential write: fastfs ~1000 MiB/s, slowfs ~400 (+-2%): fastfs best, 2.5x.
    * Time to stage a data set (s, lower is better): fastfs ~10 s, slowfs ~30 s: fastfs,
      though fastfs is 40% slower (14 s) in the last two nights: a regression since
      night 10, new in the latest run, which the banner, the index row and the advice say.
    * Create empty files: both ~5,000 ops/s +-15%: no clear winner.
    * Delete files: a check added three runs ago (and failing in the latest run on
      slowfs): not decided yet, 3 more runs needed, and its 2 figures of the latest run
      cannot be judged by the nightly verdict (5 more nights).
    * Within the bandwidth check on fastfs, one shared file with MPI-IO reaches ~100
      MiB/s against ~1000 file per process: 10x, which the advice says.
    * In the latest run, the metadata check fails on slowfs (sanity: no space left);
      the tool check is skipped everywhere (tool not installed).
    """
    rng = np.random.default_rng(10)
    runs_dir = home / "results" / "runs"
    for night in range(RUNS):
        run_id = f"night{night:02d}"
        run_dir = runs_dir / run_id
        cases = []

        def case(check, params, environ, target, figures, **kw):
            c = make_case(
                check,
                dict(params, scratch_target=target),
                environ,
                target,
                figures,
                workload="nightly",
                time_total=12.5,
                **kw,
            )
            if kw.get("result", "pass") == "pass":
                out = run_dir / "output" / "synth" / "batch" / environ / c["unique_name"]
                out.mkdir(parents=True, exist_ok=True)
                (out / "rfm_job.out").write_text("made-up output\n")
                c["outputdir"] = str(out)
            cases.append(c)

        for target, write, shared, stage, create in (
            ("fastfs", 1000, 100, 10, 5000),
            ("slowfs", 400, 60, 30, 5200),
        ):
            for environ in ENVIRONS:
                for access, words, bw in (
                    ("fpp-posix", "file per process, POSIX", write),
                    ("shared-mpiio", "one shared file, MPI-IO", shared),
                ):
                    lead = "Large sequential write" if access == "fpp-posix" else ""
                    case(
                        "SynthBandwidth",
                        {"access": access},
                        environ,
                        target,
                        {
                            "write_bw": (float(rng.normal(bw, bw * 0.02)), "MiB/s", []),
                            "open_share": (float(rng.normal(5, 0.2)), "%", []),
                        },
                        title="Bandwidth (made up)",
                        variant=words,
                        workload_words="1 MiB transfers, 64 MiB per rank, 4 ranks on 1 node",
                        declarations={
                            "write_bw": declared("Write bandwidth", "MiB/s", headline=lead),
                            "open_share": declared("Share of time in open", "%", "lower"),
                        },
                    )
                failing = target == "slowfs" and night == RUNS - 1
                figures = (
                    {}
                    if failing
                    else {"create_rate": (float(rng.normal(create, create * 0.15)), "ops/s", [])}
                )
                if night >= RUNS - 3 and not failing:
                    figures["delete_rate"] = (float(rng.normal(3000, 100)), "deletions/s", [])
                case(
                    "SynthMetadata",
                    {"layout": "shared-dir"},
                    environ,
                    target,
                    figures,
                    title="Metadata (made up)",
                    variant="one shared directory",
                    workload_words="2,048 files per rank, 4 ranks on 1 node",
                    result="fail" if failing else "pass",
                    fail_phase="sanity" if failing else None,
                    fail_reason="kernel exited 3: No space left on device" if failing else None,
                    declarations={
                        "create_rate": declared(
                            "File creations per second", "ops/s", headline="Create empty files"
                        ),
                        "delete_rate": declared(
                            "Deletions per second", "deletions/s", headline="Delete files"
                        ),
                    },
                )
                case(
                    "SynthTool",
                    {"shape": "easy"},
                    environ,
                    target,
                    {},
                    title="Tool (made up)",
                    variant="easy",
                    result="skip",
                    skip_reason="the tool is not installed on this system",
                )
                for nodes in (1, 2, 4):
                    case(
                        "SynthSweep",
                        {"node_count": nodes},
                        environ,
                        target,
                        {"write_bw": (float(rng.normal(write * nodes**0.8, 20)), "MiB/s", [])},
                        title="Node-count sweep (made up)",
                        variant=f"{nodes} nodes",
                        scaling_parameter="node_count",
                        nodes=nodes,
                        declarations={"write_bw": declared("Write bandwidth", "MiB/s")},
                    )
            # fastfs stages 40% slower from night 10: a regression, new on the last night
            slower = 1.4 if target == "fastfs" and night >= RUNS - 2 else 1.0
            case(
                "SynthStaging",
                {},
                "builtin",
                target,
                {"stage_s": (float(rng.normal(stage, stage * 0.03)) * slower, "s", [])},
                title="Staging (made up)",
                workload_words="64 files of 1 MiB",
                declarations={
                    "stage_s": declared(
                        "Time to stage in", "s", "lower", headline="Stage a data set into scratch"
                    )
                },
            )
        # Charts declared by one case on each file system: lines (queue depth) and a
        # surface whose axes carry words and whose file-size axis marks two thresholds:
        # a cache of 1 MiB (inside the sizes measured) and the memory (beyond them).
        # slowfs falls 40x past its cache: the side-by-side view needs a log colour scale.
        for target, scale_fs in (("fastfs", 1.0), ("slowfs", 0.5)):
            charted, declarations = {}, {}
            for block, scale in (("4 KiB blocks", 40), ("64 KiB blocks", 400)):
                for depth in (1, 2, 4, 8, 16, 32):
                    name = f"read_bw_{block.split()[0]}k_qd{depth}"
                    charted[name] = (
                        float(scale * scale_fs * depth**0.5 * rng.normal(1, 0.03)),
                        "MiB/s",
                        [],
                    )
                    declarations[name] = declared(
                        f"Read bandwidth, {block}, queue depth {depth}",
                        "MiB/s",
                        chart={
                            "title": "Read bandwidth against queue depth",
                            "kind": "lines",
                            "x": ["queue depth", depth],
                            "line": block,
                        },
                    )
            # As many lines as a self-scaling chart draws, with names as long: 18 on the
            # side-by-side page, whose legend must not reach into the plot (Plotly scrolls
            # a legend above the plot taller than half the figure).
            for curve in range(9):
                for size_kib in (1, 16, 256, 4096):
                    name = f"many_lines_{curve}_{size_kib}k"
                    charted[name] = (
                        float(100 * scale_fs * (curve + 1) / size_kib**0.2),
                        "MiB/s",
                        [],
                    )
                    declarations[name] = declared(
                        f"Throughput, curve {curve}, sizeMean {size_kib} KiB",
                        "MiB/s",
                        chart={
                            "title": "Throughput against sizeMean (many lines)",
                            "kind": "lines",
                            "x": ["sizeMean", size_kib * 1024, kib_words(size_kib)],
                            "line": f"measured, uniqueBytes {2**curve} GiB (curve {curve})",
                        },
                    )
            # As many patterns as IOzone's, each its own surface: more 3-D plots on a
            # page than it keeps live (LIVE_3D in pages.js).
            for pattern, speed in PATTERNS.items():
                for file_kib, record_kib in SURFACE_CELLS:
                    name = f"{pattern.replace('-', '')}_{file_kib}k_{record_kib}k"
                    value = speed * (300 + record_kib + 2000 / file_kib * 50)
                    if target == "slowfs" and file_kib > 1024:
                        value /= 40
                    charted[name] = (float(value), "MiB/s", [])
                    declarations[name] = declared(
                        f"{pattern.capitalize()}, {file_kib} KiB file, {record_kib} KiB records",
                        "MiB/s",
                        chart={
                            "title": f"{pattern.capitalize()} throughput",
                            "kind": "surface",
                            "x": ["file size", file_kib * 1024, kib_words(file_kib)],
                            "y": ["record size", record_kib * 1024, kib_words(record_kib)],
                            "line": pattern,
                            "marks": [
                                {"axis": "x", "value": 1024 * 1024, "label": "cache, 1 MiB"},
                                {
                                    "axis": "x",
                                    "value": 64 * 1024**3,
                                    "label": "node memory, 64 GiB",
                                },
                            ],
                        },
                    )
            # A chart whose x is a name, as Jovian's "Bandwidth by placement of readers":
            # a category axis (a numeric one draws none of its points).
            for op in ("read", "write"):
                for placement in ("local", "one-to-many"):
                    name = f"{op}_bw_{placement.replace('-', '_')}"
                    charted[name] = (float(300 * scale_fs * rng.normal(1, 0.03)), "MiB/s", [])
                    declarations[name] = declared(
                        f"{op.capitalize()} bandwidth, {placement} placement",
                        "MiB/s",
                        chart={
                            "title": "Bandwidth by placement of readers",
                            "kind": "lines",
                            "x": ["placement", placement],
                            "line": op,
                        },
                    )
            case(
                "SynthPatterns",
                {},
                "gnu-openmpi",
                target,
                charted,
                title="Patterns (made up)",
                workload_words="one 4 MiB file",
                declarations=declarations,
            )
        report = make_report(run_id, START + night * DAY, cases, tag="nightly")
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "report.json").write_text(json.dumps(report))
        (run_dir / "run.json").write_text(
            json.dumps(
                {
                    "run_id": run_id,
                    "tag": "nightly",
                    "note": f"night {night}",
                    "site": "made-up site",
                    "system": "synth",
                }
            )
        )
    conn = store.connect(home / "history.sqlite")
    runs, _ = store.ingest_all(conn, runs_dir)
    conn.close()
    assert runs == RUNS


@pytest.fixture(scope="module")
def made_up_site(tmp_path_factory):
    home = tmp_path_factory.mktemp("made-up-home")
    made_up_history(home)
    db = home / "history.sqlite"
    _, verdicts, _ = commands.nightly(
        db=db, out=home / "results" / "verdicts" / f"nightly-night{RUNS - 1:02d}.json"
    )
    out = home / "pages"
    pages.build(out, db_path=db, nightly_verdicts=verdicts)
    return {"home": home, "out": out, "verdicts": verdicts, "db": db}


def text_of(page):
    """The visible words of a page: tags removed, entities decoded."""
    text = re.sub(r"<script.*?</script>", " ", page, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    return re.sub(r"\s+", " ", text)


def headline_row(page, name):
    row = re.search(rf'<tr data-headline="{re.escape(name)}"[^>]*>(.*?)</tr>', page, re.S)
    assert row, f"no headline row {name!r} on the index"
    return text_of(row.group(1))


# ---- the made-up history: known answers ------------------------------------------------------
def test_a_figure_too_short_to_time_is_shown_but_never_ranked():
    """Two file systems 3x apart on a headline figure, every night: ranked, unless the
    latest run of either timed it in a phase too short to trust; then the ranking says
    where and how long, and the advice names it among the figures not compared."""

    def series(target, value, phase):
        meta = {
            "case_id": 1,
            "scratch_target": target,
            "scratch_kind": "shared",
            "system": "synth",
            "partition": "batch",
            "environ": "gnu",
            "workload": "nightly",
            "unit": "ops/s",
            "label": "Stats per second",
            "metric": "stat_rate",
            "better": "higher",
            "headline": "Stat files",
            "chart": None,
            "params": "{}",
            "title": "Metadata",
            "check_name": "KernelMetadata",
            "variant": "shared dir",
            "workload_words": "1,000 files",
            "scaling_parameter": "",
            "role": "",
            "phase_seconds": phase,
            "too_short": None if phase is None else int(phase < SHORTEST_TRUSTED_PHASE_S),
        }
        points = [(START + DAY * i, value * (1 + 0.01 * (i % 3)), f"night{i}") for i in range(6)]
        return rankings.Series((target, "stat_rate"), "stat_rate", points, meta)

    fast = series("fastfs", 3000.0, 2.0)
    timed = rankings.Ranking(
        fast.figure, {"fastfs": [fast], "slowfs": [series("slowfs", 1000.0, 2.0)]}
    )
    assert timed.status == "winner" and timed.best.target == "fastfs"
    short = rankings.Ranking(
        fast.figure, {"fastfs": [fast], "slowfs": [series("slowfs", 1000.0, 0.041)]}
    )
    assert short.status == "too short"
    assert short.verdict() == f"not ranked: on slowfs, {too_short_words(0.041)}"
    advice = " ".join(rankings.advice("fastfs", [short], {}))
    assert "Best file system" not in advice
    assert (
        f"Not compared, their timed phases too short to trust (under "
        f"{SHORTEST_TRUSTED_PHASE_S:g} s): Stat files (shared dir)."
    ) in advice
    # a figure stored before phases were kept (no length known) is ranked as before
    unknown = rankings.Ranking(
        fast.figure, {"fastfs": [fast], "slowfs": [series("slowfs", 1000.0, None)]}
    )
    assert unknown.status == "winner"
    # on the file system's page the short value is shown, but not placed among earlier
    # runs: no quarter (words, colour) for the headline nor for the figure's own plot
    slow = series("slowfs", 1000.0, 0.041)
    page = pages.fs_page("slowfs", {(slow.key, slow.metric): slow}, [short], {}, plots.Plots())
    (headline,) = page["headlines"]
    assert headline["standing"].too_short and headline["notes"][0][2] is None
    (folded,) = [p for section in page["sections"] for v in section["variants"] for p in v["plots"]]
    assert folded["short"] == {"gnu"} and folded["notes"][0][2] is None
    latest_marker = folded["spec"]["data"][1]["marker"]["color"]
    assert latest_marker not in plots.QUARTILE_COLOURS


def test_index_names_the_right_winners(made_up_site):
    index = (made_up_site["out"] / "index.html").read_text()
    write = headline_row(index, "Large sequential write")
    assert re.search(
        r"fastfs: 2\.[4-6]\d?x higher than slowfs \(every one of the last 10 runs\)", write
    ), write
    assert "1 MiB transfers, 64 MiB per rank, 4 ranks on 1 node" in write
    assert re.search(r"20\d\d-\d\d-\d\d \d\d:\d\d UTC", write), "each figure shows its date"
    stage = headline_row(index, "Stage a data set into scratch")
    assert re.search(r"fastfs: [23]\.\d+x lower than slowfs", stage), stage
    create = headline_row(index, "Create empty files")
    assert "no clear winner" in create, create
    delete = headline_row(index, "Delete files")
    # slowfs has it in only 2 runs: its latest run failed
    assert "not decided yet: 3 more runs needed" in delete, delete


def test_banner_states_what_could_not_be_decided(made_up_site):
    verdicts = made_up_site["verdicts"]
    unjudged = [
        f for f in verdicts["figures"] if f["verdict"] in pages.UNDECIDED or pages.nights_needed(f)
    ]
    new_check = [f for f in unjudged if f["metric"] == "delete_rate"]
    assert len(new_check) == 2 and all(pages.nights_needed(f) == 5 for f in new_check)
    text = text_of((made_up_site["out"] / "index.html").read_text())
    banner = re.search(
        r"Nightly verdict for the latest run, night11.*?(?=Headline figures)", text
    ).group(0)
    assert f"{len(verdicts['figures'])} figures judged" in banner
    assert (
        f"Could not be decided: {len(unjudged)} of {len(verdicts['figures'])} figures" in banner
    ), banner
    assert "5 more nightly runs needed" in banner


def test_banner_is_for_the_latest_run_only(made_up_site, tmp_path):
    older = dict(made_up_site["verdicts"], run_id="night10")
    out = tmp_path / "pages"
    pages.build(out, db_path=made_up_site["db"], nightly_verdicts=older)
    text = text_of((out / "index.html").read_text())
    assert "No verdict for run night11 yet: run `scratchbench verdict nightly`." in text
    assert "figures judged" not in text


def test_report_takes_the_verdict_of_the_latest_run(made_up_site, tmp_path, monkeypatch):
    monkeypatch.setenv("SCRATCHBENCH_HOME", str(tmp_path))
    verdict_dir = tmp_path / "results" / "verdicts"
    verdict_dir.mkdir(parents=True)
    older = dict(made_up_site["verdicts"], run_id="night10")
    (verdict_dir / "nightly-night10.json").write_text(json.dumps(older))
    commands.report(tmp_path / "pages", db=made_up_site["db"])
    assert "No verdict for run night11 yet" in (tmp_path / "pages" / "index.html").read_text()
    (verdict_dir / "nightly-night11.json").write_text(json.dumps(made_up_site["verdicts"]))
    commands.report(tmp_path / "pages", db=made_up_site["db"])
    index = text_of((tmp_path / "pages" / "index.html").read_text())
    assert "Nightly verdict for the latest run, night11" in index


def test_morning_page_names_each_change(made_up_site):
    """The known change (fastfs stages 40% slower since night 10) is named in the banner
    and by `verdict nightly` with what, where, since when, how much with its interval,
    new or ongoing, and a link to its chart; newest first; its index row is marked and
    the advice that recommends fastfs for it says so; an unchanged headline is not."""
    verdicts = made_up_site["verdicts"]
    night10 = units.date(START + 10 * DAY)
    pattern = (
        r"Regression \(new\): Stage a data set into scratch \(Staging \(made up\)\) on "
        rf"fastfs \[builtin\], since {night10}: \+(3\d|4\d)\.\d% \(95% interval "
        r"\+\d+\.\d% to \+\d+\.\d%\); median (9\.\d+|10(\.\d+)?) s before, "
        r"1[345](\.\d+)? s since"
    )
    text = commands.format_nightly(verdicts, "v.json")
    assert re.search(pattern, text), text
    index = (made_up_site["out"] / "index.html").read_text()
    banner = re.search(r'<section class="banner.*?</section>', index, re.S).group(0)
    items = re.findall(r"<li[^>]*>(.*?)</li>", banner, re.S)
    assert any(re.search(pattern, text_of(i)) for i in items), banner
    dates = [
        re.search(r"(?:since|on|in this run, )\s*(\d{4}-\d\d-\d\d)", text_of(i)).group(1)
        for i in items
    ]
    assert dates == sorted(dates, reverse=True), "newest first"
    link = re.search(
        r'Stage a data set.*?<a href="(fs-fastfs\.html#f-[0-9a-f]{12})">chart</a>', banner, re.S
    ).group(1)
    fs = (made_up_site["out"] / "fs-fastfs.html").read_text()
    assert f'id="{link.split("#")[1]}"' in fs, "the link leads to the figure's chart"
    for other in re.findall(r'<a href="(fs-[^"#]+\.html)#(f-[0-9a-f]{12})">chart</a>', banner):
        page = (made_up_site["out"] / other[0]).read_text()
        assert f'id="{other[1]}"' in page, f"{other}: every change's link lands on its chart"
    assert re.search(r'<tr data-headline="Stage a data set into scratch" class="regressed">', index)
    stage = headline_row(index, "Stage a data set into scratch")
    assert re.search(rf"regressed on {night10} \(new, \+\d+\.\d%, builtin\)", stage), stage
    assert f"but fastfs regressed on {night10}" in stage, "the ranking says it"
    write = headline_row(index, "Large sequential write")
    assert '<tr data-headline="Large sequential write">' in index and "regressed" not in write
    advice = re.search(r"Advice for users(.*?)Headline figures", text_of(fs)).group(1)
    assert re.search(
        rf"Best file system here for Stage a data set into scratch: .*? But "
        rf"fastfs regressed on {night10} \(new",
        advice,
    ), advice
    slow = text_of((made_up_site["out"] / "fs-slowfs.html").read_text())
    assert re.search(
        rf"For Stage a data set into scratch, prefer fastfs: .*? But fastfs "
        rf"regressed on {night10}",
        slow,
    )


def test_failures_and_skips_show_their_cause(made_up_site):
    index = text_of((made_up_site["out"] / "index.html").read_text())
    problems = re.search(r"slowfs: what did not run.*?(?=fastfs: what|Latest runs)", index)
    assert problems, index[:2000]
    assert (
        "2 failed — failed in sanity: kernel exited 3: No space left on device" in problems.group(0)
    )
    assert "2 skipped — the tool is not installed on this system" in problems.group(0)
    fs = text_of((made_up_site["out"] / "fs-slowfs.html").read_text())
    assert "failed in sanity: kernel exited 3: No space left on device" in fs
    assert "Metadata (made up): one shared directory [gnu-mpich]" in fs
    run = text_of((made_up_site["out"] / "run-night11.html").read_text())
    assert re.search(r"fail in sanity: kernel exited 3: No space left on device", run)


def test_advice_agrees_with_the_index(made_up_site):
    index = (made_up_site["out"] / "index.html").read_text()
    margin = re.search(
        r"fastfs: (\S+x) higher than slowfs", headline_row(index, "Large sequential write")
    ).group(1)
    fast = text_of((made_up_site["out"] / "fs-fastfs.html").read_text())
    advice = re.search(r"Advice for users(.*?)Headline figures", fast).group(1)
    assert re.search(
        rf"Best file system here for Large sequential write \(file per process, "
        rf"POSIX\): {re.escape(margin)} higher than slowfs",
        advice,
    ), advice
    assert (
        "Rests on the last 10 runs (2027-01-" in advice or "Rests on the last 10 runs (20" in advice
    )
    assert "1 MiB transfers, 64 MiB per rank, 4 ranks on 1 node" in advice
    # Within one check: file per process against one shared file, 10x apart.
    assert re.search(
        r"Bandwidth \(made up\): write bandwidth is (9|10|11)\.?\d*x higher with "
        r"file per process, POSIX",
        advice,
    ), advice
    # Where the spread does not support a claim, the advice does not make one.
    # (that it varies a lot from run to run at CV 15% is no claim of a winner)
    assert not re.search(
        r"(Best file system here for|For) Create empty files",
        advice.split("No clear difference")[0],
    ), advice
    assert re.search(r"No clear difference .* for: Create empty files", advice)
    assert re.search(r"Not enough data yet .* Delete files .*\(3 more runs needed\)", advice)
    slow = text_of((made_up_site["out"] / "fs-slowfs.html").read_text())
    slow_advice = re.search(r"Advice for users(.*?)Headline figures", slow).group(1)
    assert "For Large sequential write (file per process, POSIX), prefer fastfs" in slow_advice
    assert "Best file system here" not in slow_advice


def plot_specs(page):
    """{plot id: specification} of the plots of a page."""
    return {
        m.group(1): json.loads(m.group(2))
        for m in re.finditer(
            r'<script type="application/json" id="([^"]+)">(.*?)</script>', page, re.S
        )
    }


def test_declared_charts_side_by_side_on_every_file_system(made_up_site):
    """A page per declared chart title: each file system's latest surface next to the
    other's on one colour scale (a log one: slowfs is 40x slower past its cache), its
    thresholds drawn where they fall inside the sizes measured and said in words where
    they do not; lines of every file system on the same axes.  The index and every file
    system's page link to it."""
    out = made_up_site["out"]
    surface_page = out / "across-Re-read-throughput.html"
    lines_page = out / "across-Read-bandwidth-against-queue-depth.html"
    assert surface_page.exists() and lines_page.exists()
    page = surface_page.read_text()
    text = text_of(page)
    assert "Re-read throughput: every file system side by side" in text
    assert re.findall(r'<figure data-target="(\w+)">', page) == ["fastfs", "slowfs"]
    assert (
        text.count(
            "Thresholds: cache, 1 MiB: marked; node memory, 64 GiB: beyond the "
            "largest value measured (4 MiB)"
        )
        == 2
    )
    assert "log colour scale" in text
    specs = list(plot_specs(page).values())
    heats = [sp for sp in specs if sp["data"][0]["type"] == "heatmap"]
    surfaces = [sp for sp in specs if sp["data"][0]["type"] == "surface"]
    assert len(heats) == len(surfaces) == 2
    # one colour scale for both (log10 of MiB/s), so a colour means the same on both
    assert len({(h["data"][0]["zmin"], h["data"][0]["zmax"]) for h in heats}) == 1
    low, high = heats[0]["data"][0]["zmin"], heats[0]["data"][0]["zmax"]
    assert (
        10**high / 10**low > 30 and "log scale" in heats[0]["data"][0]["colorbar"]["title"]["text"]
    )
    # the declared words label the axes; the cache mark sits on the 1 MiB column (index
    # 2 of 64 KiB, 256 KiB, 1 MiB, 4 MiB); the memory, beyond 4 MiB, is not drawn
    assert heats[0]["data"][0]["x"] == ["64 KiB", "256 KiB", "1 MiB", "4 MiB"]
    assert [(sh["x0"], sh["line"]["dash"]) for sh in heats[0]["layout"]["shapes"]] == [
        (2.0, "dash")
    ]
    assert [a["text"] for a in heats[0]["layout"]["annotations"]] == ["cache, 1 MiB"]
    planes = [t for t in surfaces[0]["data"][1:] if t["type"] == "surface"]
    assert len(planes) == 1 and planes[0]["x"] == [[1024 * 1024] * 2] * 2
    assert surfaces[0]["layout"]["scene"]["zaxis"]["type"] == "log"
    assert surfaces[0]["layout"]["scene"]["xaxis"]["ticktext"] == [
        "64 KiB",
        "256 KiB",
        "1 MiB",
        "4 MiB",
    ]
    # the sentences of the lead are apart ("...000)).Lines" ran them together)
    assert "). Lines of the same workload share the same axes" in text_of(lines_page.read_text())
    lines = list(plot_specs(lines_page.read_text()).values())
    assert len(lines) == 1
    assert sorted(t["name"] for t in lines[0]["data"]) == [
        "fastfs: 4 KiB blocks",
        "fastfs: 64 KiB blocks",
        "slowfs: 4 KiB blocks",
        "slowfs: 64 KiB blocks",
    ]
    for name in ("index.html", "fs-fastfs.html", "fs-slowfs.html"):
        linked = (out / name).read_text()
        assert 'href="across-Re-read-throughput.html"' in linked, name
        assert 'href="across-Read-bandwidth-against-queue-depth.html"' in linked, name
    fs = text_of((out / "fs-slowfs.html").read_text())
    assert (
        "Thresholds: cache, 1 MiB: marked; node memory, 64 GiB: beyond the largest value "
        "measured (4 MiB)." in fs
    )


def test_pages_name_no_check_and_no_metric():
    """Everything a page says comes from the declarations: the page code names no check
    class and no metric of the suite."""
    code = "".join(
        (REPO / "reports" / f"{module}.py").read_text() for module in ("pages", "plots", "rankings")
    )
    for template in (REPO / "reports" / "templates").iterdir():
        code += template.read_text()
    names = set(
        re.findall(
            r"^class (\w+)\(",
            "\n".join(p.read_text() for p in (REPO / "reframe_checks").rglob("*.py")),
            re.M,
        )
    )
    names |= set(
        re.findall(
            r"@figure\(.*?\)\n\s+def (\w+)",
            "\n".join(p.read_text() for p in (REPO / "reframe_checks").rglob("*.py")),
            re.S,
        )
    )
    assert {"write_bw", "delete_rate", "stage_in_bw"} <= names
    assert names, "found no checks and no figures to look for"
    named = sorted(n for n in names if re.search(rf"\b{n}\b", code))
    assert named == [], f"page code names {named}"


def test_an_incremental_build_skips_unchanged_run_pages(made_up_site, tmp_path):
    out = tmp_path / "pages"
    first, _, _ = pages.build(out, db_path=made_up_site["db"])
    again, _, _ = pages.build(out, db_path=made_up_site["db"])
    fs_pages = len(list(out.glob("fs-*.html")))
    across = len(list(out.glob("across-*.html")))
    # index, compare, runs, advisor, the file-system pages and the charts across them
    # (a surface per pattern, the queue-depth lines, the placements and the many lines);
    # no run page
    assert across == len(PATTERNS) + 3 and first == again + RUNS and again == 4 + fs_pages + across
    (out / "run-night03.html").unlink()
    assert pages.build(out, db_path=made_up_site["db"])[0] == again + 1


def test_run_pages_written_by_forked_writers_are_the_same(made_up_site, tmp_path, monkeypatch):
    """A full build splits its run pages over processes (each reading the store through
    its own connection); the pages and the manifest are those of one process."""
    alone, split = tmp_path / "alone", tmp_path / "split"
    pages.build(alone, db_path=made_up_site["db"])
    monkeypatch.setattr(pages, "PARALLEL_RUN_PAGES", 2)
    monkeypatch.setattr(pages.os, "cpu_count", lambda: 2)
    pages.build(split, db_path=made_up_site["db"])
    run_pages = sorted(p.name for p in alone.glob("run-*.html"))
    assert len(run_pages) == RUNS and run_pages == sorted(p.name for p in split.glob("run-*.html"))
    generated = re.compile(r"Generated [^<]*")
    for name in run_pages + [pages.MANIFEST]:
        assert generated.sub("", (split / name).read_text()) == generated.sub(
            "", (alone / name).read_text()
        ), name


def test_history_plots_with_one_run_and_with_many():
    one = [(START, 100.0, "r0")]
    spec, notes = plots.history_plot([("gnu", one)], "MiB/s", higher=True)
    assert [t["type"] for t in spec["data"]] == ["scatter", "scatter"], "no box of one value"
    assert spec["layout"]["xaxis"]["type"] == "category", "not a dot on a time axis"
    assert spec["data"][0]["x"] == [f"{units.date_time(START)} UTC"]
    assert notes == [("gnu", 100.0, None)]
    two = [(START, 100.0, "r0"), (START + DAY, 101.0, "r1")]
    assert (
        plots.history_plot([("gnu", two)], "MiB/s", higher=True)[0]["layout"]["xaxis"]["type"]
        == "date"
    )
    many = [(START + i * DAY, v, f"r{i}") for i, v in enumerate([100, 110, 90, 105, 60])]
    spec, notes = plots.history_plot([("gnu", many)], "MiB/s", higher=True)
    box = [t for t in spec["data"] if t["type"] == "box"]
    assert len(box) == 1 and box[0]["median"] == [102.5], "the box holds the earlier runs only"
    assert notes == [("gnu", 60, "worst quarter")]
    _, notes = plots.history_plot([("gnu", many)], "s", higher=False)
    assert notes == [("gnu", 60, "best quarter")]


def test_compare_bars_use_a_log_axis_when_values_differ_by_orders():
    def standing(median):
        return SimpleNamespace(median=median, low=median * 0.9, high=median * 1.1)

    spec, log = plots.bars_plot(
        ["a"], [("fs1", {"a": standing(260_000)}), ("fs2", {"a": standing(5_000)})], "ops/s"
    )
    assert log and spec["layout"]["yaxis"]["type"] == "log"
    assert "log scale" in spec["layout"]["yaxis"]["title"]["text"]
    error = spec["data"][0]["error_y"]
    assert error["array"] == [pytest.approx(26_000)], "the whisker spans the recent range"
    _, log = plots.bars_plot(
        ["a"], [("fs1", {"a": standing(900)}), ("fs2", {"a": standing(600)})], "MiB/s"
    )
    assert not log


def test_no_two_lines_of_a_chart_look_alike():
    """Past the ten colours a line takes the next dash (a side-by-side self-scaling chart
    has 16-18 lines: two shared a colour), on the history charts too; on the side-by-side page a chart line keeps
    its colour on every file system and each file system has its dash."""
    lines = {f"line {i:02d}": {1: 1.0, 2: 2.0} for i in range(18)}
    styles = [
        (t["line"]["color"], t["line"]["dash"])
        for t in plots.lines_plot("x", lines, "MiB/s")["data"]
    ]
    assert len(set(styles)) == 18, styles
    # a history chart too (one line per variant and environment can pass ten)
    history = [(name, [(1.8e9, 1.0, "r1"), (1.8e9 + 60, 2.0, "r2")]) for name in lines]
    spec, _ = plots.history_plot(history, "MiB/s", higher=True)
    drawn = [(t["line"]["color"], t["line"]["dash"]) for t in spec["data"] if "line" in t]
    assert len(drawn) == 18 and len(set(drawn)) == 18, drawn
    names = ["focal points", "knee", "readFrac 1", "readFrac 0"]
    lines = {f"{fs}: {n}": {1: 1.0} for fs in ("localscratch", "sanscratch") for n in names}
    groups = {f"{fs}: {n}": (fs, n) for fs in ("localscratch", "sanscratch") for n in names}
    style = {
        t["name"]: t["line"] for t in plots.lines_plot("x", lines, "MiB/s", groups=groups)["data"]
    }
    for n in names:
        assert style[f"localscratch: {n}"]["color"] == style[f"sanscratch: {n}"]["color"]
        assert style[f"localscratch: {n}"]["dash"] != style[f"sanscratch: {n}"]["dash"]
    assert len({style[f"localscratch: {n}"]["color"] for n in names}) == len(names)
    assert {style[f"sanscratch: {n}"]["dash"] for n in names} == {"dash"}
    # more members than colours: every line apart all the same
    groups = {f"fs: {i}": ("fs", str(i)) for i in range(12)}
    lines = {name: {1: 1.0} for name in groups}
    data = plots.lines_plot("x", lines, "MiB/s", groups=groups)["data"]
    assert len({(t["line"]["color"], t["line"]["dash"]) for t in data}) == 12


def test_long_bar_names_and_many_legend_entries_add_room_not_take_it():
    """Names of variants wrap to their bar group's width and the legend's rows add to the
    plot's height (the compare page drew labels over each other and squeezed a plot to
    70 px); the browser test measures the drawn labels and plot areas."""

    def standing(median):
        return SimpleNamespace(median=median, low=median, high=median)

    names = [f"one shared file, MPI-IO collective, variant {i}" for i in range(6)]
    traces = [(f"file system number {i}", {n: standing(100.0) for n in names}) for i in range(8)]
    spec, _ = plots.bars_plot(names, traces, "MiB/s", width=1100)
    layout = spec["layout"]
    plot_area = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    assert plot_area >= 200, layout
    assert layout["margin"]["t"] > 30 + 18, "room for the legend's second row"
    ticks = layout["xaxis"]["ticktext"]
    assert all(len(line) <= 1100 / 6 / 7 for t in ticks for line in t.split("<br>")), ticks
    assert [t.replace("<br>", " ") for t in ticks] == names


def test_pages_load_the_2d_plotly_bundle_unless_3d_is_on_the_first_screen(made_up_site):
    """The cartesian bundle (a third of the full one) where 2-D plots suffice, of the
    same plotly.js version as the full bundle; the full one on a page whose first
    screen has 3-D surfaces.  The pages fold their surfaces (a folded surface loads the
    full bundle when opened: the browser test draws them)."""
    full = (
        pages.Path(pages.resources.files("plotly")) / "package_data" / plots.PLOTLY_FULL
    ).read_text()[:200]
    cartesian = (REPO / "reports" / "templates" / plots.PLOTLY_CARTESIAN).read_text()[:200]
    version = re.search(r"plotly\.js v(\S+)", full).group(1)
    assert f"plotly.js (cartesian - minified) v{version}" in cartesian
    assert "Licensed under the MIT license" in cartesian
    out = made_up_site["out"]
    for name in (
        "fs-fastfs.html",
        "compare.html",
        "across-Re-read-throughput.html",
        "across-Read-bandwidth-against-queue-depth.html",
    ):
        assert 'src="assets/plotly-cartesian.min.js"' in (out / name).read_text(), name
    # a page whose first screen has a surface: the full bundle
    surface_first = plots.Plots()
    surface_first.add({}, surface=True)
    assert surface_first.bundle == plots.PLOTLY_FULL
    assert (out / "assets" / plots.PLOTLY_CARTESIAN).stat().st_size < (
        out / "assets" / plots.PLOTLY_FULL
    ).stat().st_size / 2


def test_a_history_written_by_the_previous_code_renders(tmp_path):
    """Schema version 1 stored no declarations: the pages still show every figure (by its
    metric's name, as stored) and say that no headline figure is declared."""
    db = tmp_path / "h.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript((REPO / "tests" / "fixtures" / "history-v1.sql").read_text())
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    written, figures, _ = pages.build(tmp_path / "pages", db_path=db)
    assert figures == 216 and written == 7  # index, compare, runs, advisor, fs, 2 runs
    index = text_of((tmp_path / "pages" / "index.html").read_text())
    assert "No headline figures yet" in index
    assert "34 checks: 26 passed, 8 skipped" in index
    fs = (tmp_path / "pages" / "fs-sanscratch.html").read_text()
    assert fs.count('data-plot="') >= 50


def test_a_figure_that_describes_a_model_is_shown_but_never_ranked(tmp_path):
    """A model's prediction error differs 3x between two targets: the index shows both
    values but names no winner, and no advice prefers a target for it."""
    db = tmp_path / "h.sqlite"
    conn = store.connect(db)
    for night in range(8):
        cases = [
            make_case(
                "SynthModel",
                {"scratch_target": target},
                "gnu",
                target,
                {"model_error": (error * (1 + 0.01 * night), "%", [])},
                title="Model (made up)",
                workload="nightly",
                declarations={
                    "model_error": dict(
                        declared(
                            "Prediction error (median)",
                            "%",
                            "lower",
                            headline="Prediction error of a model",
                        ),
                        role="model_error_median",
                    )
                },
            )
            for target, error in (("fastfs", 10.0), ("slowfs", 30.0))
        ]
        store.ingest_report(
            conn, make_report(f"m{night}", START + night * DAY, cases, tag="nightly")
        )
    conn.close()
    out = tmp_path / "pages"
    pages.build(out, db_path=db)
    row = headline_row((out / "index.html").read_text(), "Prediction error of a model")
    assert "10.7 %" in row and "32.1 %" in row, row
    assert "not ranked: it describes a model or the measurement" in row
    # neither way is better for a figure that describes the measurement: no page says so
    assert "(%)" in row and "is better" not in row, row
    compare = text_of((out / "compare.html").read_text())
    assert "Prediction error (median) (%)" in compare
    assert "Prediction error (median) (%, lower is better)" not in compare
    for target in ("fastfs", "slowfs"):
        fs = text_of((out / f"fs-{target}.html").read_text())
        advice = re.search(r"Advice for users(.*?)Headline figures", fs).group(1)
        assert "Prediction error" not in advice and "prefer" not in advice, advice


def test_a_headline_value_is_one_environment_never_their_median(tmp_path):
    """Two MPI libraries 4.5x apart on deletions: the index shows the lead environment's
    value on each file system (the same environment on both), never the median."""
    db = tmp_path / "h.sqlite"
    conn = store.connect(db)
    for night in range(6):
        cases = [
            make_case(
                "SynthDelete",
                {"scratch_target": target},
                environ,
                target,
                {"delete_rate": (rate * scale, "deletions/s", [])},
                title="Deletion (made up)",
                workload="nightly",
                declarations={
                    "delete_rate": declared(
                        "Deletions per second", "deletions/s", headline="Delete files"
                    )
                },
            )
            for target, rate in (("fastfs", 96000.0), ("slowfs", 20000.0))
            for environ, scale in (("gnu-mpich", 1.0), ("gnu-openmpi", 4.5))
        ]
        store.ingest_report(
            conn, make_report(f"d{night}", START + night * DAY, cases, tag="nightly")
        )
    conn.close()
    out = tmp_path / "pages"
    pages.build(out, db_path=db)
    row = headline_row((out / "index.html").read_text(), "Delete files")
    assert "96,000 deletions/s" in row and "20,000 deletions/s" in row, row
    assert "265,000" not in row and "264,000" not in row, "the median of two environments"
    assert row.count("gnu-mpich") == 2 and "not run with" not in row, row
    assert "fastfs: 4.8x higher than slowfs" in row, row


def test_report_of_an_empty_store_says_so(tmp_path):
    with pytest.raises(store.NoHistory, match="empty.sqlite: no such file"):
        commands.report(tmp_path / "pages", db=tmp_path / "empty.sqlite")
    assert not (tmp_path / "empty.sqlite").exists(), "reading created the store"
    store.connect(tmp_path / "empty.sqlite").close()
    with pytest.raises(store.NoHistory, match="holds no figures yet"):
        commands.report(tmp_path / "pages", db=tmp_path / "empty.sqlite")
    assert not (tmp_path / "pages").exists()


# ---- a real browser -------------------------------------------------------------------------
class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(directory):
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


# A plot is drawn when Plotly drew it; a 3-D plot past the page's live WebGL budget is
# kept as a picture of itself (img.snapshot), drawn all the same.
#: every plot outside a closed fold has been drawn (or turned into its picture); with
#: the argument true, only those on the first screen
RENDERED = (
    "(firstScreen) => [...document.querySelectorAll('[data-plot]')].every(el => "
    "el.closest('details:not([open])') || "
    "(firstScreen && el.getBoundingClientRect().top > window.innerHeight) || "
    "el.dataset.rendered === '1' && (el.querySelector('.plot-container') || "
    "el.querySelector('img.snapshot') || el.classList.contains('no-webgl')))"
)
SCROLL = """async () => {
    for (let y = 0; y < document.body.scrollHeight; y += 500) {
        window.scrollTo(0, y); await new Promise(r => setTimeout(r, 25)); } }"""
# Every plot outside a closed fold brought into view, one after the other, each for two
# frames: the pages draw a plot when it scrolls into view, and a plot scrolled past
# between two frames (a loaded machine draws few) is never seen in view (CI once waited
# 120 s for 22 plots of a page that SCROLL had swept past).
VISIT_PLOTS = """async () => {
    // two frames, or 1 s if the renderer draws none (an evaluate has no timeout: a stalled
    // renderer would hang the test instead of failing the wait for the plots below)
    const frame = () => new Promise(r => {
        requestAnimationFrame(() => requestAnimationFrame(r)); setTimeout(r, 1000); });
    for (const el of document.querySelectorAll('[data-plot]')) {
        if (el.closest('details:not([open])') || el.dataset.rendered === '1') continue;
        el.scrollIntoView({block: 'center'}); await frame(); } }"""


# Every WebGL context a page makes, recorded before the page's own scripts run: a page
# must let go of the contexts of plots it turned into pictures (Chromium drops the oldest
# live one past about 16, whenever its garbage collector is late).
COUNT_CONTEXTS = """(() => {
    const made = window.__webglContexts = [], getContext = HTMLCanvasElement.prototype.getContext;
    HTMLCanvasElement.prototype.getContext = function (kind) {
        const context = getContext.apply(this, arguments);
        if (context && /webgl/.test(kind) && !made.includes(context)) made.push(context);
        return context; }; })()"""
ALIVE_CONTEXTS = "() => window.__webglContexts.filter(gl => !gl.isContextLost()).length"
#: plots outside a closed fold when a page opens: a screenful (plots.SCREENFUL headline
#: plots; on a side-by-side page the first workload's surface and heat map of each file
#: system), not the ~200 of a file system's history
OPEN_PLOTS = (
    "() => [...document.querySelectorAll('[data-plot]')].filter(el => "
    "!el.closest('details:not([open])')).length"
)
MOST_OPEN_PLOTS = 8
#: what is wrong with the drawing of each 2-D plot drawn: tick labels over each other, a
#: legend over the plot, a plot squeezed by its labels, a chart of no data (Jovian's
#: placements on a numeric axis drew nothing)
LAYOUT_PROBLEMS = """() => [...document.querySelectorAll('[data-plot]')].filter(el =>
    el._fullLayout && !el._fullLayout.scene && el.dataset.rendered === '1').flatMap(el => {
    const problems = [], size = el._fullLayout._size, box = el.getBoundingClientRect();
    const name = el.dataset.plot + ' (' + (el.closest('figure, section, details')
        ?.querySelector('h3, h4, summary')?.textContent.trim().slice(0, 60) || '') + ')';
    if (size.h < 120) problems.push(name + ': plot area ' + Math.round(size.h) + ' px tall');
    for (const axis of ['xtick', 'ytick']) {
        const r = [...el.querySelectorAll('.' + axis + ' text')].map(t => t.getBoundingClientRect())
            .filter(r => r.width).sort((a, b) => axis === 'xtick' ? a.left - b.left : a.top - b.top);
        for (let i = 1; i < r.length; i++)
            if (axis === 'xtick' ? r[i].left < r[i - 1].right - 1 : r[i].top < r[i - 1].bottom - 1)
                problems.push(name + ': ' + axis + ' labels overlap'); }
    const legend = el.querySelector('g.legend');
    if (legend && legend.getBoundingClientRect().bottom > box.top + size.t + 2)
        problems.push(name + ': the legend covers the plot');
    const points = el.querySelectorAll('.scatterlayer .point, .barlayer .point, .boxlayer path.box, .heatmaplayer image').length;
    if (!points) problems.push(name + ': no data drawn');
    return problems; })"""
#: live 3-D plots a page keeps (LIVE_3D in pages.js) and Plotly's one canvas for pictures
MOST_CONTEXTS = 6 + 1


def in_full(names):
    """The pages browse() opens every fold of and draws every plot on: the first page of
    each kind (index, fs-, across-, run-, ...), whose template and charts the others of
    its kind share.  Drawing all of a file-system page's ~200 plots takes Chromium over
    a minute on 2 cores; the others of a kind are seen as a visitor first sees them."""
    first = {}
    for name in sorted(names):
        first.setdefault(name.split("-", 1)[0], name)
    return set(first.values())


def browse(home, shots, unfolded=(), pages="pages"):
    """Open every page of home/<pages>; on the pages in_full() picks, open every fold and
    scroll until every plot has rendered; follow every link; save screenshots {page:
    png name} as a visitor first sees the page, and of the pages in `unfolded` (drawn
    in full) with every fold open.  Returns the problems seen (console errors and
    warnings, failed requests, dialogs, too many live WebGL contexts) and the links."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    server, root = serve(home)
    site = f"{root}/{pages}"
    problems, links = [], set()
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            # a page of 3-D surfaces on 2 shared cores took Chromium over 30 s to load
            # (its default timeout) when the machine was loaded, not the page's doing
            page.set_default_timeout(120000)
            page.add_init_script(COUNT_CONTEXTS)
            page.on(
                "console",
                lambda m: (
                    problems.append(f"{page.url}: {m.type}: {m.text}")
                    if m.type in ("error", "warning")
                    and not any(note in m.text for note in BROWSER_NOTES)
                    else None
                ),
            )
            page.on("pageerror", lambda e: problems.append(f"{page.url}: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"failed request {r.url}"))
            page.on("dialog", lambda d: (problems.append(f"dialog {d.message}"), d.dismiss()))
            names = sorted(p.name for p in (home / pages).glob("*.html"))
            full = in_full(names) | set(unfolded)
            for name in names:
                response = page.goto(f"{site}/{name}")
                assert response.status == 200, name
                opened = page.evaluate(OPEN_PLOTS)
                if opened > MOST_OPEN_PLOTS:
                    problems.append(
                        f"{name}: {opened} plots open before the reader opens a "
                        f"fold, at most {MOST_OPEN_PLOTS} expected"
                    )
                if name in shots:
                    # As a visitor first sees it: folds closed, plots in view rendered.
                    page.evaluate(SCROLL)
                    page.wait_for_timeout(300)
                    page.evaluate("window.scrollTo(0, 0)")
                    page.screenshot(path=str(ARTIFACTS / shots[name]), full_page=True)
                if name in full:
                    page.evaluate(
                        "document.querySelectorAll('details').forEach(d => d.open = true)"
                    )
                    page.evaluate(VISIT_PLOTS)
                if page.locator("[data-plot]").count():
                    try:
                        page.wait_for_function(RENDERED, arg=name not in full, timeout=120000)
                    except Exception as exc:  # say which page did not finish drawing
                        waiting = page.evaluate(
                            "() => [...document.querySelectorAll('[data-plot]')].filter("
                            "el => !el.closest('details:not([open])') && "
                            "el.dataset.rendered !== '1').length"
                        )
                        raise AssertionError(
                            f"{name}: {waiting} plot(s) not drawn: {exc}; "
                            f"the browser said: {problems[-5:]}"
                        ) from None
                problems += [f"{name}: {p}" for p in page.evaluate(LAYOUT_PROBLEMS)]
                alive = page.evaluate(ALIVE_CONTEXTS)
                if alive > MOST_CONTEXTS:
                    problems.append(
                        f"{name}: {alive} WebGL contexts alive after every plot "
                        f"was drawn, at most {MOST_CONTEXTS} expected"
                    )
                if name in unfolded:
                    page.evaluate("window.scrollTo(0, 0)")
                    page.screenshot(path=str(ARTIFACTS / unfolded[name]), full_page=True)
                links |= set(page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"))
            for link in sorted(links):
                assert link.startswith(root), f"a link leaves the site: {link}"
                assert page.request.get(link).status == 200, link
            browser.close()
    finally:
        server.shutdown()
    for name in shots.values():
        assert (ARTIFACTS / name).stat().st_size > 10000, name
    return problems, links


@contextlib.contextmanager
def served_page(home):
    """A Chromium page and the root URL of home served over HTTP."""
    from playwright.sync_api import sync_playwright

    server, root = serve(home)
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.set_default_timeout(120000)  # a loaded machine, as in browse()
            yield page, root
            browser.close()
    finally:
        server.shutdown()


def test_a_plot_that_cannot_be_drawn_says_so_and_the_rest_are_drawn(made_up_site):
    """One plot whose specification is broken: it says so in its place, and every plot
    after it is still drawn (a failed draw used to leave the queue busy for ever)."""
    with served_page(made_up_site["home"]) as (page, root):
        problems = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.goto(f"{root}/pages/fs-fastfs.html")
        broken = page.evaluate(
            "() => { const el = [...document.querySelectorAll('details [data-plot]')]"
            ".find(el => !el.dataset.rendered); "
            "document.getElementById(el.dataset.plot).textContent = '{not json'; "
            "return el.dataset.plot; }"
        )
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        page.evaluate(VISIT_PLOTS)
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-plot]')].every(el => "
            "el.dataset.rendered === '1')",
            timeout=120000,
        )
        failed = page.evaluate(
            "() => [...document.querySelectorAll('[data-plot].plot-failed')].map(el => "
            "[el.dataset.plot, el.textContent])"
        )
        assert len(failed) == 1 and failed[0][0] == broken, failed
        assert failed[0][1].startswith("This plot could not be drawn ("), failed
        drawn = page.evaluate(
            "() => document.querySelectorAll("
            "'[data-plot] .plot-container, [data-plot] img.snapshot').length"
        )
        total = page.evaluate("() => document.querySelectorAll('[data-plot]').length")
        assert drawn == total - 1, (drawn, total)
        assert any(f"plot {broken} not drawn" in text for text in problems), problems


def test_a_chart_of_names_draws_its_points_in_chromium(made_up_site):
    """'Bandwidth by placement of readers' has names on its x axis: every point is
    drawn (on a numeric axis Plotly drew none), on the across page and the fs page."""
    with served_page(made_up_site["home"]) as (page, root):
        page.goto(f"{root}/pages/across-Bandwidth-by-placement-of-readers.html")
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        page.evaluate(SCROLL)
        page.wait_for_function(RENDERED, arg=False, timeout=60000)
        drawn = page.evaluate(
            "() => [...document.querySelectorAll('[data-plot]')].map(el => "
            "[el.querySelectorAll('.scatterlayer .point').length, "
            "[...el.querySelectorAll('.xtick text')].map(t => t.textContent)])"
        )
        # 2 file systems x 2 operations x 2 placements
        assert drawn and sum(points for points, _ in drawn) == 8, drawn
        assert all(ticks == ["local", "one-to-many"] for _, ticks in drawn), drawn


def test_a_single_run_is_its_value_over_its_date_in_chromium(tmp_path):
    """One run so far: its headline is drawn over its date, one tick, not a dot on an
    axis of minutes."""
    db = tmp_path / "h.sqlite"
    conn = store.connect(db)
    cases = [
        make_case(
            "SynthDelete",
            {"scratch_target": "fastfs"},
            "gnu",
            "fastfs",
            {"delete_rate": (96000.0, "deletions/s", [])},
            title="Deletion (made up)",
            workload="nightly",
            declarations={
                "delete_rate": declared(
                    "Deletions per second", "deletions/s", headline="Delete files"
                )
            },
        )
    ]
    store.ingest_report(conn, make_report("only", START, cases, tag="nightly"))
    conn.close()
    pages.build(tmp_path / "pages", db_path=db)
    with served_page(tmp_path) as (page, root):
        page.goto(f"{root}/pages/fs-fastfs.html")
        page.wait_for_function(RENDERED, arg=True, timeout=60000)
        ticks = page.evaluate(
            "() => [...document.querySelector('.grid [data-plot]')"
            ".querySelectorAll('.xtick text')].map(t => t.textContent)"
        )
        assert ticks == [f"{units.date_time(START)} UTC"], ticks
        points = page.evaluate(
            "() => document.querySelector('.grid [data-plot]')"
            ".querySelectorAll('.scatterlayer .point').length"
        )
        assert points == 2, "the run and its latest-value mark"


def test_surface_value_axis_has_no_zero_and_room_above_in_chromium(made_up_site):
    """The 3-D value axis: no '0' tick on the corner where the size labels meet, and its
    top tick below the top of the axis (at the very top its label was cut)."""
    spec, _ = plots.surface_plots(
        "file size", "record size", {(1, 1): 4000.0, (2, 1): 8000.0}, "MiB/s"
    )
    zaxis = spec["layout"]["scene"]["zaxis"]
    assert zaxis["tickvals"] == [2000, 4000, 6000, 8000] and zaxis["range"][1] > 8000
    assert zaxis["ticktext"][-1] == "8,000"
    with served_page(made_up_site["home"]) as (page, root):
        page.goto(f"{root}/pages/fs-fastfs.html")
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        page.locator("[data-webgl]").first.scroll_into_view_if_needed()
        page.wait_for_function(
            "() => { const el = document.querySelector('[data-webgl]'); return "
            "el.dataset.rendered === '1' && el._fullLayout; }",
            timeout=120000,
        )
        axes = page.evaluate(
            "() => [...document.querySelectorAll('[data-webgl]')].filter(el => "
            "el._fullLayout).map(el => { const z = el._fullLayout.scene.zaxis; return "
            "[z.type, z.tickvals || [], z.range]; })"
        )
        linear = [a for a in axes if a[0] == "linear"]
        assert linear, axes
        for _, ticks, (bottom, top) in linear:
            assert ticks and 0 not in ticks and max(ticks) < top, (ticks, top)


def assert_banner_link_opens_its_chart(home):
    """Following the banner's link to a regression's chart opens its folded section and
    draws the chart on the reader's screen."""
    with served_page(home) as (page, root):
        page.goto(f"{root}/pages/index.html")
        page.locator(".banner li", has_text="Stage a data set").locator("a").click()
        anchor = page.evaluate("location.hash").lstrip("#")
        assert anchor.startswith("f-"), page.url
        figure = page.locator(f"figure:has(#{anchor})")
        page.wait_for_function(
            "(id) => { const el = document.getElementById(id).closest('figure')"
            ".querySelector('[data-plot]'); const box = el.getBoundingClientRect(); "
            "return el.closest('details').open && el.dataset.rendered === '1' && "
            "box.top < window.innerHeight && box.bottom > 0; }",
            arg=anchor,
            timeout=60000,
        )
        assert "Time to stage in" in figure.inner_text()
        assert "regression" in figure.inner_text()


def test_made_up_pages_render_in_chromium(made_up_site):
    shots = {
        "index.html": "pages-made-up-index.png",
        "fs-fastfs.html": "pages-made-up-fs.png",
        "compare.html": "pages-made-up-compare.png",
        "across-Re-read-throughput.html": "pages-made-up-across.png",
        "run-night11.html": "pages-made-up-run.png",
    }
    problems, links = browse(
        made_up_site["home"], shots, unfolded={"fs-fastfs.html": "pages-made-up-fs-unfolded.png"}
    )
    assert problems == []
    assert any("/results/runs/night11/output/" in link for link in links), (
        "run pages link each check's output directory"
    )
    assert_banner_link_opens_its_chart(made_up_site["home"])
    print(f"screenshots: {', '.join(str(ARTIFACTS / s) for s in shots.values())}")


# ---- after two real quick runs --------------------------------------------------------------
@pytest.fixture(scope="module")
def quick_site(quick_runs):
    """The pages built right after the two quick runs (conftest's quick_runs)."""
    # A check may fail on this noisy machine; the pages must show that, not hide it.
    for run in quick_runs:
        assert run["run_dir"] is not None, run["result"].stdout + run["result"].stderr
    pages = quick_runs[-1]["pages"]
    assert pages["verdict"].returncode in (0, 4), pages["verdict"].stderr
    assert pages["report"].returncode == 0, pages["report"].stderr
    return pages["dir"]


def test_note_with_markup_is_escaped(quick_site, quick_runs):
    run_page = (quick_site / f"run-{quick_runs[1]['run_dir'].name}.html").read_text()
    assert "&lt;script&gt;alert(" in run_page
    assert "<script>alert(" not in run_page
    assert "<script>alert(" not in (quick_site / "index.html").read_text()


def test_quick_run_pages_render_in_chromium(quick_site, quick_runs, sb_home):
    latest = quick_runs[1]["run_dir"].name
    index = text_of((quick_site / "index.html").read_text())
    figures = (
        sqlite3.connect(sb_home / "history.sqlite")
        .execute(
            "SELECT COUNT(*) FROM figures f JOIN cases c USING (case_id) WHERE c.run_id = ? "
            "AND f.value IS NOT NULL",
            (latest,),
        )
        .fetchone()[0]
    )
    # Two runs: nothing can be judged yet, and the banner says so instead of "all good".
    assert f"Nightly verdict for the latest run, {latest}" in index
    assert f"Could not be decided: {figures} of {figures} figures" in index
    # The figure with the fewest runs behind it says how many more nights are needed.
    verdict = json.loads((sb_home / "results" / "verdicts" / f"nightly-{latest}.json").read_text())
    needed = max(f.get("nights_needed", 0) for f in verdict["figures"])
    assert needed >= 6, "two runs: at least 6 more of the 8 a verdict needs"
    assert f"{needed} more nightly runs needed" in index
    # No file system is ranked after two quick runs: a headline waits for 3 more runs, or
    # was timed too briefly to rank at all (quick IOTest phases last milliseconds), which
    # the row says; which headlines wait depends on how long the rest of their phases ran.
    rankings = re.findall(
        r'<td class="ranking ([^"]+)">([^<]*)</td>', (quick_site / "index.html").read_text()
    )
    assert {status for status, _ in rankings} <= {
        "too-few-runs",
        "too-short",
        "alone",
        "not-ranked",
    }, rankings
    assert all(
        words.startswith("not decided yet: 3 more runs needed (so far ")
        for status, words in rankings
        if status == "too-few-runs"
    ), rankings
    assert any(status == "too-short" for status, _ in rankings), rankings
    assert "too short to trust: its timed phase lasted" in index
    for line in failures_of(quick_runs[1]).splitlines():
        # "FAILED:  <case in words> (<phase>): <reason>" -> shown on the index with its cause
        reason = line.split("): ", 1)[1].strip()
        assert reason[:40] in index, line
    # seed 004's comparison: every file system's surface of one IOzone pattern
    across = "across-Random-read-throughput.html"
    assert (quick_site / across).exists(), sorted(p.name for p in quick_site.glob("*.html"))
    assert f'href="{across}"' in (quick_site / "index.html").read_text()
    shots = {
        "index.html": "pages-quick-index.png",
        "fs-sanscratch.html": "pages-quick-fs.png",
        "compare.html": "pages-quick-compare.png",
        across: "pages-quick-across.png",
        f"run-{latest}.html": "pages-quick-run.png",
    }
    problems, links = browse(sb_home, shots, pages=quick_site.name)
    assert problems == []
    assert any(f"/results/runs/{latest}/output/" in link for link in links)
    print(f"screenshots: {', '.join(str(ARTIFACTS / s) for s in shots.values())}")


def test_quick_across_pages_tell_their_workloads_apart_while_folded(quick_site):
    """diskperf ran over 1 directory on the SAN and 2 on the node-local disk: two workloads
    of one check on one page, whose folded headings read the same until opened."""
    for page in quick_site.glob("across-*.html"):
        headings = re.findall(r"<summary><h2>(.*?)</h2></summary>", page.read_text())
        assert len(set(headings)) == len(headings), (page.name, headings)
    diskperf = text_of((quick_site / "across-Write-bandwidth-against-queue-depth.html").read_text())
    assert re.search(r"diskperf, seed 000\) \(1 directory, .*\(2 directories, ", diskperf), diskperf


def test_headings_told_apart_by_workload_then_tag():
    rows = [
        {"check": "C", "variant": "", "workload": "1 directory", "words": "quick runs"},
        {"check": "C", "variant": "", "workload": "2 directories", "words": "quick runs"},
        {"check": "C", "variant": "v", "workload": "1 directory", "words": "quick runs"},
        {"check": "C", "variant": "v", "workload": "1 directory", "words": "nightly runs"},
        {"check": "D", "variant": "", "workload": "1 directory", "words": "quick runs"},
    ]
    pages.distinct_headings(rows)
    assert [r["heading"] for r in rows] == [
        "C (1 directory)",
        "C (2 directories)",
        "C: v (1 directory), quick runs",
        "C: v (1 directory), nightly runs",
        "D",
    ]


def test_quick_pages_say_what_each_file_system_is(quick_site):
    """Node-local disk against the GlusterFS SAN, in the site config's words, on the index
    and on each file system's page (not two anonymous directories of one disk)."""
    index = text_of((quick_site / "index.html").read_text())
    san = text_of((quick_site / "fs-sanscratch.html").read_text())
    local = text_of((quick_site / "fs-localscratch.html").read_text())
    assert "Kind: san. GlusterFS SAN: 2 storage servers, each on a disk of its own" in san
    assert "every node reads and writes through its own client" in san
    assert "Kind: local-disk. node-local directory of each node" in local
    assert "GlusterFS SAN: 2 storage servers" in index and "node-local directory" in index
