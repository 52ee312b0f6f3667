#!/usr/bin/env python3
"""The self-scaling search inside one job allocation (seed 003, Chen and Patterson).

Runs in the job script, once, on the job's first node: it explores the scratch target
with scratchbench-kernel's ``selfscale`` mode (scratchbench/selfscale.py decides which
points to measure), then measures randomly drawn held-out workloads and compares them
with the model's predictions, and writes everything to one JSON result.

The kernel keeps its data between launches: the first launch writes the data file
(as large as the largest uniqueBytes of the search) and keeps it (``--keep``), every
later launch reads it (``--existing``), and the last removes it (``--discard``).  One
launch measures one sweep (5 to 20 points), so the launcher's start-up (about 0.4 s
under srun here) is paid per sweep, not per point.  If the driver is stopped (time
limit, scancel), it removes the kept data by the names the kernel gave it.

Exit status: 0, the kernel's own exit code when a launch failed (the result says which
launch and why), 2 for bad arguments, 143 when stopped by a signal.
"""

import argparse
import errno
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from scratchbench import selfscale as ss
from scratchbench import units

SCHEMA = "scratchbench-selfscale 1"


class LaunchFailed(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def say(line):
    print(f"selfscale: {line}", flush=True)


def parse_size(text):
    """'4g' -> 4294967296 (the kernel's syntax), 'memory' -> None."""
    text = str(text).strip().lower()
    if text in ("", "memory"):
        return None
    try:
        return units.parse_size(text)
    except ValueError:
        raise SystemExit(
            f"selfscale_search: error: expected a size such as 512m or 4g, or "
            f"'memory', got '{text}'"
        ) from None


def node_memory():
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


class Kernel:
    """Launches of the kernel's selfscale mode over one kept data set."""

    def __init__(self, args):
        self.args = args
        self.launch = shlex.split(args.launcher)
        self.run_dir = None  # the kept run directory, once the first launch made it
        self.launches = []  # seconds per launch
        self.points = []  # every point measured, with what the kernel saw
        self.prepare_bytes = 0  # the largest data written
        self.data_bytes = 0  # the data kept now
        #: the data the next first launch writes at least (the workloads' largest
        #: uniqueBytes otherwise): the search's, so it is written once for every round
        self.prepare_at_least = 0
        self.process = None
        Path(args.reports).mkdir(parents=True, exist_ok=True)

    def common(self, window=None, spread=None):
        """The options of every launch; ``window`` and ``spread``: this launch's own
        --duration and --size-spread instead of the search's."""
        a = self.args
        opts = [
            "--seed",
            str(a.seed),
            "--fsync",
            a.fsync,
            "--size-spread",
            str(a.size_spread if spread is None else spread),
            "--warmup",
            str(a.warmup),
            "--progress",
            "--prime",
        ]
        if a.requests:
            opts += ["--requests", str(a.requests)]
        else:
            opts += ["--duration", str(a.duration if window is None else window)]
        if a.direct:
            opts.append("--direct")
        return opts

    def run(self, extra, label, window=None, spread=None):
        report = Path(self.args.reports) / f"launch-{len(self.launches) + 1:03d}.json"
        argv = [
            *self.launch,
            self.args.kernel,
            "selfscale",
            *extra,
            *self.common(window, spread),
            "--output",
            str(report),
        ]
        start = time.monotonic()
        self.process = subprocess.Popen(argv, start_new_session=True)
        code = self.process.wait()
        self.process = None
        self.launches.append(time.monotonic() - start)
        try:
            data = json.loads(report.read_text())
        except (OSError, ValueError):
            data = None
        if data and not self.run_dir and data.get("filesystem", {}).get("run_dir"):
            self.run_dir = data["filesystem"]["run_dir"]
        if code != 0 or not data or not data.get("complete"):
            errors = (data or {}).get("errors") or []
            why = (
                errors[0]["message"]
                if errors
                else f"it exited with code {code} and "
                f"{'an incomplete report' if data else 'no report'} ({report})"
            )
            raise LaunchFailed(
                code or 1, f"kernel launch {len(self.launches)} ({label}) failed: {why}"
            )
        return data

    def measure(
        self, workloads, reps, label="sweep", last=False, options=(), window=None, spread=None
    ):
        """[[bytes/s per repetition] per workload]: at least --passes repetitions (the
        kernel runs every point once per repetition, so the passes of a point lie a
        whole sweep apart), in a shuffled order: a change of the background load during
        a sweep then scatters its points instead of drawing a trend through the curve.
        ``last``: the data is discarded after this launch; ``options``: more of the
        kernel's selfscale options for this launch; ``window``, ``spread``: this
        launch's own --duration and --size-spread (common())."""
        order = list(range(len(workloads)))
        random.Random(self.args.seed * 7919 + len(self.launches)).shuffle(order)
        results = self._measure(
            [workloads[i] for i in order],
            max(reps, self.args.passes),
            label,
            last,
            options,
            window,
            spread,
        )
        out = [None] * len(workloads)
        for position, index in enumerate(order):
            out[index] = results[position]
        return out

    def _measure(self, workloads, reps, label, last, options=(), window=None, spread=None):
        points = [a for w in workloads for a in ("--point", w.kernel_point())]
        if self.run_dir is None:
            largest = max(self.prepare_at_least, max(w.unique_bytes for w in workloads))
            extra = ["--dir", self.args.dir, "--keep", "--prepare", str(largest)]
            self.prepare_bytes = max(self.prepare_bytes, largest)
            self.data_bytes = largest
        else:
            extra = ["--existing", self.run_dir] + (["--discard"] if last else [])
        try:
            report = self.run(
                extra + list(options) + points + ["--reps", str(reps)], label, window, spread
            )
        finally:
            if last and self.run_dir and not Path(self.run_dir).exists():
                self.run_dir = None
        out = []
        for i, w in enumerate(workloads):
            phase = f"p{i}"
            values = [rep["phases"][phase]["throughput_Bps"] for rep in report["repetitions"]]
            first = report["repetitions"][0]["phases"][phase]
            final = report["repetitions"][-1]["phases"][phase]
            self.points.append(
                {
                    "launch": len(self.launches),
                    "label": label,
                    "workload": w.as_dict(),
                    "throughput_Bps": values,
                    "requests_per_s": [
                        rep["phases"][phase]["requests_per_s"] for rep in report["repetitions"]
                    ],
                    "resident_fraction_found": first.get("resident_fraction_found"),
                    "prime_Bps": first.get("prime_Bps"),
                    "resident_fraction_before": final["resident_fraction_before"],
                    "resident_fraction_after": final["resident_fraction_after"],
                    "primed_bytes": final.get("primed_bytes", 0),
                    "dropped_bytes": final.get("dropped_bytes", 0),
                    "measured": final["measured"],
                }
            )
            if any(v is None or not v > 0 for v in values):
                raise LaunchFailed(
                    1,
                    f"kernel launch {len(self.launches)} ({label}): point "
                    f"{w.words()} measured no throughput",
                )
            out.append(values)
        return out

    def resident(self, workload):
        """The share of the workload's footprint the page cache held after its last
        measurement, or None if it was not measured."""
        wanted = workload.as_dict()
        for point in reversed(self.points):
            if point["workload"] == wanted:
                return point["resident_fraction_after"]
        return None

    def discard(self, label="discard"):
        """A launch that only removes the kept data."""
        if self.run_dir is None:
            return None
        try:
            return self.run(["--existing", self.run_dir, "--discard"], label)
        finally:
            if self.run_dir and not Path(self.run_dir).exists():
                self.run_dir = None

    def clean_up(self):
        """After a failed launch: the kernel removes what it kept, or else we do."""
        if self.run_dir:
            try:
                self.discard(label="discard after a failure")
            except (LaunchFailed, KeyboardInterrupt):
                pass
        self.remove_kept_data()

    def remove_kept_data(self):
        """After a failure or a signal: remove what the kernel kept, by the names it
        gave it (its data files and manifest), and its run directory if then empty."""
        if self.run_dir is None:
            return
        rundir = Path(self.run_dir)
        for entry in list(rundir.glob("selfscale.data.*")) + [rundir / "sbk.manifest"]:
            try:
                entry.unlink()
            except OSError:
                pass
        try:
            rundir.rmdir()
            self.run_dir = None
        except OSError as exc:
            say(f"left {rundir} in place ({exc.strerror})")

    def stop(self):
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)


