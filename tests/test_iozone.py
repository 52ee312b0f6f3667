"""scratchbench-kernel's iozone mode (seed 004), its check library and its matrix.

Everything runs for real: mpirun with Open MPI and MPICH (and the ASan/UBSan build), srun
on the embedded 2-node Slurm cluster.  The access order of every pattern is proven from
the requests the kernel logs with --record-offsets; verification is on in every run, and
a file damaged between the write and the read (while the kernel reads a FIFO as its
--scan-file, so the damage lands exactly there) fails the run.
"""

import os
import subprocess
import threading
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import MPI, mpirun, run, slurm_env
from reframe_checks.lib.iozone import (
    cache_marks,
    figure_name,
    headline_points,
    matrix_problems,
    phase_name,
)
from reframe_checks.lib.parsers import kernel_problems, parse_kernel_json

KIB, MIB = 1024, 1024 * 1024
ALL = "write,rewrite,read,reread,random-read,random-write,backward-read,record-rewrite,stride-read"


def report_of(path):
    return parse_kernel_json(Path(path).read_text())


def requests(prefix, rank=0):
    """{phase: [(op, offset, length, timed)]} from the log of one rank (repetition 0)."""
    out = defaultdict(list)
    for line in Path(f"{prefix}.{rank}").read_text().splitlines():
        rep, phase, op, offset, length, timed = line.split()
        if rep == "0":
            out[phase].append((op, int(offset), int(length), timed == "1"))
    return out


def one_error_line(stderr):
    lines = [ln for ln in stderr.splitlines() if ln.startswith("scratchbench-kernel:")]
    assert len(lines) == 1, stderr
    return lines[0]


def iozone(kernels, build, np, tmp_path, *args, name="r.json"):
    out = tmp_path / name
    result = mpirun(kernels[build], np, ["iozone", "--dir", tmp_path, *args, "--output", out])
    return result, out


