"""A job's I/O profile, for the workload advisor (``reports.advisor``).

A job is described by a **profile** (:class:`Profile`): bytes read and written, the
request sizes (a histogram of size classes), the share of requests that continue the
previous one, the bytes it touches, files opened, written, stat'ed, processes, and, from
a Darshan log, the I/O time the job itself saw.  A profile comes from

* a **Darshan log** (:func:`profile_from_darshan`; POSIX and STDIO traffic counted,
  every other module named: see ``COUNTED``, ``LAYERED``), read with PyDarshan (the wheel
  bundles libdarshan-util) in a child process: the C library prints its complaints on
  stderr and, on a truncated log, can abort the process; the child keeps both away from
  the caller and they become one line naming what is missing;
* a **description** (:func:`profile_from_description`): a small YAML file for users
  without a log (``DESCRIPTION_KEYS`` says what it may hold).
"""

import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scratchbench import units
from scratchbench.errors import ScratchbenchError
from scratchbench.units import GIB, KIB, MIB, count_words, size_words

#: Darshan's request-size bins (POSIX_SIZE_{READ,WRITE}_<bin>): (name, low, high) bytes
DARSHAN_BINS = (
    ("0_100", 0, 100),
    ("100_1K", 100, KIB),
    ("1K_10K", KIB, 10 * KIB),
    ("10K_100K", 10 * KIB, 100 * KIB),
    ("100K_1M", 100 * KIB, MIB),
    ("1M_4M", MIB, 4 * MIB),
    ("4M_10M", 4 * MIB, 10 * MIB),
    ("10M_100M", 10 * MIB, 100 * MIB),
    ("100M_1G", 100 * MIB, GIB),
    ("1G_PLUS", GIB, 4 * GIB),
)


class AdvisorError(ScratchbenchError):
    """A log or description the advisor cannot use; the message is one line."""

    exit_code = 2


# ---- the profile ---------------------------------------------------------------------------
@dataclass
class Profile:
    """What a job's I/O is, whatever it was read from.  Sizes in bytes, times in s."""

    source: str  # "Darshan log x.darshan" / "description x.yaml"
    processes: int
    nodes: int = 1
    bytes_read: int = 0
    bytes_written: int = 0
    reads: int = 0  # read requests
    writes: int = 0
    #: {"read": [[request bytes, bytes moved], ...], "write": [...]}: size classes
    size_classes: dict = field(default_factory=lambda: {"read": [], "write": []})
    #: Darshan's histogram as it is (POSIX's): {"read": {bin: requests}, "write": {...}}
    histogram: dict = field(default_factory=dict)
    #: a log's modules: {name: {"bytes_read", "bytes_written", "counted", "partial"}},
    #: "counted" one of COUNTED (in this profile), LAYERED (in POSIX's counts beneath),
    #: "not predicted" (traffic the suite does not model), "no data traffic"
    modules: dict = field(default_factory=dict)
    #: share of requests that start where the previous one ended (the self-scaling
    #: model's seqFrac), per direction; and of those at a higher offset (Darshan's
    #: "sequential", gaps allowed)
    consecutive: dict = field(default_factory=lambda: {"read": 1.0, "write": 1.0})
    sequential: dict = field(default_factory=lambda: {"read": 1.0, "write": 1.0})
    unique_bytes: int = 0  # bytes touched (the footprint), all nodes together
    files: int = 0  # distinct files opened
    files_written: int = 0  # files the job wrote: created, and deleted later
    opens: int = 0
    stats: int = 0
    #: {"in": {"bytes": b, "files": f}, "out": {...}} when the job stages, else None
    staging: dict | None = None
    #: what a log says the job read without writing, and what it wrote: {"bytes",
    #: "files"}; what it would stage in and out (``--stage``)
    inputs: dict | None = None
    outputs: dict | None = None
    #: what a log says the job spent in I/O: the slowest rank's time (Darshan's estimate)
    observed_io_s: float | None = None
    observed: dict | None = None  # {"read_s", "write_s", "meta_s"} over all ranks
    run_time_s: float | None = None
    notes: list = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Profile":
        return cls(**data)

    @property
    def read_fraction(self) -> float:
        total = self.reads + self.writes
        return self.reads / total if total else 0.0

    def words(self) -> str:
        """The profile in one sentence."""
        parts = [
            f"{self.processes} process{'es' * (self.processes != 1)}"
            + (f" on {self.nodes} nodes" if self.nodes > 1 else "")
        ]
        for direction, amount, count in (
            ("read", self.bytes_read, self.reads),
            ("written", self.bytes_written, self.writes),
        ):
            if amount:
                key = "read" if direction == "read" else "write"
                parts.append(
                    f"{size_words(amount)} {direction} in "
                    f"{count_words(count, 'request')} "
                    f"(mean {size_words(amount / max(count, 1))}, "
                    f"{self.consecutive[key]:.0%} consecutive)"
                )
        parts.append(f"{size_words(self.unique_bytes)} touched")
        parts.append(
            f"{self.files:,} file{'s' * (self.files != 1)} opened, {self.files_written:,} written"
        )
        if self.opens or self.stats:
            parts.append(f"{count_words(self.opens, 'open')}, {count_words(self.stats, 'stat')}")
        legs = [
            f"{leg} {size_words(s['bytes'])} in {count_words(s['files'], 'file')}"
            for leg, s in (self.staging or {}).items()
            if s["bytes"] or s["files"]
        ]
        if legs:
            parts.append("stages " + ", ".join(legs))
        return "; ".join(parts)


