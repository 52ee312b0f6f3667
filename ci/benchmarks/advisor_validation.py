#!/usr/bin/env python3
"""Benchmark (not a test): the workload advisor checked against reality on the
embedded cluster: predicted against measured I/O time of known workloads per target.

1. Unless --reuse-history, the suite's self-scaling, metadata and staging checks run
   first, one at a time (`scratchbench run --tag TAG --serial --name KernelSelfScale
   --name KernelMetadata --environ gnu-openmpi`, then `--name StageInOut`) so the
   history store holds each target's curves and rates.  The MPI checks run in the
   workloads' own environment (Open MPI) only: the advisor predicts a job from the models
   of its MPI, and a second MPI's runs would double the suite's time (over an hour at
   the nightly sizes) for figures no prediction here uses.
2. Every workload below is described as a user would describe it (the advisor's YAML
   keys), and the advisor predicts it on every target from the store, BEFORE it runs.
   On each target a workload predicted under 1 s (LONG_ENOUGH_S, twice the suite's
   shortest trusted phase) is run several times over, up to 32 (scaled(): a kernel
   workload's counts multiplied over the same data set and predicted again at that
   size; a copy or a per-request workload run that many times one after the other,
   their times added up, against that many times its prediction); the "times" column
   says how many.
3. Then one Slurm job per target (one node, 2 ranks) runs each workload --repeats times
   with the kernel (iotest, selfscale and metadata modes with set parameters), for
   staging `cp -r` as the staging check's script does, and for the per-request
   workloads `request_loop.c` (one process's small requests); the measured I/O time is
   the kernel's own timers (the slowest rank's time of each timed phase, added up), the
   copy's wall time, or request_loop's time around its requests.  The median of the repeats is compared with the prediction.

It prints, per workload and target: predicted (with the interval over the stored runs),
measured (median, min to max of the repeats), and the relative error |p - m| / m; then
the median error over every row (the issue's goal: within 20%), and how many rows
measured under 0.5 s in all (scratchbench.figures.SHORTEST_TRUSTED_PHASE_S, the suite's
rule for a phase; each such row says "too short to time") with the median over the
rest.  Which parts of the prediction are compared is stated per workload: a kernel's
timers do not include the deletion of its files, so the data workloads compare data +
metadata, and the metadata workload compares metadata + deletion.

    .venv/bin/python ci/benchmarks/advisor_validation.py [--tag quick]
        [--targets localscratch,sanscratch] [--repeats 3] [--reuse-history]

Run under your own SCRATCHBENCH_HOME (the embedded cluster is started there if it is not
running, its nodes advertising 4 CPUs for the nightly sizes; SCRATCHBENCH_TEST_BASE_PORT
pins its ports).  Exits 0 whatever the figures are; non-zero only when a step could not
run.
"""

import argparse
import copy
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cluster import ClusterSpec, EmbeddedCluster
from reports import advisor, advisor_report, job_profile
from scratchbench import figures as figure_rules, paths
from scratchbench.sites import TAGS
from scratchbench.units import MIB
from pairs import SLURM_OPENMPI_ENV, build_kernel

REPO = Path(__file__).resolve().parents[2]

PROCESSES = 2  # ranks of every workload, on one node (the cluster's 2 CPUs)
TARGET_DIRS = {"localscratch": "$LOCALSCRATCH", "sanscratch": "$MYSANSCRATCH"}
#: the check whose figures each part of a prediction rests on
SUITE_CHECKS = {
    "data": "KernelSelfScale",
    "metadata": "KernelMetadata",
    "deletion": "KernelMetadata",
    "staging": "StageInOut",
}
#: the programming environment the workloads' MPI jobs run in (SLURM_OPENMPI_ENV), the
#: only one the MPI checks run in here; None: the check's own (the staging check's
#: plain shell jobs)
WORKLOAD_ENVIRON = "gnu-openmpi"
CHECK_ENVIRON = {"KernelSelfScale": WORKLOAD_ENVIRON, "KernelMetadata": WORKLOAD_ENVIRON}

