#!/usr/bin/env python3
"""Benchmark (not a test): the kernel's iozone mode against fio's matching rw= modes.

The same work on both sides, pattern by pattern, at the same record size on the same
file in the same directory, with pread/pwrite (fio `--ioengine=psync`), in IOzone's order
so the file and the page cache are in the same state before each pattern:

  kernel pattern    fio job                                    match
  write             rw=write on a new file                     same requests
  rewrite           rw=write on that file                      same requests
  read              rw=read                                    same requests
  reread            rw=read again (cache kept)                 same requests
  random-read       rw=randread (random map: each block once)  same kind, another order
  random-write      rw=randwrite                               same kind, another order
  backward-read     rw=read:-2*bs (fio's backward read)        fio reads block 0 twice and
                                                               never the last block
  record-rewrite    rw=write:-bs (offset 0, once per block)    same requests
  stride-read       rw=read:(stride-1)*bs                      fio does not wrap to the
                                                               next start: it re-reads one
                                                               column, so no goal applies
  random-mix        2 ranks: 1 reads, 1 writes, at random      2 jobs, a file each: one
                    (throughput mode, --no-stonewall: each     rw=randread, one
                    rank timed over its whole pass, as fio)    rw=randwrite, as IOzone's
                                                               reader and writer (same
                                                               kind, another order)

Writes end with an fsync inside the timed region (kernel `--fsync inside`, fio
`--end_fsync=1`); no preallocation (fio `--fallocate=none`); no access hints (fio
`--fadvise_hint=0`: IOzone and the kernel give none, while fio's default tells the kernel
POSIX_FADV_RANDOM for random jobs, which turns readahead off: with this disk's 8 MiB
readahead that makes another workload, see `--fio-hints`).  `--direct` runs both with
O_DIRECT (the device); without it the page cache is measured, and the first read of each
kind starts from a dropped cache on both sides (kernel `--fadvise`, fio `--invalidate=1`),
re-read and the writes from what the pattern before left.  The kernel checks nothing
either (`--no-verify`), as fio and IOzone: its verification runs between requests,
outside its timers, but on this VM an idle gap between requests slows the requests
themselves (1 MiB O_DIRECT reads with a 0.3 ms gap after each, spent reading the buffer,
spinning or sleeping: 900-1,950 MiB/s of I/O time, against 1,970-2,650 back to back), so
the kernel's 1 MiB reads measured 0.83-0.92x fio with verification and 1.86-3.03x
without.  `--verify` turns it on.
Throughput: the kernel's `throughput_Bps` (with 2 ranks, the sum of each rank's rate,
IOzone's "children see"); fio's bytes / runtime, summed over its jobs.

The kernel runs under `mpirun --bind-to none`, so the scheduler places it as it places
fio: Open MPI binds one rank to core 0 by default, while this machine's virtio-blk
completions interrupt core 1 only (/proc/irq/*/effective_affinity_list), and a depth-1
4 KiB stream pinned away from its interrupt runs at half speed (fio itself pinned with
taskset to core 0: 14-20 MiB/s, to core 1: 33-39 MiB/s); that was the 0.62-0.75x of
issue 28, with the same system calls per record on both sides (strace -c).

Rounds are interleaved, the order of the two tools alternating, so drift hits both
alike; each round gives one pair per pattern.  Printed per pattern: each tool's
min/median/max in MiB/s, the ratio kernel/fio as the geometric mean of the pairs' ratios
with a 95% bootstrap interval over the pairs, and the goal (0.95x where fio has the
pattern).  With `--direct`, a line under each pattern gives what the device did for each
tool (pairs.device_line: device milliseconds per MiB, KiB per request, and the ratio
without the pairs that met a slow device): fio's from its job, the kernel's cut from
samples of the device's statistics at the phase's `window_unix_s`, since one kernel job
runs every pattern.  Exits 0 whatever the figures are.

    .venv/bin/python ci/benchmarks/iozone_vs_fio.py --dir /var/tmp/sb-bench [--rounds 5]
        [--record-sizes 4k,1m] [--file-size 512m] [--direct] [--verify] [--json FILE]
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

from pairs import (
    DeviceSampler,
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

from scratchbench.units import MIB, parse_size

MPIRUN = ["mpirun.openmpi", "--bind-to", "none"]  # placed as fio is: see above
STRIDE = 17
# pattern -> (fio rw, drop the cache before it when buffered, goal applies, note)
PATTERNS = {
    "write": ("write", False, True, ""),
    "rewrite": ("write", False, True, ""),
    "read": ("read", True, True, ""),
    "reread": ("read", False, True, ""),
    "random-read": ("randread", True, True, ""),
    "random-write": ("randwrite", False, True, ""),
    "backward-read": ("read:-{back}", True, True, "fio: block 0 twice, not the last"),
    "record-rewrite": ("write:-{bs}", False, True, ""),
    "stride-read": ("read:{skip}", True, False, "fio re-reads one column: no goal"),
}
MIX = "random-mix"


def pattern_op(pattern):
    """The device operation whose record a pattern's ratio is read with: the mix's record
    holds both (both_ops), under "write" so that its fsync counts as a write's does."""
    return "read" if pattern != MIX and "read" in PATTERNS[pattern][0] else "write"


