"""Names of stored cases and figures in words, from what the checks declared.

Stored rows carry the check's own words (title, variant, workload) and each figure's
declared label; these functions only put them together, so no report names a check
or a metric by itself.
"""


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