# The workloads: what the user says (the advisor's description keys), how the job runs
# it, which parts of the prediction its measurement covers, and which of its counts grow
# when it is run several times over (scaled()).  Sizes are small enough that the whole
# benchmark stays within minutes on 2 shared cores.
#: the data sets the staging workloads copy: (files, bytes per file); shapes unlike the
#: staging check's sets, so the fitted costs are put to a test: at nightly sizes "large"
#: fits in the check's burst (256 MiB), "bulk" goes past it
STAGE_SETS = {"large": (64, 2 * MIB), "bulk": (512, 2 * MIB), "small": (3000, 8 * 1024)}
WORKLOADS = [
    {
        "name": "iotest fpp seq write+read 1MiB",
        "words": "file per process, 64 x 1 MiB sequential writes per rank, then read back, 4 "
        "times (iotest --niter 4 --iread 2, --fsync outside: no durability asked)",
        "description": {
            "processes": PROCESSES,
            "bytes": f"{4 * 2 * PROCESSES * 64} MiB",
            "read_fraction": 0.5,
            "request_size": "1 MiB",
            "sequential_fraction": 1.0,
            "footprint": f"{PROCESSES * 64} MiB",
            "files": PROCESSES,
            "files_written": PROCESSES,
            "opens": PROCESSES,
        },
        "kernel": [
            "iotest",
            "--nr",
            "131072",
            "--nc",
            "64",
            "--niter",
            "4",
            "--iread",
            "2",
            "--layout",
            "fpp",
            "--api",
            "posix",
            "--fsync",
            "outside",
        ],
        "phases": ("write", "read"),
        "timer": "total",
        "parts": ("data", "metadata"),
        "counts": ("--niter", ("bytes",)),
    },
    {
        "name": "iotest fpp seq write 64KiB",
        "words": "file per process, 1024 x 64 KiB sequential writes per rank, 4 times "
        "(iotest --niter 4 --iread 0, --fsync outside)",
        "description": {
            "processes": PROCESSES,
            "bytes": f"{4 * PROCESSES * 64} MiB",
            "read_fraction": 0.0,
            "request_size": "64 KiB",
            "sequential_fraction": 1.0,
            "footprint": f"{PROCESSES * 64} MiB",
            "files": PROCESSES,
            "files_written": PROCESSES,
            "opens": PROCESSES,
        },
        "kernel": [
            "iotest",
            "--nr",
            "8192",
            "--nc",
            "1024",
            "--niter",
            "4",
            "--iread",
            "0",
            "--layout",
            "fpp",
            "--api",
            "posix",
            "--fsync",
            "outside",
        ],
        "phases": ("write",),
        "timer": "total",
        "parts": ("data", "metadata"),
        "counts": ("--niter", ("bytes",)),
    },
    {
        "name": "selfscale random 16KiB mixed",
        "words": "one 64 MiB data set shared by the ranks, 16000 random 16 KiB requests per "
        "rank, half reads (selfscale --point 64m:16k:0.5:0:2 --requests 16000 "
        "--prime --fsync outside)",
        "description": {
            "processes": PROCESSES,
            "bytes": f"{PROCESSES * 16000 * 16} KiB",
            "read_fraction": 0.5,
            "request_size": "16 KiB",
            "sequential_fraction": 0.0,
            "footprint": "64 MiB",
            "files": 1,
            "files_written": 0,
            "opens": 0,
        },
        "kernel": [
            "selfscale",
            "--point",
            f"64m:16k:0.5:0:{PROCESSES}",
            "--requests",
            "16000",
            "--warmup",
            "0",
            "--prime",
            "--fsync",
            "outside",
        ],
        "phases": ("p0",),
        "timer": "window",
        "parts": ("data",),
        "counts": ("--requests", ("bytes",)),
    },
    {
        "name": "selfscale seq 256KiB reads",
        "words": "one 128 MiB data set, 4000 sequential 256 KiB reads per rank, wrapping at "
        "its end (selfscale --point 128m:256k:1:1:2 --requests 4000 --prime)",
        "description": {
            "processes": PROCESSES,
            "bytes": f"{PROCESSES * 4000 * 256} KiB",
            "read_fraction": 1.0,
            "request_size": "256 KiB",
            "sequential_fraction": 1.0,
            "footprint": "128 MiB",
            "files": 1,
            "files_written": 0,
            "opens": 0,
        },
        "kernel": [
            "selfscale",
            "--point",
            f"128m:256k:1:1:{PROCESSES}",
            "--requests",
            "4000",
            "--warmup",
            "0",
            "--prime",
            "--fsync",
            "outside",
        ],
        "phases": ("p0",),
        "timer": "window",
        "parts": ("data",),
        "counts": ("--requests", ("bytes",)),
    },
    {
        "name": "metadata create/stat/delete 4000",
        "words": "2000 empty files per rank in one shared directory: create, stat, delete "
        "(metadata --files 2000 --phases create,stat,remove --removers 1)",
        "description": {
            "processes": PROCESSES,
            "bytes": 0,
            "files": PROCESSES * 2000,
            "files_written": PROCESSES * 2000,
            "opens": PROCESSES * 2000,
            "stats": PROCESSES * 2000,
        },
        "kernel": [
            "metadata",
            "--files",
            "2000",
            "--phases",
            "create,stat,remove",
            "--removers",
            "1",
        ],
        "phases": ("create", "stat", "remove"),
        "timer": "time",
        "parts": ("metadata", "deletion"),
        "counts": ("--files", ("files", "files_written", "opens", "stats")),
    },
] + [
    {
        "name": f"stage in {files} x {size // 1024} KiB",
        "words": f"cp -r of {files} files of {size // 1024} KiB from a home directory into the "
        "target, as the staging check's script stages in",
        "description": {
            "processes": 1,
            "bytes": 0,
            "files": 0,
            "files_written": 0,
            "opens": 0,
            "stage_in": {"bytes": files * size, "files": files},
        },
        "copy": name,
        "parts": ("staging",),
    }
    for name, (files, size) in STAGE_SETS.items()
]
#: the per-request workloads (issue 26, section 1): one process issuing requests of 1 B,
#: 512 B and 4 KiB one after the other, as a user's program would (request_loop.c, timed
#: around the requests alone, as Darshan times them: not `dd`, whose second system call
#: per block, to /dev/null or from /dev/zero, is no I/O of the job); writes into the page
#: cache, reads of a file the page cache holds ("cached") and of one whose pages were
#: dropped just before (dd iflag=nocache, posix_fadvise DONTNEED: "uncached"; readahead
#: still fetches ahead of the requests).  (request bytes, requests)
REQUEST_SIZES = ((1, 200_000), (512, 100_000), (4096, 25_000))
WORKLOADS += [
    {
        "name": f"request {direction} {size} B{' ' + cache if direction == 'read' else ''}",
        "words": f"{count:,} requests of {size} B {'from' if direction == 'read' else 'into'} "
        f"one file ({cache}), one process (request_loop)",
        "description": {
            "processes": 1,
            "bytes": size * count,
            "read_fraction": 1.0 if direction == "read" else 0.0,
            "request_size": size,
            "sequential_fraction": 1.0,
            "footprint": size * count,
            "files": 1,
            "files_written": 0 if direction == "read" else 1,
            "opens": 1,
        },
        "requests": {"size": size, "count": count, "direction": direction, "cache": cache},
        "parts": ("data",),
    }
    for size, count in REQUEST_SIZES
    for direction, cache in (("write", "cached"), ("read", "cached"), ("read", "uncached"))
]


