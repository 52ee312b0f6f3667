"""The workload advisor: how long would this job's I/O take on each scratch target?

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

The **prediction** (:func:`advise`) reads the history store and, per scratch target,
splits the job's I/O time into

* *data*: each size class and direction through the target's self-scaling model
  (``scratchbench.selfscale.Model``, rebuilt from the figures whose declarations carry
  a ``selfscale`` chart entry): each class the larger of bytes / predicted throughput
  and requests / request rate (roles ``read_requests_per_s``, ``write_requests_per_s``:
  the self-scaling check's smallest requests); how far the job lies outside what the
  model measured (:func:`extrapolation`) and the error known at that distance beside
  it: the model's validation error (roles ``model_error_median``, ``model_error_max``)
  only inside the measured range (:func:`error_words`); the regime as the check
  measured it (:func:`regime_words`); each other environment's (MPI's) models'
  prediction beside the newest environment's;
* *metadata*: files created (the files the job writes), other opens and stats at the
  stored rates (roles ``creations_per_s``, ``opens_per_s``, ``stats_per_s``);
* *deletion*: the files it writes, at the stored deletion rate (``deletions_per_s``) of the
  variant the check leads its pages with, and of the fastest variant (parallel
  removers) beside it;
* *staging*: when the job stages into the target (a description's ``stage_in`` and
  ``stage_out``, or ``--stage`` for a log: its read-only files in, its written files
  out), each leg as its files at the stored per-file rate, its first bytes (up to the
  size of the staging check's burst, which the page cache absorbs) at the burst's
  bandwidth and the rest at the sustained bandwidth (``stage_*`` roles: the staging
  check fits them from three sets of files).

Figures are found by what their declarations say (a role, a ``selfscale`` chart entry),
never by a check's or a metric's name.  Each part has an interval: the lowest and
highest prediction over the target's last ``RECENT_RUNS`` runs (the stored spread); with
one run there is none yet, and the table says so.  The prediction itself is the median
over the newest ``POINT_RUNS`` runs, so that one noisy night does not move it.  A target
without self-scaling curves says "no self-scaling curves yet" instead of a data time.

Assumptions, stated where they are made: the self-scaling model measures one node, so a
job on several nodes is predicted per node (its processes and bytes divided evenly) and
the nodes are taken to add up; the page cache holds what the job touches as it held what
the benchmark touched (uniqueBytes decides the regime); reads and writes take their
own time (a job's phases follow each other); metadata rates are those measured at the
check's rank count.
"""

import hashlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from reports import store
from scratchbench import selfscale as ss
from scratchbench import units
from scratchbench.errors import ScratchbenchError
from scratchbench.figures import too_short_words
from scratchbench.units import GIB, KIB, MIB, size_words

#: the runs of a series whose figures give a prediction its interval
RECENT_RUNS = store.RECENT_RUNS
#: the newest runs whose median is the prediction: one noisy night does not move it, a
#: real change moves it within three nights
POINT_RUNS = 5
#: the history store has no figure of any scratch target
EXIT_NO_FIGURES = store.NoHistory.exit_code

#: Darshan's request-size bins (POSIX_SIZE_{READ,WRITE}_<bin>): (name, low, high) bytes
DARSHAN_BINS = (("0_100", 0, 100), ("100_1K", 100, KIB), ("1K_10K", KIB, 10 * KIB),
                ("10K_100K", 10 * KIB, 100 * KIB), ("100K_1M", 100 * KIB, MIB),
                ("1M_4M", MIB, 4 * MIB), ("4M_10M", 4 * MIB, 10 * MIB),
                ("10M_100M", 10 * MIB, 100 * MIB), ("100M_1G", 100 * MIB, GIB),
                ("1G_PLUS", GIB, 4 * GIB))
#: the roles (scratchbench.figures.ROLES) of the model's measured error
ERROR_ROLES = ("model_error_median", "model_error_max")
#: a figure's unit -> factor to the advisor's base units (bytes/s, operations/s, fraction)
UNIT_SCALE = {"B/s": 1.0, "KiB/s": KIB, "MiB/s": MIB, "GiB/s": GIB, "kB/s": 1e3, "MB/s": 1e6,
              "GB/s": 1e9, "ops/s": 1.0, "deletions/s": 1.0, "files/s": 1.0, "%": 0.01,
              "B": 1.0, "KiB": KIB, "MiB": MIB, "GiB": GIB}


class AdvisorError(ScratchbenchError):
    """A log or description the advisor cannot use; the message is one line."""

    exit_code = 2


# ---- the profile ---------------------------------------------------------------------------
@dataclass
class Profile:
    """What a job's I/O is, whatever it was read from.  Sizes in bytes, times in s."""

    source: str                      # "Darshan log x.darshan" / "description x.yaml"
    processes: int
    nodes: int = 1
    bytes_read: int = 0
    bytes_written: int = 0
    reads: int = 0                   # read requests
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
    unique_bytes: int = 0            # bytes touched (the footprint), all nodes together
    files: int = 0                   # distinct files opened
    files_written: int = 0           # files the job wrote: created, and deleted later
    opens: int = 0
    stats: int = 0
    #: {"in": {"bytes": b, "files": f}, "out": {...}} when the job stages, else None
    staging: dict = None
    #: what a log says the job read without writing, and what it wrote: {"bytes",
    #: "files"}; what it would stage in and out (``--stage``)
    inputs: dict = None
    outputs: dict = None
    #: what a log says the job spent in I/O: the slowest rank's time (Darshan's estimate)
    observed_io_s: float = None
    observed: dict = None            # {"read_s", "write_s", "meta_s"} over all ranks
    run_time_s: float = None
    notes: list = field(default_factory=list)

    def as_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        return cls(**data)

    @property
    def read_fraction(self):
        total = self.reads + self.writes
        return self.reads / total if total else 0.0

    def words(self):
        """The profile in one sentence."""
        parts = [f"{self.processes} process{'es' * (self.processes != 1)}"
                 + (f" on {self.nodes} nodes" if self.nodes > 1 else "")]
        for direction, amount, count in (("read", self.bytes_read, self.reads),
                                         ("written", self.bytes_written, self.writes)):
            if amount:
                key = "read" if direction == "read" else "write"
                parts.append(f"{size_words(amount)} {direction} in "
                             f"{count_words(count, 'request')} "
                             f"(mean {size_words(amount / max(count, 1))}, "
                             f"{self.consecutive[key]:.0%} consecutive)")
        parts.append(f"{size_words(self.unique_bytes)} touched")
        parts.append(f"{self.files:,} file{'s' * (self.files != 1)} opened, "
                     f"{self.files_written:,} written")
        if self.opens or self.stats:
            parts.append(f"{count_words(self.opens, 'open')}, "
                         f"{count_words(self.stats, 'stat')}")
        legs = [f"{leg} {size_words(s['bytes'])} in {count_words(s['files'], 'file')}"
                for leg, s in (self.staging or {}).items() if s["bytes"] or s["files"]]
        if legs:
            parts.append("stages " + ", ".join(legs))
        return "; ".join(parts)


def size_classes_of(histogram, access_sizes, total_bytes):
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
        exact = [(size, n) for size, n in access_sizes.items() if low <= size < high
                 or (name == "1G_PLUS" and size >= GIB)]
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
    (re.compile(r"failed to read .*header"), "its header (it is not a Darshan log, or is "
                                             "cut short before its first kilobytes)"),
    (re.compile(r"failed to read name hash"), "the table of file names"),
    (re.compile(r"failed to read module (\S+) data"), "the {0} module's records"),
    (re.compile(r"failed to read job"), "the job record"),
)


