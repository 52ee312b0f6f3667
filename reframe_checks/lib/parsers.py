"""Parsers of benchmark outputs: plain functions, unit-tested on real outputs.

Each returns figures or raises :class:`ParseError` with a one-line reason; a failed,
killed or truncated run never turns into a number.  The kernel and IOR are read from
their JSON; mdtest has no JSON, so its summary table is read, strictly.
"""

import json
import re

KERNEL_SCHEMA_MAJOR = "1"


class ParseError(ValueError):
    """The output is not a complete, valid result; the message says why."""


def _json_document(text, source, tool):
    """A whole JSON document, or a ParseError saying the tool died or was cut short."""
    if not text.strip():
        raise ParseError(f"{source} is empty: {tool} died before writing it")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{source} is not valid JSON ({exc.msg} at line {exc.lineno}): "
                         f"{tool} stopped while writing it") from None


# ---- scratchbench-kernel -------------------------------------------------------------
def parse_kernel_json(text, source="kernel report"):
    """The kernel's JSON report as a dict, after checking it is whole and versioned."""
    report = _json_document(text, source, "the kernel")
    version = str(report.get("schema_version", ""))
    if version.split(".")[0] != KERNEL_SCHEMA_MAJOR:
        raise ParseError(f"{source}: schema_version {version!r}, expected {KERNEL_SCHEMA_MAJOR}.x")
    for key in ("mode", "config", "mpi", "complete", "exit_code"):
        if key not in report:
            raise ParseError(f"{source}: no '{key}' field: the report is incomplete")
    return report


def kernel_problems(report, expected_ranks=None, expected_nodes=None):
    """Reasons why a kernel run is invalid (empty when it is valid).

    Invalid means the figures must not be used: the run stopped early, data read back
    was wrong, the wrong number of ranks ran (the symptom of a wrong srun MPI plugin),
    or a write phase ended before its stonewall (IO500's rule: too little work).
    """
    problems = []
    if report["exit_code"] != 0:
        first = (report.get("errors") or [{}])[0]
        problems.append(f"kernel exit {report['exit_code']} ({report.get('exit_reason')}): "
                        f"{first.get('message', 'no message')}")
    if not report["complete"]:
        problems.append("the run did not complete every phase")
    nranks = report["mpi"].get("nranks")
    if expected_ranks is not None and nranks != expected_ranks:
        problems.append(f"{nranks} MPI ranks ran, {expected_ranks} were launched: the MPI "
                        "library and the launcher's PMI do not match")
    nnodes = report["mpi"].get("nnodes")
    if expected_nodes is not None and nnodes != expected_nodes:
        problems.append(f"ranks ran on {nnodes} nodes, {expected_nodes} were requested")
    bad = report.get("summary", {}).get("verify_bad_words", 0) or 0
    if bad:
        problems.append(f"data verification failed: {bad:.0f} words read back differ")
    stonewall = report["config"].get("stonewall_s") or 0
    if stonewall > 0:
        for rep in report.get("repetitions", []):
            write = rep.get("phases", {}).get("write") or rep.get("phases", {}).get("create")
            if write and write.get("stonewall_hit_ranks", 1) == 0:
                problems.append(f"repetition {rep['rep']}: the write phase finished before its "
                                f"{stonewall} s stonewall: too little work for a valid figure")
    return problems


# ---- IOR ---------------------------------------------------------------------------------
# Our name: (IOR's summary key, type); bandwidths in MiB/s, times in s.
_IOR_SUMMARY = {
    "bw_max": ("bwMaxMIB", float), "bw_min": ("bwMinMIB", float),
    "bw_mean": ("bwMeanMIB", float), "bw_std": ("bwStdMIB", float),
    "ops_mean": ("OPsMean", float), "mean_time": ("MeanTime", float),
    "aggregate_MiB": ("xsizeMiB", float), "tasks": ("numTasks", int),
    "tasks_per_node": ("tasksPerNode", int), "transfer_size": ("transferSize", int),
    "block_size": ("blockSize", int), "segments": ("segmentCount", int),
    "file_per_proc": ("filePerProc", bool), "api": ("API", str),
    "repetitions": ("repetitions", int),
}