#: each workload runs long enough to be timed: on each target its counts are multiplied
#: (its shape kept) until its prediction there is at least this long, twice the suite's
#: shortest trusted phase, and at most MOST_TIMES times; a row still measured shorter is
#: marked.  At one size for all, every node-local row took 0.03-0.33 s and moved up to 2x
#: when measured again minutes later (docs/benchmarks.md, 2026-12-06)
LONG_ENOUGH_S = 2 * figure_rules.SHORTEST_TRUSTED_PHASE_S
MOST_TIMES = 32


def times_for(seconds):
    """How many times over a workload predicted at `seconds` on a target is run there."""
    if not seconds:
        return 1
    return max(1, min(MOST_TIMES, math.ceil(LONG_ENOUGH_S / seconds)))


def scaled(w, times):
    """The workload `w` run `times` times over, its shape kept; `w` itself when `times` is
    1.  A kernel workload's counts (iterations, requests, files) are multiplied: one
    longer run over the same data set.  A copy or a per-request workload runs `times`
    times one after the other, each as its one run (after a sync, its file or copy
    removed after), their times added up, so that a copy stays within the page cache's
    burst and a file of dropped pages stays one readahead fetches; its prediction is
    `times` times one run's."""
    if times == 1:
        return w
    out = copy.deepcopy(w)
    out["times"] = times
    if runs_apart(out):
        return out
    option, keys = out["counts"]
    at = out["kernel"].index(option) + 1
    out["kernel"][at] = str(int(out["kernel"][at]) * times)
    described = out["description"]
    for key in keys:
        value = described[key]
        if isinstance(value, str):
            value = job_profile.parse_size(value, out["name"])
        described[key] = value * times
    return out


