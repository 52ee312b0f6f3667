"""What a file system was: the collector's parsers on real outputs (tests/fixtures/fsconfig,
whose README says where each came from), the collector script itself on this machine,
and the diary's and acceptance page's reading of stored configurations."""

import json
import sqlite3
import subprocess

import pytest

from conftest import REPO
from reports import fs_diary, store
from scratchbench import fsconfig

FIXTURES = REPO / "tests" / "fixtures" / "fsconfig"
COLLECTOR = REPO / "reframe_checks" / "scripts" / "fsfacts.sh"


def fixture(name):
    return (FIXTURES / name).read_text()


def test_mountinfo_of_a_node_finds_the_glusterfs_mount():
    mounts = fsconfig.parse_mountinfo(fixture("mountinfo_node_glusterfs.txt"))
    mount = fsconfig.mount_of(mounts, "/work/wt-fsconfig/var/cluster/sanscratch/41")
    assert mount["type"] == "fuse.glusterfs"
    assert mount["source"].endswith(":sanscratch")
    assert mount["mount_point"] == "/work/wt-fsconfig/var/cluster/sanscratch"
    assert mount["source"] == "127.0.0.4:sanscratch"
    assert "allow_other" in mount["super_options"]
    # a path elsewhere lies on the root file system
    assert fsconfig.mount_of(mounts, "/usr/bin")["mount_point"] == "/"


def test_mountinfo_unescapes_spaces_and_rejects_garbage():
    line = r"36 27 0:5 / /mnt/my\040disk rw - ext4 /dev/sdb1 rw"
    assert fsconfig.parse_mountinfo(line)[0]["mount_point"] == "/mnt/my disk"
    with pytest.raises(fsconfig.FactsError, match="mountinfo line 1"):
        fsconfig.parse_mountinfo("not a mountinfo line")


def test_stat_f():
    facts = fsconfig.parse_stat_f(fixture("stat_f_ext4.txt"))
    assert facts["block_size"] == 4096 and facts["fundamental_block_size"] == 4096
    assert facts["size_bytes"] == 66053021 * 4096
    assert facts["available_bytes"] == 18703376 * 4096
    assert facts["type"] == "ext2/ext3"
    glusterfs = fsconfig.parse_stat_f(fixture("stat_f_glusterfs.txt"))
    assert glusterfs["type"] == "fuseblk"
    assert glusterfs["size_bytes"] > 0
    with pytest.raises(fsconfig.FactsError, match="Block size"):
        fsconfig.parse_stat_f("stat: cannot read file system information")


def test_gluster_volume_info_of_the_embedded_san():
    info = fsconfig.parse_gluster_volume_info(fixture("gluster_volume_info_sharded.txt"))
    assert info["volume"] == "sanscratch"
    assert info["brick_count"] == 3 and len(info["bricks"]) == 3
    assert info["shard_block_size"] == 4 << 20
    assert info["options"]["performance.write-behind"] == "off"
    plain = fsconfig.parse_gluster_volume_info(fixture("gluster_volume_info_distributed.txt"))
    assert plain["brick_count"] == 2 and plain["shard_block_size"] == 0
    assert plain["type"] == "Distribute"
    with pytest.raises(fsconfig.FactsError, match="Volume Name"):
        fsconfig.parse_gluster_volume_info("Volume sanscratch does not exist")


def test_lfs_getstripe_d_from_lumi():
    layout = fsconfig.parse_lfs_getstripe_d(fixture("lfs_getstripe_d_lumi.txt"))
    assert layout == {
        "stripe_count": 1,
        "stripe_size": 1048576,
        "pattern": "0",
        "stripe_offset": -1,
        "pool": "",
    }
    assert fsconfig.summary({"lustre_layout": layout})["stripes"] == "1-way, 1 MiB stripes"


def test_lfs_df_from_nersc():
    targets = fsconfig.parse_lfs_df(fixture("lfs_df_pytokio_scratch2.txt"))
    assert targets["fsname"] == "snx11035"
    assert targets["ost_count"] == 24 and targets["mdt_count"] == 1
    assert targets["summary"]["kib"] == 2178423632448
    with pytest.raises(fsconfig.FactsError, match="OST"):
        fsconfig.parse_lfs_df("lfs df: no such file system")


