"""The IOR and mdtest checks, run through the real embedded Slurm cluster.

IOR is not installed in CI, so small wrapper scripts stand in for it, provided by an
Lmod module found through the environment's MODULEPATH (``env_vars``): they replay
recorded real IOR/mdtest runs (tests/fixtures/ior-4.1.0), and a test chooses which
run and which exit status.  Everything else is real: srun, the job script's exit
bookkeeping, the cache drop (fsync, POSIX_FADV_DONTNEED, fincore), ReFrame's sanity.
"""

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from conftest import REPO, VENV_BIN, reachable_tmpdir, scratchbench

FIXTURES = REPO / "tests" / "fixtures" / "ior-4.1.0"

IOR_WRAPPER = r"""#!/bin/bash
# Stands in for IOR: rank 0 replays a recorded real run; every rank exits with $EXIT.
. "$SB_FAKE_SCENARIO"
rank=${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-0}}
mode=write summary= target= prev=
for arg in "$@"; do
    case "$prev" in
        -O) case "$arg" in summaryFile=*) summary=${arg#summaryFile=} ;; esac ;;
        -o) target=$arg ;;
    esac
    [ "$arg" = -r ] && mode=read
    prev=$arg
done
if [ "$rank" = 0 ]; then
    if [ "$mode" = write ]; then case=$IOR_WRITE; else case=$IOR_READ; fi
    cat "$case/stdout.txt"
    cp "$case/summary.json" "$summary"
    # data for the cache drop to act on, as IOR would leave it
    [ "$mode" = write ] && head -c 4194304 /dev/urandom > "$target.00000000"
fi
exit "${EXIT:-0}"
"""

MDTEST_WRAPPER = r"""#!/bin/bash
# Stands in for mdtest: rank 0 replays a recorded real run; every rank exits with $EXIT.
. "$SB_FAKE_SCENARIO"
rank=${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-0}}
phase= details= dir= prev=
for arg in "$@"; do
    case "$arg" in
        -C) phase=CREATE ;; -T) phase=STAT ;; -E) phase=READ ;; -r) phase=REMOVE ;;
        --saveRankPerformanceDetails=*) details=${arg#*=} ;;
    esac
    [ "$prev" = -d ] && dir=$arg
    prev=$arg
done
if [ "$rank" = 0 ]; then
    case=$(eval echo "\$MDTEST_$phase")
    cat "$case/stdout.txt"
    cp "$case/summary.csv" "$details"
    if [ "$phase" = CREATE ]; then
        mkdir -p "$dir/test-dir.0-0" && head -c 3901 /dev/urandom > "$dir/test-dir.0-0/file.0"
    fi
fi
exit "${EXIT:-0}"
"""

GOOD = {
    "IOR_WRITE": "ior_easy_write_D2_wearout_tmp",
    "IOR_READ": "ior_easy_read_after_D2_tmp",
    "MDTEST_CREATE": "mdtest_hard_create_W2_tmp",
    "MDTEST_STAT": "mdtest_hard_stat_x_tmp",
    "MDTEST_READ": "mdtest_hard_read_x_tmp",
    "MDTEST_REMOVE": "mdtest_hard_remove_x_tmp",
}


@pytest.fixture(scope="module")
def fake_tools(cluster, sb_home):
    """The wrapper module, a site config whose Open MPI environment loads it, and a
    tmpfs scratch target (reads there always come from memory)."""
    root = reachable_tmpdir("sb-fake-ior-")
    bindir, moddir = root / "bin", root / "modulefiles" / "ior-wrapper"
    bindir.mkdir()
    moddir.mkdir(parents=True)
    for name, text in (("ior", IOR_WRAPPER), ("mdtest", MDTEST_WRAPPER)):
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    (moddir / "1.0.lua").write_text(
        f'whatis("IOR stand-in for tests")\nprepend_path("PATH", "{bindir}")\n'
    )
    shm = os.path.join("/dev/shm", root.name)
    os.makedirs(shm)
    site = (REPO / "site_configs" / "local.py").read_text()
    env_extras = '"extras": {"mpi": "openmpi"},'
    assert env_extras in site
    site = site.replace(
        env_extras,
        (
            '"extras": {"mpi": "openmpi", "ior": "module:ior-wrapper/1.0", "ior_mpi": "openmpi"},'
            f'\n            "env_vars": [["MODULEPATH", "$MODULEPATH:{root / "modulefiles"}"]],'
        ),
    )
    marker = ']), system="embedded-local"'
    assert marker in site
    site = site.replace(
        marker,
        f'    ScratchTarget(name="shm", path="{shm}", kind="tmpfs", '
        f'partitions=["batch"]),\n{marker}',
    )
    (root / "site.py").write_text(site)
    yield root
    shutil.rmtree(root)
    shutil.rmtree(shm, ignore_errors=True)


