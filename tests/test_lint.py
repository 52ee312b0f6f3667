"""The tree passes ruff's lint ([tool.ruff] in pyproject.toml: pycodestyle errors and
warnings, pyflakes), no `# noqa` is left that no longer silences anything, the tree is
formatted as `ruff format` leaves it, and the typed folders pass mypy."""

import subprocess

from conftest import REPO, VENV_BIN


def ruff(*args, cwd=REPO, command="check"):
    return subprocess.run(
        [VENV_BIN / "ruff", command, "--no-cache", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ruff_check_passes_with_no_stale_noqa():
    result = ruff("--extend-select", "RUF100", "--output-format", "concise", ".")
    assert result.returncode == 0, f"ruff check found:\n{result.stdout}{result.stderr}"


def test_the_lint_fails_on_an_unused_import(tmp_path):
    """The check itself can fail: the project's rules, on a file with an unused import."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    result = ruff(
        "--config", REPO / "pyproject.toml", "--output-format", "concise", bad, cwd=tmp_path
    )
    assert result.returncode == 1 and "F401" in result.stdout


# ---- formatting ----------------------------------------------------------------------------
def test_the_tree_is_ruff_formatted():
    result = ruff("--check", ".", command="format")
    assert result.returncode == 0, (
        "not formatted as `ruff format` leaves it (fix: .venv/bin/ruff format .):\n"
        f"{result.stdout}{result.stderr}"
    )


def test_the_format_check_sees_an_unformatted_file(tmp_path):
    """The check itself can fail: a file in the project's style it would change."""
    bad = tmp_path / "bad.py"
    bad.write_text("x = {'a':1}\n")
    result = ruff(
        "--config", REPO / "pyproject.toml", "--check", bad, cwd=tmp_path, command="format"
    )
    assert result.returncode == 1 and "bad.py" in result.stdout


# ---- type hints ----------------------------------------------------------------------------
#: the folders whose public functions carry type hints ([tool.mypy] files)
TYPED = ("scratchbench", "reports", "reframe_checks/lib")


def unannotated(path):
    """'name (line)' of every public function or method in path missing a parameter's or
    the return's annotation (self and cls need none)."""
    import ast

    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if (
            not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            or node.name.startswith("_")
            and node.name != "__init__"
        ):
            continue
        args = node.args
        params = [
            *args.posonlyargs,
            *args.args,
            *args.kwonlyargs,
            *[a for a in (args.vararg, args.kwarg) if a],
        ]
        missing = [a.arg for a in params if a.annotation is None and a.arg not in ("self", "cls")]
        if missing or (node.returns is None and node.name != "__init__"):
            yield f"{node.name} ({node.lineno}): " + (
                f"{', '.join(missing)} unannotated" if missing else "no return type"
            )


def test_public_functions_carry_type_hints():
    found = [
        f"{path.relative_to(REPO)}: {what}"
        for folder in TYPED
        for path in sorted((REPO / folder).glob("*.py"))
        for what in unannotated(path)
    ]
    assert not found, f"{len(found)} public functions without type hints:\n" + "\n".join(found)


def test_the_hint_check_sees_a_missing_hint(tmp_path):
    code = tmp_path / "code.py"
    code.write_text(
        "def good(a: int, *rest: str) -> None: ...\n"
        "def bad(a, b: int) -> int: ...\n"
        "def _private(a): ...\n"
        "class C:\n    def method(self, x: int): ...\n"
    )
    assert list(unannotated(code)) == ["bad (2): a unannotated", "method (5): no return type"]


def test_mypy_passes():
    """mypy ([tool.mypy] in pyproject.toml) finds no type error in the typed folders."""
    result = subprocess.run(
        [VENV_BIN / "mypy", "--no-incremental"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"mypy found:\n{result.stdout}{result.stderr}"


# ---- function length -----------------------------------------------------------------------
#: the folders whose functions must stay short (issue 27 §6)
SHORT_FUNCTIONS = ("scratchbench", "cli", "cluster", "reports", "reframe_checks", "ci/benchmarks")
#: the most lines a function may take, from its def to its last line, as formatted
LONGEST_FUNCTION = 100


def long_functions(path, limit=LONGEST_FUNCTION):
    """'name (lines)' of every function or method in path over limit lines."""
    import ast

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                yield f"{node.name} ({lines} lines)"


def test_no_function_is_longer_than_100_lines():
    found = [
        f"{path.relative_to(REPO)}: {what}"
        for folder in SHORT_FUNCTIONS
        for path in sorted((REPO / folder).rglob("*.py"))
        for what in long_functions(path)
    ]
    assert not found, (
        f"{len(found)} functions over {LONGEST_FUNCTION} lines (split them into named steps):\n"
        + "\n".join(found)
    )


def test_the_length_check_sees_a_long_function(tmp_path):
    code = tmp_path / "code.py"
    body = "".join(f"        x{i} = {i}\n" for i in range(100))
    code.write_text(f"def short():\n    pass\n\n\nclass C:\n    def long(self):\n{body}")
    assert list(long_functions(code)) == ["long (101 lines)"]
