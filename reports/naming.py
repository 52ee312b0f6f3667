"""Names of stored cases and figures in words, from what the checks declared.

Stored rows carry the check's own words (title, variant, workload) and each figure's
declared label; these functions only put them together, so no report names a check
or a metric by itself.
"""

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from scratchbench import units


def case_name(row: sqlite3.Row | Mapping[str, Any]) -> str:
    """'KernelIOTest on sanscratch (file per process, POSIX) [gnu-openmpi]'."""
    parts = [row["check_name"]]
    if row["scratch_target"]:
        parts.append(f"on {row['scratch_target']}")
    if row["variant"]:
        parts.append(f"({row['variant']})")
    return " ".join(parts) + (f" [{row['environ']}]" if row["environ"] else "")


def figure_label(row: sqlite3.Row | Mapping[str, Any]) -> str:
    """The declared label, or the metric's own name for figures stored without one."""
    return row["label"] or row["metric"]


def figure_name(row: sqlite3.Row | Mapping[str, Any]) -> str:
    """'Write bandwidth at the slowest rank, KernelIOTest on sanscratch (...) [env]'."""
    return f"{figure_label(row)}, {case_name(row)}"


def words(name: object) -> str:
    """A parameter's name in words: 'directory_layout' -> 'directory layout'."""
    return str(name).replace("_", " ").strip()


def check_words(row: sqlite3.Row | Mapping[str, Any]) -> str:
    """The check in words as it declared itself, or its class name for old histories."""
    return row["title"] or row["check_name"]


def variant_words(
    row: sqlite3.Row | Mapping[str, Any], params: Mapping[str, Any] | None = None
) -> str:
    """The variant in words as the check declared it; for histories stored before
    checks declared words, its parameter values ('access fpp-posix')."""
    if row["variant"]:
        return row["variant"]
    params = params if params is not None else json.loads(row["params"] or "{}")
    return ", ".join(f"{words(k)} {v}" for k, v in sorted(params.items()) if k != "scratch_target")


def tag_words(tag: str | None) -> str:
    """'quick' -> 'quick runs': the workload tag as a user reads it."""
    return f"{tag} runs" if tag else "untagged runs"


def case_words(
    row: sqlite3.Row | Mapping[str, Any], params: Mapping[str, Any] | None = None
) -> str:
    """'Bandwidth (IOTest, seed 002): file per process, POSIX'."""
    variant = variant_words(row, params)
    return f"{check_words(row)}: {variant}" if variant else check_words(row)


def figure_anchor(series: str, metric: str) -> str:
    """The id of a figure's chart on its file system's page, the same in the verdict
    file, the CLI and the pages: stable across builds, short, and safe in a URL."""
    return "f-" + hashlib.sha1(f"{series}\n{metric}".encode()).hexdigest()[:12]


#: what a change is called, with whether it is news: (words, new or ongoing)
CHANGE_WORDS = {
    "regression": ("Regression", "new"),
    "ongoing-regression": ("Regression", "ongoing"),
    "improvement": ("Improvement", "new"),
    "recovered": ("Recovered", "new"),
    "suspect": ("Suspect", "one night so far"),
    "failed": ("Failed check", "in this run"),
}


def changes(figures: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The changes among a nightly verdict's figures (everything but ok and undecided,
    as described by `verdict nightly`), newest first."""
    found = [f for f in figures if f["verdict"] in CHANGE_WORDS and f.get("since")]
    return sorted(found, key=lambda f: (f["since"], f["verdict"] != "failed"), reverse=True)


def change_sentence(entry: Mapping[str, Any]) -> str:
    """One change of a nightly verdict in words: what, where, since when, how much (with
    its interval), new or ongoing; the CLI prints it and the banner shows it."""
    kind, news = CHANGE_WORDS[entry["verdict"]]
    where = f"on {entry.get('target') or 'unspecified'}" + (
        f" [{entry['environ']}]" if entry.get("environ") else ""
    )
    what = entry.get("what") or entry["name"]
    if entry["verdict"] == "failed":
        return f"{kind} ({news}, {entry['since']}): {what} {where}: {entry['detail']}"
    unit = entry.get("unit") or ""
    rel = entry.get("relative_change")
    much = units.percent(rel) if rel is not None else "n/a"
    if entry.get("change_low") is not None:
        much += (
            f" (95% interval {units.percent(entry['change_low'])} to "
            f"{units.percent(entry['change_high'])})"
        )
    if entry["verdict"] == "suspect":
        values = (
            f"latest {units.quantity(entry['latest'], unit)} against a usual "
            f"{units.quantity(entry['median_before'], unit)}"
        )
        since = f"on {entry['since']}"
    else:
        values = (
            f"median {units.quantity(entry['median_before'], unit)} before, "
            f"{units.quantity(entry['median_after'], unit)} since"
        )
        since = f"since {entry['since']}"
        if entry.get("config_change"):
            since += f", when {entry['config_change']}"
    return f"{kind} ({news}): {what} {where}, {since}: {much}; {values}"