def run_checks(root, name, target, stonewall_s, exit_code=0, **cases):
    """One `scratchbench run` of IOR easy and mdtest hard with the wrappers replaying
    `cases`; returns (exit code, stdout, {check: report entry})."""
    scenario = root / f"{name}.sh"
    chosen = dict(GOOD, **cases)
    scenario.write_text(
        "".join(f"{k}={FIXTURES / v}\n" for k, v in chosen.items()) + f"EXIT={exit_code}\n"
    )
    workloads = yaml.safe_load((REPO / "reframe_checks" / "workloads.yaml").read_text())
    workloads["ior"]["quick"].update(block="8g", reps=1, stonewall_s=stonewall_s)
    workloads["mdtest"]["quick"].update(files_per_node=400000, reps=1, stonewall_s=stonewall_s)
    (root / f"{name}.yaml").write_text(yaml.safe_dump(workloads))
    env = {"SB_FAKE_SCENARIO": str(scenario), "SCRATCHBENCH_WORKLOADS": str(root / f"{name}.yaml")}
    result = scratchbench(
        "run",
        "--site",
        str(root / "site.py"),
        "--tag",
        "quick",
        "--target",
        target,
        "--name",
        "IOR.*easy",
        "--name",
        "Mdtest.*hard",
        "--no-start",
        env=env,
        timeout=900,
    )
    report = re.search(r"^run report:\s+(\S+)", result.stdout, re.M)
    assert report, result.stdout[-3000:] + result.stderr[-2000:]
    cases = {}
    for run in json.loads(open(report.group(1)).read())["runs"]:
        for case in run["testcases"]:
            if case["environ"] == "gnu-openmpi" and case["name"].startswith(("IOR ", "Mdtest ")):
                cases[case["name"].split()[0]] = case
    assert set(cases) == {"IOR", "Mdtest"}, result.stdout[-3000:]
    return result.returncode, result.stdout, cases


def test_replayed_real_runs_pass_with_the_tools_figures(fake_tools):
    code, out, cases = run_checks(fake_tools, "good", "localscratch", stonewall_s=2)
    assert code == 0, out[-3000:]
    ior, mdtest = cases["IOR"], cases["Mdtest"]
    assert ior["result"] == "pass" and mdtest["result"] == "pass", out[-3000:]
    figures = {k.split(":")[-1]: v[0] for k, v in ior["perfvalues"].items()}
    assert figures == {"write_bw": 1101.0065, "read_bw": 2349.4889}, "the fixtures' JSON"
    figures = {k.split(":")[-1]: v[0] for k, v in mdtest["perfvalues"].items()}
    assert figures == {
        "create_rate": 2120.922,
        "stat_rate": 1108836.17,
        "read_rate": 24874.285,
        "remove_rate": 22183.96,
    }, "the fixtures' SUMMARY tables"

    # the phase behind each figure, as the tools timed it: IOR's totalTime, mdtest's
    # phase time in its rank details (the "all" row)
    def ior_time(case):
        entry = json.loads((FIXTURES / case / "summary.json").read_text())["tests"][0]
        return min(r["totalTime"] for r in entry["Results"] if r["access"] in ("write", "read"))

    def mdtest_time(case, column):
        header, *rows = [
            ln.split(",") for ln in (FIXTURES / case / "summary.csv").read_text().splitlines() if ln
        ]
        return float(next(r for r in rows if r[0] == "all")[header.index(column)])

    assert ior["phase_seconds"] == {
        "write_bw": ior_time(GOOD["IOR_WRITE"]),
        "read_bw": ior_time(GOOD["IOR_READ"]),
    }
    assert mdtest["phase_seconds"] == {
        "create_rate": mdtest_time(GOOD["MDTEST_CREATE"], "time-File creation"),
        "stat_rate": mdtest_time(GOOD["MDTEST_STAT"], "time-File stat"),
        "read_rate": mdtest_time(GOOD["MDTEST_READ"], "time-File read"),
        "remove_rate": mdtest_time(GOOD["MDTEST_REMOVE"], "time-File removal"),
    }
    assert ior["cache_method"] == "fadvise" and ior["cache_resident"] == {"read-1": 0.0}
    assert mdtest["cache_resident"] == {"read-1": 0.0}
    assert ior["tool_source"] == "module:ior-wrapper/1.0" and ior["tool_mpi"] == "openmpi"
    assert ior["stonewall_s"] == 2.0 and ior["job_exitcode"] == 0
    skipped = [ln for ln in out.splitlines() if ln.startswith("skipped")]
    assert any("does not say which MPI" in ln or "not on PATH" in ln for ln in skipped), (
        "the MPICH environment has no IOR and is skipped with the reason"
    )