# ---- access orders ----------------------------------------------------------------------
@pytest.mark.parametrize("build", ["openmpi", "asan", "mpich"])
def test_every_pattern_issues_iozones_access_order(kernels, tmp_path, build):
    """64 records of 4 KiB: sequential patterns ascend, backward read descends, random
    read and write visit every record once out of order, record re-write rewrites offset
    0 once per record, and stride read (17 records apart) wraps to the next start so
    every record is read once."""
    log = tmp_path / "offsets"
    result, out = iozone(
        kernels,
        build,
        1,
        tmp_path,
        "--file-sizes",
        "256k",
        "--record-sizes",
        "4k",
        "--patterns",
        ALL,
        "--record-offsets",
        log,
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert kernel_problems(report, expected_ranks=1) == []
    n, record = 64, 4 * KIB
    every = [k * record for k in range(n)]
    got = requests(log)
    assert list(got) == [
        phase_name(p, 256 * KIB, record)
        for p in (
            "write",
            "rewrite",
            "read",
            "reread",
            "random_read",
            "random_write",
            "backward_read",
            "record_rewrite",
            "stride_read",
        )
    ]

    def offsets(pattern, op):
        reqs = got[phase_name(pattern, 256 * KIB, record)]
        assert {(o, length, timed) for o, _, length, timed in reqs} == {(op, record, True)}
        return [offset for _, offset, _, _ in reqs]

    for pattern in ("write", "rewrite"):
        assert offsets(pattern, "w") == every
    for pattern in ("read", "reread"):
        assert offsets(pattern, "r") == every
    for pattern, op in (("random_read", "r"), ("random_write", "w")):
        order = offsets(pattern, op)
        assert sorted(order) == every, f"{pattern}: every record exactly once"
        assert order != every and order != every[::-1], f"{pattern}: shuffled"
    backward = offsets("backward_read", "r")
    assert backward == every[::-1], "backward read starts at the last record and descends"
    assert offsets("record_rewrite", "w") == [0] * n, "one offset, once per record"
    stride = offsets("stride_read", "r")
    assert sorted(stride) == every, "stride read covers every record exactly once"
    assert stride[:4] == [0, 17 * record, 34 * record, 51 * record]
    assert stride[4:8] == [record, 18 * record, 35 * record, 52 * record], "wraps to start 1"
    # within a column each read is 17 records past the one before
    steps = [b - a for a, b in zip(stride, stride[1:]) if b > a]
    assert set(steps) == {17 * record}
    phases = report["repetitions"][0]["phases"]
    for name, phase in phases.items():
        assert phase["bytes_all"] == 256 * KIB and phase["xfers"] == n, name
        assert phase["verify"]["bad_words"] == 0, name
        assert phase["records_per_rank"] == n and phase["throughput_Bps"] > 0
    assert report["config"]["verify"] is True
    assert report["summary"]["verify_bad_words"] == 0


def test_stride_and_random_orders_follow_their_options(kernels, tmp_path):
    """--stride 5 over 16 records: columns 0,5,10,15 / 1,6,11 / 2,7,12 / 3,8,13 / 4,9,14;
    another
    --seed gives another shuffle, the same seed the same one in every repetition."""
    logs = {}
    for seed in ("1", "2"):
        logs[seed] = tmp_path / f"o{seed}"
        result, _ = iozone(
            kernels,
            "openmpi",
            1,
            tmp_path,
            "--file-sizes",
            "64k",
            "--record-sizes",
            "4k",
            "--patterns",
            "write,random-read,stride-read",
            "--stride",
            "5",
            "--seed",
            seed,
            "--reps",
            "2",
            "--record-offsets",
            logs[seed],
            name=f"r{seed}.json",
        )
        assert result.returncode == 0, result.stderr
    stride = [
        o // (4 * KIB)
        for _, o, _, _ in requests(logs["1"])[phase_name("stride_read", 64 * KIB, 4 * KIB)]
    ]
    assert stride == [0, 5, 10, 15, 1, 6, 11, 2, 7, 12, 3, 8, 13, 4, 9, 14]
    phase = phase_name("random_read", 64 * KIB, 4 * KIB)
    by_rep = defaultdict(list)
    for line in Path(f"{logs['1']}.0").read_text().splitlines():
        rep, name, _, offset, _, _ = line.split()
        if name == phase:
            by_rep[rep].append(int(offset))
    assert by_rep["0"] == by_rep["1"], "the same order in every repetition (IOzone's seed)"
    assert [o for _, o, _, _ in requests(logs["2"])[phase]] != by_rep["0"]


@pytest.mark.parametrize("build", ["openmpi", "mpich"])
def test_random_mix_splits_ranks_into_readers_and_writers(kernels, tmp_path, build):
    """Throughput mode, 4 ranks, 25% readers: rank 0 reads its file at random, ranks 1-3
    write theirs, each every record once; the stonewall is said in the JSON."""
    log = tmp_path / "offsets"
    result, out = iozone(
        kernels,
        build,
        4,
        tmp_path,
        "--file-sizes",
        "128k",
        "--record-sizes",
        "8k",
        "--patterns",
        "write,random-mix",
        "--mix-read-percent",
        "25",
        "--record-offsets",
        log,
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert kernel_problems(report, expected_ranks=4) == []
    config = report["config"]
    assert config["throughput_mode"] is True and config["stonewall"] == "first-finisher"
    assert (config["mix_readers"], config["mix_writers"]) == (1, 3)
    name = phase_name("random_mix", 128 * KIB, 8 * KIB)
    for rank in range(4):
        reqs = requests(log, rank)[name]
        assert {op for op, _, _, _ in reqs} == {"r" if rank == 0 else "w"}
        assert sorted(o for _, o, _, _ in reqs) == [k * 8 * KIB for k in range(16)]
    phase = report["repetitions"][0]["phases"][name]
    assert (phase["readers"], phase["writers"]) == (1, 3)
    assert phase["per_rank"]["reader"] == [1, 0, 0, 0]
    assert phase["bytes_all"] == 4 * 128 * KIB and phase["verify"]["bad_words"] == 0
    assert phase["read_throughput_Bps"] > 0 and phase["write_throughput_Bps"] > 0
    assert "stonewall_hit_ranks" in phase


def test_random_mix_needs_two_ranks(kernels, tmp_path):
    result, out = iozone(
        kernels,
        "openmpi",
        1,
        tmp_path,
        "--file-sizes",
        "64k",
        "--record-sizes",
        "4k",
        "--patterns",
        "write,random-mix",
    )
    assert result.returncode == 2
    assert "random-mix needs 2 ranks or more" in one_error_line(result.stderr)
    # Not asked for by name: left out with one rank, and the JSON says why.
    result, out = iozone(
        kernels,
        "openmpi",
        1,
        tmp_path,
        "--file-sizes",
        "64k",
        "--record-sizes",
        "4k",
        name="all.json",
    )
    assert result.returncode == 0, result.stderr
    config = report_of(out)["config"]
    assert "random-mix" not in config["patterns"]
    assert config["patterns_not_run"] == [
        {"pattern": "random-mix", "reason": "needs 2 ranks or more (IOzone's throughput mode)"}
    ]
    assert config["throughput_mode"] is False and config["stonewall"] == "none"


def test_throughput_mode_stonewalls_at_the_first_finisher(kernels, tmp_path):
    """Two ranks: a rank stopped by the first finisher takes its figures there and
    finishes its pass untimed, so every rank still covers its whole file.  The logs,
    the per-rank counts and stonewall_hit_ranks agree phase by phase; with
    --no-stonewall every request is timed."""
    log = tmp_path / "offsets"
    result, out = iozone(
        kernels,
        "openmpi",
        2,
        tmp_path,
        "--file-sizes",
        "4m:16m",
        "--record-sizes",
        "4k",
        "--patterns",
        ALL,
        "--record-offsets",
        log,
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert kernel_problems(report, expected_ranks=2) == []
    logs = [requests(log, rank) for rank in range(2)]
    stopped_somewhere = 0
    for name, phase in report["repetitions"][0]["phases"].items():
        untimed = [any(not timed for *_, timed in logs[r][name]) for r in range(2)]
        assert phase["stonewall_hit_ranks"] == sum(untimed), name
        assert sum(untimed) <= 1, f"{name}: the first finisher is never stopped"
        for r in range(2):
            reqs = logs[r][name]
            assert len(reqs) == phase["records_per_rank"], "every rank finishes its pass"
            timed = [x for x in reqs if x[3]]
            assert reqs[: len(timed)] == timed, "untimed requests come after the stonewall"
            assert phase["per_rank"]["xfers"][r] == len(timed)
            assert phase["per_rank"]["bytes"][r] == len(timed) * 4 * KIB
            assert phase["per_rank"]["bytes_all"][r] == phase["file_size"]
        assert phase["min_bytes_rank"] == min(phase["per_rank"]["bytes"])
        stopped_somewhere += sum(untimed)
    # 18 phases of 1,024 and 4,096 records on two ranks: they never all end together
    assert stopped_somewhere > 0, "no rank was ever stopped by the first finisher"

    result, out = iozone(
        kernels,
        "openmpi",
        2,
        tmp_path,
        "--file-sizes",
        "1m",
        "--record-sizes",
        "4k",
        "--no-stonewall",
        name="off.json",
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert report["config"]["stonewall"] == "off"
    for name, phase in report["repetitions"][0]["phases"].items():
        assert phase["bytes"] == phase["bytes_all"] == 2 * MIB, name


# ---- the matrix -----------------------------------------------------------------------------
def test_matrix_skips_small_records_of_large_files_unless_asked(kernels, tmp_path):
    """IOzone -a: records below 64 KiB are skipped for files over 16 MiB; records larger
    than a file are skipped; --all-records keeps the small ones (IOzone -z)."""
    result, out = iozone(
        kernels,
        "openmpi",
        1,
        tmp_path,
        "--file-sizes",
        "8k:32m",
        "--record-sizes",
        "16k:64k",
        "--patterns",
        "write",
    )
    assert result.returncode == 0, result.stderr
    config = report_of(out)["config"]
    assert config["file_sizes"] == [8 * KIB << k for k in range(13)]
    assert config["record_sizes"] == [16 * KIB, 32 * KIB, 64 * KIB]
    assert config["skip_small_records"] is True
    points = [(p["file_size"], p["record_size"]) for p in config["matrix"]["points"]]
    skipped = {(p["file_size"], p["record_size"]): p["reason"] for p in config["matrix"]["skipped"]}
    assert (16 * MIB, 16 * KIB) in points, "16 MiB files keep small records"
    assert (32 * MIB, 16 * KIB) not in points and (32 * MIB, 64 * KIB) in points
    assert skipped[(32 * MIB, 16 * KIB)].startswith("IOzone skips records below 64 KiB")
    assert skipped[(32 * MIB, 32 * KIB)].startswith("IOzone skips records below 64 KiB")
    assert skipped[(8 * KIB, 16 * KIB)] == "record larger than the file"
    assert (16 * KIB, 16 * KIB) in points and (16 * KIB, 32 * KIB) not in points
    # records larger than the file: 3 at 8 KiB, 2 at 16 KiB, 1 at 32 KiB; small: 2 at 32 MiB
    assert config["matrix"]["npoints"] == len(points) == 3 * 13 - 6 - 2
    phases = report_of(out)["repetitions"][0]["phases"]
    assert list(phases) == [phase_name("write", f, r) for f, r in points]

    result, out = iozone(
        kernels,
        "openmpi",
        1,
        tmp_path,
        "--file-sizes",
        "32m",
        "--record-sizes",
        "16k:64k",
        "--patterns",
        "write",
        "--all-records",
        name="z.json",
    )
    assert result.returncode == 0, result.stderr
    config = report_of(out)["config"]
    assert config["skip_small_records"] is False and config["matrix"]["skipped"] == []
    assert [p["record_size"] for p in config["matrix"]["points"]] == [16 * KIB, 32 * KIB, 64 * KIB]


def node_memory():
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture
def small_fs(tmp_path):
    """An 8 MiB tmpfs: a real file system too small for files past memory."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    assert run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mount]).returncode == 0
    yield mount
    run(["umount", mount])


def test_file_sizes_past_memory_on_request(kernels, small_fs, tmp_path):
    """'memory' doubles up to the first file size past the node's memory (per file of
    each rank on the node); a target without room for those files stops before writing
    anything, saying what it needed (exit 5)."""
    out = tmp_path / "m.json"
    result = mpirun(
        kernels["openmpi"],
        2,
        [
            "iozone",
            "--dir",
            small_fs,
            "--file-sizes",
            "1m:memory",
            "--record-sizes",
            "1m",
            "--output",
            out,
        ],
    )
    assert result.returncode == 5, result.stderr
    report = report_of(out)
    config = report["config"]
    largest = config["file_sizes"][-1]
    assert config["file_size_rule"] == "memory"
    assert config["node_memory_bytes"] == node_memory()
    assert largest * 2 > node_memory() >= largest, "the first size whose 2 files pass memory"
    assert config["file_sizes"][0] == MIB and len(config["file_sizes"]) == largest.bit_length() - 20
    assert "the largest files need" in report["errors"][0]["message"]
    assert report["bytes_before_failure"] == 0
    assert [p.name for p in small_fs.iterdir()] == [], "nothing left on the target"


# ---- verification and bad input ---------------------------------------------------------
def test_a_file_damaged_between_write_and_read_fails_verification(kernels, tmp_path):
    """The kernel reads a FIFO as its --scan-file before the first read: while it waits
    there the test damages one record of the written file, and the read must say which
    byte (exit 6)."""
    fifo = tmp_path / "flush"
    os.mkfifo(fifo)
    target = tmp_path / "target"
    target.mkdir()
    out = tmp_path / "v.json"
    binary, mpi = kernels["openmpi"]
    env = dict(os.environ, **MPI[mpi]["env"])
    proc = subprocess.Popen(
        [
            MPI[mpi]["run"],
            "-np",
            "1",
            str(binary),
            "iozone",
            "--dir",
            str(target),
            "--file-sizes",
            "64k",
            "--record-sizes",
            "8k",
            "--patterns",
            "write,read",
            "--scan-file",
            str(fifo),
            "--output",
            str(out),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Opening the FIFO for writing blocks until the kernel opens it: after the write.
        opened = {}
        opener = threading.Thread(target=lambda: opened.setdefault("f", open(fifo, "wb")))
        opener.start()
        opener.join(timeout=120)
        assert "f" in opened, "the kernel never reached its cache defeat"
        (written,) = list(target.glob("sbk.iozone.*/iozone.0"))
        assert written.stat().st_size == 64 * KIB
        with open(written, "r+b") as f:
            f.seek(5 * 8 * KIB + 24)
            f.write(b"\x00" * 16)
        opened["f"].close()
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 6, stderr
    report = report_of(out)
    phase = report["repetitions"][0]["phases"][phase_name("read", 64 * KIB, 8 * KIB)]
    assert phase["verify"]["bad_words"] == 2
    assert phase["verify"]["first_bad_byte"] == [{"rank": 0, "byte": 5 * 8 * KIB + 24}]
    assert report["exit_reason"] == "verification-failed"
    assert report["cache_defeat"]["methods"] == ["scan-file"]


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--file-sizes", "64k", "--record-sizes", "128k"],
            "--record-sizes: the smallest record, 128 KiB, is larger than the largest file, 64 KiB: "
            "no point of the matrix is left",
        ),
        (
            ["--record-sizes", "48k"],
            "--record-sizes: 48 KiB is not a power of two: the matrix doubles from the smallest size, "
            "as IOzone -a does",
        ),
        (
            ["--file-sizes", "100k:1m"],
            "--file-sizes: 100 KiB is not a power of two: the matrix doubles from the smallest size, "
            "as IOzone -a does",
        ),
        (
            ["--file-sizes", "1m:64k"],
            "--file-sizes: the largest size 64 KiB is below the smallest 1 MiB",
        ),
        (
            ["--file-sizes", "64m", "--record-sizes", "4k:32k"],
            "--record-sizes: every record is below 64 KiB and every file over 16 MiB, which IOzone "
            "skips: no point of the matrix is left (--all-records keeps them)",
        ),
        (["--record-sizes", "4k:memory"], "--record-sizes: 'memory' applies to --file-sizes only"),
        (
            ["--patterns", "read,reread"],
            "--patterns: write must be among them: it makes the file the other patterns use "
            "(IOzone's -i 0)",
        ),
        (["--patterns", "write,backwards"], "--patterns: unknown pattern 'backwards'"),
        (["--stride", "0"], "--stride: expected an integer from 1 to 1073741824, got '0'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(kernels, tmp_path, args, message):
    result, out = iozone(kernels, "openmpi", 1, tmp_path, *args)
    assert result.returncode == 2, result.stderr
    assert one_error_line(result.stderr).startswith(f"scratchbench-kernel: error: {message}")
    assert not out.exists() and not list(tmp_path.glob("sbk.*")), "nothing written"


def test_direct_io_needs_aligned_records(kernels, tmp_path):
    result, out = iozone(
        kernels,
        "openmpi",
        1,
        tmp_path,
        "--file-sizes",
        "64k",
        "--record-sizes",
        "512:4k",
        "--direct",
    )
    assert result.returncode == 2
    assert "--direct needs record sizes that are multiples of" in one_error_line(result.stderr)
    result, out = iozone(
        kernels,
        "openmpi",
        1,
        tmp_path,
        "--file-sizes",
        "64k",
        "--record-sizes",
        "4k",
        "--direct",
        "--fadvise",
        name="d.json",
    )
    assert result.returncode == 0, result.stderr
    assert report_of(out)["cache_defeat"]["methods"] == ["direct", "fadvise"]


def test_fsync_and_close_in_the_timed_region(kernels, tmp_path):
    """--fsync inside is IOzone -e, --close-inside IOzone -c: the JSON says which; the
    fsync of each write pass is measured either way."""
    for fsync, close in (("inside", True), ("outside", False), ("none", False)):
        args = [
            "--file-sizes",
            "256k",
            "--record-sizes",
            "64k",
            "--patterns",
            "write,read",
            "--fsync",
            fsync,
        ] + (["--close-inside"] if close else [])
        result, out = iozone(kernels, "openmpi", 1, tmp_path, *args, name=f"{fsync}.json")
        assert result.returncode == 0, result.stderr
        report = report_of(out)
        assert report["config"]["fsync_timed"] is (fsync == "inside")
        assert report["config"]["close_timed"] is close
        assert report["cache_defeat"]["fsync"] == fsync
        write = report["repetitions"][0]["phases"][phase_name("write", 256 * KIB, 64 * KIB)]
        assert (write["per_rank"]["fsync"][0] > 0) is (fsync != "none")


# ---- srun on the embedded cluster -------------------------------------------------------------
@pytest.mark.parametrize("build", ["openmpi", "mpich"])
@pytest.mark.parametrize("nodes, np", [(1, 1), (2, 2)])
def test_iozone_under_srun(kernels, cluster, tmp_path, build, nodes, np):
    """One rank (IOzone -a) and two ranks on two Slurm nodes (throughput mode, the stop
    of the first finisher crossing nodes), with the check's own sanity."""
    binary, mpi = kernels[build]
    out = tmp_path / "s.json"
    result = run(
        [
            "srun",
            "-N",
            str(nodes),
            "-n",
            str(np),
            "--overcommit",
            binary,
            "iozone",
            "--dir",
            tmp_path,
            "--file-sizes",
            "64k:1m",
            "--record-sizes",
            "4k:64k",
            "--fsync",
            "outside",
            "--reps",
            "2",
            "--output",
            out,
        ],
        env=slurm_env(cluster, mpi),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = report_of(out)
    assert kernel_problems(report, expected_ranks=np, expected_nodes=nodes) == []
    config = report["config"]
    assert config["throughput_mode"] is (np > 1)
    assert config["stonewall"] == ("first-finisher" if np > 1 else "none")
    assert ("random-mix" in config["patterns"]) is (np > 1)
    assert config["matrix"]["npoints"] == 25 and report["summary"]["verify_bad_words"] == 0
    assert matrix_problems(report) == []
    summary = report["summary"][phase_name("stride_read", MIB, 4 * KIB)]
    assert summary["throughput_Bps"]["n"] == 2 and summary["throughput_Bps"]["trimmed_mean"] > 0
    assert len({r["node"] for r in report["ranks"]}) == nodes, "ranks on Slurm's nodes"


# ---- the check's library ---------------------------------------------------------------------
def test_headline_points_and_names():
    points = [
        (f, r)
        for f in (64 * KIB, 32 * MIB, 64 * MIB)
        for r in (4 * KIB, 64 * KIB, MIB, 16 * MIB)
        if r <= f and not (f > 16 * MIB and r < 64 * KIB)
    ]
    chosen = headline_points(points)
    assert chosen[True] == (64 * MIB, MIB), "sequential: the largest file, 1 MiB records"
    assert chosen[False] == (64 * MIB, 64 * KIB), "random: its smallest records"
    assert headline_points([(64 * KIB, 4 * KIB), (64 * KIB, 64 * KIB)]) == {
        True: (64 * KIB, 64 * KIB),
        False: (64 * KIB, 4 * KIB),
    }
    assert figure_name("random_read", 64 * KIB, 4 * KIB) == "random_read_f64k_r4k"
    assert phase_name("random_read", 64 * KIB, 4 * KIB) == "random_read_f65536_r4096"


def test_cache_marks_share_memory_between_the_files_of_a_node():
    config = {"cpu_cache_bytes": 32 * MIB, "node_memory_bytes": 24 << 30}
    assert cache_marks(config, 1) == [
        {"axis": "x", "value": 32 * MIB, "label": "CPU cache, 32 MiB"},
        {"axis": "x", "value": 24 << 30, "label": "node memory, 24 GiB"},
    ]
    assert cache_marks(config, 2)[1] == {
        "axis": "x",
        "value": 12 << 30,
        "label": "node memory / 2 files, 12 GiB",
    }
    assert cache_marks({}, 1) == []
