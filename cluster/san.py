"""The embedded cluster's SAN: a real GlusterFS volume with a client on every node.

Seed 004's sites keep ``/sanscratch`` on a SAN that every node mounts through its own
client; here that is GlusterFS (Debian's glusterfs-server and -client):

* ``glusterd`` with its state, logs, sockets and pid files under ``<cluster>/san/``,
  listening on a loopback address of its own (``127.0.0.N:24007``: its bricks fetch
  their volume file from port 24007 whatever glusterd is told, so two clusters on one
  machine differ by address, not port); brick ports come from the cluster's port block.
* N storage servers, each one brick process on a disk of its own: a loop-mounted XFS
  image of a set size, so a server can fill up and no server's data sits in another's
  page cache.
* One distributed volume; ``stripe_size`` turns on sharding with that block size.
* One FUSE client per embedded node, mounted at the same path on every node inside the
  node's own mount namespace (the node's slurmd and its jobs live there), so each node
  reads through its own client and its own client cache, as on a cluster; one more
  client on this machine itself (the login node's view) at the same path.

Everything started is recorded by PID in the cluster's state; ``stop`` ends exactly
that and unmounts exactly the mounts made here.
"""

import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from cluster.processes import process_alive, process_program
from scratchbench.errors import ClusterError
from scratchbench.units import parse_size, size_words

GLUSTERD_PORT = 24007  # fixed: bricks fetch their volume file from this port
VOLUME = "sanscratch"
FIRST_BRICK_PORT_OFFSET = 30  # brick ports: base port + 30 .. base port + 49
MAX_SERVERS = 16
DEFAULT_SERVERS = 2
MIN_DEFAULT_BRICK_SIZE = 8 << 30


