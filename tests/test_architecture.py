"""The layers of ARCHITECTURE.md, enforced: every import of our own code points down.

    cli                         the command (top): nothing imports it
    cluster  reports  reframe_checks  site_configs   side by side: none imports another
    scratchbench                the shared ground (bottom): imports none of the above

A new import that points up or sideways fails here, naming the file and the line.
"""

import ast
import re

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
    wrong = [
        f"{path.relative_to(REPO)}:{line} imports {top}"
        for path in files
        for line, top in our_imports(path)
        if top != part and top not in ALLOWED[part]
    ]
    assert not wrong, "imports pointing up or sideways:\n" + "\n".join(wrong)


def test_every_python_folder_has_a_layer():
    """A new top-level Python folder must be placed in the layers, not slip past them."""
    folders = {
        p.relative_to(REPO).parts[0]
        for p in REPO.glob("*/**/*.py")
        if not p.relative_to(REPO).parts[0].startswith(".")
    }
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


def documented_imports(doc):
    """part -> the parts its row of ARCHITECTURE.md's table says it imports."""
    rows = {}
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0].endswith("/`"):
            part = cells[0].strip("`/")
            rows[part] = (
                set()
                if cells[2] == "nothing of ours"
                else {name.strip("` ") for name in cells[2].split(",")}
            )
    return rows


def test_architecture_import_table_is_what_the_code_imports():
    """ARCHITECTURE.md's "imports" column is the rule above and what the files really
    import: a part that stops (or starts) importing another must change the table."""
    table = documented_imports((REPO / "ARCHITECTURE.md").read_text())
    assert set(table) == set(ALLOWED), (
        f"ARCHITECTURE.md's table has rows for {sorted(table)}, the layers are {sorted(ALLOWED)}"
    )
    for part in ALLOWED:
        imported = {top for path in python_files(part) for _, top in our_imports(path)} - {part}
        assert table[part] == ALLOWED[part] == imported, (
            f"{part}/: ARCHITECTURE.md says it imports {sorted(table[part]) or 'nothing of ours'}, "
            f"this test allows {sorted(ALLOWED[part])}, its files import {sorted(imported)}"
        )


def test_the_import_table_reader_sees_a_drift():
    doc = (
        "| part | owns | imports |\n|---|---|---|\n| `scratchbench/` | ground | nothing of ours |\n"
        "| `cli/` | the command | all of the above |\n"
    )
    assert documented_imports(doc) == {"scratchbench": set(), "cli": {"all of the above"}}


# The history store's schema has one owner: reports/store.py asks SQLite, every other
# module asks store.py (a renamed column is then one file's change).
STORE_OWNER = REPO / "reports" / "store.py"
STORE_TABLES = ("runs", "cases", "figures", "samples", "filesystem_configs")


def store_queries(path):
    """(line, text) of every SQL statement against the store's tables in path."""
    tables = "|".join(STORE_TABLES)
    pattern = re.compile(rf"\b(FROM|JOIN|INTO|UPDATE)\s+({tables})\b|\.execute\(")
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if pattern.search(line):
            yield number, line.strip()


def test_only_the_store_queries_the_history_store():
    found = [
        f"{path.relative_to(REPO)}:{number}: {text}"
        for part in ALLOWED
        for path in python_files(part)
        if path != STORE_OWNER
        for number, text in store_queries(path)
    ]
    assert not found, "SQL against the history store outside reports/store.py:\n" + "\n".join(found)


def test_the_query_detector_sees_a_query(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        'x = 1\nrows = conn.execute(\n    "SELECT value FROM figures")\nmariadb("SELECT 1")\n'
    )
    assert [n for n, _ in store_queries(bad)] == [2, 3]


def test_the_embedded_scheduler_names_the_private_reframe_members_it_relies_on():
    """ReFrame 4.10 has no public API for a scheduler backend to set a job's state: its
    own Slurm backend sets job._state, job._exitcode and job._nodespec in poll().  The
    embedded backend does what it does, and extends its private hooks.  Each private
    member it touches must be named in its docstring and still be used by ReFrame's own
    Slurm backend (so a ReFrame upgrade that drops one fails here, not in a night)."""
    import inspect

    import reframe
    import reframe.core.schedulers.slurm as upstream

    from scratchbench import slurm_embedded

    source = inspect.getsource(slurm_embedded)
    upstream_source = inspect.getsource(upstream)
    defined = set(re.findall(r"^\s+def (_\w+)", source, re.M))
    used = set(re.findall(r"(?:self|job|super\(\))\.(_[a-z]\w*)", source)) - defined
    # attributes of its own: set here, never named by ReFrame
    own = {
        name
        for name in used
        if re.search(rf"self\.{name} = ", source) and not re.search(rf"\.{name}\b", upstream_source)
    }
    assert used - own, "found no private member of ReFrame's: the pattern is stale"
    doc = slurm_embedded.__doc__
    assert "ReFrame " + reframe.VERSION in doc, (
        f"slurm_embedded's docstring does not name the ReFrame version it was written for "
        f"({reframe.VERSION})"
    )
    documented = set(re.findall(r"``(_\w+)``", doc))
    assert used - own <= documented, (
        f"slurm_embedded uses {sorted(used - own - documented)} without saying why"
    )
    for name in sorted(documented):
        assert re.search(rf"\.{name}\b", upstream_source), (
            f"ReFrame {reframe.VERSION}'s Slurm backend no longer uses {name}"
        )
