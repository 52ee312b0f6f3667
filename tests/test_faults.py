"""Faults a real cluster throws at an unattended night, each thrown at the embedded one.

For every fault: the checks it hit fail with the scheduler's or the file system's cause
(never a bare FAIL or a pointer to a file that does not exist); the other checks carry
on; the figures already stored are unchanged (counted and checksummed before and
after); nothing is left in the queue or on the scratch target outside what the check
made; and the next run is clean.

These tests run for minutes (a node failure is declared after SlurmdTimeout, a time
limit after a minute); they are marked `slow` and CI runs them all the same.
"""

import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO, VENV_BIN, reachable_tmpdir, run, scratchbench
from cluster import ClusterSpec, EmbeddedCluster

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the embedded cluster needs root"),
]

# The check every fault is thrown at: IOTest, file per process, one rank per node,
# enough repetitions to last about a minute, so a fault lands while it runs.
LONG_IOTEST = {
    "nr": 131072,
    "nc": 4,
    "niter": 1,
    "reps": 3000,
    "nodes": 1,
    "tasks_per_node": 1,
    "cache": "none",
}
FAULT_CHECK = ["--name", "KernelIOTest.*fpp-posix", "--target", "localscratch"]
BACKGROUND_RUNS = []  # what start_run started, stopped after each test


@pytest.fixture(scope="module")
def home():
    path = reachable_tmpdir("scratchbench-faults-")
    yield path
    EmbeddedCluster(path / "cluster").down(quiet=True)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def fault_cluster(home):
    """A cluster of its own: the faults take its nodes down."""
    c = EmbeddedCluster(home / "cluster")
    c.up(ClusterSpec(nodes=2, cpus_per_node=2))
    return c


@pytest.fixture
def healthy(fault_cluster):
    """Before each fault: every node idle, no job queued (restart what a fault broke)."""
    c = fault_cluster
    status = c.status()
    if (status.get("san") or {}).get("problems"):
        c.up(c.recorded_spec())  # repairs what of the SAN a fault broke
        status = c.status()
    if not status["up"] or any(not s.startswith("idle") for s in status["nodes"].values()):
        for node, state in status.get("nodes", {}).items():
            run(["scontrol", "update", f"nodename={node}", "state=resume"], env=c.client_env())
        time.sleep(2)
        status = c.status()
        if not status["up"] or any(not s.startswith("idle") for s in status["nodes"].values()):
            c.up(c.recorded_spec())
    yield c
    # A fault test that failed half-way leaves its run going: stop it (SIGTERM stores
    # what finished), so that its lock does not fail the next test too.
    while BACKGROUND_RUNS:
        proc = BACKGROUND_RUNS.pop()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.communicate(timeout=300)


def workloads_file(home, **iotest_changes):
    table = yaml.safe_load((REPO / "reframe_checks" / "workloads.yaml").read_text())
    table["iotest"]["quick"] = dict(LONG_IOTEST, **iotest_changes)
    path = home / f"workloads-{len(list(home.glob('workloads-*')))}.yaml"
    path.write_text(yaml.safe_dump(table))
    return path


def env_of(home, workloads=None, **more):
    env = {"SCRATCHBENCH_HOME": str(home)}
    if workloads:
        env["SCRATCHBENCH_WORKLOADS"] = str(workloads)
    env.update(more)
    return env


