"""What a scratch file system was when a run measured it: the collector's output parsed.

``reframe_checks/scripts/fsfacts.sh`` runs inside a job on a node of the partition (what
a job sees) and prints one section per command, ``### fsfacts: NAME (exit N)`` followed by
the command's own output.  :func:`parse_collected` turns that into the facts stored with
the run (``filesystem_configs`` in the history store): the mount (``/proc/self/mountinfo``),
``stat -f``, GlusterFS's ``gluster volume info``, Lustre's ``lfs getstripe -d`` and
``lfs df``, GPFS's ``mmlsfs``, the node's kernel, Slurm's and the MPI's versions, and the
site's own facts verbatim.  A command that is missing or fails is a problem in words,
never an exception: the benchmark it rides along with must not fail because of it.

:func:`summary` reduces the facts to what a reader compares from one run to the next
(servers, stripes, options, block size, kernel, ...); the pages' diary and the acceptance
page show where that changed.  No I/O here: parsers of text, tested on real outputs
(``tests/fixtures/fsconfig/``).
"""

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

SECTION_RE = re.compile(r"^### fsfacts: (?P<name>[\w.-]+) \(exit (?P<rc>-?\d+)\)$")
#: the sections the collector prints, in its order
SECTIONS = (
    "path",
    "mount",
    "statfs",
    "kernel",
    "slurm",
    "lsf",
    "mpi",
    "gluster",
    "lfs-getstripe",
    "lfs-df",
    "mmlsfs",
    "site",
    "elapsed",
)
#: file system types whose own tool the collector asks
GLUSTER_TYPES = ("fuse.glusterfs", "glusterfs")
LUSTRE_TYPES = ("lustre",)
GPFS_TYPES = ("gpfs",)


class FactsError(ValueError):
    """Collector output that cannot be read at all (not one section)."""


# ---- the collector's sections ----------------------------------------------------------
def sections(text: str) -> dict[str, tuple[int, str]]:
    """{name: (exit code, output)} of the collector's output, in its order."""
    lines: list[str]
    found, name, rc, lines = {}, None, 0, []
    for line in text.splitlines():
        match = SECTION_RE.match(line)
        if match:
            if name is not None:
                found[name] = (rc, "\n".join(lines).strip("\n"))
            name, rc, lines = match["name"], int(match["rc"]), []
        elif name is not None:
            lines.append(line)
    if name is not None:
        found[name] = (rc, "\n".join(lines).strip("\n"))
    if not found:
        raise FactsError("no '### fsfacts:' section: not the output of fsfacts.sh")
    return found


def _failed(name, rc, output):
    # the last line: where a command says what went wrong
    first = next((ln.strip() for ln in reversed(output.splitlines()) if ln.strip()), "no output")
    if rc == 127:
        return f"{name}: not installed on the node ({first[:160]})"
    if rc == 124:
        return f"{name}: no answer within its time limit"
    return f"{name}: exit {rc}: {first[:200]}"


