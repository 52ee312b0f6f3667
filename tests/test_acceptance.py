"""The acceptance job of BRIEF section 1, end to end (issue 24 section 4).

On a real 1-node embedded cluster with its GlusterFS SAN: 3 runs of a small acceptance
set before a change, a no-op change (an option set to the value it has) and 3 runs, a
real change through `scratchbench cluster san --set` and 3 runs after, and
`scratchbench verdict acceptance` over each pair, as the README's walk-through does it.

The set: IOTest file per process on both targets of the node (the SAN and the
node-local disk), small enough for CI.  The change: GlusterFS's client writes a trace
log line per call (CHANGE); it slows the SAN's writes by about half, repeatably, and
leaves the node-local disk alone except for a few percent once in a while (the log is
written by the same cores and disk): below the practical minimum an acceptance verdict
asks for (reports/VERDICTS.md), so those figures read "no significant change".
"""

import json
import os
import shutil
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO, reachable_tmpdir, scratchbench

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the embedded cluster needs root")

CHECKS = ["--name", "KernelIOTest.*fpp-posix", "--environ", "gnu-openmpi"]
# IOTest, 2 ranks x 16 MiB in 1 MiB writes, 3 repetitions: seconds a run.
SMALL_IOTEST = {"nr": 131072, "nc": 16, "niter": 1, "reps": 3, "nodes": 1,
                "tasks_per_node": "cores", "cache": "fadvise", "time_limit": "5m"}
OPTION = "diagnostics.client-log-level"
CHANGE = f"{OPTION}=TRACE"
RUNS_A_SIDE = 3


@pytest.fixture(scope="module")
def home():
    """A SCRATCHBENCH_HOME with a 1-node cluster and a small `acceptance` workload."""
    path = reachable_tmpdir("sb-acceptance-")
    workloads = yaml.safe_load((REPO / "reframe_checks" / "workloads.yaml").read_text())
    workloads["iotest"]["acceptance"] = SMALL_IOTEST
    (path / "workloads.yaml").write_text(yaml.safe_dump(workloads))
    env = {"SCRATCHBENCH_HOME": str(path), "SCRATCHBENCH_WORKLOADS": str(path / "workloads.yaml")}
    try:
        up = scratchbench("cluster", "up", "--nodes", "1", "--san-brick-size", "1g", env=env)
        assert up.returncode == 0, up.stderr
        status = json.loads(scratchbench("cluster", "status", "--json", env=env).stdout)
        if status["san"].get("kind") != "glusterfs":
            pytest.fail(f"no GlusterFS SAN: {status['san'].get('reason')}")
        yield env
    finally:
        scratchbench("cluster", "down", env=env)
        shutil.rmtree(path, ignore_errors=True)


def runs(env, note):
    for i in range(RUNS_A_SIDE):
        result = scratchbench("run", "--tag", "acceptance", *CHECKS, "--serial", "--no-start",
                              "--note", note, env=env, timeout=600)
        assert result.returncode == 0, f"run {i + 1} '{note}':\n{result.stdout}\n{result.stderr}"


def verdict(env, before, after, out):
    said = scratchbench("verdict", "acceptance", "--before", f"tag:acceptance,note:{before}",
                        "--after", f"tag:acceptance,note:{after}", "--out", out, env=env)
    return said, json.loads(Path(out).read_text())


def by_target(result):
    figures = {"sanscratch": [], "localscratch": []}
    for f in result["figures"]:
        target = "sanscratch" if "sanscratch" in f["series"] else "localscratch"
        assert target in f["series"], f["series"]
        figures[target].append(f)
    return figures


def test_acceptance_of_a_real_change_and_of_a_no_op(home, tmp_path):
    started = time.monotonic()
    runs(home, "CHG-24 before")

    current = json.loads(scratchbench("cluster", "san", "--json", env=home).stdout)
    value = current["options"].get(OPTION, "INFO")
    same = scratchbench("cluster", "san", "--set", f"{OPTION}={value}", env=home)
    assert same.returncode == 0, same.stderr
    assert same.stdout.strip() == f"volume option {OPTION}: {value} -> {value}"
    runs(home, "CHG-24 no-op")
    said, noop = verdict(home, "CHG-24 before", "CHG-24 no-op", tmp_path / "noop.json")
    assert said.returncode == 0, said.stdout + said.stderr
    assert noop["figures"] and noop["no_significant_change"] == len(noop["figures"]), said.stdout

    changed = scratchbench("cluster", "san", "--set", CHANGE, env=home)
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.strip() == f"volume option {OPTION}: {value} -> TRACE"
    runs(home, "CHG-24 after")
    said, result = verdict(home, "CHG-24 no-op", "CHG-24 after", tmp_path / "after.json")
    print(said.stdout)
    figures = by_target(result)
    san_writes = [f for f in figures["sanscratch"] if f["metric"].startswith("write_bw")]
    assert len(san_writes) == 2 and len(figures["localscratch"]) == 4, said.stdout
    for f in san_writes:
        assert f["verdict"] == "worse", f["detail"]
        assert f["ci_high"] < 0 and f["relative_change"] < -0.2, f["detail"]
        assert f["effect_size"] is not None and f["effect_size"] < 0
        # what the admin reads: the change, its interval, the test
        line = next(ln for ln in said.stdout.splitlines() if f["name"] in ln)
        assert line.lstrip().startswith("worse") and "95% CI" in line and "Welch p=" in line
    for f in figures["localscratch"]:
        assert f["verdict"] == "no significant change", f["detail"]
    # exit codes as documented: 1 when a figure is worse
    assert said.returncode == 1, said.stdout + said.stderr
    assert f"{result['worse']} worse" in said.stdout
    print(f"acceptance job: {time.monotonic() - started:.0f} s")
