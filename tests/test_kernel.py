"""scratchbench-kernel: unit tests in C, real MPI runs, and every bad input.

MPI runs use 1, 2 and 4 ranks (oversubscribed on 2 cores) for each mode and API, under
mpirun with Open MPI (plain and with ASan/UBSan) and MPICH, and under srun on the
embedded cluster.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import MPI, SRC, mpirun, run, slurm_env
from reframe_checks.lib.parsers import ParseError, kernel_problems, parse_kernel_json

IOTEST_ACCESS = [
    ("fpp", "posix", []),
    ("shared", "posix", []),
    ("fpp", "mpiio", []),
    ("shared", "mpiio", []),
    ("shared", "mpiio", ["--collective"]),
]


def report_of(path):
    return parse_kernel_json(path.read_text())


def test_c_unit_tests(tmp_path):
    result = run(["make", "-C", SRC, f"BUILD={tmp_path}", "check"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 failed" in result.stdout and " passed" in result.stdout


def test_builds_without_warnings_against_both_mpis(kernels):
    # -Werror is in the Makefile: the fixture's builds succeeding is the assertion;
    # here check both binaries report the library they were built with.
    for name, expect in (("openmpi", "Open MPI"), ("mpich", "MPICH")):
        binary, _ = kernels[name]
        assert run([binary, "--version"]).stdout.startswith("scratchbench-kernel ")


def test_schema_lists_the_kernels_back_ends(kernels):
    """SCHEMA.md's table of back ends is the kernel's own table, row for row."""
    binary, _ = kernels["openmpi"]
    result = run([binary, "--list-backends"])
    assert result.returncode == 0, result.stderr
    listed = [tuple(line.split("\t")) for line in result.stdout.splitlines()]
    assert {row[0] for row in listed} == {"sync", "queued"}, result.stdout
    assert all(len(row) == 3 for row in listed), result.stdout
    schema = (SRC / "SCHEMA.md").read_text()
    section = schema.split("\n## Back ends\n", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| (\w+) \| `([^`]+)` \| (.+?) \|$", section, re.M)
    assert documented == listed, "src/SCHEMA.md's table of back ends differs from --list-backends"


@pytest.mark.parametrize("build", ["openmpi", "asan", "mpich"])
@pytest.mark.parametrize("np", [1, 2, 4])
@pytest.mark.parametrize(
    "layout,api,extra",
    IOTEST_ACCESS,
    ids=["fpp-posix", "shared-posix", "fpp-mpiio", "shared-mpiio", "shared-mpiio-coll"],
)
def test_iotest_runs(kernels, tmp_path, build, np, layout, api, extra):
    out = tmp_path / "r.json"
    started = time.time()
    result = mpirun(
        kernels[build],
        np,
        [
            "iotest",
            "--dir",
            tmp_path,
            "--nr",
            "4096",
            "--nc",
            "4",
            "--reps",
            "2",
            "--layout",
            layout,
            "--api",
            api,
            *extra,
            "--output",
            out,
        ],
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert kernel_problems(report, expected_ranks=np, expected_nodes=1) == []
    write = report["repetitions"][1]["phases"]["write"]
    assert write["bytes"] == np * 4096 * 8 * 4
    assert len(write["per_rank"]["open"]) == np
    assert write["bandwidth_min_Bps"] <= write["bandwidth_max_Bps"]
    assert report["summary"]["read"]["bandwidth_min_Bps"]["n"] == 2
    assert report["mpi"]["library"].startswith("MPICH" if build == "mpich" else "Open MPI")
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"], "the kernel left files behind"
    # every phase's wall-clock window lies inside the job, in the order the phases ran
    windows = [
        ph["window_unix_s"] for rep in report["repetitions"] for ph in rep["phases"].values()
    ]
    assert all(started <= a <= b <= time.time() for a, b in windows), windows
    assert all(b <= next_a for (_, b), (next_a, _) in zip(windows, windows[1:])), windows


@pytest.mark.parametrize("build", ["openmpi", "asan", "mpich"])
@pytest.mark.parametrize("np", [1, 2, 4])
@pytest.mark.parametrize("layout", [[], ["--dir-per-rank"]], ids=["shared-dir", "dir-per-rank"])
def test_metadata_runs(kernels, tmp_path, build, np, layout):
    out = tmp_path / "m.json"
    result = mpirun(
        kernels[build],
        np,
        [
            "metadata",
            "--dir",
            tmp_path,
            "--files",
            "50",
            "--removers",
            "3",
            "--reps",
            "2",
            *layout,
            "--output",
            out,
        ],
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert kernel_problems(report, expected_ranks=np) == []
    phases = report["repetitions"][0]["phases"]
    assert list(phases) == ["create", "open", "stat", "remove"]
    for phase in phases.values():
        assert phase["items"] == 50 * np
    assert phases["remove"]["removers"] == 3
    assert report["summary"]["remove"]["rate_ops"]["n"] == 2
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_table_output(kernels, tmp_path):
    """The core's --table: one row per summarised figure, over repetitions, no JSON."""
    result = mpirun(
        kernels["openmpi"],
        2,
        ["iotest", "--dir", tmp_path, "--nr", "1024", "--nc", "2", "--reps", "3", "--table"],
    )
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("scratchbench-kernel iotest: 2 ranks on 1 node(s), file per")
    assert lines[1].split()[:4] == ["phase", "figure", "unit", "reps"]
    rows = {(r[0], r[1]): r for r in (ln.split() for ln in lines[2:])}
    assert set(rows) == {
        (p, f)
        for p in ("write", "read")
        for f in ("bandwidth_min_Bps", "bandwidth_max_Bps", "open_close_fraction_max")
    }
    assert rows[("write", "bandwidth_min_Bps")][2:4] == ["MiB/s", "3"]
    assert not result.stdout.lstrip().startswith("{")


