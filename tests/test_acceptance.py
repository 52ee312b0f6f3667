"""The acceptance job of BRIEF section 1, end to end (issue 24 section 4).

On a real 1-node embedded cluster with its GlusterFS SAN: 3 runs of a small acceptance
set before a change, a no-op change (an option set to the value it has) and 3 runs, a
real change through `scratchbench cluster san --set` and 3 runs after, and
`scratchbench verdict acceptance` as the README's walk-through does it: the no-op's 3
runs against the 3 before it, then the change against all 6 runs before it (the no-op
changed nothing, so all 6 measure the file system before the change; 3 against 3 once
missed a 57% fall of the SAN's writes, p=0.0127 alone, 0.051 adjusted for the 8
figures, on a block of "before" runs that spread by +-41%).

The set: IOTest file per process on both targets of the node (the SAN and the
node-local disk), 2 ranks x 96 MiB in 4 KiB O_DIRECT records, one repetition a run, so
that every timed phase lasts the 0.5 s a figure needs on this machine's disk (the
node-local reads, the fastest phase, ran at 206-260 MiB/s: 64 MiB a rank once lasted
493 ms, and the figure was rightly not judged).  The change (CHANGE): the
GlusterFS client's write-behind off.  Each 4 KiB write then waits for the brick: the
SAN's writes lose about half (measured: 55-61 -> 17-26 MiB/s), repeatably, while its
reads and the node-local disk are untouched (within the drift between blocks of runs,
DRIFT).
"""

import json
import os
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO, one_node_san, scratchbench

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the embedded cluster needs root")

CHECKS = ["--name", "KernelIOTest.*fpp-posix", "--environ", "gnu-openmpi"]
SMALL_IOTEST = {
    "nr": 512,
    "nc": 24576,
    "niter": 1,
    "reps": 1,
    "nodes": 1,
    "tasks_per_node": "cores",
    "cache": "direct",
    "time_limit": "5m",
}
#: the small set's own expectations, as a site writes them for its acceptance set: the
#: embedded file's floor (10 MiB/s, for the default 1 MiB-record workloads) is above
#: what 4 KiB O_DIRECT records reach on the SAN (CI: writes 9.1 MiB/s after the change,
#: reads 9.97 before it); a run that fails this floor has a broken file system
SMALL_IOTEST_REFERENCE = {
    "KernelIOTest": {
        "$index": ["$partition", "scratch_target"],
        "embedded:batch": {
            ".*": {
                "write_bw": [10, -0.9, None, "MiB/s"],
                "read_bw": [10, -0.9, None, "MiB/s"],
            }
        },
    }
}
OPTION = "performance.write-behind"
RUNS_A_SIDE = 3
#: blocks of runs minutes apart on this shared 2-core machine drift this much, tight
#: enough within a block for the verdict to call it significant (seen: the SAN's reads
#: 24.7 -> 30.7 -> 24.8 MiB/s over the three blocks, the middle one a no-op; in CI the
#: node-local disk's 4 KiB O_DIRECT writes 63 -> 92 MiB/s and reads 63 -> 87 between
#: the blocks before and after, the SAN untouched there); the real change takes the
#: SAN's writes down 54-70%
DRIFT = 0.5


def unmoved(figure):
    """No significant change, or a change within the machine's drift between blocks."""
    change = figure["relative_change"]
    return figure["verdict"] == "no significant change" or (
        change is not None and abs(change) < DRIFT
    )


@pytest.fixture(scope="module")
def home():
    """A SCRATCHBENCH_HOME with a 1-node cluster and a small `acceptance` workload."""
    with one_node_san("acceptance") as (path, env):
        workloads = yaml.safe_load((REPO / "reframe_checks" / "workloads.yaml").read_text())
        workloads["iotest"]["acceptance"] = SMALL_IOTEST
        (path / "workloads.yaml").write_text(yaml.safe_dump(workloads))
        references = path / "references"
        references.mkdir()
        (references / "embedded.yaml").write_text(yaml.safe_dump(SMALL_IOTEST_REFERENCE))
        yield dict(
            env,
            SCRATCHBENCH_WORKLOADS=str(path / "workloads.yaml"),
            RFM_REFERENCE_PREFIX=str(references),
        )


