"""What the benchmarks share: the kernel's build, running a tool (`sh`) with Open MPI's
environment as root on one machine, and interleaved pairs of one tool against another,
summarised as the geometric mean of their ratios with a bootstrap interval."""

import argparse
import atexit
import bisect
import json
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Open MPI's mpirun on this one machine, as root, ranks over shared memory, more ranks
# than cores allowed
OMPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl": "self,vader",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
}
# Open MPI under the embedded cluster's srun (PMIx, TCP on the loopback), as the site
# config's environment sets it for the checks
SLURM_OPENMPI_ENV = {
    "SLURM_MPI_TYPE": "pmix",
    "OMPI_MCA_btl": "self,tcp",
    "OMPI_MCA_btl_tcp_if_include": "lo",
    "OMPI_MCA_oob_tcp_if_include": "lo",
    "OMPI_MCA_pml": "ob1",
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "PMIX_MCA_gds": "hash",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
}


def pair_arguments(doc):
    """The arguments of every side-by-side benchmark: where to measure, how many rounds."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument(
        "--dir",
        default="/var/tmp/sb-bench",
        help="directory on the file system to measure (created if missing)",
    )
    parser.add_argument(
        "--rounds", type=int, default=5, help="interleaved rounds, the order rotating (default 5)"
    )
    parser.add_argument(
        "--json", help="also write every round's figures (and device records) to this file"
    )
    return parser


def sh(cmd, env=None):
    """Run a command with OMPI_ENV (and env); its stdout, or RuntimeError with the end of
    its stderr."""
    result = subprocess.run(
        [str(c) for c in cmd],
        capture_output=True,
        text=True,
        env=dict(os.environ, **OMPI_ENV, **(env or {})),
    )
    if result.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({result.returncode}): {result.stderr[-800:]}")
    return result.stdout


def build_kernel(where, mpicc="mpicc.openmpi"):
    """Build scratchbench-kernel from src/ into the directory `where`; its path.  A failed
    build ends the benchmark with make's errors."""
    result = subprocess.run(
        ["make", "-C", str(REPO / "src"), f"MPICC={mpicc}", f"BUILD={where}"],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        sys.exit(f"{Path(sys.argv[0]).name}: the kernel did not build:\n{result.stderr}")
    return Path(where) / "scratchbench-kernel"


#: hugetlb pages reserved for fio's buffers: 32 requests of 1 MiB in flight (diskperf's
#: deepest point) or 2 jobs of 1 MiB, with room to spare
FIO_HUGE_PAGES = 64


#: fio's --iomem choices (fio's HOWTO), and auto
FIO_IOMEM_CHOICES = ("auto", "malloc", "shm", "shmhuge", "mmap", "mmaphuge", "mmapshared")


def fio_iomem_argument(parser):
    parser.add_argument(
        "--fio-iomem",
        default="auto",
        choices=FIO_IOMEM_CHOICES,
        help="fio's --iomem. auto (the default): mmaphuge, fio's buffers on huge pages as "
        "the kernel's are, so that both send the device the same requests (reserving "
        f"{FIO_HUGE_PAGES} hugetlb pages as root, given back at the end); malloc where "
        "none can be had, said in the output. malloc: 4 KiB pages, whose 1 MiB requests "
        "a device taking fewer segments per request splits in two",
    )


def fio_iomem(choice):
    """The --iomem fio runs with and a line saying why.  'auto' reserves hugetlb pages
    (root) for mmaphuge and gives them back when the benchmark exits."""
    if choice != "auto":
        return choice, f"fio --iomem={choice} (asked for)"
    pool = Path("/proc/sys/vm/nr_hugepages")
    free = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
    try:
        reserved, available = int(pool.read_text()), int(free.read_text())
    except (OSError, ValueError):
        return "malloc", (
            "fio --iomem=malloc: this kernel offers no 2 MiB hugetlb pages, so "
            "fio's 1 MiB requests may be split where the kernel's are not"
        )
    if available < FIO_HUGE_PAGES and os.geteuid() == 0:
        try:
            pool.write_text(str(reserved + FIO_HUGE_PAGES - available))
            atexit.register(pool.write_text, str(reserved))
            # a benchmark stopped with SIGTERM gives the pages back too
            signal.signal(signal.SIGTERM, lambda signum, _: sys.exit(128 + signum))
            available = int(free.read_text())
        except OSError:
            pass
    if available < FIO_HUGE_PAGES:
        return "malloc", (
            f"fio --iomem=malloc: {available} free hugetlb pages, "
            f"{FIO_HUGE_PAGES} needed (as root this benchmark reserves them); "
            "fio's 1 MiB requests may be split where the kernel's are not"
        )
    return "mmaphuge", (
        f"fio --iomem=mmaphuge: fio's buffers on huge pages as the kernel's "
        f"are ({available} hugetlb pages free), the same requests at the device"
    )


def ratio_interval(pairs, resamples=10000, seed=1):
    """Geometric mean of a/b over the pairs (a, b) and its 95% percentile bootstrap
    interval: (mean, low, high)."""
    logs = [math.log(a / b) for a, b in pairs]
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(logs, k=len(logs))) for _ in range(resamples))
    return (
        math.exp(statistics.fmean(logs)),
        math.exp(means[int(0.025 * resamples)]),
        math.exp(means[int(0.975 * resamples) - 1]),
    )