def both_ops(record):
    """A job's device record with its reads and writes summed, for the random mix."""
    if not record:
        return None
    r, w = record["read"], record["write"]
    summed = {key: r[key] + w[key] for key in ("requests", "mib", "device_ms")}
    return {**w, **summed, "other_requests": 0, "other_ms": 0}


def device_of(pattern, record):
    """The record a pattern's device line reads, from a job's or a window's record."""
    if pattern == MIX:
        return both_ops(record)
    return record.get(pattern_op(pattern))


def kernel_round(kernel, directory, record, size, direct, verify):
    """Every pattern once (one rank), then the random mix (two ranks): {pattern: MiB/s}."""
    common = [
        "--dir",
        directory,
        "--file-sizes",
        str(size),
        "--record-sizes",
        str(record),
        "--all-records",
        "--fsync",
        "inside",
        "--stride",
        str(STRIDE),
    ]
    common += ["--direct"] if direct else ["--fadvise"]
    common += [] if verify else ["--no-verify"]
    out = {"device": {}}
    # one job runs every pattern: each pattern's device record is cut from samples taken
    # through the job, at the kernel's own phase window
    with DeviceSampler(directory) as single:
        report = json.loads(
            sh([*MPIRUN, "-np", "1", kernel, "iozone", *common, "--patterns", ",".join(PATTERNS)])
        )
    # --no-stonewall: each rank timed over its whole pass, as fio times each job (the
    # stonewall would stop timing the slower rank when the faster one finishes, before
    # it has the device to itself, where fio's slower job still counts that time)
    with DeviceSampler(directory) as double:
        mix = json.loads(
            sh(
                [
                    *MPIRUN,
                    "-np",
                    "2",
                    kernel,
                    "iozone",
                    *common,
                    "--no-stonewall",
                    "--patterns",
                    f"write,{MIX}",
                ]
            )
        )
    for rep, patterns, sampler in ((report, PATTERNS, single), (mix, [MIX], double)):
        if rep["exit_code"] != 0:
            raise RuntimeError(f"kernel: {rep['errors']}")
        phases = rep["repetitions"][0]["phases"]
        for pattern in patterns:
            phase = phases[f"{pattern.replace('-', '_')}_f{size}_r{record}"]
            if phase["bytes_all"] != rep["mpi"]["nranks"] * size:
                raise RuntimeError(f"kernel {pattern} moved {phase['bytes_all']} bytes")
            out[pattern] = phase["throughput_Bps"] / MIB
            out["device"][pattern] = device_of(pattern, sampler.record(*phase["window_unix_s"]))
    return out


def as_device_run(sample, pattern):
    """One round's figure and device record of a pattern, keyed by its device operation,
    as pairs.device_line reads a run."""
    op = pattern_op(pattern)
    return {op: sample[pattern], "device": {op: sample["device"][pattern]}}


def fio_job(work, name, rws, record, size, direct, invalidate, hints, iomem):
    """One fio run of a job per item of `rws` (fio's rw=), on the files name.0, name.1, ...
    (the random mix: a reader and a writer, as IOzone's ranks), each writing job ending
    with an fsync; returns the sum over its jobs of bytes / runtime, in MiB/s, and the
    device's record of the run (device_watch)."""
    # io_size: fio counts a strided job's skipped bytes against --size; this keeps n requests
    cmd = [
        "fio",
        f"--directory={work}",
        f"--bs={record}",
        f"--size={size}",
        f"--io_size={size}",
        "--ioengine=psync",
        f"--direct={int(direct)}",
        "--fallocate=none",
        f"--fadvise_hint={int(hints)}",
        f"--iomem={iomem}",
        f"--invalidate={int(invalidate)}",
        "--output-format=json",
    ]
    for number, rw in enumerate(rws):
        cmd += [f"--name={name}", f"--filename={name}.{number}", f"--rw={rw}"]
        cmd += ["--end_fsync=1"] if "write" in rw else []
    with device_watch(work) as record:
        out = sh(cmd)
    total = 0.0
    for job in json.loads(out)["jobs"]:
        moved = job["read"]["io_bytes"] + job["write"]["io_bytes"]
        if moved != size:
            raise RuntimeError(f"fio {name} {','.join(rws)} moved {moved} bytes, expected {size}")
        total += job["read"]["bw_bytes"] + job["write"]["bw_bytes"]
    return total / MIB, record


