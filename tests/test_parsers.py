"""Parsers against every real IOR and mdtest output: the shared fixtures
(../shared/fixtures) and the repository's own (tests/fixtures, see its README): 4.1.0+dev
and 4.0.0, the version spack.yaml pins, whose mdtest prints its tables differently.

A run that failed, was killed or is truncated must raise ParseError (a clear sanity
failure), never yield a number; a good run must yield the figures of its summary.
"""

import json

import pytest

from conftest import FIXTURES, REPO
from reframe_checks.lib.parsers import (
    ParseError,
    ior_problems,
    kernel_problems,
    mdtest_problems,
    parse_ior_json,
    parse_kernel_json,
    parse_mdtest,
    parse_mdtest_rank_details,
    parse_mdtest_scan,
)

OWN = REPO / "tests" / "fixtures" / "ior-4.1.0"
OWN_400 = REPO / "tests" / "fixtures" / "ior-4.0.0"
DIRS = [d for d in (FIXTURES, OWN, OWN_400) if d.is_dir()]
# The seed's IOR/mdtest outputs live beside the checkout (../shared, as CI has it).
needs_seed_fixtures = pytest.mark.skipif(
    not FIXTURES.is_dir(), reason=f"the seed's IOR outputs are not beside the checkout ({FIXTURES})"
)


def cases(prefix):
    return sorted((p for d in DIRS for p in d.glob(prefix + "*")), key=lambda p: p.name)


IOR_CASES = cases("ior_")
MDTEST_CASES = cases("mdtest_")
MDTEST_DETAILS = [c for c in MDTEST_CASES if (c / "summary.csv").exists()]


def ids(paths):
    return [f"{p.parent.parent.parent.name}/{p.parent.name}:{p.name}" for p in paths]


def exit_code(case, name="exit_code.txt"):
    return int((case / name).read_text().split()[0])


def test_every_fixture_is_covered():
    assert OWN.is_dir() and OWN_400.is_dir(), "the repository's fixtures"
    own = [c for c in IOR_CASES + MDTEST_CASES if c.parent in (OWN, OWN_400)]
    assert len(own) == len(list(OWN.iterdir())) + len(list(OWN_400.iterdir())) == 20
    if FIXTURES.is_dir():
        assert len(IOR_CASES) >= 33 and len(MDTEST_CASES) >= 35


# ---- IOR -------------------------------------------------------------------------------
# Good runs that IO500's rules call invalid, and why; every other good run is valid.
IOR_INVALID = {
    "ior_stonewall_D2_tmp": "without stoneWallingWearOut",
    "ior_easy_write_D5_too_short_tmp": "shorter than its 5 s stonewall",
    # valid only against the bytes its write moved (see the pair test below)
    "ior_easy_read_after_D2_tmp": "16384 MiB planned",
}


@pytest.mark.parametrize("case", IOR_CASES, ids=ids(IOR_CASES))
def test_ior_json(case):
    path = case / "summary.json"
    text = path.read_text() if path.exists() else ""
    json_exit = case / "json_run_exit_code.txt"
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
    for result in parsed["results"]:
        assert result["access"] in ("write", "read") and result["bwMiB"] > 0
    problems = ior_problems(parsed, expected_tasks=op["tasks"])
    if case.name in IOR_INVALID:
        assert len(problems) == 1 and IOR_INVALID[case.name] in problems[0]
    else:
        assert problems == []


@needs_seed_fixtures
def test_ior_wrong_task_count_is_a_problem():
    parsed = parse_ior_json((FIXTURES / "ior_posix_fpp_tmp" / "summary.json").read_text())
    problems = ior_problems(parsed, expected_tasks=4)
    assert problems and "2 tasks, 4 launched" in problems[0]


def test_ior_phase_shorter_than_stonewall_is_invalid():
    data = json.loads((OWN / "ior_easy_write_D2_wearout_tmp" / "summary.json").read_text())
    assert ior_problems(parse_ior_json(json.dumps(data)), stonewall_s=2) == []
    data["tests"][0]["Results"][0]["totalTime"] = 0.5
    problems = ior_problems(parse_ior_json(json.dumps(data)))
    assert problems and "shorter than its 2 s stonewall" in problems[0]


def test_ior_stonewall_that_did_not_reach_ior_is_invalid():
    parsed = parse_ior_json((OWN / "ior_easy_write_D2_wearout_tmp" / "summary.json").read_text())
    problems = ior_problems(parsed, stonewall_s=30)
    assert problems == [
        "IOR ran with a 2 s stonewall, 30 s was asked: the options did not reach IOR"
    ]