def size_classes_of(
    histogram: Mapping[str, int], access_sizes: Mapping[int, int], total_bytes: int
) -> list[list[float]]:
    """[[request bytes, bytes moved]] of one direction from Darshan's histogram of
    request counts.  A bin's request size is the mean of the log's most common access
    sizes that fall in it (Darshan keeps the four most common exactly), else the
    geometric middle of the bin; bytes per class are scaled so they add up to the bytes
    the log says moved."""
    classes = []
    for name, low, high in DARSHAN_BINS:
        count = histogram.get(name, 0)
        if not count:
            continue
        exact = [
            (size, n)
            for size, n in access_sizes.items()
            if low <= size < high or (name == "1G_PLUS" and size >= GIB)
        ]
        if exact:
            size = sum(s * n for s, n in exact) / sum(n for _, n in exact)
        else:
            size = math.sqrt(max(low, 1) * high)
        classes.append([size, count * size])
    estimated = sum(b for _, b in classes)
    if total_bytes and not classes:
        return [[float(total_bytes), float(total_bytes)]]
    scale = total_bytes / estimated if estimated else 0.0
    return [[round(size), b * scale] for size, b in classes]


# ---- Darshan logs --------------------------------------------------------------------------
#: what libdarshan-util's complaints mean, in words (its messages on stderr)
DARSHAN_COMPLAINTS = (
    (
        re.compile(r"failed to read .*header"),
        "its header (it is not a Darshan log, or is cut short before its first kilobytes)",
    ),
    (re.compile(r"failed to read name hash"), "the table of file names"),
    (re.compile(r"failed to read module (\S+) data"), "the {0} module's records"),
    (re.compile(r"failed to read job"), "the job record"),
)


