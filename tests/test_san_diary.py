"""What each file system was, recorded with real runs on the embedded cluster, and the
diary after a real change of the SAN (`cluster san --set`).

Reuses the session's two quick runs (conftest's ``quick_runs``) and adds one small run
(the staging check only) after setting a volume option, which it sets back at the end.
"""

import json
import subprocess

import pytest

from conftest import scratchbench
from reports import fs_diary, store
from scratchbench import paths, units


def san_kind():
    """The session cluster's SAN as `cluster status` says it is (kind, reason)."""
    said = scratchbench("cluster", "status", "--json")
    assert said.returncode == 0, said.stderr
    return json.loads(said.stdout).get("san") or {}


def configs_of(run_id):
    conn = store.connect(paths.history_db(), create=False)
    try:
        return {t: c[0] for t, c in fs_diary.configurations(conn, run_ids=[run_id]).items()}
    finally:
        conn.close()


def test_every_target_of_a_quick_run_has_its_configuration(quick_runs, cluster):
    run = quick_runs[-1]
    assert run["result"].returncode == 0, run["result"].stdout[-2000:]
    configs = configs_of(run["run_dir"].name)
    assert set(configs) == {"sanscratch", "localscratch"}
    san, local = configs["sanscratch"], configs["localscratch"]
    assert not san["problems"] and not local["problems"], san["problems"] + local["problems"]
    san_state = san_kind()
    if san_state.get("kind") != "glusterfs":
        # the SAN fell back to a plain directory (glusterd slow to start on a loaded
        # machine): the record must say so, not claim a GlusterFS volume
        assert san["summary"]["type"] != "fuse.glusterfs" and "servers" not in san["summary"]
        pytest.skip(
            f"the session's SAN did not start ({san_state.get('reason')}): its "
            "GlusterFS facts cannot be checked; what was recorded was checked"
        )
    assert san["summary"]["type"] == "fuse.glusterfs"
    assert san["summary"]["servers"] == "2" and san["summary"]["stripes"] == "no stripes"
    gluster = san["facts"]["glusterfs"]
    assert gluster["volume"] == "sanscratch" and gluster["brick_count"] == 2
    assert "volume info" not in san["problems"]
    # what a job sees: the node's own client, on the per-job directory's mount
    assert san["facts"]["mount"]["source"].endswith(":sanscratch")
    assert san["facts"]["path"].startswith(san["facts"]["mount"]["mount_point"] + "/")
    assert local["summary"]["type"] not in ("fuse.glusterfs", "")
    assert local["facts"]["statfs"]["size_bytes"] > 0
    kernel = subprocess.run(["uname", "-r"], capture_output=True, text=True).stdout.strip()
    assert san["summary"]["kernel"] == local["summary"]["kernel"] == kernel
    assert san["summary"]["Slurm"][:2].isdigit()
    # every MPI environment that ran on the target, with its own MPI
    assert san["mpi"]["gnu-openmpi"].startswith("Open MPI ")
    assert san["mpi"]["gnu-mpich"].startswith("MPICH")
    assert san["revision"]
    # the collector's cost, per target and environment, is kept with it
    seconds = [row["facts"]["collector_seconds"] for row in san["rows"] + local["rows"]]
    assert all(0 < s < 30 for s in seconds)