def test_stonewall_and_its_validity_rule(kernels, tmp_path):
    out = tmp_path / "s.json"
    result = mpirun(
        kernels["openmpi"],
        2,
        [
            "iotest",
            "--dir",
            tmp_path,
            "--nr",
            "512",
            "--nc",
            "100000000",
            "--stonewall",
            "0.3",
            "--fsync",
            "none",
            "--output",
            out,
        ],
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    write = report["repetitions"][0]["phases"]["write"]
    assert write["stonewall_hit_ranks"] == 2
    read = report["repetitions"][0]["phases"]["read"]
    assert read["per_rank"]["xfers"] == write["per_rank"]["xfers"], "reads follow the writes"
    assert kernel_problems(report, expected_ranks=2) == []
    # Too little work for the stonewall: the phase ends early, the run is invalid.
    result = mpirun(
        kernels["openmpi"],
        2,
        [
            "iotest",
            "--dir",
            tmp_path,
            "--nr",
            "512",
            "--nc",
            "4",
            "--stonewall",
            "30",
            "--output",
            out,
        ],
    )
    problems = kernel_problems(report_of(out), expected_ranks=2)
    assert any("before its 30" in p for p in problems)


def test_corruption_between_write_and_read_is_caught(kernels, tmp_path):
    """Write and keep, corrupt one word, read back with --existing: exit 6, counted."""
    w = tmp_path / "w.json"
    result = mpirun(
        kernels["openmpi"],
        2,
        [
            "iotest",
            "--dir",
            tmp_path,
            "--nr",
            "1024",
            "--nc",
            "4",
            "--iread",
            "0",
            "--keep",
            "--output",
            w,
        ],
    )
    assert result.returncode == 0, result.stderr
    rundir = report_of(w)["filesystem"]["run_dir"]
    with open(os.path.join(rundir, "iotest.1"), "r+b") as f:
        f.seek(3 * 8192 + 80)
        f.write(b"\xde\xad\xbe\xef\xde\xad\xbe\xef")
    r = tmp_path / "r.json"
    result = mpirun(
        kernels["openmpi"],
        2,
        [
            "iotest",
            "--nr",
            "1024",
            "--nc",
            "4",
            "--iread",
            "1",
            "--existing",
            rundir,
            "--output",
            r,
        ],
    )
    assert result.returncode == 6
    assert "data verification failed: 1 of the 64-bit words" in result.stderr
    report = report_of(r)
    verify = report["repetitions"][0]["phases"]["read"]["verify"]
    assert verify["bad_words"] == 1
    assert verify["first_bad_byte"] == [{"rank": 1, "byte": 3 * 8192 + 80}]
    assert os.path.exists(os.path.join(rundir, "iotest.1")), "--existing never deletes"


def test_stale_data_is_classified(kernels, tmp_path):
    """A file from generation 1 read as generation 2 is stale, not random damage."""
    w = tmp_path / "w.json"
    mpirun(
        kernels["openmpi"],
        1,
        [
            "iotest",
            "--dir",
            tmp_path,
            "--nr",
            "1024",
            "--nc",
            "2",
            "--iread",
            "0",
            "--reps",
            "2",
            "--keep",
            "--output",
            w,
        ],
    )
    rundir = report_of(w)["filesystem"]["run_dir"]
    first = tmp_path / "gen1"
    first.mkdir()
    mpirun(
        kernels["openmpi"],
        1,
        [
            "iotest",
            "--dir",
            first,
            "--nr",
            "1024",
            "--nc",
            "2",
            "--iread",
            "0",
            "--keep",
            "--output",
            tmp_path / "g1.json",
        ],
    )
    old = report_of(tmp_path / "g1.json")["filesystem"]["run_dir"]
    os.replace(os.path.join(old, "iotest.0"), os.path.join(rundir, "iotest.0"))
    r = tmp_path / "r.json"
    result = mpirun(
        kernels["openmpi"],
        1,
        [
            "iotest",
            "--nr",
            "1024",
            "--nc",
            "2",
            "--iread",
            "1",
            "--existing",
            rundir,
            "--output",
            r,
        ],
    )
    assert result.returncode == 6
    verify = report_of(r)["repetitions"][0]["phases"]["read"]["verify"]
    assert verify["bad_words"] == 2 * 1024 // 64 and verify["stale_words"] == verify["bad_words"]


def test_full_file_system(kernels, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        out = tmp_path / "full.json"
        result = mpirun(
            kernels["openmpi"],
            2,
            ["iotest", "--dir", mnt, "--nr", "131072", "--nc", "16", "--output", out],
        )
        assert result.returncode == 5
        report = report_of(out)
        assert report["complete"] is False and report["exit_reason"] == "no-space"
        assert 7 * 2**20 <= report["bytes_before_failure"] <= 8 * 2**20
        assert "No space left on device" in result.stderr
        assert "bytes written by all ranks before the failure" in result.stderr
        assert os.listdir(mnt) == [], "partial files are removed"
        result = mpirun(
            kernels["openmpi"],
            1,
            ["metadata", "--dir", mnt, "--files", "5000", "--file-size", "4096", "--output", out],
        )
        assert result.returncode == 5 and report_of(out)["exit_reason"] == "no-space"
        assert os.listdir(mnt) == []
        # MPI-IO on one shared file: the implementation says only "I/O error"; the kernel
        # still tells a full file system (exit 5), for independent and collective writes.
        for extra in ([], ["--collective"]):
            result = mpirun(
                kernels["openmpi"],
                2,
                [
                    "iotest",
                    "--dir",
                    mnt,
                    "--layout",
                    "shared",
                    "--api",
                    "mpiio",
                    *extra,
                    "--nr",
                    "131072",
                    "--nc",
                    "16",
                    "--output",
                    out,
                ],
            )
            assert result.returncode == 5, result.stderr[-1000:]
            assert report_of(out)["exit_reason"] == "no-space"
            assert os.listdir(mnt) == []
        # The table marks the failure instead of showing figures as if all went well.
        result = mpirun(
            kernels["openmpi"],
            2,
            ["iotest", "--dir", mnt, "--nr", "131072", "--nc", "16", "--table"],
        )
        assert result.returncode == 5
        assert "FAILED (exit 5, no-space)" in result.stdout
        # A kept self-scaling data set that fills the file system to its last block: the
        # manifest a later --existing needs cannot be written, and the launch says so
        # with the no-space code (the search then tries a smaller data set), not a
        # warning before a second launch that finds no manifest.
        result = mpirun(
            kernels["openmpi"],
            1,
            ["selfscale", "--dir", mnt, "--keep", "--prepare", "8m", "--duration", "0.05",
             "--warmup", "0", "--reps", "1", "--point", "1m:64k:1:0.5:1", "--output", out],
        )  # fmt: skip
        assert result.returncode == 5, result.stderr[-1000:]
        report = report_of(out)
        assert report["exit_reason"] == "no-space" and report["complete"] is False
        assert "cannot write" in report["errors"][0]["message"]
        assert "sbk.manifest" in report["errors"][0]["message"]
        kept = report["filesystem"]["run_dir"]
        assert not os.path.exists(os.path.join(kept, "sbk.manifest"))
        shutil.rmtree(kept)
    finally:
        subprocess.run(["umount", str(mnt)])


@pytest.mark.parametrize(
    "mode,args",
    [
        ("iotest", ["--nr", "131072", "--nc", "64", "--reps", "4000"]),
        ("metadata", ["--files", "200000", "--reps", "50"]),
        (
            "diskperf",
            ["--block-sizes", "4k", "--queue-depths", "4", "--file-size", "512m", "--reps", "50"],
        ),
    ],
)
def test_sigterm_stops_and_cleans_up(kernels, tmp_path, mode, args):
    """scancel and a time limit send SIGTERM, then SIGKILL seconds later: every rank
    stops at its next request, removes what it made and reports why."""
    binary, mpi = kernels["openmpi"]
    target = tmp_path / "target"
    target.mkdir()
    out = tmp_path / "r.json"
    env = dict(os.environ, **MPI[mpi]["env"])
    proc = subprocess.Popen(
        [
            MPI[mpi]["run"],
            "--oversubscribe",
            "-np",
            "2",
            str(binary),
            mode,
            "--dir",
            str(target),
            "--output",
            str(out),
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    while not list(target.glob("sbk.*/*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1)
    assert proc.poll() is None, "the run ended before the signal: make it longer"
    ranks = subprocess.run(
        ["pgrep", "-f", f"{binary} {mode} --dir {target}"], capture_output=True, text=True
    ).stdout.split()
    for pid in ranks:
        os.kill(int(pid), signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    report = report_of(out)
    assert report["exit_reason"] == "stopped-by-signal" and report["complete"] is False
    assert "stopped by signal 15" in stderr
    assert os.listdir(target) == [], "what the run made is removed"


def test_permission_denied_as_unprivileged_user(kernels):
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to user nobody")
    # pytest's tmp dirs are private to root: nobody needs a path it can traverse.
    shared = tempfile.mkdtemp(prefix="sbk-perm-", dir="/tmp")
    try:
        os.chmod(shared, 0o755)
        binary = os.path.join(shared, "scratchbench-kernel")
        shutil.copy(kernels["openmpi"][0], binary)
        target = os.path.join(shared, "rootonly")
        os.mkdir(target, 0o755)
        home = os.path.join(shared, "home")
        os.mkdir(home, 0o777)
        result = run(
            [
                "runuser",
                "-u",
                "nobody",
                "--",
                "env",
                f"HOME={home}",
                "OMPI_MCA_btl=self",
                binary,
                "iotest",
                "--dir",
                target,
                "--nr",
                "1024",
                "--nc",
                "1",
            ]
        )
        assert os.listdir(target) == []
    finally:
        shutil.rmtree(shared)
    assert result.returncode == 4, result.stderr
    assert "Permission denied" in result.stderr
    report = json.loads(result.stdout)
    assert report["exit_reason"] == "permission-denied" and report["complete"] is False


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["iotest", "--dir", "/nonexistent/dir"],
            "target directory /nonexistent/dir: No such file",
        ),
        (["iotest", "--dir", "/etc/hostname"], "is not a directory"),
        (["iotest", "--dir", "/"], "refusing to write in the root directory"),
    ],
)
def test_bad_directories(kernels, args, message):
    result = mpirun(kernels["openmpi"], 1, args)
    assert result.returncode in (2, 3)
    assert message in result.stderr
    assert len([ln for ln in result.stderr.splitlines() if "scratchbench-kernel:" in ln]) == 1


@pytest.mark.parametrize(
    "args,message",
    [
        ([], "missing MODE"),
        (["bogus"], "unknown mode 'bogus'"),
        (["iotest"], "--dir is required"),
        (["iotest", "--dir", ".", "--nr", "abc"], "--nr: expected an integer from 1 to"),
        (["iotest", "--dir", ".", "--nr", "0"], "--nr: expected an integer"),
        (["iotest", "--dir", ".", "--iread", "3"], "--iread: expected an integer from 0 to 2"),
        (["iotest", "--dir", ".", "--layout", "striped"], "--layout: expected fpp or shared"),
        (["iotest", "--dir", ".", "--collective"], "--collective needs --api mpiio"),
        (["iotest", "--dir", ".", "--api", "mpiio", "--direct"], "--direct works with --api posix"),
        (["iotest", "--dir", ".", "--files", "3"], "--files is an option of mode metadata"),
        (["metadata", "--dir", ".", "--nr", "3"], "--nr is an option of mode iotest"),
        (["metadata", "--dir", ".", "--phases", "stat"], "'create' is required"),
        (["metadata", "--dir", ".", "--phases", "create,delete"], "unknown phase 'delete'"),
        (["iotest", "--dir", ".", "--scan-file", "/no/such/file"], "--scan-file /no/such/file"),
        (["iotest", "--dir", ".", "--existing", "/tmp"], "--existing needs --iread 1"),
        (["iotest", "--dir", ".", "--stonewall", "-1"], "--stonewall: expected seconds"),
        (["iotest", "--dir", ".", "--frobnicate"], "unknown option"),
        (
            ["iotest", "--dir", ".", "--output", "/no/such/dir/x.json"],
            "--output /no/such/dir/x.json",
        ),
    ],
)
def test_invalid_arguments(kernels, args, message):
    binary, _ = kernels["openmpi"]
    result = run([binary, *args])
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_direct_io_alignment_is_checked(kernels, tmp_path):
    result = mpirun(kernels["openmpi"], 1, ["iotest", "--dir", tmp_path, "--nr", "100", "--direct"])
    assert result.returncode == 2
    assert "multiple of 4096 bytes" in result.stderr
    out = tmp_path / "d.json"
    result = mpirun(
        kernels["openmpi"],
        2,
        ["iotest", "--dir", tmp_path, "--nr", "512", "--nc", "4", "--direct", "--output", out],
    )
    assert result.returncode == 0, result.stderr
    assert report_of(out)["cache_defeat"]["methods"] == ["direct"]


def test_cache_defeat_is_recorded(kernels, tmp_path):
    scan = tmp_path / "scanme"
    scan.write_bytes(b"x" * 4 * 2**20)
    out = tmp_path / "c.json"
    result = mpirun(
        kernels["openmpi"],
        2,
        [
            "iotest",
            "--dir",
            tmp_path,
            "--nr",
            "8192",
            "--nc",
            "4",
            "--fadvise",
            "--scan-file",
            scan,
            "--shift",
            "1",
            "--fsync",
            "outside",
            "--output",
            out,
        ],
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert report["cache_defeat"]["methods"] == ["fadvise", "scan-file", "shift"]
    assert report["cache_defeat"]["fsync"] == "outside"
    cache = report["repetitions"][0]["cache"]
    assert 0.0 <= cache["resident_fraction_after_drop"] <= 1.0 and cache["scan_s"] >= 0


def test_never_follows_a_symlink_out(kernels, tmp_path):
    """A symlink planted where the kernel writes is neither followed nor removed."""
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "precious"
    victim.write_text("keep me")
    w = tmp_path / "w.json"
    mpirun(
        kernels["openmpi"],
        1,
        [
            "iotest",
            "--dir",
            tmp_path,
            "--nr",
            "1024",
            "--nc",
            "1",
            "--iread",
            "0",
            "--keep",
            "--output",
            w,
        ],
    )
    rundir = report_of(w)["filesystem"]["run_dir"]
    os.remove(os.path.join(rundir, "iotest.0"))
    os.symlink(victim, os.path.join(rundir, "iotest.0"))
    # The manifest says one transfer was written; the read meets a symlink: refused.
    result = mpirun(
        kernels["openmpi"],
        1,
        [
            "iotest",
            "--nr",
            "1024",
            "--nc",
            "1",
            "--iread",
            "1",
            "--existing",
            rundir,
            "--output",
            w,
        ],
    )
    assert result.returncode == 7 and "Too many levels of symbolic links" in result.stderr
    assert victim.read_text() == "keep me"
    assert os.path.islink(os.path.join(rundir, "iotest.0"))


@pytest.mark.parametrize("build", ["openmpi", "mpich"])
@pytest.mark.parametrize("np", [1, 2, 4])
@pytest.mark.parametrize(
    "layout,api,extra",
    [IOTEST_ACCESS[0], IOTEST_ACCESS[3], IOTEST_ACCESS[4]],
    ids=["fpp-posix", "shared-mpiio", "shared-mpiio-coll"],
)
def test_iotest_under_srun(kernels, cluster, tmp_path, build, np, layout, api, extra):
    """Under srun across the two Slurm nodes; node names come from Slurm."""
    binary, mpi = kernels[build]
    out = tmp_path / "r.json"
    nodes = "1" if np == 1 else "2"
    result = run(
        [
            "srun",
            "-N",
            nodes,
            "-n",
            str(np),
            "--overcommit",
            binary,
            "iotest",
            "--dir",
            tmp_path,
            "--nr",
            "4096",
            "--nc",
            "4",
            "--layout",
            layout,
            "--api",
            api,
            *extra,
            "--shift",
            "auto",
            "--output",
            out,
        ],
        env=slurm_env(cluster, mpi),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert kernel_problems(report, expected_ranks=np, expected_nodes=int(nodes)) == []
    nodes_used = sorted({r["node"] for r in report["ranks"]})
    assert nodes_used == ["n1", "n2"] if np > 1 else nodes_used in (["n1"], ["n2"])
    if np > 1:
        assert report["cache_defeat"]["shift"] == np // 2, "auto shift reads the next node"


@pytest.mark.parametrize("build", ["openmpi", "mpich"])
@pytest.mark.parametrize("np", [1, 2, 4])
def test_metadata_under_srun(kernels, cluster, tmp_path, build, np):
    binary, mpi = kernels[build]
    out = tmp_path / "m.json"
    result = run(
        [
            "srun",
            "-N",
            "1" if np == 1 else "2",
            "-n",
            str(np),
            "--overcommit",
            binary,
            "metadata",
            "--dir",
            tmp_path,
            "--files",
            "100",
            "--removers",
            "2",
            "--output",
            out,
        ],
        env=slurm_env(cluster, mpi),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert kernel_problems(report_of(out), expected_ranks=np) == []


def test_wrong_pmi_is_caught_by_the_rank_check(kernels, cluster, tmp_path):
    """MPICH under srun --mpi=pmix runs N single-rank copies; sanity must see it."""
    binary, _ = kernels["mpich"]
    out = tmp_path / "wrong.json"
    env = slurm_env(cluster, "mpich")
    env["SLURM_MPI_TYPE"] = "none"
    run(
        [
            "srun",
            "-N",
            "1",
            "-n",
            "2",
            "--overcommit",
            binary,
            "iotest",
            "--dir",
            tmp_path,
            "--nr",
            "1024",
            "--nc",
            "1",
            "--output",
            out,
        ],
        env=env,
        timeout=120,
    )
    # Both single-rank copies write the report: either one report of 1 rank is left
    # (the other's overwritten) or both follow each other; either way it is named.
    try:
        problems = kernel_problems(report_of(out), expected_ranks=2)
    except ParseError as exc:
        problems = [str(exc)]
    assert any(
        "1 MPI ranks ran, 2 were launched" in p or "2 separate copies of the kernel ran" in p
        for p in problems
    ), problems


def test_file_system_that_refuses_direct_io(kernels, tmp_path):
    """ramfs has no O_DIRECT (tmpfs accepts it on Linux 6.18)."""
    mnt = tmp_path / "ram"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "ramfs", "ramfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a ramfs here (needs root)")
    try:
        out = tmp_path / "r.json"
        result = mpirun(
            kernels["openmpi"],
            1,
            ["iotest", "--dir", mnt, "--nr", "512", "--nc", "2", "--direct", "--output", out],
        )
        assert result.returncode == 8
        assert "refuses O_DIRECT" in result.stderr and "--fadvise" in result.stderr
        assert report_of(out)["exit_reason"] == "direct-io-refused"
        assert os.listdir(mnt) == []
    finally:
        subprocess.run(["umount", str(mnt)])