def spread(values, width=7):
    """min, median and max of the values, in columns of `width`."""
    return (
        f"{min(values):{width}.0f} {statistics.median(values):{width}.0f} {max(values):{width}.0f}"
    )


def goal_verdict(ratio, low, high, goal=0.95, floor=0.90):
    """Issue 28's goal for a ratio with its interval [low, high]: met when the ratio is at
    least `goal` and the interval's lower end at least `floor`; missed when the whole
    interval lies below `goal`; else not shown either way."""
    if ratio >= goal and low >= floor:
        return "met"
    return "missed" if high < goal else "not shown"


#: fields of a block device's statistics (the kernel's Documentation/block/stat.rst), by
#: operation: requests completed, 512-byte sectors moved, milliseconds the requests spent
DEVICE_FIELDS = {"read": (0, 2, 3), "write": (4, 6, 7)}
#: milliseconds the device had requests in flight, discards (ext4's `discard` mount
#: option sends them when a deleted file's blocks are freed) and their milliseconds, and
#: milliseconds on cache flushes (an fsync)
DEVICE_BUSY, DEVICE_DISCARDS, DEVICE_DISCARD_MS, DEVICE_FLUSH_MS = 9, 11, 14, 16
#: a run whose device took this many times the point's median per MiB met a slow device
DEVICE_SLOW = 1.5


def device_stat(directory):
    """The statistics file of the block device holding `directory`
    (/sys/dev/block/MAJOR:MINOR/stat), or None where there is none (tmpfs, FUSE)."""
    dev = os.stat(directory).st_dev
    path = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat")
    return path if path.exists() else None


def device_record(before, after, wall):
    """{op: {"requests", "mib", "device_ms", "other_requests", "other_ms", "flush_ms",
    "discards", "discard_ms", "busy_ms", "wall_s"}} between two readings of a device's
    statistics `wall` seconds apart; "other" is the other op's, and flushes, discards and
    busy time are the whole interval's, the same in both ops: a job's record of its own op
    tells whether something else used the device meanwhile."""

    def delta(i):
        return int(after[i]) - int(before[i]) if i < len(after) else 0

    record = {}
    for op, (requests, sectors, ms) in DEVICE_FIELDS.items():
        record[op] = {
            "requests": delta(requests),
            "mib": delta(sectors) * 512 / 2**20,
            "device_ms": delta(ms),
            "flush_ms": delta(DEVICE_FLUSH_MS),
            "discards": delta(DEVICE_DISCARDS),
            "discard_ms": delta(DEVICE_DISCARD_MS),
            "busy_ms": delta(DEVICE_BUSY),
            "wall_s": round(wall, 3),
        }
    for op, other in (("read", "write"), ("write", "read")):
        record[op]["other_requests"] = record[other]["requests"]
        record[op]["other_ms"] = record[other]["device_ms"]
    return record


