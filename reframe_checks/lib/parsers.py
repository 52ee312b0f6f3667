"""Parsers of benchmark outputs: plain functions, unit-tested on real outputs.

Each returns figures or raises :class:`ParseError` with a one-line reason; a failed,
killed or truncated run never turns into a number.  The kernel and IOR are read from
their JSON; mdtest has no JSON, so its summary table is read, strictly.
"""

import json
import re
import shlex
from collections.abc import Sequence
from typing import Any

KERNEL_SCHEMA_MAJOR = "1"


class ParseError(ValueError):
    """The output is not a complete, valid result; the message says why."""


def _json_document(text: str, source: str, tool: str) -> Any:
    """A whole JSON document, or a ParseError saying the tool died or was cut short, or
    that several copies of it wrote the same file."""
    if not text.strip():
        raise ParseError(f"{source} is empty: {tool} died before writing it")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        copies = _documents(text) if exc.msg == "Extra data" else []
        if len(copies) > 1:
            ranks = {str((c.get("mpi") or {}).get("nranks")) for c in copies if isinstance(c, dict)}
            raise ParseError(
                f"{source} holds {len(copies)} reports, each of "
                f"{'/'.join(sorted(ranks))} MPI rank(s): {len(copies)} separate "
                f"copies of {tool} ran instead of one parallel job (the MPI "
                "library and the launcher's PMI do not match)"
            ) from None
        raise ParseError(
            f"{source} is not valid JSON ({exc.msg} at line {exc.lineno}): "
            f"{tool} stopped while writing it"
        ) from None


def _documents(text: str) -> list[Any]:
    """The JSON documents written one after the other in text (as many as parse)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text):
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            break
        try:
            document, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            break
        found.append(document)
    return found


# ---- scratchbench-kernel -------------------------------------------------------------
def parse_kernel_json(text: str, source: str = "kernel report") -> dict[str, Any]:
    """The kernel's JSON report as a dict, after checking it is whole and versioned."""
    report = _json_document(text, source, "the kernel")
    version = str(report.get("schema_version", ""))
    if version.split(".")[0] != KERNEL_SCHEMA_MAJOR:
        raise ParseError(f"{source}: schema_version {version!r}, expected {KERNEL_SCHEMA_MAJOR}.x")
    for key in ("mode", "config", "mpi", "complete", "exit_code"):
        if key not in report:
            raise ParseError(f"{source}: no '{key}' field: the report is incomplete")
    return report


def kernel_problems(
    report: dict[str, Any], expected_ranks: int | None = None, expected_nodes: int | None = None
) -> list[str]:
    """Reasons why a kernel run is invalid (empty when it is valid).

    Invalid means the figures must not be used: the run stopped early, data read back
    was wrong, the wrong number of ranks ran (the symptom of a wrong srun MPI plugin),
    or a write phase ended before its stonewall (IO500's rule: too little work).
    """
    problems = []
    if report["exit_code"] != 0:
        first = (report.get("errors") or [{}])[0]
        problems.append(
            f"kernel exit {report['exit_code']} ({report.get('exit_reason')}): "
            f"{first.get('message', 'no message')}"
        )
    if not report["complete"]:
        problems.append("the run did not complete every phase")
    nranks = report["mpi"].get("nranks")
    if expected_ranks is not None and nranks != expected_ranks:
        problems.append(
            f"{nranks} MPI ranks ran, {expected_ranks} were launched: the MPI "
            "library and the launcher's PMI do not match"
        )
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
                problems.append(
                    f"repetition {rep['rep']}: the write phase finished before its "
                    f"{stonewall} s stonewall: too little work for a valid figure"
                )
    return problems


# ---- IOR ---------------------------------------------------------------------------------
# Our name: (IOR's summary key, type); bandwidths in MiB/s, times in s.
_IOR_SUMMARY = {
    "bw_max": ("bwMaxMIB", float),
    "bw_min": ("bwMinMIB", float),
    "bw_mean": ("bwMeanMIB", float),
    "bw_std": ("bwStdMIB", float),
    "ops_mean": ("OPsMean", float),
    "mean_time": ("MeanTime", float),
    "aggregate_MiB": ("xsizeMiB", float),
    "tasks": ("numTasks", int),
    "tasks_per_node": ("tasksPerNode", int),
    "transfer_size": ("transferSize", int),
    "block_size": ("blockSize", int),
    "segments": ("segmentCount", int),
    "file_per_proc": ("filePerProc", bool),
    "api": ("API", str),
    "repetitions": ("repetitions", int),
    "reorder_tasks": ("reorderTasks", bool),
}
# IOR prints aggregate sizes in MiB with at most four decimals: equal byte counts
# differ by no more than this after rounding (far less than one transfer).
_MIB_ROUNDING = 1e-3