#: the kernel's exit code for a full file system or quota
NO_SPACE = 5
#: a search whose data does not fit tries again this many times, at half the size each
ROOM_RETRIES = 2
#: after removing data that did not fit, wait this long at most for the file system to
#: give its room back (XFS under a GlusterFS server frees a large file's blocks in the
#: background: a new directory made at once still finds that server full)
ROOM_WAIT_S = 180
#: ... and for this long the room must stay given back: a GlusterFS server checks its
#: free space every 5 s (storage.reserve), so a directory made at once can succeed and
#: the kernel's a few seconds later still fail (a nightly SAN search lost a try so)
ROOM_STEADY_S = 6
ROOM_POLL_S = 1


def free_bytes(directory):
    """The bytes a normal user can still write in ``directory``'s file system."""
    stat = os.statvfs(directory)
    return stat.f_bavail * stat.f_frsize


def can_create(directory):
    """Whether a directory can be made in ``directory`` now (a probe of our own,
    removed at once)."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".selfscale-room-probe-", dir=directory))
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return False
        raise
    return True


def wait_for_room(directory, free_before):
    """Wait until ``directory``'s free space is back to within 1% (or 256 MiB) of
    ``free_before``, the free space before the data was written, and a directory can be
    made there, both for ROOM_STEADY_S in a row, or ROOM_WAIT_S; says how long it
    took, or that it gave up waiting."""
    started = time.monotonic()
    slack = max(free_before // 100, 256 * units.MIB)
    back_since = None
    while True:
        free = free_bytes(directory)
        now = time.monotonic()
        back = free >= free_before - slack
        if back and can_create(directory):
            back_since = now if back_since is None else back_since
            if now - back_since >= ROOM_STEADY_S:
                say(
                    f"the file system gave its room back in {back_since - started:.0f} s "
                    f"(still there {now - back_since:.0f} s later)"
                )
                return
        else:
            back_since = None
        if now - started >= ROOM_WAIT_S:
            say(
                f"the file system has {units.size_words(free)} free after "
                f"{now - started:.0f} s, "
                + (
                    "but refuses a new directory: going on"
                    if back
                    else f"not yet the {units.size_words(free_before)} it had: going on"
                )
            )
            return
        time.sleep(ROOM_POLL_S)


def explore_within_room(args, kernel, domain, rules):
    """(domain, exploration): the search, its data written once, as large as the
    search can go.  Where writing it fills the file system although its free space
    said there was room (a file system of several servers holds a file whole on one of
    them, and counts all of them free), the data is removed and the search starts
    again with half the largest uniqueBytes, up to ROOM_RETRIES times, saying so."""
    attempt = 0
    free_before = free_bytes(args.dir)
    while True:
        kernel.prepare_at_least = domain.unique_bytes[1]
        try:
            return domain, ss.explore(
                lambda ws, reps: kernel.measure(ws, reps),
                domain,
                rules,
                repeats=args.repeat,
                progress=say,
                resident=kernel.resident,
            )
        except LaunchFailed as exc:
            low, high = domain.unique_bytes
            smaller = high // 2 // units.MIB * units.MIB
            # only a first launch that measured nothing yet: a later one is no room problem
            if exc.code != NO_SPACE or kernel.points or attempt == ROOM_RETRIES:
                raise
            if smaller < 4 * low:
                raise
            kernel.clean_up()
            say(
                f"the data ({units.size_words(high)}) did not fit ({exc}): searching "
                f"again with uniqueBytes up to {units.size_words(smaller)}"
            )
            wait_for_room(args.dir, free_before)
            domain = replace(domain, unique_bytes=(low, smaller))
            attempt += 1


def search(args, kernel, result):
    started = time.monotonic()
    free = free_bytes(args.dir)
    rules = ss.Rules.from_dict(json.loads(args.rules)) if args.rules else ss.Rules()
    domain = ss.Domain.for_node(
        node_memory(),
        free,
        args.processes,
        rules,
        unique_max=args.unique_max,
        size_mean=(args.size_min, args.size_max),
        size_spread=args.size_spread,
    )
    result.update(
        node_memory_bytes=node_memory(),
        free_bytes=free,
        domain=domain.as_dict(),
        rules=rules.as_dict(),
    )
    say(
        f"{args.dir}: uniqueBytes {units.size_words(domain.unique_bytes[0])} to "
        f"{units.size_words(domain.unique_bytes[1])} (node memory "
        f"{units.size_words(node_memory())}), sizeMean {units.size_words(domain.size_mean[0])} to "
        f"{units.size_words(domain.size_mean[1])}, processNum 1 to {args.processes}"
    )
    domain, exploration = explore_within_room(args, kernel, domain, rules)
    result["domain"] = domain.as_dict()
    result["exploration"] = exploration.as_dict()
    result["timing"]["search_s"] = time.monotonic() - started
    model = exploration.model
    say(
        f"search: {exploration.points_measured} points in "
        f"{result['timing']['search_s']:.0f} s, "
        f"{'settled' if exploration.settled else 'not settled'} after "
        f"{len(exploration.rounds)} round(s)"
    )

    result["request_rates"] = request_rates(kernel, model, domain)
    result["reopen"] = reopen_probe(kernel, result["request_rates"])

    validate_held_out(args, kernel, model, domain, result)
    far = far_validation(args, kernel, model, domain, rules)
    if far:
        result["far_validation"] = far
        result["timing"]["far_validation_s"] = far["time_s"]


def validate_held_out(args, kernel, model, domain, result):
    """The held-out workloads inside the measured range: measured (in one or two
    launches), predicted by the model and by the simpler ones beside it, stored in
    ``result``."""
    held_out = ss.draw_workloads(domain, args.validate, args.validate_seed)
    # the search's own points measured again beside them: how far the search's
    # measurements lie from today's, their noise and the target's drift together, which
    # no model built from them can see
    revisit = random.Random(args.validate_seed).sample(
        model.points, min(args.revisit, len(model.points))
    )
    say(
        f"validation: {len(held_out)} workloads drawn at random (seed {args.validate_seed}), "
        f"{args.passes} passes each"
        + (" in each of two launches" if args.validate_launches == 2 else "")
        + (f", with {len(revisit)} of the search's own points again" if revisit else "")
    )
    t0 = time.monotonic()
    # measured in two launches: a shared file system drifts between launches more than
    # the passes of one launch show (the retest figure), and the median of both is the
    # nearer measurement
    twice = args.validate_launches == 2
    validation = ss.validate(
        model,
        lambda ws, reps: kernel.measure(ws, reps, label="validation", last=not twice),
        held_out,
        again=(
            (lambda ws, reps: kernel.measure(ws, reps, label="validation again", last=True))
            if twice
            else None
        ),
        revisit=revisit,
    )
    result["validation"] = validation.as_dict()
    result["timing"]["validation_s"] = time.monotonic() - t0
    # the same measurements predicted by the simpler models, for comparison: the curves
    # without the correction by the search's points; without it and the direction
    # uniqueBytes curves; without those and the size curves (one uniqueBytes curve); and
    # the paper's product form (without the direction curves too)
    simpler = {}
    if model.points:
        simpler["validation_curves_only"] = (
            replace(model, points=[]),
            "the curves alone (without the correction by the search's points)",
        )
    if model.direction_unique:
        simpler["validation_one_direction"] = (
            replace(model, direction_unique={}, points=[]),
            "without the correction and the direction uniqueBytes curves",
        )
    if model.size_curves or model.direction_unique:
        simpler["validation_one_unique_curve"] = (
            replace(model, size_curves=[], direction_unique={}, points=[]),
            "one uniqueBytes curve (without the correction, the size and direction "
            "uniqueBytes curves)",
        )
    if (
        model.size_curves
        or model.direction_unique
        or any(r.directions for r in model.regimes.values())
    ):
        simpler["validation_product_form"] = (
            model.product_form(),
            "the product form (without the direction and size curves)",
        )
    for key, (other, words) in simpler.items():
        compared = ss.Validation(
            validation.workloads,
            [other.predict(w) for w in validation.workloads],
            validation.measured,
        )
        result[key] = compared.as_dict()
        say(
            f"validation: {words}: median error {100 * compared.median_error:.1f}%, "
            f"maximum {100 * compared.max_error:.1f}%"
        )
    say_error(validation)
    say_drift(validation)


def say_error(validation):
    """The held-out workloads' median and largest error, the interval that holds the
    model's median error, and the noise under them."""
    spread, retest = validation.spread, validation.retest
    interval = validation.median_error_interval
    say(
        f"validation: prediction error median {100 * validation.median_error:.1f}%"
        + (
            f" (with {100 * interval[2]:.0f}% confidence the model's lies between "
            f"{100 * interval[0]:.1f}% and {100 * interval[1]:.1f}%: "
            f"{len(validation.workloads)} workloads)"
            if interval
            else ""
        )
        + f", maximum {100 * validation.max_error:.1f}%"
        + (
            f"; one measurement lies {100 * spread:.1f}% from the median of its "
            "workload's passes (median over the workloads)"
            if spread
            else ""
        )
        + (
            f"; the second launch lies {100 * retest:.1f}% from the first: the noise the "
            "errors stand on"
            if retest is not None
            else ""
        )
    )


