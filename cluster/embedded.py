"""The embedded cluster: a real Slurm cluster on this one machine.

munged, MariaDB + slurmdbd, slurmctld and N slurmd (``slurmd -N nX``), all
started by hand from Debian's packages, all state under one directory, all on
127.0.0.1.  Daemons run in the foreground as our children (``-D``/``-F``), so
their PIDs are known exactly; ``down`` stops only those PIDs, after checking
that each still runs the program we started.

A Slurm prolog/epilog pair makes and removes a per-job directory under
``sanscratch/`` and a TaskProlog exports it to the job as ``MYSANSCRATCH``,
like seed 004's ``/sanscratch/$JOBID``.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from cluster.processes import process_alive, process_program
from cluster.san import (
    DEFAULT_SERVERS,
    MAX_SERVERS,
    GlusterSan,
    SanUnavailable,
    stripe_words,
    validate_san_options,
    validate_stripe_size,
)
from scratchbench.errors import ClusterError

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATE_FILE = "cluster.json"
PARTITION = "batch"
LOCAL_DISKS = ("disk0", "disk1")
# munged runs as user 'munge', which may not reach the cluster directory (a checkout
# under /root is mode 700): its socket, key, log and pid live under /run instead.
MUNGE_RUN_ROOT = Path("/run/scratchbench")
# Cluster bring-ups on one machine take turns choosing ports.
PORTS_LOCK = Path("/run/lock/scratchbench-cluster-ports.lock")
FIRST_PORT, LAST_PORT, PORT_STEP = 17817, 60000, 50
# The daemons; the client tools (sbatch, sinfo, munge, mariadb...) come from PATH.
DAEMONS = ("munged", "mariadbd", "mariadb-install-db", "slurmdbd", "slurmctld", "slurmd")


class ClusterUnavailable(ClusterError):
    """This machine cannot run the embedded cluster at all (not root, no Slurm): a run
    goes through ReFrame's local scheduler instead, and says why."""