def test_ior_read_after_a_stonewalled_write_moves_what_was_written():
    write = parse_ior_json((OWN / "ior_easy_write_D2_wearout_tmp" / "summary.json").read_text())
    read = parse_ior_json((OWN / "ior_easy_read_after_D2_tmp" / "summary.json").read_text())
    written = write["operations"]["write"]["aggregate_MiB"]
    assert written == 2852.0, "713 pairs x 2 MiB x 2 ranks, as the status file said"
    assert ior_problems(read, expected_tasks=2, expected_MiB=written) == []
    problems = ior_problems(read, expected_MiB=written + 2)
    assert problems == ["IOR read moved 2852 MiB, 2854 MiB as expected: a wrong byte count"]


@needs_seed_fixtures
def test_ior_write_and_read_of_one_stonewalled_run_must_match():
    data = json.loads((FIXTURES / "ior_posix_fpp_tmp" / "summary.json").read_text())
    data["tests"][0]["Parameters"].update(deadlineForStonewall=0.001, stoneWallingWearOut=1)
    read = next(s for s in data["summary"] if s["operation"] == "read")
    read["xsizeMiB"] -= 1
    problems = ior_problems(parse_ior_json(json.dumps(data)))
    assert problems == ["IOR read 511 MiB but wrote 512 MiB: after wear-out they must match"]


def test_ior_verbose_removals_are_kept_apart():
    text = (OWN / "ior_v_verbose_fpp_tmp" / "summary.json").read_text()
    raw = [r["access"] for r in json.loads(text)["tests"][0]["Results"]]
    assert raw == ["write", "read", "remove"] * 2, "the recorded -v run has removals"
    parsed = parse_ior_json(text)
    assert [r["access"] for r in parsed["results"]] == ["write", "read"] * 2
    assert [r["totalTime"] for r in parsed["removals"]] == [0.0055, 0.0054]
    assert sum(r["bwMiB"] for r in parsed["results"] if r["access"] == "write") == pytest.approx(
        2247.1868 + 2242.6435
    )


# ---- mdtest ------------------------------------------------------------------------------
@pytest.mark.parametrize("case", MDTEST_CASES, ids=ids(MDTEST_CASES))
def test_mdtest_text(case):
    text = (case / "stdout.txt").read_text()
    if exit_code(case) != 0:
        with pytest.raises(ParseError):
            parse_mdtest_scan(text)
        return
    results = parse_mdtest_scan(text)
    for result in results:
        assert result["rate"] or result["time"], "a good run yields a summary table"
        for table in (result["rate"], result["time"]):
            for figures in table.values():
                assert set(figures) == {"max", "min", "mean", "std"}
                assert figures["min"] <= figures["mean"] <= figures["max"]
        assert result["tasks"] in (1, 2, 4)
        assert result["command_line"][0].endswith("mdtest")
    if len(results) == 1:
        assert parse_mdtest(text) == results[0]
    else:
        with pytest.raises(ParseError, match="task scan"):
            parse_mdtest(text)


@pytest.mark.parametrize("case", MDTEST_DETAILS, ids=ids(MDTEST_DETAILS))
def test_mdtest_rank_details(case):
    """The CSV of the same run: its items and rates agree with the text."""
    csv = (case / "summary.csv").read_text()
    if exit_code(case) != 0 and "all," not in csv:
        with pytest.raises(ParseError):
            parse_mdtest_rank_details(csv)
        return
    details = parse_mdtest_rank_details(csv)
    if exit_code(case) != 0:
        return
    result = parse_mdtest((case / "stdout.txt").read_text())
    assert details["items_per_rank"] > 0
    if result["stonewall"] is None and not case.name.startswith("mdtest_hard_"):
        assert details["items_per_rank"] * result["tasks"] == result["items"]
    if result["iterations"] == 1:
        for op, figures in result["rate"].items():
            if not op.startswith("tree_"):
                assert details["phases"][op]["rate"] == pytest.approx(
                    figures["mean"], rel=1e-6, abs=1e-3
                )


@needs_seed_fixtures
def test_mdtest_rate_row_values():
    parsed = parse_mdtest((FIXTURES / "mdtest_F_n1000_i2_tmp" / "stdout.txt").read_text())
    assert parsed["rate"]["file_creation"] == {
        "max": 13762.917,
        "min": 12414.178,
        "mean": 13088.548,
        "std": 953.702,
    }
    assert parsed["iterations"] == 2 and parsed["items"] == 2000


