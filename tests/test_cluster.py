"""The embedded cluster: idempotent up, status, down by PID, and start-up failures.

Failures must give one line naming the cause (and the daemon's log when a daemon
died), exit non-zero, leave no daemon running and lose nothing already stored.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, reachable_tmpdir, run, scratchbench
from cluster import ClusterSpec, EmbeddedCluster
from cluster.embedded import process_alive
from cluster.san import (
    DEFAULT_BRICK_SIZE,
    MIN_BRICK_SIZE,
    fitted_brick_size,
    validate_san_options,
)
from scratchbench.errors import ClusterError

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the embedded cluster needs root")


def processes_mentioning(text):
    """PIDs of live processes whose command line mentions text (or, for a home
    directory, the munge directory of its cluster, which lives under /run)."""
    texts = [text, str(EmbeddedCluster(Path(text) / "cluster").munge_dir)]
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if any(t in cmdline for t in texts) and process_alive(int(entry.name)):
                pids.append(int(entry.name))
    return pids


@pytest.fixture
def spare_home():
    home = reachable_tmpdir("scratchbench-spare-")
    yield home
    EmbeddedCluster(home / "cluster").down(quiet=True)
    shutil.rmtree(home, ignore_errors=True)


def test_up_twice_is_a_no_op(cluster):
    before = [d["pid"] for d in cluster.status()["daemons"]]
    status = cluster.up(ClusterSpec(**cluster.status()["spec"]))
    assert [d["pid"] for d in status["daemons"]] == before, "nothing was restarted"
    assert status["up"]


def test_status_shows_nodes_and_daemons(cluster):
    result = scratchbench(
        "cluster", "status", "--json", env={"SCRATCHBENCH_HOME": str(cluster.dir.parent)}
    )
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["up"] and status["nodes"] == {"n1": "idle", "n2": "idle"}
    names = [d["name"] for d in status["daemons"]]
    assert names == [
        "munged",
        "mariadbd",
        "slurmdbd",
        "slurmctld",
        "glusterd",
        "san-client-login",
        "slurmd-n1",
        "san-client-n1",
        "slurmd-n2",
        "san-client-n2",
    ]
    assert all(d["alive"] for d in status["daemons"])
    text = scratchbench("cluster", "status", env={"SCRATCHBENCH_HOME": str(cluster.dir.parent)})
    assert "node n1: idle" in text.stdout and "MYSANSCRATCH" in text.stdout


def test_per_job_scratch_directory_is_made_and_removed(cluster, tmp_path):
    env = {"SLURM_CONF": str(cluster.slurm_conf)}
    script = tmp_path / "job.sh"
    script.write_text(
        '#!/bin/bash\necho "dir=$MYSANSCRATCH"\ntest -d "$MYSANSCRATCH" && '
        'test -w "$MYSANSCRATCH" && echo writable\n'
        'touch "$MYSANSCRATCH/left-behind"\n'
    )
    out = tmp_path / "job.out"
    result = run(
        ["sbatch", "--wait", "--exclusive", "-N", "2", "-o", out, script], env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "writable" in text
    directory = text.split("dir=")[1].split()[0]
    san_root = cluster.status()["spec"]["san_root"]
    assert directory.startswith(san_root + "/")
    deadline = time.monotonic() + 30
    while os.path.exists(directory) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not os.path.exists(directory), "the epilog removes the per-job directory"
    assert os.path.isdir(san_root), "and nothing above it"


def test_the_reframe_backend_names_the_nodes_out_of_service(cluster, monkeypatch):
    # What the embedded site's ReFrame backend asks before it cancels a job pending as
    # ReqNodeNotAvail: every node in service here (a job then waits), one drained there.
    from scratchbench.slurm_embedded import nodes_out_of_service

    env = cluster.client_env()
    monkeypatch.setenv("SLURM_CONF", env["SLURM_CONF"])
    assert nodes_out_of_service() == {}
    run(
        ["scontrol", "update", "nodename=n2", "state=drain", "reason=backend test"],
        env=env,
        check=True,
    )
    try:
        assert nodes_out_of_service() == {"n2": "drained: backend test"}
    finally:
        run(["scontrol", "update", "nodename=n2", "state=resume"], env=env, check=True)
    assert nodes_out_of_service() == {}


BACKEND_PROBE = """
import os, sys, time
import reframe.core.config as config
import reframe.core.runtime as rt
site = config.load_config(sys.argv[1])
site.select_subconfig("embedded:batch")
rt.init_runtime(site)
import scratchbench.slurm_embedded
from reframe.core.backends import getlauncher, getscheduler
from reframe.core.schedulers import Job
sched = getscheduler("slurm_embedded")()
jobs = []
for name, body in (("ok", "sleep 1"), ("fails", "exit 3")):
    job = Job.create(sched, getlauncher("local")(), name=name, workdir=sys.argv[2],
                     sched_access=["--partition=batch"])
    job.prepare([body], trap_errors=False)
    job.submit()
    jobs.append(job)