def runs_apart(w):
    """Whether `w`, run several times over, is that many runs one after the other (a
    copy or a per-request workload) rather than one longer run (a kernel workload)."""
    return bool(w.get("requests") or w.get("copy"))


def runs_of(w):
    """How many runs one repeat of `w` is made of (scaled())."""
    return w.get("times", 1) if runs_apart(w) else 1


def journal_warning(path):
    """A warning when `path` is on ext4 without a journal, or "".  Such an ext4 keeps
    away from inodes deleted in the last minutes when it creates files (its
    recently_deleted() scan), so creations slow down many times for minutes after a
    workload deletes files: the rows that create files then measure that, not the
    file system the checks measured."""
    found = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE,FSTYPE", "--target", str(path)],
        capture_output=True,
        text=True,
    ).stdout.split()
    if len(found) != 2 or found[1] != "ext4":
        return ""
    task = Path("/sys/fs/ext4") / Path(found[0]).name / "journal_task"
    try:
        journal = task.read_text().strip()
    except OSError:
        return ""
    if journal != "<none>":
        return ""
    return (
        f"warning: {path} is on {found[0]}, an ext4 without a journal: its file "
        "creations slow down many times for minutes after files are deleted, so the "
        "workloads that create files after others deleted theirs measure that; put "
        "SCRATCHBENCH_HOME on a journaled file system (docs/benchmarks.md)"
    )


def run_suite(args, env):
    """Run the checks the workloads rest on, one suite run per environment; their
    output goes to a log under SCRATCHBENCH_HOME (named before each run starts).
    Returns the seconds they took."""
    checks = sorted({SUITE_CHECKS[p] for w in WORKLOADS for p in w["parts"]})
    by_environ = {}
    for check in checks:
        by_environ.setdefault(CHECK_ENVIRON.get(check), []).append(check)
    took = 0.0
    for environ, names in by_environ.items():
        took += _run_suite_once(args, env, names, environ)
    return took


def _run_suite_once(args, env, names, environ):
    # One check at a time: the embedded nodes share this machine's cores, and a check
    # slowed by another beside it would give figures no lone job sees.
    command = [
        str(REPO / ".venv" / "bin" / "scratchbench"),
        "run",
        "--tag",
        args.tag,
        "--serial",
        "--note",
        "advisor validation: the figures it predicts from",
    ]
    for check in names:
        command += ["--name", check]
    if environ:
        command += ["--environ", environ]
    if len(args.targets) == 1:
        command += ["--target", args.targets[0]]
    log = paths.state_dir() / f"advisor-validation-suite-{time.strftime('%Y%m%dT%H%M%S')}.log"
    print(f"suite: {' '.join(command[1:])}\n  its output: {log}", flush=True)
    started = time.monotonic()
    with open(log, "x") as out:
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    took = time.monotonic() - started
    lines = log.read_text(errors="replace").strip().splitlines()
    print(f"  took {took / 60:.1f} min: {(lines or ['(no output)'])[-1]}", flush=True)
    if result.returncode not in (0, 4):
        tail = "\n".join(lines[-20:])
        sys.exit(
            f"advisor_validation: the suite failed (exit {result.returncode}; "
            f"its output: {log}):\n{tail}"
        )
    return took


