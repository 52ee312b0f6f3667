#!/usr/bin/env python3
"""Benchmark (not a test): build the pages from a store of 1,000,000 figures, then again
after one more nightly run, and time each page kind's first screen in Chromium.

Targets (BRIEF section 8): the full build of 1,000,000 figures under 5 s, an incremental
rebuild after one more night under 1 s on a history shaped like the suite's real figures,
every page's first screen drawn in a browser under 1 s.  Prints the figures; exits 0
whatever they are.

Shapes of the stored history:
  suite   what a nightly run of the suite stores on 4 targets (the default): bandwidth
          (4 access patterns), metadata (4 variants), a node-count sweep, staging, and a
          declared chart (bandwidth against queue depth, 3 block sizes), each in 2
          environments, with headline declarations: 418 figures per run.
  iotest  the shape of earlier versions of this benchmark: IOTest only, 128 figures per
          run (many more runs for the same number of figures).
  --from-run DIR
          a real run of the suite (results/runs/<id>/ with its report.json) replayed
          --nights times, each figure with independent noise (CV 8%): the real shape
          (every check, chart, surface and headline the suite declares) for the
          incremental rebuild and the first screens.

    .venv/bin/python ci/benchmarks/report_build.py [--figures 1000000] [--shape suite]
        [--repeat 3] [--browser] [--from-run DIR --nights 31]
"""

import argparse
import copy
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from reports import pages, store
from reports.synthetic import make_case, make_report

TARGETS = ["lustre", "gpfs", "nfs", "localscratch"]
ENVIRONS = ("gnu-openmpi", "gnu-mpich")
ACCESS = {
    "fpp-posix": "file per process, POSIX",
    "shared-posix": "one shared file, POSIX",
    "shared-mpiio": "one shared file, MPI-IO independent",
    "shared-mpiio-coll": "one shared file, MPI-IO collective",
}
BANDWIDTH = {
    "write_bw": ("MiB/s", "higher", "Sequential write"),
    "read_bw": ("MiB/s", "higher", "Sequential read"),
    "write_bw_worst": ("MiB/s", "higher", ""),
    "open_close_share": ("%", "lower", ""),
}
METADATA = {
    "create_rate": ("ops/s", "higher", "Create empty files"),
    "open_close_rate": ("ops/s", "higher", "Open and close existing files"),
    "stat_rate": ("ops/s", "higher", ""),
    "delete_rate": ("deletions/s", "higher", "Delete files"),
    "delete_rate_worst": ("deletions/s", "higher", ""),
}
STAGING = {
    "stage_in_bw": ("MiB/s", "higher", "Stage a data set into scratch"),
    "stage_out_bw": ("MiB/s", "higher", "Copy results home from scratch"),
    "stage_in_byte_bw": ("MiB/s", "higher", ""),
    "stage_out_byte_bw": ("MiB/s", "higher", ""),
    "stage_in_file_rate": ("files/s", "higher", ""),
    "stage_out_file_rate": ("files/s", "higher", ""),
}


def declared(meaning, lead=True, chart=None):
    unit, better, headline = meaning
    return {
        "unit": unit,
        "label": "label of the figure",
        "better": better,
        "headline": headline if lead else "",
        "chart": chart,
    }


def figures_of(rng, table, lead=True, scale=1.0):
    values = {
        m: (float(rng.normal(1000 * scale, 50)) if u != "%" else float(rng.normal(5, 0.5)), u, [])
        for m, (u, _, _) in table.items()
    }
    return values, {m: declared(meaning, lead) for m, meaning in table.items()}


def suite_cases(rng):
    cases = []
    for t in TARGETS:
        for env in ENVIRONS:
            for access, words in ACCESS.items():
                figs, decl = figures_of(rng, BANDWIDTH, lead=access == "fpp-posix")
                cases.append(
                    make_case(
                        "KernelIOTest",
                        {"scratch_target": t, "access": access},
                        env,
                        t,
                        figs,
                        declarations=decl,
                        variant=words,
                        title="Bandwidth (IOTest, seed 002)",
                    )
                )
            for layout in ("shared-dir", "dir-per-rank"):
                for removers in (1, 4):
                    figs, decl = figures_of(
                        rng, METADATA, lead=layout == "shared-dir" and removers == 1
                    )
                    cases.append(
                        make_case(
                            "KernelMetadata",
                            {
                                "scratch_target": t,
                                "directory_layout": layout,
                                "parallel_removers": removers,
                            },
                            env,
                            t,
                            figs,
                            declarations=decl,
                            variant=f"{layout}, {removers} removers",
                            title="Open/close at scale and deletion cost (seed 002)",
                        )
                    )
            for nodes in (1, 2, 4):
                figs, decl = figures_of(rng, BANDWIDTH, lead=False, scale=nodes)
                cases.append(
                    make_case(
                        "KernelNodeSweep",
                        {"scratch_target": t, "node_count": nodes},
                        env,
                        t,
                        figs,
                        declarations=decl,
                        variant=f"{nodes} nodes",
                        scaling_parameter="node_count",
                        nodes=nodes,
                        title="Node-count sweep",
                    )
                )
            charted, decl = {}, {}
            for block in (4, 64, 1024):
                for depth in (1, 2, 4, 8, 16, 32):
                    name = f"read_bw_{block}k_qd{depth}"
                    charted[name] = (float(rng.normal(block * depth**0.5, 5)), "MiB/s", [])
                    decl[name] = declared(
                        ("MiB/s", "higher", ""),
                        chart={
                            "title": "Read bandwidth against queue depth",
                            "kind": "lines",
                            "x": ["queue depth", depth],
                            "line": f"{block} KiB blocks",
                        },
                    )
            if env == ENVIRONS[0]:
                cases.append(
                    make_case(
                        "KernelDiskperf",
                        {"scratch_target": t},
                        env,
                        t,
                        charted,
                        declarations=decl,
                        title="diskperf",
                    )
                )
        figs, decl = figures_of(rng, STAGING)
        cases.append(
            make_case(
                "StageInOut",
                {"scratch_target": t},
                "builtin",
                t,
                figs,
                declarations=decl,
                title="Staging (seed 004)",
            )
        )
    return cases


