"""The command line: --help everywhere, one-line errors for bad input."""

import errno
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli import runner
from conftest import REPO, VENV_BIN, run, scratchbench
from scratchbench.errors import RunError

SUBCOMMANDS = [
    ["cluster"],
    ["run"],
    ["check-site"],
    ["report"],
    ["ingest"],
    ["verdict"],
    ["verdict", "nightly"],
    ["verdict", "acceptance"],
]


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


@pytest.mark.parametrize(
    "args,message",
    [
        (["run", "--site", "nosuchsite", "--no-start"], "site config 'nosuchsite': no file"),
        (["run", "--tag", "weekly", "--no-start"], "--tag weekly: expected one of quick"),
        (
            ["run", "--partition", "gpu", "--no-start"],
            "system 'embedded' has no partition 'gpu' (it has: batch)",
        ),
        (["run", "--target", "lustre", "--no-start"], "--target lustre: site config"),
        (["run", "--environ", "gnu-intelmpi", "--no-start"], "--environ gnu-intelmpi: site config"),
        (
            ["run", "--spack-env", "/no/such/spack.yaml", "--no-start"],
            "--spack-env /no/such/spack.yaml: no such file (expected a Spack environment file",
        ),
    ],
)
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


@pytest.mark.parametrize(
    "args,code,message",
    [
        (["ingest", "/no/such/run"], 5, "/no/such/run: no such run directory or run report"),
        (
            ["verdict", "acceptance", "--before", "tag", "--after", "tag:x"],
            2,
            "--before tag: expected key:value items",
        ),
        (["verdict", "nightly", "--run", "nosuchrun"], 1, "--run nosuchrun: no such run"),
    ],
)
def test_history_commands_bad_input(tmp_path, args, code, message):
    _history_with_runs(tmp_path)  # a store to read (a missing one is exit 7: test_reports)
    result = scratchbench(*args, env={"SCRATCHBENCH_HOME": str(tmp_path)})
    assert result.returncode == code, result.stderr
    assert message in one_line(result)


@pytest.mark.parametrize(
    "script,args,message",
    [
        ("ci/nightly", [], "usage: ci/nightly SITE"),
        ("ci/acceptance", ["sometimes", "CHG-1"], "unknown phase 'sometimes'"),
        ("ci/acceptance", ["before"], "a change ticket or label is required"),
    ],
)
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
    shutil.copytree(
        REPO,
        build,
        ignore=shutil.ignore_patterns(
            ".venv", "var", ".git", "*.egg-info", "build*", "__pycache__"
        ),
    )
    install = run([venv / "bin" / "pip", "install", "-q", "--no-deps", build], timeout=600)
    assert install.returncode == 0, install.stderr[-2000:]
    result = run([venv / "bin" / "scratchbench", "--help"], cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "runs from a git checkout" in lines[0], result.stderr
    assert "pip install -e" in lines[0]


def test_runs_from_any_directory(tmp_path):
    """Installed editable, the command finds the checkout from anywhere."""
    result = run([VENV_BIN / "scratchbench", "run", "--site", "no-such-site"], cwd=tmp_path)
    assert (
        result.returncode == 2 and "known sites: example_lsf, example_slurm, local" in result.stderr
    )


def _history_with_runs(home, runs=12):
    from reports import store
    from reports.synthetic import make_report

    conn = store.connect(home / "history.sqlite")
    for i in range(runs):
        store.ingest_report(
            conn,
            make_report(
                f"run{i:03d}",
                1_800_000_000 + 3600 * i,
                [
                    (
                        "KernelIOTest",
                        {"scratch_target": "fsA", "access": "fpp-posix"},
                        "gnu",
                        "fsA",
                        {"write_bw": (1000.0 + i, "MiB/s", [])},
                    )
                ],
            ),
        )
    conn.close()
    return home / "history.sqlite"


@pytest.mark.parametrize("command", [["report"], ["verdict", "nightly"], ["ingest"]])
def test_a_damaged_history_is_one_line(tmp_path, command):
    """Garbage in the middle of the SQLite file: every command says so in one line, and
    ingest (SQLite's integrity check first) never reports all is well."""
    db = _history_with_runs(tmp_path)
    data = bytearray(db.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = b"\x5a" * 4096
    db.write_bytes(bytes(data))
    result = scratchbench(*command, env={"SCRATCHBENCH_HOME": str(tmp_path)})
    assert result.returncode == 5, result.stdout + result.stderr
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("scratchbench: error:")]
    assert len(errors) == 1, result.stderr
    line = errors[0]
    assert str(db) in line and ("damaged" in line or "malformed" in line), line
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("where", ["unwritable", "a file", "full"])
def test_report_out_that_cannot_be_written(tmp_path, where):
    """A read-only --out or a file is refused before anything is built (exit 2); a disk
    that fills while the pages are written is one line naming the file it could not
    write, not a traceback (exit 1)."""
    _history_with_runs(tmp_path)
    env = {"SCRATCHBENCH_HOME": str(tmp_path)}
    code = 2
    if where == "a file":
        out = tmp_path / "pages.html"
        out.write_text("not a directory")
        expect = "exists and is not a directory"
        result = scratchbench("report", "--out", str(out), env=env)
    else:
        parent = tmp_path / "mounted"
        parent.mkdir()
        options = "ro,size=1m" if where == "unwritable" else "size=64k"
        assert run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", parent]).returncode == 0
        try:
            if where == "unwritable":
                expect = "cannot make the directory (Read-only file system)"
            else:
                run(["dd", "if=/dev/zero", f"of={parent / 'filler'}", "bs=4k", "count=64"])
                code = 1
                expect = f"{parent / 'pages'}/"
            result = scratchbench("report", "--out", str(parent / "pages"), env=env)
        finally:
            run(["umount", parent])
    assert result.returncode == code, result.stderr
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("scratchbench: error:")]
    assert len(errors) == 1 and expect in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    if where == "full":
        assert "No space left on device: free some space there" in errors[0]


