"""Names of stored cases and figures in words, from what the checks declared.

Stored rows carry the check's own words (title, variant, workload) and each figure's
declared label; these functions only put them together, so no report names a check
or a metric by itself.
"""

import json


def case_name(row):
    """'KernelIOTest on sanscratch (file per process, POSIX) [gnu-openmpi]'."""
    parts = [row["check_name"]]
    if row["scratch_target"]:
        parts.append(f"on {row['scratch_target']}")
    if row["variant"]:
        parts.append(f"({row['variant']})")
    return " ".join(parts) + (f" [{row['environ']}]" if row["environ"] else "")


def figure_label(row):
    """The declared label, or the metric's own name for figures stored without one."""
    return row["label"] or row["metric"]


def figure_name(row):
    """'Write bandwidth at the slowest rank, KernelIOTest on sanscratch (...) [env]'."""
    return f"{figure_label(row)}, {case_name(row)}"


def words(name):
    """A parameter's name in words: 'directory_layout' -> 'directory layout'."""
    return str(name).replace("_", " ").strip()


def check_words(row):
    """The check in words as it declared itself, or its class name for old histories."""
    return row["title"] or row["check_name"]


def variant_words(row, params=None):
    """The variant in words as the check declared it; for histories stored before
    checks declared words, its parameter values ('access fpp-posix')."""
    if row["variant"]:
        return row["variant"]
    params = params if params is not None else json.loads(row["params"] or "{}")
    return ", ".join(f"{words(k)} {v}" for k, v in sorted(params.items())
                     if k != "scratch_target")


def tag_words(tag):
    """'quick' -> 'quick runs': the workload tag as a user reads it."""
    return f"{tag} runs" if tag else "untagged runs"


def case_words(row, params=None):
    """'Bandwidth (IOTest, seed 002): file per process, POSIX'."""
    variant = variant_words(row, params)
    return f"{check_words(row)}: {variant}" if variant else check_words(row)