def profile_from_darshan(
    path: str | os.PathLike[str], nodes: int = 1, stage: bool = False
) -> Profile:
    """The profile of a Darshan log; AdvisorError (one line) when the log cannot be
    read, is truncated, or has no POSIX data."""
    path = Path(path)
    if not path.is_file():
        raise AdvisorError(f"{path}: no such file")
    try:
        child = subprocess.run(
            [sys.executable, "-m", "reports.job_profile", "--darshan-profile", str(path)],
            capture_output=True,
            text=True,
            timeout=600,
            env=dict(os.environ, PYTHONWARNINGS="ignore"),
        )
    except subprocess.TimeoutExpired:
        raise AdvisorError(f"{path}: reading the log took more than 10 minutes") from None
    complaints = _darshan_complaints(child.stderr)
    try:
        answer = json.loads(child.stdout.strip().splitlines()[-1]) if child.stdout.strip() else {}
    except ValueError:
        answer = {}
    if complaints and not answer.get("profile"):
        raise AdvisorError(
            f"{path}: truncated or damaged Darshan log: libdarshan-util could "
            f"not read {' or '.join(complaints)}"
        )
    if child.returncode != 0 or not answer:
        last = (child.stderr.strip().splitlines() or ["no message"])[-1]
        raise AdvisorError(f"{path}: not a readable Darshan log ({last[:200]})")
    if answer.get("error"):
        raise AdvisorError(f"{path}: {answer['error']}")
    profile = Profile.from_dict(answer["profile"])
    cut = answer.get("cut")
    if complaints or cut:
        # a log cut short after the records it needs: say so, and what was still read
        read = [
            f"{name} ({size_words(m['bytes_read'] + m['bytes_written'])})"
            for name, m in profile.modules.items()
            if m["counted"] == "counted" and not m.get("unread")
        ]
        lost = (
            f"its header says {cut['expected']:,} bytes, the file has {cut['size']:,}: "
            f"the {', '.join(cut['modules']) or 'file name'} records are missing"
            if cut
            else f"libdarshan-util could not read {' or '.join(complaints)}"
        )
        profile.notes.insert(
            0,
            f"the log is cut short or damaged: {lost}; the profile is "
            f"what was still read: {', '.join(read)}",
        )
    return _spread_and_stage(profile, nodes, stage)


def _darshan_complaints(stderr: str) -> list[str]:
    found = []
    for line in stderr.splitlines():
        for pattern, words in DARSHAN_COMPLAINTS:
            match = pattern.search(line)
            if match:
                text = words.format(*match.groups())
                if text not in found:
                    found.append(text)
    return found


def _spread_and_stage(profile: Profile, nodes: int, stage: bool) -> Profile:
    if not isinstance(nodes, int) or nodes < 1:
        raise AdvisorError(f"--nodes: expected an integer of at least 1, got {nodes!r}")
    profile.nodes = nodes
    if nodes == 1:
        profile.notes.append(
            "a Darshan log does not say how many nodes the job used: one "
            "node assumed (--nodes N says otherwise)"
        )
    if stage:
        # a log's profile always has them (profile_of_modules)
        assert profile.inputs is not None and profile.outputs is not None
        profile.staging = {"in": dict(profile.inputs), "out": dict(profile.outputs)}
        profile.notes.append(
            "staging: the files the job only read are staged in, the files it wrote are staged out"
        )
    return profile


#: the modules whose traffic a profile counts: what a job moved through the file system
COUNTED = ("POSIX", "STDIO")
#: modules layered on POSIX: their bytes are already in POSIX's counters beneath them
LAYERED = ("MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR")
#: modules that record no data traffic of their own (layouts, traces of POSIX and MPI-IO)
NO_TRAFFIC = ("LUSTRE", "DXT_POSIX", "DXT_MPIIO", "HEATMAP", "MDHIM", "APMPI", "APXC", "BG/Q")
#: names a reader knows a module by
MODULE_WORDS = {"DFS": "DFS (DAOS)", "DAOS": "DAOS's object API"}