def predict(figures, plan):
    """{(workload, target): (seconds, low, high, figures date)} of the compared parts of
    each target's workloads (plan: {target: its workloads})."""
    out = {}
    for target, workloads in plan.items():
        for w in workloads:
            profile = job_profile.description_profile(w["description"], w["name"])
            t = advisor.predict_target(profile, figures[target])
            parts = [t["parts"][p] for p in w["parts"]]
            if any(p["seconds"] is None for p in parts):
                missing = "; ".join(p["missing"] for p in parts if p["seconds"] is None)
                out[w["name"], target] = (None, None, None, missing)
                continue
            runs = runs_of(w)
            seconds = runs * sum(p["seconds"] for p in parts)
            spread = all(p["low"] is not None or p["seconds"] == 0 for p in parts)
            low = runs * sum(p["seconds"] if p["low"] is None else p["low"] for p in parts)
            high = runs * sum(p["seconds"] if p["high"] is None else p["high"] for p in parts)
            out[w["name"], target] = (
                seconds,
                low if spread else None,
                high if spread else None,
                t["figures_to"],
            )
    return out


def plan_workloads(figures, targets):
    """{target: WORKLOADS as run there}, each run times_for(its prediction there) times
    over, in WORKLOADS' order."""
    first = predict(figures, {t: WORKLOADS for t in targets})
    return {t: [scaled(w, times_for(first[w["name"], t][0])) for w in WORKLOADS] for t in targets}


def job_script(target, workloads, tools, work, repeats, stage_home):
    """One job on one node: every workload `repeats` times, round-robin, each kernel
    report to its own file; the copies timed with date."""
    directory = TARGET_DIRS.get(target, target)
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in SLURM_OPENMPI_ENV.items())
    lines = [
        "#!/bin/bash",
        "#SBATCH --job-name=advisor-validation",
        "#SBATCH --nodes=1",
        f"#SBATCH --ntasks={PROCESSES}",
        "#SBATCH --exclusive",
        "#SBATCH --time=30:00",
        f"#SBATCH --output={work}/job.out",
        f"#SBATCH --error={work}/job.err",
        exports.rstrip("\n"),
        f"cd {shlex.quote(str(work))}",
        f'dir="{directory}"',
        'mkdir -p "$dir" || exit 3',
    ]
    for rep in range(repeats):
        for i, w in enumerate(workloads):
            if w.get("requests"):
                for _ in range(runs_of(w)):
                    lines += request_lines(w["requests"], tools["request_loop"], i, rep)
                continue
            if w.get("copy"):
                stage = f"$dir/stage-{i}-{rep}"
                source = shlex.quote(str(stage_home / w["copy"]))
                # as a job stages in on a fresh exclusive node: no dirty data before
                # the copy, and none of its own left for the next workload (untimed);
                # each run of a workload run several times over is one such copy
                lines += [
                    f"for c in $(seq {runs_of(w)}); do sync; t0=$(date +%s.%N); "
                    f'cp -r -- {source} "{stage}" || exit 5; t1=$(date +%s.%N)',
                    f'echo "$t0 $t1" >> copy-{i}-{rep}.txt; rm -rf -- "{stage}"; sync; done',
                ]
                continue
            args = " ".join(shlex.quote(a) for a in w["kernel"])
            # the same: no dirty data of the workload before (the kernel's own timers
            # leave this sync out), as the checks measured each point after a sync
            lines.append(
                f"sync; srun -n {PROCESSES} {shlex.quote(str(tools['kernel']))} {args} "
                f'--seed {rep + 1} --dir "$dir" --output report-{i}-{rep}.json '
                f'|| echo "workload {i} repeat {rep}: exit $?" >&2'
            )
    return "\n".join(lines) + "\n"