def start_run(env, *args):
    """`scratchbench run` in the background, in its own process group."""
    full = dict(os.environ, **env)
    proc = subprocess.Popen(
        [str(VENV_BIN / "scratchbench"), "run", "--no-start", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full,
        start_new_session=True,
    )
    BACKGROUND_RUNS.append(proc)
    return proc


def poll_until(probe, timeout, interval=0.5):
    """probe()'s first truthy value, asked every ``interval`` s for ``timeout`` s; the
    last (falsy) one when the time ran out."""
    deadline = time.monotonic() + timeout
    while not (found := probe()) and time.monotonic() < deadline:
        time.sleep(interval)
    return found


def wait_for_running_job(cluster, timeout=180):
    """(job id, node) of the first RUNNING job of the cluster."""

    def running():
        out = run(["squeue", "-h", "-t", "RUNNING", "-o", "%i|%N|%j"], env=cluster.client_env())
        found = [ln.split("|") for ln in out.stdout.splitlines()]
        return next(((j, n) for j, n, name in found if name.startswith("rfm_KernelIOTest")), None)

    found = poll_until(running, timeout)
    assert found, "no KernelIOTest job started running"
    return found


def wait_for_running_step(cluster, job, timeout=180):
    """Until the job's first step (the kernel, launched by srun) runs."""

    def stepping():
        out = run(["squeue", "-h", "-s", "-j", job, "-o", "%i"], env=cluster.client_env())
        return f"{job}.0" in out.stdout.split()

    assert poll_until(stepping, timeout, interval=0.2), f"job {job} started no step"


def job_processes(job):
    """The PIDs of a Slurm job's slurmstepd processes and all their descendants."""
    parent, roots = {}, []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        if cmdline.startswith(f"slurmstepd: [{job}."):
            roots.append(int(entry.name))
    found, todo = set(roots), list(roots)
    while todo:
        pid = todo.pop()
        for child, ppid in parent.items():
            if ppid == pid and child not in found:
                found.add(child)
                todo.append(child)
    return sorted(found)


def finish(proc, timeout=900):
    stdout, stderr = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def stored_digest(home):
    """(number of stored figures, checksum of them all with their case and run)."""
    db = home / "history.sqlite"
    if not db.exists():
        return 0, ""
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT c.run_id, c.series, f.metric, f.value FROM figures f JOIN cases "
        "c USING (case_id) ORDER BY c.run_id, c.series, f.metric"
    ).fetchall()
    conn.close()
    return len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()


def assert_earlier_figures_kept(home, before):
    count, digest = before
    if not count:
        return
    conn = sqlite3.connect(home / "history.sqlite")
    rows = conn.execute(
        "SELECT c.run_id, c.series, f.metric, f.value FROM figures f JOIN cases "
        "c USING (case_id) ORDER BY c.run_id, c.series, f.metric"
    ).fetchall()
    conn.close()
    assert hashlib.sha256(repr(rows[:count]).encode()).hexdigest() == digest or _kept_in_any_order(
        rows, count, digest
    ), "figures stored before the fault changed"


def _kept_in_any_order(rows, count, digest):
    earlier = sorted({r[0] for r in rows})
    for n in range(len(earlier) + 1):
        kept = [r for r in rows if r[0] in set(earlier[:n])]
        if len(kept) == count:
            return hashlib.sha256(repr(kept).encode()).hexdigest() == digest
    return False


def no_job_left(cluster):
    """No job of the run is pending or running (a requeued job would be); a job that ended
    may still be COMPLETING while its processes clean up (Slurm's KillWait): wait for it."""

    def queue():
        return run(["squeue", "-h", "-o", "%i %T %j"], env=cluster.client_env()).stdout.strip()

    jobs = queue()
    alive = [ln for ln in jobs.splitlines() if ln.split()[1] != "COMPLETING"]
    assert not alive, f"jobs left in the queue:\n{jobs}"
    if jobs:
        poll_until(lambda: not queue(), 60, interval=1)
        jobs = queue()
    assert jobs == "", f"jobs still completing after 60 s:\n{jobs}"


def failed_lines(result):
    return [ln for ln in result.stdout.splitlines() if ln.startswith("FAILED")]


def stored_failure(home, run_dir_name):
    conn = sqlite3.connect(home / "history.sqlite")
    rows = conn.execute(
        "SELECT check_name, result, fail_reason FROM cases WHERE run_id = ? AND result = 'fail'",
        (run_dir_name,),
    ).fetchall()
    conn.close()
    return rows