# ---- /proc/self/mountinfo --------------------------------------------------------------
def _unescape(field):
    """mountinfo escapes space, tab, newline and backslash as octal (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[dict[str, str]]:
    """[{mount_point, root, type, source, options, super_options}] of mountinfo lines
    (proc(5): ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER)."""
    mounts = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 6 or len(tail) < 2:
            raise FactsError(
                f"mountinfo line {number}: {line[:80]!r}: expected 'ID PARENT "
                "MAJ:MIN ROOT POINT OPTIONS ... - TYPE SOURCE OPTIONS'"
            )
        mounts.append(
            {
                "mount_point": _unescape(fields[4]),
                "root": _unescape(fields[3]),
                "options": fields[5],
                "type": tail[0],
                "source": _unescape(tail[1]),
                "super_options": tail[2] if len(tail) > 2 else "",
            }
        )
    return mounts


def mount_of(mounts: Iterable[dict[str, str]], path: str) -> dict[str, str] | None:
    """The mount a path lies on: the longest mount point that contains it (the last one
    mounted there when several are stacked)."""
    best = None
    for mount in mounts:
        point = mount["mount_point"].rstrip("/") or "/"
        inside = path == point or path.startswith(point + "/") or point == "/"
        if inside and (best is None or len(point) >= len(best["mount_point"].rstrip("/") or "/")):
            best = mount
    return best


# ---- stat -f ---------------------------------------------------------------------------
def parse_stat_f(text: str) -> dict[str, Any]:
    """`stat -f PATH` (GNU coreutils' default format) -> block size, fundamental block
    size, total, free and available bytes, type and name length."""

    def field(name: str, cast: Callable[[str], Any] = int) -> Any:
        match = re.search(rf"{name}:\s*(\S+)", text)
        if not match:
            raise FactsError(f"stat -f: no '{name}:' in its output")
        return cast(match.group(1))

    block = field("Block size")
    fundamental = field("Fundamental block size")
    totals = re.search(r"Blocks:\s*Total:\s*(\d+)\s+Free:\s*(\d+)\s+Available:\s*(\d+)", text)
    if not totals:
        raise FactsError("stat -f: no 'Blocks: Total: N Free: N Available: N' line")
    total, free, available = (int(x) for x in totals.groups())
    kind = re.search(r"Type:\s*(\S+)", text)
    return {
        "block_size": block,
        "fundamental_block_size": fundamental,
        # statfs(2): block counts are in units of the fundamental block size (f_frsize)
        "size_bytes": total * fundamental,
        "free_bytes": free * fundamental,
        "available_bytes": available * fundamental,
        "type": kind.group(1) if kind else "",
        "name_max": field("Namelen"),
    }


# ---- GlusterFS -------------------------------------------------------------------------
def parse_gluster_volume_info(text: str) -> dict[str, Any]:
    """`gluster volume info VOLUME` (text) -> name, type, status, bricks, servers (the
    distinct hosts of the bricks), transport, the options set on the volume (its
    'Options Reconfigured', as GlusterFS lists them) and the shard block size in bytes
    (0 when sharding is off)."""
    info, bricks, options, in_options = {}, [], {}, False
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("Options Reconfigured:"):
            in_options = True
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        if in_options:
            options[key.strip()] = value.strip()
        elif re.fullmatch(r"Brick\d+", key.strip()):
            bricks.append(value.strip())
        else:
            info[key.strip()] = value.strip()
    if "Volume Name" not in info:
        raise FactsError(
            "gluster volume info: no 'Volume Name:' line (the volume does not "
            "exist, or this is not its output)"
        )
    servers = sorted({b.rsplit(":", 1)[0] for b in bricks})
    shard = 0
    if options.get("features.shard") == "on":
        shard = size_bytes(options.get("features.shard-block-size") or "64MB")
    return {
        "volume": info["Volume Name"],
        "type": info.get("Type", ""),
        "status": info.get("Status", ""),
        "transport": info.get("Transport-type", ""),
        "bricks": bricks,
        "brick_count": len(bricks),
        "servers": servers,
        "shard_block_size": shard,
        "options": options,
    }


def size_bytes(text: str | None) -> int:
    """'64MB', '4MB', '256KB', '1048576', '1M', '4m' -> bytes (GlusterFS and Lustre write
    sizes in binary units: 1MB = 1 MiB)."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)(i?B)?\s*", text or "", re.IGNORECASE)
    if not match:
        raise FactsError(f"size {text!r}: expected a number of bytes such as 4MB or 1048576")
    power = " KMGT".index(match.group(2).upper() or " ")
    return int(match.group(1)) * 1024**power