def _read_darshan(path: str) -> dict[str, Any]:
    """Runs in the child: the profile of the log at path as a dict, or {"error": ...}.
    The modules it could read are in the profile's ``modules``; libdarshan-util says on
    stderr what it could not read (a log cut short), and the parent says it."""
    import warnings

    warnings.simplefilter("ignore")
    import darshan

    report = darshan.DarshanReport(path, read_all=False)
    modules = report.modules
    if not set(COUNTED) & set(modules):
        others = ", ".join(sorted(modules)) or "none"
        return {
            "error": f"no POSIX or STDIO module data: the log holds {others}; the "
            "advisor needs the data traffic Darshan records through POSIX "
            "(MPI-IO and HDF5 included) or STDIO"
        }
    frames, accounted = {}, {}
    for name, info in modules.items():
        entry = {
            "bytes_read": 0,
            "bytes_written": 0,
            "partial": bool(info.get("partial_flag")),
            "counted": "no data traffic"
            if name in NO_TRAFFIC
            else "in POSIX"
            if name in LAYERED
            else "counted"
            if name in COUNTED
            else "not predicted",
        }
        accounted[name] = entry
        if entry["counted"] not in ("counted", "not predicted"):
            continue
        try:
            report.mod_read_all_records(name)
            records = report.records[name]
        except Exception:  # a module PyDarshan cannot read, or cut short
            entry["unread"] = True
            continue
        if len(records) == 0:
            entry["unread"] = bool(info.get("len"))
            continue
        frame = records.to_df()
        counters = frame["counters"]
        for direction, suffix in (
            ("bytes_read", "_BYTES_READ"),
            ("bytes_written", "_BYTES_WRITTEN"),
        ):
            columns = [
                c
                for c in counters.columns
                if c.endswith(suffix) and "RANK" not in c and "VAR" not in c
            ]
            entry[direction] = int(counters[columns[0]].sum()) if columns else 0
        if name in COUNTED:
            frames[name] = (counters, frame["fcounters"])
    if not frames:
        unread = [n for n in COUNTED if accounted.get(n, {}).get("unread")]
        if unread:
            return {
                "error": f"truncated or damaged Darshan log: its {' and '.join(unread)} "
                "module records could not be read"
            }
        return {"error": "no POSIX or STDIO records: the job opened no file through them"}
    job = report.metadata["job"]
    profile = profile_of_modules(frames, int(job["nprocs"]), float(job.get("run_time") or 0))
    profile.modules = accounted
    profile.notes += module_notes(accounted)
    return {"profile": profile.as_dict(), "cut": cut_short(path, modules)}


def cut_short(
    path: str | os.PathLike[str], modules: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any] | None:
    """{"size", "expected", "modules"} when the log's header maps records past the end
    of the file (a log cut short: libdarshan-util complains only of the modules it is
    asked to read), else None.  The header (darshan-log-format.h): version[8], magic
    (int64), compression (uint8), partial flag (uint32), the name table's and each
    module's (offset, length) as uint64 pairs from byte 24, one after the other in the
    file; a module's is known by its length (PyDarshan's ``len``)."""
    import struct

    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(24 + 16 * 65)
    order = "<" if head[8:16] == DARSHAN_MAGIC[0] else ">"
    regions: list[tuple[int, int]] = []
    for at in range(24, len(head) - 15, 16):
        off, length = struct.unpack_from(order + "QQ", head, at)
        # the name table and the modules follow each other without gaps; the module
        # table's length differs between versions (16 or 64 modules): it ends where an
        # entry does not start where the one before it ended
        if regions and length and off != max(o + n for o, n in regions):
            break
        regions.append((off, length))
    expected = max((off + length for off, length in regions if length), default=0)
    if expected <= size:
        return None
    missing = [
        name
        for name, info in modules.items()
        if any(length == info.get("len") and off + length > size for off, length in regions[1:])
    ]
    return {"size": size, "expected": expected, "modules": missing}


