#!/usr/bin/env python3
"""Benchmark (not a test): scratchbench-kernel against fio, IOR and mdtest on the same work.

Streaming (BRIEF section 8: kernel >= 0.95 x fio direct I/O, >= 1.0 x IOR): file per
process, 1 MiB transfers, O_DIRECT, GIB per rank, no data verification (fio and IOR do not
check what they read).  Every tool runs the same two jobs: a write job (fresh file, no
preallocation: fio --fallocate=none; fsync at the end, inside the timing), then, after the
files' page cache is dropped (sync, then POSIX_FADV_DONTNEED on each), a separate read
job of the file the write job left.  The kernel reads with --iread 1 --existing, IOR with
-r on the -k kept file, fio with a second job.  Bandwidth includes open and close for the
kernel and IOR (IOTest's and IOR's definition) and excludes them for fio.

Metadata (kernel >= 1.0 x mdtest): the kernel's default path lookup (every call gets the
full path) against mdtest -F -u: the same files per rank, one directory per rank, the same
number of path components (asserted), the same ranks, phases create, open (mdtest's "File
read": open and close), stat, remove; no neighbour shift on either side.  Files per rank
are chosen so phases last about a second or more (printed).

MPI jobs run unbound (mpirun --bind-to none), as fio does.  The kernel's I/O buffers sit
on transparent huge pages, and so do fio's by default (--fio-iomem auto: mmaphuge, the
hugetlb pages reserved as root): fio's default 4 KiB pages, when scattered in physical
memory, have each 1 MiB request split in two on a device taking fewer segments per request
(virtio-blk: 254; count them with perf stat -e block:block_split), which makes fio's figure
depend on the memory's state and the two tools send the device different requests.

Rounds are interleaved (the tools' order rotates), so drift hits every tool alike; a round
gives one pair kernel/tool per figure.  Printed: each tool's min/median/max, the ratio as
the geometric mean of the pairs' ratios with its 95% bootstrap interval, and a check that
bytes and operations moved are equal.  Under each streaming ratio, a line from the block
device's own statistics (/sys/dev/block/M:m/stat, read around every job): each tool's
median device milliseconds per MiB and KiB per request, and the ratio again without the
pairs where either run met a slow device (its device time per MiB over 1.5x the median of
every run of both tools: a stall of the disk under the guest, outside either tool, which
the tools' equal requests show); --json keeps every round's figures and device records.
IOR and mdtest come from --ior-bin or PATH; this repository never builds them.  Exits 0
whatever the figures are.

    .venv/bin/python ci/benchmarks/kernel_vs_tools.py --dir /var/tmp/sb-bench \\
        [--ior-bin /work/tools/ior/bin] [--rounds 5] [--json FILE]
"""

import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from pairs import (
    device_line,
    device_watch,
    goal_verdict,
    load_average,
    pair_arguments,
    ratio_interval,
    sh,
    spread,
    start,
    write_rounds,
)

from reframe_checks.lib.parsers import parse_ior_json, parse_mdtest
from scratchbench.units import MIB


def mpirun(np):
    # Unbound, as fio runs: Open MPI's default binding pins rank 0 to core 0, away from
    # the core the disk interrupts (see iozone_vs_fio.py), which halves small requests.
    return ["mpirun.openmpi", "--oversubscribe", "--bind-to", "none", "-np", str(np)]


def drop_caches(work):
    """Write back and drop the page cache of the files under `work` (POSIX_FADV_DONTNEED),
    and only theirs: dropping every cache would have each tool's programs and libraries
    read back from the disk inside the device's record of its job."""
    os.sync()
    for path in Path(work).rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


# ---- streaming: each returns {"write": MiB/s, "read": MiB/s, "bytes": {...}} ----
def kernel_stream(kernel, directory, np, mib):
    common = ["--nr", "131072", "--nc", str(mib), "--direct", "--no-verify"]
    work = Path(tempfile.mkdtemp(dir=directory, prefix="kernel."))
    try:
        drop_caches(work)
        with device_watch(directory) as wdev:
            w = json.loads(
                sh(
                    mpirun(np)
                    + [kernel, "iotest", "--dir", work, *common, "--iread", "0", "--keep"]
                )
            )
        drop_caches(work)
        with device_watch(directory) as rdev:
            r = json.loads(
                sh(
                    mpirun(np)
                    + [
                        kernel,
                        "iotest",
                        *common,
                        "--iread",
                        "1",
                        "--existing",
                        w["filesystem"]["run_dir"],
                    ]
                )
            )
        wp, rp = w["repetitions"][0]["phases"]["write"], r["repetitions"][0]["phases"]["read"]
        return {
            "write": wp["bandwidth_min_Bps"] / MIB,
            "read": rp["bandwidth_min_Bps"] / MIB,
            "bytes": {"write": wp["bytes"], "read": rp["bytes"]},
            "device": {"write": wdev.get("write"), "read": rdev.get("read")},
        }
    finally:
        shutil.rmtree(work)


