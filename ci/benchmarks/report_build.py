#!/usr/bin/env python3
"""Benchmark (not a test): build the pages from a store of 100,000 figures.

Target (BRIEF section 8): under 10 s for the build, under 1 s for a page to load in a
browser.  Prints the figures; exits 0 whatever they are.

    .venv/bin/python ci/benchmarks/report_build.py [--figures 100000] [--browser]
"""

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from reports import pages, store
from reports.synthetic import make_report

TARGETS = ["lustre", "gpfs", "nfs", "localscratch"]
ACCESS = ["fpp-posix", "shared-posix", "shared-mpiio", "shared-mpiio-coll"]
METRICS = {"write_bw": "MiB/s", "read_bw": "MiB/s", "write_bw_worst": "MiB/s",
           "open_close_share": "%"}


def fill(db, figures):
    """runs x (targets x access x environments x metrics) figures."""
    per_run = len(TARGETS) * len(ACCESS) * 2 * len(METRICS)
    runs = figures // per_run
    rng = np.random.default_rng(1)
    conn = store.connect(db)
    for i in range(runs):
        cases = []
        for t in TARGETS:
            for a in ACCESS:
                for env in ("gnu-openmpi", "gnu-mpich"):
                    figs = {m: (float(rng.normal(1000, 50)) if u != "%" else
                                float(rng.normal(5, 0.5)), u, []) for m, u in METRICS.items()}
                    cases.append(("KernelIOTest", {"scratch_target": t, "access": a}, env, t, figs))
        store.ingest_report(conn, make_report(f"bench{i:05d}", 1_700_000_000 + 86400 * i,
                                              cases))
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=int, default=100_000)
    parser.add_argument("--browser", action="store_true",
                        help="also time page loads in headless Chromium")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sb-report-bench-"))
    try:
        t0 = time.monotonic()
        runs, total = fill(work / "history.sqlite", args.figures)
        print(f"store: {total} figures in {runs} runs, filled in {time.monotonic() - t0:.1f} s")
        written, figures, seconds = pages.build(work / "pages", db_path=work / "history.sqlite")
        size = sum(p.stat().st_size for p in (work / "pages").glob("*.html")) / 2**20
        print(f"report build: {written} pages from {figures} figures in {seconds:.2f} s "
              f"(target < 10 s); HTML {size:.1f} MiB")
        if args.browser:
            for name, t in page_load_times(work / "pages").items():
                print(f"page load: {name} {t:.2f} s to the first plots (target < 1 s)")
    finally:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
