#!/usr/bin/env python3
"""Benchmark (not a test): build the pages from a store of 1,000,000 figures, then again
after one more nightly run.

Targets (BRIEF section 8): the full build under 15 s, an incremental rebuild after one
more run under 2 s, a page open in a browser under 1 s.  Prints the figures; exits 0
whatever they are.

Shapes of the stored history:
  suite   what a nightly run of the suite stores on 4 targets (the default): bandwidth
          (4 access patterns), metadata (4 variants), a node-count sweep, staging, and a
          declared chart (bandwidth against queue depth, 3 block sizes), each in 2
          environments, with headline declarations: 418 figures per run.
  iotest  the shape of earlier versions of this benchmark: IOTest only, 128 figures per
          run (many more runs for the same number of figures).

    .venv/bin/python ci/benchmarks/report_build.py [--figures 1000000] [--shape suite]
        [--repeat 3] [--browser]
"""

import argparse
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
ACCESS = {"fpp-posix": "file per process, POSIX", "shared-posix": "one shared file, POSIX",
          "shared-mpiio": "one shared file, MPI-IO independent",
          "shared-mpiio-coll": "one shared file, MPI-IO collective"}
BANDWIDTH = {"write_bw": ("MiB/s", "higher", "Large sequential write"),
             "read_bw": ("MiB/s", "higher", "Large sequential read"),
             "write_bw_worst": ("MiB/s", "higher", ""), "open_close_share": ("%", "lower", "")}
METADATA = {"create_rate": ("ops/s", "higher", "Create empty files"),
            "open_close_rate": ("ops/s", "higher", "Open and close existing files"),
            "stat_rate": ("ops/s", "higher", ""),
            "delete_rate": ("deletions/s", "higher", "Delete files"),
            "delete_rate_worst": ("deletions/s", "higher", "")}
STAGING = {"stage_in_bw": ("MiB/s", "higher", "Stage a data set into scratch"),
           "stage_out_bw": ("MiB/s", "higher", "Copy results home from scratch"),
           "stage_in_byte_bw": ("MiB/s", "higher", ""),
           "stage_out_byte_bw": ("MiB/s", "higher", ""),
           "stage_in_file_rate": ("files/s", "higher", ""),
           "stage_out_file_rate": ("files/s", "higher", "")}


def declared(meaning, lead=True, chart=None):
    unit, better, headline = meaning
    return {"unit": unit, "label": "label of the figure", "better": better,
            "headline": headline if lead else "", "chart": chart}


def figures_of(rng, table, lead=True, scale=1.0):
    values = {m: (float(rng.normal(1000 * scale, 50)) if u != "%" else
                  float(rng.normal(5, 0.5)), u, []) for m, (u, _, _) in table.items()}
    return values, {m: declared(meaning, lead) for m, meaning in table.items()}


def suite_cases(rng):
    cases = []
    for t in TARGETS:
        for env in ENVIRONS:
            for access, words in ACCESS.items():
                figs, decl = figures_of(rng, BANDWIDTH, lead=access == "fpp-posix")
                cases.append(make_case("KernelIOTest", {"scratch_target": t, "access": access},
                                       env, t, figs, declarations=decl, variant=words,
                                       title="Bandwidth (IOTest, seed 002)"))
            for layout in ("shared-dir", "dir-per-rank"):
                for removers in (1, 4):
                    figs, decl = figures_of(rng, METADATA,
                                            lead=layout == "shared-dir" and removers == 1)
                    cases.append(make_case(
                        "KernelMetadata", {"scratch_target": t, "directory_layout": layout,
                                           "parallel_removers": removers}, env, t, figs,
                        declarations=decl, variant=f"{layout}, {removers} removers",
                        title="Open/close at scale and deletion cost (seed 002)"))
            for nodes in (1, 2, 4):
                figs, decl = figures_of(rng, BANDWIDTH, lead=False, scale=nodes)
                cases.append(make_case("KernelNodeSweep", {"scratch_target": t,
                                                           "node_count": nodes}, env, t, figs,
                                       declarations=decl, variant=f"{nodes} nodes",
                                       scaling_parameter="node_count", nodes=nodes,
                                       title="Node-count sweep"))
            charted, decl = {}, {}
            for block in (4, 64, 1024):
                for depth in (1, 2, 4, 8, 16, 32):
                    name = f"read_bw_{block}k_qd{depth}"
                    charted[name] = (float(rng.normal(block * depth ** 0.5, 5)), "MiB/s", [])
                    decl[name] = declared(("MiB/s", "higher", ""), chart={
                        "title": "Read bandwidth against queue depth", "kind": "lines",
                        "x": ["queue depth", depth], "line": f"{block} KiB blocks"})
            if env == ENVIRONS[0]:
                cases.append(make_case("KernelDiskperf", {"scratch_target": t}, env, t,
                                       charted, declarations=decl, title="diskperf"))
        figs, decl = figures_of(rng, STAGING)
        cases.append(make_case("StageInOut", {"scratch_target": t}, "builtin", t, figs,
                               declarations=decl, title="Staging (seed 004)"))
    return cases


