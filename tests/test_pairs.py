"""The benchmarks' device records (ci/benchmarks/pairs.py): what the block device did during
a job, read from its statistics, and the rule that leaves out the pairs where either run
met a slow device without excusing a tool that is slower on every run."""

import os
import sys
import time

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "ci" / "benchmarks"))
import pairs


def recorded(figure, device_ms, mib=1024.0):
    """One tool's run of a point as the benchmarks record it: its figure and the device's."""
    record = {"requests": int(mib), "mib": mib, "device_ms": device_ms, "flush_ms": 0}
    return {"write": figure, "device": {"write": record}}


def test_device_watch_counts_the_jobs_writes(tmp_path):
    if pairs.device_stat(tmp_path) is None:
        pytest.skip(f"{tmp_path} is on no block device (tmpfs?): nothing to count")
    with pairs.device_watch(tmp_path) as record:
        fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
        os.write(fd, b"x" * (4 << 20))
        os.fsync(fd)
        os.close(fd)
    assert record["write"]["mib"] >= 4, record
    assert record["write"]["requests"] >= 1
    assert record["write"]["wall_s"] > 0


def test_sampler_cuts_a_window_from_its_samples(tmp_path):
    if pairs.device_stat(tmp_path) is None:
        pytest.skip(f"{tmp_path} is on no block device (tmpfs?): nothing to count")
    os.sync()
    with pairs.DeviceSampler(tmp_path) as sampler:
        time.sleep(0.05)
        start = time.time()
        fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
        os.write(fd, b"x" * (32 << 20))
        os.fsync(fd)
        os.close(fd)
        end = time.time()
        time.sleep(0.05)
    inside = sampler.record(start, end)
    assert inside["write"]["mib"] >= 32, inside
    assert inside["write"]["wall_s"] >= round(end - start, 3)
    assert sampler.record(start - 0.04, start - 0.01)["write"]["mib"] < 32
    assert sampler.record(end + 3600, end + 3601) == {}, "a window after the samples"
    assert sampler.record(end, start) == {}, "a window that ends before it starts"


def test_a_pair_that_met_a_slow_device_is_left_out():
    kernel = [recorded(1000, 500) for _ in range(7)] + [recorded(400, 1500)]  # a 3x stall
    fio = [recorded(1000, 500) for _ in range(8)]
    kept, left_out, median = pairs.stall_free_pairs(kernel, fio, "write")
    assert (left_out, median) == (1, 500 / 1024)
    assert kept == [(1000, 1000)] * 7
    line = pairs.device_line(kernel, fio, "write", "fio")
    assert "without the 1 pair(s)" in line and "1.00 [1.00, 1.00] (met)" in line, line


def test_a_tool_slower_on_every_run_is_not_excused():
    fio = [recorded(1000, 500) for _ in range(8)]
    twice = [recorded(500, 1000) for _ in range(8)]  # under 1.5x the median: every pair kept
    kept, left_out, _ = pairs.stall_free_pairs(twice, fio, "write")
    assert left_out == 0 and len(kept) == 8
    assert "0.50 [0.50, 0.50] (missed)" in pairs.device_line(twice, fio, "write", "fio")
    four_times = [recorded(250, 2000) for _ in range(8)]  # every kernel run over: no ratio at all
    line = pairs.device_line(four_times, fio, "write", "fio")
    assert line.endswith("0 of 8 pairs left without a slow device, too few: no ratio"), line


def test_no_device_no_ratio_from_it():
    bare = [{"write": 1000} for _ in range(4)]
    assert "no block device record" in pairs.device_line(bare, bare, "write", "fio")
    one_missing = [recorded(1000, 500) for _ in range(3)] + bare[:1]
    assert "no block device record" in pairs.device_line(one_missing, one_missing, "write", "fio")


def test_json_target_is_a_new_file_in_a_writable_directory(tmp_path):
    assert pairs.json_target_problem(None) is None
    assert pairs.json_target_problem(tmp_path / "rounds.json") is None
    (tmp_path / "old.json").write_text("{}")
    assert "exists" in pairs.json_target_problem(tmp_path / "old.json")
    assert "not a directory" in pairs.json_target_problem(tmp_path / "no" / "rounds.json")
    assert (tmp_path / "old.json").read_text() == "{}", "an earlier record is kept"