def say_drift(validation):
    """The search's own points measured again: how far they lie from the search's
    measurement of them, and the error had the model followed their move."""
    if validation.drift is None:
        return
    say(
        f"validation: the search's own points measured again lie "
        f"{100 * validation.drift:.1f}% from the search's measurement of them (median of "
        f"{len(validation.revisited)}: their noise and the target's drift together; as a "
        f"whole the target runs {_moved(validation.drift_level)} than during the "
        "search); with the model scaled by that, the median error would be "
        f"{100 * validation.drift_scaled_median_error:.1f}%"
    )


def _moved(level):
    """A drift level in words: '12% slower', '3% faster'."""
    return f"{100 * abs(level - 1):.0f}% {'slower' if level < 1 else 'faster'}"


def far_validation(args, kernel, model, domain, rules):
    """The model checked past the range it measured (the advisor prints the error of a
    job's distance): --validate-far workloads in each of ss.FAR_BANDS, measured in a
    launch of their own over data as large as the farthest needs (within the rules'
    share of the target's free space), removed after.  None when not asked for or no
    band can be reached."""
    if not args.validate_far:
        return None
    limit = rules.free_space_fraction * free_bytes(args.dir)
    far = ss.draw_far_workloads(model, domain, args.validate_far, args.validate_seed + 1, limit)
    if not far:
        say("far validation: no workload can lie past the measured range here (limits)")
        return None
    t0 = time.monotonic()
    # its data as large as its own workloads touch, not the search's: the search's took
    # half the free space, and a file as large again did not fit on one of a SAN's
    # servers (the nightly SAN search failed there after 32 minutes)
    kernel.prepare_at_least = 0
    validation = ss.validate(
        model,
        lambda ws, reps: kernel.measure(ws, reps, label="far validation"),
        [f.workload for f in far],
    )
    kernel.discard("far validation: discard")
    # the curves alone beside the model: whether the correction by the search's points
    # carries past the range they lie in
    curves = replace(model, points=[])  # one model: each copy makes its caches anew
    curves_only = ss.Validation(
        validation.workloads, [curves.predict(w) for w in validation.workloads], validation.measured
    )
    alone = ss.far_errors(far, curves_only)
    for (parameter, band), (error, count) in sorted(ss.far_errors(far, validation).items()):
        say(
            f"far validation: {ss.PAPER_NAMES[parameter]} up to {band:g}x past the measured "
            f"range: median error {100 * error:.1f}% ({count} workload{'s' if count != 1 else ''}"
            f"; the curves alone {100 * alone[parameter, band][0]:.1f}%)"
        )
    return {
        "workloads": [f.as_dict() for f in far],
        "validation": validation.as_dict(),
        "validation_curves_only": curves_only.as_dict(),
        "time_s": time.monotonic() - t0,
    }


