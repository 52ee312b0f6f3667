#!/usr/bin/env python3
"""Benchmark (not a test): a nightly run at site scale on the embedded cluster, and the
harness's own cost per check.

Brings up a 4-node embedded cluster in a home of its own, declares 4 scratch targets
(a tmpfs, the local disk, a loop-mounted ext4 image, the per-job directory), runs one
tag of the suite on all of them (every kernel mode, staging, sweeps) and prints:

* the run's total wall time;
* per check, where its time went: ReFrame's setup and compile stages, the time Slurm
  held the job (submission to end, from slurmctld's log, to the millisecond), and the
  time after the job (ReFrame's run stage, which lasts to the case's cleanup, minus
  Slurm's time: noticing the end, sanity, performance, finalize, cleanup);
* the harness overhead per check = setup + compile + the time after the job (the goal:
  median under 1 s, 90th percentile under 2 s), as min / median / p90 / max.  A case
  another depends on (StageInOut for PerJobScratchRemoved) keeps its stage directory
  until the dependent has run, so its time after the job is left out, and named.

Waiting for a free slot of the partition (max_jobs) or for free nodes is not overhead:
it is how many exclusive jobs the cluster can hold at once, and is printed apart.

    .venv/bin/python ci/benchmarks/site_scale.py [--tag nightly] [--workloads FILE]
           [--nodes 4] [--keep]
    .venv/bin/python ci/benchmarks/site_scale.py --measure HOME   # a kept home's last run

Needs root (the cluster, the mounts).  Exits 0 whatever the figures are; non-zero only
when the run could not be made.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SB = Path(sys.executable).parent / "scratchbench"


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def site_config(home, tmpfs, loop):
    """local.py with four scratch targets on the embedded system."""
    text = (REPO / "site_configs" / "local.py").read_text()
    marker = """    ScratchTarget(
        name="localscratch", path="$LOCALSCRATCH", kind="local-disk", partitions=["batch"],"""
    extra = f'''    ScratchTarget(name="tmpfs", path="{tmpfs}", kind="tmpfs", partitions=["batch"],
                  description="a tmpfs (memory)"),
    ScratchTarget(name="ext4loop", path="{loop}", kind="local-disk", partitions=["batch"],
                  description="a loop-mounted ext4 image on the local disk"),
'''
    if marker not in text:
        sys.exit(
            "site_scale: site_configs/local.py no longer has the localscratch target "
            "this benchmark extends"
        )
    path = home / "site_scale.py"
    path.write_text(text.replace(marker, extra + marker))
    return path


def mount_targets(home):
    tmpfs, loop, image = home / "tmpfs", home / "ext4loop", home / "ext4.img"
    for d in (tmpfs, loop):
        d.mkdir()
    if sh(["mount", "-t", "tmpfs", "-o", "size=4g,mode=1777", "tmpfs", str(tmpfs)]).returncode:
        sys.exit(f"site_scale: cannot mount a tmpfs on {tmpfs} (root needed)")
    sh(["truncate", "-s", "8G", str(image)])
    sh(["mkfs.ext4", "-q", "-F", str(image)])
    if sh(["mount", "-o", "loop", str(image), str(loop)]).returncode:
        sh(["umount", str(tmpfs)])
        sys.exit(f"site_scale: cannot loop-mount {image}")
    os.chmod(loop, 0o1777)
    return tmpfs, loop, image


def slurmctld_times(log):
    """{job id: (submitted, ended)} in Unix seconds to the millisecond, from slurmctld's
    log (sacct keeps whole seconds, as coarse as the overheads measured)."""
    submitted, ended = {}, {}
    for line in log.read_text(errors="replace").splitlines():
        match = re.match(
            r"\[(\S+)\] (_slurm_rpc_submit_batch_job|_job_complete): JobId=(\d+)"
            r"( done)?",
            line,
        )
        if not match:
            continue
        when = datetime.datetime.fromisoformat(match.group(1)).timestamp()
        if match.group(2) == "_slurm_rpc_submit_batch_job":
            submitted[match.group(3)] = when
        elif match.group(4):
            ended[match.group(3)] = when
    return {job: (submitted[job], ended[job]) for job in submitted if job in ended}


def overheads(run_dir, cluster_dir):
    """Per passed case, where its time went.  ReFrame's time_run runs from the job's
    submission to the end of the case's last stage (its cleanup included), so the time
    after the job = time_run - Slurm's submit-to-end: noticing the end, sanity,
    performance, finalize, cleanup.  A case another case depends on keeps its stage
    directory, and so its cleanup, until the dependent has run: its time after the job
    is not the harness's, and it is left out (returned apart)."""
    report = json.loads((run_dir / "report.json").read_text())
    cases = report["runs"][-1]["testcases"]
    times = slurmctld_times(cluster_dir / "log" / "slurmctld.log")
    depended_on = {dep[0] for case in cases for dep in case.get("dependencies_actual") or []}
    rows, deferred = [], []
    for case in cases:
        if case.get("fixture") or not case.get("jobid") or case.get("result") != "pass":
            continue
        if case["jobid"] not in times:
            continue
        submitted, ended = times[case["jobid"]]
        parts = {
            k: float(case.get(k) or 0)
            for k in (
                "time_setup",
                "time_compile",
                "time_run",
                "time_sanity",
                "time_performance",
                "time_total",
            )
        }
        name = case.get("check_class") or case["display_name"].split()[0]
        after = max(0.0, parts["time_run"] - (ended - submitted))
        if case.get("unique_name") in depended_on:
            deferred.append((case["display_name"], after))
            continue
        rows.append(
            {
                "check": name,
                "setup": parts["time_setup"],
                "compile": parts["time_compile"],
                "after the job": after,
                "of which sanity": parts["time_sanity"],
                "of which performance": parts["time_performance"],
                "in Slurm": ended - submitted,
                "waiting for a slot": max(
                    0.0,
                    parts["time_total"]
                    - parts["time_setup"]
                    - parts["time_compile"]
                    - parts["time_run"],
                ),
                "overhead": parts["time_setup"] + parts["time_compile"] + after,
            }
        )
    return report, rows, deferred


def spread(values):
    values = sorted(values)
    if not values:
        return "n/a"
    p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
    return f"{values[0]:6.2f} {statistics.median(values):6.2f} {p90:6.2f} {values[-1]:6.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", default="nightly", choices=["quick", "nightly", "acceptance"])
    parser.add_argument("--workloads", help="a workloads.yaml of other sizes")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="keep the home and the cluster")
    parser.add_argument(
        "--measure",
        metavar="HOME",
        help="only print the overheads of the last run kept in HOME (--keep)",
    )
    args = parser.parse_args()
    if args.measure:
        runs = sorted((Path(args.measure) / "results" / "runs").glob("*/report.json"))
        if not runs:
            sys.exit(f"site_scale: {args.measure}: no run report under results/runs")
        print_overheads(runs[-1].parent, Path(args.measure) / "cluster")
        return 0
    if os.geteuid() != 0:
        sys.exit("site_scale: needs root (the embedded cluster and the mounts)")
    home = Path(tempfile.mkdtemp(prefix="sb-site-scale-", dir="/var/tmp"))
    os.chmod(home, 0o755)
    env = dict(os.environ, SCRATCHBENCH_HOME=str(home))
    if args.workloads:
        env["SCRATCHBENCH_WORKLOADS"] = str(Path(args.workloads).resolve())
    tmpfs, loop, image = mount_targets(home)
    try:
        print(f"site_scale: home {home}; starting a {args.nodes}-node cluster", flush=True)
        up = sh([str(SB), "cluster", "up", "--nodes", str(args.nodes)], env=env)
        if up.returncode:
            sys.exit(f"site_scale: cluster up failed: {up.stderr.strip().splitlines()[-1:]}")
        site = site_config(home, tmpfs, loop)
        print(
            f"site_scale: running the {args.tag} tag on 4 targets x {args.nodes} nodes "
            f"(output in {home}/results/runs)",
            flush=True,
        )
        t0 = time.monotonic()
        run = sh([str(SB), "run", "--no-start", "--tag", args.tag, "--site", str(site)], env=env)
        wall = time.monotonic() - t0
        print(run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-500:])
        marker = "run report:   "
        report_line = next((ln for ln in run.stdout.splitlines() if ln.startswith(marker)), None)
        if not report_line:
            sys.exit(f"site_scale: the run wrote no report:\n{run.stderr[-2000:]}")
        run_dir = Path(report_line[len(marker) :]).parent
        print_overheads(run_dir, home / "cluster", wall)
    finally:
        if not args.keep:
            sh([str(SB), "cluster", "down"], env=env)
            sh(["umount", str(loop)])
            sh(["umount", str(tmpfs)])
            shutil.rmtree(home, ignore_errors=True)
    return 0


def print_overheads(run_dir, cluster_dir, wall=None):
    report, rows, deferred = overheads(run_dir, cluster_dir)
    cases = len(report["runs"][-1]["testcases"])
    print(
        f"\nTotal wall time: {f'{wall:.0f} s' if wall else 'not timed'} for {cases} test "
        f"cases ({len(rows)} passed jobs measured)"
    )
    for name, after in deferred:
        print(
            f"  left out: {name} ({after:.1f} s after its job: its cleanup waits for the "
            "case that depends on it)"
        )
    print("\nPer check, seconds: min / median / p90 / max")
    for key in (
        "setup",
        "compile",
        "after the job",
        "of which sanity",
        "of which performance",
        "in Slurm",
        "waiting for a slot",
        "overhead",
    ):
        print(f"  {key:<20} {spread([r[key] for r in rows])}")
    print(
        "\nHarness overhead per check (setup + compile + the time after its job: noticing "
        "its end, sanity, performance, finalize, cleanup) by check:"
    )
    for check in sorted({r["check"] for r in rows}):
        mine = [r["overhead"] for r in rows if r["check"] == check]
        print(f"  {check:<22} n={len(mine):<3} {spread(mine)}")


if __name__ == "__main__":
    sys.exit(main())
