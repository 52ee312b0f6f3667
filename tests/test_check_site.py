"""`scratchbench check-site`: a site config's readiness, on the real embedded cluster."""

import re

from conftest import REPO, reachable_tmpdir, scratchbench


def check_site(site, env=None):
    result = scratchbench("check-site", str(site), "--no-start", env=env, timeout=1200)
    lines = [ln for ln in result.stdout.splitlines() if re.match(r"(ok|skip|FAIL) ", ln)]
    print(result.stdout)  # shown with pytest -s: what a site reads
    return result, lines


def test_check_site_says_the_embedded_site_is_ready(cluster, sb_home):
    result, lines = check_site("local")
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    # every module found once before ReFrame starts: no Lmod calls before each job
    assert "Lmod cannot find" not in result.stderr
    for env in ("gnu-openmpi", "gnu-mpich"):
        assert re.search(
            rf"^ok     MPIReady \[batch {env}\]: modules load, mpicc\.\w+ builds "
            r"the kernel, 2 ranks ran it$",
            result.stdout,
            re.M,
        ), result.stdout
        for target, path in (
            ("sanscratch", r"\$MYSANSCRATCH"),
            ("localscratch", r"\$LOCALSCRATCH"),
        ):
            assert re.search(
                rf"^ok     TargetReady {target} \[batch {env}\]: {path} is "
                r"writable from a job, [\d.]+ [KMGT]iB free$",
                result.stdout,
                re.M,
            ), result.stdout
        assert re.search(
            rf"^skip   ToolReady \[batch {env}\]: IOR/mdtest not available", result.stdout, re.M
        )
    assert not [ln for ln in lines if ln.startswith("FAIL")]
    assert result.stdout.splitlines()[-1].startswith("site local: ready (ReFrame's output: ")
    assert not list(sb_home.glob("results/runs/*/site*")), "nothing of it in the suite's runs"


def test_check_site_names_a_target_not_writable_and_a_missing_module(cluster, sb_home):
    root = reachable_tmpdir("sb-check-site-")
    (root / "a-file").write_text("not a directory\n")
    site = (REPO / "site_configs" / "local.py").read_text()
    assert '"mpich/4.0.2"' in site
    site = site.replace('"mpich/4.0.2"', '"mpich/9.9"')
    marker = ']), system="embedded-local"'
    assert marker in site
    site = site.replace(
        marker,
        f'    ScratchTarget(name="typo", path="{root}/a-file/scratch", '
        f'kind="local-disk", partitions=["batch"]),\n{marker}',
    )
    (root / "site.py").write_text(site)
    result, lines = check_site(root / "site.py")
    assert result.returncode == 1, result.stdout + result.stderr[-2000:]
    failed = [ln for ln in lines if ln.startswith("FAIL")]
    assert any(
        ln.startswith(
            "FAIL   TargetReady typo [batch gnu-openmpi] (sanity): sanity "
            f"error: scratch target typo ({root}/a-file/scratch) is not "
            "writable from a job on embedded:batch: mktemp: failed to "
            "create directory"
        )
        and ln.endswith(
            "fix: make the directory exist and be writable by this user "
            "on the compute nodes, or correct its path in the site config"
        )
        for ln in failed
    ), result.stdout
    missing = (
        "environ error: could not execute module operation: command "
        "'/usr/share/lmod/lmod/libexec/lmod python show mpich/9.9' failed with exit "
        'code 1: Lmod Warning: Failed to find the following module(s): "mpich/9.9" in '
        "your MODULEPATH; fix: the module's name, or its path, in the environment's "
        "'modules' in the site config"
    )
    assert f"FAIL   KernelBuild [batch gnu-mpich] (compile): {missing}" in failed, result.stdout
    # the embedded site turns ReFrame's module lookups off; the run turned them back on
    assert (
        "scratchbench: warning: Lmod cannot find mpich/9.9 (environment gnu-mpich): ReFrame "
        "looks each module up before every job of this run" in result.stderr
    ), result.stderr[-2000:]
    assert f"FAIL   TargetReady sanscratch [batch gnu-mpich] (run): {missing}" in failed
    assert re.search(
        r"^skip   MPIReady \[batch gnu-mpich\]: needs KernelBuild "
        r"\[embedded:batch\+gnu-mpich\], which failed",
        result.stdout,
        re.M,
    )
    assert re.search(r"^ok     MPIReady \[batch gnu-openmpi\]", result.stdout, re.M)
    assert re.search(r"^site \S+site\.py: \d+ problem\(s\) to fix", result.stdout.splitlines()[-1])
