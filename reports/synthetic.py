"""Synthetic ReFrame run reports, for the report-build benchmark and the store tests.

They have the shape of real ones: ``session_info``, ``runs[].testcases[]`` whose
parameters are fields named by ``parameter_names``, the workload tag as a variable,
``figures`` declarations, ``perfvalues``, per-repetition ``samples`` and, for cases
that did not pass, ``result``, ``fail_phase``, ``fail_reason`` or ``skip_reason``; so
they go through the same ingestion as real runs.
"""

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def declaration(
    metric: str, unit: str, better: str | None = None, headline: str = ""
) -> dict[str, str]:
    """A figure declaration as a check writes it (label defaults to the metric name)."""
    if better is None:
        better = "lower" if unit in ("%", "s") else "higher"
    return {"unit": unit, "label": metric.replace("_", " "), "better": better, "headline": headline}


def make_case(
    check: str,
    params: Mapping[str, Any],
    environ: str,
    target: str | None,
    figures: Mapping[str, tuple[float | None, str, Sequence[float] | None]],
    *,
    workload: str = "nightly",
    declarations: Mapping[str, Mapping[str, Any]] | None = None,
    result: str = "pass",
    fail_phase: str | None = None,
    fail_reason: str | None = None,
    skip_reason: str = "",
    variant: str = "",
    nodes: int = 1,
    title: str = "",
    workload_words: str = "synthetic workload",
    scaling_parameter: str = "",
    time_total: float | None = None,
    outputdir: str | None = None,
    phase_seconds: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """One test case.  figures: {metric: (value, unit, samples)}; declarations:
    {metric: declaration dict} for figures that need more than the default (a headline,
    a chart); phase_seconds: {metric: how long its timed phase lasted}."""
    declarations = declarations or {}
    display = " ".join([check] + [f"%{k}={v}" for k, v in params.items()])
    case = {
        "display_name": display,
        "name": display,
        "unique_name": f"{check}_{abs(hash(display)) % 10**6}",
        "check_class": check,
        "system": "synth",
        "partition": "batch",
        "environ": environ,
        "scratch_target": target,
        "scratch_kind": "parallel",
        "num_nodes_used": nodes,
        "tasks_per_node_used": 2,
        "num_tasks": 2 * nodes,
        "exclusive_access": True,
        "result": result,
        "fail_phase": fail_phase,
        "fail_reason": fail_reason,
        "skip_reason": skip_reason,
        "jobid": 1,
        "job_nodelist": ["n1"],
        "fixture": False,
        "workload_tag": workload,
        "parameter_names": sorted(params),
        "title": title or f"{check} checks",
        "variant_words": variant,
        "workload_words": workload_words,
        "scaling_parameter": scaling_parameter,
        "time_total": time_total,
        "outputdir": outputdir,
        "dependencies_actual": [],
        "figures": {
            m: declarations.get(m) or declaration(m, u) for m, (_, u, _) in figures.items()
        },
        "perfvalues": {
            f"synth:batch:{m}": [v, 0, None, None, u, "pass"] for m, (v, u, _) in figures.items()
        },
        "samples": {m: s for m, (_, _, s) in figures.items() if s},
        "phase_seconds": dict(phase_seconds or {}),
    }
    case.update(params)
    return case


def make_report(
    run_id: str,
    start: float,
    cases: Iterable[Mapping[str, Any] | tuple[Any, ...]],
    tag: str = "nightly",
    note: str = "",
) -> dict[str, Any]:
    """cases: make_case() dicts, or tuples (check, params, environ, target, figures)."""
    testcases = []
    for case in cases:
        if isinstance(case, tuple):
            case = make_case(*case, workload=tag)
        case = dict(case, job_completion_time_unix=start + 60)
        testcases.append(case)
    return {
        "session_info": {
            "data_version": "4.1",
            "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, run_id)),
            "time_start_unix": start,
            "time_end_unix": start + 600,
            "version": "4.10.4",
            "hostname": "synthetic",
            "extras": {"scratchbench_run": run_id, "tag": tag},
        },
        "runs": [{"testcases": testcases}],
        "_meta": {"note": note},
    }