def parse_ior_json(text: str, source: str = "IOR JSON summary") -> dict[str, Any]:
    """IOR's JSON summary (``-O summaryFormat=JSON``) -> per-operation figures.

    Returns ``{"operations": {"write": {...}, "read": {...}}, "parameters": {...},
    "results": [...], "removals": [...], "command_line": str, "version": str}``;
    bandwidths in MiB/s, times in s.  ``results`` holds only the write and read
    iterations (each with ``bwMiB``); ``-v`` adds ``{"access": "remove",
    "totalTime": ...}`` entries, which have no bandwidth and go to ``removals``.
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
        operations = {
            entry["operation"]: {
                name: cast(entry[key]) for name, (key, cast) in _IOR_SUMMARY.items()
            }
            for entry in summary
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(f"{source}: a summary entry lacks or garbles {exc}") from None
    entries = tests[0].get("Results", [])
    results = [r for r in entries if r.get("access") in ("write", "read")]
    for result in results:
        if not isinstance(result.get("bwMiB"), (int, float)) or "totalTime" not in result:
            raise ParseError(f"{source}: a {result['access']} result lacks bwMiB or totalTime")
    return {
        "operations": operations,
        "parameters": params,
        "results": results,
        "removals": [r for r in entries if r.get("access") == "remove"],
        "command_line": data.get("Command line", ""),
        "version": data.get("Version"),
    }


def ior_problems(
    parsed: dict[str, Any],
    expected_tasks: int | None = None,
    stonewall_s: float | None = None,
    expected_MiB: float | None = None,
) -> list[str]:
    """Reasons why an IOR run is invalid (IO500's rules), empty when valid.

    * the task count is the one launched;
    * ``stonewall_s``: the stonewall the run was asked for (IO500's ``-D`` with
      ``stoneWallingWearOut``); the run must report that deadline;
    * with a stonewall, a write phase that ends before it did too little work, and
      without wear-out the ranks stop at different points (no equal byte count);
    * bytes moved: ``expected_MiB`` when given (e.g. a read after a stonewalled write
      must move what the write moved), else, without a stonewall, the planned
      tasks x block x segments; a write and a read of one run move the same bytes.
    """
    problems = []
    params = parsed["parameters"]
    deadline = float(params.get("deadlineForStonewall") or 0)
    wear_out = int(params.get("stoneWallingWearOut") or 0)
    writes = "write" in parsed["operations"]
    if stonewall_s is not None and deadline != float(stonewall_s):
        problems.append(
            f"IOR ran with a {deadline:g} s stonewall, {stonewall_s:g} s was "
            "asked: the options did not reach IOR"
        )
    if deadline > 0 and writes and not wear_out:
        problems.append(
            f"a {deadline:g} s stonewall without stoneWallingWearOut: ranks stop "
            "at different offsets, so the data set is not the planned one"
        )
    for result in parsed["results"]:
        if (
            deadline > 0
            and result["access"] == "write"
            and float(result["totalTime"]) < deadline * 0.99
        ):
            problems.append(
                f"a write phase took {result['totalTime']:.3f} s, shorter than its "
                f"{deadline:g} s stonewall: too little work for a valid figure"
            )
    for op, fig in parsed["operations"].items():
        if expected_tasks is not None and fig["tasks"] != expected_tasks:
            problems.append(f"IOR {op} ran {fig['tasks']} tasks, {expected_tasks} launched")
        if expected_MiB is not None:
            expected, why = float(expected_MiB), "as expected"
        elif deadline == 0:
            # With a stonewall IOR moves less than planned, which is the point of it.
            expected = fig["tasks"] * fig["block_size"] * fig["segments"] / 2**20
            why = "planned (tasks x block x segments)"
        else:
            continue
        if abs(fig["aggregate_MiB"] - expected) > _MIB_ROUNDING:
            problems.append(
                f"IOR {op} moved {fig['aggregate_MiB']:g} MiB, {expected:g} MiB "
                f"{why}: a wrong byte count"
            )
    ops = parsed["operations"]
    if (
        deadline > 0
        and "write" in ops
        and "read" in ops
        and abs(ops["write"]["aggregate_MiB"] - ops["read"]["aggregate_MiB"]) > _MIB_ROUNDING
    ):
        problems.append(
            f"IOR read {ops['read']['aggregate_MiB']:g} MiB but wrote "
            f"{ops['write']['aggregate_MiB']:g} MiB: after wear-out they must match"
        )
    return problems


# ---- mdtest --------------------------------------------------------------------------------
# 4.1 prints "SUMMARY rate (in ops/sec): (of N iterations)"; 4.0.0, which spack.yaml
# pins, "SUMMARY rate: (of N iterations)".
_MDTEST_TABLE = re.compile(r"^SUMMARY (rate|time)(?: \(in ([^)]*)\))?: \(of (\d+) iterations?\)")
_MDTEST_TASKS = re.compile(r"^(\d+) tasks, (\d+) (?:files|directories)")
_MDTEST_STONEWALL = re.compile(r"^Continue stonewall hit min: (\d+) max: (\d+) avg: ([\d.]+)")
_MDTEST_COLUMN = re.compile(r"per Rank:|per Iteration:|Std Dev|Max|Min|Mean|\S+")
_MDTEST_COLUMN_NAMES = {"Max": "max", "Min": "min", "Mean": "mean", "Std Dev": "std"}
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")


def _mdtest_op_key(name):
    return name.strip().lower().replace(" ", "_")


def _mdtest_columns(header, source):
    """Column names of a SUMMARY table from its header line.

    ``--showRankStatistics`` puts per-rank Max/Min/Mean ("per Rank:") before the
    aggregate columns ("per Iteration:"); the aggregate ones are max/min/mean/std, the
    per-rank ones rank_max/rank_min/rank_mean.
    """
    fields = header.split(None, 1)
    if not fields or fields[0] != "Operation":
        raise ParseError(f"{source}: a SUMMARY table has no 'Operation' header: {header!r}")
    columns, prefix = [], ""
    for token in _MDTEST_COLUMN.findall(fields[1] if len(fields) > 1 else ""):
        if token in ("per Rank:", "per Iteration:"):
            prefix = "rank_" if token == "per Rank:" else ""
        elif token in _MDTEST_COLUMN_NAMES:
            columns.append(prefix + _MDTEST_COLUMN_NAMES[token])
        else:
            raise ParseError(f"{source}: unknown SUMMARY column {token!r} in {header!r}")
    if sorted(c for c in columns if not c.startswith("rank_")) != [
        "max",
        "mean",
        "min",
        "std",
    ] or len(set(columns)) != len(columns):
        raise ParseError(
            f"{source}: SUMMARY header {header!r} lacks the aggregate "
            "Max, Min, Mean and Std Dev columns"
        )
    return columns


def _mdtest_table(lines, i, source):
    """Rows of the table whose header is lines[i] -> ({op: {column: value}}, next i)."""
    columns = _mdtest_columns(lines[i].strip(), source)
    rows = {}
    i += 1
    while i < len(lines):
        line = lines[i].strip()
        if not line or line.startswith(("-- ", "SUMMARY")) or _MDTEST_TASKS.match(line):
            break
        i += 1
        if line.startswith(("---------", "V-", "WARNING")):
            continue  # the underline, and lines of -v or of other ranks in between
        fields = line.split()
        numbers = []
        while fields and _NUMBER.match(fields[-1]):
            numbers.insert(0, float(fields.pop()))
        if not fields or len(numbers) != len(columns):
            raise ParseError(
                f"{source}: SUMMARY row {line!r} has {len(numbers)} numbers, "
                f"its header names {len(columns)} columns"
            )
        rows[_mdtest_op_key(" ".join(fields))] = dict(zip(columns, numbers))
    return rows, i


def _mdtest_ran(row):
    return any(row[c] != 0 for c in ("max", "min", "mean"))


def _mdtest_block(tasks_match, tables, stonewall, command_line):
    """One task count's result from its SUMMARY tables.

    In a rate table a phase mdtest skipped prints 0.000 and is left out (named in
    ``skipped``).  In a time table 0.000 ms/op is a measured time when the phase ran,
    which the rate table of the same run (``-P``) tells; with ``-Z`` alone nothing
    tells a skipped phase from one faster than 0.5 us/op, so those rows are left out
    of ``time`` and named in ``time_unknown``.
    """
    rate_rows = tables.get("rate", {}).get("rows", {})
    time_rows = tables.get("time", {}).get("rows", {})
    aggregate = ("max", "min", "mean", "std")

    def split(
        rows: dict[str, dict[str, float]],
    ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
        return (
            {op: {c: r[c] for c in aggregate} for op, r in rows.items()},
            {
                op: {c[5:]: r[c] for c in r if c.startswith("rank_")}
                for op, r in rows.items()
                if any(c.startswith("rank_") for c in r)
            },
        )

    ran = {op for op, row in rate_rows.items() if _mdtest_ran(row)}
    rate, rank_rate = split({op: r for op, r in rate_rows.items() if op in ran})
    if "rate" in tables:
        kept = {op: r for op, r in time_rows.items() if op in ran}
        unknown = []
    else:
        kept = {op: r for op, r in time_rows.items() if _mdtest_ran(r)}
        unknown = [op for op in time_rows if op not in kept]
    time, rank_time = split(kept)
    skipped = [op for op in (rate_rows or time_rows) if op not in ran] if "rate" in tables else []
    iterations = next(iter(tables.values()))["iterations"]
    return {
        "tasks": int(tasks_match.group(1)) if tasks_match else None,
        "items": int(tasks_match.group(2)) if tasks_match else None,
        "iterations": iterations,
        "rate": rate,
        "time": time,
        "rank_rate": rank_rate,
        "rank_time": rank_time,
        "skipped": skipped,
        "time_unknown": unknown,
        "stonewall": stonewall,
        "units": {kind: table["unit"] for kind, table in tables.items()},
        "command_line": command_line,
    }


def parse_mdtest_scan(text: str, source: str = "mdtest output") -> list[dict[str, Any]]:
    """mdtest's text output -> one result per task count, in the order mdtest ran them.

    A task scan (``-f/-l/-s``) prints an ``N tasks, M files`` line and its own SUMMARY
    tables per task count; a plain run gives a list of one.  Each result is
    ``{"tasks", "items", "iterations", "rate": {op: {max, min, mean, std}}, "time":
    {...}, "rank_rate"/"rank_time": per-rank max/min/mean (``--showRankStatistics``),
    "skipped": [...], "time_unknown": [...], "stonewall": {min, max, avg} or None,
    "units": {"rate": "ops/sec", "time": "ms/op"} as printed (None from 4.0.0, which
    prints none), "command_line": [mdtest's arguments]}``.
    Operation names are lower case with underscores (``file_creation``).  Aggregate
    columns are read by their headers.  No '-- finished at' line or any ERROR line
    makes the run invalid.
    """
    lines = text.splitlines()
    errors = [ln.strip() for ln in lines if ln.lstrip().startswith("ERROR")]
    if errors:
        raise ParseError(f"{source}: mdtest reported an error: {errors[0][:160]}")
    if not any(ln.startswith("-- finished at") for ln in lines):
        raise ParseError(f"{source}: no '-- finished at' line: mdtest was killed or aborted")
    blocks: list[list[Any]] = []  # [tasks match, {kind: table}, stonewall]
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        tasks = _MDTEST_TASKS.match(line)
        stonewall = _MDTEST_STONEWALL.match(line)
        table = _MDTEST_TABLE.match(line)
        if tasks:
            blocks.append([tasks, {}, None])
        elif stonewall:
            if not blocks:
                blocks.append([None, {}, None])
            blocks[-1][2] = {
                "min": int(stonewall.group(1)),
                "max": int(stonewall.group(2)),
                "avg": float(stonewall.group(3)),
            }
        elif table:
            if not blocks:
                blocks.append([None, {}, None])
            kind = table.group(1)
            if kind in blocks[-1][1]:
                raise ParseError(f"{source}: two SUMMARY {kind} tables for one task count")
            if i + 1 >= len(lines):
                raise ParseError(f"{source}: SUMMARY {kind} table has no header")
            rows, i = _mdtest_table(lines, i + 1, source)
            blocks[-1][1][kind] = {
                "unit": table.group(2),
                "iterations": int(table.group(3)),
                "rows": rows,
            }
            continue
        i += 1
    command = next(
        (ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Command line used:")), ""
    )
    try:
        command_line = shlex.split(command)
    except ValueError:
        command_line = command.split()
    results = [
        _mdtest_block(tasks, tables, stonewall, command_line)
        for tasks, tables, stonewall in blocks
        if tables
    ]
    if not results:
        raise ParseError(f"{source}: no SUMMARY table")
    return results


def parse_mdtest(text: str, source: str = "mdtest output") -> dict[str, Any]:
    """mdtest's text output of one task count -> its result (see parse_mdtest_scan).

    A task scan (-f/-l/-s) is refused here: its tables belong to different task
    counts and must not be read as one result; use parse_mdtest_scan for those.
    """
    results = parse_mdtest_scan(text, source)
    if len(results) > 1:
        counts = ", ".join(str(r["tasks"]) for r in results)
        raise ParseError(
            f"{source}: a task scan (-f/-l/-s) with results for {counts} tasks; "
            "one result was expected (use parse_mdtest_scan for a scan)"
        )
    return results[0]


def parse_mdtest_rank_details(text: str, source: str = "mdtest rank details") -> dict[str, Any]:
    """mdtest's ``--saveRankPerformanceDetails=FILE`` CSV -> items and phase figures.

    Returns ``{"items_per_rank": int, "phases": {op: {"rate": ops/s, "time": s}}}``
    from the ``all`` row: the items each rank processed (after a stonewall's wear-out,
    or as read from the ``-x`` status file) and, per phase that ran, the aggregate
    rate and the phase time to after the closing barrier.
    """
    rows = [ln.split(",") for ln in text.splitlines() if ln.strip()]
    if not rows:
        raise ParseError(f"{source} is empty: mdtest died before writing it")
    header = rows[0]
    if header[:2] != ["rank", "items"]:
        raise ParseError(f"{source}: header {','.join(header[:3])!r}..., expected 'rank,items,...'")
    total = next((r for r in rows[1:] if r[0] == "all"), None)
    if total is None or len(total) < len(header):
        raise ParseError(f"{source}: no complete 'all' row: mdtest stopped while writing it")
    try:
        phases: dict[str, dict[str, float]] = {}
        for name, value in zip(header[2:], total[2:]):
            kind, op = name.split("-", 1)
            if value.strip():
                phases.setdefault(_mdtest_op_key(op), {})[kind] = float(value)
        return {"items_per_rank": int(total[1]), "phases": phases}
    except ValueError as exc:
        raise ParseError(f"{source}: a garbled value in the 'all' row ({exc})") from None


def _mdtest_option(command_line: list[str], option: str) -> str | None:
    """The value given to a short option in mdtest's 'Command line used', or None."""
    for i, arg in enumerate(command_line[:-1]):
        if arg == option:
            return command_line[i + 1]
    return None


def mdtest_problems(
    result: dict[str, Any],
    details: dict[str, Any] | None = None,
    expected_tasks: int | None = None,
    phases: Sequence[str] = (),
    stonewall_s: float | None = None,
    expected_items: int | None = None,
) -> list[str]:
    """Reasons why one mdtest run (one or more phases) is invalid, empty when valid.

    ``result`` is parse_mdtest's, ``details`` parse_mdtest_rank_details' of the same
    run.  ``phases``: the operations this run must have measured (``file_creation``
    ...).  ``stonewall_s``: the ``-W`` it was asked for; the create phase, which
    includes the wear-out, must then last at least that long (IO500's rule).
    ``expected_items``: items per rank every phase must have processed (the planned
    ``-n``, or the count the stonewalled create phase left in its ``-x`` file).
    """
    problems = []
    if expected_tasks is not None and result["tasks"] != expected_tasks:
        problems.append(f"mdtest ran {result['tasks']} tasks, {expected_tasks} were launched")
    for op in phases:
        if op not in result["rate"]:
            problems.append(f"mdtest measured no {op.replace('_', ' ')} rate")
    if stonewall_s:
        asked = _mdtest_option(result["command_line"], "-W")
        if asked is None or float(asked) != float(stonewall_s):
            problems.append(
                f"mdtest ran with stonewall {asked or 'none'}, {stonewall_s:g} s "
                "was asked: the options did not reach mdtest"
            )
    if (stonewall_s or expected_items is not None) and details is None:
        problems.append(
            "mdtest wrote no rank details (--saveRankPerformanceDetails): items "
            "and phase times cannot be checked"
        )
        return problems
    if details is None:
        return problems  # (no stonewall and no item count: nothing below applies)
    if stonewall_s and "file_creation" in phases:
        create = details["phases"].get("file_creation", {}).get("time")
        if create is None or create < float(stonewall_s) * 0.99:
            took = "no time" if create is None else f"{create:.3f} s"
            problems.append(
                f"the create phase took {took}, shorter than its {stonewall_s:g} s "
                "stonewall: too little work for a valid figure"
            )
    if expected_items is not None and details["items_per_rank"] != int(expected_items):
        problems.append(
            f"mdtest processed {details['items_per_rank']} items per rank, "
            f"{expected_items} expected: phases did not see the same files"
        )
    return problems
