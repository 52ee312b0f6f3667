"""Parsers against every real IOR and mdtest output in ../shared/fixtures.

A run that failed, was killed or is truncated must raise ParseError (a clear sanity
failure), never yield a number; a good run must yield the figures of its summary.
"""

import json

import pytest

from conftest import FIXTURES
from reframe_checks.lib.parsers import (ParseError, ior_problems, kernel_problems,
                                         parse_ior_json, parse_kernel_json, parse_mdtest)

if not FIXTURES.is_dir():
    pytest.skip(f"fixtures not found at {FIXTURES}", allow_module_level=True)

IOR_CASES = sorted(p.name for p in FIXTURES.glob("ior_*"))
MDTEST_CASES = sorted(p.name for p in FIXTURES.glob("mdtest_*"))


def exit_code(case, name="exit_code.txt"):
    return int((FIXTURES / case / name).read_text().split()[0])


def test_every_fixture_is_covered():
    assert len(IOR_CASES) >= 25 and len(MDTEST_CASES) >= 20


@pytest.mark.parametrize("case", IOR_CASES)
def test_ior_json(case):
    path = FIXTURES / case / "summary.json"
    text = path.read_text() if path.exists() else ""
    json_exit = FIXTURES / case / "json_run_exit_code.txt"
    good = json_exit.exists() and exit_code(case, "json_run_exit_code.txt") == 0
    if not good:
        with pytest.raises(ParseError):
            parse_ior_json(text)
        return
    parsed = parse_ior_json(text)
    data = json.loads(text)
    assert set(parsed["operations"]) == {s["operation"] for s in data["summary"]}
    for entry in data["summary"]:
        op = parsed["operations"][entry["operation"]]
        assert op["bw_mean"] == pytest.approx(entry["bwMeanMIB"])
        assert op["bw_min"] <= op["bw_mean"] <= op["bw_max"]
        assert op["tasks"] == entry["numTasks"]
    assert ior_problems(parsed, expected_tasks=parsed["operations"][entry["operation"]]
                        ["tasks"]) == []


def test_ior_wrong_task_count_is_a_problem():
    parsed = parse_ior_json((FIXTURES / "ior_posix_fpp_tmp" / "summary.json").read_text())
    problems = ior_problems(parsed, expected_tasks=4)
    assert problems and "2 tasks, 4 launched" in problems[0]


def test_ior_phase_shorter_than_stonewall_is_invalid():
    data = json.loads((FIXTURES / "ior_stonewall_D2_tmp" / "summary.json").read_text())
    assert ior_problems(parse_ior_json(json.dumps(data))) == []
    data["tests"][0]["Results"][0]["totalTime"] = 0.5
    problems = ior_problems(parse_ior_json(json.dumps(data)))
    assert problems and "shorter than its 2 s stonewall" in problems[0]


@pytest.mark.parametrize("case", MDTEST_CASES)
def test_mdtest_text(case):
    text = (FIXTURES / case / "stdout.txt").read_text()
    if exit_code(case) != 0:
        with pytest.raises(ParseError):
            parse_mdtest(text)
        return
    parsed = parse_mdtest(text)
    table = parsed["rate"] or parsed["time"]
    assert table, "a good run yields a summary table"
    for figures in table.values():
        assert figures["min"] <= figures["mean"] <= figures["max"]
    assert parsed["tasks"] in (2, 4)


def test_mdtest_rate_row_values():
    parsed = parse_mdtest((FIXTURES / "mdtest_F_n1000_i2_tmp" / "stdout.txt").read_text())
    assert parsed["rate"]["file_creation"] == {"max": 13762.917, "min": 12414.178,
                                               "mean": 13088.548, "std": 953.702}
    assert parsed["iterations"] == 2 and parsed["items"] == 2000


def test_mdtest_skipped_phases_are_left_out():
    parsed = parse_mdtest((FIXTURES / "mdtest_split2_stat_tmp" / "stdout.txt").read_text())
    assert list(parsed["rate"]) == ["file_stat"]


def test_mdtest_time_table():
    parsed = parse_mdtest((FIXTURES / "mdtest_Z_time_F_n1000_i2_tmp" / "stdout.txt").read_text())
    assert parsed["rate"] == {} and parsed["time"]["file_creation"]["mean"] == 1.143


@pytest.mark.parametrize("text,reason", [
    ("", "empty"),
    ('{"schema_version": "1.0", "mode": "iotest"', "not valid JSON"),
    ('{"schema_version": "2.0", "mode": "iotest"}', "schema_version"),
    ('{"schema_version": "1.0", "mode": "iotest"}', "no 'config' field"),
])
def test_kernel_report_broken(text, reason):
    with pytest.raises(ParseError, match=reason):
        parse_kernel_json(text)


def test_kernel_problems_name_each_cause():
    report = {"schema_version": "1.0", "mode": "iotest", "config": {"stonewall_s": 5},
              "mpi": {"nranks": 1, "nnodes": 1}, "complete": False, "exit_code": 5,
              "exit_reason": "no-space", "errors": [{"message": "write x: No space left"}],
              "summary": {"verify_bad_words": 3},
              "repetitions": [{"rep": 0, "phases": {"write": {"stonewall_hit_ranks": 0}}}]}
    problems = " | ".join(kernel_problems(report, expected_ranks=4, expected_nodes=2))
    for text in ("kernel exit 5 (no-space): write x: No space left", "did not complete",
                 "1 MPI ranks ran, 4 were launched", "ran on 1 nodes, 2 were requested",
                 "verification failed: 3 words", "finished before its 5 s stonewall"):
        assert text in problems