def fio_stream(directory, np, mib, iomem="malloc"):
    work = Path(tempfile.mkdtemp(dir=directory, prefix="fio."))
    try:
        result = {"bytes": {}, "device": {}}
        for rw in ("write", "read"):
            drop_caches(work)
            extra = ["--end_fsync=1"] if rw == "write" else []
            with device_watch(directory) as dev:
                out = sh(
                    [
                        "fio",
                        "--name=bench",
                        f"--directory={work}",
                        f"--rw={rw}",
                        "--bs=1m",
                        f"--size={mib}m",
                        f"--numjobs={np}",
                        "--direct=1",
                        "--ioengine=psync",
                        "--fallocate=none",
                        f"--iomem={iomem}",
                        *extra,
                        "--group_reporting",
                        "--output-format=json",
                    ]
                )
            result["device"][rw] = dev.get(rw)
            job = json.loads(out)["jobs"][0][rw]
            result[rw] = job["bw_bytes"] / MIB
            result["bytes"][rw] = job["io_bytes"]
        return result
    finally:
        shutil.rmtree(work)


def ior_stream(ior, directory, np, mib):
    work = Path(tempfile.mkdtemp(dir=directory, prefix="ior."))
    try:
        result = {"bytes": {}, "device": {}}
        for op, flags in (("write", ["-w", "-e", "-k"]), ("read", ["-r"])):
            summary = work / f"{op}.json"
            drop_caches(work)
            with device_watch(directory) as dev:
                sh(
                    mpirun(np)
                    + [
                        ior,
                        "-a",
                        "POSIX",
                        "--posix.odirect",
                        "-F",
                        "-t",
                        "1m",
                        "-b",
                        f"{mib}m",
                        *flags,
                        "-i",
                        "1",
                        "-o",
                        work / "file",
                        "-O",
                        "summaryFormat=JSON",
                        "-O",
                        f"summaryFile={summary}",
                    ]
                )
            result["device"][op] = dev.get(op)
            fig = parse_ior_json(summary.read_text())["operations"][op]
            result[op] = fig["bw_mean"]
            result["bytes"][op] = round(fig["aggregate_MiB"] * MIB)
        return result
    finally:
        shutil.rmtree(work)


# ---- metadata: each returns {phase: ops/s, "items": {...}, "components": n, "seconds": {...}} ----
PHASES = ("create", "open", "stat", "remove")


def kernel_metadata(kernel, directory, np, files, lookup="path"):
    work = Path(tempfile.mkdtemp(dir=directory, prefix="kernel."))
    try:
        out = json.loads(
            sh(
                mpirun(np)
                + [
                    kernel,
                    "metadata",
                    "--dir",
                    work,
                    "--files",
                    str(files),
                    "--dir-per-rank",
                    "--path-depth",
                    "2",
                    "--lookup",
                    lookup,
                ]
            )
        )
        phases = out["repetitions"][0]["phases"]
        result = {p: phases[p]["rate_ops"] for p in PHASES}
        result["items"] = {p: phases[p]["items"] for p in PHASES}
        result["seconds"] = {p: phases[p]["time_s"]["time"]["max"] for p in PHASES}
        # Components below the benchmark's own directory, as mdtest's are counted.
        result["components"] = out["config"]["example_path"][len(str(work)) :].count("/")
        return result
    finally:
        shutil.rmtree(work)


def mdtest_metadata(mdtest, directory, np, files):
    work = Path(tempfile.mkdtemp(dir=directory, prefix="mdtest."))
    try:
        # mdtest -u puts files at -d/test-dir.0-0/mdtest_tree.<rank>.0/file.mdtest.<rank>.<i>;
        # -d one level below, as the kernel's run directory is below its --dir.
        parsed = parse_mdtest(
            sh(mpirun(np) + [mdtest, "-n", str(files), "-F", "-u", "-d", work / "md"])
        )
        names = {
            "create": "file_creation",
            "open": "file_read",
            "stat": "file_stat",
            "remove": "file_removal",
        }
        result = {p: parsed["rate"][names[p]]["mean"] for p in PHASES}
        result["items"] = {p: parsed["items"] for p in PHASES}
        result["seconds"] = {p: parsed["items"] / result[p] for p in PHASES}
        result["components"] = len(("md", "test-dir.0-0", "mdtest_tree.0.0", "file.mdtest.0.0"))
        return result
    finally:
        shutil.rmtree(work)


