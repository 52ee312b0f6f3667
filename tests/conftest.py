"""Shared fixtures: kernel builds, MPI launch helpers, a real embedded Slurm cluster.

Everything runs for real: mpirun, srun, slurmctld/slurmd/slurmdbd/munged/MariaDB and
ReFrame.  Each test session gets its own SCRATCHBENCH_HOME and its own ports, and every
daemon a fixture starts is stopped at the end, failures included.
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
VENV_BIN = Path(sys.executable).parent
SHARED = REPO.parent / "shared"
FIXTURES = SHARED / "fixtures" / "ior-4.1.0"
# Ports of the session cluster: free ones chosen by `cluster up`, unless
# SCRATCHBENCH_TEST_BASE_PORT pins them.
SESSION_BASE_PORT = (
    int(os.environ["SCRATCHBENCH_TEST_BASE_PORT"])
    if os.environ.get("SCRATCHBENCH_TEST_BASE_PORT")
    else None
)

MPI = {
    "openmpi": {
        "cc": "mpicc.openmpi",
        "run": "mpirun.openmpi",
        "env": {
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_btl": "self,tcp",
            "OMPI_MCA_btl_tcp_if_include": "lo",
            "OMPI_MCA_oob_tcp_if_include": "lo",
            "OMPI_MCA_pml": "ob1",
            "OMPI_MCA_rmaps_base_oversubscribe": "1",
            # as the site's module: PMIx's hash store (see its modulefile)
            "PMIX_MCA_gds": "hash",
        },
        "srun_mpi": "pmix",
    },
    "mpich": {"cc": "mpicc.mpich", "run": "mpirun.mpich", "env": {}, "srun_mpi": "pmi2"},
}


def run(cmd, env=None, timeout=600, check=False, **kw):
    full_env = dict(os.environ)
    full_env.update(env or {})
    result = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, env=full_env, timeout=timeout, **kw
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{cmd} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def scratchbench(*args, env=None, timeout=900):
    return run([VENV_BIN / "scratchbench", *args], env=env, timeout=timeout)


@pytest.fixture(scope="session")
def kernels(tmp_path_factory):
    """The kernel built three ways: Open MPI, Open MPI + ASan/UBSan, MPICH."""
    out = tmp_path_factory.mktemp("kernel-builds")
    builds = {}
    for name, mpi, target in (
        ("openmpi", "openmpi", "all"),
        ("asan", "openmpi", "sanitize"),
        ("mpich", "mpich", "all"),
    ):
        build = out / name
        run(["make", "-C", SRC, f"MPICC={MPI[mpi]['cc']}", f"BUILD={build}", target], check=True)
        binary = build / ("scratchbench-kernel-asan" if name == "asan" else "scratchbench-kernel")
        assert binary.is_file(), f"make {target} produced no {binary}"
        builds[name] = (binary, mpi)
    return builds


def mpirun(build, np, args, env=None, timeout=300):
    binary, mpi = build
    launcher = MPI[mpi]["run"]
    extra = ["--oversubscribe"] if mpi == "openmpi" else []
    full_env = dict(MPI[mpi]["env"])
    full_env["ASAN_OPTIONS"] = "detect_leaks=0"  # MPI libraries keep allocations at exit
    # A run to its end, never signalled: when a rank exits with an error its siblings are
    # stopped at once, not after Open MPI's 1 s grace (2 s more for each of ~40 tests of
    # bad input; the tests that signal a run keep the grace its clean-up needs).
    full_env["OMPI_MCA_odls_base_sigkill_timeout"] = "0"
    full_env.update(env or {})
    return run([launcher, *extra, "-np", str(np), binary, *args], env=full_env, timeout=timeout)


def reachable_tmpdir(prefix):
    """A temporary directory every user can traverse (munged runs as 'munge', and
    pytest's own tmp dirs are private)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    os.chmod(path, 0o755)
    return path


@contextlib.contextmanager
def one_node_san(name):
    """(SCRATCHBENCH_HOME, its env) with a 1-node cluster and its GlusterFS SAN (1 GiB
    bricks), stopped and removed after; fails when GlusterFS cannot run.  The home is
    /tmp/scratchbench-NAME-*, a prefix .ci/run's clean-up knows."""
    path = reachable_tmpdir(f"scratchbench-{name}-")
    env = {"SCRATCHBENCH_HOME": str(path)}
    try:
        up = scratchbench("cluster", "up", "--nodes", "1", "--san-brick-size", "1g", env=env)
        assert up.returncode == 0, up.stderr
        status = json.loads(scratchbench("cluster", "status", "--json", env=env).stdout)
        if status["san"].get("kind") != "glusterfs":
            pytest.fail(f"no GlusterFS SAN: {status['san'].get('reason')}")
        yield path, env
    finally:
        scratchbench("cluster", "down", env=env)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def sb_home():
    """A SCRATCHBENCH_HOME of this session, exported so the CLI and ReFrame use it."""
    home = reachable_tmpdir("scratchbench-home-")
    old = os.environ.get("SCRATCHBENCH_HOME")
    os.environ["SCRATCHBENCH_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("SCRATCHBENCH_HOME", None)
    else:
        os.environ["SCRATCHBENCH_HOME"] = old
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def cluster(sb_home):
    """A real 2-node embedded Slurm cluster, up for the whole session."""
    from cluster import ClusterSpec, EmbeddedCluster

    if os.geteuid() != 0:
        pytest.skip("the embedded cluster needs root (slurmd, munged as user munge)")
    c = EmbeddedCluster(sb_home / "cluster")
    try:
        c.up(ClusterSpec(nodes=2, cpus_per_node=2, base_port=SESSION_BASE_PORT))
        yield c
    finally:
        c.down(quiet=True)


def slurm_env(cluster, mpi):
    env = dict(MPI[mpi]["env"])
    env["SLURM_CONF"] = str(cluster.slurm_conf)
    env["SLURM_MPI_TYPE"] = MPI[mpi]["srun_mpi"]
    return env


def pytest_terminal_summary(terminalreporter, config):
    stats = terminalreporter.stats
    count = {k: len(stats.get(k, [])) for k in ("passed", "failed", "skipped", "error")}
    config._scratchbench_counts = (
        f"{count['passed']} passed, "
        f"{count['failed'] + count['error']} failed, "
        f"{count['skipped']} skipped"
    )


def pytest_unconfigure(config):
    """The closing line for CI logs, after pytest's own summary: N passed, N failed."""
    line = getattr(config, "_scratchbench_counts", None)
    if line:
        print(line, flush=True)


@pytest.fixture(scope="session")
def quick_runs(cluster):
    """Two runs of the quick suite through the real cluster: the whole suite, then its
    short checks only (what a night that ran part of the suite stores; the pages and
    verdicts must take it), with a note holding markup, which every page must show
    escaped.  (The second run's subset keeps the CI's time: the whole suite twice took
    11 minutes.  Both runs use both MPIs: a series of one run would need 4 more runs
    to rank where the pages test expects 3.)"""
    runs = []
    second = [
        "--name",
        "KernelIOTest",
        "--name",
        "KernelMetadata",
        "--name",
        "StageInOut",
        "--name",
        "PerJobScratchRemoved",
    ]
    for note, subset in (
        ("first quick run", []),
        ("ticket CHG-42 <script>alert('x')</script>", second),
    ):
        result = scratchbench("run", "--tag", "quick", *subset, "--note", note, timeout=1500)
        marker = "run report:   "
        report = next(
            (ln.split(marker, 1)[1] for ln in result.stdout.splitlines() if ln.startswith(marker)),
            None,
        )
        runs.append(
            {"result": result, "note": note, "run_dir": Path(report).parent if report else None}
        )
        if result.returncode != 0:
            # Keep the evidence: the session's home is removed at the end.
            artifacts = REPO / "var" / "test-artifacts"
            artifacts.mkdir(parents=True, exist_ok=True)
            (artifacts / f"quick-run-{len(runs)}.out").write_text(result.stdout + result.stderr)
            if report:
                shutil.copytree(
                    Path(report).parent, artifacts / f"quick-run-{len(runs)}", dirs_exist_ok=True
                )
    # The pages as a site sees them after its first two runs, built now: later tests add
    # runs of their own to this home, and the pages are about the latest run.
    if all(run["run_dir"] for run in runs):
        pages = {"dir": Path(os.environ["SCRATCHBENCH_HOME"]) / "pages-after-two-quick-runs"}
        pages["verdict"] = scratchbench("verdict", "nightly", "--run", runs[-1]["run_dir"].name)
        pages["report"] = scratchbench("report", "--out", str(pages["dir"]))
        runs[-1]["pages"] = pages
    return runs


def failures_of(run):
    """The FAILED lines of a `scratchbench run`, for assertion messages."""
    return "\n".join(ln for ln in run["result"].stdout.splitlines() if ln.startswith("FAILED"))


def launch_chromium(playwright):
    """Debian's Chromium, headless, as the browser tests use it (no sandbox as root)."""
    return playwright.chromium.launch(
        executable_path="/usr/bin/chromium",
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    )


class NormalUser:
    """User nobody with its own copy of the checkout, its own HOME and
    SCRATCHBENCH_HOME (home/sb), and the harness installed by `ci/setup.sh
    --harness-only` from a wheelhouse (so it needs no network of its own)."""

    def __init__(self, root, wheelhouse, name="nobody", checkout=None):
        import pwd

        account = pwd.getpwnam(name)
        self.name, self.uid, self.gid = name, account.pw_uid, account.pw_gid
        self.root, self.home = root, root / "home"
        self.checkout = checkout or root / "checkout"
        self.env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(self.home),
            "USER": name,
            "LOGNAME": name,
            "SCRATCHBENCH_HOME": str(self.home / "sb"),
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(wheelhouse),
            "PIP_NO_CACHE_DIR": "1",
        }

    def run(self, cmd, env=None, timeout=1200):
        return subprocess.run(
            self.command(cmd, env),
            cwd=self.checkout,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def command(self, cmd, env=None):
        full = dict(self.env, **(env or {}))
        return [
            "runuser",
            "-u",
            self.name,
            "--",
            "env",
            "-i",
            *(f"{k}={v}" for k, v in full.items()),
            *map(str, cmd),
        ]

    def scratchbench(self, *args, env=None, timeout=1200):
        return self.run(
            [self.checkout / ".venv" / "bin" / "scratchbench", *args], env=env, timeout=timeout
        )


@pytest.fixture(scope="session")
def nobody_checkout():
    """A NormalUser whose `ci/setup.sh --harness-only` has run (its result in
    ``setup_result``; ``left_in_tmp``: what it left in /tmp)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user (runuser)")
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    house = reachable_tmpdir("sb-wheelhouse-")
    run(
        [
            VENV_BIN / "pip",
            "download",
            "-q",
            "--disable-pip-version-check",
            "-d",
            house,
            *project["build-system"]["requires"],
            "wheel",
            *project["project"]["dependencies"],
        ],
        check=True,
        timeout=900,
    )
    for path in house.iterdir():
        path.chmod(0o644)
    user = NormalUser(reachable_tmpdir("sb-site-user-"), house)
    files = run(
        ["git", "-C", REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
    ).stdout.split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (user.checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, user.checkout / name)
    user.home.mkdir()
    for path in [user.root, *user.root.rglob("*")]:
        os.chown(path, user.uid, user.gid)
    tmp_before = set(os.listdir("/tmp"))
    user.setup_result = user.run(["ci/setup.sh", "--harness-only"])
    user.left_in_tmp = {
        n for n in set(os.listdir("/tmp")) - tmp_before if os.lstat(f"/tmp/{n}").st_uid == user.uid
    }
    yield user
    shutil.rmtree(user.root, ignore_errors=True)
    shutil.rmtree(house, ignore_errors=True)