#: the largest footprint request rates are timed over: what one request costs where
#: nothing else does.  Over the cache regime's focal footprint at nightly node-local
#: sizes (2 GiB) 1 KiB writes ran at 304k/s where a loop of 1-byte writes ran at 1.16M/s
#: (the advisor's per-request rows 258% over).  Measured here (ext4, 32 MiB of L3): 1 KiB
#: sequential writes at 1.04-1.20M/s over 2 to 32 MiB, 476k/s over 64 MiB, 246k/s over
#: 2 GiB; reads 1.5-1.6M/s at every footprint.  What a large footprint adds is a cost
#: per page, the bytes' part, which the model's throughput at the job's footprint
#: charges already
REQUEST_RATE_FOOTPRINT = 16 * 1024 * 1024


def request_rates(kernel, model, domain):
    """{"read", "write": requests per second, "size", "unique_bytes", "larger_size",
    "larger": {"read", "write"}, "fixed_share": {"read", "write"}}: what one request
    costs, measured on one process at the smallest request size the search may use and
    at ss.REQUEST_SIZE_STEP times it (within the domain), sequential (the cheapest order),
    in the cache regime's footprint or REQUEST_RATE_FOOTPRINT, whichever is smaller
    (the page cache holds it: the cost is the file system's per request, not the
    device's); writes extend a new file to that size (the kernel's --append), as a
    job's output does: on the node-local ext4 a 4 KiB write extending a file ran at
    240k/s where one rewriting a cached page ran at 590k/s (docs/benchmarks.md).  The
    two sizes give the share of a request's time at the smallest size that does not
    grow with its bytes (``fixed_share``: a request takes a + b x bytes; 1.0 where the
    larger size cost no more per request, as a round trip to a server does); the
    advisor charges a job's requests of any size up to the larger one on that line,
    and larger ones at the larger size's rate (their bytes are the throughput's).  Below
    the smallest size the line bends: a 1-byte read from the page cache took 0.45-0.52
    µs here where the line put it at 0.65 µs (docs/benchmarks.md), so the kernel's own
    smallest request (ss.UNIT) is timed too where it lies below the domain's
    (``unit_share``: its time as a share of a smallest-size request's), and the advisor
    charges a smaller request on the line through the two.  One launch of four to six
    points, before the validation (whose launch discards the data), of
    requests of exactly these sizes, as a program issues them, in --request-passes
    windows of --request-window seconds each: small requests' rates swing by a fifth
    between windows seconds apart (docs/benchmarks.md), and the line through the two
    sizes turns that into a share off by more."""
    focal = model.regimes["cache"].focal.unique_bytes
    grid = [u for u in domain.grid("unique_bytes") if u <= REQUEST_RATE_FOOTPRINT]
    footprint = min(focal, max(grid) if grid else domain.unique_bytes[0])
    size = domain.size_mean[0]
    larger = min(ss.REQUEST_SIZE_STEP * size, domain.size_mean[1])
    unit = ss.UNIT if ss.UNIT < size else None
    sizes = ([unit] if unit else []) + [size] + ([larger] if larger > size else [])
    points = [
        ss.Workload(
            unique_bytes=footprint,
            size_mean=s,
            read_frac=frac,
            seq_frac=1.0,
            process_num=1,
        )
        for s in sizes
        for frac in (1.0, 0.0)
    ]
    kernel.measure(
        points,
        kernel.args.request_passes,
        label="request rate",
        options=("--append",),
        window=kernel.args.request_window,
        spread=0.0,
    )
    measured = {}
    for point in kernel.points[-len(points) :]:
        direction = "read" if point["workload"]["read_frac"] == 1.0 else "write"
        values = sorted(v for v in point["requests_per_s"] if v)
        measured[direction, point["workload"]["size_mean"]] = (
            values[len(values) // 2] if values else None
        )
    rates = {"size": size, "unique_bytes": footprint, "larger_size": sizes[-1]}
    rates["larger"] = {d: measured.get((d, sizes[-1])) for d in ("read", "write")}
    rates["unit_size"] = unit
    rates["unit"] = {d: measured.get((d, unit)) if unit else None for d in ("read", "write")}
    rates["fixed_share"] = {}
    rates["unit_share"] = {}
    for d in ("read", "write"):
        rates[d] = measured.get((d, size))
        rates["fixed_share"][d] = fixed_share(size, rates[d], sizes[-1], rates["larger"][d])
        rates["unit_share"][d] = unit_share(rates[d], rates["unit"][d])
    words = []
    for d in ("read", "write"):
        if rates[d]:
            share = rates["fixed_share"][d]
            at_unit = rates["unit_share"][d]
            words.append(
                f"{d} {rates[d]:,.0f}/s"
                + (
                    f" ({rates['larger'][d]:,.0f}/s at {ss.size_words(sizes[-1])}: "
                    f"{share:.0%} of a request's time does not grow with its bytes)"
                    if share is not None
                    else ""
                )
                + (
                    f" ({rates['unit'][d]:,.0f}/s at {ss.size_words(unit)}: "
                    f"{at_unit:.0%} of a {ss.size_words(size)} request's time)"
                    if at_unit is not None
                    else ""
                )
            )
    say(
        f"request rate at {ss.size_words(size)} sequential requests, 1 process, "
        f"{ss.size_words(footprint)} touched (writes appending to a new file): "
        f"{', '.join(words)}"
    )
    return rates


def fixed_share(size, rate, larger_size, larger_rate):
    """The share of a request's time at ``size`` that does not grow with its bytes, from
    the request rates at two sizes (a request takes a + b x bytes: the share is a over
    the time at ``size``); 1.0 where the larger requests cost no more each, None where
    either rate is missing or the sizes are the same."""
    if not (rate and larger_rate) or larger_size <= size:
        return None
    small, large = 1.0 / rate, 1.0 / larger_rate
    per_byte = max(0.0, (large - small) / (larger_size - size))
    return max(0.0, small - per_byte * size) / small


def unit_share(rate, unit_rate):
    """The time of a request of the kernel's unit as a share of one of the smallest
    size, from their request rates (1,000,000/s and 1,250,000/s: 0.8); None where either
    rate is missing."""
    if not (rate and unit_rate):
        return None
    return rate / unit_rate


#: the least the reopen probe reads of the data file (where the file holds it): its
#: first pass is timed over this, so that the pass's start (the servers' lookup and
#: open, 30-50 ms on the embedded SAN) does not make the rate
REOPEN_PROBE_BYTES = 256 * 1024 * 1024


def reopen_probe(kernel, rates):
    """{"unique_bytes", "cached_bytes", "resident_found", "kept", "first_pass_Bps"}:
    whether the page cache keeps a file's pages across a close and a new open, and what
    a first pass over a freshly opened file reads at where it does not.  GlusterFS's FUSE
    client with --fopen-keep-cache=off (the embedded SAN's) drops a file's pages at
    every open, so a job's first read of each file it opens comes from the servers,
    whatever the self-scaling curves (measured within one open) say.  One launch of one
    sequential read point on one process over at least REOPEN_PROBE_BYTES of the data,
    which begins with the footprint the request rates' launch just left cached: the
    bytes found cached at its start over the bytes left (``kept``, at most 1), and
    --prime's rate over what was not cached (``first_pass_Bps``: 4 MiB sequential
    reads; None when all was).  ``kept`` is None when the request rates' launch left
    less than half its footprint cached."""
    left = kernel.points[-1]["resident_fraction_after"]
    cached = (left or 0.0) * rates["unique_bytes"]
    footprint = min(kernel.data_bytes, max(rates["unique_bytes"], REOPEN_PROBE_BYTES))
    point = ss.Workload(
        unique_bytes=footprint,
        size_mean=rates["size"],
        read_frac=1.0,
        seq_frac=1.0,
        process_num=1,
    )
    kernel.measure([point], 1, label="reopen")
    found = kernel.points[-1]["resident_fraction_found"]
    probe = {
        "unique_bytes": footprint,
        "cached_bytes": cached,
        "resident_found": found,
        "kept": (
            min(1.0, found * footprint / cached)
            if left and left >= 0.5 and found is not None
            else None
        ),
        "first_pass_Bps": kernel.points[-1]["prime_Bps"],
    }
    what = ss.size_words(rates["unique_bytes"])
    if probe["kept"] is None:
        say(
            f"reopen: the page cache held {left or 0:.0%} of {what} before the new open: too little to tell"
        )
    else:
        say(
            f"reopen: {probe['kept']:.0%} of the cached {what} was still cached after a new open"
            + (
                f"; a first pass over {ss.size_words(footprint)} read at "
                f"{units.quantity(probe['first_pass_Bps'], 'B/s')}"
                if probe["first_pass_Bps"]
                else ""
            )
        )
    return probe


def _parser():
    """The search's command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernel", required=True, help="scratchbench-kernel binary")
    p.add_argument(
        "--launcher", required=True, help="the MPI launch command, e.g. 'srun' or 'mpirun -np 8'"
    )
    p.add_argument("--dir", required=True, help="the scratch directory to explore")
    p.add_argument(
        "--processes",
        type=int,
        required=True,
        help="ranks the launcher starts: processNum goes from 1 to this",
    )
    p.add_argument("--out", required=True, help="the result JSON")
    p.add_argument(
        "--reports",
        default="selfscale-reports",
        help="directory for the kernel's report of every launch",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--duration", type=float, default=0.4, help="timed window per point (s)")
    p.add_argument("--warmup", type=float, default=0.2, help="untimed start of each point (s)")
    p.add_argument(
        "--passes",
        type=int,
        default=3,
        help="measurements of every point, a sweep apart; a curve takes their median",
    )
    p.add_argument(
        "--request-window",
        type=float,
        default=1.0,
        help="timed window of each request-rate measurement (s)",
    )
    p.add_argument(
        "--request-passes",
        type=int,
        default=5,
        help="measurements of each request rate; the rate is their median",
    )
    p.add_argument(
        "--requests",
        type=int,
        default=0,
        help="a fixed number of requests per rank instead of --duration",
    )
    p.add_argument(
        "--fsync",
        choices=("none", "outside", "inside"),
        default="outside",
        help="after each point's writes: outside (the default) writes them back "
        "untimed, so every point starts without dirty pages and points do "
        "not depend on the ones before; inside times it; none leaves "
        "write-back to the kernel",
    )
    p.add_argument("--size-spread", type=float, default=0.5)
    p.add_argument("--size-min", type=parse_size, default=units.KIB)
    p.add_argument("--size-max", type=parse_size, default=16 * units.MIB)
    p.add_argument(
        "--unique-max",
        type=parse_size,
        default=None,
        help="largest uniqueBytes, or 'memory' for the rule of the node's memory",
    )
    p.add_argument("--rules", default="", help="JSON of scratchbench.selfscale.Rules fields")
    p.add_argument(
        "--repeat", type=int, default=5, help="measure each regime's focal point this many times"
    )
    p.add_argument("--validate", type=int, default=20, help="held-out workloads")
    p.add_argument(
        "--validate-launches",
        type=int,
        choices=(1, 2),
        default=2,
        help="launches that measure the held-out workloads: with 2, the drift between "
        "them is the error's floor (validation_retest)",
    )
    p.add_argument(
        "--validate-far",
        type=int,
        default=0,
        help="held-out workloads per distance band past the measured range (0: none)",
    )
    p.add_argument(
        "--revisit",
        type=int,
        default=8,
        help="the search's own points measured again with the held-out workloads: how "
        "far they lie from the search's measurement, noise and drift together "
        "(validation_drift; 0: none)",
    )
    p.add_argument("--validate-seed", type=int, default=2003)
    p.add_argument("--direct", action="store_true", help="O_DIRECT requests")
    return p


def _new_result(args):
    """The result JSON before the search: the target, the settings, no timing yet."""
    return {
        "schema": SCHEMA,
        "target": args.dir,
        "processes": args.processes,
        "settings": {
            k: getattr(args, k)
            for k in (
                "seed",
                "duration",
                "warmup",
                "passes",
                "request_window",
                "request_passes",
                "requests",
                "fsync",
                "size_spread",
                "repeat",
                "validate",
                "validate_launches",
                "validate_far",
                "validate_seed",
                "direct",
                "launcher",
            )
        },
        "timing": {},
        "error": None,
    }


def main(argv=None):
    p = _parser()
    args = p.parse_args(argv)
    for name in ("processes", "validate", "passes", "request_passes"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')}: expected at least 1, got {getattr(args, name)}")
    for name in ("duration", "request_window"):
        if not getattr(args, name) > 0:
            p.error(
                f"--{name.replace('_', '-')}: expected seconds above 0, got {getattr(args, name)}"
            )
    for name in ("validate_far", "revisit"):
        if getattr(args, name) < 0:
            p.error(f"--{name.replace('_', '-')}: expected 0 or more, got {getattr(args, name)}")
    if not os.path.isdir(args.dir):
        p.error(f"--dir {args.dir}: not a directory")
    if not os.access(args.kernel, os.X_OK):
        p.error(f"--kernel {args.kernel}: not an executable")

    kernel = Kernel(args)
    result = _new_result(args)

    def stopped(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGINT, stopped)
    started = time.monotonic()
    code = 0
    try:
        search(args, kernel, result)
    except ss.SelfScaleError as exc:
        result["error"] = {"code": 2, "message": str(exc)}
        code = 2
    except LaunchFailed as exc:
        result["error"] = {"code": exc.code, "message": str(exc)}
        code = exc.code
    except KeyboardInterrupt as exc:
        kernel.stop()
        result["error"] = {
            "code": 143,
            "message": f"stopped by {exc} during launch {len(kernel.launches) + 1}",
        }
        code = 143
    finally:
        if code not in (0, 143):
            kernel.clean_up()
        else:
            kernel.remove_kept_data()
        result["timing"].update(
            total_s=time.monotonic() - started,
            launches=len(kernel.launches),
            launch_s=kernel.launches,
            prepare_bytes=kernel.prepare_bytes,
        )
        result["points"] = kernel.points
        Path(args.out).write_text(json.dumps(result, indent=1))
    if result["error"]:
        print(f"selfscale_search: error: {result['error']['message']}", file=sys.stderr)
    else:
        say(
            f"done in {result['timing']['total_s']:.0f} s ({len(kernel.launches)} kernel "
            f"launches); result in {args.out}"
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
