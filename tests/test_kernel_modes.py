"""scratchbench-kernel's diskperf and jovian modes, the metadata path lookup, exact counts.

Everything runs for real: mpirun with Open MPI and MPICH, srun on the embedded 2-node
Slurm cluster, io_uring through liburing, and io_uring refused by a seccomp filter, the
way container runtimes refuse it.  Verification is on in every run.
"""

import ctypes
import json
import os
import platform
import re
import subprocess

import pytest

from conftest import REPO, mpirun, run, slurm_env
from reframe_checks.lib.parsers import kernel_problems, parse_kernel_json

KIB, MIB = 1024, 1024 * 1024


def report_of(path):
    return parse_kernel_json(path.read_text())


def dirs(tmp_path, n):
    made = []
    for i in range(n):
        d = tmp_path / f"disk{i}"
        d.mkdir()
        made.append(d)
    return made


def dir_args(paths):
    return [a for p in paths for a in ("--dir", p)]


def one_error_line(stderr):
    lines = [ln for ln in stderr.splitlines() if ln.startswith("scratchbench-kernel:")]
    assert len(lines) == 1, stderr
    return lines[0]


# ---- seccomp: refuse io_uring_setup as Docker's and Podman's default profiles do ----
IO_URING_SETUP = {"x86_64": 425, "aarch64": 425}
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}


def refuse_io_uring():
    """preexec_fn: install a seccomp filter that fails io_uring_setup with EPERM."""

    class SockFilter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_ushort),
            ("jt", ctypes.c_ubyte),
            ("jf", ctypes.c_ubyte),
            ("k", ctypes.c_uint32),
        ]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    machine = platform.machine()
    ld_abs, jeq, ret = 0x20, 0x15, 0x06
    allow, eperm = 0x7FFF0000, 0x00050000 | 1
    program = [
        SockFilter(ld_abs, 0, 0, 4),  # arch
        SockFilter(jeq, 0, 3, AUDIT_ARCH[machine]),
        SockFilter(ld_abs, 0, 0, 0),  # syscall number
        SockFilter(jeq, 0, 1, IO_URING_SETUP[machine]),
        SockFilter(ret, 0, 0, eperm),
        SockFilter(ret, 0, 0, allow),
    ]
    filters = (SockFilter * len(program))(*program)
    prog = SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        os._exit(97)
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        os._exit(98)


def mpirun_refused(build, np, args):
    binary, mpi = build
    from conftest import MPI

    env = dict(os.environ, **MPI[mpi]["env"])
    extra = ["--oversubscribe"] if mpi == "openmpi" else []
    return subprocess.run(
        [MPI[mpi]["run"], *extra, "-np", str(np), str(binary), *[str(a) for a in args]],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        preexec_fn=refuse_io_uring,
    )


@pytest.fixture(scope="module")
def seccomp_works():
    if platform.machine() not in IO_URING_SETUP:
        pytest.skip(f"no io_uring_setup number known for {platform.machine()}")
    probe = subprocess.run(["true"], preexec_fn=refuse_io_uring)
    if probe.returncode != 0:
        pytest.skip("cannot install a seccomp filter here")