# ---- rounds and statistics ----
def rounds(n, tools):
    """Interleave: round r runs every tool once, in an order that rotates."""
    samples = {name: [] for name in tools}
    names = list(tools)
    for r in range(n):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(tools[name]())
        print(f"  round {r + 1}/{n} done", file=sys.stderr)
    return samples


def compare(label, unit, op, samples, base, others, targets):
    k = [s[op] for s in samples[base]]
    line = f"{label:<10} {op:<7} {base} {spread(k, width=9)} {unit}"
    for other in others:
        o = [s[op] for s in samples[other]]
        ratio, lo, hi = ratio_interval(list(zip(k, o)))
        goal = targets[other]
        verdict = goal_verdict(ratio, lo, hi, goal=goal, floor=goal - 0.05)
        line += (
            f" | {other} {spread(o, width=9)} | {base}/{other} {ratio:4.2f} "
            f"[{lo:4.2f}, {hi:4.2f}] (goal >= {goal}, low >= {goal - 0.05:.2f}: {verdict})"
        )
    print(line)
    if "device" in samples[base][0]:
        for other in others:
            print(device_line(samples[base], samples[other], op, other, goal=targets[other]))


def same_work(samples, key):
    """Every run of every tool moved the same bytes / items: else the ratio is void."""
    seen = {}
    for tool, runs in samples.items():
        for run in runs:
            for op, n in run[key].items():
                seen.setdefault(op, set()).add(n)
    unequal = {op: sorted(v) for op, v in seen.items() if len(v) > 1}
    return "equal" if not unequal else f"NOT EQUAL: {unequal}"


def main():
    parser = pair_arguments(__doc__)
    parser.add_argument("--mib", type=int, default=1024, help="MiB per rank (default 1024)")
    parser.add_argument(
        "--files", type=int, default=100000, help="files per rank for metadata (default 100000)"
    )
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--ior-bin", help="directory holding ior and mdtest")
    parser.add_argument("--skip", default="", help="comma list of streaming,metadata")
    args, iomem_words, kernel = start(parser)
    path = args.ior_bin or os.environ.get("PATH")
    ior, mdtest = shutil.which("ior", path=path), shutil.which("mdtest", path=path)
    print(
        f"directory {args.dir}; {args.rounds} interleaved rounds; the files' page cache "
        "dropped before every job; "
        f"{iomem_words}; "
        f"MPI jobs under {' '.join(mpirun('N'))}; before: {load_average()}"
    )
    if not ior:
        print("IOR/mdtest not found (give --ior-bin DIR): their ratios are not measured")
    ranks = [int(n) for n in args.ranks.split(",")]
    streaming = {}
    if "streaming" not in args.skip:
        print(
            f"\nstreaming: {args.mib} MiB per rank, 1 MiB transfers, O_DIRECT, file per "
            "process; MiB/s min median max"
        )
        for np in ranks:
            tools = {
                "kernel": lambda np=np: kernel_stream(kernel, args.dir, np, args.mib),
                "fio": lambda np=np: fio_stream(args.dir, np, args.mib, args.fio_iomem),
            }
            if ior:
                tools["ior"] = lambda np=np: ior_stream(ior, args.dir, np, args.mib)
            samples = streaming[f"{np} rank(s)"] = rounds(args.rounds, tools)
            write_rounds(args.json, streaming)
            others = [t for t in tools if t != "kernel"]
            for op in ("write", "read"):
                compare(
                    f"{np} rank(s)",
                    "MiB/s",
                    op,
                    samples,
                    "kernel",
                    others,
                    {"fio": 0.95, "ior": 1.0},
                )
            print(f"{np} rank(s) bytes moved: {same_work(samples, 'bytes')}")
    if mdtest and "metadata" not in args.skip:
        print(
            f"\nmetadata: {args.files} files per rank, a directory per rank, full paths; "
            "ops/s min median max"
        )
        for np in ranks:
            samples = rounds(
                args.rounds,
                {
                    "kernel": lambda np=np: kernel_metadata(kernel, args.dir, np, args.files),
                    "mdtest": lambda np=np: mdtest_metadata(mdtest, args.dir, np, args.files),
                },
            )
            for phase in PHASES:
                compare(
                    f"{np} rank(s)", "ops/s", phase, samples, "kernel", ["mdtest"], {"mdtest": 1.0}
                )
            comps = {t: {s["components"] for s in runs} for t, runs in samples.items()}
            seconds = {
                t: {p: round(statistics.median(s["seconds"][p] for s in runs), 2) for p in PHASES}
                for t, runs in samples.items()
            }
            print(
                f"{np} rank(s) items: {same_work(samples, 'items')}; path components below "
                f"--dir/-d: {comps}; median phase seconds: {seconds}"
            )
    print(f"after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
