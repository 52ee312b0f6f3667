"""The staging check's pieces outside a cluster: the data set, the job script run for
real in a temporary directory, and the fit that separates a copy's per-file cost from
its per-byte cost."""

import json
import subprocess

import pytest

from reframe_checks.lib.staging import (
    MIN_SECONDS_PER_BYTE,
    MIN_SECONDS_PER_FILE,
    SCRIPTS_DIR,
    copy_costs,
    copy_costs_by_volume,
    make_dataset,
)

KIB, MIB = 1024, 1024**2


def test_the_fit_recovers_known_costs():
    per_file, per_byte, start = 2e-4, 1 / (800 * MIB), 0.003
    timings = [
        (f, f * size, start + f * per_file + f * size * per_byte)
        for f, size in ((64, 256 * KIB), (512, 4 * KIB))
    ]
    got = copy_costs(timings, start=start)
    assert got == (pytest.approx(per_file, rel=1e-9), pytest.approx(per_byte, rel=1e-9))
    # left in, the start of each copy is charged to its files and bytes
    assert copy_costs(timings)[1] > 1.1 * per_byte


def test_a_cost_the_timings_cannot_see_is_floored_not_negative():
    # the large set copied faster per byte than the small set's bytes alone would need:
    # the joint fit gives a negative per-file cost; the answer is the floor, and the
    # byte cost fitted alone
    per_file, per_byte = copy_costs([(64, 64 * 256 * KIB, 0.010), (512, 512 * 4 * KIB, 0.0005)])
    assert per_file == MIN_SECONDS_PER_FILE
    assert per_byte > MIN_SECONDS_PER_BYTE
    # and the other way round: bytes free, files cost
    per_file, per_byte = copy_costs([(64, 64 * 256 * KIB, 0.0001), (512, 512 * 4 * KIB, 0.05)])
    assert per_byte == MIN_SECONDS_PER_BYTE and per_file > 5e-5


def test_sets_of_one_shape_cannot_separate_the_costs():
    with pytest.raises(ValueError, match="expected sets of different file sizes"):
        copy_costs([(64, 64 * MIB, 0.1), (128, 128 * MIB, 0.2)])


def test_the_first_bytes_and_the_bytes_past_them_are_costed_apart():
    # a burst the page cache absorbs at 2 GiB/s; past its 256 MiB, 400 MiB/s
    per_file, fast, slow, start = 5e-5, 1 / (2048 * MIB), 1 / (400 * MIB), 0.003
    burst_bytes = 256 * MIB

    def seconds(files, size):
        first = min(files * size, burst_bytes)
        return start + files * per_file + first * fast + (files * size - first) * slow

    sets = {
        "small": (4096, 4096 * 4 * KIB, seconds(4096, 4 * KIB)),
        "burst": (256, burst_bytes, seconds(256, MIB)),
        "large": (2048, 2048 * MIB, seconds(2048, MIB)),
    }
    got = copy_costs_by_volume(sets, start=start)
    assert got == (
        pytest.approx(per_file, rel=1e-9),
        pytest.approx(fast, rel=1e-9),
        burst_bytes,
        pytest.approx(slow, rel=1e-9),
    )
    # the whole large copy's bandwidth would have been 2.3x too slow for a small copy
    assert 2048 * MIB / (sets["large"][2] - start - 2048 * per_file) < 450 * MIB
    with pytest.raises(ValueError, match="expected burst_files < files"):
        copy_costs_by_volume({**sets, "large": sets["burst"]}, start=start)


def test_the_job_script_stages_every_set_and_times_each(tmp_path):
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    scratch.mkdir()
    make_dataset(
        str(home), {"small": (32, 2 * KIB), "burst": (2, 64 * KIB), "large": (4, 64 * KIB)}
    )
    result = subprocess.run(
        ["bash", f"{SCRIPTS_DIR}/stage.sh", str(scratch), str(home), "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "staging.json").read_text())
    assert report["ok"] and report["checksums_in"] == report["checksums_out"] == "verified"
    assert report["files"] == 38 and report["bytes_in"] == 6 * 64 * KIB + 32 * 2 * KIB
    sets = report["sets"]
    assert (sets["large"]["files"], sets["large"]["bytes"]) == (4, 4 * 64 * KIB)
    assert (sets["burst"]["files"], sets["burst"]["bytes"]) == (2, 2 * 64 * KIB)
    assert (sets["small"]["files"], sets["small"]["bytes"]) == (32, 32 * 2 * KIB)
    for leg in ("in", "out"):
        assert all(s[f"stage_{leg}_s"] > 0 for s in sets.values())
        # the short copies thrice, their median kept; the large set once
        for name, s in sets.items():
            runs = s[f"stage_{leg}_runs_s"]
            assert len(runs) == (1 if name == "large" else 3)
            assert s[f"stage_{leg}_s"] == sorted(runs)[len(runs) // 2]
        assert 0 < report["copy_start_s"][leg] < max(s[f"stage_{leg}_s"] for s in sets.values())
        assert report[f"stage_{leg}_s"] == pytest.approx(
            sum(s[f"stage_{leg}_s"] for s in sets.values()), abs=3e-6
        )
    # the script's own directory in scratch is gone; nothing else was touched
    assert list(scratch.iterdir()) == []
    assert sorted(p.name for p in (home / "results").iterdir()) == ["burst", "large", "small"]
    assert sorted(p.name for p in (home / "input").iterdir()) == ["burst", "large", "small"]


def test_a_data_set_without_a_set_is_refused_naming_it(tmp_path):
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    scratch.mkdir()
    make_dataset(str(home), {"small": (4, 2 * KIB), "large": (2, 64 * KIB)})
    result = subprocess.run(
        ["bash", f"{SCRIPTS_DIR}/stage.sh", str(scratch), str(home), "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 3
    assert result.stderr.strip() == (
        f"stage.sh: {home}/input/burst is missing: expected the data set's sets small, burst, large"
    )
    assert list(scratch.iterdir()) == []


def test_an_odd_file_size_is_refused_naming_the_set(tmp_path):
    with pytest.raises(ValueError, match="small files of 4097 bytes: expected an even size"):
        make_dataset(str(tmp_path / "home"), {"large": (1, 2 * KIB), "small": (2, 4097)})
