"""`scratchbench cluster san`: the embedded SAN changed as an admin changes a file system.

On a real 1-node cluster with a GlusterFS volume of its own: servers are added (a disk,
add-brick, rebalance) and removed (files migrated first, then committed) without losing a
file; the shard block size and volume options change; every change is recorded, dated, and
shown by `cluster status`, the site config's description and `cluster san`; a restart
keeps it; bad input and a change during a run are refused in one line, changing nothing.
"""

import hashlib
import json
import os
from pathlib import Path

import pytest

from conftest import VENV_BIN, one_node_san, run, scratchbench

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the embedded cluster needs root")


@pytest.fixture(scope="module")
def home():
    """A SCRATCHBENCH_HOME with a 1-node cluster whose volume these tests change."""
    with one_node_san("sanchange") as (path, _):
        yield path


def sb(home, *args):
    return scratchbench("cluster", *args, env={"SCRATCHBENCH_HOME": str(home)})


def state(home):
    return json.loads((home / "cluster" / "cluster.json").read_text())


def volume(home):
    """What GlusterFS says the volume is (`cluster san --json`, from volume info --xml)."""
    said = sb(home, "san", "--json")
    assert said.returncode == 0, said.stderr
    return json.loads(said.stdout)


def sums(root):
    return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(root.glob("keep-*"))}


def test_servers_added_and_removed_keep_every_file(home, tmp_path):
    root = home / "cluster" / "sanscratch"
    servers = home / "cluster" / "san" / "servers"
    for i in range(60):
        (root / f"keep-{i}").write_bytes(os.urandom(64 << 10))
    before = sums(root)
    assert volume(home)["servers"] == 2

    added = sb(home, "san", "--servers", "3")
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "storage servers: 2 -> 3"
    assert "rebalance completed" in added.stderr
    described = volume(home)
    assert described["servers"] == 3 and described["bricks"][2].endswith("/servers/s3/brick")
    assert list((servers / "s3" / "brick").glob("keep-*")), "the rebalance moved files to s3"
    assert sums(root) == before
    # the node's own client sees the volume as it now is
    out = tmp_path / "job.out"
    job = run(
        ["sbatch", "--wait", "-w", "n1", "-o", out, "--wrap", f"cat {root}/keep-* | md5sum"],
        env={"SLURM_CONF": str(home / "cluster" / "etc" / "slurm.conf")},
        timeout=120,
    )
    assert job.returncode == 0, out.read_text()
    here = run(["bash", "-c", f"cat {root}/keep-* | md5sum"]).stdout
    assert out.read_text() == here
    status = sb(home, "status")
    assert "3 storage servers of 1 GiB" in status.stdout
    assert "storage server 3: online" in status.stdout

    removed = sb(home, "san", "--servers", "2")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.strip() == "storage servers: 3 -> 2"
    assert "migration completed" in removed.stderr
    assert volume(home)["servers"] == 2
    assert sums(root) == before, "every file of the removed server was moved first"
    assert not (servers / "s3.xfs").exists() and list(servers.glob("s3.removed-*.xfs"))

    changes = state(home)["san"]["changes"]
    assert [(c["change"], c["before"], c["after"]) for c in changes[-2:]] == [
        ("storage servers", 2, 3),
        ("storage servers", 3, 2),
    ]
    assert all(c["date"].startswith("20") for c in changes)
    assert state(home)["spec"]["san_servers"] == 2


def test_options_and_stripe_size_are_set_recorded_and_described(home):
    said = sb(home, "san", "--set", "performance.write-behind=off", "--stripe-size", "8m")
    assert said.returncode == 0, said.stderr
    assert said.stdout.splitlines() == [
        "volume option performance.write-behind: on -> off",
        "shard block size: no sharding -> shards of 8 MiB",
    ]
    described = volume(home)
    assert described["options"]["performance.write-behind"] == "off"
    assert described["stripe_size"] == 8 << 20
    assert described["options"]["features.shard-block-size"] == "8MB"
    san = state(home)["san"]
    assert san["stripe_size"] == 8 << 20 and san["options"]["performance.write-behind"] == "off"
    assert [c["change"] for c in san["changes"][-2:]] == [
        "volume option performance.write-behind",
        "shard block size",
    ]
    status = sb(home, "status").stdout
    assert "shards of 8 MiB" in status and "SAN option performance.write-behind = off" in status

    # the site config's description of sanscratch says what the volume now is
    describe = run(
        [
            VENV_BIN / "python",
            "-c",
            "import json, sys; sys.path.insert(0, 'site_configs'); "
            "from local import _sanscratch; "
            f"print(_sanscratch(json.load(open('{home}/cluster/cluster.json'))).description)",
        ],
        cwd=Path(__file__).parents[1],
        env={"SCRATCHBENCH_HOME": str(home)},
        check=True,
    )
    assert "files sharded in 8 MiB blocks" in describe.stdout
    assert "performance.write-behind=off" in describe.stdout

    same = sb(home, "san", "--servers", "2", "--stripe-size", "8m")
    assert same.stdout.strip() == "the volume sanscratch already is so: nothing changed"
    assert state(home)["san"]["changes"] == san["changes"]

    # an option set to the value it has: done, recorded (a no-op change is a change too)
    again = sb(home, "san", "--set", "performance.write-behind=off")
    assert again.stdout.strip() == "volume option performance.write-behind: off -> off"

    # sharding cannot go off while sharded files exist: their blocks past the first
    # would be lost
    (home / "cluster" / "sanscratch" / "sharded").write_bytes(os.urandom(20 << 20))
    before = volume(home)
    off = sb(home, "san", "--stripe-size", "0")
    assert off.returncode != 0
    assert off.stderr.strip().count("\n") == 0
    assert "--stripe-size 0: the volume holds" in off.stderr and "shard pieces" in off.stderr
    assert volume(home) == before