def test_mmlsfs_of_a_spectrum_scale_file_system():
    gpfs = fsconfig.parse_mmlsfs(fixture("mmlsfs_gpfsfpo.txt"))
    assert gpfs["device"] == "/dev/gpfsfpo"
    assert gpfs["block_size"] == 4194304 and gpfs["subblock_size"] == 8192
    assert gpfs["data_replicas"] == "1"
    assert gpfs["version"] == "21.00 (5.0.3.0)"
    assert gpfs["flags"]["-T"] == "/gpfs/gpfsfpo"
    assert gpfs["flags"]["--subblocks-per-full-block"] == "512"
    assert fsconfig.summary({"gpfs": gpfs})["block size"] == "4 MiB"


def test_versions():
    assert fsconfig.parse_slurm_version("slurm 22.05.8\n") == "22.05.8"
    assert (
        fsconfig.parse_mpi_version("mpirun (Open MPI) 4.1.4\n\nReport bugs to ...")
        == "Open MPI 4.1.4"
    )
    # what Open MPI's module names as $MPIRUN (Debian's mpirun.openmpi) says
    assert fsconfig.parse_mpi_version("mpirun.openmpi (OpenRTE) 4.1.4\n") == "Open MPI 4.1.4"
    hydra = "HYDRA build details:\n    Version:                                 4.0.2\n"
    assert fsconfig.parse_mpi_version(hydra) == "MPICH 4.0.2"
    assert fsconfig.parse_mpi_version("MPICH Version:    \t4.0.2\n") == "MPICH 4.0.2"
    assert fsconfig.parse_mpi_version("Open MPI v4.1.4\n\nhttps://...") == "Open MPI 4.1.4"