# ---- Lustre ----------------------------------------------------------------------------
def parse_lfs_getstripe_d(text: str) -> dict[str, Any]:
    """`lfs getstripe -d DIR` -> the directory's default layout: stripe count (-1: all
    OSTs), stripe size in bytes, pattern, stripe offset (-1: any) and pool; a composite
    (PFL) layout gives its first component and the number of components."""
    fields = dict(
        re.findall(
            r"(?:lmm_)?(stripe_count|stripe_size|pattern|stripe_offset|"
            r"pool):\s*(\S+)",
            text,
        )
    )
    if "stripe_count" not in fields or "stripe_size" not in fields:
        raise FactsError("lfs getstripe -d: no stripe_count and stripe_size in its output")
    layout = {
        "stripe_count": int(fields["stripe_count"]),
        "stripe_size": int(fields["stripe_size"]),
        "pattern": fields.get("pattern", ""),
        "stripe_offset": int(fields.get("stripe_offset", -1)),
        "pool": fields.get("pool", ""),
    }
    components = len(re.findall(r"lcme_id:", text))
    if components:
        layout["components"] = components
    return layout


def parse_lfs_df(text: str) -> dict[str, Any]:
    """`lfs df PATH` -> the file system's MDTs and OSTs (count and size) and its summary
    (1K-blocks total, used, available)."""
    mdts: list[dict[str, Any]]
    osts: list[dict[str, Any]]
    mdts, osts, summary = [], [], None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 6 and re.search(r"-(MDT|OST)[0-9a-f]{4}_UUID$", parts[0]):
            entry = {
                "uuid": parts[0],
                "kib": int(parts[1]),
                "used_kib": int(parts[2]),
                "available_kib": int(parts[3]),
            }
            (mdts if "-MDT" in parts[0] else osts).append(entry)
        elif line.startswith("filesystem_summary:") or line.startswith("filesystem summary:"):
            numbers = re.findall(r"\s(\d+)", line)
            if len(numbers) >= 3:
                summary = {
                    "kib": int(numbers[0]),
                    "used_kib": int(numbers[1]),
                    "available_kib": int(numbers[2]),
                }
    if not osts:
        raise FactsError("lfs df: no OSTnnnn_UUID line in its output")
    fsname = osts[0]["uuid"].split("-OST")[0]
    return {
        "fsname": fsname,
        "mdt_count": len(mdts),
        "ost_count": len(osts),
        "ost_kib": sorted({o["kib"] for o in osts}),
        "summary": summary,
    }


# ---- Spectrum Scale / GPFS -------------------------------------------------------------
def parse_mmlsfs(text: str) -> dict[str, Any]:
    """`mmlsfs DEVICE` -> {flag: value} (-B block size, -f subblock, -r/-m replicas,
    -V version, ...), plus the device name.  A flag whose value spans several
    description lines (-Q) keeps its first value."""
    device = re.search(r"File system attributes for (\S+?):", text)
    flags = {}
    for line in text.splitlines():
        match = re.match(r"^\s(-{1,2}[\w-]+)\s+(.*?)\s{2,}\S.*$", line) or re.match(
            r"^\s(-{1,2}[\w-]+)\s+(\S+)\s*$", line
        )
        if match and match.group(1) not in flags:
            flags[match.group(1)] = match.group(2).strip()
    if "-B" not in flags:
        raise FactsError("mmlsfs: no '-B' (block size) line in its output")
    return {
        "device": device.group(1) if device else "",
        "flags": flags,
        "block_size": int(flags["-B"]) if flags["-B"].isdigit() else flags["-B"],
        "subblock_size": int(flags["-f"]) if flags.get("-f", "").isdigit() else None,
        "data_replicas": flags.get("-r"),
        "version": flags.get("-V", ""),
    }


# ---- versions --------------------------------------------------------------------------
def parse_slurm_version(text: str) -> str:
    """`sinfo --version` -> '22.05.8'."""
    match = re.search(r"slurm\S*\s+(\S+)", text)
    return match.group(1) if match else text.strip()[:60]


