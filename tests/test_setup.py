"""ci/setup.sh: the harness alone for a normal user, logs in the user's own state
directory, a truthful requires-python."""

import importlib.metadata
import re
import tomllib

import pytest

from conftest import REPO, run

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def lower_bound(spec):
    """(3, 11) of '>=3.11'."""
    match = re.fullmatch(r">=\s*(\d+)\.(\d+)(?:\.\d+)?", spec.strip())
    assert match, f"expected '>=X.Y', got {spec!r}"
    return int(match.group(1)), int(match.group(2))


def test_requires_python_is_what_the_pinned_dependencies_need():
    """The oldest Python pyproject admits is the newest that any pinned dependency
    requires: not older (pip would fail half-way), not newer than needed."""
    project = PYPROJECT["project"]
    pinned = project["dependencies"] + project["optional-dependencies"]["test"]
    needs = {}
    for requirement in pinned:
        name = requirement.split("==")[0].strip()
        spec = importlib.metadata.metadata(name).get("Requires-Python")
        if spec:
            needs[name] = lower_bound(spec.split(",")[0])
    newest = max(needs.values())
    assert lower_bound(project["requires-python"]) == newest, needs


def setup(*args, env=None):
    return run(["bash", REPO / "ci" / "setup.sh", *args], env=env, timeout=120)


@pytest.mark.parametrize(
    "python,message",
    [
        (
            "too-old",
            "setup: error: {python} is Python 3.8; scratchbench needs Python >= 3.11 "
            "(set PYTHON to a newer one, e.g. from a module)",
        ),
        ("missing", "setup: error: no Python at '{python}'; set PYTHON to a Python >= 3.11"),
    ],
)
def test_setup_refuses_a_python_it_cannot_use_in_one_line(tmp_path, python, message):
    """An interpreter older than requires-python is not on this machine: a script that
    answers the version query as Python 3.8 stands in for one."""
    path = tmp_path / "python3.8"
    if python == "too-old":
        path.write_text("#!/bin/sh\necho 3.8\n")
        path.chmod(0o755)
    result = setup(
        "--harness-only", env={"PYTHON": str(path), "SCRATCHBENCH_HOME": str(tmp_path / "home")}
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [message.format(python=path)]


def test_setup_rejects_an_unknown_option(tmp_path):
    result = setup("--harness", env={"SCRATCHBENCH_HOME": str(tmp_path)})
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "setup: error: unknown option '--harness'; expected --test or --harness-only"
    )


@pytest.mark.slow
def test_harness_only_installs_for_a_normal_user(nobody_checkout):
    """User nobody, with its own copy of the checkout and its own SCRATCHBENCH_HOME,
    installs the harness: no root, no Debian package query, logs in its own state
    directory and nothing at a fixed path in /tmp."""
    user = nobody_checkout
    result = user.setup_result
    assert result.returncode == 0, result.stderr[-3000:]
    log = user.home / "sb" / "logs" / "setup-pip.log"
    assert f"(log: {log})" in result.stderr
    assert log.stat().st_uid == user.uid
    assert "dpkg" not in result.stderr and "Debian" not in result.stderr
    helped = user.run([str(user.checkout / ".venv" / "bin" / "scratchbench"), "run", "--help"])
    assert helped.returncode == 0 and "--spack-env" in helped.stdout, helped.stderr
    again = user.run(["ci/setup.sh", "--harness-only"])
    assert (again.returncode, again.stderr) == (0, ""), "nothing left to do: silent"
    assert not user.left_in_tmp, "setup left files in /tmp"
