"""The command line: --help everywhere, one-line errors for bad input."""

import shutil
import sys

import pytest

from conftest import REPO, VENV_BIN, run, scratchbench

SUBCOMMANDS = [["cluster"], ["run"], ["report"], ["ingest"], ["verdict"],
               ["verdict", "nightly"], ["verdict", "acceptance"]]


def test_top_level_help():
    result = scratchbench("--help")
    assert result.returncode == 0
    for command in ("cluster", "run", "report", "ingest", "verdict"):
        assert command in result.stdout


@pytest.mark.parametrize("command", SUBCOMMANDS, ids=" ".join)
def test_every_subcommand_has_help(command):
    result = scratchbench(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert "usage: scratchbench " + " ".join(command) in result.stdout


def one_line(result):
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("scratchbench: error: ")
    return lines[0]


@pytest.mark.parametrize("args,message", [
    (["run", "--site", "nosuchsite", "--no-start"], "site config 'nosuchsite': no file"),
    (["run", "--tag", "weekly", "--no-start"], "--tag weekly: expected one of quick"),
    (["run", "--partition", "gpu", "--no-start"],
     "system 'embedded' has no partition 'gpu' (it has: batch)"),
    (["run", "--target", "lustre", "--no-start"],
     "--target lustre: site config"),
])
def test_run_bad_input(sb_home, args, message):
    result = scratchbench(*args)
    assert result.returncode == 2
    assert message in one_line(result)


def test_run_malformed_config(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("site_configuration = {\n")
    result = scratchbench("run", "--site", str(broken), "--no-start")
    assert result.returncode == 2
    assert f"site config {broken}: line 1" in one_line(result)


def test_run_refuses_to_start_when_told(sb_home, tmp_path):
    result = scratchbench("run", "--no-start", env={"SCRATCHBENCH_HOME": str(tmp_path)})
    assert result.returncode == 4
    assert "embedded cluster is not running" in one_line(result)


@pytest.mark.parametrize("args,code,message", [
    (["ingest", "/no/such/run"], 5, "/no/such/run: no such run directory or run report"),
    (["verdict", "acceptance", "--before", "tag", "--after", "tag:x"], 2,
     "--before tag: expected key:value items"),
    (["verdict", "nightly", "--run", "nosuchrun"], 1, "--run nosuchrun: no such run"),
])
def test_history_commands_bad_input(tmp_path, args, code, message):
    result = scratchbench(*args, env={"SCRATCHBENCH_HOME": str(tmp_path)})
    assert result.returncode == code, result.stderr
    assert message in one_line(result)


@pytest.mark.parametrize("script,args,message", [
    ("ci/nightly", [], "usage: ci/nightly SITE"),
    ("ci/acceptance", ["sometimes", "CHG-1"], "unknown phase 'sometimes'"),
    ("ci/acceptance", ["before"], "a change ticket or label is required"),
])
def test_ci_entry_points_explain_their_usage(script, args, message):
    from conftest import REPO, run
    result = run(["bash", REPO / script, *args])
    assert result.returncode != 0 and message in result.stderr


def test_installed_as_a_wheel_it_says_it_runs_from_a_checkout(tmp_path):
    """The README says scratchbench runs from a checkout (installed editable); a wheel
    install, run from another directory, must say so in one line instead of failing
    later on a missing src/ or reframe_checks/."""
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
    build = tmp_path / "build-copy"
    shutil.copytree(REPO, build, ignore=shutil.ignore_patterns(
        ".venv", "var", ".git", "*.egg-info", "build*", "__pycache__"))
    install = run([venv / "bin" / "pip", "install", "-q", "--no-deps",
                   build], timeout=600)
    assert install.returncode == 0, install.stderr[-2000:]
    result = run([venv / "bin" / "scratchbench", "--help"], cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "runs from a git checkout" in lines[0], result.stderr
    assert "pip install -e" in lines[0]


def test_runs_from_any_directory(tmp_path):
    """Installed editable, the command finds the checkout from anywhere."""
    result = run([VENV_BIN / "scratchbench", "run", "--site", "no-such-site"], cwd=tmp_path)
    assert result.returncode == 2 and "known sites: example_lsf, example_slurm, local" in \
        result.stderr
