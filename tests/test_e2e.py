"""End to end: the quick suite through the real embedded Slurm cluster and ReFrame.

Asserts what a storage admin relies on: exclusive nodes in every job script, checksums
verified both ways by the staging check, the per-job scratch directory gone after the
job, a two-node sweep that really ran on two nodes, IOR/mdtest skipped with a reason,
and every figure in ReFrame's results DB and the perflog.
"""

import json
import re
import sqlite3

import pytest

from conftest import failures_of, scratchbench
from scratchbench.figures import SHORTEST_TRUSTED_PHASE_S


@pytest.fixture(scope="module")
def first(quick_runs):
    run = quick_runs[0]
    assert run["result"].returncode == 0, failures_of(run) or run["result"].stderr[-2000:]
    return run


def cases(run):
    report = json.loads((run["run_dir"] / "report.json").read_text())
    return report["runs"][-1]["testcases"]


def case_named(run, pattern):
    return [c for c in cases(run) if re.search(pattern, c["display_name"])]


def test_summary_line_counts_cases(first):
    lines = first["result"].stdout.strip().splitlines()
    counts = re.fullmatch(r"(\d+) passed, (\d+) failed, (\d+) skipped", lines[-1])
    assert counts, lines[-1]
    passed, failed, skipped = map(int, counts.groups())
    assert failed == 0 and passed >= 40
    assert passed + skipped == len(cases(first))


def test_every_job_script_requests_exclusive_nodes(first):
    scripts = list((first["run_dir"] / "output").rglob("rfm_job.sh"))
    assert len(scripts) >= 30
    for script in scripts:
        text = script.read_text()
        assert "#SBATCH --exclusive" in text, script
        assert "#SBATCH --partition=batch" in text


def test_mpi_jobs_have_the_right_layout(first):
    for case in case_named(first, r"^Kernel(IOTest|Metadata|NodeSweep|ProcessSweep)"):
        script = (
            first["run_dir"]
            / "output"
            / case["system"]
            / case["partition"]
            / case["environ"]
            / case["short_name"]
            / "rfm_job.sh"
        ).read_text()
        assert f"#SBATCH --ntasks={case['num_tasks']}" in script
        assert f"#SBATCH --ntasks-per-node={case['num_tasks_per_node']}" in script
        assert "module load " in script, "the MPI comes from an Lmod module"


def test_staging_verified_checksums_both_ways(first):
    staging = case_named(first, r"^StageInOut")
    assert {c["scratch_target"] for c in staging} == {"sanscratch", "localscratch"}
    for case in staging:
        assert case["result"] == "pass"
        out = (
            first["run_dir"]
            / "output"
            / case["system"]
            / case["partition"]
            / case["environ"]
            / case["short_name"]
            / "staging.json"
        )
        report = json.loads(out.read_text())
        assert report["checksums_in"] == report["checksums_out"] == "verified"
        # quick: 64 files of 256 KiB, a burst of 8 more and 512 of 4 KiB, each set
        # timed apart
        assert report["files"] == 64 + 8 + 512
        assert report["bytes_in"] == (64 + 8) * 262144 + 512 * 4096
        assert report["sets"]["small"]["files"] == 512
        assert report["sets"]["burst"]["bytes"] == 8 * 262144
        for var in (
            "stage_in_bw",
            "stage_out_bw",
            "stage_in_byte_bw",
            "stage_out_byte_bw",
            "stage_in_burst_bw",
            "stage_out_burst_bw",
            "stage_in_file_rate",
            "stage_out_file_rate",
        ):
            key = next(k for k in case["perfvalues"] if k.endswith(var))
            assert case["perfvalues"][key][0] > 0
        size = next(v for k, v in case["perfvalues"].items() if k.endswith("stage_burst_size"))
        assert size[0] == 2.0 and size[4] == "MiB"
        largest = next(v for k, v in case["perfvalues"].items() if k.endswith("stage_largest_copy"))
        assert largest[0] == 16.0 and largest[4] == "MiB"


def test_per_job_directory_is_gone_after_the_job(first, cluster):
    removed = case_named(first, r"^PerJobScratchRemoved.*sanscratch")
    assert len(removed) == 1 and removed[0]["result"] == "pass"
    local = case_named(first, r"^PerJobScratchRemoved.*localscratch")
    assert len(local) == 1 and local[0]["result"] == "skip"
    assert "not a per-job directory" in local[0]["skip_reason"]
    staging = case_named(first, r"^StageInOut.*sanscratch")[0]
    out = (
        first["run_dir"]
        / "output"
        / staging["system"]
        / staging["partition"]
        / staging["environ"]
        / staging["short_name"]
        / "staging.json"
    )
    scratch_dir = json.loads(out.read_text())["scratch_dir"]
    assert scratch_dir.startswith(cluster.status()["spec"]["san_root"] + "/")
    import os

    assert not os.path.exists(scratch_dir)


