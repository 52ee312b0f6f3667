#!/usr/bin/env python3
"""Benchmark (not a test): the kernel's diskperf mode against fio with the same engine.

Same work on both sides, per point (block size x queue depth): one rank, one file in the
same directory, io_uring, O_DIRECT, the same number of requests in flight submitted the
same way (the kernel refills every free slot after reaping every completion at hand, in
system calls of up to 4 requests; fio does so with --iodepth_batch_submit at the depth or
4 and --iodepth_batch_complete_max at the depth: with fio's default of one request per
call, the kernel's batches of sequential requests reached the device merged, 4 KiB reads
at depth 16 as 24 KiB requests, and fio's did not, which measured two workloads), a fresh file
laid out before its timed writes (fio `--fallocate=native`, its default; the kernel
`--preallocate`), written sequentially then read back, an fsync at the end of the write
(diskperf `--fsync inside`, fio `--end_fsync=1`), no verification (fio does not check
what it reads, so the kernel runs `--no-verify`).  Laid out by default because a direct
write that extends its file on ext4 holds the file's lock until it completes, so on a new
file both programs' writes reach the device one or two at a time at any depth and the
deep points time ext4's lock hand-off between io_uring's worker threads, not the queue
(docs/benchmarks.md, "traces of the two gaps"); --new-files compares that case (fio
`--fallocate=none`; the kernel truncates and writes).
Files of 512 MiB for blocks under 64 KiB (128 MiB with --new-files; MIB_SMALL_LAID_OUT
says why) and 1 GiB for larger (--mib-small, --mib-large).
Rounds are interleaved, the order of the two tools alternating, so drift hits both
alike; each round gives one pair per point and phase.
Printed per point: each tool's min/median/max, the ratio kernel/fio as the geometric mean
of the pairs' ratios with a 95% bootstrap interval over the pairs, and the goal (0.95x).
The kernel's buffers of 64 KiB and more sit on huge pages, and so do fio's by default
(--fio-iomem auto; see kernel_vs_tools.py: a device taking fewer segments per request
than a buffer has scattered pages splits each request).  Under each ratio, a line from
the block device's own statistics, as kernel_vs_tools.py prints it: the tools' device
milliseconds per MiB and KiB per request, and the ratio without the pairs that met a slow
device.  --json keeps every round's figures and device records (written after each round).
Exits 0 whatever the figures are.

    .venv/bin/python ci/benchmarks/diskperf_vs_fio.py --dir /var/tmp/sb-bench [--rounds 5]
        [--new-files] [--json FILE]
"""

import json
import shutil
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

from scratchbench.units import MIB

# requests per io_uring_enter in the kernel's io_uring engine (SUBMIT_CALL_MAX in
# src/backend_uring.c; tests/test_kernel_modes.py checks the kernel's calls against it)
KERNEL_SUBMIT_CALL_MAX = 4


# A file laid out with fallocate is a few unwritten extents of at most 128 MiB each.  In
# a file of 4 or fewer, ext4's extent tree folds back into the inode whenever the writes
# in flight complete and grows a leaf again with the next ones; with the `discard` mount
# option each fold discards the freed leaf block synchronously, in the worker that
# completes the writes, stalling every completion behind it.  How often depends on how
# the completions bunch, not on the work: 4 KiB writes at depth 16 into 128 MiB met
# 1,060-1,307 such discards under the kernel and 577-642 under fio, 0 into 512 MiB
# (docs/benchmarks.md, "Extent-tree folds").  So a laid-out small-block file is 512 MiB:
# 5 extents (an unwritten extent holds at most 32,767 blocks of 4 KiB).  A new file has
# no unwritten extents, and 128 MiB keeps a round short.
MIB_SMALL_LAID_OUT, MIB_SMALL_NEW_FILE = 512, 128


def kernel_point(kernel, directory, bs, qd, size, preallocate):
    """One diskperf point: (write, read) bandwidth in MiB/s and the depth reached."""
    with device_watch(directory) as dev:
        out = sh(
            [
                kernel,
                "diskperf",
                "--dir",
                directory,
                "--block-sizes",
                str(bs),
                "--queue-depths",
                str(qd),
                "--file-size",
                str(size),
                "--direct",
                "--no-verify",
                "--engine",
                "io_uring",
                *(["--preallocate"] if preallocate else []),
            ]
        )
    phases = json.loads(out)["repetitions"][0]["phases"]
    w, r = phases[f"write_bs{bs}_qd{qd}"], phases[f"read_bs{bs}_qd{qd}"]
    for p in (w, r):
        if p["bytes"] != size or p["queue_depth_reached"] != qd:
            raise RuntimeError(
                f"diskperf moved {p['bytes']} bytes at depth "
                f"{p['queue_depth_reached']}, expected {size} at {qd}"
            )
    # one job wrote then read: the device's write and read counters tell its two phases apart
    return {"write": w["bandwidth_Bps"] / MIB, "read": r["bandwidth_Bps"] / MIB, "device": dev}