def run_dir_of(result):
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("run report:"))
    return Path(line.split(":", 1)[1].strip()).parent


def the_fault_hit_one_case_and_the_other_carried_on(result, cause_pattern):
    failed = failed_lines(result)
    assert len(failed) == 1, result.stdout[-3000:]
    assert re.search(cause_pattern, failed[0]), failed[0]
    assert "rfm_job.err" not in failed[0] or os.path.exists(failed[0].split("(")[-1].rstrip(")")), (
        failed[0]
    )
    assert result.stdout.splitlines()[-1].startswith("3 passed, 1 failed"), (
        "the two kernel builds and the other environment's case passed"
    )


@pytest.mark.parametrize("fault", ["node set down", "node crashed", "scancel"])
def test_a_job_killed_under_the_check(home, healthy, fault):
    cluster = healthy
    before = stored_digest(home)
    env = env_of(home, workloads_file(home))
    proc = start_run(env, *FAULT_CHECK)
    job, node = wait_for_running_job(cluster)
    time.sleep(2)
    if fault == "node set down":
        run(
            ["scontrol", "update", f"nodename={node}", "state=down", "reason=fault test"],
            env=cluster.client_env(),
            check=True,
        )
        cause = rf"job {job} ended NODE_FAIL: a node of the job failed \(node {node} went down: fault test\)"
    elif fault == "node crashed":
        # The node dies: its slurmd, the job's slurmstepd and everything under them.
        slurmd = next(d for d in cluster.status()["daemons"] if d["name"] == f"slurmd-{node}")
        for pid in [slurmd["pid"], *job_processes(job)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        cause = rf"job {job} ended NODE_FAIL: a node of the job failed \(node {node} went down"
    else:
        run(["scancel", job], env=cluster.client_env(), check=True)
        cause = rf"job {job} ended CANCELLED: the job was cancelled"
    result = finish(proc)
    assert result.returncode == 1, result.stderr[-2000:]
    the_fault_hit_one_case_and_the_other_carried_on(
        result, cause + ".*during KernelIOTest on localscratch"
    )
    no_job_left(cluster)
    assert_earlier_figures_kept(home, before)
    stored = stored_failure(home, run_dir_of(result).name)
    assert len(stored) == 1 and re.search(cause, stored[0][2]), stored
    if fault == "scancel":
        # Slurm's SIGTERM reaches the kernel, which removes what it made before it stops.
        # sacct says CANCELLED at once, while the job's processes may still be cleaning up
        # on a loaded machine: wait for them (Slurm's KillWait bounds it) first.
        poll_until(lambda: not job_processes(job), 40)
        # The kernel's run directory is named after its job (sbk.<mode>.<time>.<job>.<pid>);
        # only this job's counts (a crashed node of an earlier case could not clean up).
        left = list((cluster.dir / "localscratch").rglob(f"sbk.*.{job}.*"))
        assert not left, left


def test_a_job_that_hits_its_time_limit(home, healthy):
    cluster = healthy
    env = env_of(home, workloads_file(home, nc=64, reps=4000, time_limit="1m"))
    result = subprocess.run(
        [str(VENV_BIN / "scratchbench"), "run", "--no-start", *FAULT_CHECK],
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
        timeout=900,
    )
    assert result.returncode == 1
    failed = failed_lines(result)
    assert len(failed) == 2, result.stdout[-3000:]
    assert all(
        re.search(r"ended TIMEOUT: the job hit its time limit of 1 min, during KernelIOTest", ln)
        for ln in failed
    ), failed
    no_job_left(cluster)


def test_a_two_node_check_behind_a_drained_node(home, healthy):
    """A job that needs a drained node would pend for ever: it is cancelled as blocked,
    naming the node and why it is out of service, and the run ends.  (A node that only
    misses a ping under load is still in service: there the job waits.)"""
    cluster = healthy
    env = env_of(home, workloads_file(home))
    run(
        ["scontrol", "update", "nodename=n2", "state=drain", "reason=fault test"],
        env=cluster.client_env(),
        check=True,
    )
    try:
        proc = start_run(env, "--name", "KernelNodeSweep.*node_count=2", "--target", "localscratch")
        result = finish(proc, timeout=600)
    finally:
        run(["scontrol", "update", "nodename=n2", "state=resume"], env=cluster.client_env())
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    failed = failed_lines(result)
    assert len(failed) == 2, result.stdout[-3000:]
    assert all(
        re.search(
            r"KernelNodeSweep on localscratch \(2 nodes\).*blocked due to reason: "
            r"ReqNodeNotAvail.*\(node n2 is drained: fault test\)",
            ln,
        )
        for ln in failed
    ), failed
    no_job_left(cluster)


def test_slurmctld_restarted_in_the_middle_of_the_suite(home, healthy):
    cluster = healthy
    before = stored_digest(home)
    env = env_of(home, workloads_file(home))
    proc = start_run(env, *FAULT_CHECK)
    job, _ = wait_for_running_job(cluster)
    # under the kernel: a restart before srun asks for its step makes srun wait a minute
    # before it asks again (Slurm's own retry), which tests nothing more
    wait_for_running_step(cluster, job)
    cluster.restart_slurmctld()
    result = finish(proc)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert result.stdout.splitlines()[-1] == "4 passed, 0 failed, 0 skipped"
    no_job_left(cluster)
    assert_earlier_figures_kept(home, before)


def test_a_scratch_target_that_fills_up(home, healthy, tmp_path):
    """An 8 MiB target: what does not fit fails with 'no space', cleans up after itself,
    and what fits (the metadata checks) still passes: one failure ruins nothing else."""
    tiny = reachable_tmpdir("scratchbench-tiny-")
    assert run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=1777", "tmpfs", tiny]).returncode == 0
    try:
        site = tmp_path / "tiny_site.py"
        text = (REPO / "site_configs" / "local.py").read_text()
        site.write_text(
            text.replace(
                'name="localscratch", path="$LOCALSCRATCH", kind="local-disk", partitions=["batch"],',
                f'name="tiny", path="{tiny}", kind="tmpfs", partitions=["batch"],',
            )
        )
        result = scratchbench(
            "run",
            "--no-start",
            "--site",
            str(site),
            "--target",
            "tiny",
            "--name",
            "KernelIOTest.*fpp-posix",
            "--name",
            "KernelMetadata",
            "--name",
            "StageInOut",
            env=env_of(home),
            timeout=900,
        )
        failed = failed_lines(result)
        assert failed, result.stdout[-3000:]
        for line in failed:
            assert re.search(r"no space|No space left|full", line, re.I), line
        assert any(
            ln.startswith("  KernelMetadata on tiny") for ln in result.stdout.splitlines()
        ), "the metadata checks, which fit, passed"
        left = [p for p in Path(tiny).iterdir()]
        assert left == [], f"left on the full target: {left}"
    finally:
        run(["umount", tiny])
        shutil.rmtree(tiny, ignore_errors=True)
    no_job_left(healthy)


@pytest.fixture(scope="module")
def small_history(home):
    """(mount, history store, env): a history store on a 2 MiB tmpfs, shared by the
    history-store faults; each puts the mount back as it found it."""
    mount = reachable_tmpdir("scratchbench-history-")
    assert run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mount]).returncode == 0
    db = mount / "history.sqlite"
    yield mount, db, env_of(home, SCRATCHBENCH_HISTORY=str(db))
    run(["umount", mount])
    shutil.rmtree(mount, ignore_errors=True)