def module_notes(modules: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per thing a reader must know about the log's modules: what was counted
    through what, what is in POSIX already, what is not predicted, what is partial."""
    notes = []
    counted = [
        (n, m)
        for n, m in modules.items()
        if m["counted"] == "counted" and m["bytes_read"] + m["bytes_written"]
    ]
    if len(counted) > 1:
        notes.append(
            "counted: "
            + ", ".join(
                f"{size_words(m['bytes_read'] + m['bytes_written'])} through {n}"
                for n, m in counted
            )
        )
    layered = [n for n, m in modules.items() if m["counted"] == "in POSIX"]
    if layered:
        notes.append(
            f"{', '.join(layered)} traffic is counted once, in POSIX's counters beneath it"
        )
    for name, m in modules.items():
        volume = m["bytes_read"] + m["bytes_written"]
        if m["counted"] == "not predicted" and volume:
            how = " and ".join(
                w for w, b in (("read", m["bytes_read"]), ("written", m["bytes_written"])) if b
            )
            notes.append(
                f"{size_words(volume)} {how} through "
                f"{MODULE_WORDS.get(name, name)} is not predicted (the suite "
                "measures no such target)"
            )
        elif m["counted"] == "not predicted" and m.get("unread"):
            notes.append(
                f"the {MODULE_WORDS.get(name, name)} module could not be read: "
                "its traffic, if any, is not predicted"
            )
        if m["partial"]:
            notes.append(
                f"Darshan's {name} module ran out of record memory in this job: "
                "some of its files are not in the log, so its counts are short"
            )
    return notes


def _without_prefix(frame: Any, module: str) -> Any:
    """A module's frame with its prefix off the column names (POSIX_READS -> READS), so
    POSIX and STDIO records add up column by column."""
    return frame.rename(columns=lambda c: c[len(module) + 1 :] if c.startswith(module + "_") else c)


def profile_of_modules(
    frames: Mapping[str, tuple[Any, Any]], nprocs: int, run_time: float, source: str = ""
) -> Profile:
    """A profile from PyDarshan's data frames of POSIX and STDIO ({module: (counters,
    fcounters)}, one row per record: a file on one rank, or rank -1 for a file shared by
    every rank).  Both are data the job moved through the file system; what only one
    records (POSIX's request-size histogram, its consecutive counters, stats) comes
    from it alone."""
    import pandas

    counters = pandas.concat(
        [_without_prefix(c, m).assign(module=m) for m, (c, _) in frames.items()], ignore_index=True
    )
    fcounters = pandas.concat(
        [_without_prefix(f, m) for m, (_, f) in frames.items()], ignore_index=True
    )
    counters = counters.fillna(0)
    fcounters = fcounters.fillna(0)
    posix = counters[counters["module"] == "POSIX"]
    stdio = counters[counters["module"] == "STDIO"]
    histogram = {
        d: {name: _total(f"SIZE_{d.upper()}_{name}", posix) for name, _, _ in DARSHAN_BINS}
        for d in ("read", "write")
    }
    classes = _size_classes(posix, stdio, histogram)

    def share(counted: str, requests: str) -> float:
        return _in_order_share(counters, posix, stdio, nprocs, counted, requests)

    grouped = _per_file(counters)
    touched = grouped[grouped["moved"] > 0]
    read_only = grouped[(grouped["read"] > 0) & (grouped["written"] == 0)]
    written = grouped[grouped["written"] > 0]
    return Profile(
        source=source,
        processes=int(nprocs),
        bytes_read=_total("BYTES_READ", counters),
        bytes_written=_total("BYTES_WRITTEN", counters),
        reads=_total("READS", counters),
        writes=_total("WRITES", counters),
        size_classes={"read": classes["read"], "write": classes["write"]},
        histogram=histogram,
        consecutive={
            "read": share("CONSEC_READS", "READS"),
            "write": share("CONSEC_WRITES", "WRITES"),
        },
        sequential={"read": share("SEQ_READS", "READS"), "write": share("SEQ_WRITES", "WRITES")},
        unique_bytes=int(touched["span"].sum()),
        files=int(len(grouped)),
        files_written=int(len(written)),
        opens=_total("OPENS", counters),
        stats=_total("STATS", posix),
        inputs={"bytes": int(read_only["span"].sum()), "files": int(len(read_only))},
        outputs={"bytes": int(written["span"].sum()), "files": int(len(written))},
        observed_io_s=_observed_io_s(fcounters),
        observed={
            "read_s": float(fcounters["F_READ_TIME"].sum()),
            "write_s": float(fcounters["F_WRITE_TIME"].sum()),
            "meta_s": float(fcounters["F_META_TIME"].sum()),
        },
        run_time_s=run_time or None,
    )


def _total(column: str, rows: Any) -> int:
    """The sum of a counter over the rows (0 for a counter the module lacks)."""
    return int(rows[column].sum()) if column in rows else 0


def _size_classes(posix: Any, stdio: Any, histogram: dict[str, dict[str, int]]) -> dict:
    """{direction: [[size, bytes], ...]}: POSIX's from its histogram and its most common
    access sizes, STDIO's from each record's mean request size, merged by size."""
    access: dict[int, int] = {}
    for k in range(1, 5):
        if f"ACCESS{k}_ACCESS" not in posix:
            continue
        for size, count in zip(posix[f"ACCESS{k}_ACCESS"], posix[f"ACCESS{k}_COUNT"]):
            if count > 0:
                access[int(size)] = access.get(int(size), 0) + int(count)
    classes = {}
    for d, requests, moved in (
        ("read", "READS", "BYTES_READ"),
        ("write", "WRITES", "BYTES_WRITTEN"),
    ):
        classes[d] = size_classes_of(histogram[d], access, _total(moved, posix))
        # STDIO records no sizes: each record's requests at their mean size
        stdio_sizes: dict[int, int] = {}
        stdio_bins: dict[str, int] = {}
        for n, b in zip(stdio[requests], stdio[moved]):
            if n > 0:
                size = max(1, round(b / n))
                stdio_sizes[size] = stdio_sizes.get(size, 0) + int(n)
                name = next(
                    name
                    for name, low, high in DARSHAN_BINS
                    if low <= size < high or name == "1G_PLUS"
                )
                stdio_bins[name] = stdio_bins.get(name, 0) + int(n)
        merged: dict[float, float] = {}
        for size, b in classes[d] + size_classes_of(stdio_bins, stdio_sizes, _total(moved, stdio)):
            merged[size] = merged.get(size, 0.0) + b
        classes[d] = [[size, b] for size, b in sorted(merged.items())]
    return classes


def _in_order_share(
    counters: Any, posix: Any, stdio: Any, nprocs: int, counted: str, requests: str
) -> float:
    """Of the requests, those counted consecutive (sequential), plus each record's
    first request: Darshan compares a request with the one before it on the same
    rank, so a rank's first access is never counted, and a job of one request per
    rank would read as random.  A shared record (rank -1) has up to nprocs first
    requests.  STDIO records no order: its requests count as consecutive but one
    per seek."""
    if not _total(requests, counters):
        return 1.0
    firsts = (
        posix[requests].clip(upper=posix["rank"].map(lambda r: 1 if r >= 0 else nprocs))
        if len(posix)
        else posix[requests]
    )
    stdio_in_order = (
        (
            stdio[requests]
            - stdio["SEEKS"] * stdio[requests] / (stdio["READS"] + stdio["WRITES"]).clip(lower=1)
        ).clip(lower=0)
        if len(stdio)
        else stdio[requests]
    )
    in_order = _total(counted, posix) + float(firsts.sum()) + float(stdio_in_order.sum())
    return min(1.0, in_order / _total(requests, counters))


def _per_file(counters: Any) -> Any:
    """Per file (a record id), over its ranks: the bytes it spans, moved, written, read."""
    per_file = counters.assign(
        span=1 + counters[["MAX_BYTE_READ", "MAX_BYTE_WRITTEN"]].max(axis=1),
        moved=counters["BYTES_READ"] + counters["BYTES_WRITTEN"],
    )
    return per_file.groupby("id").agg(
        span=("span", "max"),
        moved=("moved", "sum"),
        written=("BYTES_WRITTEN", "sum"),
        read=("BYTES_READ", "sum"),
    )


def _observed_io_s(fcounters: Any) -> float:
    """Darshan's estimate of the job's I/O time: the slowest rank's time in files of its
    own, plus each shared file's slowest rank (darshan-util's agg_time_by_slowest), over
    POSIX and STDIO together."""
    times = fcounters.assign(
        io=fcounters["F_READ_TIME"] + fcounters["F_WRITE_TIME"] + fcounters["F_META_TIME"]
    )
    own = times[times["rank"] >= 0].groupby("rank")["io"].sum()
    shared = times[times["rank"] < 0]["F_SLOWEST_RANK_TIME"].sum()
    return float((own.max() if len(own) else 0.0) + shared)


# ---- workload descriptions -----------------------------------------------------------------
#: what a description may hold: key -> (required, what it is)
DESCRIPTION_KEYS = {
    "processes": (True, "processes doing I/O, an integer of at least 1"),
    "nodes": (False, "nodes they run on, an integer of at least 1 (default 1)"),
    "bytes": (
        True,
        "data read and written together, a size such as 20 GiB, 512m or "
        "1048576 (0 for a job that only opens and deletes files)",
    ),
    "read_fraction": (False, "share of the requests that read, 0 to 1 (default 0)"),
    "request_size": (False, "mean request size, a size (needed when bytes > 0)"),
    "sequential_fraction": (
        False,
        "share of requests that continue where the previous one ended, 0 to 1 (default 1)",
    ),
    "footprint": (False, "bytes touched, a size (default: bytes)"),
    "files": (False, "files opened, an integer (default: processes)"),
    "files_written": (
        False,
        "files the job writes (and later deletes), an integer "
        "(default: files when it writes, else 0)",
    ),
    "opens": (False, "opens, an integer (default: files)"),
    "stats": (False, "stats, an integer (default 0)"),
    "stage_in": (False, "data staged into the target before the job: {bytes: SIZE, files: N}"),
    "stage_out": (False, "results staged out after it: {bytes: SIZE, files: N}"),
}


def parse_size(value: Any, where: str) -> int:
    """4096, '4k', '4 KiB', '1.5 GiB', '2 GB' -> bytes (scratchbench.units); AdvisorError
    naming ``where`` otherwise."""
    try:
        return units.parse_size(value)
    except ValueError:
        raise AdvisorError(
            f"{where}: expected a size such as 4 GiB, 512m or 1048576, got {value!r}"
        ) from None


def _count(value: Any, where: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise AdvisorError(f"{where}: expected an integer of at least {minimum}, got {value!r}")
    return value


def _fraction(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise AdvisorError(f"{where}: expected a fraction from 0 to 1, got {value!r}")
    return float(value)


def description_profile(data: object, where: str = "description") -> Profile:
    """A profile from a parsed description (a mapping); AdvisorError naming the key."""
    if not isinstance(data, dict):
        raise AdvisorError(
            f"{where}: expected a mapping of workload keys "
            f"({', '.join(DESCRIPTION_KEYS)}), got {type(data).__name__}"
        )
    unknown = sorted(str(k) for k in data if k not in DESCRIPTION_KEYS)
    if unknown:
        raise AdvisorError(
            f"{where}: unknown key {unknown[0]!r}; expected some of {', '.join(DESCRIPTION_KEYS)}"
        )
    missing = [k for k, (required, _) in DESCRIPTION_KEYS.items() if required and k not in data]
    if missing:
        raise AdvisorError(f"{where}: missing {missing[0]!r}: {DESCRIPTION_KEYS[missing[0]][1]}")
    processes = _count(data["processes"], f"{where}: processes", 1)
    nodes = _count(data.get("nodes", 1), f"{where}: nodes", 1)
    if nodes > processes:
        raise AdvisorError(
            f"{where}: nodes: {nodes} nodes for {processes} processes; "
            "expected at most one node per process"
        )
    total = parse_size(data["bytes"], f"{where}: bytes")
    read_fraction = _fraction(data.get("read_fraction", 0.0), f"{where}: read_fraction")
    sequential = _fraction(data.get("sequential_fraction", 1.0), f"{where}: sequential_fraction")
    if total and "request_size" not in data:
        raise AdvisorError(
            f"{where}: missing 'request_size': {DESCRIPTION_KEYS['request_size'][1]}"
        )
    request = parse_size(data.get("request_size", 0), f"{where}: request_size")
    if total and request < 1:
        raise AdvisorError(
            f"{where}: request_size: expected at least 1 byte, got {data['request_size']!r}"
        )
    footprint = parse_size(data.get("footprint", total), f"{where}: footprint")
    files = _count(data.get("files", processes), f"{where}: files")
    bytes_read = int(round(total * read_fraction))
    bytes_written = total - bytes_read
    files_written = _count(
        data.get("files_written", files if bytes_written else 0), f"{where}: files_written"
    )
    if files_written > files:
        raise AdvisorError(
            f"{where}: files_written: {files_written} is more than the {files} files opened"
        )
    staging = {}
    for key, leg in (("stage_in", "in"), ("stage_out", "out")):
        if key in data:
            value = data[key]
            if (
                not isinstance(value, dict)
                or set(value) - {"bytes", "files"}
                or "bytes" not in value
            ):
                raise AdvisorError(
                    f"{where}: {key}: expected {{bytes: SIZE, files: N}}, got {value!r}"
                )
            staging[leg] = {
                "bytes": parse_size(value["bytes"], f"{where}: {key}: bytes"),
                "files": _count(value.get("files", 1), f"{where}: {key}: files", 1),
            }
    reads = int(round(bytes_read / request)) if bytes_read else 0
    writes = int(round(bytes_written / request)) if bytes_written else 0
    return Profile(
        source=where,
        processes=processes,
        nodes=nodes,
        bytes_read=bytes_read,
        bytes_written=bytes_written,
        reads=reads,
        writes=writes,
        size_classes={
            "read": [[request, bytes_read]] if bytes_read else [],
            "write": [[request, bytes_written]] if bytes_written else [],
        },
        consecutive={"read": sequential, "write": sequential},
        sequential={"read": sequential, "write": sequential},
        unique_bytes=footprint,
        files=files,
        files_written=files_written,
        opens=_count(data.get("opens", files), f"{where}: opens"),
        stats=_count(data.get("stats", 0), f"{where}: stats"),
        staging=staging or None,
    )


def profile_from_description(path: str | os.PathLike[str]) -> Profile:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise AdvisorError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise AdvisorError(
            f"{path}: neither a Darshan log (no Darshan header) nor a "
            "workload description (not text); expected one of them"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AdvisorError(
            f"{path}: unreadable ({getattr(exc, 'strerror', None) or exc})"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise AdvisorError(
            f"{path}: not valid YAML{at} ({getattr(exc, 'problem', None) or 'parse error'})"
        ) from None
    return description_profile(data, f"description {path.name}")


#: DARSHAN_MAGIC_NR, the 64-bit integer after a log's 8-byte version field, in either
#: byte order (a log is written in its machine's)
DARSHAN_MAGIC = (6567223).to_bytes(8, "little"), (6567223).to_bytes(8, "big")


def is_darshan_log(path: str | os.PathLike[str]) -> bool:
    """A Darshan log starts with its format version ("3.41") in an 8-byte field and
    Darshan's magic number after it, whatever the file is called; a description is
    text."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except FileNotFoundError:
        raise AdvisorError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise AdvisorError(
            f"{path}: a directory; expected a Darshan log or a workload description (YAML)"
        ) from None
    except OSError as exc:
        raise AdvisorError(f"{path}: unreadable ({exc.strerror})") from None
    return str(path).endswith(".darshan") or head[8:16] in DARSHAN_MAGIC


