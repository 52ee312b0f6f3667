#!/usr/bin/env python3
"""Benchmark (not a test): a full self-scaling exploration (seed 003) on the embedded
cluster, timed, and its prediction error on held-out workloads.

One Slurm job on one node of the embedded cluster (started under SCRATCHBENCH_HOME if it
is not running) runs the job-side driver exactly as the KernelSelfScale check does, with
the sizes of a tag of reframe_checks/workloads.yaml (nightly by default): uniqueBytes up
to 1.25 x the node's memory, the sweeps round after round until the focal values settle,
the repeated focal-point measurements, then the held-out workloads.  It prints:

* the time of the whole exploration (the goal: under 15 minutes), and its parts:
  writing the data, the search, the validation, the kernel launches;
* what the search found: the knee, each regime's focal point and its repeated
  measurement's variation, whether the focal values settled, and in how many rounds;
* the median and largest prediction error (the goal: a median of 10% or less; the paper
  reports 10-15%), and every held-out workload with its predicted and measured
  throughput;
* the machine's load average before and after, since the 2 cores here are shared.

    .venv/bin/python ci/benchmarks/selfscale_exploration.py [--tag nightly]
           [--target localscratch|sanscratch|DIR] [--runs N] [--mpi openmpi|mpich]

With --runs N the exploration is repeated and the spread (min, median, max) of its time
and errors is printed.  Exits 0 whatever the figures are; non-zero only when the
exploration could not run.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cluster import ClusterSpec, EmbeddedCluster
from scratchbench import paths, selfscale as ss
from scratchbench.sites import TAGS
from scratchbench.units import MIB, size_words
from pairs import SLURM_OPENMPI_ENV, build_kernel
from reframe_checks.lib.selfscale import search_options

REPO = Path(__file__).resolve().parents[2]

MPI_ENV = {
    "openmpi": SLURM_OPENMPI_ENV,
    "mpich": {"SLURM_MPI_TYPE": "pmi2"},
}
MPICC = {"openmpi": "mpicc.openmpi", "mpich": "mpicc.mpich"}


def workload(tag):
    import yaml

    return yaml.safe_load((REPO / "reframe_checks" / "workloads.yaml").read_text())["selfscale"][
        tag
    ]


def job_script(args, params, kernel, work):
    target = {"localscratch": "$LOCALSCRATCH", "sanscratch": "$MYSANSCRATCH"}.get(
        args.target, args.target
    )
    driver = [
        sys.executable,
        str(REPO / "reframe_checks" / "scripts" / "selfscale_search.py"),
        "--kernel",
        str(kernel),
        "--launcher",
        "srun",
        "--processes",
        str(params["processes"]),
        "--out",
        str(work / "result.json"),
        "--reports",
        str(work / "reports"),
        *search_options(params),
    ]
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in MPI_ENV[args.mpi].items())
    return (
        f"#!/bin/bash\n#SBATCH --job-name=selfscale-bench\n#SBATCH --nodes=1\n"
        f"#SBATCH --ntasks={params['processes']}\n#SBATCH --exclusive\n#SBATCH --overcommit\n"
        f"#SBATCH --time={args.time_limit}\n#SBATCH --output={work}/job.out\n"
        f"#SBATCH --error={work}/job.err\n{exports}"
        f"cd {shlex.quote(str(work))}\n"
        f"exec {' '.join(shlex.quote(a) for a in driver[:-1])} "
        f'{shlex.quote(driver[-1])} --dir "{target}"\n'
    )


def one_exploration(args, params, kernel, cluster, index):
    work = Path(tempfile.mkdtemp(prefix=f"selfscale-bench-{index}-", dir=paths.state_dir()))
    os.chmod(work, 0o755)
    script = work / "job.sh"
    script.write_text(job_script(args, params, kernel, work))
    load_before = os.getloadavg()
    started = time.monotonic()
    submit = subprocess.run(
        ["sbatch", "--wait", "--partition=batch", str(script)],
        capture_output=True,
        text=True,
        env=cluster.client_env(),
    )
    wall = time.monotonic() - started
    result_path = work / "result.json"
    if not result_path.exists():
        err = (work / "job.err").read_text() if (work / "job.err").exists() else submit.stderr
        sys.exit(
            f"selfscale_exploration: the job wrote no result (sbatch exit "
            f"{submit.returncode}); its stderr ends:\n{err[-2000:]}"
        )
    result = json.loads(result_path.read_text())
    result["_wall_s"], result["_load"] = wall, (load_before, os.getloadavg())
    result["_work"] = str(work)
    return result


def report(result):
    t = result["timing"]
    print(
        f"\nexploration on {result['target']} ({result['processes']} processes, node memory "
        f"{size_words(result['node_memory_bytes'])}), work files in {result['_work']}"
    )
    if result.get("error"):
        print(f"  FAILED: {result['error']['message']}")
        return None
    ex = ss.Exploration.from_dict(result["exploration"])
    v = ss.Validation.from_dict(result["validation"])
    launches = t["launch_s"]
    print(
        f"  time of the whole exploration:   {t['total_s'] / 60:6.1f} min "
        f"(goal: under 15 min; the Slurm job took {result['_wall_s'] / 60:.1f} min)"
    )
    print(
        f"    search (data written once):    {t['search_s']:6.0f} s, "
        f"{ex.points_measured} points, {len(ex.rounds)} rounds, "
        f"{'settled' if ex.settled else 'NOT settled'}"
    )
    print(
        f"    validation:                    {t['validation_s']:6.0f} s, "
        f"{len(v.workloads)} held-out workloads"
    )
    print(
        f"    kernel launches:               {len(launches)}, "
        f"{statistics.median(launches):.1f} s median, the first (writing "
        f"{size_words(t['prepare_bytes'])}) {launches[0]:.0f} s"
    )
    knee = ex.model.knee
    print(
        "  knee:                            "
        + (
            f"{size_words(knee.unique_bytes)} (cache {knee.cache_level / MIB:.0f} MiB/s, "
            f"device {knee.device_level / MIB:.0f} MiB/s)"
            if knee
            else "none within the range"
        )
    )
    held = ex.rounds[-1].get("top_resident") if ex.rounds else None
    if held is not None:
        print(
            f"  page cache at the largest uniqueBytes: {100 * held:.0f}% resident"
            + (" (the knee is not the device's)" if knee and held >= ss.HELD else "")
        )
    for regime, r in ex.model.regimes.items():
        cv = ex.repeat_cv(regime)
        print(
            f"  focal point, {regime:6s} regime:     {r.focal.words()}: "
            f"{r.throughput / MIB:.0f} MiB/s"
            + (f", repeated {len(ex.repeat[regime])}x: variation {100 * cv:.1f}%" if cv else "")
        )
    print(f"  prediction error, median:        {100 * v.median_error:6.1f}% (goal: 10% or less)")
    print(f"  prediction error, maximum:       {100 * v.max_error:6.1f}%")
    if v.spread is not None:
        print(
            f"  noise under it:                  {100 * v.spread:6.1f}% (one measurement "
            f"of a held-out workload against the median of all its passes)"
        )
    if v.retest is not None:
        print(
            f"  between launches:                {100 * v.retest:6.1f}% (the held-out workloads "
            "measured again in a second launch, against the first: the floor of the error)"
        )
    if v.drift is not None:
        print(
            f"  since the search:                {100 * v.drift:6.1f}% ({len(v.revisited)} of "
            "the search's own points measured again with them; the model scaled by their "
            f"median move x{v.drift_level:.2f}: {100 * v.drift_scaled_median_error:.1f}% median error)"
        )
    print(
        f"  load average before / after:     {result['_load'][0][0]:.1f} / "
        f"{result['_load'][1][0]:.1f} (2 cores, shared)"
    )
    print("  held-out workloads (predicted / measured MiB/s, error):")
    for w, p, m in sorted(
        zip(v.workloads, v.predicted, v.measured), key=lambda row: row[0].unique_bytes
    ):
        print(f"    {w.words():88s} {p / MIB:8.0f} / {m / MIB:8.0f}  {100 * abs(p - m) / m:5.1f}%")
    return t["total_s"], v.median_error, v.max_error


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tag", default="nightly", choices=TAGS)
    p.add_argument(
        "--target",
        default="localscratch",
        help="localscratch, sanscratch, or a directory every node sees",
    )
    p.add_argument("--mpi", default="openmpi", choices=sorted(MPI_ENV))
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--time-limit", default="40:00")
    args = p.parse_args()
    params = workload(args.tag)
    cluster = EmbeddedCluster(paths.cluster_dir())
    if not cluster.running_daemons():
        print(f"starting the embedded cluster in {paths.cluster_dir()}", flush=True)
        cluster.up(ClusterSpec(nodes=2, cpus_per_node=2))
    build = Path(tempfile.mkdtemp(prefix="selfscale-bench-kernel-"))
    kernel = build_kernel(build, MPICC[args.mpi])
    print(f"self-scaling exploration, {args.tag} sizes: {json.dumps(params)}", flush=True)
    figures = []
    for index in range(args.runs):
        figures.append(report(one_exploration(args, params, kernel, cluster, index)))
    done = [f for f in figures if f]
    if len(done) > 1:
        print(f"\nover {len(done)} explorations (min / median / max):")
        for name, k, scale, unit in (
            ("time", 0, 1 / 60, "min"),
            ("median error", 1, 100, "%"),
            ("maximum error", 2, 100, "%"),
        ):
            values = [f[k] * scale for f in done]
            print(
                f"  {name:14s} {min(values):7.1f} / {statistics.median(values):7.1f} / "
                f"{max(values):7.1f} {unit}"
            )


if __name__ == "__main__":
    main()