@pytest.mark.parametrize(
    "args, error",
    [
        (["--set", "no.such-option=on"], "--set no.such-option: GlusterFS has no volume option"),
        (
            ["--set", "performance.write-behind=maybe"],
            "--set performance.write-behind=maybe: GlusterFS refused it",
        ),
        (
            ["--set", "performance.write-behind"],
            "--set performance.write-behind: expected KEY=VALUE",
        ),
        (
            ["--stripe-size", "3m"],
            "--stripe-size 3145728: expected a power of two of at least 4 MiB",
        ),
        (
            ["--stripe-size", "1m"],
            "--stripe-size 1048576: expected a power of two of at least 4 MiB",
        ),
        (["--stripe-size", "abc"], "--stripe-size abc: expected a number of bytes"),
        (["--servers", "0"], "--servers 0: expected 1 to 16 storage servers"),
        # checked before anything changes: the valid option is not set either
        (["--set", "performance.write-behind=on", "--servers", "0"], "--servers 0: expected"),
        (
            ["--set", "performance.write-behind=on", "--set", "no.such-option=1"],
            "--set no.such-option: GlusterFS has no volume option",
        ),
    ],
)
def test_bad_input_is_refused_in_one_line_and_changes_nothing(home, args, error):
    before, changes = volume(home), state(home)["san"].get("changes", [])
    said = sb(home, "san", *args)
    assert said.returncode != 0
    assert said.stdout == "" and said.stderr.strip().count("\n") == 0, said.stderr
    assert error in said.stderr
    assert volume(home) == before
    assert state(home)["san"].get("changes", []) == changes


def test_change_options_belong_to_cluster_san(home):
    said = sb(home, "up", "--servers", "3")
    assert said.returncode != 0 and said.stderr.strip() == (
        "scratchbench: error: cluster up: --servers, --stripe-size and --set change a running "
        "SAN: use them with `cluster san`"
    )
    assert volume(home)["servers"] == 2


def test_a_change_while_a_run_holds_the_lock_is_refused(home):
    from cli.housekeeping import RunLock
    from scratchbench.sites import resolve_site_config

    os.environ["SCRATCHBENCH_HOME"], old = str(home), os.environ.get("SCRATCHBENCH_HOME")
    try:
        lock = RunLock(resolve_site_config("local")).acquire("20261125-nightly")
    finally:
        if old is None:
            os.environ.pop("SCRATCHBENCH_HOME")
        else:
            os.environ["SCRATCHBENCH_HOME"] = old
    try:
        before = volume(home)
        said = sb(home, "san", "--set", "performance.write-behind=on", "--servers", "3")
        assert said.returncode != 0
        assert said.stderr.strip().count("\n") == 0, said.stderr
        assert "another run of this site holds" in said.stderr
        assert "run 20261125-nightly" in said.stderr
        assert volume(home) == before
    finally:
        lock.release()


def test_a_restart_keeps_the_changed_volume_and_its_diary(home):
    sb(home, "san", "--servers", "3")
    changes = state(home)["san"]["changes"]
    assert sb(home, "down").returncode == 0
    # `cluster up` as on any night (its default --san-servers 2): the volume stays as changed
    up = sb(home, "up", "--nodes", "1", "--san-brick-size", "1g")
    assert up.returncode == 0, up.stderr
    assert "has 3 storage servers" in up.stderr
    status = json.loads(sb(home, "status", "--json").stdout)
    assert status["san"]["servers"] == 3 and len(status["san"]["bricks"]) == 3
    assert all(b["online"] for b in status["san"]["bricks"])
    assert status["san"]["changes"] == changes
    assert status["san"]["problems"] == []