@pytest.mark.parametrize("how", ["read-only", "full"])
def test_the_history_store_refuses_the_ingest(healthy, small_history, how):
    """The run's figures are printed, the report stays on disk, one line says why and
    `scratchbench ingest RUN_DIR` stores it whole once the store can take it."""
    mount, db, env = small_history
    if not db.exists():  # a first run fills the store with something to protect
        first = scratchbench(
            "run",
            "--no-start",
            "--name",
            "StageInOut",
            "--target",
            "sanscratch",
            env=env,
            timeout=900,
        )
        assert first.returncode == 0, first.stdout[-2000:]
    before = _digest(db)
    filler = mount / "filler"
    try:
        if how == "read-only":
            assert run(["mount", "-o", "remount,ro", mount]).returncode == 0
        else:
            subprocess.run(
                ["dd", "if=/dev/zero", f"of={filler}", "bs=4k", "count=100000"], capture_output=True
            )
        result = scratchbench(
            "run",
            "--no-start",
            "--name",
            "KernelMetadata",
            "--target",
            "sanscratch",
            "--environ",
            "gnu-openmpi",
            env=env,
            timeout=900,
        )
    finally:
        if how == "read-only":
            assert run(["mount", "-o", "remount,rw", mount]).returncode == 0
        else:
            filler.unlink(missing_ok=True)
    assert result.returncode == 5, result.stderr[-2000:]
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("scratchbench: error:")]
    assert len(errors) == 1 and str(db) in errors[0], result.stderr[-2000:]
    assert re.search(
        r"mounted read-only" if how == "read-only" else r"its file system is full", errors[0]
    ), errors[0]
    assert "NOT STORED" in result.stdout and "create_rate" in result.stdout
    run_dir = run_dir_of(result)
    assert (run_dir / "report.json").is_file()
    assert _digest(db) == before, "the failed ingest changed nothing"
    again = scratchbench("ingest", str(run_dir), env=env)
    assert again.returncode == 0, again.stderr
    report = json.loads((run_dir / "report.json").read_text())
    expected = sum(
        len(c.get("perfvalues") or {})
        for c in report["runs"][-1]["testcases"]
        if not c.get("fixture")
    )
    assert f"ingested 1 run(s), {expected} figure(s)" in again.stdout