def runs(env, note):
    """RUNS_A_SIDE runs of the set, each passing (SMALL_IOTEST_REFERENCE's floor) and
    storing its 8 figures."""
    for i in range(RUNS_A_SIDE):
        result = scratchbench(
            "run",
            "--tag",
            "acceptance",
            *CHECKS,
            "--serial",
            "--no-start",
            "--note",
            note,
            env=env,
            timeout=600,
        )
        said = f"run {i + 1} '{note}':\n{result.stdout}\n{result.stderr}"
        assert result.returncode == 0, said
        assert "history:      8 figures added" in result.stdout, said


def verdict(env, before, after, out):
    said = scratchbench(
        "verdict",
        "acceptance",
        "--before",
        f"tag:acceptance,note:{before}",
        "--after",
        f"tag:acceptance,note:{after}",
        "--out",
        out,
        env=env,
    )
    print(said.stdout, said.stderr)
    return said, json.loads(Path(out).read_text())


def by_target(result):
    figures = {"sanscratch": {}, "localscratch": {}}
    for f in result["figures"]:
        target = "sanscratch" if "sanscratch" in f["series"] else "localscratch"
        assert target in f["series"], f["series"]
        figures[target][f["metric"]] = f
    return figures


def test_acceptance_of_a_real_change_and_of_a_no_op(home, tmp_path):
    started = time.monotonic()
    runs(home, "CHG-24 before: first")

    current = json.loads(scratchbench("cluster", "san", "--json", env=home).stdout)
    value = current["options"].get(OPTION, "on")
    same = scratchbench("cluster", "san", "--set", f"{OPTION}={value}", env=home)
    assert same.returncode == 0, same.stderr
    assert same.stdout.strip() == f"volume option {OPTION}: {value} -> {value}"
    runs(home, "CHG-24 before: after a no-op")
    said, noop = verdict(home, "before: first", "before: after a no-op", tmp_path / "noop.json")
    assert said.returncode == 0, said.stdout + said.stderr
    assert len(noop["figures"]) == 8, said.stdout
    assert all(unmoved(f) for f in noop["figures"]), said.stdout
    # the no-op is recorded: an option at its default, now set to the same value
    assert f"option {OPTION}: (default) -> {value}" in said.stdout

    changed = scratchbench("cluster", "san", "--set", f"{OPTION}=off", env=home)
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.strip() == f"volume option {OPTION}: {value} -> off"
    runs(home, "CHG-24 after")
    said, result = verdict(home, "CHG-24 before", "CHG-24 after", tmp_path / "after.json")
    assert len(result["before"]["runs"]) == 2 * RUNS_A_SIDE, result["before"]
    # the configuration difference, above the figures
    assert f"option {OPTION}: {value} -> off" in said.stdout
    # the 6 runs before were not all taken with one configuration, and the verdict says so
    assert f"differ among themselves in option {OPTION}" in said.stdout
    figures = by_target(result)
    assert len(figures["sanscratch"]) == 4 and len(figures["localscratch"]) == 4, said.stdout
    for metric in ("write_bw", "write_bw_worst"):
        f = figures["sanscratch"][metric]
        assert f["verdict"] == "worse", f["detail"]
        assert f["ci_high"] < 0 and f["relative_change"] < -0.3, f["detail"]
        assert f["effect_size"] is not None and f["effect_size"] < 0
        # what the admin reads: the change, its interval, the test
        line = next(ln for ln in said.stdout.splitlines() if f["name"] in ln)
        assert line.lstrip().startswith("worse") and "95% CI" in line and "Welch p=" in line
    unaffected = [
        figures["sanscratch"]["read_bw"],
        figures["sanscratch"]["open_close_share"],
        *figures["localscratch"].values(),
    ]
    for f in unaffected:
        assert unmoved(f), f["detail"]
    # the node-local disk, whose configuration did not change, is the control: when its
    # figures moved all the same, the verdict says the runs differ in more than that
    moved = [f for f in figures["localscratch"].values() if f["verdict"] in ("better", "worse")]
    assert ("note: " + f"{len(moved)} figure(s) of localscratch changed" in said.stdout) == bool(
        moved
    ), said.stdout
    # exit codes as documented: 1 when a figure is worse
    assert said.returncode == 1, said.stdout + said.stderr
    assert f"{result['worse']} worse" in said.stdout and result["worse"] >= 2
    page = (tmp_path / "after.html").read_text()
    assert OPTION in page and "worse" in page
    print(f"acceptance job: {time.monotonic() - started:.0f} s")
