"""The layers of ARCHITECTURE.md, enforced: every import of our own code points down.

    cli                         the command (top): nothing imports it
    cluster  reports  reframe_checks  site_configs   side by side: none imports another
    scratchbench                the shared ground (bottom): imports none of the above

A new import that points up or sideways fails here, naming the file and the line.
"""

import ast

import pytest

from conftest import REPO

# Which of our packages each part may import (itself is always allowed).
ALLOWED = {
    "scratchbench": set(),
    "cluster": {"scratchbench"},
    "reports": {"scratchbench"},
    "reframe_checks": {"scratchbench"},
    "site_configs": {"scratchbench"},
    "cli": {"scratchbench", "cluster", "reports"},
}
OURS = set(ALLOWED)


def our_imports(path):
    """(line, top-level package) for every import of one of our packages in path."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in OURS:
                yield node.lineno, top


def python_files(part):
    return sorted((REPO / part).rglob("*.py"))


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_imports_point_down(part):
    files = python_files(part)
    assert files, f"{part}/ has no Python files: ARCHITECTURE.md and this test are stale"
    wrong = [f"{path.relative_to(REPO)}:{line} imports {top}"
             for path in files for line, top in our_imports(path)
             if top != part and top not in ALLOWED[part]]
    assert not wrong, "imports pointing up or sideways:\n" + "\n".join(wrong)


def test_every_python_folder_has_a_layer():
    """A new top-level Python folder must be placed in the layers, not slip past them."""
    folders = {p.relative_to(REPO).parts[0] for p in REPO.glob("*/**/*.py")
               if not p.relative_to(REPO).parts[0].startswith(".")}
    # var/ holds what runs wrote (a failed case keeps its stage folder, scripts included)
    unplaced = folders - OURS - {"tests", "ci", "var"}
    assert not unplaced, f"folders with Python code but no layer: {sorted(unplaced)}"


def test_architecture_doc_names_every_part():
    doc = (REPO / "ARCHITECTURE.md").read_text()
    for part in ALLOWED:
        assert f"`{part}/`" in doc, f"ARCHITECTURE.md does not describe {part}/"


def test_the_detector_sees_an_upward_import(tmp_path):
    """The check itself can fail: a module of the ground importing the CLI is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nfrom cli.runner import run_suite\nimport reports.store as s\n")
    assert list(our_imports(bad)) == [(2, "cli"), (3, "reports")]