def iotest_cases(rng):
    metrics = {
        "write_bw": "MiB/s",
        "read_bw": "MiB/s",
        "write_bw_worst": "MiB/s",
        "open_close_share": "%",
    }
    return [
        (
            "KernelIOTest",
            {"scratch_target": t, "access": a},
            env,
            t,
            {
                m: (float(rng.normal(1000, 50)) if u != "%" else float(rng.normal(5, 0.5)), u, [])
                for m, u in metrics.items()
            },
        )
        for t in TARGETS
        for a in ACCESS
        for env in ENVIRONS
    ]


SHAPES = {"suite": suite_cases, "iotest": iotest_cases}


def per_run(shape):
    return sum(
        len(c[4]) if isinstance(c, tuple) else len(c["perfvalues"])
        for c in SHAPES[shape](np.random.default_rng(0))
    )


def add_run(conn, shape, i, rng):
    store.ingest_report(
        conn, make_report(f"bench{i:05d}", 1_700_000_000 + 86400 * i, SHAPES[shape](rng))
    )


def fill(db, figures, shape):
    runs = max(1, figures // per_run(shape))
    rng = np.random.default_rng(1)
    conn = store.connect(db)
    for i in range(runs):
        add_run(conn, shape, i, rng)
    total = conn.execute("SELECT COUNT(*) FROM figures").fetchone()[0]
    conn.close()
    return runs, total


#: the first screen of a page is drawn: the document parsed, and every plot whose top is
#: on the screen (outside a closed fold) drawn by Plotly or shown as its picture
FIRST_SCREEN = """() => document.readyState !== 'loading' &&
    [...document.querySelectorAll('[data-plot]')].every(el =>
        el.closest('details:not([open])') || el.getBoundingClientRect().top > innerHeight ||
        el.dataset.rendered === '1')"""
#: plots on the first screen (drawn or not), and plots open anywhere on the page
PLOT_COUNTS = """() => { const open = [...document.querySelectorAll('[data-plot]')].filter(
    el => !el.closest('details:not([open])'));
    return [open.filter(el => el.getBoundingClientRect().top < innerHeight).length,
            open.length]; }"""


def page_kinds(out):
    """One page of each kind: {kind: file name}; the across pages of surfaces and of
    lines are two kinds (3-D plots need the full plotly bundle)."""
    kinds = {}
    for path in sorted(out.glob("*.html")):
        kind = path.name.split("-", 1)[0].removesuffix(".html")
        if kind == "across":
            kind += "-surfaces" if "data-webgl" in path.read_text() else "-lines"
        kinds.setdefault(kind, path.name)
    return kinds


def first_screen_times(out, repeat=3):
    """{kind: (page, [seconds from navigation to its first screen drawn], plots on the
    first screen, plots open)} in headless Chromium, a 1300x900 window."""
    from playwright.sync_api import sync_playwright

    times = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        # Warm up: starting the browser and compiling the plotly bundles the first time
        # is not what a reader waits for when moving between pages.
        kinds = page_kinds(out)
        for name in kinds.values():
            page.goto((out / name).as_uri())
            page.wait_for_function(FIRST_SCREEN, timeout=120000)
        for kind, name in kinds.items():
            seconds = []
            for _ in range(repeat):
                page.goto((out / name).as_uri(), wait_until="commit")
                page.wait_for_function(FIRST_SCREEN, polling="raf", timeout=120000)
                seconds.append(page.evaluate("performance.now()") / 1000)
            times[kind] = (name, seconds, *page.evaluate(PLOT_COUNTS))
        browser.close()
    return times


def replay_run(run_dir, nights, db, seed=3):
    """Store a real run's report `nights` times, a day apart, every figure with
    independent noise (CV 8%); returns the store's figure count."""
    report = json.loads((Path(run_dir) / "report.json").read_text())
    rng = np.random.default_rng(seed)
    conn = store.connect(db)
    for night in range(nights):
        add_replayed_night(conn, report, night, rng)
    total = conn.execute("SELECT COUNT(*) FROM figures").fetchone()[0]
    conn.close()
    return total


def add_replayed_night(conn, report, night, rng):
    again = copy.deepcopy(report)
    info = again["session_info"]
    shift = 86400 * (night + 1)
    info["uuid"] = f"replay-{night:04d}-{info.get('uuid')}"
    info["time_start_unix"] = (info.get("time_start_unix") or 0) + shift
    info["time_end_unix"] = (info.get("time_end_unix") or 0) + shift
    info.setdefault("extras", {})["scratchbench_run"] = f"replay{night:04d}"
    for run in again.get("runs", []):
        for case in run.get("testcases", []):
            if case.get("job_completion_time_unix"):
                case["job_completion_time_unix"] += shift
            for values in (case.get("perfvalues") or {}).values():
                if isinstance(values[0], (int, float)):
                    values[0] = float(values[0]) * max(0.05, 1 + 0.08 * rng.standard_normal())
    store.ingest_report(conn, again, source="")


def spread(values):
    return (
        f"median {statistics.median(values):.2f} s (min {min(values):.2f}, "
        f"max {max(values):.2f}, {len(values)} builds)"
    )


def incremental(out, db, add, repeat):
    """Seconds of each rebuild after one more night (add(conn, i) stores it)."""
    seconds = []
    for i in range(repeat):
        conn = store.connect(db)
        add(conn, i)
        conn.close()
        written, _, took = pages.build(out, db_path=db)
        seconds.append(took)
    return written, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=int, default=1_000_000)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="suite")
    parser.add_argument(
        "--repeat", type=int, default=3, help="incremental rebuilds to time (one more run each)"
    )
    parser.add_argument(
        "--browser",
        action="store_true",
        help="also time each page kind's first screen in headless Chromium",
    )
    parser.add_argument(
        "--from-run",
        metavar="DIR",
        help="a real run directory (with report.json) to replay as the real-shaped history",
    )
    parser.add_argument(
        "--nights", type=int, default=31, help="nights of the real-shaped history (with --from-run)"
    )
    args = parser.parse_args()
    if args.from_run and not (Path(args.from_run) / "report.json").is_file():
        parser.error(
            f"--from-run {args.from_run}: no report.json there (expected a run "
            "directory, results/runs/<id>/)"
        )
    work = Path(tempfile.mkdtemp(prefix="sb-report-bench-"))
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} at the start")
    try:
        db, out = work / "history.sqlite", work / "pages"
        t0 = time.monotonic()
        runs, total = fill(db, args.figures, args.shape)
        print(
            f"store: {total:,} figures in {runs} runs ({per_run(args.shape)} per run, shape "
            f"{args.shape}), filled in {time.monotonic() - t0:.1f} s"
        )
        written, figures, seconds = pages.build(out, db_path=db)
        size = sum(p.stat().st_size for p in out.glob("*.html")) / 2**20
        print(
            f"full build: {written} pages from {figures:,} figures in {seconds:.2f} s "
            f"(target < 5 s); HTML {size:.1f} MiB"
        )
        rng = np.random.default_rng(2)
        written, took = incremental(
            out, db, lambda conn, i: add_run(conn, args.shape, runs + i, rng), args.repeat
        )
        print(
            f"incremental build after one more run ({args.shape} shape): {written} pages, "
            f"{spread(took)} (target < 1 s)"
        )
        if args.from_run:
            db, out = work / "real.sqlite", work / "real-pages"
            report = json.loads((Path(args.from_run) / "report.json").read_text())
            total = replay_run(args.from_run, args.nights, db)
            written, figures, seconds = pages.build(out, db_path=db)
            print(
                f"real-shaped history: {total:,} figures in {args.nights} nights of "
                f"{args.from_run}; full build {written} pages in {seconds:.2f} s"
            )
            noise = np.random.default_rng(4)
            written, took = incremental(
                out,
                db,
                lambda conn, i: add_replayed_night(conn, report, args.nights + i, noise),
                args.repeat,
            )
            print(
                f"incremental build after one more night (real shape): {written} pages, "
                f"{spread(took)} (target < 1 s)"
            )
        if args.browser:
            print(
                f"first screens of {out} (load average "
                f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}):"
            )
            for kind, (name, seconds, on_screen, open_) in first_screen_times(out).items():
                print(
                    f"  {kind:16s} {statistics.median(seconds):.2f} s (min {min(seconds):.2f},"
                    f" max {max(seconds):.2f}) {name}: {on_screen} plots on the first "
                    f"screen, {open_} open (target < 1 s)"
                )
    finally:
        shutil.rmtree(work)
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