def fio_point(directory, bs, qd, size, iomem, preallocate):
    work = Path(tempfile.mkdtemp(dir=directory, prefix="fio."))
    try:
        common = [
            "fio",
            "--name=dp",
            f"--filename={work / 'file'}",
            f"--bs={bs}",
            f"--size={size}",
            f"--iodepth={qd}",
            # as the kernel submits: every free slot, in calls of up to 4, every completion
            # at hand reaped (fio's default, one request per call, keeps a sequential stream
            # from merging at the block layer where the kernel's batches merge)
            f"--iodepth_batch_submit={min(qd, KERNEL_SUBMIT_CALL_MAX)}",
            f"--iodepth_batch_complete_max={qd}",
            "--ioengine=io_uring",
            "--direct=1",
            f"--iomem={iomem}",
            f"--fallocate={'native' if preallocate else 'none'}",
            "--output-format=json",
        ]
        out = {"device": {}}
        for rw in ("write", "read"):
            extra = ["--end_fsync=1"] if rw == "write" else []
            with device_watch(directory) as dev:
                report = sh(common + [f"--rw={rw}", *extra])
            out["device"][rw] = dev.get(rw)
            job = json.loads(report)["jobs"][0][rw]
            if job["io_bytes"] != size:
                raise RuntimeError(f"fio {rw} moved {job['io_bytes']} bytes, expected {size}")
            out[rw] = job["bw_bytes"] / MIB
        return out
    finally:
        shutil.rmtree(work)


def main():
    parser = pair_arguments(__doc__)
    parser.add_argument("--depths", default="1,4,16,32")
    parser.add_argument("--block-sizes", default="4096,1048576")
    parser.add_argument(
        "--mib-small",
        type=int,
        help=f"file size in MiB for blocks under 64 KiB (default {MIB_SMALL_LAID_OUT}: into a "
        "laid-out file of 4 extents or fewer, ext4 folds and regrows its extent tree as "
        f"writes complete, docs/benchmarks.md; with --new-files {MIB_SMALL_NEW_FILE})",
    )
    parser.add_argument(
        "--mib-large",
        type=int,
        default=1024,
        help="file size in MiB for larger blocks (default 1024)",
    )
    parser.add_argument(
        "--new-files",
        action="store_true",
        help="write each file new instead of laying it out first (kernel without "
        "--preallocate, fio --fallocate=none): on ext4 the deep write points then time the "
        "file's lock on extending writes for both programs, not the queue",
    )
    args, iomem_words, kernel = start(parser)
    preallocate = not args.new_files
    if args.mib_small is None:
        args.mib_small = MIB_SMALL_LAID_OUT if preallocate else MIB_SMALL_NEW_FILE
    depths = [int(d) for d in args.depths.split(",")]
    sizes = [int(b) for b in args.block_sizes.split(",")]
    points = [(bs, qd) for bs in sizes for qd in depths]
    size_of = {bs: (args.mib_small if bs < 65536 else args.mib_large) * MIB for bs in sizes}
    print(
        f"directory {args.dir}; 1 rank, io_uring, O_DIRECT, "
        f"{'file laid out first' if preallocate else 'new file, not laid out (--new-files)'} ({args.mib_small} MiB "
        f"for blocks under 64 KiB, {args.mib_large} MiB for larger), fsync at the end "
        f"of writes, no verification; {args.rounds} interleaved rounds; fio {sh(['fio', '--version']).strip()}; "
        f"{iomem_words}; before: {load_average()}"
    )
    samples = {p: {"kernel": [], "fio": []} for p in points}
    for r in range(args.rounds):
        for i, (bs, qd) in enumerate(points):
            order = ["kernel", "fio"] if (r + i) % 2 == 0 else ["fio", "kernel"]
            for tool in order:
                if tool == "kernel":
                    samples[(bs, qd)]["kernel"].append(
                        kernel_point(kernel, args.dir, bs, qd, size_of[bs], preallocate)
                    )
                else:
                    samples[(bs, qd)]["fio"].append(
                        fio_point(args.dir, bs, qd, size_of[bs], args.fio_iomem, preallocate)
                    )
        print(f"  round {r + 1}/{args.rounds} done", file=sys.stderr)
        write_rounds(args.json, samples)
    print(f"after: {load_average()}")
    print(
        f"{'point':<16} {'op':<5} {'kernel MiB/s min med max':>25} {'fio MiB/s min med max':>25}"
        f"   kernel/fio [95% bootstrap]   goal >= 0.95, low >= 0.90"
    )
    for bs, qd in points:
        for op in ("write", "read"):
            k = [s[op] for s in samples[(bs, qd)]["kernel"]]
            f = [s[op] for s in samples[(bs, qd)]["fio"]]
            ratio, lo, hi = ratio_interval(list(zip(k, f)))
            verdict = goal_verdict(ratio, lo, hi)
            label = f"{bs // 1024} KiB qd {qd}"
            print(
                f"{label:<16} {op:<5} {spread(k):>25} {spread(f):>25}   {ratio:5.2f} "
                f"[{lo:4.2f}, {hi:4.2f}]   {verdict}"
            )
            print(device_line(samples[(bs, qd)]["kernel"], samples[(bs, qd)]["fio"], op, "fio"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
