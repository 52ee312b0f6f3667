#!/usr/bin/env python3
"""Benchmark (not a test): the kernel's diskperf mode against fio with the same engine.

Same work on both sides, per point (block size x queue depth): one rank, one file in the
same directory, io_uring, O_DIRECT, the same number of requests in flight, a fresh file
written sequentially then read back, an fsync at the end of the write (diskperf
`--fsync inside`, fio `--end_fsync=1`), no preallocation (fio `--fallocate=none`; the
kernel truncates and writes), no verification (fio does not check what it reads, so the
kernel runs `--no-verify`).  Rounds are interleaved, the order of the two tools
alternating, so drift hits both alike; each round gives one pair per point and phase.
Printed per point: each tool's min/median/max, the ratio kernel/fio as the geometric mean
of the pairs' ratios with a 95% bootstrap interval over the pairs, and the goal (0.95x).
The kernel's buffers of 64 KiB and more sit on huge pages, and so do fio's by default
(--fio-iomem auto; see kernel_vs_tools.py: a device taking fewer segments per request
than a buffer has scattered pages splits each request).  Exits 0 whatever the figures are.

    .venv/bin/python ci/benchmarks/diskperf_vs_fio.py --dir /var/tmp/sb-bench [--rounds 5]
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

from pairs import goal_verdict, load_average, pair_arguments, ratio_interval, sh, spread, start

from scratchbench.units import MIB


def kernel_point(kernel, directory, bs, qd, size):
    """One diskperf point: (write, read) bandwidth in MiB/s and the depth reached."""
    report = json.loads(
        sh(
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
            ]
        )
    )
    phases = report["repetitions"][0]["phases"]
    w, r = phases[f"write_bs{bs}_qd{qd}"], phases[f"read_bs{bs}_qd{qd}"]
    for p in (w, r):
        if p["bytes"] != size or p["queue_depth_reached"] != qd:
            raise RuntimeError(
                f"diskperf moved {p['bytes']} bytes at depth "
                f"{p['queue_depth_reached']}, expected {size} at {qd}"
            )
    return {"write": w["bandwidth_Bps"] / MIB, "read": r["bandwidth_Bps"] / MIB}


def fio_point(directory, bs, qd, size, iomem="malloc"):
    work = Path(tempfile.mkdtemp(dir=directory, prefix="fio."))
    try:
        common = [
            "fio",
            "--name=dp",
            f"--filename={work / 'file'}",
            f"--bs={bs}",
            f"--size={size}",
            f"--iodepth={qd}",
            "--ioengine=io_uring",
            "--direct=1",
            f"--iomem={iomem}",
            "--fallocate=none",
            "--output-format=json",
        ]
        out = {}
        for rw in ("write", "read"):
            extra = ["--end_fsync=1"] if rw == "write" else []
            job = json.loads(sh(common + [f"--rw={rw}", *extra]))["jobs"][0][rw]
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
        default=128,
        help="file size in MiB for blocks under 64 KiB (default 128)",
    )
    parser.add_argument(
        "--mib-large",
        type=int,
        default=1024,
        help="file size in MiB for larger blocks (default 1024)",
    )
    args, iomem_words, kernel = start(parser)
    depths = [int(d) for d in args.depths.split(",")]
    sizes = [int(b) for b in args.block_sizes.split(",")]
    points = [(bs, qd) for bs in sizes for qd in depths]
    size_of = {bs: (args.mib_small if bs < 65536 else args.mib_large) * MIB for bs in sizes}
    print(
        f"directory {args.dir}; 1 rank, io_uring, O_DIRECT, fresh file, fsync at the end "
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
                        kernel_point(kernel, args.dir, bs, qd, size_of[bs])
                    )
                else:
                    samples[(bs, qd)]["fio"].append(
                        fio_point(args.dir, bs, qd, size_of[bs], args.fio_iomem)
                    )
        print(f"  round {r + 1}/{args.rounds} done", file=sys.stderr)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
