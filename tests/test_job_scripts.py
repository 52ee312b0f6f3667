"""The job scripts scratchbench generates, checked exactly, for Slurm and for LSF.

LSF cannot run here, so the example LSF site (seed 004) is exercised with ReFrame's
--dry-run, which writes every job script without submitting it.
"""

import os
import re
import shutil
import subprocess

import pytest

from conftest import REPO, VENV_BIN, reachable_tmpdir


def dry_run(site, system, prefix, tag="quick", names=()):
    env = dict(os.environ)
    env.update(
        SCRATCHBENCH_HOME=str(prefix),
        LMOD_CMD="/usr/share/lmod/lmod/libexec/lmod",
        # the example sites name an 'openmpi/4.1.4' module: ours stands in for it
        MODULEPATH=str(REPO / "site_configs" / "modulefiles"),
        RFM_REFERENCE_PREFIX=str(REPO / "site_configs" / "references"),
    )
    cmd = [
        str(VENV_BIN / "reframe"),
        "-C",
        str(REPO / "site_configs" / f"{site}.py"),
        "-c",
        str(REPO / "reframe_checks"),
        "--system",
        system,
        "-t",
        f"^{tag}$",
        "-S",
        f"workload_tag={tag}",
        "--dry-run",
        "--prefix",
        str(prefix),
        "-s",
        str(prefix / "stage"),
        "-o",
        str(prefix / "output"),
    ]
    for name in names:
        cmd += ["-n", name]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    scripts = {}
    for path in (prefix / "stage").rglob("rfm_job.sh"):
        test, environ, partition = path.parts[-2], path.parts[-3], path.parts[-4]
        scripts[test, partition, environ] = path.read_text()
    return scripts


@pytest.fixture(scope="module")
def lsf_scripts():
    prefix = reachable_tmpdir("sb-lsf-")
    return dry_run("example_lsf", "greentail", prefix)


@pytest.fixture(scope="module")
def slurm_scripts():
    prefix = reachable_tmpdir("sb-slurm-")
    return dry_run("local", "embedded", prefix)


def test_every_lsf_job_is_exclusive_and_queued(lsf_scripts):
    assert len(lsf_scripts) >= 40
    for (name, partition, _), script in lsf_scripts.items():
        assert "#BSUB -x" in script.splitlines(), name
        assert f"#BSUB -q {partition}" in script.splitlines(), name
        assert "-nnodes" not in script, "the CSM dialect must never appear"


def test_multi_node_lsf_job_uses_span_ptile(lsf_scripts):
    sweep = {k: s for k, s in lsf_scripts.items() if k[0].startswith("KernelNodeSweep")}
    multi = [s for s in sweep.values() if "-np 32 " in s]
    assert multi, "the hp12 node sweep has a 4-node (32-task) variant"
    lines = multi[0].splitlines()
    assert lines[:9] == [
        "#!/bin/bash",
        lines[1],  # -J <unique name>
        "#BSUB -o rfm_job.out",
        "#BSUB -e rfm_job.err",
        "#BSUB -n 32",
        '#BSUB -R "span[ptile=8]"',
        "#BSUB -W 10",  # quick's time limit, in minutes
        lines[7],  # -q hp12 or ehwfd
        "#BSUB -x",
    ]
    assert re.match(r"#BSUB -J rfm_KernelNodeSweep_[0-9a-f]{8}$", lines[1])
    assert re.search(r"^mpirun -np 32 \S+scratchbench-kernel iotest ", multi[0], re.M)


