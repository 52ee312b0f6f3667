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
    env.update(SCRATCHBENCH_HOME=str(prefix),
               LMOD_CMD="/usr/share/lmod/lmod/libexec/lmod",
               # the example sites name an 'openmpi/4.1.4' module: ours stands in for it
               MODULEPATH=str(REPO / "site_configs" / "modulefiles"),
               RFM_REFERENCE_PREFIX=str(REPO / "site_configs" / "references"))
    cmd = [str(VENV_BIN / "reframe"), "-C", str(REPO / "site_configs" / f"{site}.py"), "-c",
           str(REPO / "reframe_checks"), "--system", system, "-t", f"^{tag}$", "--dry-run",
           "--prefix", str(prefix), "-s", str(prefix / "stage"), "-o", str(prefix / "output")]
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
    assert lines[:8] == [
        "#!/bin/bash",
        lines[1],                         # -J <unique name>
        "#BSUB -o rfm_job.out",
        "#BSUB -e rfm_job.err",
        "#BSUB -n 32",
        '#BSUB -R "span[ptile=8]"',
        lines[6],                         # -q hp12 or ehwfd
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
    staging = [s for (n, _, _), s in lsf_scripts.items()
               if n.startswith("StageInOut") and "$MYSANSCRATCH" in s]
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
            launch = re.search(r"^srun (\S+)", script, re.M)
            assert launch, f"{name}: MPI jobs start through srun"
        else:
            assert tasks and tasks.group(1) == "1", name


def test_slurm_two_node_sweep(slurm_scripts):
    two = [s for (n, _, _), s in slurm_scripts.items()
           if n.startswith("KernelNodeSweep") and "#SBATCH --ntasks=4" in s]
    assert two, "a 2-node x 2-task variant exists on the embedded cluster"
    assert "#SBATCH --ntasks-per-node=2" in two[0] and "--shift auto" in two[0]


@pytest.mark.parametrize("source", ["spack", "module"])
def test_ior_provider_scripts(tmp_path, source):
    """How IOR is provided is per environment in the site config; Spack and IOR cannot
    run here, so check the scripts scratchbench generates for each source, exactly."""
    prefix = reachable_tmpdir("sb-ior-")
    site = prefix / "site.py"
    extras = '"extras": {"mpi": "openmpi", "ior": "spack"}' if source == "spack" else \
        '"extras": {"mpi": "openmpi", "ior": "module:ior/4.0.0"}'
    site.write_text((REPO / "site_configs" / "local.py").read_text()
                    .replace('"extras": {"mpi": "openmpi"}', extras))
    bindir, modules = prefix / "bin", prefix / "modulefiles" / "ior"
    bindir.mkdir()
    modules.mkdir(parents=True)
    # Never run in a dry run: only its presence on PATH is looked at.
    (bindir / "spack").write_text("#!/bin/sh\necho 'not a real spack' >&2; exit 1\n")
    (bindir / "spack").chmod(0o755)
    (modules / "4.0.0.lua").write_text('whatis("IOR 4.0.0")\nprepend_path("PATH", "/opt/ior/bin")\n')
    env = dict(os.environ, SCRATCHBENCH_HOME=str(prefix), LMOD_CMD="/usr/share/lmod/lmod/libexec/lmod",
               PATH=f"{bindir}:{os.environ['PATH']}",
               MODULEPATH=f"{prefix / 'modulefiles'}:{REPO / 'site_configs' / 'modulefiles'}")
    cmd = [str(VENV_BIN / "reframe"), "-C", str(site), "-c", str(REPO / "reframe_checks"),
           "--system", "embedded", "-t", "^quick$", "-n", "IOR", "-p", "gnu-openmpi",
           "--dry-run", "-s", str(prefix / "stage"), "-o", str(prefix / "output")]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:]
    stage = prefix / "stage" / "embedded" / "batch" / "gnu-openmpi"
    provider = next(stage.glob("IORProvider_*"))
    job = next(stage.glob("IOR_*")) / "rfm_job.sh"
    job_text = job.read_text()
    if source == "spack":
        build = (provider / "rfm_build.sh").read_text()
        assert "spack -e spack_env install" in build
        assert (provider / "spack_env" / "spack.yaml").read_text() == \
            (REPO / "spack.yaml").read_text()
        assert f'eval "$(spack -e {provider}/spack_env load --sh ior)"' in job_text
    else:
        assert "module load ior/4.0.0" in job_text
    assert "#SBATCH --exclusive" in job_text
    assert re.search(r"^srun ior -a POSIX -w -r -e .*-O summaryFormat=JSON", job_text, re.M)
    shutil.rmtree(prefix)