def test_mdtest_rank_statistics_read_by_header():
    """--showRankStatistics: per-rank columns come first; the aggregate ones are read."""
    parsed = parse_mdtest(
        (OWN / "mdtest_showRankStatistics_F_n1000_i2_tmp" / "stdout.txt").read_text()
    )
    assert parsed["rate"]["file_creation"] == {
        "max": 78979.852,
        "min": 73316.739,
        "mean": 76148.295,
        "std": 4004.425,
    }
    assert parsed["rank_rate"]["file_creation"] == {
        "max": 41106.925,
        "min": 36710.668,
        "mean": 39455.003,
    }
    both = parse_mdtest(
        (OWN / "mdtest_P_showRankStatistics_F_n1000_i2_tmp" / "stdout.txt").read_text()
    )
    assert both["rate"]["file_creation"]["mean"] == 1239.011
    assert both["time"]["file_creation"] == {
        "max": 1.742,
        "min": 1.504,
        "mean": 1.623,
        "std": 0.169,
    }
    assert both["rank_time"]["file_read"] == {"max": 0.013, "min": 0.003, "mean": 0.007}


def test_mdtest_row_with_the_wrong_number_of_columns_is_refused():
    text = (OWN / "mdtest_showRankStatistics_F_n1000_i2_tmp" / "stdout.txt").read_text()
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("File stat"))
    broken = text.replace(row, row.rsplit(None, 1)[0])
    with pytest.raises(ParseError, match="has 6 numbers, its header names 7 columns"):
        parse_mdtest(broken)


def test_mdtest_task_scan_gives_one_result_per_task_count():
    text = (OWN / "mdtest_scan_f1_l2_s1_F_n500_tmp" / "stdout.txt").read_text()
    results = parse_mdtest_scan(text)
    assert [(r["tasks"], r["items"]) for r in results] == [(1, 500), (2, 1000)]
    assert [r["rate"]["file_creation"]["mean"] for r in results] == [3571.926, 2972.562]
    assert [r["rate"]["file_removal"]["mean"] for r in results] == [149612.521, 263206.741]
    with pytest.raises(ParseError, match=r"task scan \(-f/-l/-s\) with results for 1, 2 tasks"):
        parse_mdtest(text)


def test_mdtest_4_0_0_tables_without_units():
    """4.0.0 prints 'SUMMARY rate: (of N iterations)', with no unit."""
    parsed = parse_mdtest(
        (OWN_400 / "mdtest_P_showRankStatistics_F_n1000_i2_tmp" / "stdout.txt").read_text()
    )
    assert parsed["units"] == {"rate": None, "time": None}
    assert parsed["rate"]["file_creation"] == {
        "max": 31763.72,
        "min": 2518.349,
        "mean": 17141.035,
        "std": 20679.6,
    }
    assert parsed["rank_rate"]["file_creation"]["mean"] == 11237.222
    assert parsed["time"]["tree_creation"]["mean"] == 0.0, "ran: a measured 0.000"
    own = parse_mdtest((OWN / "mdtest_P_rate_and_time_F_n1000_i2_tmp" / "stdout.txt").read_text())
    assert own["units"] == {"rate": "ops/sec", "time": "ms/op"}
    scan = parse_mdtest_scan(
        (OWN_400 / "mdtest_scan_f1_l2_s1_F_n500_tmp" / "stdout.txt").read_text()
    )
    assert [r["tasks"] for r in scan] == [1, 2]


def test_mdtest_4_0_0_stonewall_chain():
    create, read = (OWN_400 / "mdtest_hard_create_W2_tmp", OWN_400 / "mdtest_hard_read_x_tmp")
    result = parse_mdtest((create / "stdout.txt").read_text())
    details = parse_mdtest_rank_details((create / "summary.csv").read_text())
    items = result["stonewall"]["max"]
    assert details["items_per_rank"] == items
    assert (
        mdtest_problems(
            result,
            details,
            expected_tasks=2,
            phases=["file_creation"],
            stonewall_s=2,
            expected_items=items,
        )
        == []
    )
    result = parse_mdtest((read / "stdout.txt").read_text())
    details = parse_mdtest_rank_details((read / "summary.csv").read_text())
    assert (
        mdtest_problems(
            result, details, expected_tasks=2, phases=["file_read"], expected_items=items
        )
        == []
    )


def test_mdtest_zero_ms_per_op_is_a_measured_time_under_P():
    parsed = parse_mdtest(
        (OWN / "mdtest_P_rate_and_time_F_n1000_i2_tmp" / "stdout.txt").read_text()
    )
    assert parsed["rate"]["tree_creation"]["mean"] == 2123.412
    assert parsed["time"]["tree_creation"] == {"max": 0.0, "min": 0.0, "mean": 0.0, "std": 0.0}
    assert set(parsed["time"]) == set(parsed["rate"]) and parsed["skipped"] == []


@needs_seed_fixtures
def test_mdtest_time_alone_cannot_tell_zero_from_skipped():
    parsed = parse_mdtest((FIXTURES / "mdtest_Z_time_F_n1000_i2_tmp" / "stdout.txt").read_text())
    assert parsed["rate"] == {} and parsed["time"]["file_creation"]["mean"] == 1.143
    assert parsed["time_unknown"] == ["tree_creation"] and "tree_creation" not in parsed["time"]