def parse_mpi_version(text: str) -> str:
    """`mpirun --version`, `ompi_info --version` or `mpichversion` -> 'Open MPI 4.1.4'
    or 'MPICH 4.0.2'."""
    match = re.search(r"\((?:Open MPI|OpenRTE)\)\s+(\S+)", text) or re.search(
        r"^Open MPI v(\S+)", text, re.M
    )
    if match:
        return f"Open MPI {match.group(1)}"
    match = re.search(r"HYDRA build details:.*?Version:\s+(\S+)", text, re.S) or re.search(
        r"MPICH Version:\s+(\S+)", text
    )
    if match:
        return f"MPICH {match.group(1)}"
    match = re.search(r"Intel\(R\) MPI Library.*?Version\s+(\S+)", text)
    if match:
        return f"Intel MPI {match.group(1)}"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return first[:80]


# ---- everything ------------------------------------------------------------------------
PARSERS = {
    "gluster": ("glusterfs", parse_gluster_volume_info),
    "lfs-getstripe": ("lustre_layout", parse_lfs_getstripe_d),
    "lfs-df": ("lustre_targets", parse_lfs_df),
    "mmlsfs": ("gpfs", parse_mmlsfs),
}


def parse_collected(text: str) -> dict[str, Any]:
    """The facts of one collector run: {path, mount, statfs, kernel, slurm, mpi,
    glusterfs | lustre_layout + lustre_targets | gpfs, site_facts, raw, problems}.
    ``raw`` keeps each file-system tool's output verbatim; ``problems`` says, one line
    each, what could not be read and why."""
    found = sections(text)
    facts: dict[str, Any]
    facts, problems, raw = {}, [], {}

    def output(name: str) -> str | None:
        rc, out = found.get(name, (None, ""))
        if rc is None:
            return None
        if rc != 0:
            problems.append(_failed(name, rc, out))
            return None
        return out

    path = output("path")
    facts["path"] = (path or "").strip()
    mountinfo = output("mount")
    if mountinfo is not None and facts["path"]:
        try:
            mount = mount_of(parse_mountinfo(mountinfo), facts["path"])
        except FactsError as exc:
            problems.append(str(exc))
            mount = None
        if mount:
            facts["mount"] = mount
    statfs = output("statfs")
    if statfs is not None:
        try:
            facts["statfs"] = parse_stat_f(statfs)
        except FactsError as exc:
            problems.append(str(exc))
    for name, key in (("kernel", "kernel"), ("slurm", "slurm"), ("lsf", "lsf"), ("mpi", "mpi")):
        out = output(name)
        if out is not None:
            facts[key] = {"slurm": parse_slurm_version, "mpi": parse_mpi_version}.get(
                name, lambda t: t.strip().splitlines()[0][:120] if t.strip() else ""
            )(out)
    for name, (key, parse) in PARSERS.items():
        out = output(name)
        if out is None:
            continue
        raw[name] = out
        try:
            facts[key] = parse(out)
        except FactsError as exc:
            problems.append(str(exc))
    site = found.get("site")
    if site is not None:
        # the site's own facts, verbatim, whatever its command said
        facts["site_facts"] = site[1]
        if site[0] != 0:
            problems.append(_failed("the site's facts command", *site))
    elapsed = output("elapsed")
    if elapsed:
        try:
            facts["collector_seconds"] = float(elapsed)
        except ValueError:
            pass
    if raw:
        facts["raw"] = raw
    facts["problems"] = problems
    return facts


# ---- what a reader compares ------------------------------------------------------------
def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:g} {unit}" if n == int(n) else f"{n:.3g} {unit}"
        n /= 1024
    return f"{n} B"