def test_lsf_node_sweep_follows_partition_sizes(lsf_scripts):
    ptiles = {}
    for (name, partition, _), script in lsf_scripts.items():
        if name.startswith("KernelNodeSweep"):
            n = int(re.search(r"#BSUB -n (\d+)", script).group(1))
            ptiles.setdefault(partition, set()).add(n // 8)
    assert ptiles["hp12"] == {1, 2, 4, 8, 16, 32}, "halving from 32 nodes down to 1"
    assert ptiles["ehwfd"] == {1, 2, 4}, "variants larger than the 4-node queue are skipped"


def test_lsf_staging_uses_mysanscratch(lsf_scripts):
    staging = [
        s
        for (n, _, _), s in lsf_scripts.items()
        if n.startswith("StageInOut") and "$MYSANSCRATCH" in s
    ]
    assert staging and all('bash stage.sh "$MYSANSCRATCH"' in s for s in staging)


def test_every_slurm_job_is_exclusive_with_the_right_layout(slurm_scripts):
    assert len(slurm_scripts) >= 40
    for (name, partition, _), script in slurm_scripts.items():
        lines = script.splitlines()
        assert "#SBATCH --exclusive" in lines, name
        assert "#SBATCH --partition=batch" in lines, name
        tasks = re.search(r"#SBATCH --ntasks=(\d+)", script)
        per_node = re.search(r"#SBATCH --ntasks-per-node=(\d+)", script)
        if name.startswith(("Kernel", "IOR", "Mdtest")):
            assert tasks and per_node, name
            # KernelSelfScale's driver runs in the batch script and launches the kernel
            # per sweep with the launcher it is given.
            launch = re.search(r"^srun (\S+)|--launcher '?srun ", script, re.M)
            assert launch, f"{name}: MPI jobs start through srun"
        else:
            assert tasks and tasks.group(1) == "1", name


def test_slurm_two_node_sweep(slurm_scripts):
    two = [
        s
        for (n, _, _), s in slurm_scripts.items()
        if n.startswith("KernelNodeSweep") and "#SBATCH --ntasks=4" in s
    ]
    assert two, "a 2-node x 2-task variant exists on the embedded cluster"
    assert "#SBATCH --ntasks-per-node=2" in two[0] and "--shift auto" in two[0]


def test_more_ranks_than_a_node_has_cpus_are_asked_as_slurm_takes_them(cluster):
    """Nightly's self-scaling runs 4 ranks on one node, whose CPUs here are 2: Slurm
    refuses --ntasks-per-node=4 even with --overcommit ("Requested node configuration
    is not available"); the nodes and the tasks it takes, and the cluster says so."""
    prefix = reachable_tmpdir("sb-slurm-nightly-")
    dry_run("local", "embedded", prefix, tag="nightly", names=["KernelSelfScale"])
    jobs = [
        p for p in (prefix / "stage").rglob("rfm_job.sh") if "selfscale_search" in p.read_text()
    ]
    assert len(jobs) == 4, jobs  # node-local disk and SAN, with each MPI
    for job in jobs:
        lines = job.read_text().splitlines()
        assert {"#SBATCH --ntasks=4", "#SBATCH --nodes=1", "#SBATCH --overcommit"} <= set(lines)
        assert not any("--ntasks-per-node" in line for line in lines), lines
        env = dict(os.environ, SLURM_CONF=str(cluster.slurm_conf))
        result = subprocess.run(
            ["sbatch", "--test-only", job.name],
            cwd=job.parent,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert result.returncode == 0 and "to start" in result.stderr, result.stderr
        # what the old layout asked is refused, so the test can tell them apart
        refused = subprocess.run(
            ["sbatch", "--test-only", "--ntasks-per-node=4", job.name],
            cwd=job.parent,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert refused.returncode != 0, refused.stderr
    shutil.rmtree(prefix, ignore_errors=True)


def ior_dry_run(prefix, extras, *extra_args, env_vars=None, path_dirs=(), expect_failure=False):
    """ReFrame's dry run of the quick IOR checks, on a copy of the local site whose
    Open MPI environment has these extras; returns (provider stage, {shape: job script}),
    or ReFrame's result when it is expected to fail."""
    site = prefix / "site.py"
    text = (REPO / "site_configs" / "local.py").read_text()
    old = '"extras": {"mpi": "openmpi"},'
    assert old in text
    new = f'"extras": {extras!r},'
    if env_vars:
        new += f'\n            "env_vars": {env_vars!r},'
    site.write_text(text.replace(old, new))
    env = dict(
        os.environ,
        SCRATCHBENCH_HOME=str(prefix),
        LMOD_CMD="/usr/share/lmod/lmod/libexec/lmod",
        PATH=":".join([*map(str, path_dirs), os.environ["PATH"]]),
        MODULEPATH=str(REPO / "site_configs" / "modulefiles"),
    )
    cmd = [
        str(VENV_BIN / "reframe"),
        "-C",
        str(site),
        "-c",
        str(REPO / "reframe_checks"),
        "--system",
        "embedded",
        "-t",
        "^quick$",
        "-n",
        "IOR",
        "-p",
        "gnu-openmpi",
        "--dry-run",
        *extra_args,
        "-s",
        str(prefix / "stage"),
        "-o",
        str(prefix / "output"),
        "--prefix",
        str(prefix),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if expect_failure:
        assert result.returncode != 0, result.stdout[-3000:]
        return result
    assert result.returncode == 0, result.stdout[-3000:]
    stage = prefix / "stage" / "embedded" / "batch" / "gnu-openmpi"
    providers = list(stage.glob("IORProvider_*"))
    assert len(providers) == 1, result.stdout[-3000:]
    jobs = {}
    for job in stage.glob("IOR_*/rfm_job.sh"):
        text = job.read_text()
        if "$LOCALSCRATCH/" in text:
            jobs["hard" if "ior_file_hard" in text else "easy"] = text
    assert set(jobs) == {"easy", "hard"}, result.stdout[-3000:]
    return providers[0], jobs


IOR_PHASES = (
    "-a POSIX -k -i 1 -O summaryFormat=JSON {mode} -O summaryFile=ior-{op}-{rep}.json "
    '-F -t 2m -b 16m -o "$SB_WORKDIR/data/ior_file_easy"'
)


def test_ior_module_job_script(tmp_path):
    """module:NAME, found through MODULEPATH set in the environment's env_vars: the job
    loads it, runs write and read per repetition, records every exit status, drops the
    page cache before each read, removes its directory and exits with the first
    failure (IOR cannot run here: ior_mpi states the MPI of the stand-in)."""
    prefix = reachable_tmpdir("sb-ior-module-")
    bindir, moddir = prefix / "bin", prefix / "modulefiles" / "ior"
    bindir.mkdir()
    moddir.mkdir(parents=True)
    for tool in ("ior", "mdtest"):
        (bindir / tool).write_text("#!/bin/sh\nexit 1\n")
        (bindir / tool).chmod(0o755)
    (moddir / "4.1.0.lua").write_text(f'prepend_path("PATH", "{bindir}")\n')
    _, jobs = ior_dry_run(
        prefix,
        {"mpi": "openmpi", "ior": "module:ior/4.1.0", "ior_mpi": "openmpi"},
        env_vars=[["MODULEPATH", f"$MODULEPATH:{prefix / 'modulefiles'}"]],
    )
    lines = jobs["easy"].splitlines()
    body = lines[lines.index("module load openmpi/4.1.4") :]
    drop = next(ln for ln in body if ln.startswith("sb_drop_cache()"))
    status = next(ln for ln in body if ln.startswith("sb_status()"))
    assert body == [
        "module load openmpi/4.1.4",
        f"export MODULEPATH=$MODULEPATH:{prefix / 'modulefiles'}",
        "module load ior/4.1.0",
        'SB_WORKDIR=$(mktemp -d "$LOCALSCRATCH/sbtool.XXXXXX") || exit 3',
        'mkdir "$SB_WORKDIR/data" || exit 3',
        "rm -f tool_status.txt cache_residency.txt",
        status,
        'sb_ok() { [ -z "$SB_FAILED" ]; }',
        drop,
        "srun ior " + IOR_PHASES.format(mode="-w -e", op="write", rep=1),
        "sb_status write-1",
        'if sb_ok; then sb_drop_cache read-1 "$SB_WORKDIR/data"; fi',
        "if sb_ok; then srun ior "
        + IOR_PHASES.format(mode="-r", op="read", rep=1)
        + "; sb_status read-1; fi",
        "if sb_ok; then srun ior "
        + IOR_PHASES.format(mode="-w -e", op="write", rep=2)
        + "; sb_status write-2; fi",
        'if sb_ok; then sb_drop_cache read-2 "$SB_WORKDIR/data"; fi',
        "if sb_ok; then srun ior "
        + IOR_PHASES.format(mode="-r", op="read", rep=2)
        + "; sb_status read-2; fi",
        'rm -rf -- "$SB_WORKDIR"',
        'exit "${SB_FAILED:-0}"',
    ]
    assert 'echo "$1 $rc" >> tool_status.txt' in status
    assert "dd if={} iflag=nocache count=0" in drop and "fincore --bytes" in drop
    assert "#SBATCH --exclusive" in jobs["easy"]
    assert "-t 47008 -b 47008 -s 256" in jobs["hard"]
    shutil.rmtree(prefix)


SITE_EXTERNALS = """packages:
  openmpi:
    externals: [{spec: openmpi@4.1.4, prefix: /usr}]
    buildable: false
  mpi:
    buildable: false
mirrors::
  local: file:///srv/mirror
"""


def test_ior_spack_stage_carries_the_site_includes(tmp_path):
    """extras {'ior': 'spack'}: the staged environment holds spack.yaml and the site's
    spack-externals.yaml it includes, the build script installs it, the job loads it.
    Spack itself cannot run in CI (it is in no package registry), so this checks what
    is generated; a stand-in `spack` on PATH is only looked for, never run."""
    prefix = reachable_tmpdir("sb-ior-spack-")
    envdir, bindir = prefix / "site-env", prefix / "bin"
    envdir.mkdir()
    bindir.mkdir()
    shutil.copy(REPO / "spack.yaml", envdir / "spack.yaml")
    (envdir / "spack-externals.yaml").write_text(SITE_EXTERNALS)
    (bindir / "spack").write_text("#!/bin/sh\necho 'not a real spack' >&2; exit 1\n")
    (bindir / "spack").chmod(0o755)
    provider, jobs = ior_dry_run(
        prefix,
        {"mpi": "openmpi", "ior": "spack"},
        "-S",
        f"spack_env_file={envdir / 'spack.yaml'}",
        path_dirs=[bindir],
    )
    staged = provider / "spack_env"
    assert sorted(p.name for p in staged.iterdir()) == ["spack-externals.yaml", "spack.yaml"]
    assert (staged / "spack.yaml").read_text() == (REPO / "spack.yaml").read_text()
    assert (staged / "spack-externals.yaml").read_text() == SITE_EXTERNALS
    build = (provider / "rfm_build.sh").read_text().splitlines()
    assert build[-1] == "spack -e spack_env install"
    assert f'eval "$(spack -e {staged} load --sh ior)"' in jobs["easy"].splitlines()
    assert re.search(r"^srun ior -a POSIX -k -i 1 -O summaryFormat=JSON -w -e ", jobs["easy"], re.M)
    shutil.rmtree(prefix)


def test_spack_include_missing_is_a_clear_error(tmp_path):
    """Without the site's spack-externals.yaml beside spack.yaml the provider fails,
    naming the file, instead of letting Spack plan another MPI from source."""
    prefix = reachable_tmpdir("sb-ior-spack-missing-")
    envdir, bindir = prefix / "site-env", prefix / "bin"
    envdir.mkdir()
    bindir.mkdir()
    shutil.copy(REPO / "spack.yaml", envdir / "spack.yaml")
    (bindir / "spack").write_text("#!/bin/sh\nexit 1\n")
    (bindir / "spack").chmod(0o755)
    result = ior_dry_run(
        prefix,
        {"mpi": "openmpi", "ior": "spack"},
        "-S",
        f"spack_env_file={envdir / 'spack.yaml'}",
        path_dirs=[bindir],
        expect_failure=True,
    )
    assert (
        f"{envdir / 'spack.yaml'} includes spack-externals.yaml, which is not at "
        f"{envdir / 'spack-externals.yaml'}: put the site's file there" in result.stdout
    ), result.stdout[-3000:]
    assert re.search(r"FAIL.*IORProvider ~embedded:batch\+gnu-openmpi", result.stdout)
    shutil.rmtree(prefix)