def fio_round(directory, record, size, direct, hints, iomem):
    work = Path(tempfile.mkdtemp(dir=directory, prefix="fio."))
    try:
        out = {"device": {}}
        for pattern, (rw, drop, _, _) in PATTERNS.items():
            # fio's offset suffix: bytes skipped (or stepped back) after each request
            rw = rw.format(back=2 * record, bs=record, skip=(STRIDE - 1) * record)
            if pattern == "write":
                for old in work.glob("iz.*"):
                    old.unlink()  # a new file, as IOzone's write test makes
            out[pattern], device = fio_job(
                work,
                "iz",
                [rw],
                record,
                size,
                direct,
                invalidate=drop and not direct,
                hints=hints,
                iomem=iomem,
            )
            out["device"][pattern] = device_of(pattern, device)
        fio_job(
            work,
            "mix",
            ["write", "write"],
            record,
            size,
            direct,
            invalidate=False,
            hints=hints,
            iomem=iomem,
        )
        out[MIX], device = fio_job(
            work,
            "mix",
            ["randread", "randwrite"],
            record,
            size,
            direct,
            invalidate=not direct,
            hints=hints,
            iomem=iomem,
        )
        out["device"][MIX] = device_of(MIX, device)
        return out
    finally:
        shutil.rmtree(work)


def main():
    parser = pair_arguments(__doc__)
    parser.add_argument("--record-sizes", default="4k,1m")
    parser.add_argument("--file-size", default="512m", help="bytes per file (default 512m)")
    parser.add_argument("--direct", action="store_true", help="O_DIRECT on both sides")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="the kernel checks every word it reads (not fio, not IOzone)",
    )
    parser.add_argument(
        "--fio-hints",
        action="store_true",
        help="let fio give the kernel its access hints (its default)",
    )
    args, iomem_words, kernel = start(parser)
    size = parse_size(args.file_size)
    records = [parse_size(r) for r in args.record_sizes.split(",")]
    cache = "O_DIRECT" if args.direct else "page cache (dropped before the first read of each kind)"
    print(
        f"directory {args.dir}; {size // MIB} MiB file, pread/pwrite, {cache}, fsync "
        f"inside the writes, kernel verification {'on' if args.verify else 'off'}, "
        f"fio access hints {'on' if args.fio_hints else 'off'}; "
        f"{args.rounds} interleaved rounds; fio {sh(['fio', '--version']).strip()}; "
        f"{iomem_words}; "
        f"kernel under {' '.join(MPIRUN)}; before: {load_average()}"
    )
    samples = {r: {"kernel": [], "fio": []} for r in records}
    for n in range(args.rounds):
        for i, record in enumerate(records):
            order = ["kernel", "fio"] if (n + i) % 2 == 0 else ["fio", "kernel"]
            for tool in order:
                samples[record][tool].append(
                    kernel_round(kernel, args.dir, record, size, args.direct, args.verify)
                    if tool == "kernel"
                    else fio_round(
                        args.dir, record, size, args.direct, args.fio_hints, args.fio_iomem
                    )
                )
        print(f"  round {n + 1}/{args.rounds} done", file=sys.stderr)
    write_rounds(args.json, samples)
    print(f"after: {load_average()}")
    print(
        f"{'record':<7} {'pattern':<15} {'kernel MiB/s min med max':>25} "
        f"{'fio MiB/s min med max':>25}   kernel/fio [95% bootstrap]   goal >= 0.95, low >= 0.90"
    )
    for record in records:
        for pattern in [*PATTERNS, MIX]:
            k = [s[pattern] for s in samples[record]["kernel"]]
            f = [s[pattern] for s in samples[record]["fio"]]
            ratio, lo, hi = ratio_interval(list(zip(k, f)))
            goal, note = (True, "") if pattern == MIX else PATTERNS[pattern][2:]
            verdict = goal_verdict(ratio, lo, hi) if goal else "no goal"
            label = f"{record // 1024} KiB"
            print(
                f"{label:<7} {pattern:<15} {spread(k):>25} {spread(f):>25}   {ratio:5.2f} "
                f"[{lo:4.2f}, {hi:4.2f}]   {verdict}{'  (' + note + ')' if note else ''}"
            )
            if args.direct:  # through the page cache, most patterns never reach the device
                runs = {
                    tool: [as_device_run(s, pattern) for s in samples[record][tool]]
                    for tool in ("kernel", "fio")
                }
                device_goal = 0.95 if goal else None
                op = pattern_op(pattern)
                print(device_line(runs["kernel"], runs["fio"], op, "fio", device_goal))
    return 0


if __name__ == "__main__":
    sys.exit(main())