def test_two_node_sweep_ran_on_two_nodes(first):
    sweep = [c for c in case_named(first, r"^KernelNodeSweep") if c["node_count"] == 2]
    assert sweep and all(c["result"] == "pass" for c in sweep)
    for case in sweep:
        report = json.loads(
            (
                first["run_dir"]
                / "output"
                / case["system"]
                / case["partition"]
                / case["environ"]
                / case["short_name"]
                / "kernel.json"
            ).read_text()
        )
        assert report["mpi"]["nnodes"] == 2
        assert {r["node"] for r in report["ranks"]} == {"n1", "n2"}


def test_ior_and_mdtest_are_skipped_with_a_reason(first):
    out = first["result"].stdout
    assert re.search(r"skipped \(\d+\): IOR/mdtest not available: ior and mdtest not on PATH", out)
    for case in case_named(first, r"^(IOR|Mdtest|IORProvider)"):
        assert case["result"] == "skip"


#: the figures that are no timed measurement: sizes a check reports about itself
UNTIMED = {"stage_burst_size", "stage_largest_copy"}
CLOCKS = {
    "iotest": "total",
    "metadata": "time",
    "diskperf": "total",
    "jovian": "total",
    "iozone": "time",
}


def test_every_timed_figure_says_how_long_its_phase_lasted(first, sb_home):
    """Each figure of the kernel's modes and of staging carries the length of the
    shortest timed phase behind it (the kernel's phase clock on the slowest rank, as the
    kernel's own report has it); the store keeps it and marks what is too short."""
    checked = 0
    for case in case_named(
        first,
        r"^(Kernel(IOTest|Metadata|Diskperf|Jovian|IOzone|"
        r"NodeSweep|ProcessSweep)|StageInOut)",
    ):
        if case["result"] != "pass":
            continue
        figures = {k.split(":")[-1] for k in case["perfvalues"]} - UNTIMED
        phases = case["phase_seconds"]
        assert figures <= set(phases), (case["display_name"], figures - set(phases))
        assert all(0 < phases[f] < 600 for f in figures), phases
        out = (
            first["run_dir"]
            / "output"
            / case["system"]
            / case["partition"]
            / case["environ"]
            / case["short_name"]
        )
        if case["display_name"].startswith("KernelIOTest"):
            report = json.loads((out / "kernel.json").read_text())
            clock = CLOCKS[report["mode"]]
            write = min(
                rep["phases"]["write"]["time_s"][clock]["max"] for rep in report["repetitions"]
            )
            assert phases["write_bw"] == write and phases["write_bw_worst"] == write
        checked += len(figures)
    assert checked >= 100
    db = sqlite3.connect(sb_home / "history.sqlite")
    rows = db.execute(
        "SELECT f.phase_seconds, f.too_short FROM figures f JOIN cases c "
        "USING (case_id) WHERE c.run_id = ? AND f.phase_seconds IS NOT NULL",
        (first["run_dir"].name,),
    ).fetchall()
    assert len(rows) >= checked
    assert all(short == int(seconds < SHORTEST_TRUSTED_PHASE_S) for seconds, short in rows)


def test_figures_are_in_the_results_db_and_the_perflog(first, sb_home):
    db = sqlite3.connect(sb_home / "results" / "results.db")
    blobs = [row[0] for row in db.execute("SELECT json_blob FROM sessions")]
    ours = [json.loads(b) for b in blobs if first["run_dir"].name in b]
    assert len(ours) == 1, "one stored session per run"
    stored = {
        (c["display_name"], c["environ"]): c["perfvalues"] for c in ours[0]["runs"][-1]["testcases"]
    }
    for case in case_named(first, r"^StageInOut|^KernelIOTest"):
        assert stored[(case["display_name"], case["environ"])] == case["perfvalues"]
    perflog = sb_home / "results" / "perflogs" / "embedded" / "batch" / "StageInOut.log"
    text = perflog.read_text()
    assert "|sanscratch|san|1|1|0|cp|" in text and "stage_in_bw=" in text
    iotest = sb_home / "results" / "perflogs" / "embedded" / "batch" / "KernelIOTest.log"
    assert re.search(r"\|sanscratch\|san\|1\|2\|1048576\|(posix|mpiio)\|", iotest.read_text())