@contextlib.contextmanager
def _ports_lock():
    """Cluster bring-ups on this machine choose and bind their ports one at a time."""
    PORTS_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(PORTS_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclass
class ClusterSpec:
    """What `cluster up` builds; stored in cluster.json so `status` can report it."""

    nodes: int = 2
    cpus_per_node: int = 2
    base_port: int = None  # None: the first free block of ports from 17817 up
    san_root: str = ""  # per-job scratch root; default <cluster dir>/sanscratch
    name: str = "scratchbench"
    #: GlusterFS storage servers of the SAN (0: per-job directories on a plain directory)
    san_servers: int = DEFAULT_SERVERS
    #: size of each server's disk (a sparse XFS image); 0: DEFAULT_BRICK_SIZE, less
    #: where the disk below has less room (san.fitted_brick_size)
    san_brick_size: int = 0
    #: shard block size (the seeds' stripe size); 0: no sharding, files stay whole
    san_stripe_size: int = 0

    def ports(self):
        """Every TCP port the cluster listens on, by daemon name."""
        ports = {
            "slurmctld": self.base_port,
            "slurmdbd": self.base_port + 1,
            "mariadbd": self.base_port + 2,
        }
        for i in range(self.nodes):
            ports[f"slurmd-{node_name(i)}"] = self.base_port + 10 + i
        return ports

    def validate(self):
        if not 1 <= self.nodes <= 16:
            raise ClusterError(f"--nodes {self.nodes}: expected 1 to 16 nodes")
        if not 1 <= self.cpus_per_node <= 256:
            raise ClusterError(f"--cpus-per-node {self.cpus_per_node}: expected 1 to 256")
        if self.base_port is not None and not 1024 <= self.base_port <= 65535 - 10 - self.nodes:
            raise ClusterError(
                f"--base-port {self.base_port}: expected 1024 to {65535 - 10 - self.nodes}"
            )
        if self.san_servers:
            validate_san_options(self.san_servers, self.san_brick_size, self.san_stripe_size)
        elif self.san_servers != 0:
            raise ClusterError(f"--san-servers {self.san_servers}: expected 0 to 16")


def _is_san_daemon(name):
    return name == "glusterd" or name.startswith("san-client-")


def node_name(index):
    return f"n{index + 1}"


def _progress(message):
    print(f"cluster: {message}", file=sys.stderr, flush=True)


def find_program(name):
    """Absolute path of a Slurm, munge or MariaDB program.

    SCRATCHBENCH_SBIN (a directory) names where a site installed them; else PATH, then
    /usr/sbin (Debian's place, often not on a user's PATH)."""
    where = os.environ.get("SCRATCHBENCH_SBIN")
    if where:
        candidate = Path(where) / name
        return str(candidate) if os.access(candidate, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    candidate = Path("/usr/sbin") / name
    return str(candidate) if os.access(candidate, os.X_OK) else None


def free_port_block(spec, prefer=None):
    """A base port whose whole block is free: ``prefer`` (the cluster's ports last time)
    if it still is, else the first from 17817 up."""
    candidates = ([prefer] if prefer else []) + list(range(FIRST_PORT, LAST_PORT, PORT_STEP))
    for base in candidates:
        trial = ClusterSpec(nodes=spec.nodes, base_port=base)
        if not any(port_in_use(p) for p in trial.ports().values()):
            return base
    raise ClusterError(
        f"no free block of {spec.nodes + 3} ports on 127.0.0.1 between "
        f"{FIRST_PORT} and {LAST_PORT}; stop other clusters or pass --base-port"
    )


def port_in_use(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _port_open(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _last_error_line(log_path):
    """The most telling line of a daemon log, for a one-line error."""
    try:
        lines = [
            ln.strip()
            for ln in Path(log_path).read_text(errors="replace").splitlines()
            if ln.strip()
        ]
    except OSError:
        return ""
    for line in reversed(lines):
        low = line.lower()
        if "error" in low or "fatal" in low or "abort" in low:
            return line[-200:]
    return lines[-1][-200:] if lines else ""


class EmbeddedCluster:
    """One embedded cluster, rooted at ``directory``."""

    def __init__(self, directory):
        self.dir = Path(directory).resolve()
        self.etc = self.dir / "etc"
        self.log = self.dir / "log"
        self.run = self.dir / "run"
        # One munge directory per cluster directory, under /run where user munge
        # reaches it wherever the cluster directory is.
        digest = hashlib.sha256(str(self.dir).encode()).hexdigest()[:12]
        self.munge_dir = MUNGE_RUN_ROOT / f"munge-{digest}"
        self.mysql_dir = self.dir / "mysql"
        self.state_path = self.dir / STATE_FILE

    # ---- paths and environment -------------------------------------------------
    @property
    def slurm_conf(self):
        return self.etc / "slurm.conf"

    @property
    def munge_socket(self):
        return self.munge_dir / "munged.socket"

    @property
    def mysql_socket(self):
        return self.run / "mariadbd.socket"

    def client_env(self, base=None):
        """Environment for Slurm client commands (sbatch, sacct, ...) of this cluster."""
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = str(self.slurm_conf)
        return env

    def recorded_spec(self):
        """The spec of the last `up`, for a restart: ports chosen automatically then are
        chosen again (the same ones if they are still free)."""
        state = self.read_state() or {}
        if not state.get("spec"):
            return ClusterSpec()
        spec = ClusterSpec(**state["spec"])
        if state.get("ports", "auto") == "auto":
            spec.base_port = None
        return spec

    def read_state(self):
        try:
            return json.loads(self.state_path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ClusterError(
                f"{self.state_path}: unreadable cluster state ({exc}); "
                "stop stray daemons by hand and remove it"
            ) from exc

    def _write_state(self, state):
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(self.state_path)

    def running_daemons(self):
        """Daemons recorded in the state file that still run the program we started."""
        state = self.read_state() or {}
        return [
            d
            for d in state.get("daemons", [])
            if process_alive(d["pid"]) and process_program(d["pid"]) == d["program"]
        ]

    # ---- up -------------------------------------------------------------------------
    def up(self, spec, timeout=120):
        """Start the cluster; a no-op when it already runs.  Returns the status dict."""
        spec.validate()
        state = self.read_state()
        if state and state.get("daemons"):
            alive = {d["name"] for d in self.running_daemons()}
            slurm = [d for d in state["daemons"] if not _is_san_daemon(d["name"])]
            if all(d["name"] in alive for d in slurm) and self._slurm_responds():
                self._repair_san(state)
                _progress(
                    f"already up ({len(self.running_daemons())} daemons, state in {self.dir})"
                )
                return self.status()
            if alive:
                _progress("found a partly running cluster; stopping it before a clean start")
            self.down(quiet=True)
        if os.geteuid() != 0:
            raise ClusterUnavailable(
                "the embedded cluster needs root: slurmd starts jobs as "
                "their user and munged runs as user 'munge'"
            )
        for program in DAEMONS:
            if find_program(program) is None:
                where = os.environ.get("SCRATCHBENCH_SBIN") or "PATH or /usr/sbin"
                raise ClusterUnavailable(
                    f"{program} not found in {where}: install Debian's munge, mariadb-server, "
                    "slurmdbd, slurmctld, slurmd and slurm-client (or point SCRATCHBENCH_SBIN "
                    "at the directory that holds them)"
                )
        self.dir.mkdir(parents=True, exist_ok=True)
        san_root = Path(spec.san_root or self.dir / "sanscratch").absolute()
        self._check_san_root(san_root)
        spec.san_root = str(san_root)

        t0 = time.monotonic()
        with _ports_lock():
            ports = "pinned" if spec.base_port is not None else "auto"
            if spec.base_port is None:
                recorded = (state or {}).get("spec", {}).get("base_port")
                spec.base_port = free_port_block(spec, prefer=recorded)
            for daemon, port in spec.ports().items():
                if port_in_use(port):
                    raise ClusterError(
                        f"port {port} on 127.0.0.1 (for {daemon}) is in use; "
                        "choose other ports with --base-port, or leave it out "
                        "to take free ones"
                    )
            _progress(
                f"starting a {spec.nodes}-node Slurm cluster in {self.dir} on ports "
                f"{spec.base_port}.. ({ports}; logs in {self.log})"
            )
            self._prepare_directories(spec)
            state = {
                "spec": asdict(spec),
                "ports": ports,
                "munge_dir": str(self.munge_dir),
                "daemons": [],
                "started": time.time(),
                # the SAN's dated changes outlive a restart, as its data does
                "san": {"changes": ((state or {}).get("san") or {}).get("changes", [])},
            }
            self._write_state(state)
            try:
                self._start_munged(state)
                self._start_mariadb(state, spec)
                self._start_slurmdbd(state, spec)
                self._start_slurmctld(state, spec)
                self._start_san(state, spec)
                self._start_slurmds(state, spec)
            except BaseException:
                _progress("start-up failed; stopping the daemons started so far")
                self.down(quiet=True)
                raise
        try:
            self._wait_nodes_idle(spec, timeout)
        except BaseException:
            _progress("start-up failed; stopping the daemons started so far")
            self.down(quiet=True)
            raise
        state["up_seconds"] = round(time.monotonic() - t0, 1)
        self._write_state(state)
        _progress(
            f"up in {state['up_seconds']} s: {spec.nodes} nodes in partition "
            f"'{PARTITION}', SLURM_CONF={self.slurm_conf}"
        )
        return self.status()

    def _check_san_root(self, san_root):
        if san_root.exists() and not san_root.is_dir():
            raise ClusterError(f"scratch root {san_root}: exists and is not a directory")
        parent = san_root if san_root.exists() else san_root.parent
        if not parent.is_dir():
            raise ClusterError(
                f"scratch root {san_root}: its parent directory {parent} does not exist"
            )
        if not os.access(parent, os.W_OK | os.X_OK):
            raise ClusterError(f"scratch root {san_root}: {parent} is not writable")

    def _prepare_directories(self, spec):
        for sub in (
            self.etc,
            self.log,
            self.run,
            self.dir / "state" / "ctld",
            self.dir / "localscratch",
        ):
            sub.mkdir(parents=True, exist_ok=True)
        Path(spec.san_root).mkdir(parents=True, exist_ok=True)
        os.chmod(spec.san_root, 0o755)
        for i in range(spec.nodes):
            name = node_name(i)
            for sub in ("spool", "tmp"):
                (self.dir / "state" / sub / name).mkdir(parents=True, exist_ok=True)
            local = self.dir / "localscratch" / name
            local.mkdir(exist_ok=True)
            os.chmod(local, 0o1777)  # like /localscratch: every user may write
            # Two directories standing for a node's two disks (seed 000's diskperf
            # writes to several at once); here they share one disk.
            for disk in LOCAL_DISKS:
                (local / disk).mkdir(exist_ok=True)
                os.chmod(local / disk, 0o1777)

        host = socket.gethostname().split(".")[0]
        node_lines = "\n".join(
            f"NodeName={node_name(i)} NodeHostname={host} NodeAddr=127.0.0.1 "
            f"Port={spec.base_port + 10 + i} CPUs={spec.cpus_per_node} RealMemory=1000 "
            f"State=UNKNOWN"
            for i in range(spec.nodes)
        )
        password = self._db_password()
        values = {
            "CLUSTER_NAME": spec.name,
            "HOST": host,
            "DIR": str(self.dir),
            "CTLD_PORT": spec.base_port,
            "DBD_PORT": spec.base_port + 1,
            "MYSQL_PORT": spec.base_port + 2,
            "MUNGE_SOCKET": str(self.munge_socket),
            "NODE_LINES": node_lines,
            "PARTITION": PARTITION,
            "DB_PASSWORD": password,
            "SAN_ROOT": spec.san_root,
            "LOCAL_ROOT": str(self.dir / "localscratch"),
        }
        for name, mode in (
            ("slurm.conf", 0o644),
            ("slurmdbd.conf", 0o600),
            ("prolog.sh", 0o755),
            ("epilog.sh", 0o755),
            ("task_prolog.sh", 0o755),
        ):
            text = (TEMPLATES / name).read_text()
            for key, value in values.items():
                text = text.replace(f"@{key}@", str(value))
            target = self.etc / name
            target.write_text(text)
            os.chmod(target, mode)

    def _db_password(self):
        """The slurmdbd database password, made once and kept with the data."""
        path = self.dir / "db_password"
        if not path.exists():
            path.write_text(secrets.token_hex(16))
            os.chmod(path, 0o600)
        return path.read_text().strip()

    def _spawn(self, state, name, argv, user=None, env=None, program=None):
        """Start a daemon in the foreground as our child and record it; ``program`` is
        what its PID will run once it has exec'ed (a launcher that execs it)."""
        log_path = self.log / f"{name}.out"
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                user=user,
                env=env or self.client_env(),
                cwd=self.dir,
            )
        state["daemons"].append(
            {
                "name": name,
                "pid": proc.pid,
                "program": program or os.path.basename(argv[0]),
                "log": str(log_path),
            }
        )
        self._write_state(state)
        return proc

    def _wait(self, proc, name, ready, timeout, log_path=None):
        """Wait until ready() is true; a daemon that exits first is an error naming its log."""
        log_path = log_path or self.log / f"{name}.out"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None or not process_alive(proc.pid):
                detail = _last_error_line(log_path) or _last_error_line(self.log / f"{name}.out")
                raise ClusterError(
                    f"{name} exited during start-up"
                    + (f" ({detail})" if detail else "")
                    + f"; log: {log_path}"
                )
            if ready():
                return
            time.sleep(0.2)
        raise ClusterError(f"{name} did not become ready within {timeout} s; log: {log_path}")

    def _start_munged(self, state):
        _progress("starting munged (as user munge)")
        munge = pwd.getpwnam("munge")
        MUNGE_RUN_ROOT.mkdir(mode=0o755, parents=True, exist_ok=True)
        self.munge_dir.mkdir(exist_ok=True)
        os.chown(self.munge_dir, munge.pw_uid, munge.pw_gid)
        os.chmod(self.munge_dir, 0o711)  # clients need to reach the socket
        key = self.munge_dir / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        os.chown(key, munge.pw_uid, munge.pw_gid)
        os.chmod(key, 0o400)
        log = self.munge_dir / "munged.log"
        argv = [
            find_program("munged"),
            "-F",
            f"--socket={self.munge_socket}",
            f"--key-file={key}",
            f"--log-file={log}",
            f"--pid-file={self.munge_dir / 'munged.pid'}",
            f"--seed-file={self.munge_dir / 'munged.seed'}",
        ]
        proc = self._spawn(state, "munged", argv, user="munge")
        self._wait(proc, "munged", self._munge_works, 30, log_path=log)

    def _munge_works(self):
        if not self.munge_socket.exists():
            return False
        cred = subprocess.run(["munge", "-n", "-S", str(self.munge_socket)], capture_output=True)
        if cred.returncode != 0:
            return False
        check = subprocess.run(
            ["unmunge", "-S", str(self.munge_socket)], input=cred.stdout, capture_output=True
        )
        return check.returncode == 0

    def _start_mariadb(self, state, spec):
        datadir = self.mysql_dir / "data"
        if not (datadir / "mysql").is_dir():
            _progress("initialising the accounting database (MariaDB)")
            datadir.mkdir(parents=True, exist_ok=True)
            init = subprocess.run(
                [
                    find_program("mariadb-install-db"),
                    "--no-defaults",
                    f"--datadir={datadir}",
                    "--user=root",
                    "--auth-root-authentication-method=socket",
                    "--skip-test-db",
                ],
                capture_output=True,
                text=True,
            )
            if init.returncode != 0:
                detail = (init.stderr or init.stdout).strip().splitlines()[-1:] or [""]
                raise ClusterError(f"mariadb-install-db failed ({detail[0][:200]}) for {datadir}")
        _progress(f"starting mariadbd on 127.0.0.1:{spec.base_port + 2}")
        log = self.log / "mariadbd.log"
        argv = [
            find_program("mariadbd"),
            "--no-defaults",
            f"--datadir={datadir}",
            "--user=root",
            "--bind-address=127.0.0.1",
            f"--port={spec.base_port + 2}",
            f"--socket={self.mysql_socket}",
            f"--pid-file={self.run / 'mariadbd.pid'}",
            f"--log-error={log}",
            "--innodb-buffer-pool-size=256M",
            "--innodb-lock-wait-timeout=900",
            "--skip-name-resolve",
        ]
        proc = self._spawn(state, "mariadbd", argv)
        self._wait(proc, "mariadbd", lambda: self._sql("SELECT 1", quiet=True), 60, log_path=log)
        password = self._db_password()
        self._sql(
            "CREATE DATABASE IF NOT EXISTS slurm_acct_db; "
            f"CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}'; "
            f"ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}'; "
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
        )

    def _sql(self, statement, quiet=False):
        result = subprocess.run(
            [
                "mariadb",
                "--no-defaults",
                "-S",
                str(self.mysql_socket),
                "-u",
                "root",
                "-e",
                statement,
            ],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            if quiet:
                return False
            raise ClusterError(
                f"MariaDB refused '{statement[:40]}...': {result.stderr.strip()[:200]}"
            )
        return True

    def _start_slurmdbd(self, state, spec):
        _progress(f"starting slurmdbd on 127.0.0.1:{spec.base_port + 1}")
        proc = self._spawn(state, "slurmdbd", [find_program("slurmdbd"), "-D"])
        self._wait(
            proc,
            "slurmdbd",
            lambda: _port_open(spec.base_port + 1),
            60,
            log_path=self.log / "slurmdbd.log",
        )

    def _start_slurmctld(self, state, spec):
        _progress(f"starting slurmctld on 127.0.0.1:{spec.base_port}")
        proc = self._spawn(state, "slurmctld", [find_program("slurmctld"), "-D", "-i"])
        self._wait(proc, "slurmctld", self._slurm_responds, 60, log_path=self.log / "slurmctld.log")

    def restart_slurmctld(self, timeout=60):
        """Stop slurmctld and start it again, as an administrator does after a config
        change or a crash: its saved state carries queued and running jobs through."""
        state = self.read_state() or {}
        daemons = state.get("daemons", [])
        old = next((d for d in daemons if d["name"] == "slurmctld"), None)
        if old is None:
            raise ClusterError(f"no slurmctld recorded in {self.state_path}: is the cluster up?")
        self._stop(old, timeout=30)
        state["daemons"] = [d for d in daemons if d is not old]
        spec = ClusterSpec(**state["spec"])
        self._start_slurmctld(state, spec)
        return self.status()

    @property
    def san(self):
        return GlusterSan(
            self.dir,
            (self.read_state() or {}).get("spec", {}).get("san_root") or self.dir / "sanscratch",
        )

    def trim_san(self):
        """The SAN's storage server disks trimmed (GlusterSan.trim_disks), when it is
        GlusterFS: what earlier runs deleted on the SAN goes back to this machine's disk,
        which the node-local target shares (a nightly SAN search left 47 GiB allocated in
        the images, and the node-local search after it could take only half its
        footprints)."""
        if ((self.read_state() or {}).get("san") or {}).get("kind") == "glusterfs":
            self.san.trim_disks()

    def _start_san(self, state, spec):
        """The GlusterFS SAN that holds the per-job directories, or, where it cannot start,
        a plain directory, said in one line and recorded (the site config and the pages
        describe the target from this record)."""
        san = GlusterSan(self.dir, spec.san_root)
        changes = (state.get("san") or {}).get("changes", [])  # kept for when it is back
        if not spec.san_servers:
            state["san"] = {
                "kind": "directory",
                "reason": "--san-servers 0 asked for no SAN",
                "changes": changes,
            }
        else:
            try:
                state["san"] = san.start(
                    state, spec, lambda name, argv: self._spawn(state, name, argv), _progress
                )
            except SanUnavailable as exc:
                # What the failed start left (brick processes, the servers' disks, this
                # machine's client) goes now: `down` of a directory SAN would not look.
                san.stop_bricks()
                san.unmount_all()
                _progress(
                    f"the GlusterFS SAN cannot start: {exc}; per-job directories "
                    f"(MYSANSCRATCH) fall back to a plain directory, {spec.san_root}"
                )
                state["san"] = {"kind": "directory", "reason": str(exc), "changes": changes}
        self._write_state(state)

    def describe_san(self):
        """The running volume as GlusterFS has it (servers, bricks, shard block size, options)
        and its dated changes: what a run stores as the SAN's configuration."""
        state = self.read_state() or {}
        san_state = state.get("san") or {}
        if (
            not any(d["name"] == "glusterd" for d in self.running_daemons())
            or san_state.get("kind") != "glusterfs"
        ):
            raise ClusterError(
                f"the embedded cluster in {self.dir} has no running GlusterFS "
                "SAN: start it with `scratchbench cluster up`"
            )
        return dict(
            self.san.describe(),
            volume=san_state.get("volume"),
            changes=san_state.get("changes", []),
        )

    def change_san(self, servers=None, stripe_size=None, settings=()):
        """Change the running volume as an admin would (`cluster san`): options
        (settings: [(key, value)]), the shard block size, the number of storage servers.
        Everything is checked before anything changes; each change is recorded, dated, in
        state['san']['changes'] and the new configuration in state['san'].  Returns what
        was done, a line each."""
        state = self.read_state() or {}
        san_state = state.get("san") or {}
        before = self.describe_san()  # (refuses when there is no running SAN)
        san = self.san
        if servers is not None and not 1 <= servers <= MAX_SERVERS:
            raise ClusterError(
                f"--servers {servers}: expected 1 to {MAX_SERVERS} storage "
                f"servers (the volume has {before['servers']}; a volume "
                "keeps at least one)"
            )
        if stripe_size is not None:
            validate_stripe_size(stripe_size, "--stripe-size")
            if not stripe_size and before["stripe_size"] and san.sharded_files():
                san.set_stripe_size(0)  # refuses, naming the sharded files
        for key, _ in settings:
            san.option_value(key)  # refuses an option GlusterFS does not have
        said, changes = [], []

        def record(what, was, now):
            changes.append(
                {
                    "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "change": what,
                    "before": was,
                    "after": now,
                }
            )
            said.append(f"{what}: {was} -> {now}")

        try:
            for key, value in settings:
                was = san.option_value(key)
                now = san.set_option(key, value)
                record(f"volume option {key}", was, now)
            if stripe_size is not None and stripe_size != before["stripe_size"]:
                san.set_stripe_size(stripe_size)
                record(
                    "shard block size",
                    stripe_words(before["stripe_size"]),
                    stripe_words(stripe_size),
                )
            if servers is not None and servers != before["servers"]:
                if servers > before["servers"]:
                    san.add_servers(
                        san_state["address"], servers, san_state["brick_size"], _progress
                    )
                else:
                    san.remove_servers(san_state["address"], servers, _progress)
                record("storage servers", before["servers"], servers)
        finally:
            # what did change is recorded even when a later change failed
            after = san.describe()
            san_state.update(
                servers=after["servers"], stripe_size=after["stripe_size"], options=after["options"]
            )
            san_state["changes"] = san_state.get("changes", []) + changes
            state["san"] = san_state
            # a restart (`cluster up`) builds the volume it now has
            state["spec"].update(san_servers=after["servers"], san_stripe_size=after["stripe_size"])
            self._write_state(state)
        if not changes:
            said.append(f"the volume {san_state.get('volume')} already is so: nothing changed")
        return said

    def _repair_san(self, state):
        """`up` on a running cluster: start again what of the SAN is gone (glusterd, a
        storage server, this machine's or a node's client), and say what it did."""
        san_state = state.get("san") or {}
        if san_state.get("kind") != "glusterfs":
            return
        spec = ClusterSpec(**state["spec"])
        san = GlusterSan(self.dir, spec.san_root)
        spawn = lambda name, argv: self._spawn(state, name, argv)  # noqa: E731
        daemons = {d["name"]: d for d in state["daemons"]}
        alive = {d["name"] for d in self.running_daemons()}

        def forget(name):
            state["daemons"] = [d for d in state["daemons"] if d["name"] != name]

        try:
            if "san-client-login" not in alive:
                forget("san-client-login")
            if "glusterd" not in alive:
                _progress("the SAN's glusterd is not running: starting it again")
                forget("glusterd")
                # (start() mounts this machine's client again only if it is gone)
                state["san"] = san.start(state, spec, spawn, _progress)
            else:
                down = [b["server"] for b in san.brick_status() if not b["online"]]
                if down:
                    _progress(
                        f"storage server(s) {', '.join(down)} of the SAN are down: "
                        "starting them again"
                    )
                    san.start_down_bricks(timeout=30)
                if "san-client-login" not in alive:
                    san.mount_login_client(san_state, spawn, _progress)
                san.trim_disks()
            for name, daemon in daemons.items():
                if not name.startswith("slurmd-") or name not in alive:
                    continue
                node = name[len("slurmd-") :]
                if not san.node_mount_ok(daemon["pid"]):
                    forget(f"san-client-{node}")
                    proc = san.remount_node_client(san_state, node, daemon["pid"], _progress)
                    state["daemons"].append(
                        {
                            "name": f"san-client-{node}",
                            "pid": proc.pid,
                            "program": "glusterfs",
                            "log": str(san.log / f"client-{node}.log"),
                        }
                    )
        except ClusterError as exc:
            _progress(f"could not repair the SAN: {exc}")
        finally:
            self._write_state(state)
        problems = san.health(state)
        for problem in problems:
            _progress(f"still wrong after repair: {problem}")
        if not problems:
            for name in daemons:
                if name.startswith("slurmd-"):
                    self._resume_if_drained_by_prolog(name[len("slurmd-") :])

    def _resume_if_drained_by_prolog(self, node):
        """Slurm drains a node whose prolog failed (it could not make the per-job
        directory: a dead SAN client, full servers): once the SAN is well, so is the node."""
        result = subprocess.run(
            ["sinfo", "-h", "-N", "-n", node, "-o", "%T|%E"],
            capture_output=True,
            text=True,
            env=self.client_env(),
            timeout=20,
        )
        state, _, reason = result.stdout.strip().partition("|")
        if state.startswith("drain") and "prolog" in reason.lower():
            subprocess.run(
                ["scontrol", "update", f"nodename={node}", "state=resume"],
                capture_output=True,
                env=self.client_env(),
                timeout=20,
            )
            _progress(f"node {node}: drained by Slurm after its prolog failed ({reason}); resumed")

    def _start_slurmds(self, state, spec):
        san = GlusterSan(self.dir, spec.san_root)
        on_san = (state.get("san") or {}).get("kind") == "glusterfs"
        if on_san:
            san.share_mounts_with_nodes(_progress)
        for i in range(spec.nodes):
            name = node_name(i)
            where = " with its own SAN client" if on_san else ""
            _progress(
                f"starting slurmd for node {name} on 127.0.0.1:{spec.base_port + 10 + i}" + where
            )
            slurmd = [find_program("slurmd"), "-D", "-N", name]
            if on_san:
                proc = self._spawn(
                    state,
                    f"slurmd-{name}",
                    san.node_launcher(state["san"], name, slurmd),
                    program="slurmd",
                )
                client = san.node_client_pid(name)
                state["daemons"].append(
                    {
                        "name": f"san-client-{name}",
                        "pid": client,
                        "program": "glusterfs",
                        "log": str(san.log / f"client-{name}.log"),
                    }
                )
                self._write_state(state)
            else:
                proc = self._spawn(state, f"slurmd-{name}", slurmd)
            # A node is up once slurmctld has heard from it.
            self._wait(
                proc,
                f"slurmd-{name}",
                lambda name=name: (
                    self._node_states().get(name, "unknown")
                    not in ("unknown", "down", "down*", "unk*", "unknown*")
                ),
                60,
                log_path=self.log / f"slurmd-{name}.log",
            )

    def _wait_nodes_idle(self, spec, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = self._node_states()
            if len(states) == spec.nodes and all(s.startswith("idle") for s in states.values()):
                return
            time.sleep(0.3)
        raise ClusterError(
            f"nodes did not become idle within {timeout} s: "
            f"{self._node_states()}; logs in {self.log}"
        )

    # ---- queries ----------------------------------------------------------------------
    def _slurm_responds(self):
        if not self.slurm_conf.exists():
            return False
        result = subprocess.run(
            ["scontrol", "ping"], capture_output=True, text=True, env=self.client_env(), timeout=20
        )
        return result.returncode == 0 and "UP" in result.stdout

    def _node_states(self):
        result = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %t"],
            capture_output=True,
            text=True,
            env=self.client_env(),
            timeout=20,
        )
        if result.returncode != 0:
            return {}
        return dict(line.split()[:2] for line in result.stdout.splitlines() if line.strip())

    def status(self):
        """A dict: up or not, the spec, each daemon's PID and liveness, node states."""
        state = self.read_state()
        if not state:
            return {"up": False, "dir": str(self.dir), "daemons": [], "nodes": {}}
        daemons = [
            dict(d, alive=process_alive(d["pid"]) and process_program(d["pid"]) == d["program"])
            for d in state.get("daemons", [])
        ]
        # Slurm's daemons make the cluster up; what of the SAN is wrong is listed apart
        slurm = [d for d in daemons if not _is_san_daemon(d["name"])]
        responds = all(d["alive"] for d in slurm) and bool(slurm) and self._slurm_responds()
        nodes = self._node_states() if responds else {}
        san = dict(state.get("san") or {})
        if san.get("kind") == "glusterfs" and daemons:
            san["bricks"] = self.san.brick_status()
            san["problems"] = self.san.health(state)
            san["node_mounts"] = {
                d["name"][len("slurmd-") :]: d["alive"] and self.san.node_mount_ok(d["pid"])
                for d in daemons
                if d["name"].startswith("slurmd-")
            }
        return {
            "up": responds,
            "dir": str(self.dir),
            "spec": state.get("spec"),
            "san": san,
            "ports": state.get("ports", "pinned"),
            "munge_dir": state.get("munge_dir"),
            "slurm_conf": str(self.slurm_conf),
            "daemons": daemons,
            "nodes": nodes,
            "up_seconds": state.get("up_seconds"),
        }

    def problems(self):
        """What is wrong with a cluster that was started, in words, one item each (the
        embedded site's targets run this as their health command)."""
        state = self.read_state() or {}
        if not state.get("daemons"):
            return [f"the embedded cluster in {self.dir} is not running"]
        alive = {d["name"] for d in self.running_daemons()}
        problems = [
            f"{d['name']} (pid {d['pid']}) is not running; log: {d['log']}"
            for d in state["daemons"]
            if d["name"] not in alive and not _is_san_daemon(d["name"])
        ]
        problems += self.san.health(state)
        return problems

    # ---- down --------------------------------------------------------------------------
    def _stop(self, daemon, timeout, quiet=True):
        """SIGTERM one recorded daemon (SIGKILL after timeout); False if it was not running."""
        pid = daemon["pid"]
        if not (process_alive(pid) and process_program(pid) == daemon["program"]):
            return False
        if not quiet:
            _progress(f"stopping {daemon['name']} (pid {pid})")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while process_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if process_alive(pid):
            os.kill(pid, signal.SIGKILL)
            while process_alive(pid):
                time.sleep(0.1)
        return True

    def down(self, quiet=False, timeout=30):
        """Stop the daemons we started, by PID, newest first.  Returns their names."""
        state = self.read_state()
        if not state or not state.get("daemons"):
            if not quiet:
                _progress(f"not running (no daemons recorded in {self.state_path})")
            return []
        if any(d["name"] == "slurmctld" for d in self.running_daemons()):
            # Jobs of this cluster would outlive slurmd as orphans: cancel them first.
            subprocess.run(
                ["scancel", "--full", f"--partition={PARTITION}"],
                env=self.client_env(),
                capture_output=True,
                timeout=20,
            )
        stopped = []
        for daemon in reversed(state["daemons"]):
            if self._stop(daemon, timeout, quiet):
                stopped.append(daemon["name"])
        if (state.get("san") or {}).get("kind") == "glusterfs":
            # The storage servers glusterd started, then exactly the mounts `up` made.
            self.san.stop_bricks()
            self.san.unmount_all()
        state["daemons"] = []
        state.pop("up_seconds", None)
        self._write_state(state)
        if not quiet:
            _progress(f"stopped {len(stopped)} daemons")
        return stopped
