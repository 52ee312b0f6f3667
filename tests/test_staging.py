"""The staging check's pieces outside a cluster: the data set, the job script run for
real in a temporary directory, and the fit that separates a copy's per-file cost from
its per-byte cost."""

import json
import subprocess

import pytest

from reframe_checks.lib.staging import (MIN_SECONDS_PER_BYTE, MIN_SECONDS_PER_FILE,
                                        SCRIPTS_DIR, copy_costs, make_dataset)

KIB, MIB = 1024, 1024 ** 2


def test_the_fit_recovers_known_costs():
    per_file, per_byte, start = 2e-4, 1 / (800 * MIB), 0.003
    timings = [(f, f * size, start + f * per_file + f * size * per_byte)
               for f, size in ((64, 256 * KIB), (512, 4 * KIB))]
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


def test_the_job_script_stages_both_sets_and_times_each(tmp_path):
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    scratch.mkdir()
    make_dataset(str(home), {"large": (4, 64 * KIB), "small": (32, 2 * KIB)})
    result = subprocess.run(["bash", f"{SCRIPTS_DIR}/stage.sh", str(scratch), str(home), "0"],
                            cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "staging.json").read_text())
    assert report["ok"] and report["checksums_in"] == report["checksums_out"] == "verified"
    assert report["files"] == 36 and report["bytes_in"] == 4 * 64 * KIB + 32 * 2 * KIB
    sets = report["sets"]
    assert (sets["large"]["files"], sets["large"]["bytes"]) == (4, 4 * 64 * KIB)
    assert (sets["small"]["files"], sets["small"]["bytes"]) == (32, 32 * 2 * KIB)
    for leg in ("in", "out"):
        assert all(s[f"stage_{leg}_s"] > 0 for s in sets.values())
        assert 0 < report["copy_start_s"][leg] < max(s[f"stage_{leg}_s"] for s in sets.values())
        assert report[f"stage_{leg}_s"] == pytest.approx(
            sum(s[f"stage_{leg}_s"] for s in sets.values()), abs=2e-6)
    # the script's own directory in scratch is gone; nothing else was touched
    assert list(scratch.iterdir()) == []
    assert sorted(p.name for p in (home / "results").iterdir()) == ["large", "small"]


def test_an_odd_file_size_is_refused_naming_the_set(tmp_path):
    with pytest.raises(ValueError, match="small files of 4097 bytes: expected an even size"):
        make_dataset(str(tmp_path / "home"), {"large": (1, 2 * KIB), "small": (2, 4097)})