def test_the_cli_printed_figures_and_paths(first):
    out = first["result"].stdout
    for text in (
        "Figures (one line per test case):",
        "run report:",
        "job outputs:",
        "perflogs:",
        "results DB:",
        "stage_in_bw",
    ):
        assert text in out
    assert (first["run_dir"] / "run.json").is_file()
    # ReFrame's log in the run directory, not a new file in /tmp
    log = first["run_dir"] / "reframe.log"
    assert "KernelIOTest" in log.read_text()
    assert f"Log file(s) saved in '{log}'" in (first["run_dir"] / "reframe.out").read_text()


def test_second_run_keeps_the_first(quick_runs):
    a, b = (r["run_dir"] for r in quick_runs)
    assert a != b and (a / "report.json").is_file() and (b / "report.json").is_file()
    assert json.loads((b / "run.json").read_text())["note"].startswith("ticket CHG-42")


def test_missing_scratch_path_fails_with_the_reason(cluster, sb_home, tmp_path):
    """A site whose scratch target does not exist: the check fails, naming the path."""
    site = tmp_path / "missing.py"
    from conftest import REPO

    text = (REPO / "site_configs" / "local.py").read_text()
    text = text.replace('path="$LOCALSCRATCH"', 'path="/nonexistent/localscratch"')
    site.write_text(text)
    result = scratchbench(
        "run",
        "--site",
        str(site),
        "--target",
        "localscratch",
        "--name",
        "KernelIOTest",
        timeout=900,
    )
    assert result.returncode == 1
    assert "target directory /nonexistent/localscratch: No such file or directory" in result.stdout
    # the two kernel builds pass; all 8 KernelIOTest cases on that target fail
    assert result.stdout.splitlines()[-1] == "2 passed, 8 failed, 0 skipped"


def test_a_low_figure_fails_performance_not_sanity(cluster, tmp_path):
    """References come from site_configs/references/<system>.yaml ($ref); demand the
    impossible and the same valid runs must fail in the performance phase.  Run with
    --serial: its jobs one after the other."""
    (tmp_path / "embedded.yaml").write_text(
        "KernelIOTest:\n  $index: [$partition, scratch_target]\n  embedded:batch:\n"
        "    sanscratch:\n      write_bw: [1000000000, -0.1, null, MiB/s]\n"
    )
    result = scratchbench(
        "run",
        "--target",
        "sanscratch",
        "--name",
        "KernelIOTest.*fpp-posix",
        "--serial",
        env={"RFM_REFERENCE_PREFIX": str(tmp_path)},
        timeout=900,
    )
    assert result.returncode == 1
    failed = [ln for ln in result.stdout.splitlines() if ln.startswith("FAILED")]
    assert len(failed) == 2 and all("(performance)" in ln for ln in failed), failed
    assert all("write_bw" in ln for ln in failed)
    # --serial: each Slurm job submitted after the one before it ended (the kernel
    # builds run without a job)
    report = next(
        ln.split("run report:", 1)[1].strip()
        for ln in result.stdout.splitlines()
        if ln.startswith("run report:")
    )
    jobs = sorted(
        (c["job_submit_time"], c["job_completion_time_unix"])
        for c in json.loads(open(report).read())["runs"][-1]["testcases"]
        if c["jobid"] is not None
    )
    assert len(jobs) == 2
    assert jobs[1][0] >= jobs[0][1], f"--serial, yet the jobs overlapped: {jobs}"


def test_falls_back_to_the_local_scheduler_when_slurm_cannot_start(tmp_path):
    """A machine without Slurm's daemons (here: SCRATCHBENCH_SBIN names an empty
    directory) cannot run the embedded cluster: the run says why and goes through
    ReFrame's local scheduler."""
    empty = tmp_path / "no-slurm"
    empty.mkdir()
    result = scratchbench(
        "run",
        "--name",
        "KernelIOTest.*fpp-posix",
        "--name",
        "StageInOut",
        env={"SCRATCHBENCH_HOME": str(tmp_path / "home"), "SCRATCHBENCH_SBIN": str(empty)},
        timeout=900,
    )
    assert result.returncode == 0, failures_of({"result": result}) or result.stderr[-2000:]
    assert (
        f"warning: the embedded Slurm cluster cannot start: munged not found in {empty}"
        in result.stderr
    )
    assert "running on this machine through ReFrame's local scheduler" in result.stderr
    assert (
        "scheduler:    ReFrame's local scheduler (the embedded Slurm cluster cannot "
        "start" in result.stdout
    )
    # the kernel build, KernelIOTest fpp-posix and StageInOut on localscratch
    assert result.stdout.splitlines()[-1] == "3 passed, 0 failed, 0 skipped"
    scripts = list(tmp_path.rglob("output/embedded-local/default/*/KernelIOTest_*/rfm_job.sh"))
    assert scripts and "#SBATCH" not in scripts[0].read_text()
    assert re.search(r"^mpirun -np 2 \S+scratchbench-kernel iotest", scripts[0].read_text(), re.M)