def load_profile(
    path: str | os.PathLike[str], nodes: int | None = None, stage: bool = False
) -> Profile:
    """The profile of a Darshan log or a description, by what the file is."""
    if nodes is not None and (isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1):
        raise AdvisorError(f"--nodes: expected an integer of at least 1, got {nodes!r}")
    if is_darshan_log(path):
        profile = profile_from_darshan(path, nodes if nodes is not None else 1, stage)
        profile.source = f"Darshan log {Path(path).name}"
        return profile
    if nodes is not None or stage:
        raise AdvisorError(
            f"{path}: --nodes and --stage are for Darshan logs; a "
            "description says nodes, stage_in and stage_out itself"
        )
    return profile_from_description(path)


if __name__ == "__main__":
    # The child that reads a Darshan log (see profile_from_darshan).
    if len(sys.argv) == 3 and sys.argv[1] == "--darshan-profile":
        try:
            answer = _read_darshan(sys.argv[2])
        except Exception as exc:  # the library's own words, for the parent's one line
            answer = {
                "error": f"not a readable Darshan log ({type(exc).__name__}: {str(exc)[:200]})"
            }
        print(json.dumps(answer), flush=True)
        # Skip the interpreter's teardown: after a damaged log, libdarshan-util's handle
        # may be freed twice, which aborts the process.
        os._exit(0)
    sys.exit(f"usage: {sys.argv[0]} --darshan-profile LOG")