@contextmanager
def device_watch(directory):
    """What the device holding `directory` did while the body ran (device_record), filled
    into the dict this yields on leaving ({} with no device).
    The device is the whole disk's or partition's: another process's I/O would count too,
    which is why the benchmarks run on a quiet machine."""
    record, stat = {}, device_stat(directory)
    before, started = (stat.read_text().split() if stat else None), time.monotonic()
    yield record
    if stat is not None:
        record.update(device_record(before, stat.read_text().split(), time.monotonic() - started))


class DeviceSampler:
    """The statistics of the device holding `directory`, read every `interval` seconds in
    a thread while the body runs, stamped with the wall clock: the record of a window
    known only afterwards (a phase inside one kernel job, from its `window_unix_s`) is cut
    from them.  A window's record runs from the last reading at or before its start to
    the first at or after its end, so it may hold up to `interval` of its neighbours' I/O
    at each end.  Reading the file costs about 20 us, 1% of one core at 2 ms."""

    def __init__(self, directory, interval=0.002):
        self.stat, self.interval = device_stat(directory), interval
        self.times, self.readings = [], []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _read(self):
        self.times.append(time.time())
        self.readings.append(self.stat.read_text().split())

    def _sample(self):
        while not self._stop.wait(self.interval):
            self._read()

    def __enter__(self):
        if self.stat is not None:
            self._read()
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.stat is not None:
            self._stop.set()
            self._thread.join()
            self._read()

    def record(self, start, end):
        """device_record of the window [start, end] (Unix seconds); {} with no device, or
        when the window is not inside the sampled time."""
        if self.stat is None or not self.times:
            return {}
        first = bisect.bisect_right(self.times, start) - 1
        last = bisect.bisect_left(self.times, end)
        if first < 0 or last >= len(self.times) or end < start:
            return {}
        return device_record(
            self.readings[first], self.readings[last], self.times[last] - self.times[first]
        )


def device_ms_per_mib(run, op):
    """The device's milliseconds per MiB in one run's record of op: its requests of op and
    cache flushes (a write's fsync), or None without a record.  Not discards: a program
    deleting its own files at its end (the kernel does) has them sent while it deletes,
    after its timing."""
    rec = run.get("device", {}).get(op)
    if not rec or not rec["mib"]:
        return None
    return (rec["device_ms"] + (rec["flush_ms"] if op == "write" else 0)) / rec["mib"]


def stall_free_pairs(kernel_runs, tool_runs, op):
    """The pairs (kernel figure, tool figure) of op where neither run met a slow device:
    its device time per MiB over DEVICE_SLOW x the median of every run of both tools.  The
    rule is the same for both tools and judges the device's own clock, not the tools'
    figures: a tool that sends the device worse requests in every run raises the median and
    is not excused.  Returns (pairs, how many pairs were left out, the median ms/MiB)."""
    costs = [device_ms_per_mib(r, op) for r in [*kernel_runs, *tool_runs]]
    known = [c for c in costs if c is not None]
    pairs = [(k[op], t[op]) for k, t in zip(kernel_runs, tool_runs)]
    if len(known) < len(costs):
        return pairs, 0, None
    median = statistics.median(known)
    kept = [
        pair
        for pair, k, t in zip(pairs, kernel_runs, tool_runs)
        if max(device_ms_per_mib(k, op), device_ms_per_mib(t, op)) <= DEVICE_SLOW * median
    ]
    return kept, len(pairs) - len(kept), median