def profile_from_darshan(path, nodes=1, stage=False):
    """The profile of a Darshan log; AdvisorError (one line) when the log cannot be
    read, is truncated, or has no POSIX data."""
    path = Path(path)
    if not path.is_file():
        raise AdvisorError(f"{path}: no such file")
    try:
        child = subprocess.run([sys.executable, "-m", "reports.advisor", "--darshan-profile",
                                str(path)], capture_output=True, text=True, timeout=600,
                               env=dict(os.environ, PYTHONWARNINGS="ignore"))
    except subprocess.TimeoutExpired:
        raise AdvisorError(f"{path}: reading the log took more than 10 minutes") from None
    complaints = _darshan_complaints(child.stderr)
    try:
        answer = json.loads(child.stdout.strip().splitlines()[-1]) if child.stdout.strip() \
            else {}
    except ValueError:
        answer = {}
    if complaints and not answer.get("profile"):
        raise AdvisorError(f"{path}: truncated or damaged Darshan log: libdarshan-util could "
                           f"not read {' or '.join(complaints)}")
    if child.returncode != 0 or not answer:
        last = (child.stderr.strip().splitlines() or ["no message"])[-1]
        raise AdvisorError(f"{path}: not a readable Darshan log ({last[:200]})")
    if answer.get("error"):
        raise AdvisorError(f"{path}: {answer['error']}")
    profile = Profile.from_dict(answer["profile"])
    cut = answer.get("cut")
    if complaints or cut:
        # a log cut short after the records it needs: say so, and what was still read
        read = [f"{name} ({size_words(m['bytes_read'] + m['bytes_written'])})"
                for name, m in profile.modules.items()
                if m["counted"] == "counted" and not m.get("unread")]
        lost = (f"its header says {cut['expected']:,} bytes, the file has {cut['size']:,}: "
                f"the {', '.join(cut['modules']) or 'file name'} records are missing"
                if cut else f"libdarshan-util could not read {' or '.join(complaints)}")
        profile.notes.insert(0, f"the log is cut short or damaged: {lost}; the profile is "
                                f"what was still read: {', '.join(read)}")
    return _spread_and_stage(profile, nodes, stage)


def _darshan_complaints(stderr):
    found = []
    for line in stderr.splitlines():
        for pattern, words in DARSHAN_COMPLAINTS:
            match = pattern.search(line)
            if match:
                text = words.format(*match.groups())
                if text not in found:
                    found.append(text)
    return found


def _spread_and_stage(profile, nodes, stage):
    if not isinstance(nodes, int) or nodes < 1:
        raise AdvisorError(f"--nodes: expected an integer of at least 1, got {nodes!r}")
    profile.nodes = nodes
    if nodes == 1:
        profile.notes.append("a Darshan log does not say how many nodes the job used: one "
                             "node assumed (--nodes N says otherwise)")
    if stage:
        profile.staging = {"in": dict(profile.inputs), "out": dict(profile.outputs)}
        profile.notes.append("staging: the files the job only read are staged in, the "
                             "files it wrote are staged out")
    return profile


#: the modules whose traffic a profile counts: what a job moved through the file system
COUNTED = ("POSIX", "STDIO")
#: modules layered on POSIX: their bytes are already in POSIX's counters beneath them
LAYERED = ("MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR")
#: modules that record no data traffic of their own (layouts, traces of POSIX and MPI-IO)
NO_TRAFFIC = ("LUSTRE", "DXT_POSIX", "DXT_MPIIO", "HEATMAP", "MDHIM", "APMPI", "APXC",
              "BG/Q")
#: names a reader knows a module by
MODULE_WORDS = {"DFS": "DFS (DAOS)", "DAOS": "DAOS's object API"}


def _read_darshan(path):
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
        return {"error": f"no POSIX or STDIO module data: the log holds {others}; the "
                         "advisor needs the data traffic Darshan records through POSIX "
                         "(MPI-IO and HDF5 included) or STDIO"}
    frames, accounted = {}, {}
    for name, info in modules.items():
        entry = {"bytes_read": 0, "bytes_written": 0, "partial": bool(info.get("partial_flag")),
                 "counted": "no data traffic" if name in NO_TRAFFIC else
                 "in POSIX" if name in LAYERED else "counted" if name in COUNTED else
                 "not predicted"}
        accounted[name] = entry
        if entry["counted"] not in ("counted", "not predicted"):
            continue
        try:
            report.mod_read_all_records(name)
            records = report.records[name]
        except Exception:          # a module PyDarshan cannot read, or cut short
            entry["unread"] = True
            continue
        if len(records) == 0:
            entry["unread"] = bool(info.get("len"))
            continue
        frame = records.to_df()
        counters = frame["counters"]
        for direction, suffix in (("bytes_read", "_BYTES_READ"),
                                  ("bytes_written", "_BYTES_WRITTEN")):
            columns = [c for c in counters.columns if c.endswith(suffix)
                       and "RANK" not in c and "VAR" not in c]
            entry[direction] = int(counters[columns[0]].sum()) if columns else 0
        if name in COUNTED:
            frames[name] = (counters, frame["fcounters"])
    if not frames:
        unread = [n for n in COUNTED if accounted.get(n, {}).get("unread")]
        if unread:
            return {"error": f"truncated or damaged Darshan log: its {' and '.join(unread)} "
                             "module records could not be read"}
        return {"error": "no POSIX or STDIO records: the job opened no file through them"}
    job = report.metadata["job"]
    profile = profile_of_modules(frames, int(job["nprocs"]), float(job.get("run_time") or 0))
    profile.modules = accounted
    profile.notes += module_notes(accounted)
    return {"profile": profile.as_dict(), "cut": cut_short(path, modules)}


def cut_short(path, modules):
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
    regions = []
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
    missing = [name for name, info in modules.items()
               if any(length == info.get("len") and off + length > size
                      for off, length in regions[1:])]
    return {"size": size, "expected": expected, "modules": missing}


def module_notes(modules):
    """One line per thing a reader must know about the log's modules: what was counted
    through what, what is in POSIX already, what is not predicted, what is partial."""
    notes = []
    counted = [(n, m) for n, m in modules.items() if m["counted"] == "counted"
               and m["bytes_read"] + m["bytes_written"]]
    if len(counted) > 1:
        notes.append("counted: " + ", ".join(
            f"{size_words(m['bytes_read'] + m['bytes_written'])} through {n}"
            for n, m in counted))
    layered = [n for n, m in modules.items() if m["counted"] == "in POSIX"]
    if layered:
        notes.append(f"{', '.join(layered)} traffic is counted once, in POSIX's counters "
                     "beneath it")
    for name, m in modules.items():
        volume = m["bytes_read"] + m["bytes_written"]
        if m["counted"] == "not predicted" and volume:
            how = " and ".join(w for w, b in (("read", m["bytes_read"]),
                                               ("written", m["bytes_written"])) if b)
            notes.append(f"{size_words(volume)} {how} through "
                         f"{MODULE_WORDS.get(name, name)} is not predicted (the suite "
                         "measures no such target)")
        elif m["counted"] == "not predicted" and m.get("unread"):
            notes.append(f"the {MODULE_WORDS.get(name, name)} module could not be read: "
                         "its traffic, if any, is not predicted")
        if m["partial"]:
            notes.append(f"Darshan's {name} module ran out of record memory in this job: "
                         "some of its files are not in the log, so its counts are short")
    return notes


def _without_prefix(frame, module):
    """A module's frame with its prefix off the column names (POSIX_READS -> READS), so
    POSIX and STDIO records add up column by column."""
    return frame.rename(columns=lambda c: c[len(module) + 1:]
                        if c.startswith(module + "_") else c)


