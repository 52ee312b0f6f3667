"""The embedded cluster's SAN: a GlusterFS volume on storage servers of their own, read
and written by every node through its own client.

What a site relies on and what the seeds measure: the per-job directory lives on the
volume; each node has its own client (and so its own client cache: data another node
wrote is fetched over the network, not served from the reader's cache); a node whose
client is gone is named and `cluster up` mounts it again.
"""

import json
import os
import signal
import time
from pathlib import Path

import pytest

from cli import runner
from conftest import run, scratchbench

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the embedded cluster needs root")


def home_env(cluster):
    return {"SCRATCHBENCH_HOME": str(cluster.dir.parent)}


def san_of(cluster):
    san = cluster.status()["san"]
    if san.get("kind") != "glusterfs":
        pytest.fail(f"the session cluster has no GlusterFS SAN: {san.get('reason')}")
    return san


def top_mount_device(mountinfo_text, path):
    device = None
    for line in mountinfo_text.splitlines():
        fields = line.split()
        if fields[4] == path:
            device = (fields[2], fields[fields.index("-") + 1])
    return device


def test_status_lists_the_servers_and_every_client(cluster):
    san = san_of(cluster)
    assert san["servers"] == 2 and len(san["bricks"]) == 2
    assert all(b["online"] for b in san["bricks"]), san["bricks"]
    assert san["problems"] == []
    names = [d["name"] for d in cluster.status()["daemons"]]
    for name in ("glusterd", "san-client-login", "san-client-n1", "san-client-n2"):
        assert name in names
    text = scratchbench("cluster", "status", env=home_env(cluster)).stdout
    assert "SAN: GlusterFS volume 'sanscratch'" in text
    assert "storage server 1: online" in text and "storage server 2: online" in text
    assert "node n1's own client: mounted" in text and "node n2's own client: mounted" in text
    health = scratchbench("cluster", "health", env=home_env(cluster))
    assert health.returncode == 0 and health.stdout == "", health.stdout


def test_each_node_reads_another_nodes_data_through_its_own_client(cluster, tmp_path):
    """Two nodes, two clients (three mounts of the volume, this machine's included): what
    n1 wrote, n2 reads intact over the network; when n1 rewrites it, n2 reads the new
    data, not the copy its own client read before (close-to-open consistency: with the
    kernel's cache kept across opens, n2 read the old data for up to a second)."""
    root = cluster.status()["spec"]["san_root"]
    script = tmp_path / "job.sh"
    script.write_text(f"""#!/bin/bash
set -e
for node in n1 n2; do
    srun -N1 -n1 -w $node bash -c 'echo "$SLURMD_NODENAME mount $(awk -v mp={root} '"'"'$5 == mp {{d = $3}} END {{print d}}'"'"' /proc/self/mountinfo)"'
done
srun -N1 -n1 -w n1 bash -c 'head -c 8M /dev/urandom > "$MYSANSCRATCH/data" && sync "$MYSANSCRATCH/data" && echo "n1 sum $(md5sum < "$MYSANSCRATCH/data")"'
srun -N1 -n1 -w n2 bash -c 'echo "n2 sum $(md5sum < "$MYSANSCRATCH/data")"'
srun -N1 -n1 -w n1 bash -c 'head -c 8M /dev/urandom | dd of="$MYSANSCRATCH/data" bs=1M conv=notrunc,fsync status=none && echo "n1 sum2 $(md5sum < "$MYSANSCRATCH/data")"'
srun -N1 -n1 -w n2 bash -c 'echo "n2 sum2 $(md5sum < "$MYSANSCRATCH/data")"'
ls -d {root}/../san/servers/s*/brick/$SLURM_JOB_ID
""")
    out = tmp_path / "job.out"
    job = run(
        ["sbatch", "--wait", "--exclusive", "-N", "2", "-o", out, script],
        env=cluster.client_env(),
        timeout=180,
    )
    text = out.read_text()
    assert job.returncode == 0, text + job.stderr
    said = {}
    for line in text.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and parts[0] in ("n1", "n2"):
            said[(parts[0], parts[1])] = parts[2].split()[0]
    own = top_mount_device(Path("/proc/self/mountinfo").read_text(), root)
    assert own and own[1] == "fuse.glusterfs", "this machine mounts the SAN too"
    devices = {said[("n1", "mount")], said[("n2", "mount")], own[0]}
    assert len(devices) == 3, f"every node has a client of its own: {said}, here {own}"
    assert said[("n1", "sum")] == said[("n2", "sum")], "n2 read what n1 wrote"
    assert said[("n1", "sum2")] != said[("n1", "sum")]
    assert said[("n2", "sum2")] == said[("n1", "sum2")], (
        "n1 rewrote the file: n2 reads the new data, not the copy in its cache"
    )
    assert "/brick/" in text, "the per-job directory is on the storage servers' bricks"