def request_lines(requests, request_loop, index, rep):
    """One timed run of a per-request workload: its seconds, and the file's resident
    share (fincore) just before it, a line added to requests-INDEX-REP.txt."""
    size, count = requests["size"], requests["count"]
    f = f'"$dir/request-{index}"'
    lines = [f"rm -f {f}"]
    if requests["direction"] == "read":
        # written just before, so the loop reads each page for the second time, as a job
        # reads what it or its stage-in wrote (a third access, after a `cat`, costs up
        # to a third of a 4 KiB read more: docs/benchmarks.md, "The third read of a
        # cached page")
        lines.append(f"head -c {size * count} /dev/zero > {f}")
    lines.append("sync")
    if requests["cache"] == "uncached":
        lines.append(f"dd if={f} iflag=nocache count=0 status=none")
    lines += [
        f"res=$(fincore --bytes --noheadings --output RES {f} 2>/dev/null || echo -)",
        f"took=$({shlex.quote(str(request_loop))} {requests['direction']} {f} {size} "
        f"{count}) || exit 6",
        f'echo "$took $res" >> requests-{index}-{rep}.txt; rm -f {f}; sync',
    ]
    return lines


def build_request_loop(where):
    """Compile request_loop.c into the directory `where`; its path."""
    binary = Path(where) / "request_loop"
    source = Path(__file__).with_name("request_loop.c")
    command = ["gcc", "-O2", "-std=c11", "-Wall", "-Werror", "-o", str(binary), str(source)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"advisor_validation: {source.name} did not build:\n{result.stderr}")
    return binary


def measured_seconds(work, index, rep, w):
    """The I/O time one run of a workload measured; None (with a reason) when it did
    not complete."""
    if runs_apart(w):
        # one line per run: request_loop's seconds (and the resident bytes before it),
        # or the copy's start and end
        what, file = ("request_loop", "requests") if w.get("requests") else ("the copy", "copy")
        path = work / f"{file}-{index}-{rep}.txt"
        runs = [line.split() for line in path.read_text().splitlines()] if path.exists() else []
        if len(runs) != runs_of(w):
            return None, f"{what} ran {len(runs)} of {runs_of(w)} times"
        if w.get("requests"):
            return sum(float(run[0]) for run in runs), ""
        return sum(float(t1) - float(t0) for t0, t1 in runs), ""
    path = work / f"report-{index}-{rep}.json"
    if not path.exists():
        return None, "no report"
    report = json.loads(path.read_text())
    if not report.get("complete"):
        return None, f"incomplete: {report.get('exit_reason')}"
    phases = report["repetitions"][0]["phases"]
    moved = sum(phases[p].get("bytes", 0) for p in w["phases"])
    described = job_profile.parse_size(w["description"]["bytes"], w["name"])
    if moved and described and abs(moved - described) > 0.02 * described:
        return None, (
            f"the run moved {moved} bytes, the description says {described}: "
            "the workload is not what was predicted"
        )
    if w["timer"] == "window":
        # the slowest active rank's window: the time all requests took
        return sum(max(phases[p]["per_rank"]["window"]) for p in w["phases"]), ""
    return sum(phases[p]["time_s"][w["timer"]]["max"] for p in w["phases"]), ""


def seconds_cell(seconds):
    return "-" if seconds is None else f"{seconds:.3f}"