def test_cpu_idle_line_says_the_guests_idle_poll(tmp_path, monkeypatch):
    poll = tmp_path / "guest_halt_poll_ns"
    monkeypatch.setattr(pairs, "HALT_POLL_NS", poll)
    assert pairs.cpu_idle_words() is None, "a machine without the guest's idle poll says nothing"
    poll.write_text("0\n")
    line = pairs.cpu_idle_words()
    assert "polls 0 us before halting" in line and "every sleep pays the host wake-up" in line
    poll.write_text("200000\n")
    line = pairs.cpu_idle_words()
    assert "polls 200 us before halting" in line and "every sleep" not in line
    poll.write_text("not a number\n")
    assert pairs.cpu_idle_words() is None


def test_advisor_validation_marks_rows_too_short_to_time():
    import advisor_validation

    workload = {"name": "w", "parts": ["data"]}
    predicted = {("w", "short"): (0.1, None, None, ""), ("w", "long"): (1.2, None, None, "")}
    measured = {("w", "short"): ([0.05, 0.06], []), ("w", "long"): ([1.0, 1.1], [])}
    errors, within, short = [], [], []
    rows = [
        advisor_validation._comparison_row(
            workload,
            0,
            target,
            None,
            predicted,
            measured,
            {"max": predicted, "sum": predicted},
            "max",
            {},
            errors,
            within,
            short,
        )
        for target in ("short", "long")
    ]
    assert "too short to time" in rows[0] and "too short to time" not in rows[1]
    assert short == [True, False]
    line = advisor_validation.short_rows_words(errors, short)
    assert line.startswith("1 of 2 rows measured under 0.5 s in all, too short to time")
    assert line.endswith("over the other 1 row the median error is 14.3%")
    assert advisor_validation.short_rows_words([0.1], [False]) is None
    assert "over the other" not in advisor_validation.short_rows_words([0.1], [True])


def test_advisor_validation_runs_short_workloads_several_times_over(tmp_path):
    import advisor_validation as v

    assert v.times_for(2.0) == 1 and v.times_for(None) == 1
    assert v.times_for(0.3) == 4, "predicted 0.3 s: run 4 times over to reach 1 s"
    assert v.times_for(0.001) == v.MOST_TIMES
    by_name = {w["name"]: w for w in v.WORKLOADS}
    iotest = v.scaled(by_name["iotest fpp seq write+read 1MiB"], 10)
    assert iotest["kernel"][iotest["kernel"].index("--niter") + 1] == "40"
    assert iotest["description"]["bytes"] == 10 * 4 * 2 * 2 * 64 * v.MIB
    assert iotest["description"]["footprint"] == "128 MiB", "the data set is kept"
    metadata = v.scaled(by_name["metadata create/stat/delete 4000"], 3)
    assert metadata["kernel"][metadata["kernel"].index("--files") + 1] == "6000"
    assert metadata["description"]["stats"] == metadata["description"]["files"] == 12000
    requests = v.scaled(by_name["request read 4096 B uncached"], 2)
    assert requests["requests"] == by_name["request read 4096 B uncached"]["requests"]
    assert v.runs_of(requests) == 2 and v.runs_of(iotest) == 1
    copy = v.scaled(by_name["stage in 64 x 2048 KiB"], 5)
    assert copy["description"] == by_name["stage in 64 x 2048 KiB"]["description"], (
        "a copy run 5 times over is 5 copies of the same set, one after the other"
    )
    assert v.scaled(iotest, 1) is iotest
    script = v.job_script(
        "localscratch",
        [copy, requests],
        {"kernel": "k", "request_loop": "r"},
        tmp_path,
        1,
        tmp_path,
    )
    assert "for c in $(seq 5); do sync; t0=" in script
    assert script.count("r read") == 2, "the per-request workload runs twice"
    (tmp_path / "copy-0-0.txt").write_text("1.0 1.5\n2.0 2.25\n3 3.25\n4 4.25\n5 5.25\n")
    assert v.measured_seconds(tmp_path, 0, 0, copy) == (1.5, "")
    (tmp_path / "requests-1-0.txt").write_text("0.25 4096\n")
    assert v.measured_seconds(tmp_path, 1, 0, requests) == (
        None,
        "request_loop ran 1 of 2 times",
    ), "a run missing is said, not added up as if it were all"