@pytest.fixture(scope="module")
def after_change(quick_runs, cluster, tmp_path_factory):
    """performance.write-behind off, then one small run; the option is set back after."""
    assert quick_runs[-1]["result"].returncode == 0
    san_state = san_kind()
    if san_state.get("kind") != "glusterfs":
        pytest.skip(
            f"the session's SAN did not start ({san_state.get('reason')}): "
            "there is no volume to change"
        )
    changed = scratchbench("cluster", "san", "--set", "performance.write-behind=off")
    assert changed.returncode == 0, changed.stderr
    try:
        run = scratchbench(
            "run",
            "--tag",
            "quick",
            "--name",
            "StageInOut",
            "--note",
            "after write-behind off",
            timeout=900,
        )
        # (stored whatever its figures: with write-behind off a loaded machine may miss
        # the staging check's loose reference, a performance failure, exit 1)
        assert run.returncode in (0, 1) and "figures added to" in run.stdout, (
            run.stdout[-3000:] + run.stderr[-2000:]
        )
        report = next(
            ln.split("run report:", 1)[1].strip()
            for ln in run.stdout.splitlines()
            if ln.startswith("run report:")
        )
        run_id = report.split("/")[-2]
        out = tmp_path_factory.mktemp("diary-pages")
        built = scratchbench("report", "--out", str(out))
        assert built.returncode == 0, built.stderr
        verdict = scratchbench(
            "verdict",
            "acceptance",
            "--before",
            "run:" + "|".join(r["run_dir"].name for r in quick_runs),
            "--after",
            f"run:{run_id}",
            "--out",
            str(out / "acc.json"),
        )
        yield {"run_id": run_id, "pages": out, "verdict": verdict}
    finally:
        back = scratchbench("cluster", "san", "--set", "performance.write-behind=on")
        assert back.returncode == 0, back.stderr


def test_the_next_run_records_the_option_and_the_diary_dates_it(after_change):
    config = configs_of(after_change["run_id"])["sanscratch"]
    assert config["summary"]["option performance.write-behind"] == "off"
    conn = store.connect(paths.history_db(), create=False)
    try:
        entries = fs_diary.diary(fs_diary.configurations(conn, target="sanscratch")["sanscratch"])
        assert entries[-1]["run_id"] == after_change["run_id"]
        assert entries[-1]["date"] == units.date(config["started"])
        assert "option performance.write-behind to off" in entries[-1]["change_words"]
        assert (
            fs_diary.change_at(conn, "sanscratch", after_change["run_id"])
            == entries[-1]["change_words"]
        )
        # the node-local disk did not change: no entry of that run in its diary
        local = fs_diary.diary(fs_diary.configurations(conn, target="localscratch")["localscratch"])
        assert after_change["run_id"] not in [e["run_id"] for e in local]
    finally:
        conn.close()


def test_pages_show_the_diary_the_marks_and_the_run_s_file_systems(after_change):
    pages = after_change["pages"]
    fs_page = (pages / "fs-sanscratch.html").read_text()
    assert '<section class="diary"><h2>Diary</h2>' in fs_page
    assert "option performance.write-behind to off" in fs_page
    # the dated line names the change, not twice the same summary
    line = fs_page.split('<section class="diary"><h2>Diary</h2><p class="sub">')[1].split("</p>")[0]
    assert line.count(" -&gt; ") >= 1, line
    assert line.rsplit(" -&gt; ", 1)[1].endswith(
        "changed option performance.write-behind to off"
    ), line
    # the history plots mark the change's date
    assert '"dash":"dot"' in fs_page and MARK in fs_page
    run_page = (pages / f"run-{after_change['run_id']}.html").read_text()
    assert "<h2>File systems</h2>" in run_page
    assert "fuse.glusterfs" in run_page and "Volume Name: sanscratch" in run_page
    assert "performance.write-behind" in run_page


def test_the_acceptance_verdict_shows_the_configuration_before_and_after(after_change):
    verdict = after_change["verdict"]
    said = verdict.stdout + verdict.stderr
    page = after_change["pages"] / "acc.html"
    assert page.is_file(), said
    html = page.read_text()
    assert html.index("Configuration before and after") < html.index("Per figure")
    assert (
        '<tr class="differs"><th>option performance.write-behind</th><td>(default)</td><td>off'
        in html
    )
    if verdict.returncode in (0, 1):
        assert (
            "configuration of sanscratch: option performance.write-behind: (default) -> off"
            in verdict.stdout
        )


MARK = fs_diary.MARK_COLOUR