def _arguments():
    """The benchmark's command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--tag",
        default="quick",
        choices=TAGS,
        help="the suite's sizes for the figures (default quick)",
    )
    p.add_argument(
        "--targets",
        default="localscratch,sanscratch",
        type=lambda s: [t for t in s.split(",") if t],
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--cpus-per-node",
        type=int,
        default=None,
        help="CPUs each node of a cluster this benchmark starts advertises "
        "(default 2 for quick, 4 for the nightly and acceptance sizes, "
        "whose self-scaling search runs 4 processes)",
    )
    p.add_argument(
        "--only",
        default="",
        help="only the workloads whose name holds this text (e.g. 'request': "
        "the per-request workloads); the suite runs only the checks they "
        "rest on",
    )
    p.add_argument(
        "--reuse-history",
        action="store_true",
        help="predict from the figures already stored; do not run the suite",
    )
    return p


def _measure_target(target, workloads, args, tools, cluster, measured):
    """Run the workloads' job on one target (its stage-in data made first, removed
    after); its seconds go to measured[workload name, target]. Returns its directory."""
    work = Path(tempfile.mkdtemp(prefix=f"advisor-validation-{target}-", dir=paths.state_dir()))
    os.chmod(work, 0o755)
    stage_home = work / "home-input"
    for name, (files, size) in STAGE_SETS.items():
        (stage_home / name).mkdir(parents=True)
        for i in range(files):
            (stage_home / name / f"part-{i:04d}").write_bytes(os.urandom(size))
    script = work / "job.sh"
    script.write_text(job_script(target, workloads, tools, work, args.repeats, stage_home))
    t0 = time.monotonic()
    submit = subprocess.run(
        ["sbatch", "--wait", "--partition=batch", str(script)],
        capture_output=True,
        text=True,
        env=cluster.client_env(),
    )
    # the copies' source data (1.2 GiB) goes; the reports and job output stay
    shutil.rmtree(stage_home)
    print(
        f"{target}: the job took {time.monotonic() - t0:.0f} s (sbatch exit "
        f"{submit.returncode}); its reports and output in {work}",
        flush=True,
    )
    err = (work / "job.err").read_text().strip() if (work / "job.err").exists() else ""
    if err:
        print("  job stderr: " + err.splitlines()[-1][:200])
    for i, w in enumerate(workloads):
        values, reasons = [], []
        for rep in range(args.repeats):
            value, reason = measured_seconds(work, i, rep, w)
            (values.append(value) if value is not None else reasons.append(reason))
        measured[w["name"], target] = (values, reasons)
    return work


def _comparison_row(
    w, index, target, args, predictions, measured, by_form, chosen, works, errors, within, short
):
    """Workload `w` (WORKLOADS[index] as run on `target`): predicted against measured
    seconds (each error goes to errors, whether inside the stored runs' interval to
    within, whether its measured time was too short to time to short)."""
    seconds, low, high, note = predictions[w["name"], target]
    values, reasons = measured[w["name"], target]
    interval = f"({low:.3f}-{high:.3f})" if low is not None else "(1 run)"
    if not values:
        row = f"not measured: {'; '.join(reasons)}"
    elif seconds is None:
        row = f"no prediction: {note}"
    else:
        m = statistics.median(values)
        error = abs(seconds - m) / m
        errors.append(error)
        inside = low is not None and low <= m <= high
        within.append(inside)
        # the suite's own rule: a phase this short times the caches and one stall; the
        # same workload measured again minutes later moved up to 2x (docs/benchmarks.md)
        short.append(figure_rules.too_short(m))
        row = (
            f"x{w.get('times', 1):<3d} {seconds_cell(seconds):>9s} {interval:22s}  {m:9.3f} "
            f"({min(values):.3f}-{max(values):.3f}, n={len(values)})"
            f"{' ' * 6}{100 * error:5.1f}%  {'over' if seconds > m else 'under'}"
            f"{', inside the interval' if inside else ''}"
            f"{', too short to time' if short[-1] else ''}"
        )
        other = "sum" if chosen == "max" else "max"
        alternative = by_form[other][w["name"], target][0]
        if w.get("requests") and alternative is not None:
            files = [works[target] / f"requests-{index}-{r}.txt" for r in range(args.repeats)]
            resident = sorted(
                {
                    line.split()[1]
                    for f in files
                    if f.exists()
                    for line in f.read_text().splitlines()
                }
            )
            row += (
                f"; {other} form {alternative:.3f} s "
                f"({100 * abs(alternative - m) / m:.1f}%); resident before: "
                f"{'/'.join(resident)} B"
            )
    return row


def short_rows_words(errors, short):
    """The line on rows measured under the suite's shortest trusted phase (``short``
    beside ``errors``, row by row) and the median error over the rest; None when no
    row was that short."""
    timed = [e for e, brief in zip(errors, short) if not brief]
    if len(timed) == len(errors):
        return None
    return (
        f"{len(errors) - len(timed)} of {len(errors)} rows measured under "
        f"{figure_rules.SHORTEST_TRUSTED_PHASE_S:g} s in all, too short to time (the "
        "suite's rule for a phase): their errors are within what such runs repeat to"
        + (
            f"; over the other {len(timed)} row{'s' if len(timed) > 1 else ''} the median "
            "error is "
            f"{100 * statistics.median(timed):.1f}%"
            if timed
            else ""
        )
    )


def main():
    args = _arguments().parse_args()
    WORKLOADS[:] = [w for w in WORKLOADS if args.only in w["name"]]
    if not WORKLOADS:
        sys.exit(f"advisor_validation: --only {args.only!r}: no workload's name holds it")
    started = time.monotonic()
    env = dict(os.environ)
    warning = journal_warning(paths.state_dir())
    if warning:
        print(warning, flush=True)
    cluster = EmbeddedCluster(paths.cluster_dir())
    if not cluster.running_daemons():
        port = os.environ.get("SCRATCHBENCH_TEST_BASE_PORT")
        print(f"starting the embedded cluster in {paths.cluster_dir()}", flush=True)
        cpus = args.cpus_per_node or (2 if args.tag == "quick" else 4)
        cluster.up(ClusterSpec(nodes=2, cpus_per_node=cpus, base_port=int(port) if port else None))
    load_before = os.getloadavg()
    suite_s = None if args.reuse_history else run_suite(args, env)

    figures = advisor.load_figures()
    missing = [t for t in args.targets if t not in figures]
    if missing:
        sys.exit(f"advisor_validation: the store has no figures of {', '.join(missing)}")
    # both ways of adding a class's request time to its byte time, so that the
    # measurements decide between them (advisor.REQUEST_COST is the one it uses)
    chosen = advisor.REQUEST_COST
    plan = plan_workloads(figures, args.targets)
    by_form = {}
    for form in ("max", "sum"):
        advisor.REQUEST_COST = form
        by_form[form] = predict(figures, plan)
    advisor.REQUEST_COST = chosen
    predictions = by_form[chosen]
    predicted_at = time.time()
    print(
        f"\npredictions made at {advisor_report.date_words(predicted_at)}, before any workload ran, "
        f"from figures of {', '.join(f'{t}: {advisor_report.date_words(figures[t].models[0][0])}' for t in args.targets if figures[t].models)}",
        flush=True,
    )
    for t in args.targets:
        e = figures[t].errors.get("model_error_median")
        print(
            f"  {t}: {len(figures[t].models)} stored self-scaling model(s); the model's own "
            "validation error (median) " + (f"{e.value:.0%}" if e else "not stored")
        )

    build = Path(tempfile.mkdtemp(prefix="advisor-validation-kernel-"))
    tools = {"kernel": build_kernel(build), "request_loop": build_request_loop(build)}
    measured, works = {}, {}
    for target in args.targets:
        works[target] = _measure_target(target, plan[target], args, tools, cluster, measured)

    print(
        "\nWorkload (parts compared)" + " " * 20 + "target        times  predicted s "
        "(stored runs' interval)   measured s (min-max of repeats)   error\n"
        f"(times: the workload run that many times over on the target, its counts "
        f"multiplied, so that its prediction there is at least {LONG_ENOUGH_S:g} s)"
    )
    errors, within, short = [], [], []
    for i, w in enumerate(WORKLOADS):
        print(f"{w['name']}: {w['words']}")
        for target in args.targets:
            row = _comparison_row(
                plan[target][i],
                i,
                target,
                args,
                predictions,
                measured,
                by_form,
                chosen,
                works,
                errors,
                within,
                short,
            )
            print(f"  {'+'.join(w['parts']):43s} {target:13s} {row}")
    if errors:
        print(
            f"\nmedian relative error over {len(errors)} workload x target rows: "
            f"{100 * statistics.median(errors):.1f}% (goal: within 20%); largest "
            f"{100 * max(errors):.1f}%; measured inside the stored runs' interval: "
            f"{sum(within)} of {len(within)}"
        )
        line = short_rows_words(errors, short)
        if line:
            print(line)
    print(
        f"load average before / after: {load_before[0]:.1f} / {os.getloadavg()[0]:.1f} "
        f"(2 cores, shared); suite {'reused' if suite_s is None else f'{suite_s / 60:.1f} min'}; "
        f"benchmark total {(time.monotonic() - started) / 60:.1f} min"
    )


if __name__ == "__main__":
    main()
