"""A site as the issue describes it: root runs the cluster, a normal user runs
scratchbench on it with their own checkout, venv, state and site config."""

import os
import re
import shutil
import subprocess

import pytest

from conftest import NormalUser, reachable_tmpdir

SITE = '''"""A site config written by a user from example_slurm.py."""

from scratchbench import paths
from scratchbench.sites import (ScratchTarget, polling, results_logging, results_storage,
                                with_scratch_targets)

RESULTS = paths.results_dir()
MODULEPATH = "{modulepath}"

site_configuration = with_scratch_targets({{
    "systems": [{{
        "name": "usersite",
        "descr": "the embedded cluster, as a site's users see theirs",
        "hostnames": [".*"],
        "modules_system": "lmod",
        "stagedir": str(RESULTS / "stage"),
        "outputdir": str(RESULTS / "output"),
        "partitions": [{{
            "name": "batch",
            "descr": "2 nodes x 2 CPUs",
            "scheduler": "slurm",
            "launcher": "srun",
            "access": ["--partition=batch"],
            "environs": ["builtin", "gnu-openmpi"],
            "prepare_cmds": ["source /usr/share/lmod/lmod/init/bash"],
            "max_jobs": 4,
            "processor": {{"num_cpus": 2}},
            "extras": {{"nodes": 2, "cpus_per_node": 2, "overcommit": True}},
        }}],
    }}],
    "environments": [
        {{"name": "builtin", "cc": "gcc", "features": ["serial"],
          "target_systems": ["usersite"]}},
        {{"name": "gnu-openmpi", "modules": [{{"name": "openmpi/4.1.4", "path": MODULEPATH}}],
          "cc": "mpicc.openmpi", "features": ["mpi", "openmpi"],
          "extras": {{"mpi": "openmpi"}}, "target_systems": ["usersite"]}},
    ],
    "logging": results_logging(RESULTS),
    "storage": results_storage(RESULTS),
    "general": [polling()],
}}, system="usersite", targets=[
    ScratchTarget(name="scratch", path="{scratch}/$USER", kind="parallel",
                  partitions=["batch"], description="a shared /scratch/$USER"),
    ScratchTarget(name="sanscratch", path="$MYSANSCRATCH", kind="san", partitions=["batch"],
                  per_job=True, cleanup="scheduler", description="per-job directory"),
])
'''


def users_site(user):
    """The user's site config in its home, and its /scratch/$USER-like directory."""
    scratch = user.root / "scratch"
    (scratch / user.name).mkdir(parents=True, exist_ok=True)
    os.chown(scratch / user.name, user.uid, user.gid)
    site = user.home / "mysite.py"
    site.write_text(
        SITE.format(modulepath=user.checkout / "site_configs" / "modulefiles", scratch=scratch)
    )
    os.chown(site, user.uid, user.gid)
    return site, scratch / user.name


@pytest.mark.slow
def test_a_normal_user_checks_the_site_and_runs_the_quick_suite(cluster, nobody_checkout):
    user = nobody_checkout
    assert user.setup_result.returncode == 0, user.setup_result.stderr[-3000:]
    site, scratch = users_site(user)
    env = {"SLURM_CONF": str(cluster.slurm_conf)}

    checked = user.scratchbench("check-site", site, env=env)
    print(checked.stdout)  # shown with pytest -s
    assert checked.returncode == 0, checked.stdout + checked.stderr[-3000:]
    for target in ("scratch", "sanscratch"):
        assert re.search(
            rf"^ok     TargetReady {target} \[batch gnu-openmpi\]: .* is writable "
            "from a job",
            checked.stdout,
            re.M,
        ), checked.stdout
    assert re.search(
        r"^ok     MPIReady \[batch gnu-openmpi\]: modules load", checked.stdout, re.M
    ), checked.stdout

    # one target (the shared one, whose leftovers it checks): the per-job one runs the
    # same checks, and check-site above has shown it writable from a job; the whole
    # suite on both targets cost CI 2.5-6 minutes
    ran = user.scratchbench("run", "--site", site, "--tag", "quick", "--target", "scratch", env=env)
    last = ran.stdout.splitlines()[-1] if ran.stdout else ""
    print(last)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    counts = re.fullmatch(r"(\d+) passed, 0 failed, (\d+) skipped", last)
    assert counts and int(counts.group(1)) >= 10, last
    runs = list((user.home / "sb" / "results" / "runs").iterdir())
    assert len(runs) == 1 and runs[0].stat().st_uid == user.uid
    job_outputs = list(runs[0].glob("stage/usersite/batch/*/*/rfm_job.out")) + list(
        runs[0].glob("output/usersite/batch/*/*/rfm_job.out")
    )
    assert job_outputs and all(p.stat().st_uid == user.uid for p in job_outputs), (
        "Slurm ran the jobs as the user"
    )
    history = user.home / "sb" / "history.sqlite"
    assert history.is_file() and history.stat().st_uid == user.uid
    assert list(scratch.iterdir()) == [], "the checks leave nothing behind"


@pytest.mark.slow
def test_two_users_run_at_once_without_collisions(cluster, nobody_checkout):
    """nobody and daemon, each with its own state and site config (daemon runs
    nobody's checkout, read-only to it), run at the same time on the same cluster."""
    first = nobody_checkout
    assert first.setup_result.returncode == 0, first.setup_result.stderr[-3000:]
    second = NormalUser(
        reachable_tmpdir("sb-site-user2-"), "", name="daemon", checkout=first.checkout
    )
    second.home.mkdir()
    for path in (second.root, second.home):
        os.chown(path, second.uid, second.gid)
    env = {"SLURM_CONF": str(cluster.slurm_conf)}
    procs = []
    for user in (first, second):
        site, _ = users_site(user)
        cmd = user.command(
            [
                user.checkout / ".venv" / "bin" / "scratchbench",
                "run",
                "--site",
                site,
                "--tag",
                "quick",
                "--name",
                "KernelIOTest.*fpp-posix",
                "--name",
                "StageInOut",
            ],
            env,
        )
        procs.append(
            subprocess.Popen(
                cmd, cwd=first.checkout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
    outs = [p.communicate(timeout=1500) for p in procs]
    for user, proc, (out, err) in zip((first, second), procs, outs):
        assert proc.returncode == 0, f"{user.name}: {out[-3000:]}{err[-2000:]}"
        assert re.fullmatch(r"[1-9]\d* passed, 0 failed, 0 skipped", out.splitlines()[-1]), out
        report = re.search(r"^run report:\s+(\S+)", out, re.M).group(1)
        assert report.startswith(str(user.home / "sb" / "results" / "runs")), report
        assert os.stat(report).st_uid == user.uid
    shutil.rmtree(second.root)
