"""The tree passes ruff's lint ([tool.ruff] in pyproject.toml: pycodestyle errors and
warnings, pyflakes), and no `# noqa` is left that no longer silences anything."""

import subprocess

from conftest import REPO, VENV_BIN


def ruff(*args, cwd=REPO):
    return subprocess.run([VENV_BIN / "ruff", "check", "--no-cache", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_ruff_check_passes_with_no_stale_noqa():
    result = ruff("--extend-select", "RUF100", "--output-format", "concise", ".")
    assert result.returncode == 0, f"ruff check found:\n{result.stdout}{result.stderr}"


def test_the_lint_fails_on_an_unused_import(tmp_path):
    """The check itself can fail: the project's rules, on a file with an unused import."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    result = ruff("--config", REPO / "pyproject.toml", "--output-format", "concise", bad,
                  cwd=tmp_path)
    assert result.returncode == 1 and "F401" in result.stdout