def summary(facts: Mapping[str, Any] | None) -> dict[str, str]:
    """{label: value in words} of what makes this file system what it is, for comparing
    runs: its type, servers, stripes, options, block size, size (free space is not a
    configuration), mount options, kernel, scheduler and MPI versions.  Empty for facts
    that could not be read."""
    out: dict[str, str] = {}
    if not facts:
        return out
    mount = facts.get("mount") or {}
    if mount.get("type"):
        out["type"] = mount["type"]
    gluster = facts.get("glusterfs")
    if gluster:
        # a brick is a storage server with a disk of its own (several may share a host)
        out["servers"] = str(gluster["brick_count"])
        out["hosts"] = str(len(gluster["servers"]))
        out["stripes"] = (
            f"{_size(gluster['shard_block_size'])} shards"
            if gluster["shard_block_size"]
            else "no stripes"
        )
        for key, value in sorted(gluster["options"].items()):
            if not key.startswith("features.shard"):  # said by "stripes"
                out[f"option {key}"] = value
    layout = facts.get("lustre_layout")
    if layout:
        count = "all OSTs" if layout["stripe_count"] == -1 else f"{layout['stripe_count']}-way"
        out["stripes"] = f"{count}, {_size(layout['stripe_size'])} stripes"
        if layout.get("pool"):
            out["pool"] = layout["pool"]
    targets = facts.get("lustre_targets")
    if targets:
        out["servers"] = f"{targets['ost_count']} OSTs, {targets['mdt_count']} MDTs"
    gpfs = facts.get("gpfs")
    if gpfs:
        out["block size"] = (
            _size(gpfs["block_size"])
            if isinstance(gpfs["block_size"], int)
            else str(gpfs["block_size"])
        )
        if gpfs.get("data_replicas"):
            out["data replicas"] = gpfs["data_replicas"]
    statfs = facts.get("statfs")
    if statfs:
        out.setdefault("block size", _size(statfs["block_size"]))
        # to the GiB: a size that moves with the free space would be a change every night
        out["size"] = _size(round(statfs["size_bytes"] / 2**30) * 2**30)
    if mount.get("options"):
        out["mount options"] = mount["options"]
    for key in ("kernel", "slurm", "lsf"):
        if facts.get(key):
            out[{"kernel": "kernel", "slurm": "Slurm", "lsf": "LSF"}[key]] = facts[key]
    if facts.get("site_facts"):
        out["site facts"] = facts["site_facts"].strip()
    return out


def differences(
    before: Mapping[str, str], after: Mapping[str, str]
) -> list[tuple[str, str | None, str | None]]:
    """[(label, before value or None, after value or None)] where two summaries differ."""
    return [
        (k, before.get(k), after.get(k))
        for k in list(before) + [k for k in after if k not in before]
        if before.get(k) != after.get(k)
    ]


def change_words(target: str, changes: Iterable[tuple[str, str | None, str | None]]) -> str:
    """'sanscratch went from 2 to 4 servers and changed stripes from no stripes to 4 MiB
    shards' (the first three changes, then 'and N more')."""
    servers, others = "", []
    # what an admin changes first (servers, stripes, block size, options), then the rest
    rank = {"servers": 0, "stripes": 1, "block size": 1, "data replicas": 1}
    changes = sorted(changes, key=lambda c: rank.get(c[0], 2 if c[0].startswith("option ") else 3))
    for label, old, new in changes:
        if label == "servers" and old and new:
            servers = f"went from {old} to {new} servers"
        elif old is None:
            others.append(f"{label} to {new}")
        elif new is None:
            others.append(f"{label} back to its default (was {old})")
        else:
            others.append(f"{label} from {old} to {new}")
    shown = others[: 3 - bool(servers)]
    rest = len(others) - len(shown)
    changed = "changed " + ", ".join(shown) + (f" and {rest} more" if rest else "") if shown else ""
    words = " and ".join(w for w in (servers, changed) if w)
    return f"{target} {words}" if words else ""


def summary_words(summary_: Mapping[str, str]) -> str:
    """'2 servers, no stripes, block size 128 KiB; kernel 6.1.0-28-amd64' (the diary's
    entry)."""
    main = []
    if summary_.get("servers"):
        servers = summary_["servers"]
        main.append(
            servers if not servers.isdigit() else f"{servers} server{'s' * (servers != '1')}"
        )
    for key in ("stripes", "block size", "type"):
        if summary_.get(key):
            main.append(summary_[key] if key == "stripes" else f"{key} {summary_[key]}")
    # (options are in the summary's table and, when they change, in the change's words)
    words = ", ".join(main)
    if summary_.get("kernel"):
        words += f"; kernel {summary_['kernel']}"
    return words
