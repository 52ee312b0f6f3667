#!/usr/bin/env python3
"""Benchmark (not a test): how long a timed phase must last for its figure to hold still.

README's "Phases long enough to time" marks a figure timed in a phase shorter than
SHORTEST_TRUSTED_PHASE_S (scratchbench/figures.py) as too short to trust.  This is the
evidence for that number: the kernel's metadata mode (create, open, stat, remove) and its
IOTest mode (1 MiB transfers, write then read, caches dropped between) at growing sizes,
--reps repetitions of each, --np ranks, on --dir.  For every phase of every size: its
length (the phase clock on the slowest rank, the shortest repetition, as the store keeps
it) and the spread of its figure over the repetitions (max/min, and the coefficient of
variation).  Printed by band of length: how many phases, the median and 90th percentile
of max/min and of the CV, and the worst max/min.  The rule is sound where the spread has
stopped falling with length.  Exits 0 whatever the figures are.

    .venv/bin/python ci/benchmarks/phase_length.py --dir /var/tmp/sb-bench [--reps 7] [--np 2]
"""

import argparse
import json
import math
import shutil
import statistics
import tempfile
from pathlib import Path

from pairs import build_kernel, load_average, sh

from scratchbench.figures import SHORTEST_TRUSTED_PHASE_S

#: files per rank of the metadata runs, and 1 MiB transfers per rank of the IOTest runs
METADATA_FILES = (100, 300, 1000, 3000, 10000, 30000)
IOTEST_TRANSFERS = (1, 4, 16, 64, 256)


def phases_of(report, clock, key):
    """{phase: ([length per repetition], [figure per repetition])} of a kernel report."""
    out = {}
    for rep in report["repetitions"]:
        for name, phase in rep["phases"].items():
            length = (phase.get("time_s") or {}).get(clock, {}).get("max")
            if length and phase.get(key):
                lengths, values = out.setdefault(name, ([], []))
                lengths.append(length)
                values.append(phase[key])
    return out


def measure(kernel, where, np, reps):
    """[(mode, size, phase, shortest length, max/min, cv)] of every run."""
    rows = []
    mpirun = ["mpirun.openmpi", "--oversubscribe", "--bind-to", "none", "-np", str(np)]
    runs = [
        ("metadata", n, ["metadata", "--files", str(n)], "time", "rate_ops") for n in METADATA_FILES
    ]
    runs += [
        (
            "iotest",
            n,
            [
                "iotest",
                "--nr",
                "131072",
                "--nc",
                str(n),
                "--iread",
                "2",
                "--layout",
                "fpp",
                "--api",
                "posix",
                "--fadvise",
            ],
            "total",
            "bandwidth_min_Bps",
        )
        for n in IOTEST_TRANSFERS
    ]
    for mode, size, args, clock, key in runs:
        out = Path(where) / "report.json"
        sh([*mpirun, kernel, *args, "--dir", where, "--reps", str(reps), "--output", out])
        for name, (lengths, values) in phases_of(json.loads(out.read_text()), clock, key).items():
            if len(values) > 1:
                rows.append(
                    (
                        mode,
                        size,
                        name,
                        min(lengths),
                        max(values) / min(values),
                        statistics.stdev(values) / statistics.mean(values),
                    )
                )
        print(
            f"  {mode} {size:>6}: phases of "
            + ", ".join(
                f"{name} {min(ls) * 1000:.3g} ms"
                for name, (ls, _) in phases_of(json.loads(out.read_text()), clock, key).items()
            ),
            flush=True,
        )
    return rows


def quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def print_phases(rows):
    """Each phase kind by size: its length and its spread, side by side."""
    kinds = {}
    for mode, size, name, length, ratio, cv in rows:
        kinds.setdefault((mode, name), []).append((size, length, ratio, cv))
    for (mode, name), points in sorted(kinds.items()):
        print(
            f"  {mode} {name:<7} "
            + "  ".join(f"{length * 1000:.3g} ms x{ratio:.2f}" for _, length, ratio, _ in points)
        )


def print_bands(rows):
    """Spread by band of phase length (half a decade each)."""
    bands = {}
    for row in rows:
        bands.setdefault(math.floor(math.log10(row[3]) * 2) / 2, []).append(row)
    print(
        f"{'phase length':>18} {'phases':>6} {'max/min median':>14} {'p90':>6} "
        f"{'worst':>6} {'cv median':>9} {'p90':>6}"
    )
    for band in sorted(bands):
        ratios = [r[4] for r in bands[band]]
        cvs = [r[5] for r in bands[band]]
        low, high = 10**band, 10 ** (band + 0.5)
        words = f"{low * 1000:.3g}-{high * 1000:.3g} ms" if high < 1 else f"{low:.3g}-{high:.3g} s"
        print(
            f"{words:>18} {len(ratios):>6} {statistics.median(ratios):>14.2f} "
            f"{quantile(ratios, 0.9):>6.2f} {max(ratios):>6.2f} "
            f"{statistics.median(cvs) * 100:>8.1f}% {quantile(cvs, 0.9) * 100:>5.1f}%"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dir",
        default="/var/tmp/sb-bench",
        help="directory on the file system to measure (created if missing)",
    )
    parser.add_argument("--reps", type=int, default=7, help="repetitions of each size")
    parser.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    args = parser.parse_args()
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    work = tempfile.mkdtemp(prefix="sb-phase-", dir=args.dir)
    try:
        kernel = build_kernel(Path(work) / "build")
        print(
            f"phase length against spread on {args.dir}, {args.np} ranks, {args.reps} "
            f"repetitions; {load_average()}",
            flush=True,
        )
        rows = measure(kernel, work, args.np, args.reps)
        print("by phase, growing sizes: shortest length and max/min over the repetitions")
        print_phases(rows)
        print_bands(rows)
        print(
            f"rule: a phase under {SHORTEST_TRUSTED_PHASE_S:g} s is too short to trust; "
            f"{load_average()}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