def test_collector_on_this_machine_and_a_failing_site_command(tmp_path):
    """The real script: every section, a missing tool is a problem in words, the site's
    own facts verbatim, and it never fails."""
    done = subprocess.run(
        ["bash", str(COLLECTOR), str(tmp_path), "echo max_rpcs_in_flight=8; no-such-tool-here"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    facts = fsconfig.parse_collected(done.stdout)
    assert facts["path"] == str(tmp_path.resolve())
    assert facts["statfs"]["block_size"] > 0
    assert facts["mount"]["type"]
    assert (
        facts["kernel"]
        == subprocess.run(["uname", "-r"], capture_output=True, text=True).stdout.strip()
    )
    assert facts["site_facts"].startswith("max_rpcs_in_flight=8")
    assert any(
        p.startswith("the site's facts command: not installed") and "no-such-tool-here" in p
        for p in facts["problems"]
    )
    assert 0 <= facts["collector_seconds"] < 60


def test_summary_differences_and_words():
    before = fsconfig.summary(fsconfig.parse_collected(fixture("fsfacts_san_before.txt")))
    after = fsconfig.summary(fsconfig.parse_collected(fixture("fsfacts_san_after.txt")))
    changes = fsconfig.differences(before, after)
    labels = [k for k, _, _ in changes]
    assert "servers" in labels and "stripes" in labels
    words = fsconfig.change_words("sanscratch", changes)
    assert words.startswith(
        "sanscratch went from 2 to 3 servers and changed stripes from no stripes to 4 MiB shards"
    )
    assert fsconfig.summary_words(before).startswith("2 servers, no stripes")


def _store_with_configs(tmp_path, configs):
    """A history store with one run per (day, facts) and nothing else: the diary reads
    only runs and filesystem_configs."""
    conn = store.connect(tmp_path / "h.sqlite")
    for i, (day, facts) in enumerate(configs):
        started = 1795000000 + day * 86400
        conn.execute(
            "INSERT INTO runs (run_id, started, revision) VALUES (?,?,?)",
            (f"r{i}", started, "abc123"),
        )
        conn.execute(
            "INSERT INTO filesystem_configs (run_id, scratch_target, system, "
            "partition, environ, facts, problem) VALUES (?,?,?,?,?,?,?)",
            (
                f"r{i}",
                "sanscratch",
                "embedded",
                "batch",
                "gnu-openmpi",
                json.dumps(facts) if facts else None,
                None if facts else "gluster: exit 1: Connection failed",
            ),
        )
        # another environment's case recorded only its MPI (and sorts first)
        conn.execute(
            "INSERT INTO filesystem_configs (run_id, scratch_target, system, "
            "partition, environ, facts) VALUES (?,?,?,?,?,?)",
            (
                f"r{i}",
                "sanscratch",
                "embedded",
                "batch",
                "builtin",
                json.dumps({"path": "/x", "kernel": "6.1", "mpi": "Open MPI 4.1.4"}),
            ),
        )
    return conn


def test_diary_lists_only_changes_with_their_dates(tmp_path):
    before = fsconfig.parse_collected(fixture("fsfacts_san_before.txt"))
    after = fsconfig.parse_collected(fixture("fsfacts_san_after.txt"))
    conn = _store_with_configs(
        tmp_path, [(0, before), (1, before), (2, None), (3, after), (4, after)]
    )
    configs = fs_diary.configurations(conn)["sanscratch"]
    entries = fs_diary.diary(configs)
    assert [e["run_id"] for e in entries] == ["r0", "r3"]
    assert "from 2 to 3 servers" in entries[1]["change_words"]
    assert fs_diary.change_at(conn, "sanscratch", "r3").startswith("sanscratch went from 2")
    assert fs_diary.change_at(conn, "sanscratch", "r4") is None
    marks = fs_diary.change_dates(conn)["sanscratch"]
    assert len(marks) == 1 and marks[0][1].startswith(entries[1]["date"])
    sides = fs_diary.acceptance_sides(conn, ["r0", "r1"], ["r3", "r4"])
    changed = {label for label, _, _, differs in sides[0]["rows"] if differs}
    assert {"servers", "stripes"} <= changed
    assert "MPI (gnu-openmpi)" not in changed
    page = fs_diary.acceptance_table(sides)
    assert page.count('class="differs"') == len(changed)
    assert "Connection failed" in fs_diary.run_section(conn, "r2")


def test_a_target_whose_configuration_stayed_but_whose_figures_moved_is_noted():
    """The control of an acceptance verdict: figures of a target nothing was done to,
    called better or worse, say the runs differ in something the configuration does not
    record; a target that did change, or whose figures stayed, gets no such note."""
    same = [("servers", "2", "2", False)]
    changed = [("option performance.write-behind", "on", "off", True)]
    sides = [
        {"target": "localscratch", "rows": same, "problems": []},
        {"target": "sanscratch", "rows": changed, "problems": []},
        {"target": "quiet", "rows": same, "problems": []},
    ]
    figures = [
        {"target": "localscratch", "verdict": "better"},
        {"target": "localscratch", "verdict": "better"},
        {"target": "localscratch", "verdict": "no significant change"},
        {"target": "sanscratch", "verdict": "worse"},
        {"target": "quiet", "verdict": "no significant change"},
        {"target": None, "verdict": "worse"},
    ]
    fs_diary.note_unexplained_changes(sides, figures)
    local, san, quiet = sides
    assert local["problems"] == [
        "2 figure(s) of localscratch changed (2 better) although its configuration did "
        "not: the runs before and after differ in something the configuration does not "
        "record (load, the host, other jobs); read the other targets' changes against it"
    ]
    assert san["problems"] == [] and quiet["problems"] == []
    assert "note: 2 figure(s) of localscratch changed" in "\n".join(
        fs_diary.acceptance_lines(sides)
    )


def test_migration_refuses_a_second_config_of_the_same_case(tmp_path):
    conn = _store_with_configs(tmp_path, [(0, {"kernel": "6.1"})])
    assert conn.execute("SELECT COUNT(*) FROM filesystem_configs").fetchone()[0] == 2
    conn.execute(
        "INSERT OR IGNORE INTO filesystem_configs (run_id, scratch_target, system, "
        "partition, environ) VALUES ('r0', 'sanscratch', 'embedded', 'batch', "
        "'gnu-openmpi')"
    )
    assert conn.execute("SELECT COUNT(*) FROM filesystem_configs").fetchone()[0] == 2
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO filesystem_configs (run_id, scratch_target) VALUES ('no-such-run', 'x')"
        )


def test_a_nightly_change_says_when_the_file_system_changed():
    from reports import naming

    entry = {
        "verdict": "regression",
        "name": "write bandwidth",
        "target": "sanscratch",
        "environ": "gnu-openmpi",
        "unit": "MiB/s",
        "relative_change": -0.4,
        "median_before": 100.0,
        "median_after": 60.0,
        "since": "2026-11-26",
        "config_change": "sanscratch went from 2 to 4 servers",
    }
    assert "since 2026-11-26, when sanscratch went from 2 to 4 servers:" in naming.change_sentence(
        entry
    )
    del entry["config_change"]
    assert "since 2026-11-26:" in naming.change_sentence(entry)