def test_non_zero_tool_exit_fails_after_a_complete_run(fake_tools):
    code, out, cases = run_checks(fake_tools, "exit3", "localscratch", stonewall_s=2, exit_code=3)
    assert code != 0
    for name, phase in (("IOR", "write-1"), ("Mdtest", "create-1")):
        case = cases[name]
        assert case["result"] == "fail" and case["fail_phase"] == "sanity"
        tool = name.lower()
        assert f"{tool} exited with code 3 in phase {phase}" in case["fail_reason"]
        assert case["job_exitcode"] == 3, "the batch job exits with the tool's status"


def test_phase_shorter_than_its_stonewall_fails(fake_tools):
    code, out, cases = run_checks(
        fake_tools,
        "short",
        "localscratch",
        stonewall_s=5,
        IOR_WRITE="ior_easy_write_D5_too_short_tmp",
        MDTEST_CREATE="mdtest_hard_create_W5_too_short_tmp",
    )
    assert code != 0
    assert (
        "write-1: a write phase took 0.016 s, shorter than its 5 s stonewall"
        in cases["IOR"]["fail_reason"]
    )
    assert (
        "create-1: the create phase took 0.197 s, shorter than its 5 s stonewall"
        in cases["Mdtest"]["fail_reason"]
    )


def test_read_served_from_memory_fails(fake_tools):
    """On tmpfs POSIX_FADV_DONTNEED cannot evict anything: the read would be a memory
    figure, not a file-system one."""
    code, out, cases = run_checks(fake_tools, "cached", "shm", stonewall_s=2)
    assert code != 0
    for name in ("IOR", "Mdtest"):
        reason = cases[name]["fail_reason"]
        assert re.search(
            r"phase read-1 would read from the page cache: 100% of the \d+ bytes "
            "stayed resident after the cache drop",
            reason,
        ), reason


@pytest.fixture(scope="module")
def mpich_tool(kernels):
    """An `ior` and `mdtest` on PATH that are MPICH binaries (the kernel, renamed)."""
    root = reachable_tmpdir("sb-mpich-ior-")
    for name in ("ior", "mdtest"):
        shutil.copy(kernels["mpich"][0], root / name)
    yield root
    shutil.rmtree(root)