def device_line(kernel_runs, tool_runs, op, tool, goal=0.95):
    """One printed line: each tool's median device ms/MiB and KiB per request, and the
    ratio over the pairs without a slow device run (with how many were left out), judged
    against `goal` (None: no goal applies)."""
    if any(device_ms_per_mib(r, op) is None for r in [*kernel_runs, *tool_runs]):
        return "    device: no block device record of this op for every run (tmpfs, FUSE?)"
    words = []
    for name, runs in (("kernel", kernel_runs), (tool, tool_runs)):
        ms = statistics.median(device_ms_per_mib(r, op) for r in runs)
        kib = statistics.median(
            1024 * r["device"][op]["mib"] / max(r["device"][op]["requests"], 1) for r in runs
        )
        words.append(f"{name} {ms:.2f} ms/MiB, {kib:.0f} KiB/request")
    kept, left_out, median = stall_free_pairs(kernel_runs, tool_runs, op)
    line = f"    device: {'; '.join(words)}; "
    if len(kept) < max(3, len(kernel_runs) // 2):
        return line + (
            f"{len(kept)} of {len(kernel_runs)} pairs left without a slow device, too few: no ratio"
        )
    ratio, lo, hi = ratio_interval(kept)
    verdict = "no goal" if goal is None else goal_verdict(ratio, lo, hi, goal, goal - 0.05)
    return line + (
        f"without the {left_out} pair(s) that met a slow device (over {DEVICE_SLOW} x "
        f"{median:.2f} ms/MiB): {ratio:4.2f} [{lo:4.2f}, {hi:4.2f}] ({verdict})"
    )


def write_rounds(path, samples):
    """--json: every round's figures and device records, keyed as the benchmark keys them."""
    if path:
        Path(path).write_text(json.dumps({str(k): v for k, v in samples.items()}, indent=1))


def load_average():
    """The 1, 5 and 15 minute load averages as printed with every figure: timings on a
    shared machine mean little without them."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} cores)"


#: the guest's idle poll (cpuidle-haltpoll): how long an idle virtual CPU polls before it
#: halts to the host, whose wake-up then costs tens of microseconds
HALT_POLL_NS = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")


def cpu_idle_words():
    """The line saying how this machine's CPUs idle, or None on a machine without the
    guest's idle poll.  On a virtual machine whose idle CPUs halt at once (a poll of 0
    ns), every sleep of a thread that waits for I/O pays the host's wake-up: on tmpfs both
    programs ran 2-6 times faster with Linux's default poll of 200 us, and the kernel,
    which sleeps sooner, went from 0.76-0.89x fio to 0.99-1.43x (docs/benchmarks.md)."""
    try:
        poll_ns = int(HALT_POLL_NS.read_text())
    except (OSError, ValueError):
        return None
    return (
        f"CPU idle: this guest polls {poll_ns / 1000:g} us before halting to the host "
        f"({HALT_POLL_NS}){'; every sleep pays the host wake-up' if poll_ns == 0 else ''}"
    )


def json_target_problem(path):
    """Why --json PATH cannot take the rounds' records (one line), or None: the file must
    be new, so that an earlier run's records are never overwritten, in a writable
    directory, so that a run does not end in an error after its first round."""
    if path is None:
        return None
    target = Path(path)
    if target.exists():
        return f"--json {path}: the file exists; give a new one (earlier records are kept)"
    if not target.parent.is_dir():
        return f"--json {path}: {target.parent} is not a directory"
    if not os.access(target.parent, os.W_OK):
        return f"--json {path}: {target.parent} is not writable"
    return None


def start(parser):
    """What every side-by-side benchmark of the kernel and fio does first: parse its
    arguments (with fio's --iomem), choose fio's buffers, make the directory to measure
    and build the kernel apart (its build removed when the benchmark exits, however it
    ends); print how the CPUs idle, where the machine says.  Returns (arguments, the line
    saying which --iomem fio runs with, kernel)."""
    fio_iomem_argument(parser)
    args = parser.parse_args()
    problem = json_target_problem(args.json)
    if problem:
        print(f"{Path(sys.argv[0]).name}: {problem}", file=sys.stderr)
        sys.exit(2)
    args.fio_iomem, iomem_words = fio_iomem(args.fio_iomem)
    idle = cpu_idle_words()
    if idle:
        print(idle)
    os.makedirs(args.dir, exist_ok=True)
    build = tempfile.mkdtemp(prefix="sbk-bench-")
    atexit.register(shutil.rmtree, build, ignore_errors=True)
    return args, iomem_words, build_kernel(build)
