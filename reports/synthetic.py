"""Synthetic ReFrame run reports, for the report-build benchmark and the store tests.

They have the shape of real ones (``session_info``, ``runs[].testcases[]`` with
parameters in the display name, ``perfvalues`` and per-repetition ``samples``), so they
go through the same ingestion as real runs.
"""

import uuid


def make_report(run_id, start, cases, tag="nightly", note=""):
    """cases: [(check, params dict, environ, target, {metric: (value, unit, samples)})]."""
    testcases = []
    for check, params, environ, target, figures in cases:
        display = " ".join([check] + [f"%{k}={v}" for k, v in params.items()])
        testcases.append({
            "display_name": display, "name": display, "system": "synth",
            "partition": "batch", "environ": environ, "scratch_target": target,
            "scratch_kind": "parallel", "num_nodes_used": int(params.get("node_count", 1)),
            "tasks_per_node_used": 2, "num_tasks": 2, "exclusive_access": True,
            "result": "pass", "jobid": 1, "job_nodelist": ["n1"], "fixture": False,
            "job_completion_time_unix": start + 60,
            "perfvalues": {f"synth:batch:{m}": [v, 0, None, None, u, "pass"]
                           for m, (v, u, _) in figures.items()},
            "samples": {m: s for m, (_, _, s) in figures.items() if s},
        })
    return {"session_info": {"data_version": "4.1", "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL,
                                                                            run_id)),
                             "time_start_unix": start, "time_end_unix": start + 600,
                             "version": "4.10.4", "hostname": "synthetic",
                             "extras": {"scratchbench_run": run_id, "tag": tag}},
            "runs": [{"testcases": testcases}], "_meta": {"note": note}}