def test_a_run_report_cut_short_is_one_error(tmp_path):
    """A full disk leaves ReFrame's run report empty: one error naming it, the room
    left there and the log to read, not a JSON traceback; a whole report is read."""
    report, log = tmp_path / "report.json", tmp_path / "reframe.out"
    report.write_text("")
    with pytest.raises(RunError) as caught:
        runner.read_run_report(report, 1, log)
    message = str(caught.value)
    assert message.startswith(f"ReFrame exited 1 and its run report {report} cannot be read (")
    assert "MiB free there); see " + str(log) in message and "\n" not in message
    report.write_text('{"runs": []}')
    assert runner.read_run_report(report, 0, log) == {"runs": []}
    with pytest.raises(RunError, match="without writing a run report"):
        runner.read_run_report(tmp_path / "missing.json", 1, log)


def test_a_full_disk_under_the_run_log_loses_no_output(tmp_path):
    """ReFrame's output still reaches the console when its log can no longer be written
    (/dev/full: every write fails with ENOSPC), and the run is told why its log is
    short; a log that cannot be made at all is one error naming it."""
    out = io.StringIO()
    cmd = [sys.executable, "-c", "print('first'); print('second')"]
    env = dict(os.environ)
    rc, signalled, error = runner._stream_reframe(cmd, env, tmp_path, Path("/dev/full"), out)
    assert (rc, signalled, out.getvalue()) == (0, [], "first\nsecond\n")
    assert error == os.strerror(errno.ENOSPC)
    missing = tmp_path / "missing" / "reframe.out"
    with pytest.raises(RunError, match=re.escape(f"{missing}: cannot write ReFrame's output")):
        runner._stream_reframe(cmd, env, tmp_path, missing, out)


def test_a_reader_that_leaves_early_is_not_an_error(tmp_path):
    """`scratchbench cluster status | head -1`: no traceback for a closed pipe."""
    result = subprocess.run(
        f"{VENV_BIN / 'scratchbench'} --help | head -1",
        shell=True,
        capture_output=True,
        text=True,
        env=dict(os.environ, SCRATCHBENCH_HOME=str(tmp_path)),
    )
    assert result.stdout.startswith("usage:")
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr
    for _ in range(3):  # status prints many lines; head leaves after one
        result = subprocess.run(
            f"{VENV_BIN / 'scratchbench'} cluster status --json | head -c 10",
            shell=True,
            capture_output=True,
            text=True,
            env=dict(os.environ, SCRATCHBENCH_HOME=str(tmp_path)),
        )
        assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr


def test_cases_whose_provider_failed_count_as_reframe_counts_them():
    """ReFrame's fail_deps (a dependency failed): skipped in the counts, as ReFrame's
    own summary has them, naming the failed provider once, never '(None): None'."""
    from cli.runner import format_summary, summarise_report

    provider = {
        "unique_name": "IORProvider_1",
        "system": "s",
        "partition": "p",
        "environ": "e",
        "fixture": True,
        "check_class": "IORProvider",
        "result": "fail",
        "fail_phase": "setup",
        "fail_reason": "tool unavailable error: IOR: no spack",
    }
    dependents = [
        {
            "unique_name": f"IOR_{n}",
            "system": "s",
            "partition": "p",
            "environ": "e",
            "check_class": "IOR",
            "scratch_target": "t",
            "result": "fail_deps",
            "fail_phase": None,
            "fail_reason": None,
            "dependencies_actual": [["IORProvider_1", "s:p", "e"]],
        }
        for n in range(3)
    ]
    summary = summarise_report({"runs": [{"testcases": [provider, *dependents]}]})
    assert (summary["passed"], summary["failed"], summary["skipped"]) == (0, 1, 3)
    summary.update(report="r", output="o", perflogs="p", results_db="d", wall_seconds=1)
    text = format_summary(summary)
    assert "None" not in text
    assert text.count("no spack") == 1, text
    assert (
        "skipped (3): needs IORProvider [s:p+e], which failed in setup (see its failure): "
        "IOR on t [e]" in text.splitlines()
    )

    from reports.runreport import skip_reasons

    stored = skip_reasons([provider, *dependents])
    assert stored[1] == (
        "needs IORProvider [s:p+e], which failed in setup: tool unavailable error: IOR: no spack"
    ), "the history keeps the cause with them"