def iotest_cases(rng):
    metrics = {"write_bw": "MiB/s", "read_bw": "MiB/s", "write_bw_worst": "MiB/s",
               "open_close_share": "%"}
    return [("KernelIOTest", {"scratch_target": t, "access": a}, env, t,
             {m: (float(rng.normal(1000, 50)) if u != "%" else float(rng.normal(5, 0.5)), u, [])
              for m, u in metrics.items()})
            for t in TARGETS for a in ACCESS for env in ENVIRONS]


SHAPES = {"suite": suite_cases, "iotest": iotest_cases}


def per_run(shape):
    return sum(len(c[4]) if isinstance(c, tuple) else len(c["perfvalues"])
               for c in SHAPES[shape](np.random.default_rng(0)))


def add_run(conn, shape, i, rng):
    store.ingest_report(conn, make_report(f"bench{i:05d}", 1_700_000_000 + 86400 * i,
                                          SHAPES[shape](rng)))


def fill(db, figures, shape):
    runs = max(1, figures // per_run(shape))
    rng = np.random.default_rng(1)
    conn = store.connect(db)
    for i in range(runs):
        add_run(conn, shape, i, rng)
    total = conn.execute("SELECT COUNT(*) FROM figures").fetchone()[0]
    conn.close()
    return runs, total


def page_load_times(out):
    from playwright.sync_api import sync_playwright

    times = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        # Warm up: starting the browser and compiling plotly.min.js the first time is not
        # what a user waits for when moving between pages.
        page.goto((out / "compare.html").as_uri())
        for name in ("index.html", f"fs-{TARGETS[0]}.html", "compare.html"):
            t0 = time.monotonic()
            page.goto((out / name).as_uri())
            page.wait_for_function("() => [...document.querySelectorAll('[data-plot]')]"
                                   ".slice(0, 1).every(el => el.dataset.rendered === '1')")
            times[name] = time.monotonic() - t0
        browser.close()
    return times


def spread(values):
    return (f"median {statistics.median(values):.2f} s (min {min(values):.2f}, "
            f"max {max(values):.2f}, {len(values)} builds)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=int, default=1_000_000)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="suite")
    parser.add_argument("--repeat", type=int, default=3,
                        help="incremental rebuilds to time (one more run each)")
    parser.add_argument("--browser", action="store_true",
                        help="also time page loads in headless Chromium")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sb-report-bench-"))
    db, out = work / "history.sqlite", work / "pages"
    try:
        t0 = time.monotonic()
        runs, total = fill(db, args.figures, args.shape)
        print(f"store: {total} figures in {runs} runs ({per_run(args.shape)} per run, shape "
              f"{args.shape}), filled in {time.monotonic() - t0:.1f} s")
        written, figures, seconds = pages.build(out, db_path=db)
        size = sum(p.stat().st_size for p in out.glob("*.html")) / 2**20
        print(f"full build: {written} pages from {figures} figures in {seconds:.2f} s "
              f"(target < 15 s); HTML {size:.1f} MiB")
        incremental = []
        rng = np.random.default_rng(2)
        for i in range(args.repeat):
            conn = store.connect(db)
            add_run(conn, args.shape, runs + i, rng)
            conn.close()
            written, figures, seconds = pages.build(out, db_path=db)
            incremental.append(seconds)
        print(f"incremental build after one more run: {written} pages, "
              f"{spread(incremental)} (target < 2 s)")
        if args.browser:
            for name, t in page_load_times(out).items():
                print(f"page load: {name} {t:.2f} s to the first plots (target < 1 s)")
    finally:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