def test_path_route_skips_environments_of_another_mpi(mpich_tool):
    """An MPICH-built ior on PATH: the Open MPI environment skips with the reason, the
    MPICH one uses it (ReFrame's dry run: nothing is launched)."""
    prefix = reachable_tmpdir("sb-path-ior-")
    env = dict(
        os.environ,
        SCRATCHBENCH_HOME=str(prefix),
        PATH=f"{mpich_tool}:{os.environ['PATH']}",
        LMOD_CMD="/usr/share/lmod/lmod/libexec/lmod",
        MODULEPATH=str(REPO / "site_configs" / "modulefiles"),
    )
    cmd = [
        str(VENV_BIN / "reframe"),
        "-C",
        str(REPO / "site_configs" / "local.py"),
        "-c",
        str(REPO / "reframe_checks"),
        "--system",
        "embedded",
        "-t",
        "^quick$",
        "-n",
        "IOR",
        "--dry-run",
        "-s",
        str(prefix / "stage"),
        "-o",
        str(prefix / "output"),
        "--prefix",
        str(prefix),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert re.search(
        r"SKIP.*IORProvider ~embedded:batch\+gnu-openmpi.*\[IOR: "
        + re.escape(f"{mpich_tool}/ior")
        + r" is built with MPICH \(libmpich\.so"
        r"[^)]*\), environment gnu-openmpi uses Open MPI\]",
        result.stdout,
    ), result.stdout[-3000:]
    stage = prefix / "stage" / "embedded" / "batch"
    assert list((stage / "gnu-mpich").glob("IOR_*")), "the MPICH environment runs it"
    assert not list((stage / "gnu-openmpi").glob("IOR_*"))
    shutil.rmtree(prefix)


def run_with_ior_route(home, extras):
    """`scratchbench run --local` of the quick IOR and mdtest checks on a copy of the
    local site whose Open MPI environment has these extras; no ior, mdtest or spack on
    PATH (none is installed here).  Returns (result, ReFrame's run report)."""
    assert not any(shutil.which(tool) for tool in ("ior", "mdtest", "spack"))
    text = (REPO / "site_configs" / "local.py").read_text()
    old = '"extras": {"mpi": "openmpi"},'
    assert old in text
    (home / "site.py").write_text(text.replace(old, f'"extras": {extras!r},'))
    result = scratchbench(
        "run",
        "--site",
        str(home / "site.py"),
        "--tag",
        "quick",
        "--local",
        "--name",
        "IOR",
        "--name",
        "Mdtest",
        env={"SCRATCHBENCH_HOME": str(home)},
    )
    report = re.search(r"^run report:\s+(\S+)", result.stdout, re.M)
    assert report, result.stdout[-3000:] + result.stderr[-2000:]
    return result, json.loads(open(report.group(1)).read())


@pytest.mark.parametrize(
    "ior,cause",
    [
        (
            "spack",
            "IOR: environment gnu-openmpi asks for a Spack build (extras 'ior': 'spack') "
            "but 'spack' is not on PATH: load Spack's setup-env.sh before `scratchbench run`",
        ),
        (
            "module:nosuch/1.0",
            "IOR: module nosuch/1.0 cannot be loaded (could not execute module "
            "operation: command '/usr/share/lmod/lmod/libexec/lmod python show "
            "nosuch/1.0' failed with exit code 1: Lmod Warning: Failed to find "
            'the following module(s): "nosuch/1.0" in your MODULEPATH)',
        ),
        (
            "path",
            "IOR/mdtest not available: ior and mdtest not on PATH (environment gnu-openmpi "
            "asks for it with extras 'ior': 'path')",
        ),
        (
            "spak",
            "IOR: extras 'ior' of environment gnu-openmpi is 'spak'; expected 'spack', "
            "'module:NAME' or 'path'",
        ),
    ],
)
def test_a_route_the_site_asks_for_that_does_not_work_fails(tmp_path, ior, cause):
    """Asked for and missing is a failure with its cause, never a green run of skips;
    the checks that needed the tool name it once, and the counts are ReFrame's."""
    result, report = run_with_ior_route(tmp_path, {"mpi": "openmpi", "ior": ior})
    assert result.returncode == 1, result.stdout[-3000:]
    failed = [ln for ln in result.stdout.splitlines() if ln.startswith("FAILED:")]
    assert failed == [
        "FAILED:  IORProvider [embedded-local:default+gnu-openmpi] (setup): "
        f"tool unavailable error: {cause}"
    ], result.stdout[-3000:]
    skipped = [ln for ln in result.stdout.splitlines() if ln.startswith("skipped")]
    assert skipped == [
        "skipped (4): needs IORProvider [embedded-local:default+gnu-openmpi], which failed in "
        "setup (see its failure): IOR on localscratch [gnu-openmpi]; Mdtest on "
        "localscratch [gnu-openmpi]"
    ], result.stdout[-3000:]
    info = report["session_info"]
    assert (info["num_failures"], info["num_skipped"], info["num_aborted"]) == (1, 4, 0)
    assert "0 passed, 1 failed, 4 skipped" in result.stdout.splitlines()[-1]


def test_an_environment_that_asks_for_no_tool_skips_without_one(tmp_path):
    """Only the default route may skip: nothing asked for, nothing on PATH."""
    result, report = run_with_ior_route(tmp_path, {"mpi": "openmpi"})
    assert result.returncode == 0, result.stdout[-3000:]
    assert not [ln for ln in result.stdout.splitlines() if ln.startswith("FAILED")]
    assert re.search(
        r"^skipped \(5\): IOR/mdtest not available: ior and mdtest not on PATH, "
        r"no module or Spack build configured",
        result.stdout,
        re.M,
    ), result.stdout[-3000:]
    assert report["session_info"]["num_skipped"] == 5
    assert result.stdout.splitlines()[-1] == "0 passed, 0 failed, 5 skipped"


def test_run_builds_a_spack_environment_outside_the_checkout(tmp_path):
    """`scratchbench run --spack-env FILE`: the provider stages that file and the site
    file it includes from beside it, not the checkout's.  Spack is in no package
    registry, so a stand-in `spack` that fails stands in for a broken build: the
    provider fails with the build's cause and the checks needing it say so."""
    envdir, bindir = tmp_path / "site-spack", tmp_path / "bin"
    envdir.mkdir()
    bindir.mkdir()
    shutil.copy(REPO / "spack.yaml", envdir / "spack.yaml")
    (envdir / "spack-externals.yaml").write_text("packages:\n  mpi:\n    buildable: false\n")
    (bindir / "spack").write_text("#!/bin/sh\necho 'stand-in spack' >&2; exit 1\n")
    (bindir / "spack").chmod(0o755)
    text = (REPO / "site_configs" / "local.py").read_text()
    (tmp_path / "site.py").write_text(
        text.replace(
            '"extras": {"mpi": "openmpi"},', '"extras": {"mpi": "openmpi", "ior": "spack"},'
        )
    )
    result = scratchbench(
        "run",
        "--site",
        str(tmp_path / "site.py"),
        "--tag",
        "quick",
        "--local",
        "--name",
        "IOR",
        "--spack-env",
        str(envdir / "spack.yaml"),
        env={"SCRATCHBENCH_HOME": str(tmp_path / "home"), "PATH": f"{bindir}:{os.environ['PATH']}"},
    )
    assert result.returncode == 1, result.stdout[-3000:]
    staged = list((tmp_path / "home").glob("results/runs/*/stage/*/*/*/IORProvider_*/spack_env"))
    assert len(staged) == 1, result.stdout[-3000:]
    assert (staged[0] / "spack-externals.yaml").read_text() == (
        envdir / "spack-externals.yaml"
    ).read_text()
    build_err = staged[0].parent / "rfm_build.err"
    assert (
        "FAILED:  IORProvider [embedded-local:default+gnu-openmpi] (compile_wait): build "
        f"error: build job failed with exit code: 1; stand-in spack (the end of {build_err})"
        in result.stdout.splitlines()
    ), result.stdout[-3000:]
    assert result.stdout.splitlines()[-1] == "0 passed, 1 failed, 2 skipped"


def spack_env(tmp_path, text, files=None):
    """A Spack environment directory holding spack.yaml with `text` and `files`
    ({relative path: content})."""
    envdir = tmp_path / "env"
    envdir.mkdir()
    (envdir / "spack.yaml").write_text(text)
    for name, content in (files or {}).items():
        (envdir / name).parent.mkdir(parents=True, exist_ok=True)
        (envdir / name).write_text(content)
    return envdir / "spack.yaml"


@pytest.mark.parametrize(
    "text,problem",
    [
        (
            "spack:\n  specs: [ior@4.0.0\n",
            "not valid YAML (line 3, column 1: expected ',' or ']', but got '<stream end>')",
        ),
        (
            "- spack:\n    specs: [ior]\n",
            "expected a mapping 'spack:' holding specs (and include), found a list at the top level",
        ),
        (
            "spack:\n",
            "expected a mapping 'spack:' holding specs (and include), found an empty 'spack:'",
        ),
        (
            "packages: {}\n",
            "expected a mapping 'spack:' holding specs (and include), found no 'spack:' mapping",
        ),
        (
            "spack:\n  include: spack-externals.yaml\n  specs: [ior]\n",
            "'include' must be a list of paths, found 'spack-externals.yaml' (write it as "
            "'include: [spack-externals.yaml]')",
        ),
    ],
)
def test_malformed_spack_environment_is_one_line(tmp_path, text, problem):
    from reframe_checks.lib.tools import SpackEnvironmentError, stage_spack_environment

    spack_yaml = spack_env(tmp_path, text, {"spack-externals.yaml": "packages: {}\n"})
    with pytest.raises(SpackEnvironmentError) as raised:
        stage_spack_environment(str(spack_yaml), str(tmp_path / "staged"))
    assert str(raised.value) == f"Spack environment {spack_yaml}: {problem}"


def test_spack_includes_spack_resolves_are_left_to_it(tmp_path):
    """`$spack/...`, `${user}`, URLs and git includes are Spack's to resolve; `$env/`
    is the environment's directory, so its file is staged like a relative one."""
    from reframe_checks.lib.tools import stage_spack_environment

    spack_yaml = spack_env(
        tmp_path,
        (
            "spack:\n  include:\n  - $spack/etc/spack/site-mpi.yaml\n"
            "  - path: ${user}/x.yaml\n  - https://example.org/site.yaml\n"
            "  - git: https://example.org/config.git\n    branch: main\n    paths: [a.yaml]\n"
            "  - $env/site/externals.yaml\n  - spack-externals.yaml\n  specs: [ior@4.0.0]\n"
        ),
        {"spack-externals.yaml": "packages: {}\n", "site/externals.yaml": "mirrors: {}\n"},
    )
    staged = stage_spack_environment(str(spack_yaml), str(tmp_path / "staged"))
    assert staged == ["spack.yaml", "site/externals.yaml", "spack-externals.yaml"]
    assert (tmp_path / "staged" / "site" / "externals.yaml").read_text() == "mirrors: {}\n"


def test_spack_yaml_example_externals_stage_with_it(tmp_path):
    """The spack-externals.yaml that spack.yaml's comments show is valid YAML with the
    MPI external written by hand and a mirror, and stages with the repository's file."""
    from reframe_checks.lib.tools import stage_spack_environment

    comments = (REPO / "spack.yaml").read_text().split("\nspack:\n")[0].splitlines()
    start = comments.index("#   packages:")
    example = "\n".join(
        ln[4:]
        for ln in comments[start:]
        if ln.startswith("#   ")
        and not ln.startswith("#   `")
        and not ln.startswith("#   Write")
        and ln[4:5] in (" ", "#", "p", "m")
    )
    externals = yaml.safe_load(example)
    assert externals["packages"]["openmpi"]["externals"] == [
        {"spec": "openmpi@4.1.4", "prefix": "/usr"}
    ]
    assert externals["packages"]["mpi"] == {"buildable": False}
    assert list(externals["mirrors:"]) == ["local"]
    shutil.copy(REPO / "spack.yaml", tmp_path / "spack.yaml")
    (tmp_path / "spack-externals.yaml").write_text(example)
    assert stage_spack_environment(str(tmp_path / "spack.yaml"), str(tmp_path / "staged")) == [
        "spack.yaml",
        "spack-externals.yaml",
    ]


def test_malformed_spack_environment_fails_the_run_in_one_line(tmp_path):
    """Through ReFrame: the provider's failure is the one line, no source excerpt."""
    spack_yaml = spack_env(tmp_path, "spack:\n  include: spack-externals.yaml\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "spack").write_text("#!/bin/sh\nexit 1\n")  # looked for, never reached
    (bindir / "spack").chmod(0o755)
    text = (REPO / "site_configs" / "local.py").read_text()
    (tmp_path / "site.py").write_text(
        text.replace(
            '"extras": {"mpi": "openmpi"},', '"extras": {"mpi": "openmpi", "ior": "spack"},'
        )
    )
    result = scratchbench(
        "run",
        "--site",
        str(tmp_path / "site.py"),
        "--tag",
        "quick",
        "--local",
        "--name",
        "IOR",
        "--spack-env",
        str(spack_yaml),
        env={"SCRATCHBENCH_HOME": str(tmp_path / "home"), "PATH": f"{bindir}:{os.environ['PATH']}"},
    )
    assert result.returncode == 1, result.stdout[-3000:]
    lines = result.stdout.splitlines()
    failed = [i for i, ln in enumerate(lines) if ln.startswith("FAILED:")]
    assert len(failed) == 1
    assert lines[failed[0]] == (
        "FAILED:  IORProvider [embedded-local:default+gnu-openmpi] (compile): spack environment "
        f"error: Spack environment {spack_yaml}: 'include' must be a list of paths, found "
        "'spack-externals.yaml' (write it as 'include: [spack-externals.yaml]')"
    )
    assert lines[failed[0] + 1].startswith("scheduler:"), "nothing follows the one line"