def default_brick_size():
    """Room for the nightly IOzone file, which passes the node's memory (seed 004's
    `-g`): 1.5 x this machine's memory, at least 8 GiB (sparse: only what is written
    takes room on the disk below)."""
    try:
        kib = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal:")
        )
    except (OSError, StopIteration, ValueError):
        return MIN_DEFAULT_BRICK_SIZE
    return max(MIN_DEFAULT_BRICK_SIZE, -(-(kib * 1024 * 3 // 2) // (1 << 30)) << 30)


DEFAULT_BRICK_SIZE = default_brick_size()
MIN_BRICK_SIZE = 512 << 20  # XFS wants 300 MiB at the least; keep room for logs
MIN_STRIPE_SIZE = 4 << 20  # GlusterFS refuses shard blocks under 4 MiB
SAN_PROGRAMS = (
    "glusterd",
    "glusterfs",
    "glusterfsd",
    "gluster",
    "mkfs.xfs",
    "unshare",
    "nsenter",
    "mountpoint",
)


class SanUnavailable(ClusterError):
    """The SAN cannot start here (no FUSE, no GlusterFS, not root...): the cluster's
    per-job directories fall back to a plain directory, and say so."""


def stripe_words(stripe_size):
    return f"shards of {size_words(stripe_size)}" if stripe_size else "no sharding"


def validate_stripe_size(stripe_size, option="--san-stripe-size"):
    if stripe_size and (stripe_size & (stripe_size - 1) or stripe_size < MIN_STRIPE_SIZE):
        raise ClusterError(
            f"{option} {stripe_size}: expected a power of two of at least "
            f"{size_words(MIN_STRIPE_SIZE)} (GlusterFS's shard block size), or 0 "
            "for no sharding"
        )


def fitted_brick_size(room, count):
    """The default disk of each of ``count`` new storage servers: DEFAULT_BRICK_SIZE, or,
    where the file system below has less ``room`` (free bytes), 3/4 of it shared out (the
    rest for the node-local targets and logs beside them).  The images are sparse: sized
    past what the disk below holds, the SAN would offer room it does not have, a check
    sizing its files by the SAN's free space would fill the disk below, and its writes
    would fail with I/O errors instead of 'no space'."""
    share = ((room * 3 // 4) // count) >> 30 << 30
    return max(MIN_BRICK_SIZE, min(DEFAULT_BRICK_SIZE, share))


def validate_san_options(servers, brick_size, stripe_size):
    """``brick_size`` 0: the default (fitted_brick_size)."""
    if not 1 <= int(servers) <= MAX_SERVERS:
        raise ClusterError(f"--san-servers {servers}: expected 1 to {MAX_SERVERS} storage servers")
    if brick_size and brick_size < MIN_BRICK_SIZE:
        raise ClusterError(
            f"--san-brick-size {size_words(brick_size)}: expected at least "
            f"{size_words(MIN_BRICK_SIZE)} per server"
        )
    validate_stripe_size(stripe_size)


def _numbers(first, last):
    return str(first) if first == last else f"{first}-{last}"


def _top_mount(path, mountinfo="/proc/self/mountinfo"):
    """(type, device) of the visible mount exactly at path in that mount table, or None."""
    try:
        lines = Path(mountinfo).read_text().splitlines()
    except OSError:
        return None
    found = None
    for line in lines:
        fields = line.split()
        sep = fields.index("-")
        if fields[4].replace("\\040", " ") == str(path):
            found = (fields[sep + 1], fields[2])  # the last mount on a point is visible
    return found


def _mounted(path, mountinfo="/proc/self/mountinfo"):
    """The file-system type mounted exactly at path in that mount table, or None."""
    top = _top_mount(path, mountinfo)
    return top[0] if top else None


def _trim(disk):
    """Give the blocks of deleted files back to the disk image's host file system
    (fstrim punches holes in the sparse image): a deleted file's blocks otherwise stay
    allocated in the image for ever, and the images of a few nightly runs take the room
    of the node-local target beside them (two grew to 50 GiB here).  Not the mount's
    online discard: that would slow every deletion the checks time.  Best effort: a
    kernel without discard on loop devices keeps the image as it is."""
    subprocess.run(["fstrim", str(disk)], capture_output=True)


def _unmount_disk(disk, timeout=10):
    """A server's XFS disk image, if mounted, trimmed first (:func:`_trim`).  A brick
    process just killed may hold it busy for a moment: retry, then detach it lazily
    rather than leave it mounted (a mounted disk under a removed home blocks every later
    clean-up of that directory)."""
    if _mounted(disk) == "xfs":
        _trim(disk)
    deadline = time.monotonic() + timeout
    while _mounted(disk) == "xfs":
        if subprocess.run(["umount", str(disk)], capture_output=True).returncode == 0:
            return
        if time.monotonic() > deadline:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True)
            return
        time.sleep(0.5)


def free_loopback_address():
    """127.0.0.N (N >= 2) whose port 24007 is free: glusterd's address for one cluster."""
    for n in range(2, 255):
        address = f"127.0.0.{n}"
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((address, GLUSTERD_PORT))
            except OSError:
                continue
        return address
    raise ClusterError("no loopback address 127.0.0.2-254 has port 24007 free for glusterd")


class GlusterSan:
    """The SAN of one embedded cluster, rooted at ``<cluster>/san``."""

    def __init__(self, cluster_dir, mount_point):
        self.cluster_dir = Path(cluster_dir)
        self.root = self.cluster_dir / "san"
        self.mount_point = Path(mount_point)
        self.etc = self.root / "etc"
        self.log = self.root / "log"
        self.run = self.root / "run"
        self.workdir = self.root / "glusterd"
        self.servers_dir = self.root / "servers"
        self.socket = self.run / "glusterd.socket"

    # ---- the gluster command line ------------------------------------------------------
    def gluster(self, *args, check=True, timeout=120):
        argv = [
            "gluster",
            f"--glusterd-sock={self.socket}",
            "--mode=script",
            f"--log-file={self.log / 'gluster-cli.log'}",
            *args,
        ]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            said = (result.stderr.strip() or result.stdout.strip()).splitlines()
            raise ClusterError(
                f"gluster {' '.join(args[:3])}: {said[0] if said else 'failed'}; log: {self.log}"
            )
        return result

    def volume_exists(self):
        return (self.workdir / "vols" / VOLUME / "info").is_file()

    def brick_status(self):
        """[{server, path, online, pid, port}] from glusterd, or [] when it does not answer."""
        try:
            result = self.gluster("volume", "status", VOLUME, "--xml", check=False, timeout=30)
        except subprocess.TimeoutExpired:
            return []
        if result.returncode != 0:
            return []
        try:
            tree = ET.fromstring(result.stdout)
        except ET.ParseError:
            return []
        bricks = []
        for node in tree.iter("node"):
            path = node.findtext("path") or ""
            if not path.startswith(str(self.servers_dir)):
                continue  # self-heal and other daemons
            server = Path(path).parent.name  # servers/s2/brick -> s2
            pid = node.findtext("pid") or "-1"
            bricks.append(
                {
                    "server": server,
                    "path": path,
                    "online": node.findtext("status") == "1",
                    "pid": int(pid) if pid.lstrip("-").isdigit() else -1,
                    "port": node.findtext("port"),
                }
            )
        return sorted(bricks, key=lambda b: int(b["server"][1:]))

    # ---- what the volume is, from glusterd -----------------------------------------------
    def describe(self):
        """{servers, bricks, stripe_size, options} from `gluster volume info --xml`: the
        volume's storage servers, brick paths, shard block size (0: no sharding) and the
        options set on it (name: value as GlusterFS reports it)."""
        result = self.gluster("volume", "info", VOLUME, "--xml", timeout=30)
        try:
            volume = ET.fromstring(result.stdout).find("./volInfo/volumes/volume")
        except ET.ParseError as exc:
            raise ClusterError(f"gluster volume info {VOLUME} --xml: unreadable ({exc})") from None
        if volume is None:
            raise ClusterError(f"gluster volume info {VOLUME} --xml: no volume in the answer")
        bricks = [b.findtext("name") for b in volume.iter("brick")]
        options = {o.findtext("name"): o.findtext("value") for o in volume.iter("option")}
        stripe = 0
        if options.get("features.shard") == "on":
            # GlusterFS means 1024 by MB
            stripe = parse_size(options.get("features.shard-block-size") or "64MB", decimal=False)
        return {"servers": len(bricks), "bricks": bricks, "stripe_size": stripe, "options": options}

    def option_value(self, key):
        """What GlusterFS reports for a volume option; ClusterError naming the option when
        GlusterFS has no such option."""
        result = self.gluster("volume", "get", VOLUME, key, "--xml", check=False, timeout=30)
        try:
            value = ET.fromstring(result.stdout).findtext("./volGetopts/Opt/Value")
        except ET.ParseError:
            value = None
        if result.returncode != 0 or value is None:
            raise ClusterError(
                f"--set {key}: GlusterFS has no volume option {key!r} "
                "(`gluster volume set help` lists them)"
            )
        return value

    # ---- changes, as an admin makes them ---------------------------------------------
    def set_option(self, key, value):
        """`gluster volume set`; returns the value GlusterFS reports afterwards."""
        result = self.gluster("volume", "set", VOLUME, key, value, check=False)
        if result.returncode != 0:
            said = (result.stderr.strip() or result.stdout.strip()).splitlines()
            raise ClusterError(
                f"--set {key}={value}: GlusterFS refused it: "
                f"{said[0].removeprefix('volume set: failed: ') if said else '?'}"
            )
        return self.option_value(key)

    def sharded_files(self):
        """How many shard pieces the servers hold (files written while sharding was on)."""
        return sum(
            1
            for disk in sorted(self.servers_dir.glob("s*/brick/.shard"))
            for entry in disk.iterdir()
            if entry.name != ".remove_me"
        )

    def set_stripe_size(self, stripe_size):
        """Sharding on with that block size (the block size first: GlusterFS checks it
        against its 4 MiB minimum when sharding goes on), or off for 0."""
        validate_stripe_size(stripe_size, "--stripe-size")
        if stripe_size:
            self.gluster(
                "volume", "set", VOLUME, "features.shard-block-size", f"{stripe_size >> 20}MB"
            )
            self.gluster("volume", "set", VOLUME, "features.shard", "on")
        else:
            # GlusterFS would turn it off, and every sharded file would lose all but
            # its first block
            pieces = self.sharded_files()
            if pieces:
                raise ClusterError(
                    f"--stripe-size 0: the volume holds {pieces} shard pieces "
                    "of sharded files, which would be lost without sharding; "
                    "remove those files first"
                )
            self.gluster("volume", "set", VOLUME, "features.shard", "off")

    def brick_name(self, address, i):
        return f"{address}:{self.servers_dir / f's{i}' / 'brick'}"

    def add_servers(self, address, count, brick_size, progress):
        """Storage servers up to `count`: each a new disk, `add-brick`, then a rebalance
        that spreads the files over them (waited for)."""
        have = self.describe()["servers"]
        self._mount_server_disks(range(have + 1, count + 1), brick_size, progress)
        added = [self.brick_name(address, i) for i in range(have + 1, count + 1)]
        self.gluster("volume", "add-brick", VOLUME, *added, "force")
        self._wait_bricks_online(count)
        progress(
            f"added storage server(s) {_numbers(have + 1, count)}; rebalancing the "
            "files over all servers"
        )
        self.gluster("volume", "rebalance", VOLUME, "start")
        self._wait_migration(
            ["volume", "rebalance", VOLUME, "status", "--xml"],
            "volRebalance",
            "rebalance",
            progress,
        )

    def remove_servers(self, address, count, progress):
        """Storage servers down to `count`, the last ones first: `remove-brick start`
        migrates their files to the others, and only once that completed without a
        failure is it committed; their disks are unmounted and kept."""
        have = self.describe()["servers"]
        removed = [self.brick_name(address, i) for i in range(count + 1, have + 1)]
        self.gluster("volume", "remove-brick", VOLUME, *removed, "start")
        progress(f"moving the files of storage server(s) {_numbers(count + 1, have)} to the others")
        try:
            self._wait_migration(
                ["volume", "remove-brick", VOLUME, *removed, "status", "--xml"],
                "volRemoveBrick",
                "migration",
                progress,
            )
        except ClusterError:
            self.gluster("volume", "remove-brick", VOLUME, *removed, "stop", check=False)
            raise
        self.gluster("volume", "remove-brick", VOLUME, *removed, "commit")
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        for i in range(count + 1, have + 1):
            disk, image = self.servers_dir / f"s{i}", self.servers_dir / f"s{i}.xfs"
            self._stop_brick(f"s{i}")
            _unmount_disk(disk)
            # kept (what the migration left is there), out of the way of a new server i
            image.rename(self.servers_dir / f"s{i}.removed-{stamp}.xfs")

    def _wait_migration(self, status_args, element, what, progress, timeout=3600):
        """Poll a rebalance or remove-brick until it completed; ClusterError when it failed
        or a file could not be moved."""
        deadline, said = time.monotonic() + timeout, 0.0
        while time.monotonic() < deadline:
            result = self.gluster(*status_args, check=False, timeout=60)
            try:
                aggregate = ET.fromstring(result.stdout).find(f"./{element}/aggregate")
            except ET.ParseError:
                aggregate = None
            if aggregate is not None:
                status = aggregate.findtext("statusStr") or "?"
                files, failures = aggregate.findtext("files"), aggregate.findtext("failures")
                if status == "completed":
                    if failures not in (None, "0"):
                        raise ClusterError(
                            f"{what}: {failures} files could not be moved; log: {self.log}"
                        )
                    progress(f"{what} completed: {files} files moved")
                    return
                if status in ("failed", "stopped"):
                    raise ClusterError(f"{what} {status}; log: {self.log}")
                if time.monotonic() - said > 5:
                    progress(f"{what}: {status}, {files} files moved so far")
                    said = time.monotonic()
            time.sleep(1)
        raise ClusterError(f"{what} did not complete within {timeout} s; log: {self.log}")

    def _wait_bricks_online(self, count, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.brick_status()
            if len(status) == count and all(b["online"] for b in status):
                return
            time.sleep(0.5)
        down = [b["server"] for b in self.brick_status() if not b["online"]]
        raise ClusterError(
            f"storage server(s) {', '.join(down) or '?'} of the SAN did not "
            f"come up within {timeout} s; logs in {self.log / 'bricks'}"
        )

    # ---- what this machine must offer ---------------------------------------------------
    @staticmethod
    def unavailable_reason():
        """Why a SAN cannot start on this machine, or None."""
        if os.geteuid() != 0:
            return "the GlusterFS SAN needs root (loop devices, FUSE mounts)"
        missing = [
            p
            for p in SAN_PROGRAMS
            if not shutil.which(p, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
        ]
        if missing:
            return (
                f"{', '.join(missing)} not found: install Debian's glusterfs-server, "
                "glusterfs-client and xfsprogs"
            )
        if not os.path.exists("/dev/fuse"):
            return "/dev/fuse is missing: this machine cannot mount FUSE file systems"
        if "xfs" not in Path("/proc/filesystems").read_text():
            return "the kernel has no XFS for the storage servers' disks"
        if not os.path.exists("/dev/loop-control"):
            return "/dev/loop-control is missing: no loop devices for the servers' disks"
        return None

    # ---- start ----------------------------------------------------------------------------
    def start(self, state, spec, spawn, progress):
        """Start (or repair) the SAN; records daemons through spawn(name, argv).
        Returns the dict stored as state['san']."""
        reason = self.unavailable_reason()
        if reason:
            raise SanUnavailable(reason)
        for sub in (self.etc, self.log, self.run, self.workdir, self.servers_dir):
            sub.mkdir(parents=True, exist_ok=True)
        san = dict(state.get("san") or {})
        san["address"] = self._address()
        san.update(
            servers=spec.san_servers,
            brick_size=spec.san_brick_size,
            stripe_size=spec.san_stripe_size,
            volume=VOLUME,
            kind="glusterfs",
            mount_point=str(self.mount_point),
        )
        # an existing volume keeps the servers it has (changed by `cluster san` or not)
        servers = self._registered_servers() or spec.san_servers
        self._mount_server_disks(range(1, servers + 1), spec.san_brick_size, progress)
        self._write_glusterd_vol(san["address"], spec.base_port)
        progress(
            f"starting glusterd on {san['address']}:{GLUSTERD_PORT} "
            f"(state in {self.workdir}, logs in {self.log})"
        )
        proc = spawn(
            "glusterd",
            [
                "glusterd",
                "-N",
                "-f",
                str(self.etc / "glusterd.vol"),
                "-l",
                str(self.log / "glusterd.log"),
                "-p",
                str(self.run / "glusterd.pid"),
            ],
        )
        self._wait(
            lambda: (
                self.socket.exists()
                and self.gluster("volume", "list", check=False, timeout=10).returncode == 0
            ),
            # 30 s was too short on a 2-core machine at load 25 (CI and 8 engineers)
            90,
            "glusterd",
            proc,
            log=self.log / "glusterd.log",
        )
        self._ensure_volume(spec, san, progress)
        # An existing volume keeps its servers, disks and options: record what is
        volume = self.describe()
        if volume["servers"] != spec.san_servers or volume["stripe_size"] != spec.san_stripe_size:
            progress(
                f"note: the SAN in {self.root} has {volume['servers']} storage servers, "
                f"{stripe_words(volume['stripe_size'])} ({spec.san_servers} servers, "
                f"{stripe_words(spec.san_stripe_size)} asked for); change it with "
                f"`scratchbench cluster san`, or remove {self.root} with the cluster down "
                "to make it anew"
            )
        san.update(
            servers=volume["servers"], stripe_size=volume["stripe_size"], options=volume["options"]
        )
        san["brick_size"] = (self.servers_dir / "s1.xfs").stat().st_size
        self.mount_login_client(san, spawn, progress)
        return san

    def _address(self):
        """This SAN's loopback address: chosen once, kept beside its data (the volume's
        bricks are registered under it), and refused when another process took it."""
        record = self.root / "address"
        if record.exists():
            address = record.read_text().strip()
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind((address, GLUSTERD_PORT))
                except OSError:
                    raise SanUnavailable(
                        f"{address}:{GLUSTERD_PORT}, where this SAN's glusterd listens (its "
                        "volume is registered there), is taken by another process"
                    ) from None
            return address
        address = free_loopback_address()
        record.write_text(address + "\n")
        return address

    def _registered_servers(self):
        """How many bricks glusterd's record of the volume lists (0: no volume yet)."""
        info = self.workdir / "vols" / VOLUME / "info"
        if not info.is_file():
            return 0
        return sum(1 for line in info.read_text().splitlines() if line.startswith("brick-"))

    def _mount_server_disks(self, numbers, brick_size, progress):
        """The disks of storage servers `numbers` (1-based), made where missing;
        ``brick_size`` 0: the default, fitted to the room below (fitted_brick_size)."""
        room = shutil.disk_usage(self.servers_dir).free
        missing = [i for i in numbers if not (self.servers_dir / f"s{i}.xfs").exists()]
        if not brick_size and missing:
            brick_size = fitted_brick_size(room, len(missing))
            if brick_size < DEFAULT_BRICK_SIZE:
                progress(
                    f"note: {self.servers_dir} has {room >> 30} GiB free, so each storage "
                    f"server's disk is {size_words(brick_size)}, not "
                    f"{size_words(DEFAULT_BRICK_SIZE)} (1.5 x memory, the nightly IOzone "
                    "file's size): a check that needs more fails with 'no space'"
                )
        needed = len(missing) * brick_size
        if room < needed:
            progress(
                f"note: the storage servers' disks (sparse images) may grow to "
                f"{size_words(needed)} but {self.servers_dir} has {room >> 30} GiB free: "
                "a job that fills them past that fails with I/O errors, not 'no space'"
            )
        for i in numbers:
            image = self.servers_dir / f"s{i}.xfs"
            disk = self.servers_dir / f"s{i}"
            disk.mkdir(exist_ok=True)
            if _mounted(disk) != "xfs":
                self._mount_server_disk(i, image, disk, brick_size, progress)
            _trim(disk)  # an image from before trimming (or a crash) gives its room back
            (disk / "brick").mkdir(exist_ok=True)

    @staticmethod
    def _mount_server_disk(number, image, disk, brick_size, progress):
        """Storage server ``number``'s XFS image, made if missing, loop-mounted on ``disk``."""
        if not image.exists():
            progress(
                f"making storage server {number}'s disk: a {size_words(brick_size)} "
                f"XFS image {image}"
            )
            with open(image, "wb") as f:
                f.truncate(brick_size)
            made = subprocess.run(
                ["mkfs.xfs", "-q", "-f", "-i", "size=512", str(image)],
                capture_output=True,
                text=True,
            )
            if made.returncode != 0:
                image.unlink()
                raise SanUnavailable(f"mkfs.xfs {image}: {made.stderr.strip()[:200]}")
        mounted = subprocess.run(
            ["mount", "-o", "loop", str(image), str(disk)], capture_output=True, text=True
        )
        if mounted.returncode != 0:
            raise SanUnavailable(
                f"mounting storage server {number}'s disk {image}: {mounted.stderr.strip()[:200]}"
            )

    def _write_glusterd_vol(self, address, base_port):
        first = base_port + FIRST_BRICK_PORT_OFFSET
        (
            self.etc / "glusterd.vol"
        ).write_text(f"""# Generated by scratchbench cluster up (no backticks here: glusterd runs them).
volume management
    type mgmt/glusterd
    option working-directory {self.workdir}
    option run-directory {self.run / "gluster"}
    option cluster-test-mode {self.log}
    option glusterd-sockfile {self.socket}
    option transport-type socket
    option transport.socket.bind-address {address}
    option transport.socket.listen-port {GLUSTERD_PORT}
    option transport.address-family inet
    option base-port {first}
    option max-port {first + MAX_SERVERS + 3}
    option ping-timeout 0
    option event-threads 1
end-volume
""")

    def _ensure_volume(self, spec, san, progress):
        address = san["address"]
        bricks = [self.brick_name(address, i) for i in range(1, spec.san_servers + 1)]
        if not self.volume_exists():
            progress(
                f"creating the GlusterFS volume '{VOLUME}' over {spec.san_servers} storage servers"
            )
            self.gluster("volume", "create", VOLUME, "transport", "tcp", *bricks, "force")
            # What a job's `ls -l` and `stat` see must be what the servers hold.
            if spec.san_stripe_size:
                self.set_stripe_size(spec.san_stripe_size)
        info = self.gluster("volume", "info", VOLUME).stdout
        if "Status: Started" not in info:
            self.gluster("volume", "start", VOLUME)
        self.start_down_bricks(timeout=60)
        san["bricks"] = self.brick_status()

    def start_down_bricks(self, timeout=60):
        """Wait until every storage server (brick) is online, starting again the ones that
        are down. A brick that died leaves its PID file, and glusterd takes the PID of a
        zombie not yet reaped (PID 1 here reaps late) for a running brick and never
        restarts it: such a stale PID file is removed first."""
        started = time.monotonic()
        deadline, forced = started + timeout, None
        while time.monotonic() < deadline:
            status = self.brick_status()
            down = [b["server"] for b in status if not b["online"]]
            if status and not down:
                return
            for server in down:
                pid = self._brick_pid_from_file(server)
                if pid and not process_alive(pid):
                    self._brick_pid_file(server).unlink(missing_ok=True)
            # (glusterd ignores a start while it has not yet seen the brick go: ask again)
            if down and (forced is None or time.monotonic() - forced > 5):
                self.gluster("volume", "start", VOLUME, "force", check=False)
                forced = time.monotonic()
            time.sleep(0.5)
        down = [b["server"] for b in self.brick_status() if not b["online"]]
        raise SanUnavailable(
            f"storage server(s) {', '.join(down) or '?'} of the SAN did "
            f"not come up within {timeout} s; logs in {self.log / 'bricks'}"
        )

    def client_argv(self, san, log_name):
        """A GlusterFS FUSE client in the foreground (our child, PID known).

        --fopen-keep-cache=off: close-to-open consistency, as NFS gives and parallel jobs
        rely on: a file another node rewrote is read afresh when opened (with the cache
        kept, a reader saw the old contents for up to a second: Jovian's verification
        caught it)."""
        return [
            "glusterfs",
            "-N",
            f"--volfile-server={san['address']}",
            f"--volfile-server-port={GLUSTERD_PORT}",
            f"--volfile-id={VOLUME}",
            "--fopen-keep-cache=off",
            "-l",
            str(self.log / f"{log_name}.log"),
            str(self.mount_point),
        ]

    def mount_login_client(self, san, spawn, progress):
        """This machine's own client (what a login node sees), at the nodes' path."""
        if _mounted(self.mount_point) == "fuse.glusterfs":
            if self.responds(self.mount_point):
                return
            # its client died: the mount answers ENOTCONN until it is taken away
            subprocess.run(["umount", "-l", str(self.mount_point)], capture_output=True)
        self.mount_point.mkdir(parents=True, exist_ok=True)
        progress(f"mounting the SAN at {self.mount_point} (this machine's client)")
        proc = spawn("san-client-login", self.client_argv(san, "client-login"))
        self._wait(
            lambda: _mounted(self.mount_point) == "fuse.glusterfs",
            30,
            "the SAN's client on this machine",
            proc,
        )
        os.chmod(self.mount_point, 0o755)

    @staticmethod
    def share_mounts_with_nodes(progress):
        """Mounts made on this machine after the nodes started (a site's new scratch file
        system, a test's small tmpfs) reach the nodes only if / is a shared mount, as
        systemd makes it at boot; where / is private (no systemd), make it shared."""
        root = next(
            (
                line.split(" - ")[0].split()[6:]
                for line in Path("/proc/self/mountinfo").read_text().splitlines()
                if line.split()[4] == "/"
            ),
            [],
        )
        if any(field.startswith("shared:") for field in root):
            return
        progress(
            "making / a shared mount (mount --make-rshared /, as systemd does at "
            "boot), so that mounts made here later reach the embedded nodes"
        )
        done = subprocess.run(["mount", "--make-rshared", "/"], capture_output=True, text=True)
        if done.returncode != 0:
            progress(
                f"could not ({done.stderr.strip()[:160]}): mounts made on this "
                "machine after `cluster up` will not reach the nodes"
            )

    def node_launcher(self, san, node, slurmd_argv):
        """argv that starts a node inside a mount namespace of its own: the node's own
        client is mounted there first, then the node's slurmd replaces the shell (its PID
        is the one started).  The client's PID goes to run/client-<node>.pid."""
        script = self.etc / f"node-{node}.sh"
        # (removed here too: node_client_pid must never read the last start's PID)
        (self.run / f"client-{node}.pid").unlink(missing_ok=True)
        client = " ".join(shlex.quote(a) for a in self.client_argv(san, f"client-{node}"))
        pid_file = shlex.quote(str(self.run / f"client-{node}.pid"))
        mount_point = shlex.quote(str(self.mount_point))
        script.write_text(f"""#!/bin/sh
# Node {node} of the embedded cluster, run inside its own mount namespace (`unshare`):
# the node's own GlusterFS client first, then its slurmd (exec keeps the PID).
set -eu
rm -f {pid_file}
mounts() {{ awk -v mp={mount_point} '$5 == mp' /proc/self/mountinfo | wc -l; }}
before=$(mounts)
{client} &
echo $! > {pid_file}
tries=0
until [ "$(mounts)" -gt "$before" ]; do
    tries=$((tries + 1))
    if [ "$tries" -gt 150 ] || ! kill -0 "$(cat {pid_file})" 2>/dev/null; then
        echo "node {node}: its SAN client did not mount {self.mount_point}" >&2
        exit 1
    fi
    sleep 0.2
done
exec {" ".join(shlex.quote(a) for a in slurmd_argv)}
""")
        os.chmod(script, 0o755)
        # slave: mounts made on this machine later (a test's tmpfs) still reach the node,
        # while the node's own client stays the node's.
        return ["unshare", "--mount", "--propagation", "slave", "--", "/bin/sh", str(script)]

    def node_client_pid(self, node, timeout=30):
        pid_file = self.run / f"client-{node}.pid"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                return int(pid_file.read_text().strip())
            except (OSError, ValueError):
                time.sleep(0.1)
        raise ClusterError(
            f"node {node}: its SAN client did not start; log: {self.log / f'client-{node}.log'}"
        )

    def node_mount_ok(self, slurmd_pid):
        """Whether the node (by its slurmd's PID) has its own live client mounted: a
        GlusterFS mount on top that is not this machine's (login) client."""
        top = _top_mount(self.mount_point, f"/proc/{slurmd_pid}/mountinfo")
        if not top or top[0] != "fuse.glusterfs" or top == _top_mount(self.mount_point):
            return False
        return self.responds(Path(f"/proc/{slurmd_pid}/root") / str(self.mount_point).lstrip("/"))

    @staticmethod
    def responds(path, timeout=10):
        """A stat of the mount answers (a dead FUSE client gives ENOTCONN, or hangs)."""
        try:
            return (
                subprocess.run(
                    ["stat", "-f", str(path)], capture_output=True, timeout=timeout
                ).returncode
                == 0
            )
        except subprocess.TimeoutExpired:
            return False

    def remount_node_client(self, san, node, slurmd_pid, progress):
        """A node whose client died: mount a new one inside the node's namespace.
        Returns the new client's Popen."""
        progress(f"node {node}: its SAN client is gone; mounting a new one")
        subprocess.run(
            ["nsenter", "-t", str(slurmd_pid), "-m", "--", "umount", "-l", str(self.mount_point)],
            capture_output=True,
        )
        log = open(self.log / f"client-{node}.out", "ab")
        proc = subprocess.Popen(
            [
                "nsenter",
                "-t",
                str(slurmd_pid),
                "-m",
                "--",
                *self.client_argv(san, f"client-{node}"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait(lambda: self.node_mount_ok(slurmd_pid), 30, f"node {node}'s SAN client", proc)
        return proc

    @staticmethod
    def _wait(ready, timeout, what, proc=None, log=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                detail = ""
                if log:
                    errors = (
                        [
                            ln
                            for ln in Path(log).read_text(errors="replace").splitlines()
                            if "] E [" in ln
                        ]
                        if Path(log).exists()
                        else []
                    )
                    detail = f": {errors[0].split('] ', 3)[-1][:160]}" if errors else ""
                raise SanUnavailable(
                    f"{what} exited during start-up (status "
                    f"{proc.returncode}){detail}; log: {log or '-'}"
                )
            try:
                if ready():
                    return
            except (OSError, subprocess.SubprocessError):
                pass
            time.sleep(0.2)
        raise SanUnavailable(f"{what} did not become ready within {timeout} s")

    # ---- health, for checks and `status` -----------------------------------------------
    def health(self, state):
        """Problems of the SAN in words, [] when healthy: which storage server is down, a
        server disk that is full, a node whose client is gone."""
        san = state.get("san") or {}
        if san.get("kind") != "glusterfs":
            return []
        problems = []
        daemons = {d["name"]: d for d in state.get("daemons", [])}
        glusterd = daemons.get("glusterd")
        if not glusterd or not process_alive(glusterd["pid"]):
            problems.append(f"the SAN's management daemon (glusterd) of {VOLUME} is down")
        status = {b["server"]: b for b in self.brick_status()}
        for i in range(1, int(san.get("servers", 0)) + 1):
            server = f"s{i}"
            brick = status.get(server)
            pid = self._brick_pid_from_file(server)
            if (brick and not brick["online"]) or (not brick and not (pid and process_alive(pid))):
                problems.append(f"storage server {i} of {VOLUME} is down")
            disk = self.servers_dir / server
            try:
                usage = os.statvfs(disk)
                if usage.f_bavail * usage.f_frsize < 16 << 20:
                    problems.append(
                        f"storage server {i} of {VOLUME} is full "
                        f"({size_words(usage.f_blocks * usage.f_frsize)} disk)"
                    )
            except OSError:
                pass
        for name, daemon in daemons.items():
            if name.startswith("slurmd-") and process_alive(daemon["pid"]):
                node = name[len("slurmd-") :]
                client = daemons.get(f"san-client-{node}")
                if (
                    not client
                    or not process_alive(client["pid"])
                    or not self.node_mount_ok(daemon["pid"])
                ):
                    problems.append(f"node {node}'s client of {VOLUME} is gone")
        return problems

    def _brick_pid_file(self, server):
        """run/gluster/vols/<volume>/<address>-<brick path>.pid of SERVER, or None."""
        found = list((self.run / "gluster" / "vols" / VOLUME).glob(f"*-s{server[1:]}-brick.pid"))
        return found[0] if found else None

    def _brick_pid_from_file(self, server):
        pid_file = self._brick_pid_file(server)
        try:
            return int(pid_file.read_text().strip()) if pid_file else None
        except (OSError, ValueError):
            return None

    # ---- stop -------------------------------------------------------------------------------
    def stop_bricks(self):
        """The brick processes glusterd started (they outlive glusterd): by PID file."""
        for pid_file in (self.run / "gluster" / "vols" / VOLUME).glob("*.pid"):
            try:
                self._stop_glusterfsd(int(pid_file.read_text().strip()))
            except (OSError, ValueError):
                continue

    def _stop_brick(self, server):
        pid = self._brick_pid_from_file(server)
        if pid:
            self._stop_glusterfsd(pid)

    @staticmethod
    def _stop_glusterfsd(pid):
        if process_alive(pid) and process_program(pid) == "glusterfsd":
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while process_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if process_alive(pid):
                os.kill(pid, signal.SIGKILL)

    def trim_disks(self):
        """Every mounted server disk trimmed (:func:`_trim`): what the last runs deleted
        goes back to the disk below before the next."""
        for disk in sorted(self.servers_dir.glob("s*")):
            if disk.is_dir() and _mounted(disk) == "xfs":
                _trim(disk)

    def unmount_all(self):
        """This machine's client mount and the servers' disks, exactly those."""
        if _mounted(self.mount_point) == "fuse.glusterfs":
            subprocess.run(["umount", "-l", str(self.mount_point)], capture_output=True)
        for disk in sorted(self.servers_dir.glob("s*")):
            if disk.is_dir():
                _unmount_disk(disk)