def _digest(db):
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT * FROM figures ORDER BY figure_id").fetchall()
    conn.close()
    return len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()


def test_a_nightly_run_killed_half_way_is_picked_up_by_the_next(home, healthy):
    """SIGKILL to the whole run (as a scheduler's timeout does): no report can be
    written.  The next run cancels the job it left behind and says what was lost."""
    cluster = healthy
    env = env_of(home, workloads_file(home))
    proc = start_run(env, *FAULT_CHECK)
    job, _ = wait_for_running_job(cluster)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    queued = run(["squeue", "-h", "-o", "%i %k"], env=cluster.client_env()).stdout
    assert job in queued and "scratchbench-run:" in queued, "the killed run left its job behind"
    following = scratchbench(
        "run",
        "--no-start",
        "--name",
        "StageInOut",
        "--target",
        "sanscratch",
        env=env_of(home),
        timeout=900,
    )
    assert following.returncode == 0, following.stdout[-2000:]
    notes = [ln for ln in following.stdout.splitlines() if ln.startswith("note:")]
    assert any(
        "was interrupted: ReFrame wrote no run report" in n
        and f"cancelled its job(s) still in the queue: {job}" in n
        for n in notes
    ), notes
    no_job_left(cluster)


def test_a_run_stopped_with_sigterm_stores_what_finished(home, healthy):
    cluster = healthy
    env = env_of(home, workloads_file(home))
    proc = start_run(env, *FAULT_CHECK)
    wait_for_running_job(cluster)
    proc.send_signal(signal.SIGTERM)
    result = finish(proc)
    assert result.returncode == 128 + signal.SIGTERM
    assert "interrupted by signal 15" in result.stdout
    assert "figures added to" in result.stdout, "what finished was stored"
    no_job_left(cluster)


