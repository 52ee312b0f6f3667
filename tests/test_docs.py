"""Docs that cannot drift: README's layout table names every module, and no `--help`
names a statistical method the verdicts do not apply.  (ARCHITECTURE.md's import table
is checked by test_architecture.py.)"""

import argparse
import inspect
import re

import pytest

from cli.main import build_parser
from conftest import REPO
from reports import verdict_methods, verdicts

# The folders whose every module README's layout table names, in that folder's row.
LISTED = ("reframe_checks", "reframe_checks/lib", "scratchbench", "reports", "cluster", "cli")


def section(text, heading):
    """The lines under a '## heading' of a Markdown text, up to the next '## '."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def layout_rows(readme):
    """folder -> the text of its row in README's layout table."""
    rows = {}
    for line in section(readme, "Layout").splitlines():
        match = re.match(r"\|\s*`([^`]+)/`\s*\|(.*)\|\s*$", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


def unlisted_modules(readme):
    """'folder/module.py' for every module of LISTED that its folder's row leaves out."""
    rows = layout_rows(readme)
    return [
        f"{folder}/{path.name}"
        for folder in LISTED
        for path in sorted((REPO / folder).glob("*.py"))
        if path.name != "__init__.py" and f"`{path.name}`" not in rows.get(folder, "")
    ]


def test_readme_layout_names_every_check_file_and_module():
    missing = unlisted_modules((REPO / "README.md").read_text())
    assert not missing, (
        "README's layout table (## Layout) does not name, in its folder's "
        "row: " + ", ".join(missing)
    )


def test_the_layout_reader_sees_a_module_left_out():
    readme = "# x\n\n## Layout\n\n| folder | what |\n|---|---|\n| `cli/` | `main.py` |\n"
    missing = unlisted_modules(readme)
    assert "cli/runner.py" in missing and "cli/main.py" not in missing
    assert "reports/store.py" in missing  # a folder without a row at all


def help_texts(parser, name="scratchbench"):
    """(command, its --help) for the command and every subcommand under it."""
    yield name, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from help_texts(sub, f"{name} {sub_name}")


def named_unapplied(text):
    return [m for m in verdict_methods.NOT_APPLIED if m.lower() in text.lower()]


@pytest.mark.parametrize(
    "command,text",
    list(help_texts(build_parser())),
    ids=lambda v: v if v.startswith("scratchbench") else "",
)
def test_no_help_names_a_method_the_code_does_not_apply(command, text):
    wrong = named_unapplied(" ".join(text.split()))
    assert not wrong, f"`{command} --help` names {wrong}, which the verdicts do not apply"


def test_verdict_help_names_the_methods_applied():
    helps = dict(help_texts(build_parser()))
    nightly = " ".join(helps["scratchbench verdict nightly"].split())
    acceptance = " ".join(helps["scratchbench verdict acceptance"].split())
    assert verdict_methods.SEGMENTATION in nightly
    assert verdict_methods.CORRELATED_NIGHTS in nightly
    assert verdict_methods.COMPARISON in acceptance and verdict_methods.EFFECT_SIZE in acceptance
    assert verdict_methods.SEGMENTATION in verdicts.NIGHTLY_METHOD
    assert verdict_methods.COMPARISON in verdicts.ACCEPTANCE_METHOD


# What in the applying function's code is the method, where its name is not written there.
EVIDENCE = {
    verdict_methods.COMPARISON: ("ttest_ind(", "equal_var=False"),  # unequal variances
    verdict_methods.EFFECT_SIZE: ("Hedges'",),
}


def test_each_named_method_is_applied_by_its_function():
    """verdict_methods maps each name to the function that applies it; that function
    exists and its code is the method (names it, or makes the call that is the method)."""
    for method, function in verdict_methods.APPLIED_BY.items():
        assert callable(getattr(verdicts, function, None)), (
            f"{method}: reports/verdicts.py has no function {function}"
        )
        code = inspect.getsource(getattr(verdicts, function))
        evidence = EVIDENCE.get(method, (method,))
        assert all(e in code for e in evidence), (
            f"{function} shows no {' and '.join(evidence)}: it does not apply {method}"
        )


def test_readme_verdicts_name_the_methods_applied_and_no_other():
    text = " ".join(
        section((REPO / "README.md").read_text(), "History, verdicts and pages").split()
    )
    assert not named_unapplied(text), f"README's verdicts name {named_unapplied(text)}"
    for method in (verdict_methods.SEGMENTATION, verdict_methods.COMPARISON):
        assert method in text, f"README's verdicts do not name {method}"


def test_the_help_check_catches_an_unapplied_method():
    assert named_unapplied("median change, bootstrap 95% interval, Mann-Whitney U test") == [
        "bootstrap",
        "Mann-Whitney",
    ]