sched.poll(*jobs)
print("first", *sorted({job.state for job in jobs}))
deadline = time.time() + 120
while not all(sched.finished(job) for job in jobs) and time.time() < deadline:
    time.sleep(0.2)
    sched.poll(*jobs)
for job in jobs:
    print(job.name, job.state, job.exitcode, ",".join(job.nodelist or []),
          job.completion_time is not None, sched._ended_in_memory(job))
"""


def test_the_reframe_backend_reads_job_states_from_slurmctld(cluster, tmp_path):
    # squeue while a job waits or runs, scontrol for the exit code and end of a job that
    # has just ended (sacct only for one slurmctld forgot): what the checks' poll sees
    env = dict(
        cluster.client_env(), LMOD_CMD="/usr/share/lmod/lmod/libexec/lmod", PYTHONPATH=str(REPO)
    )
    probe = tmp_path / "probe.py"
    probe.write_text(BACKEND_PROBE)
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    # (ReFrame writes job scripts and outputs where it runs: in jobs/, not the checkout)
    out = run(
        [sys.executable, str(probe), str(REPO / "site_configs" / "local.py"), str(jobs)],
        env=env,
        cwd=jobs,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert set(lines["first"].split()) <= {"PENDING", "CONFIGURING", "RUNNING"}, lines
    assert lines["ok"].split()[:2] == ["COMPLETED", "0"], lines
    assert lines["fails"].split()[:2] == ["FAILED", "3"], lines
    for name in ("ok", "fails"):
        nodes, completed, from_slurmctld = lines[name].split()[2:]
        assert nodes in ("n1", "n2") and completed == "True" and from_slurmctld == "True"


def test_down_stops_only_its_own_daemons_by_pid(spare_home, cluster):
    decoy_dir = reachable_tmpdir("decoy-")
    decoy = decoy_dir / "slurmd"
    shutil.copy("/bin/sleep", decoy)
    sleeper = subprocess.Popen([str(decoy), "300"])
    session_pids = [d["pid"] for d in cluster.status()["daemons"]]
    try:
        env = {"SCRATCHBENCH_HOME": str(spare_home)}
        up = scratchbench("cluster", "up", "--nodes", "1", "--base-port", "37817", env=env)
        assert up.returncode == 0, up.stderr
        pids = [d["pid"] for d in EmbeddedCluster(spare_home / "cluster").status()["daemons"]]
        # munged, mariadbd, slurmdbd, slurmctld, glusterd, this machine's SAN client,
        # slurmd-n1 and n1's own SAN client
        assert len(pids) == 8 and all(process_alive(p) for p in pids)
        down = scratchbench("cluster", "down", env=env)
        assert down.returncode == 0, down.stderr
        assert "stopped 8 daemons" in down.stderr
        assert not any(process_alive(p) for p in pids)
        assert processes_mentioning(str(spare_home)) == [], "the storage servers stopped too"
        assert str(spare_home) not in Path("/proc/self/mountinfo").read_text(), (
            "the SAN's mounts are gone"
        )
        assert sleeper.poll() is None, "a process merely named slurmd is left alone"
        assert all(process_alive(p) for p in session_pids), "another cluster is left alone"
        again = scratchbench("cluster", "down", env=env)
        assert again.returncode == 0 and "not running" in again.stderr
    finally:
        sleeper.send_signal(signal.SIGTERM)
        sleeper.wait()
        shutil.rmtree(decoy_dir)


def one_line_error(result):
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("scratchbench: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_port_in_use(spare_home):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 37827))
    holder.listen()
    stored = spare_home / "results" / "keep.txt"
    stored.parent.mkdir(parents=True)
    stored.write_text("earlier results")
    try:
        result = scratchbench(
            "cluster",
            "up",
            "--nodes",
            "1",
            "--base-port",
            "37817",
            env={"SCRATCHBENCH_HOME": str(spare_home)},
        )
    finally:
        holder.close()
    assert result.returncode == 3
    line = one_line_error(result)
    assert "port 37827" in line and "slurmd-n1" in line and "--base-port" in line
    assert processes_mentioning(str(spare_home)) == []
    assert stored.read_text() == "earlier results"


def test_daemon_that_dies_is_named_with_its_log(spare_home):
    # A damaged accounting database: mariadbd exits during start-up.
    datadir = spare_home / "cluster" / "mysql" / "data"
    (datadir / "mysql").mkdir(parents=True)
    (datadir / "ibdata1").mkdir()
    result = scratchbench(
        "cluster",
        "up",
        "--nodes",
        "1",
        "--base-port",
        "37817",
        env={"SCRATCHBENCH_HOME": str(spare_home)},
    )
    assert result.returncode == 3
    line = one_line_error(result)
    assert "mariadbd exited during start-up" in line and "log: " in line
    assert line.split("log: ")[1].endswith("mariadbd.log")
    assert processes_mentioning(str(spare_home)) == [], "munged was stopped again"


@pytest.mark.parametrize("kind", ["missing-parent", "not-a-directory", "read-only"])
def test_bad_scratch_root(spare_home, kind):
    mount = None
    if kind == "missing-parent":
        root, expect = spare_home / "no" / "such" / "dir", "does not exist"
    elif kind == "not-a-directory":
        root, expect = spare_home / "afile", "is not a directory"
        root.write_text("x")
    else:
        mount = spare_home / "ro"
        mount.mkdir()
        assert run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", mount]).returncode == 0
        root, expect = mount / "san", "is not writable"
    try:
        result = scratchbench(
            "cluster",
            "up",
            "--nodes",
            "1",
            "--base-port",
            "37817",
            "--scratch-root",
            str(root),
            env={"SCRATCHBENCH_HOME": str(spare_home)},
        )
    finally:
        if mount:
            run(["umount", mount])
    assert result.returncode == 3
    assert expect in one_line_error(result)
    assert processes_mentioning(str(spare_home)) == []


def test_a_cluster_under_a_private_directory_runs_jobs(tmp_path):
    """A checkout under /root (mode 700) keeps its cluster there: munged, which runs as
    user munge, finds its socket and key under /run instead."""
    home = tmp_path / "home"
    private = tmp_path.parent
    assert not os.stat(private).st_mode & 0o001, "the test needs a directory others cannot enter"
    env = {"SCRATCHBENCH_HOME": str(home)}
    try:
        up = scratchbench("cluster", "up", "--nodes", "1", env=env)
        assert up.returncode == 0, up.stderr
        c = EmbeddedCluster(home / "cluster")
        assert str(c.munge_dir).startswith("/run/scratchbench/")
        out = home / "job.out"
        job = run(
            [
                "sbatch",
                "--wait",
                "--exclusive",
                "-o",
                out,
                "--wrap",
                'echo "scratch=$MYSANSCRATCH"; test -d "$MYSANSCRATCH" && echo made',
            ],
            env=c.client_env(),
            timeout=120,
        )
        assert job.returncode == 0, job.stderr
        assert "made" in out.read_text()
    finally:
        EmbeddedCluster(home / "cluster").down(quiet=True)
    assert processes_mentioning(str(home)) == []


def test_two_clusters_at_once_take_their_own_ports(cluster):
    """Beside the session's cluster, two more under two homes (two admins on one
    machine): each takes free ports and runs a check through its own Slurm."""
    homes = [reachable_tmpdir("scratchbench-two-") for _ in range(2)]
    try:
        specs = []
        for home in homes:
            up = scratchbench("cluster", "up", "--nodes", "1", env={"SCRATCHBENCH_HOME": str(home)})
            assert up.returncode == 0, up.stderr
            specs.append(EmbeddedCluster(home / "cluster").status())
        ports = [set(ClusterSpec(**s["spec"]).ports().values()) for s in specs]
        ports.append(set(ClusterSpec(**cluster.status()["spec"]).ports().values()))
        assert not (ports[0] & ports[1] or ports[0] & ports[2] or ports[1] & ports[2])
        assert all(s["ports"] == "auto" for s in specs)
        for home in homes:
            result = scratchbench(
                "run",
                "--no-start",
                "--name",
                "StageInOut",
                "--target",
                "sanscratch",
                env={"SCRATCHBENCH_HOME": str(home)},
            )
            assert result.returncode == 0, result.stdout[-1500:] + result.stderr[-1500:]
            assert "local scheduler" not in result.stderr
            assert result.stdout.splitlines()[-1] == "1 passed, 0 failed, 0 skipped"
            report = next((home / "results" / "runs").glob("*/report.json"))
            case = next(
                c
                for c in json.loads(report.read_text())["runs"][-1]["testcases"]
                if c.get("check_class") == "StageInOut"
            )
            jobs = run(
                ["sacct", "-n", "-X", "-j", str(case["jobid"]), "-o", "JobName%40,State"],
                env=EmbeddedCluster(home / "cluster").client_env(),
            )
            # (Under load slurmdbd may miss the job-start record and name the job
            # "allocation"; the completion under this job id is what counts.)
            assert "COMPLETED" in jobs.stdout, "the check ran through this home's own Slurm"
    finally:
        for home in homes:
            EmbeddedCluster(home / "cluster").down(quiet=True)
            shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize(
    "args,expect",
    [
        (["--nodes", "0"], "--nodes 0: expected 1 to 16"),
        (["--base-port", "80"], "--base-port 80: expected 1024"),
        (["--san-servers", "17"], "--san-servers 17: expected 1 to 16"),
        (["--san-stripe-size", "3m"], "--san-stripe-size 3145728: expected a power of two"),
        (["--san-brick-size", "1x"], "size '1x': expected a number of bytes"),
    ],
)
def test_bad_options(spare_home, args, expect):
    result = scratchbench("cluster", "up", *args, env={"SCRATCHBENCH_HOME": str(spare_home)})
    assert result.returncode == 3 and expect in one_line_error(result)


def test_the_default_storage_server_disks_fit_the_disk_below():
    """The SAN's default disks (1.5 x memory each) shrink where the disk below has less
    room: 3/4 of its free space shared out, so the SAN never offers room it does not
    have (a nightly self-scaling search sized by the SAN's free space once filled this
    machine's 40 GiB validation image through the SAN's sparse images: I/O errors)."""
    gib = 1 << 30
    assert fitted_brick_size(1000 * gib, 2) == DEFAULT_BRICK_SIZE
    assert fitted_brick_size(38 * gib, 2) == 14 * gib < DEFAULT_BRICK_SIZE
    assert 2 * fitted_brick_size(38 * gib, 2) <= 38 * gib * 3 // 4
    assert fitted_brick_size(gib, 4) == MIN_BRICK_SIZE
    # 0 asks for the default; an explicit size below the least is still refused
    validate_san_options(2, 0, 0)
    with pytest.raises(ClusterError, match="--san-brick-size 256 MiB: expected at least"):
        validate_san_options(2, 256 << 20, 0)


def test_a_san_that_cannot_start_falls_back_to_a_plain_directory_and_says_so(spare_home):
    """This cluster's SAN address is taken by another program: `up` says so in one line,
    the per-job directories go to a plain directory, and the site config describes the
    target as what it is."""
    record = spare_home / "cluster" / "san" / "address"
    record.parent.mkdir(parents=True)
    record.write_text("127.0.0.200\n")
    holder = socket.socket()
    holder.bind(("127.0.0.200", 24007))
    holder.listen()
    env = {"SCRATCHBENCH_HOME": str(spare_home)}
    try:
        up = scratchbench("cluster", "up", "--nodes", "1", env=env)
    finally:
        holder.close()
    assert up.returncode == 0, up.stderr
    said = [ln for ln in up.stderr.splitlines() if "the GlusterFS SAN cannot start" in ln]
    assert len(said) == 1 and "127.0.0.200:24007" in said[0] and "plain directory" in said[0]
    status = scratchbench("cluster", "status", env=env).stdout
    assert "a plain directory of this machine, not a SAN" in status
    describe = run(
        [
            sys.executable,
            "-c",
            "import runpy; c = runpy.run_path('site_configs/local.py')"
            "['site_configuration']; t = c['systems'][0]['partitions'][0]['extras']"
            "['scratch_targets']['sanscratch']; print(t['kind']); "
            "print(t['description'])",
        ],
        env=env,
        cwd=Path(__file__).resolve().parents[1],
    )
    kind, description = describe.stdout.splitlines()[:2]
    assert kind == "other" and "NOT a network file system" in description, describe.stderr