def test_two_runs_of_one_site_never_overlap(home, healthy):
    env = env_of(home, workloads_file(home))
    proc = start_run(env, *FAULT_CHECK)
    try:
        wait_for_running_job(healthy)
        second = scratchbench("run", "--no-start", "--name", "StageInOut", env=env_of(home))
        assert second.returncode == 6
        line = second.stderr.strip().splitlines()[-1]
        assert re.search(
            r"another run of this site holds .*run-local\.lock: run \d{8}T\d{6}Z "
            r"\(pid \d+ on \S+\) since 20\d\d-",
            line,
        ), line
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        finish(proc)
    no_job_left(healthy)


def test_a_stale_lock_is_taken_over_and_said(home, healthy):
    lock = home / "locks" / "run-local.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(
        json.dumps(
            {
                "run_id": "20200101T000000Z",
                "pid": dead.pid,
                "host": os.uname().nodename,
                "since": "2020-01-01T00:00:00",
            }
        )
    )
    result = scratchbench(
        "run",
        "--no-start",
        "--name",
        "StageInOut",
        "--target",
        "sanscratch",
        env=env_of(home),
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    assert "took over the run lock left by run 20200101T000000Z" in result.stdout


@pytest.mark.parametrize(
    "fault", ["storage server killed", "node client gone", "glusterd restarted"]
)
def test_a_san_fault_during_a_run(home, healthy, fault):
    """The SAN fails under a running check: a storage server (the brick process that holds
    the check's file) dies, or the client of the check's node, or glusterd is restarted
    (not in the data path: nothing may fail). The cases it hit fail naming the server or
    the node, nothing stored is lost, `cluster up` repairs it, the next run is clean."""
    cluster = healthy
    assert cluster.status()["san"].get("kind") == "glusterfs", cluster.status()["san"]
    before = stored_digest(home)
    # (a run glusterd's restart must not fail lasts ~20 s on the SAN, not to a kill)
    env = env_of(
        home, workloads_file(home, **({"reps": 200} if fault == "glusterd restarted" else {}))
    )
    # one environment: the other's case would run on whichever node and brick are left,
    # for the whole long workload (a minute), or be cancelled, as the timing falls
    checks = ["--name", "KernelIOTest.*fpp-posix", "--target", "sanscratch"]
    checks += ["--environ", "gnu-openmpi"]
    proc = start_run(env, *checks)
    job, node = wait_for_running_job(cluster)
    servers = cluster.dir / "san" / "servers"
    holding = poll_until(
        lambda: sorted(
            {
                p.relative_to(servers).parts[0]
                for p in servers.glob(f"s*/brick/{job}/*/*")
                if p.is_file()
            }
        ),
        60,
        interval=0.2,
    )
    assert holding, f"job {job} wrote no file on the storage servers"
    daemons = {d["name"]: d for d in cluster.status()["daemons"]}
    if fault == "storage server killed":
        server = holding[0]
        brick = next(b for b in cluster.status()["san"]["bricks"] if b["server"] == server)
        os.kill(brick["pid"], signal.SIGKILL)
        cause, repaired = (
            f"storage server {server[1:]} of sanscratch is down",
            f"storage server(s) {server} of the SAN are down",
        )
    elif fault == "node client gone":
        os.kill(daemons[f"san-client-{node}"]["pid"], signal.SIGKILL)
        cause, repaired = (
            f"node {node}'s client of sanscratch is gone",
            f"node {node}: its SAN client is gone; mounting a new one",
        )
    else:
        os.kill(daemons["glusterd"]["pid"], signal.SIGKILL)
        time.sleep(1)
        up = scratchbench("cluster", "up", env=env_of(home))
        assert up.returncode == 0 and "glusterd is not running: starting it again" in up.stderr
        cause = repaired = None
    result = finish(proc)
    if cause is None:
        assert result.returncode == 0, result.stdout[-3000:]
        assert result.stdout.splitlines()[-1] == "2 passed, 0 failed, 0 skipped"
    else:
        assert result.returncode == 1, result.stdout[-3000:]
        failed = failed_lines(result)
        assert failed, result.stdout[-3000:]
        for line in failed:
            assert cause in line, line
    no_job_left(cluster)
    assert_earlier_figures_kept(home, before)
    if repaired:
        up = scratchbench("cluster", "up", env=env_of(home))
        assert up.returncode == 0 and repaired in up.stderr, up.stderr
    assert scratchbench("cluster", "health", env=env_of(home)).returncode == 0
    again = scratchbench("run", "--no-start", *checks, env=env_of(home), timeout=900)
    assert again.returncode == 0, again.stdout[-3000:]


def test_a_dead_storage_server_whose_pid_a_zombie_holds_is_started_again(home, healthy):
    """A brick process killed and not yet reaped (PID 1 of some machines reaps late) is a
    zombie: glusterd takes its PID file for a running brick and never starts it again.
    `cluster up` starts it all the same. (A zombie of this test stands in for it.)"""
    cluster = healthy
    status = cluster.status()["san"]["bricks"]
    brick = next(b for b in status if b["server"] == "s1")
    pid_file = next(
        (cluster.dir / "san" / "run" / "gluster" / "vols" / "sanscratch").glob("*-s1-brick.pid")
    )
    assert int(pid_file.read_text()) == brick["pid"]
    os.kill(brick["pid"], signal.SIGKILL)
    zombie = subprocess.Popen(["true"])
    time.sleep(0.5)  # it exits; never waited for until the end
    try:
        pid_file.write_text(f"{zombie.pid}\n")
        health = scratchbench("cluster", "health", env=env_of(home))
        assert health.stdout.strip() == "storage server 1 of sanscratch is down", health.stdout
        up = scratchbench("cluster", "up", env=env_of(home))
        assert up.returncode == 0, up.stderr
        assert "storage server(s) s1 of the SAN are down: starting them again" in up.stderr
        assert "still wrong" not in up.stderr, up.stderr
        health = scratchbench("cluster", "health", env=env_of(home))
        assert health.returncode == 0, health.stdout
    finally:
        zombie.wait()


def test_the_storage_servers_disks_fill_up(home, healthy):
    """Both storage servers' disks full (filled on the servers themselves, as another
    user's data would): the cases that write fail naming the full servers, nothing stored
    is lost, and once room is made `cluster up` puts every node back in service."""
    cluster = healthy
    before = stored_digest(home)
    fillers = []
    try:
        for disk in sorted((cluster.dir / "san" / "servers").glob("s[0-9]*")):
            if not disk.is_dir():
                continue
            room = os.statvfs(disk)
            filler = disk / "filler"
            size = room.f_bavail * room.f_frsize - (4 << 20)
            run(["fallocate", "-l", str(size), filler], check=True)
            fillers.append(filler)
        health = scratchbench("cluster", "health", env=env_of(home))
        assert health.returncode == 1
        assert "storage server 1 of sanscratch is full" in health.stdout, health.stdout
        result = scratchbench(
            "run",
            "--no-start",
            "--name",
            "KernelIOTest.*fpp-posix",
            "--target",
            "sanscratch",
            env=env_of(home),
            timeout=900,
        )
        assert result.returncode == 1, result.stdout[-3000:]
        failed = failed_lines(result)
        assert failed, result.stdout[-3000:]
        for line in failed:
            assert re.search(r"storage server \d of sanscratch is full", line), line
        assert_earlier_figures_kept(home, before)
    finally:
        for filler in fillers:
            filler.unlink()
    no_job_left(cluster)
    up = scratchbench("cluster", "up", env=env_of(home))
    assert up.returncode == 0, up.stderr
    assert scratchbench("cluster", "health", env=env_of(home)).returncode == 0
    assert all(s.startswith("idle") for s in cluster.status()["nodes"].values())