def test_local_flag_only_for_the_local_site():
    from conftest import REPO

    result = scratchbench(
        "run", "--local", "--site", str(REPO / "site_configs" / "example_slurm.py")
    )
    assert result.returncode == 2
    assert "has no 'embedded-local' system" in result.stderr


def test_metadata_on_the_san_costs_what_a_network_file_system_costs(first):
    """Seed 002's point, measured for real: creating, opening and deleting files on the
    GlusterFS SAN (every call a round trip to a storage server) runs far below the
    node-local disk.  Medians over the metadata check's cases of each target.  Creation
    pays the same work on the node's own side (a new inode, a journal entry) on both
    file systems, so the network shows least there (one CI run: 487 creations/s on the
    SAN, 916/s on the disk); opens and deletions run 5x and more below."""
    rates = {}
    for case in case_named(first, r"^KernelMetadata"):
        for key, value in case["perfvalues"].items():
            metric = key.split(":")[-1]
            rates.setdefault((case["scratch_target"], metric), []).append(value[0])

    def median(target, metric):
        values = sorted(rates[(target, metric)])
        return values[len(values) // 2]

    kinds = {c["scratch_target"]: c["scratch_kind"] for c in case_named(first, r"^KernelMetadata")}
    assert kinds == {"sanscratch": "san", "localscratch": "local-disk"}, (
        f"the SAN did not start: {kinds}"
    )
    for metric, factor in (("create_rate", 1.25), ("open_close_rate", 5), ("delete_rate", 5)):
        san, local = median("sanscratch", metric), median("localscratch", metric)
        assert san * factor < local, f"{metric}: SAN {san:.0f}/s, node-local {local:.0f}/s"


def test_a_new_open_drops_the_sans_cached_pages_and_not_the_disks(first):
    """The self-scaling check's reopen probe on real file systems: the GlusterFS client
    (mounted with fopen-keep-cache off) drops a file's cached pages at every open, so
    its first pass is read from the servers at a stored rate; the node-local disk's page
    cache keeps them (README, "The prediction")."""
    for case in case_named(first, r"^KernelSelfScale"):
        figures = {k.split(":")[-1]: v[0] for k, v in case["perfvalues"].items()}
        target = case["scratch_target"]
        assert "cache_dropped_at_reopen" in figures, (target, sorted(figures))
        if target == "sanscratch":
            assert figures["cache_dropped_at_reopen"] >= 90, figures["cache_dropped_at_reopen"]
            assert figures["first_pass_read_rate"] > 0
        else:
            assert figures["cache_dropped_at_reopen"] <= 10, figures["cache_dropped_at_reopen"]
            assert "first_pass_read_rate" not in figures


def test_a_small_request_costs_a_share_of_the_measured_one(first):
    """The self-scaling check's request rates at 512 B, 1 KiB and 4 KiB on real file
    systems give the share of a request's time that does not grow with its bytes and
    the time of a 512 B request as a share of a 1 KiB one's, each stored with
    the rates' timed window (the quick tag's 0.15 s: too short to trust; README, "The
    prediction")."""
    for case in case_named(first, r"^KernelSelfScale"):
        figures = {k.split(":")[-1]: v[0] for k, v in case["perfvalues"].items()}
        for direction in ("read", "write"):
            share = figures[f"request_fixed_share_{direction}"]
            assert 0 <= share <= 100, (case["scratch_target"], direction, share)
            window = case["phase_seconds"][f"request_rate_{direction}"]
            assert case["phase_seconds"][f"request_fixed_share_{direction}"] == window
            # and the kernel's 512 B requests against the 1 KiB ones
            assert figures[f"request_unit_share_{direction}"] > 0, case["scratch_target"]
            assert case["phase_seconds"][f"request_unit_share_{direction}"] == window