def profile_of_modules(frames, nprocs, run_time, source=""):
    """A profile from PyDarshan's data frames of POSIX and STDIO ({module: (counters,
    fcounters)}, one row per record: a file on one rank, or rank -1 for a file shared by
    every rank).  Both are data the job moved through the file system; what only one
    records (POSIX's request-size histogram, its consecutive counters, stats) comes
    from it alone."""
    import pandas

    counters = pandas.concat([_without_prefix(c, m).assign(module=m)
                              for m, (c, _) in frames.items()], ignore_index=True)
    fcounters = pandas.concat([_without_prefix(f, m) for m, (_, f) in frames.items()],
                              ignore_index=True)
    counters = counters.fillna(0)
    fcounters = fcounters.fillna(0)
    posix = counters[counters["module"] == "POSIX"]
    stdio = counters[counters["module"] == "STDIO"]

    def total(column, rows=counters):
        return int(rows[column].sum()) if column in rows else 0

    reads, writes = total("READS"), total("WRITES")
    access = {}
    for k in range(1, 5):
        if f"ACCESS{k}_ACCESS" not in posix:
            continue
        for size, count in zip(posix[f"ACCESS{k}_ACCESS"], posix[f"ACCESS{k}_COUNT"]):
            if count > 0:
                access[int(size)] = access.get(int(size), 0) + int(count)
    histogram = {d: {name: total(f"SIZE_{d.upper()}_{name}", posix) for name, _, _ in
                     DARSHAN_BINS} for d in ("read", "write")}
    bytes_read, bytes_written = total("BYTES_READ"), total("BYTES_WRITTEN")
    classes = {}
    for d, requests, moved in (("read", "READS", "BYTES_READ"),
                               ("write", "WRITES", "BYTES_WRITTEN")):
        classes[d] = size_classes_of(histogram[d], access, total(moved, posix))
        # STDIO records no sizes: each record's requests at their mean size
        stdio_sizes, stdio_bins = {}, {}
        for n, b in zip(stdio[requests], stdio[moved]):
            if n > 0:
                size = max(1, round(b / n))
                stdio_sizes[size] = stdio_sizes.get(size, 0) + int(n)
                name = next(name for name, low, high in DARSHAN_BINS
                            if low <= size < high or name == "1G_PLUS")
                stdio_bins[name] = stdio_bins.get(name, 0) + int(n)
        merged = {}
        for size, b in classes[d] + size_classes_of(stdio_bins, stdio_sizes,
                                                    total(moved, stdio)):
            merged[size] = merged.get(size, 0.0) + b
        classes[d] = [[size, b] for size, b in sorted(merged.items())]

    def share(counted, requests):
        """Of the requests, those counted consecutive (sequential), plus each record's
        first request: Darshan compares a request with the one before it on the same
        rank, so a rank's first access is never counted, and a job of one request per
        rank would read as random.  A shared record (rank -1) has up to nprocs first
        requests.  STDIO records no order: its requests count as consecutive but one
        per seek."""
        if not total(requests):
            return 1.0
        firsts = posix[requests].clip(upper=posix["rank"].map(
            lambda r: 1 if r >= 0 else nprocs)) if len(posix) else posix[requests]
        stdio_in_order = (stdio[requests] - stdio["SEEKS"] * stdio[requests] /
                          (stdio["READS"] + stdio["WRITES"]).clip(lower=1)).clip(lower=0) \
            if len(stdio) else stdio[requests]
        in_order = total(counted, posix) + float(firsts.sum()) + float(stdio_in_order.sum())
        return min(1.0, in_order / total(requests))

    # per file (a record id), over its ranks: the bytes it spans, whether it was written
    per_file = counters.assign(span=1 + counters[["MAX_BYTE_READ",
                                                  "MAX_BYTE_WRITTEN"]].max(axis=1),
                               moved=counters["BYTES_READ"] + counters["BYTES_WRITTEN"])
    grouped = per_file.groupby("id").agg(span=("span", "max"), moved=("moved", "sum"),
                                         written=("BYTES_WRITTEN", "sum"),
                                         read=("BYTES_READ", "sum"))
    touched = grouped[grouped["moved"] > 0]
    read_only = grouped[(grouped["read"] > 0) & (grouped["written"] == 0)]
    written = grouped[grouped["written"] > 0]
    # Darshan's estimate of the job's I/O time: the slowest rank's time in files of its
    # own, plus each shared file's slowest rank (darshan-util's agg_time_by_slowest),
    # over POSIX and STDIO together
    times = fcounters.assign(io=fcounters["F_READ_TIME"] + fcounters["F_WRITE_TIME"] +
                             fcounters["F_META_TIME"])
    own = times[times["rank"] >= 0].groupby("rank")["io"].sum()
    shared = times[times["rank"] < 0]["F_SLOWEST_RANK_TIME"].sum()
    return Profile(
        source=source, processes=int(nprocs), bytes_read=bytes_read,
        bytes_written=bytes_written, reads=reads, writes=writes,
        size_classes={"read": classes["read"], "write": classes["write"]},
        histogram=histogram,
        consecutive={"read": share("CONSEC_READS", "READS"),
                     "write": share("CONSEC_WRITES", "WRITES")},
        sequential={"read": share("SEQ_READS", "READS"),
                    "write": share("SEQ_WRITES", "WRITES")},
        unique_bytes=int(touched["span"].sum()), files=int(len(grouped)),
        files_written=int(len(written)), opens=total("OPENS"),
        stats=total("STATS", posix),
        inputs={"bytes": int(read_only["span"].sum()), "files": int(len(read_only))},
        outputs={"bytes": int(written["span"].sum()), "files": int(len(written))},
        observed_io_s=float((own.max() if len(own) else 0.0) + shared),
        observed={"read_s": float(fcounters["F_READ_TIME"].sum()),
                  "write_s": float(fcounters["F_WRITE_TIME"].sum()),
                  "meta_s": float(fcounters["F_META_TIME"].sum())},
        run_time_s=run_time or None)


# ---- workload descriptions -----------------------------------------------------------------
#: what a description may hold: key -> (required, what it is)
DESCRIPTION_KEYS = {
    "processes": (True, "processes doing I/O, an integer of at least 1"),
    "nodes": (False, "nodes they run on, an integer of at least 1 (default 1)"),
    "bytes": (True, "data read and written together, a size such as 20 GiB, 512m or "
                    "1048576 (0 for a job that only opens and deletes files)"),
    "read_fraction": (False, "share of the requests that read, 0 to 1 (default 0)"),
    "request_size": (False, "mean request size, a size (needed when bytes > 0)"),
    "sequential_fraction": (False, "share of requests that continue where the previous "
                                   "one ended, 0 to 1 (default 1)"),
    "footprint": (False, "bytes touched, a size (default: bytes)"),
    "files": (False, "files opened, an integer (default: processes)"),
    "files_written": (False, "files the job writes (and later deletes), an integer "
                             "(default: files when it writes, else 0)"),
    "opens": (False, "opens, an integer (default: files)"),
    "stats": (False, "stats, an integer (default 0)"),
    "stage_in": (False, "data staged into the target before the job: {bytes: SIZE, "
                        "files: N}"),
    "stage_out": (False, "results staged out after it: {bytes: SIZE, files: N}"),
}


def parse_size(value, where):
    """4096, '4k', '4 KiB', '1.5 GiB', '2 GB' -> bytes (scratchbench.units); AdvisorError
    naming ``where`` otherwise."""
    try:
        return units.parse_size(value)
    except ValueError:
        raise AdvisorError(f"{where}: expected a size such as 4 GiB, 512m or 1048576, got "
                           f"{value!r}") from None


def _count(value, where, minimum=0):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise AdvisorError(f"{where}: expected an integer of at least {minimum}, got "
                           f"{value!r}")
    return value


