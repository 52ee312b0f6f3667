"""Reading ReFrame's JSON run report: the one source of what a run did.

Every test case of a scratchbench check carries, as fields of the report, its
parameters (named by ``parameter_names``), the declarations of its figures
(``figures``), the case in words (``title``, ``variant_words``, ``workload_words``),
per-repetition ``samples`` and, when skipped, its ``skip_reason``.  The store and the
run summary read them here, never by parsing display names.
"""

import os
from collections.abc import Mapping, Sequence
from typing import Any

from scratchbench.errors import one_line

SUPPORTED_DATA_VERSION = "4."


def final_cases(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The test cases of the last run of a session (retries hold the final state)."""
    runs = report.get("runs") or [{}]
    return list(runs[-1].get("testcases", []))


def parameters(case: Mapping[str, Any]) -> dict[str, Any]:
    """{parameter name: value} from the case's own fields."""
    return {name: case.get(name) for name in case.get("parameter_names") or []}


def check_name(case: Mapping[str, Any]) -> str:
    """The check's class name (the first word of its display name for foreign cases)."""
    return (
        case.get("check_class") or (case.get("display_name") or case.get("name") or "?").split()[0]
    )


def case_key(case: Mapping[str, Any]) -> tuple[str | None, str, str | None]:
    """How ReFrame names a case in ``dependencies_actual``."""
    return (
        case.get("unique_name"),
        f"{case.get('system')}:{case.get('partition')}",
        case.get("environ"),
    )


#: ReFrame's results of cases that did not run: skipped, or skipped because a case
#: they depend on failed; ReFrame counts both as skipped
NOT_RUN = ("skip", "fail_deps")


def skip_reasons(
    cases: Sequence[Mapping[str, Any]], with_failed_cause: bool = True
) -> dict[int, str]:
    """{index in cases: reason} for every case that did not run (``NOT_RUN``).

    A case skipped because a dependency (e.g. the IOR provider fixture) was skipped
    takes that dependency's reason, so the user reads the cause, not "skipped due to
    skipped dependencies".  One whose dependency failed names it and, with
    ``with_failed_cause``, its cause (the run summary prints the failure itself, so
    it leaves the cause out; the history store keeps no fixtures, so it keeps it).
    """
    by_key = {case_key(c): c for c in cases}

    def reason_of(case: Mapping[str, Any], seen: tuple[int, ...] = ()) -> str | None:
        own = case.get("skip_reason") or case.get("fail_reason")
        if own:
            return own
        for dep in case.get("dependencies_actual") or []:
            parent = by_key.get(tuple(dep))
            if parent is None or id(parent) in seen:
                continue
            if parent.get("result") in NOT_RUN:
                found = reason_of(parent, seen + (id(case),))
                if found:
                    return found
            elif parent.get("result") not in ("pass", "xfail"):
                where = f"{parent.get('system')}:{parent.get('partition')}+{parent.get('environ')}"
                failed = (
                    f"needs {check_name(parent)} [{where}], which failed in "
                    f"{parent.get('fail_phase') or 'an unknown phase'}"
                )
                if not with_failed_cause:
                    return f"{failed} (see its failure)"
                return f"{failed}: {parent.get('fail_reason') or 'no reason given'}"
        return None

    return {
        i: reason_of(c) or "no reason given"
        for i, c in enumerate(cases)
        if c.get("result") in NOT_RUN
    }


def failure_in_words(case: Mapping[str, Any]) -> str:
    """Why a case failed, in one line: ReFrame's reason (folded) and, for a failed
    build, the end of what the build wrote to stderr."""
    return "; ".join(filter(None, (one_line(case.get("fail_reason")), build_error_tail(case))))


def build_error_tail(case: Mapping[str, Any]) -> str:
    """For a case whose build failed: the last line its build wrote to stderr (a Spack
    or make error says its cause there, ReFrame's reason only the exit code), with
    the file; "" for any other case."""
    if case.get("fail_phase") not in ("compile", "compile_wait") or not case.get("build_stderr"):
        return ""
    path = os.path.join(case.get("stagedir") or "", case["build_stderr"])
    try:
        with open(path, errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip()]
    except OSError:
        return ""
    return f"{lines[-1][:300] if lines else 'nothing on stderr'} (the end of {path})"


def perf_figures(case: Mapping[str, Any]) -> list[tuple[str, Any, Any, Any, Any, Any, Any]]:
    """[(metric, value, unit, reference, lower, upper, result)] of one case."""
    out = []
    for key, perf in (case.get("perfvalues") or {}).items():
        value, ref, lower, upper, unit, result = (list(perf) + [None] * 6)[:6]
        out.append((key.split(":")[-1], value, unit, ref, lower, upper, result))
    return out