def parse_ior_json(text, source="IOR JSON summary"):
    """IOR's JSON summary (``-O summaryFormat=JSON``) -> per-operation figures.

    Returns ``{"operations": {"write": {...}, "read": {...}}, "parameters": {...},
    "results": [...]}``; bandwidths in MiB/s, times in s.
    """
    data = _json_document(text, source, "IOR")
    if "Finished" not in data:
        raise ParseError(f"{source} has no 'Finished' entry: IOR stopped before the end")
    summary = data.get("summary") or []
    tests = data.get("tests") or []
    if not summary or not tests:
        raise ParseError(f"{source} holds no results")
    params = tests[0].get("Parameters", {})
    try:
        operations = {entry["operation"]: {name: cast(entry[key])
                                           for name, (key, cast) in _IOR_SUMMARY.items()}
                      for entry in summary}
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(f"{source}: a summary entry lacks or garbles {exc}") from None
    results = [r for r in tests[0].get("Results", []) if "totalTime" in r]
    return {"operations": operations, "parameters": params, "results": results,
            "version": data.get("Version")}


def ior_problems(parsed, expected_tasks=None):
    """Reasons why an IOR run is invalid (IO500's rules), empty when valid."""
    problems = []
    deadline = float(parsed["parameters"].get("deadlineForStonewall") or 0)
    for result in parsed["results"]:
        if deadline > 0 and result["access"] == "write" and \
                float(result["totalTime"]) < deadline * 0.99:
            problems.append(f"a write phase took {result['totalTime']:.3f} s, shorter than its "
                            f"{deadline:g} s stonewall: too little work for a valid figure")
    for op, fig in parsed["operations"].items():
        if expected_tasks is not None and fig["tasks"] != expected_tasks:
            problems.append(f"IOR {op} ran {fig['tasks']} tasks, {expected_tasks} launched")
        expected_MiB = fig["tasks"] * fig["block_size"] * fig["segments"] / 2**20
        # With a stonewall IOR moves less than planned, which is the point of it.
        # IOR prints MiB with four decimals: allow that rounding, nothing more.
        if deadline == 0 and abs(fig["aggregate_MiB"] - expected_MiB) > 1e-4 + 1e-9 * expected_MiB:
            problems.append(f"IOR {op} moved {fig['aggregate_MiB']} MiB, expected "
                            f"{expected_MiB} MiB")
    return problems


# ---- mdtest --------------------------------------------------------------------------------
_MDTEST_TABLE = re.compile(r"^SUMMARY (rate|time) \(in ([^)]*)\): \(of (\d+) iterations?\)")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")


def _mdtest_op_key(name):
    return name.strip().lower().replace(" ", "_")


def parse_mdtest(text, source="mdtest output"):
    """mdtest's text output -> ``{"rate": {op: {...}}, "time": {...}, ...}``.

    Operation names contain spaces, so a row is its leading words and its trailing
    numbers (Max, Min, Mean, Std Dev first).  A phase mdtest skipped prints 0.000 and
    is left out.  No '-- finished at' line or any ERROR line makes the run invalid.
    """
    lines = text.splitlines()
    errors = [ln.strip() for ln in lines if ln.lstrip().startswith("ERROR")]
    if errors:
        raise ParseError(f"{source}: mdtest reported an error: {errors[0][:160]}")
    if not any(ln.startswith("-- finished at") for ln in lines):
        raise ParseError(f"{source}: no '-- finished at' line: mdtest was killed or aborted")
    tables = {}
    iterations = None
    i = 0
    while i < len(lines):
        match = _MDTEST_TABLE.match(lines[i].strip())
        if not match:
            i += 1
            continue
        kind, unit, iterations = match.group(1), match.group(2), int(match.group(3))
        table = {}
        i += 1
        while i < len(lines) and lines[i].strip():
            fields = lines[i].split()
            numbers = []
            while fields and _NUMBER.match(fields[-1]):
                numbers.insert(0, float(fields.pop()))
            if fields and len(numbers) >= 4 and fields[0] not in ("Operation", "---------"):
                mx, mn, mean, std = numbers[:4]
                if not (mx == 0 and mn == 0 and mean == 0):
                    table[_mdtest_op_key(" ".join(fields))] = {
                        "max": mx, "min": mn, "mean": mean, "std": std}
            i += 1
        tables[kind] = {"unit": unit, "operations": table}
    if not tables:
        raise ParseError(f"{source}: no SUMMARY table")
    tasks = re.search(r"^(\d+) tasks, (\d+) (?:files|directories)", text, re.M)
    return {"rate": tables.get("rate", {}).get("operations", {}),
            "time": tables.get("time", {}).get("operations", {}),
            "iterations": iterations,
            "tasks": int(tasks.group(1)) if tasks else None,
            "items": int(tasks.group(2)) if tasks else None}