@needs_seed_fixtures
def test_mdtest_skipped_phases_are_left_out():
    parsed = parse_mdtest((FIXTURES / "mdtest_split2_stat_tmp" / "stdout.txt").read_text())
    assert list(parsed["rate"]) == ["file_stat"]
    assert "file_creation" in parsed["skipped"]


def test_mdtest_verbose_lines_around_the_table():
    parsed = parse_mdtest((OWN / "mdtest_v_verbose_F_n200_tmp" / "stdout.txt").read_text())
    assert parsed["tasks"] == 2 and parsed["items"] == 400
    assert parsed["rate"]["tree_removal"]["mean"] == 1472.719
    assert len(parsed["rate"]) == 6


def test_mdtest_stonewall_and_items():
    phases = {}
    for phase in ("create_W2", "stat_x", "read_x", "remove_x"):
        case = OWN / f"mdtest_hard_{phase}_tmp"
        phases[phase] = (
            parse_mdtest((case / "stdout.txt").read_text()),
            parse_mdtest_rank_details((case / "summary.csv").read_text()),
        )
    create, details = phases["create_W2"]
    assert create["stonewall"] == {"min": 1975, "max": 2261, "avg": 2118.0}
    assert details["items_per_rank"] == 2261 and details["phases"]["file_creation"]["time"] > 2
    assert (
        mdtest_problems(
            create,
            details,
            expected_tasks=2,
            phases=["file_creation"],
            stonewall_s=2,
            expected_items=2261,
        )
        == []
    )
    for phase, op in (
        ("stat_x", "file_stat"),
        ("read_x", "file_read"),
        ("remove_x", "file_removal"),
    ):
        result, details = phases[phase]
        assert (
            mdtest_problems(result, details, expected_tasks=2, phases=[op], expected_items=2261)
            == []
        )
    result, details = phases["read_x"]
    assert mdtest_problems(result, details, phases=["file_read"], expected_items=2000) == [
        "mdtest processed 2261 items per rank, 2000 expected: phases did not see the same files"
    ]
    assert mdtest_problems(result, details, phases=["file_stat"]) == [
        "mdtest measured no file stat rate"
    ]


def test_mdtest_create_shorter_than_its_stonewall_is_invalid():
    case = OWN / "mdtest_hard_create_W5_too_short_tmp"
    result = parse_mdtest((case / "stdout.txt").read_text())
    details = parse_mdtest_rank_details((case / "summary.csv").read_text())
    assert mdtest_problems(
        result,
        details,
        expected_tasks=2,
        phases=["file_creation"],
        stonewall_s=5,
        expected_items=100,
    ) == [
        "the create phase took 0.197 s, shorter than its 5 s stonewall: too little work for "
        "a valid figure"
    ]
    assert "stonewall 5, 30 s was asked" in mdtest_problems(result, details, stonewall_s=30)[0]
    assert mdtest_problems(result, None, stonewall_s=5)[-1].startswith(
        "mdtest wrote no rank details"
    )


@pytest.mark.parametrize(
    "text,reason",
    [
        ("", "empty"),
        ("rank,items\nall", "no complete 'all' row"),
        ("a,b\n", "expected 'rank,items"),
    ],
)
def test_mdtest_rank_details_broken(text, reason):
    with pytest.raises(ParseError, match=reason):
        parse_mdtest_rank_details(text)


@pytest.mark.parametrize(
    "text,reason",
    [
        ("", "empty"),
        ('{"schema_version": "1.0", "mode": "iotest"', "not valid JSON"),
        ('{"schema_version": "2.0", "mode": "iotest"}', "schema_version"),
        ('{"schema_version": "1.0", "mode": "iotest"}', "no 'config' field"),
    ],
)
def test_kernel_report_broken(text, reason):
    with pytest.raises(ParseError, match=reason):
        parse_kernel_json(text)


def test_kernel_problems_name_each_cause():
    report = {
        "schema_version": "1.0",
        "mode": "iotest",
        "config": {"stonewall_s": 5},
        "mpi": {"nranks": 1, "nnodes": 1},
        "complete": False,
        "exit_code": 5,
        "exit_reason": "no-space",
        "errors": [{"message": "write x: No space left"}],
        "summary": {"verify_bad_words": 3},
        "repetitions": [{"rep": 0, "phases": {"write": {"stonewall_hit_ranks": 0}}}],
    }
    problems = " | ".join(kernel_problems(report, expected_ranks=4, expected_nodes=2))
    for text in (
        "kernel exit 5 (no-space): write x: No space left",
        "did not complete",
        "1 MPI ranks ran, 4 were launched",
        "ran on 1 nodes, 2 were requested",
        "verification failed: 3 words",
        "finished before its 5 s stonewall",
    ):
        assert text in problems