# ---- diskperf ----
@pytest.mark.parametrize("build", ["openmpi", "asan", "mpich"])
@pytest.mark.parametrize("np", [1, 2])
@pytest.mark.parametrize("engine", ["io_uring", "aio"])
def test_diskperf_writes_and_reads_every_directory(kernels, tmp_path, build, np, engine):
    targets = dirs(tmp_path, 3)
    out = tmp_path / "d.json"
    result = mpirun(
        kernels[build],
        np,
        [
            "diskperf",
            *dir_args(targets),
            "--file-size",
            "1m",
            "--block-sizes",
            "4k,256k",
            "--queue-depths",
            "1,4",
            "--engine",
            engine,
            "--reps",
            "2",
            "--keep",
            "--output",
            out,
        ],
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert kernel_problems(report, expected_ranks=np) == []
    assert report["config"]["engine"] == engine and report["config"]["verify"] is True
    assert report["config"]["dirs"] == [str(t) for t in targets]
    assert report["config"]["file_size"] == MIB
    phases = report["repetitions"][1]["phases"]
    assert list(phases) == [
        f"{rw}_bs{bs}_qd{qd}" for bs in (4096, 262144) for qd in (1, 4) for rw in ("write", "read")
    ]
    for name, phase in phases.items():
        assert [d["dir"] for d in phase["per_dir"]] == [str(t) for t in targets]
        assert [d["bytes"] for d in phase["per_dir"]] == [np * MIB] * 3, name
        assert phase["bytes"] == 3 * np * MIB and phase["verify"]["bad_words"] == 0
        assert phase["ios"] == 3 * np * MIB // phase["block_size"]
        assert all(phase[f"dir{i}_bandwidth_Bps"] > 0 for i in range(3))
    assert report["summary"]["read_bs262144_qd4"]["bandwidth_Bps"]["n"] == 2
    # --keep: every directory holds one file per rank, of the file size.
    for t, target in enumerate(targets):
        run_dir = report["targets"][t]["run_dir"]
        assert run_dir.startswith(str(target) + "/sbk.diskperf.")
        assert sorted(os.listdir(run_dir)) == [f"diskperf.{r}" for r in range(np)]
        assert all(os.path.getsize(os.path.join(run_dir, f)) == MIB for f in os.listdir(run_dir))


@pytest.mark.parametrize("engine", ["io_uring", "aio"])
def test_diskperf_reaches_the_requested_depth_in_flight(kernels, tmp_path, engine):
    out = tmp_path / "q.json"
    result = mpirun(
        kernels["openmpi"],
        1,
        [
            "diskperf",
            *dir_args(dirs(tmp_path, 2)),
            "--file-size",
            "2m",
            "--block-sizes",
            "4k",
            "--queue-depths",
            "1,3,16,32",
            "--engine",
            engine,
            "--output",
            out,
        ],
    )
    assert result.returncode == 0, result.stderr
    phases = report_of(out)["repetitions"][0]["phases"]
    for name, phase in phases.items():
        assert phase["queue_depth_reached"] == phase["queue_depth"], name
        assert phase["per_rank"]["depth_max"] == [phase["queue_depth"]]
        # Little's law: the mean depth cannot exceed the depth kept in flight.
        assert 0 < phase["queue_depth_mean"] <= phase["queue_depth"] + 1e-6, name
    assert phases["read_bs4096_qd32"]["queue_depth_mean"] > 1.0


def test_io_uring_submits_a_refill_in_calls_of_the_benchmarks_size(kernels, tmp_path):
    """A refill of 32 requests goes out in system calls of up to 4 (one call merges a
    sequential refill into one device request), and diskperf_vs_fio.py has fio submit in
    calls of the same size: seen in the io_uring_enter calls (strace)."""
    script = (REPO / "ci" / "benchmarks" / "diskperf_vs_fio.py").read_text()
    call_max = int(re.search(r"^KERNEL_SUBMIT_CALL_MAX = (\d+)$", script, re.M).group(1))
    trace, out = tmp_path / "trace", tmp_path / "q.json"
    result = run(
        [
            "strace",
            "-f",
            "-qq",
            "-e",
            "trace=io_uring_enter",
            "-o",
            trace,
            kernels["openmpi"][0],
            "diskperf",
            "--dir",
            tmp_path,
            "--file-size",
            "4m",
            "--block-sizes",
            "4k",
            "--queue-depths",
            "32",
            "--engine",
            "io_uring",
            "--output",
            out,
        ]
    )
    assert result.returncode == 0, result.stderr
    submitted = [int(n) for n in re.findall(r"io_uring_enter\(\d+, (\d+),", trace.read_text())]
    assert max(submitted) == call_max, sorted(set(submitted))
    # the first fill of 32 goes out as 8 calls of 4 for each phase, not one request a call
    assert submitted.count(call_max) >= 2 * 32 // call_max, sorted(set(submitted))
    assert (
        report_of(out)["repetitions"][0]["phases"]["write_bs4096_qd32"]["queue_depth_reached"] == 32
    )


def test_diskperf_direct_io_and_memory_sized_files_fail_cleanly_when_full(kernels, tmp_path):
    """--file-size memory on an 8 MiB tmpfs: the size rule is recorded, the run ends with
    'no space' and the bytes that fitted, and nothing is left behind."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        out = tmp_path / "m.json"
        result = mpirun(
            kernels["openmpi"],
            2,
            [
                "diskperf",
                "--dir",
                mnt,
                "--file-size",
                "memory",
                "--block-sizes",
                "1m",
                "--queue-depths",
                "4",
                "--output",
                out,
            ],
        )
        assert result.returncode == 5, result.stderr
        report = report_of(out)
        config = report["config"]
        assert config["file_size_rule"] == "memory"
        assert config["file_size"] * 2 >= 1.1 * config["node_memory_bytes"] - 2 * MIB
        assert config["file_size"] % MIB == 0
        assert report["exit_reason"] == "no-space"
        assert 6 * MIB <= report["bytes_before_failure"] <= 8 * MIB
        assert "No space left on device" in one_error_line(result.stderr)
        assert os.listdir(mnt) == []
    finally:
        subprocess.run(["umount", str(mnt)])


def test_diskperf_preallocate_lays_every_file_out_before_its_writes(kernels, tmp_path):
    """--preallocate asks the file system for the whole file before the timed writes: a
    file larger than an 8 MiB tmpfs fails at once, no byte written; ramfs, which cannot
    fallocate, fails in one line naming the directory; without it the same run writes
    until the tmpfs is full."""
    tmpfs, ramfs = tmp_path / "tmpfs", tmp_path / "ramfs"
    tmpfs.mkdir()
    ramfs.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(tmpfs)]).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        assert subprocess.run(["mount", "-t", "ramfs", "ramfs", str(ramfs)]).returncode == 0
        common = ["diskperf", "--file-size", "16m", "--block-sizes", "1m", "--queue-depths", "4"]
        written = {}
        for flags in ([], ["--preallocate"]):
            out = tmp_path / f"t{len(flags)}.json"
            result = mpirun(
                kernels["openmpi"], 1, [*common, "--dir", tmpfs, *flags, "--output", out]
            )
            assert result.returncode == 5, result.stderr
            report = report_of(out)
            assert report["config"]["preallocate"] is bool(flags)
            assert report["exit_reason"] == "no-space"
            written[bool(flags)] = report["bytes_before_failure"]
            assert os.listdir(tmpfs) == []
        assert written[True] == 0 and written[False] >= 6 * MIB
        out = tmp_path / "r.json"
        result = mpirun(
            kernels["openmpi"], 1, [*common, "--dir", ramfs, "--preallocate", "--output", out]
        )
        assert result.returncode == 2, result.stderr
        line = one_error_line(result.stderr)
        assert f"--preallocate: the file system at {ramfs} (ramfs) cannot fallocate" in line
        assert os.listdir(ramfs) == []
    finally:
        subprocess.run(["umount", str(tmpfs)])
        subprocess.run(["umount", str(ramfs)])


def test_diskperf_a_missing_directory_among_several(kernels, tmp_path):
    good = dirs(tmp_path, 2)
    missing = tmp_path / "not-there"
    out = tmp_path / "e.json"
    result = mpirun(
        kernels["openmpi"],
        2,
        ["diskperf", "--dir", good[0], "--dir", missing, "--dir", good[1], "--output", out],
    )
    assert result.returncode == 3
    line = one_error_line(result.stderr)
    assert f"target directory {missing}: No such file or directory" in line
    assert report_of(out)["exit_reason"] == "missing-directory"
    assert os.listdir(good[0]) == [] and os.listdir(good[1]) == [], "run directories undone"


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--queue-depths", "0"],
            "--queue-depths: expected a comma list of integers from 1 to 4096, got '0'",
        ),
        (["--queue-depths", "4,,8"], "--queue-depths: expected a comma list of integers"),
        (["--block-sizes", "256"], "--block-sizes: expected a comma list of sizes from 512 B"),
        (["--block-sizes", "4k,1000"], "--block-sizes: 1000 B is not a multiple of 512 bytes"),
        (
            ["--block-sizes", "1536", "--file-size", "1m"],
            "--file-size 1 MiB is not a multiple of the block size 1536 B",
        ),
        (
            ["--file-size", "64k", "--block-sizes", "64k", "--queue-depths", "4"],
            "holds 2 blocks of 64 KiB over 2 directories, fewer than the queue depth 4",
        ),
        (["--file-size", "lots"], "--file-size: expected a size (such as 64m, 2g) or 'memory'"),
        (["--engine", "libaio"], "--engine: expected io_uring or aio, got 'libaio'"),
        (["--shift", "1"], "--shift is an option of modes iotest, metadata, not diskperf"),
        (["--nr", "4"], "--nr is an option of mode iotest, not diskperf"),
    ],
)
def test_diskperf_bad_arguments(kernels, tmp_path, args, message):
    binary, _ = kernels["openmpi"]
    result = run([binary, "diskperf", "--dir", tmp_path, "--dir", tmp_path / "b", *args])
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_a_directory_given_twice(kernels, tmp_path):
    result = mpirun(
        kernels["openmpi"], 1, ["diskperf", "--dir", tmp_path, "--dir", str(tmp_path) + "/."]
    )
    assert result.returncode == 2
    assert "is given twice" in one_error_line(result.stderr)


@pytest.mark.parametrize("mode", ["diskperf", "jovian"])
def test_io_uring_refused_by_seccomp(kernels, tmp_path, seccomp_works, mode):
    out = tmp_path / "r.json"
    sizes = (
        ["--file-size", "256k", "--block-sizes", "64k", "--queue-depths", "2"]
        if mode == "diskperf"
        else ["--data-per-client", "256k", "--placement", "local"]
    )
    result = mpirun_refused(
        kernels["openmpi"], 2, [mode, "--dir", tmp_path, *sizes, "--output", out]
    )
    assert result.returncode == 9, result.stderr
    line = one_error_line(result.stderr)
    assert "io_uring is refused here (io_uring_setup: Operation not permitted" in line
    assert "--engine aio" in line
    report = report_of(out)
    assert report["exit_reason"] == "io-uring-refused" and report["complete"] is False
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
    # The fallback the message names works under the same filter.
    result = mpirun_refused(
        kernels["openmpi"], 2, [mode, "--dir", tmp_path, *sizes, "--engine", "aio", "--output", out]
    )
    assert result.returncode == 0, result.stderr
    assert report_of(out)["config"]["engine"] == "aio"


def test_diskperf_under_srun_on_two_nodes(kernels, cluster, tmp_path):
    binary, mpi = kernels["openmpi"]
    out = tmp_path / "s.json"
    targets = dirs(tmp_path, 2)
    result = run(
        [
            "srun",
            "-N",
            "2",
            "-n",
            "2",
            "--overcommit",
            binary,
            "diskperf",
            *dir_args(targets),
            "--file-size",
            "512k",
            "--block-sizes",
            "64k",
            "--queue-depths",
            "8",
            "--output",
            out,
        ],
        env=slurm_env(cluster, mpi),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert kernel_problems(report, expected_ranks=2, expected_nodes=2) == []
    phase = report["repetitions"][0]["phases"]["read_bs65536_qd8"]
    assert phase["queue_depth_reached"] == 8
    assert [d["bytes"] for d in phase["per_dir"]] == [2 * 512 * KIB] * 2


# ---- jovian ----
def check_placements(report, np):
    nodes = {r["rank"]: r["node"] for r in report["ranks"]}
    per_client = report["config"]["bytes_per_client"]
    phases = report["repetitions"][0]["phases"]
    assert list(phases) == [
        "write_local",
        "read_local",
        "write_one_to_many",
        "read_one_to_many",
        "write_many_to_many",
        "read_many_to_many",
    ]
    for name, phase in phases.items():
        assert phase["verify"]["bad_words"] == 0, name
    local = phases["read_local"]["sources"]
    assert [(s["rank"], s["owners"]) for s in local] == [(r, [r]) for r in range(np)]
    servers = sorted(r for r in range(np) if nodes[r] != nodes[0])
    one = phases["read_one_to_many"]
    assert one["readers"] == 1 and one["bytes"] == per_client
    assert one["sources"] == [
        {
            "rank": 0,
            "node": nodes[0],
            "owners": servers,
            "owner_nodes": [nodes[s] for s in servers],
            "bytes": per_client,
        }
    ]
    assert phases["write_one_to_many"]["writers"] == len(servers)
    assert phases["write_one_to_many"]["bytes"] == per_client
    many = phases["read_many_to_many"]["sources"]
    assert len(many) == np and many[0]["owners"] != [0]
    for s in many:
        assert s["owner_nodes"][0] != s["node"], "many-to-many reads another node's data"
        assert s["bytes"] == per_client
    assert sorted(s["owners"][0] for s in many) == list(range(np)), "every rank's data is read"


@pytest.mark.parametrize("build", ["openmpi", "mpich"])
@pytest.mark.parametrize("np", [2, 4])
def test_jovian_under_srun_reads_the_right_ranks_data(kernels, cluster, tmp_path, build, np):
    """Two Slurm nodes: placement by node name; verification proves whose data was read
    (the pattern carries the owner's rank and directory)."""
    binary, mpi = kernels[build]
    out = tmp_path / "j.json"
    scan = tmp_path / "scan"
    scan.write_bytes(b"s" * MIB)
    result = run(
        [
            "srun",
            "-N",
            "2",
            "-n",
            str(np),
            "--overcommit",
            binary,
            "jovian",
            *dir_args(dirs(tmp_path, 2)),
            "--stripe-size",
            "16k",
            "--data-per-client",
            "1m",
            "--inflight",
            "2",
            "--scan-file",
            scan,
            "--output",
            out,
        ],
        env=slurm_env(cluster, mpi),
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert kernel_problems(report, expected_ranks=np, expected_nodes=2) == []
    assert report["config"]["request_size"] == 32 * KIB
    assert report["cache_defeat"]["methods"] == ["scan-file"]
    assert report["repetitions"][0]["cache"]["scan_s"] >= 0
    check_placements(report, np)


def test_jovian_under_mpirun_with_node_names_from_slurm_variables(kernels, tmp_path):
    """mpirun on one host, node names set per rank: placement follows the names."""
    binary, mpi = kernels["mpich"]
    wrapper = tmp_path / "node.sh"
    wrapper.write_text('#!/bin/sh\nexport SLURMD_NODENAME=node$(( ${PMI_RANK} % 2 ))\nexec "$@"\n')
    wrapper.chmod(0o755)
    out = tmp_path / "j.json"
    result = run(
        [
            "mpirun.mpich",
            "-np",
            "4",
            wrapper,
            binary,
            "jovian",
            *dir_args(dirs(tmp_path, 3)),
            "--stripe-size",
            "4k",
            "--data-per-client",
            "96k",
            "--output",
            out,
        ],
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert report["mpi"]["nnodes"] == 2
    check_placements(report, 4)
    # Ranks 0 and 2 share node0: one-to-many's servers are ranks 1 and 3.
    assert report["repetitions"][0]["phases"]["read_one_to_many"]["sources"][0]["owners"] == [1, 3]


def test_jovian_needs_two_nodes_for_remote_placements(kernels, tmp_path):
    result = mpirun(
        kernels["openmpi"], 2, ["jovian", "--dir", tmp_path, "--data-per-client", "256k"]
    )
    assert result.returncode == 2
    assert "--placement one-to-many needs ranks on at least 2 nodes" in one_error_line(
        result.stderr
    )
    out = tmp_path / "l.json"
    result = mpirun(
        kernels["openmpi"],
        2,
        [
            "jovian",
            "--dir",
            tmp_path,
            "--data-per-client",
            "256k",
            "--placement",
            "local",
            "--output",
            out,
        ],
    )
    assert result.returncode == 0, result.stderr
    assert list(report_of(out)["repetitions"][0]["phases"]) == ["write_local", "read_local"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--placement", "far"], "--placement: unknown placement 'far'"),
        (["--stripe-size", "100"], "--stripe-size: expected a size from 512 B"),
        (["--stripe-size", "1200"], "--stripe-size 1200 B is not a multiple of 512 bytes"),
        (
            ["--data-per-client", "64k", "--stripe-size", "64k"],
            "--data-per-client is smaller than one request (stripe 64 KiB x 2 directories = 128 KiB)",
        ),
        (["--inflight", "0"], "--inflight: expected an integer from 1 to 1024, got '0'"),
    ],
)
def test_jovian_bad_arguments(kernels, tmp_path, args, message):
    binary, _ = kernels["openmpi"]
    result = run([binary, "jovian", "--dir", tmp_path, "--dir", tmp_path / "b", *args])
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


# ---- node-local directories ----
def test_node_local_directories_get_a_run_directory_per_node(kernels, tmp_path):
    """Rank 1 plays a node whose disk at the same path is its own (a private tmpfs in a
    mount namespace): it makes and removes its own run directory there."""
    binary, mpi = kernels["openmpi"]
    local = tmp_path / "localscratch"
    local.mkdir()
    wrapper = tmp_path / "node.sh"
    wrapper.write_text(f"""#!/bin/sh
R=$OMPI_COMM_WORLD_RANK
export SLURMD_NODENAME=n$R
if [ "$R" != 0 ]; then
    exec unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs {local} && exec "$@"' sh "$@"
fi
exec "$@"
""")
    wrapper.chmod(0o755)
    if run(["unshare", "-m", "true"]).returncode != 0:
        pytest.skip("cannot make a mount namespace here (needs root)")
    out = tmp_path / "n.json"
    result = mpirun(
        (wrapper, mpi),
        2,
        [
            binary,
            "diskperf",
            "--dir",
            local,
            "--file-size",
            "256k",
            "--block-sizes",
            "64k",
            "--queue-depths",
            "2",
            "--output",
            out,
        ],
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert report["targets"][0]["shared"] is False
    assert report["repetitions"][0]["phases"]["read_bs65536_qd2"]["verify"]["bad_words"] == 0
    assert os.listdir(local) == []
    result = mpirun(
        (wrapper, mpi),
        2,
        [
            binary,
            "jovian",
            "--dir",
            local,
            "--data-per-client",
            "256k",
            "--placement",
            "many-to-many",
        ],
    )
    assert result.returncode == 2
    assert "is not shared between nodes" in one_error_line(result.stderr)


# ---- metadata: path lookup ----
@pytest.mark.parametrize(
    "lookup,depth,layout",
    [("path", 2, []), ("path", 5, ["--dir-per-rank"]), ("handle", 2, []), ("path", 0, [])],
)
def test_metadata_lookups_and_depths(kernels, tmp_path, lookup, depth, layout):
    out = tmp_path / "m.json"
    result = mpirun(
        kernels["openmpi"],
        2,
        [
            "metadata",
            "--dir",
            tmp_path,
            "--files",
            "30",
            "--lookup",
            lookup,
            "--path-depth",
            str(depth),
            *layout,
            "--output",
            out,
        ],
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    config = report["config"]
    assert config["lookup"] == lookup and config["path_depth"] == depth
    example = config["example_path"]
    run_dir = report["filesystem"]["run_dir"]
    assert example.startswith(run_dir + "/") and example.endswith("/f.0.0")
    assert example[len(run_dir) + 1 :].count("/") == depth
    assert config["path_components"] == example.count("/")
    for phase in report["repetitions"][0]["phases"].values():
        assert phase["items"] == 60
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_metadata_makes_fresh_directories_for_each_repetition(kernels, tmp_path):
    """A directory that held the repetition before's files has grown, and creations in
    it run faster than in a job's new directory: each repetition gets its own, seen
    in the system calls (strace), and nothing is left after."""
    trace, out = tmp_path / "trace", tmp_path / "m.json"
    result = run(
        [
            "strace",
            "-f",
            "-qq",
            "-e",
            "trace=mkdirat",
            "-o",
            trace,
            kernels["openmpi"][0],
            "metadata",
            "--dir",
            tmp_path,
            "--files",
            "20",
            "--reps",
            "3",
            "--dir-per-rank",
            "--output",
            out,
        ]
    )
    assert result.returncode == 0, result.stderr
    made = re.findall(r'mkdirat\(\d+, "([^"]+)", 0755\)\s+= 0', trace.read_text())
    assert made == ["p1", "p1/d.0"] * 3, trace.read_text()[-3000:]
    assert [len(r["phases"]) for r in report_of(out)["repetitions"]] == [4, 4, 4]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "trace"]


def test_metadata_default_is_full_paths(kernels, tmp_path):
    out = tmp_path / "m.json"
    result = mpirun(
        kernels["openmpi"], 1, ["metadata", "--dir", tmp_path, "--files", "5", "--output", out]
    )
    assert result.returncode == 0, result.stderr
    config = report_of(out)["config"]
    assert (config["lookup"], config["path_depth"]) == ("path", 2)


def test_metadata_shift_visits_the_neighbours_files(kernels, tmp_path):
    """--shift 1: open and stat go to rank r+1's files, as mdtest -N 1 does."""
    out = tmp_path / "m.json"
    result = mpirun(
        kernels["openmpi"],
        2,
        [
            "metadata",
            "--dir",
            tmp_path,
            "--files",
            "40",
            "--dir-per-rank",
            "--shift",
            "1",
            "--output",
            out,
        ],
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert report["cache_defeat"]["shift"] == 1
    assert report["repetitions"][0]["phases"]["stat"]["items"] == 80


def test_metadata_path_errors_name_the_full_path(kernels, tmp_path):
    result = run(
        [
            kernels["openmpi"][0],
            "metadata",
            "--dir",
            tmp_path,
            "--dir-per-rank",
            "--path-depth",
            "0",
        ]
    )
    assert result.returncode == 2
    assert "--path-depth 0 leaves no room for --dir-per-rank" in one_error_line(result.stderr)


# ---- exact integers ----
def test_counts_are_exact_integers(kernels):
    """1 GiB + 1 MiB written: the byte count is an exact integer in the JSON text (the
    old %.9g printed 1074790400 as 1.0747904e+09)."""
    shm = "/dev/shm"
    out = os.path.join(shm, "sbk-exact.json")
    try:
        result = mpirun(
            kernels["openmpi"],
            1,
            [
                "iotest",
                "--dir",
                shm,
                "--nr",
                "131072",
                "--nc",
                "1025",
                "--iread",
                "0",
                "--fsync",
                "none",
                "--output",
                out,
            ],
        )
        assert result.returncode == 0, result.stderr
        text = open(out).read()
        assert '"bytes": 1074790400,' in text
        assert '"bytes": [1074790400]' in text
        assert '"bytes_per_rank": 1074790400' in text
        assert json.loads(text)["repetitions"][0]["phases"]["write"]["xfers"] == 1025
    finally:
        if os.path.exists(out):
            os.remove(out)