def test_a_node_whose_client_is_gone_is_named_and_mounted_again(cluster, tmp_path):
    daemons = {d["name"]: d for d in cluster.status()["daemons"]}
    old = daemons["san-client-n2"]["pid"]
    os.kill(old, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{old}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    health = scratchbench("cluster", "health", env=home_env(cluster))
    assert health.returncode == 1
    assert health.stdout.strip() == "node n2's client of sanscratch is gone", health.stdout
    up = scratchbench("cluster", "up", env=home_env(cluster))
    assert up.returncode == 0, up.stderr
    assert "node n2: its SAN client is gone; mounting a new one" in up.stderr
    assert scratchbench("cluster", "health", env=home_env(cluster)).returncode == 0
    status = json.loads(scratchbench("cluster", "status", "--json", env=home_env(cluster)).stdout)
    new = next(d for d in status["daemons"] if d["name"] == "san-client-n2")
    assert new["pid"] != old and new["alive"]
    out = tmp_path / "job.out"
    job = run(
        [
            "sbatch",
            "--wait",
            "--exclusive",
            "-w",
            "n2",
            "-o",
            out,
            "--wrap",
            'echo data > "$MYSANSCRATCH/f" && cat "$MYSANSCRATCH/f"',
        ],
        env=cluster.client_env(),
        timeout=120,
    )
    assert job.returncode == 0 and out.read_text().strip() == "data", out.read_text()


def test_deleted_data_gives_its_room_back_to_the_disk_below(cluster, monkeypatch):
    """The storage servers' disks are sparse XFS images on the disk that also holds the
    node-local target: what a check wrote and deleted on the SAN is given back to it
    (trimmed) by `cluster up` on a running cluster (and by `cluster down`) and by every
    run, not kept allocated for ever."""
    san = san_of(cluster)
    images = sorted((cluster.dir / "san" / "servers").glob("s*.xfs"))
    assert images

    def allocated():
        return sum(image.stat().st_blocks * 512 for image in images)

    def written_and_deleted():
        """64 MiB written to the SAN and deleted: the bytes then allocated in the images."""
        data = Path(san["mount_point"]) / "room-test"
        with open(data, "wb") as f:
            for _ in range(64):
                f.write(os.urandom(1 << 20))
            f.flush()
            os.fsync(f.fileno())
        written = allocated()
        data.unlink()
        return written

    written = written_and_deleted()
    up = scratchbench("cluster", "up", env=home_env(cluster))
    assert up.returncode == 0, up.stderr
    given_back = written - allocated()
    assert given_back >= 48 << 20, f"{given_back >> 20} MiB of the 64 MiB given back"

    # and by every run on the running cluster, before its checks (the node-local search
    # after a SAN search measures footprints up to half the free space)
    written = written_and_deleted()
    monkeypatch.setenv("SCRATCHBENCH_HOME", str(cluster.dir.parent))
    assert runner.ensure_embedded_cluster(start=False) == str(cluster.slurm_conf)
    deadline = time.monotonic() + 10  # (the loop device may punch the holes after fstrim)
    while written - allocated() < 48 << 20 and time.monotonic() < deadline:
        time.sleep(0.2)
    given_back = written - allocated()
    assert given_back >= 48 << 20, f"{given_back >> 20} MiB of the 64 MiB given back by a run"