def _fraction(value, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not 0 <= value <= 1:
        raise AdvisorError(f"{where}: expected a fraction from 0 to 1, got {value!r}")
    return float(value)


def description_profile(data, where="description"):
    """A profile from a parsed description (a mapping); AdvisorError naming the key."""
    if not isinstance(data, dict):
        raise AdvisorError(f"{where}: expected a mapping of workload keys "
                           f"({', '.join(DESCRIPTION_KEYS)}), got {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in DESCRIPTION_KEYS)
    if unknown:
        raise AdvisorError(f"{where}: unknown key {unknown[0]!r}; expected some of "
                           f"{', '.join(DESCRIPTION_KEYS)}")
    missing = [k for k, (required, _) in DESCRIPTION_KEYS.items() if required and k not in data]
    if missing:
        raise AdvisorError(f"{where}: missing {missing[0]!r}: "
                           f"{DESCRIPTION_KEYS[missing[0]][1]}")
    processes = _count(data["processes"], f"{where}: processes", 1)
    nodes = _count(data.get("nodes", 1), f"{where}: nodes", 1)
    if nodes > processes:
        raise AdvisorError(f"{where}: nodes: {nodes} nodes for {processes} processes; "
                           "expected at most one node per process")
    total = parse_size(data["bytes"], f"{where}: bytes")
    read_fraction = _fraction(data.get("read_fraction", 0.0), f"{where}: read_fraction")
    sequential = _fraction(data.get("sequential_fraction", 1.0),
                           f"{where}: sequential_fraction")
    if total and "request_size" not in data:
        raise AdvisorError(f"{where}: missing 'request_size': "
                           f"{DESCRIPTION_KEYS['request_size'][1]}")
    request = parse_size(data.get("request_size", 0), f"{where}: request_size")
    if total and request < 1:
        raise AdvisorError(f"{where}: request_size: expected at least 1 byte, got "
                           f"{data['request_size']!r}")
    footprint = parse_size(data.get("footprint", total), f"{where}: footprint")
    files = _count(data.get("files", processes), f"{where}: files")
    bytes_read = int(round(total * read_fraction))
    bytes_written = total - bytes_read
    files_written = _count(data.get("files_written", files if bytes_written else 0),
                           f"{where}: files_written")
    if files_written > files:
        raise AdvisorError(f"{where}: files_written: {files_written} is more than the "
                           f"{files} files opened")
    staging = {}
    for key, leg in (("stage_in", "in"), ("stage_out", "out")):
        if key in data:
            value = data[key]
            if not isinstance(value, dict) or set(value) - {"bytes", "files"} or \
                    "bytes" not in value:
                raise AdvisorError(f"{where}: {key}: expected {{bytes: SIZE, files: N}}, got "
                                   f"{value!r}")
            staging[leg] = {"bytes": parse_size(value["bytes"], f"{where}: {key}: bytes"),
                            "files": _count(value.get("files", 1), f"{where}: {key}: files",
                                            1)}
    reads = int(round(bytes_read / request)) if bytes_read else 0
    writes = int(round(bytes_written / request)) if bytes_written else 0
    return Profile(
        source=where, processes=processes, nodes=nodes, bytes_read=bytes_read,
        bytes_written=bytes_written, reads=reads, writes=writes,
        size_classes={"read": [[request, bytes_read]] if bytes_read else [],
                      "write": [[request, bytes_written]] if bytes_written else []},
        consecutive={"read": sequential, "write": sequential},
        sequential={"read": sequential, "write": sequential},
        unique_bytes=footprint, files=files, files_written=files_written,
        opens=_count(data.get("opens", files), f"{where}: opens"),
        stats=_count(data.get("stats", 0), f"{where}: stats"), staging=staging or None)


def profile_from_description(path):
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise AdvisorError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise AdvisorError(f"{path}: neither a Darshan log (no Darshan header) nor a "
                           "workload description (not text); expected one of them") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AdvisorError(f"{path}: unreadable ({getattr(exc, 'strerror', None) or exc})") \
            from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise AdvisorError(f"{path}: not valid YAML{at} "
                           f"({getattr(exc, 'problem', None) or 'parse error'})") from None
    return description_profile(data, f"description {path.name}")


#: DARSHAN_MAGIC_NR, the 64-bit integer after a log's 8-byte version field, in either
#: byte order (a log is written in its machine's)
DARSHAN_MAGIC = (6567223).to_bytes(8, "little"), (6567223).to_bytes(8, "big")


def is_darshan_log(path):
    """A Darshan log starts with its format version ("3.41") in an 8-byte field and
    Darshan's magic number after it, whatever the file is called; a description is
    text."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except FileNotFoundError:
        raise AdvisorError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise AdvisorError(f"{path}: a directory; expected a Darshan log or a workload "
                           "description (YAML)") from None
    except OSError as exc:
        raise AdvisorError(f"{path}: unreadable ({exc.strerror})") from None
    return str(path).endswith(".darshan") or head[8:16] in DARSHAN_MAGIC


def load_profile(path, nodes=None, stage=False):
    """The profile of a Darshan log or a description, by what the file is."""
    if nodes is not None and (isinstance(nodes, bool) or not isinstance(nodes, int)
                              or nodes < 1):
        raise AdvisorError(f"--nodes: expected an integer of at least 1, got {nodes!r}")
    if is_darshan_log(path):
        profile = profile_from_darshan(path, nodes if nodes is not None else 1, stage)
        profile.source = f"Darshan log {Path(path).name}"
        return profile
    if nodes is not None or stage:
        raise AdvisorError(f"{path}: --nodes and --stage are for Darshan logs; a "
                           "description says nodes, stage_in and stage_out itself")
    return profile_from_description(path)


# ---- what the store holds about each target ----------------------------------------------
@dataclass
class Rate:
    """A stored rate of one role on one target: the median of its newest POINT_RUNS
    values and the spread over the recent runs of its series, in base units."""

    role: str
    value: float
    low: float
    high: float
    runs: int
    date: float
    label: str
    variant: str
    ranks: int
    nodes: int
    leads: bool
    environ: str = ""
    #: the newest value was timed in a phase too short to trust (its length, s), or None
    short_phase: float = None

    def as_dict(self):
        return asdict(self)


def short_phase_note(rates):
    """A note when a prediction rests on figures timed in phases too short to trust."""
    short = sorted({r.label for r in rates if r is not None and r.short_phase is not None})
    if not short:
        return []
    shortest = min(r.short_phase for r in rates if r is not None and r.short_phase is not None)
    return [f"rests on figures {too_short_words(shortest)} ({'; '.join(short)}): run a "
            "nightly or acceptance workload for figures to plan with"]


@dataclass
class TargetFigures:
    """What the advisor computes with on one scratch target."""

    name: str
    kind: str = ""
    models: list = field(default_factory=list)     # [(run date, Model)], newest first
    #: the environment (programming environment: its MPI) the models were measured in
    environ: str = ""
    #: the other environments' newest models: {environ: [(run date, Model)]}
    other_models: dict = field(default_factory=dict)
    model_notes: list = field(default_factory=list)
    errors: dict = field(default_factory=dict)      # role -> Rate (a fraction)
    rates: dict = field(default_factory=dict)       # role -> [Rate], the leading one first


def _base(value, unit):
    scale = UNIT_SCALE.get(unit or "")
    return None if scale is None or value is None or not math.isfinite(value) else \
        value * scale


def stored_figures(conn, recent=RECENT_RUNS):
    """{target: TargetFigures} from the history store."""
    targets = {}

    def target(row):
        name = row["scratch_target"] or "unspecified"
        t = targets.setdefault(name, TargetFigures(name))
        t.kind = t.kind or row["scratch_kind"] or ""
        return t

    # The self-scaling models: the cases with figures whose chart has a selfscale entry,
    # grouped by series; the newest series of each target gives its models.
    cases = {}
    for row in conn.execute(
            "SELECT f.metric, f.value, f.unit, f.label, f.better, f.chart, c.case_id, "
            "c.series, c.scratch_target, c.scratch_kind, c.environ, r.started FROM figures f "
            "JOIN cases c ON f.case_id = c.case_id JOIN runs r ON r.run_id = c.run_id "
            "WHERE f.chart LIKE '%\"selfscale\"%' AND f.value IS NOT NULL"):
        entry = cases.setdefault(row["case_id"], {"row": row, "figures": {}})
        entry["figures"][row["metric"]] = (row["value"], {
            "unit": row["unit"], "label": row["label"], "better": row["better"],
            "chart": json.loads(row["chart"])})
    by_series = {}
    for case_id, entry in cases.items():
        row = entry["row"]
        by_series.setdefault((row["scratch_target"], row["series"]), []).append(entry)
    # the newest series of each target and environment (one per MPI): the newest
    # environment's models predict, the others' are shown beside them, never dropped
    newest = {}
    for (name, series), entries in by_series.items():
        environ = entries[0]["row"]["environ"] or ""
        last = max(e["row"]["started"] or 0 for e in entries)
        if (name, environ) not in newest or last > newest[name, environ][0]:
            newest[name, environ] = (last, series)
    leading = {}
    for (name, environ), (last, _) in newest.items():
        if name not in leading or last > leading[name][0]:
            leading[name] = (last, environ)
    for (name, series), entries in by_series.items():
        environ = entries[0]["row"]["environ"] or ""
        if newest[name, environ][1] != series:
            continue
        t = target(entries[0]["row"])
        models = []
        for entry in sorted(entries, key=lambda e: e["row"]["started"] or 0,
                            reverse=True)[:recent]:
            try:
                models.append((entry["row"]["started"], ss.Model.from_figures(
                    entry["figures"])))
            except ss.SelfScaleError as exc:
                t.model_notes.append(f"a run's self-scaling figures give no model: {exc}")
        if leading[name][1] == environ:
            t.models, t.environ = models, environ
        elif models:
            t.other_models[environ] = models

    # Rates by role: per series, the median of the newest runs and the spread of the
    # recent runs.
    rows = conn.execute(
        "SELECT f.role, f.metric, f.value, f.unit, f.label, c.case_id, c.series, "
        "c.scratch_target, c.scratch_kind, c.variant, c.num_tasks, c.nodes, c.environ, "
        "r.started, f.phase_seconds, f.too_short, "
        "EXISTS (SELECT 1 FROM figures h WHERE h.case_id = c.case_id AND h.headline IS NOT "
        "NULL AND h.headline != '') AS leads FROM figures f JOIN cases c ON "
        "f.case_id = c.case_id JOIN runs r ON r.run_id = c.run_id WHERE f.role IS NOT NULL "
        "AND f.role != '' AND f.value IS NOT NULL ORDER BY r.started DESC").fetchall()
    series = {}
    for row in rows:
        value = _base(row["value"], row["unit"])
        if value is None or value <= 0:
            continue
        # a figure renamed or redefined by a newer check is a series of its own
        series.setdefault((row["scratch_target"], row["role"], row["series"], row["metric"]),
                          []).append((row, value))
    for (name, role, _, _), points in series.items():
        points = points[:recent]
        row = points[0][0]
        values = [v for _, v in points]
        rate = Rate(role=role, value=point(values), low=min(values), high=max(values),
                    runs=len(values), date=row["started"] or 0, label=row["label"] or role,
                    variant=row["variant"] or "", ranks=row["num_tasks"] or 0,
                    nodes=row["nodes"] or 0, leads=bool(row["leads"]),
                    environ=row["environ"] or "",
                    short_phase=row["phase_seconds"] if row["too_short"] else None)
        t = target(row)
        if role in ERROR_ROLES:
            if role not in t.errors or rate.date > t.errors[role].date:
                t.errors[role] = rate
        else:
            t.rates.setdefault(role, []).append(rate)
    for t in targets.values():
        for role, rates in t.rates.items():
            # the variant the check leads its pages with, then the newest
            rates.sort(key=lambda r: (not r.leads, -r.date))
    return targets


# ---- the prediction ------------------------------------------------------------------------
@dataclass
class Part:
    """One part of a target's predicted I/O time."""

    seconds: float = None            # None: cannot be predicted (see missing)
    low: float = None                # the interval over recent runs; None with one run
    high: float = None
    runs: int = 0
    date: float = None               # the newest figures it rests on
    rests_on: str = ""
    missing: str = ""
    notes: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    def as_dict(self):
        return asdict(self)


def _interval(values):
    return (min(values), max(values)) if len(values) > 1 else (None, None)


def point(values):
    """The prediction from per-run values, newest first: their newest POINT_RUNS' median."""
    return statistics.median(values[:POINT_RUNS])


def workload_of(profile, size, direction, model, processes=None):
    """The self-scaling workload of one size class and direction, per node (with
    ``processes`` per node instead of the job's when given)."""
    per_node = processes or max(1, math.ceil(profile.processes / profile.nodes))
    unique = max(ss.UNIT, profile.unique_bytes / profile.nodes)
    return ss.Workload.from_dict({
        "unique_bytes": unique, "size_mean": min(max(size, ss.UNIT), GIB),
        "read_frac": 1.0 if direction == "read" else 0.0,
        "seq_frac": profile.consecutive[direction], "process_num": per_node})


#: the roles of a stored request rate per direction: requests per second of the
#: smallest requests the self-scaling check may use, sequential, in the page cache, on
#: one process (the check's ``request_rate_*`` figures)
REQUEST_ROLES = {"read": "read_requests_per_s", "write": "write_requests_per_s"}
#: how a size class's request time and byte time combine: "max" (the larger) or "sum".
#: Chosen by measurement (ci/benchmarks/advisor_validation.py --only request prints
#: both): on 2026-11-26 at quick sizes (load 12 to 26 on 2 cores), over 18 rows of dd
#: requests of 1 B, 512 B and 4 KiB on node-local disk and the SAN, the max form's
#: median error was 45.8%, the sum form's 43.5% (sum better on 512 B, worse on 4 KiB
#: and on the SAN's reads): no clear winner, so the bound that never charges a request
#: twice stays.
REQUEST_COST = "max"


def request_rate(profile, direction, model, stored=None):
    """Requests per second per node of one direction.  The stored rate (a figure with a
    REQUEST_ROLES role, measured on one process) where there is one, scaled to the job's
    processes per node as the model scales its smallest requests; else the model's own
    at the smallest request size it measured (its throughput there over that size)."""
    smallest = _measured_range(model)["size_mean"][0]
    at_job = model.predict(workload_of(profile, smallest, direction, model))
    if stored is None:
        return at_job / smallest
    one = model.predict(workload_of(profile, smallest, direction, model, processes=1))
    return stored.value * at_job / one


def class_seconds(profile, model, direction, size, moved, stored=None, form=None, rate=None):
    """(seconds, by requests?) of one size class: its bytes over the predicted
    throughput and its requests over the request rate, the larger of the two or their
    sum (``form``, default REQUEST_COST).  Below the smallest request size measured,
    the throughput curve is carried flat and would make a 1-byte request cost as little
    as 1/4096 of a 4 KiB one; the request rate says what a request costs whatever its
    size.  ``rate``: request_rate() of the same arguments, when the caller has it."""
    form = form or REQUEST_COST
    if form not in ("max", "sum"):
        raise AdvisorError(f"request cost form: expected 'max' or 'sum', got {form!r}")
    throughput = model.predict(workload_of(profile, size, direction, model))
    by_bytes = moved / (throughput * profile.nodes)
    requests = moved / max(size, 1)
    rate = rate or request_rate(profile, direction, model, stored)
    by_requests = requests / (rate * profile.nodes)
    seconds = max(by_bytes, by_requests) if form == "max" else by_bytes + by_requests
    return seconds, by_requests > by_bytes


def data_seconds(profile, model, stored_rates=None, form=None):
    """Seconds to move the profile's bytes with one model: each size class and
    direction by class_seconds, the nodes adding up."""
    seconds = 0.0
    for direction in ("read", "write"):
        for size, moved in profile.size_classes.get(direction, []):
            if moved > 0:
                seconds += class_seconds(profile, model, direction, size, moved,
                                         (stored_rates or {}).get(direction), form)[0]
    return seconds


def _measured_range(model):
    """{parameter: (low, high)} the model's curves were measured over."""
    ranges = {"unique_bytes": (min(model.unique_curve.xs), max(model.unique_curve.xs))}
    for regime in model.regimes.values():
        for p, curve in regime.curves.items():
            lo, hi = ranges.get(p, (math.inf, -math.inf))
            ranges[p] = (min(lo, min(curve.xs)), max(hi, max(curve.xs)))
    return ranges


#: a prediction this many times past the measured range (or less) is taken as inside it
INSIDE = 1.01


def extrapolation(profile, model):
    """(factor, [words]): how far the job lies outside what the model measured, per
    parameter (processes per node, bytes touched per node, request sizes above or
    below the sizes measured), and the largest of those factors (1.0: inside)."""
    ranges = _measured_range(model)
    per_node = math.ceil(profile.processes / profile.nodes)
    unique = profile.unique_bytes / profile.nodes
    sizes = sorted({s for d in ("read", "write") for s, b in profile.size_classes.get(d, [])
                    if b})
    factor, words = 1.0, []
    lo, hi = ranges["process_num"]
    if per_node > hi * INSIDE:
        factor = max(factor, per_node / hi)
        words.append(f"{per_node} processes per node, {per_node / hi:,.1f}x the {hi:.0f} "
                     "measured (the curve's end is used)")
    lo, hi = ranges["unique_bytes"]
    if unique > hi * INSIDE:
        factor = max(factor, unique / hi)
        words.append(f"{size_words(unique)} touched per node, {unique / hi:,.1f}x the "
                     f"{size_words(hi)} measured")
    lo, hi = ranges["size_mean"]
    for s in sizes:
        if s > hi * INSIDE or s * INSIDE < lo:
            far = s / hi if s > hi else lo / max(s, 1)
            factor = max(factor, far)
            words.append(f"requests of {size_words(s)}, {far:,.1f}x "
                         f"{'above' if s > hi else 'below'} the {size_words(lo)} to "
                         f"{size_words(hi)} measured")
    return factor, words


def regime_words(profile, model):
    """The regime the job's footprint falls in, named only as it was measured: an
    upper regime the page cache still held when the check measured it is not "beyond
    the page cache"."""
    weight = model.regime_weight(workload_of(profile, MIB, "read", model))
    if weight <= 0.0:
        return "page cache regime"
    knee = model.knee
    if knee is not None and knee.upper_in_page_cache:
        upper = (f"upper regime, which the self-scaling check measured still in the page "
                 f"cache ({knee.top_resident:.0%} of its largest footprint held)")
    elif knee is None or knee.top_resident is None:
        upper = "upper regime (whether the page cache still held it was not recorded)"
    else:
        upper = "upper regime, beyond the page cache"
    return upper if weight >= 1.0 else f"between the page cache regime and the {upper}"


def predict_data(profile, figures):
    if not figures.models:
        return Part(missing="no self-scaling curves yet", notes=list(figures.model_notes))
    if not (profile.bytes_read or profile.bytes_written):
        return Part(seconds=0.0, rests_on="no data moved", runs=len(figures.models),
                    date=figures.models[0][0])
    date, model = figures.models[0]
    stored = {d: _request_rate_of(figures, role) for d, role in REQUEST_ROLES.items()}
    values = [data_seconds(profile, m, stored) for _, m in figures.models]
    low, high = _interval(values)
    seconds = point(values)
    throughput = (profile.bytes_read + profile.bytes_written) / seconds if seconds else 0
    factor, far = extrapolation(profile, model)
    within = f" of the {figures.environ} environment" if figures.other_models else ""
    part = Part(seconds=seconds, low=low, high=high, runs=len(values), date=date,
                rests_on=f"self-scaling model{within} ({regime_words(profile, model)}), "
                         f"{units.quantity(throughput, 'B/s')} predicted",
                notes=far + list(figures.model_notes))
    part.extra["extrapolation"] = factor
    for environ, models in sorted(figures.other_models.items()):
        own = {d: _request_rate_of(figures, role, environ)
               for d, role in REQUEST_ROLES.items()}
        other = point([data_seconds(profile, m, own) for _, m in models])
        part.extra.setdefault("other_environments", {})[environ] = other
        part.notes.append(
            f"with the self-scaling model of the {environ} environment (another MPI): "
            f"{seconds_words(other)}; the table uses {figures.environ}'s, the newest (the "
            f"advisor does not know which MPI the job used)")
    for direction in ("read", "write"):
        bound = [size for size, moved in profile.size_classes.get(direction, []) if moved
                 and class_seconds(profile, model, direction, size, moved,
                                   stored[direction])[1]]
        if bound:
            rate = point([request_rate(profile, direction, m, stored[direction])
                          for _, m in figures.models])
            source = (f"the stored {REQUEST_ROLES[direction].replace('_', ' ')}"
                      if stored[direction] else
                      f"the model's at its smallest requests measured ("
                      f"{size_words(_measured_range(model)['size_mean'][0])})")
            part.notes.append(
                f"{direction} requests of {', '.join(size_words(b) for b in bound)}: timed "
                f"by their number, {units.quantity(rate * profile.nodes, 'requests/s')} "
                f"({source}), not their bytes")
    for role in ERROR_ROLES:
        error = figures.errors.get(role)
        part.extra[role] = error.value if error else None
    if not figures.errors:
        part.notes.append("the model's validation error is not in the store (no figure "
                          "declares the roles model_error_median/max)")
    part.extra["error_words"] = error_words(part.extra)
    return part


def error_words(extra):
    """The error to print beside a data prediction: the model's validation error where
    the job lies inside the range the check measured (its held-out workloads lie
    there), else how far it extrapolates and that no error is known that far."""
    factor = extra.get("extrapolation") or 1.0
    if factor > INSIDE:
        return (f"extrapolated {factor:,.1f}x beyond what was measured; no error known at "
                "that distance")
    med, top = extra.get("model_error_median"), extra.get("model_error_max")
    if med is None:
        return ""
    return (f"inside the measured range: validation error median {med:.0%}"
            + (f", max {top:.0%}" if top is not None else ""))


def _request_rate_of(figures, role, environ=None):
    """The stored request rate measured in the environment of the models (the
    self-scaling check measures both in one job; default: the environment that
    predicts), else the leading one."""
    environ = figures.environ if environ is None else environ
    same = [r for r in figures.rates.get(role) or [] if r.environ == environ]
    return same[0] if same else _rate(figures, role)


def _rate(figures, role):
    rates = figures.rates.get(role) or []
    return rates[0] if rates else None


def count_words(n, singular, plural=None):
    """'1 file', '2 files', '1,200 opens of existing files'."""
    return f"{n:,} {singular if n == 1 else plural or singular + 's'}"


def _counted(parts, what):
    """Seconds (and interval) of [(count, Rate, words)]: count / rate, summed."""
    seconds = low = high = 0.0
    runs, dates, rests = [], [], []
    for count, rate, words in parts:
        if not count:
            continue
        seconds += count / rate.value
        low += count / rate.high
        high += count / rate.low
        runs.append(rate.runs)
        dates.append(rate.date)
        rests.append(f"{count_words(count, *words)} at {units.number(rate.value)}/s")
    spread = bool(runs) and min(runs) > 1
    return Part(seconds=seconds, low=low if spread else None, high=high if spread else None,
                runs=min(runs) if runs else 0, date=max(dates) if dates else None,
                rests_on="; ".join(rests) or "nothing to do",
                notes=short_phase_note([rate for count, rate, _ in parts if count]))


def predict_metadata(profile, figures):
    creations = profile.files_written
    others = max(0, profile.opens - creations)
    needed = [(creations, "creations_per_s", ("creation",)),
              (others, "opens_per_s", ("open of an existing file", "opens of existing files")),
              (profile.stats, "stats_per_s", ("stat",))]
    parts = []
    for count, role, words in needed:
        rate = _rate(figures, role)
        if count and rate is None:
            return Part(missing=f"no stored {role.replace('_', ' ')} (no figure declares the "
                                f"role {role})")
        if rate is not None:
            parts.append((count, rate, words))
    part = _counted(parts, "metadata")
    ranks = {(r.ranks, r.nodes) for _, r, _ in parts if r.ranks}
    if ranks:
        part.notes.append("rates measured with " + ", ".join(
            f"{n} rank{'s' * (n != 1)} on {m} node{'s' * (m != 1)}" for n, m in sorted(ranks)))
    return part


def predict_deletion(profile, figures):
    rates = figures.rates.get("deletions_per_s") or []
    if not profile.files_written:
        return Part(seconds=0.0, rests_on="the job writes no file")
    if not rates:
        return Part(missing="no stored deletion rate (no figure declares the role "
                            "deletions_per_s)")
    part = _counted([(profile.files_written, rates[0], ("deletion",))], "deletion")
    if rates[0].variant:
        part.rests_on += f" ({rates[0].variant})"
    fastest = max(rates, key=lambda r: r.value)
    if fastest is not rates[0] and fastest.value > rates[0].value * 1.1:
        part.extra["faster"] = {"seconds": profile.files_written / fastest.value,
                                "variant": fastest.variant or fastest.label}
        part.notes.append(f"with {fastest.variant or fastest.label}: "
                          f"{seconds_words(profile.files_written / fastest.value)}")
    return part


def predict_staging(profile, figures):
    if not profile.staging:
        return Part(seconds=0.0, rests_on="the job does not stage" + (
            " (--stage: stage its inputs in and outputs out)" if profile.inputs else ""))
    seconds = low = high = 0.0
    runs, dates, rests, notes = [], [], [], []
    for leg in ("in", "out"):
        amount = profile.staging.get(leg)
        if not amount or not (amount["bytes"] or amount["files"]):
            continue
        bandwidth = _rate(figures, f"stage_{leg}_bytes_per_s")
        files = _rate(figures, f"stage_{leg}_files_per_s")
        if bandwidth is None or files is None:
            return Part(missing=f"no stored stage-{leg} rates (no figures declare the roles "
                                f"stage_{leg}_bytes_per_s and stage_{leg}_files_per_s)")
        # a copy pays for each file and for each byte, its first bytes (as many as the
        # staging check's burst: the page cache absorbs them) at their own bandwidth:
        # the staging check separates the costs with three sets of files
        burst = _rate(figures, f"stage_{leg}_first_bytes_per_s")
        burst_bytes = _rate(figures, "stage_first_bytes")
        first = min(amount["bytes"], burst_bytes.value) if burst and burst_bytes else 0
        rated = [(amount["files"], files), (first, burst), (amount["bytes"] - first, bandwidth)]
        rated = [(count, rate) for count, rate in rated if count]
        if first and amount["bytes"] > first:
            notes.append(f"stage-{leg}: {size_words(amount['bytes'] - first)} past the "
                         f"{size_words(first)} burst at the sustained bandwidth; how much "
                         "more a node's page cache absorbs varies with its free memory")
        largest = _rate(figures, "stage_largest_bytes")
        if largest and amount["bytes"] > largest.value:
            notes.append(f"stage-{leg}: {size_words(amount['bytes'])} is "
                         f"{amount['bytes'] / largest.value:,.1f}x the largest copy "
                         f"the staging check timed ({size_words(largest.value)}): its "
                         "sustained bandwidth is carried past what was measured")
        notes += short_phase_note([rate for _, rate in rated])
        seconds += sum(count / rate.value for count, rate in rated)
        low += sum(count / rate.high for count, rate in rated)
        high += sum(count / rate.low for count, rate in rated)
        runs += [rate.runs for _, rate in rated]
        dates += [rate.date for _, rate in rated]
        rests.append(f"{leg}: {size_words(amount['bytes'])} in "
                     f"{count_words(amount['files'], 'file')}: " + ", ".join(
                         f"{count_words(count, 'file')} at {units.number(rate.value)}/s"
                         if rate is files else
                         f"{size_words(count)} at {units.quantity(rate.value, 'B/s')}"
                         + (" (a burst)" if rate is burst else "")
                         for count, rate in rated))
    spread = bool(runs) and min(runs) > 1
    return Part(seconds=seconds, low=low if spread else None, high=high if spread else None,
                runs=min(runs) if runs else 0, date=max(dates) if dates else None,
                rests_on="; ".join(rests) or "nothing staged", notes=notes)


PARTS = ("data", "metadata", "deletion", "staging")


def predict_target(profile, figures):
    parts = {"data": predict_data(profile, figures),
             "metadata": predict_metadata(profile, figures),
             "deletion": predict_deletion(profile, figures),
             "staging": predict_staging(profile, figures)}
    missing = [name for name, p in parts.items() if p.seconds is None]
    if missing:
        total = Part(missing=f"incomplete: {', '.join(missing)} cannot be predicted")
    else:
        seconds = sum(p.seconds for p in parts.values())
        spread = all(p.low is not None or p.seconds == 0 for p in parts.values())
        total = Part(seconds=seconds,
                     low=sum(p.low if p.low is not None else p.seconds
                             for p in parts.values()) if spread else None,
                     high=sum(p.high if p.high is not None else p.seconds
                              for p in parts.values()) if spread else None,
                     date=max((p.date for p in parts.values() if p.date), default=None))
    dates = [p.date for p in parts.values() if p.date]
    return {"target": figures.name, "kind": figures.kind,
            "figures_from": min(dates) if dates else None,
            "figures_to": max(dates) if dates else None,
            "parts": {name: p.as_dict() for name, p in parts.items()},
            "total": total.as_dict()}


def recommend(predictions):
    """The target to use, when the intervals allow naming one; else why not."""
    complete = [p for p in predictions if p["total"]["seconds"] is not None]
    if not complete:
        return {"target": None, "words": "no target has every figure the prediction needs"}
    complete.sort(key=lambda p: p["total"]["seconds"])
    best = complete[0]
    if len(complete) == 1:
        return {"target": best["target"], "words": f"{best['target']}: the only target "
                                                  "with a complete prediction"}
    runner = complete[1]
    if best["total"]["high"] is None or runner["total"]["low"] is None:
        return {"target": None, "words": f"fastest predicted: {best['target']}, but without "
                                         "an interval (one stored run) no target can be "
                                         "named best yet"}
    if best["total"]["high"] < runner["total"]["low"]:
        return {"target": best["target"],
                "words": f"{best['target']}: its slowest prediction beats the fastest of "
                         f"{runner['target']} (recent runs)"}
    return {"target": None, "words": f"no clear winner: {best['target']} and "
                                     f"{runner['target']} overlap over recent runs"}


def predict_all(profile, figures):
    """{"profile", "targets": [per target], "recommendation"} from stored_figures()."""
    predictions = [predict_target(profile, figures[name]) for name in sorted(figures)]
    return {"profile": profile.as_dict(), "profile_words": profile.words(),
            "targets": predictions, "recommendation": recommend(predictions)}


def load_figures(conn=None, db_path=None):
    """stored_figures() of the history store, read in one snapshot; an error when it has
    no figures of any target."""
    own = conn is None
    conn = conn or store.connect(db_path, create=False)
    try:
        with store.snapshot(conn):
            figures = stored_figures(conn)
    finally:
        if own:
            conn.close()
    if not figures:
        raise ScratchbenchError("the history store has no figures of any scratch target that "
                                "the advisor computes with: run the suite first "
                                "(`scratchbench run`)", EXIT_NO_FIGURES)
    return figures


def advise(profile, conn=None, db_path=None):
    return predict_all(profile, load_figures(conn, db_path))


# ---- the page ---------------------------------------------------------------------------------
#: Common workloads the page predicts for every target (data, not code).
CLASSES_FILE = Path(__file__).with_name("advisor_workloads.yaml")
#: The page's form: each field's choices (per node), the grid its throughputs are
#: computed at.  A description with these values gets the same answer from the CLI.
FORM_GRID = {"request_size": [4 * KIB, 64 * KIB, MIB, 16 * MIB],
             "sequential_fraction": [0.0, 0.5, 1.0],
             "processes_per_node": [1, 2, 4, 8, 16, 32, 64],
             "footprint_per_node": [64 * MIB, GIB, 16 * GIB, 256 * GIB]}


def load_classes(path=CLASSES_FILE):
    """[(name, words, Profile)] of the workload classes file."""
    try:
        entries = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise AdvisorError(f"{path}: unreadable workload classes ({exc})") from None
    if not isinstance(entries, list):
        raise AdvisorError(f"{path}: expected a list of workload classes")
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != {"name", "words", "description"}:
            raise AdvisorError(f"{path}: class {i + 1}: expected name, words and description")
        out.append((entry["name"], entry["words"],
                    description_profile(entry["description"], f"{path.name}: "
                                                              f"{entry['name']}")))
    return out


def _grid_throughputs(figures):
    """{"size|seq|procs|footprint": {"read": [bytes/s per model], "write": [...],
    "extrapolation": factor}}: what the models predict at every point of the form's
    grid, newest model first, each the throughput of class_seconds (requests charged at
    the request rate as the CLI charges them), and how far the point lies outside what
    the newest model measured."""
    stored = {d: _request_rate_of(figures, role) for d, role in REQUEST_ROLES.items()}
    out = {}
    for seq in FORM_GRID["sequential_fraction"]:
        for procs in FORM_GRID["processes_per_node"]:
            for unique in FORM_GRID["footprint_per_node"]:
                profile = Profile(source="form", processes=procs, unique_bytes=unique,
                                  consecutive={"read": seq, "write": seq})
                # a request's cost does not depend on its size: once per model
                rates = {d: [request_rate(profile, d, m, stored[d])
                             for _, m in figures.models] for d in ("read", "write")}
                for size in FORM_GRID["request_size"]:
                    key = f"{size}|{seq:g}|{procs}|{unique}"
                    out[key] = {d: [MIB / class_seconds(profile, m, d, size, MIB, stored[d],
                                                        rate=rate)[0]
                                    for (_, m), rate in zip(figures.models, rates[d])]
                                for d in ("read", "write")}
                    profile.size_classes = {"read": [[size, MIB]], "write": [[size, MIB]]}
                    out[key]["extrapolation"] = extrapolation(profile,
                                                              figures.models[0][1])[0]
    return out


class PredictionCache:
    """The models' predictions kept between page builds, in one JSON file under the
    pages' cache directory: a night adds one model per target and environment, and only
    its points are computed (the form's grid is thousands of predictions per model).
    Keyed by a digest of each model (its curves, regimes and knee) and by the prediction
    code itself (a changed scratchbench/selfscale.py starts afresh); an unreadable file
    is rebuilt."""

    CODE = Path(ss.__file__)

    def __init__(self, path):
        self.path = Path(path)
        self.code = hashlib.sha256(self.CODE.read_bytes()).hexdigest()[:16]
        try:
            kept = json.loads(self.path.read_text())
            self.models = kept["models"] if kept.get("code") == self.code else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.models = {}
        self.used = {}

    def attach(self, figures):
        """Every model of every target (leading and other environments) reads and
        fills its memo here."""
        for t in figures.values():
            for _, model in t.models + [m for ms in t.other_models.values() for m in ms]:
                fp = hashlib.sha256(json.dumps(model.as_dict(), sort_keys=True)
                                    .encode()).hexdigest()[:32]
                memo = self.used.setdefault(fp, self.models.get(fp, {}))
                model.remember_predictions(memo)

    def save(self):
        """Only the models this build used (the file does not grow with the history);
        written whole and renamed, so a build that dies never leaves half a file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"code": self.code, "models": self.used}))
        tmp.replace(self.path)


def page_data(conn, classes_path=CLASSES_FILE, cache_dir=None):
    """What the advisor page shows: the common workloads predicted here, and for the
    form, each target's model throughputs on the form's grid and its stored rates.  The
    caller holds the store's snapshot (a page build reads one).  ``cache_dir``: where
    the predictions are kept between builds (PredictionCache); none, all computed."""
    figures = stored_figures(conn)
    cache = PredictionCache(Path(cache_dir) / "advisor-predictions.json") if cache_dir \
        else None
    if cache:
        cache.attach(figures)
    classes = []
    for name, words, profile in load_classes(classes_path):
        result = predict_all(profile, figures)
        classes.append({"name": name, "words": words, "result": result})
    targets = []
    for name in sorted(figures):
        t = figures[name]
        dates = [d for d, _ in t.models] + [r.date for rs in t.rates.values() for r in rs]
        targets.append({
            "name": name, "kind": t.kind,
            "figures_from": min(dates) if dates else None,
            "figures_to": max(dates) if dates else None,
            "model_dates": [d for d, _ in t.models],
            "throughput": _grid_throughputs(t) if t.models else {},
            "measured": _measured_range(t.models[0][1]) if t.models else None,
            "errors": {role: r.value for role, r in t.errors.items()},
            "rates": {role: [r.as_dict() for r in rs] for role, rs in t.rates.items()}})
    if cache:
        cache.save()
    return {"classes": classes, "targets": targets, "grid": FORM_GRID,
            "parts": list(PARTS), "recent_runs": RECENT_RUNS, "point_runs": POINT_RUNS,
            "keys": {k: words for k, (_, words) in DESCRIPTION_KEYS.items()}}


# ---- words ----------------------------------------------------------------------------------
def seconds_words(seconds):
    """0.0042 -> '4.2 ms', 75 -> '1 min 15 s', None -> '-' (scratchbench.units)."""
    return "-" if seconds is None else units.duration_words(seconds)


def date_words(ts):
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts)) if ts else "-"


def interval_words(part):
    if part.get("seconds") is None:
        return ""
    if part.get("low") is None:
        return "no spread yet (1 run)" if part.get("runs") == 1 else ""
    return f"{seconds_words(part['low'])} to {seconds_words(part['high'])}"


def format_advice(result):
    """The advice as text: the workload, then a table per target."""
    p = result["profile"]
    lines = [f"Workload ({p['source']}): {result['profile_words']}"]
    if p.get("observed_io_s") is not None:
        lines.append(f"  the log says: {seconds_words(p['observed_io_s'])} of I/O at the "
                     f"slowest rank (Darshan's estimate), run time "
                     f"{seconds_words(p.get('run_time_s'))}")
    lines += [f"  note: {n}" for n in p.get("notes") or []]
    for t in result["targets"]:
        lines.append("")
        span = date_words(t["figures_from"]) if t["figures_from"] == t["figures_to"] else \
            f"{date_words(t['figures_from'])} to {date_words(t['figures_to'])}"
        lines.append(f"{t['target']}" + (f" ({t['kind']})" if t["kind"] else "") +
                     f": figures of {span}")
        rows = [("part", "predicted", "interval (recent runs)", "rests on")]
        for name in PARTS + ("total",):
            part = t["total"] if name == "total" else t["parts"][name]
            if part["seconds"] is None:
                rows.append((name, "-", "", part["missing"]))
                continue
            rests = part["rests_on"]
            if name == "data" and part["extra"].get("error_words"):
                rests += f"; {part['extra']['error_words']}"
            rows.append((name, seconds_words(part["seconds"]), interval_words(part), rests))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        for r in rows:
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r[:3], widths))
                         + "  " + r[3])
        for name in PARTS:
            for note in t["parts"][name]["notes"]:
                lines.append(f"  {name}: {note}")
    lines.append("")
    lines.append(f"Use: {result['recommendation']['words']}")
    return "\n".join(lines)


if __name__ == "__main__":
    # The child that reads a Darshan log (see profile_from_darshan).
    if len(sys.argv) == 3 and sys.argv[1] == "--darshan-profile":
        try:
            answer = _read_darshan(sys.argv[2])
        except Exception as exc:      # the library's own words, for the parent's one line
            answer = {"error": f"not a readable Darshan log ({type(exc).__name__}: "
                               f"{str(exc)[:200]})"}
        print(json.dumps(answer), flush=True)
        # Skip the interpreter's teardown: after a damaged log, libdarshan-util's handle
        # may be freed twice, which aborts the process.
        os._exit(0)
    sys.exit(f"usage: {sys.argv[0]} --darshan-profile LOG")
