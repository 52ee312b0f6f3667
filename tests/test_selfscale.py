"""Seed 003's self-scaling benchmark: the search, the prediction, the kernel's selfscale
mode, the job-side driver, the figures it stores and the pages that draw them.

The algorithm is tested on synthetic throughput functions whose focal values and knees
are known in closed form (no I/O); the kernel and the driver run for real (mpirun with
Open MPI, MPICH and the ASan build), on tmpfs (/dev/shm) and on this machine's disk.
"""

import argparse
import ast
import dataclasses
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import MPI, REPO, mpirun, run
from reframe_checks.lib.parsers import kernel_problems, parse_kernel_json
from reframe_checks.lib.selfscale import declared_figures, search_options
from reports import pages, store
from reports.synthetic import make_case, make_report
from scratchbench import selfscale as ss
from scratchbench.selfscale import GIB, KIB, MIB

DRIVER = REPO / "reframe_checks" / "scripts" / "selfscale_search.py"
DISK_ROOT = Path(os.environ.get("SCRATCHBENCH_HOME", "/var/tmp"))


# ---- synthetic file systems with known answers ------------------------------------------------
class Synthetic:
    """A separable throughput function: a page cache of `cache` bytes in front of a device
    (hit rate cache/uniqueBytes beyond it), times one factor per shape parameter:
      sizeMean  s / (s + 64 KiB)      readFrac  1 + r      seqFrac  0.5 + q^2
      processNum  p / (p + 2)
    so that every focal value and the knee can be computed exactly."""

    def __init__(
        self,
        cache=4 * GIB,
        cache_rate=5000 * MIB,
        device_rate=200 * MIB,
        noise=0.0,
        seed=1,
        flat_unique=False,
    ):
        self.cache, self.tc, self.td = cache, cache_rate, device_rate
        self.noise, self.rng = noise, np.random.default_rng(seed)
        self.flat_unique = flat_unique
        self.calls = 0

    def base(self, unique):
        if self.flat_unique:
            return self.tc
        hit = min(1.0, self.cache / unique)
        return 1.0 / (hit / self.tc + (1 - hit) / self.td)

    @staticmethod
    def factor(name, v):
        return {
            "size_mean": lambda s: s / (s + 64 * KIB),
            "read_frac": lambda r: 1 + r,
            "seq_frac": lambda q: 0.5 + q * q,
            "process_num": lambda p: p / (p + 2),
        }[name](v)

    def throughput(self, w):
        value = self.base(w.unique_bytes)
        for name in ss.SHAPE_PARAMETERS:
            value *= self.factor(name, w.get(name))
        return value * math.exp(self.noise * self.rng.standard_normal())

    def measure(self, workloads, reps):
        self.calls += 1
        return [[self.throughput(w) for _ in range(reps)] for w in workloads]

    def true_focal(self, name, lo, hi, fraction=0.5):
        """Where the factor is `fraction` of the way between its values at lo and hi."""
        xs = (
            np.exp(np.linspace(math.log(max(lo, 1e-9)), math.log(hi), 20001))
            if name in ss.LOG_SCALE
            else np.linspace(lo, hi, 20001)
        )
        ys = np.array([self.factor(name, x) for x in xs])
        level = ys.min() + fraction * (ys.max() - ys.min())
        return float(xs[int(np.argmin(np.abs(ys - level)))])

    def true_knee(self, lo, hi):
        """The midpoint in log throughput between the cache rate and the rate at hi."""
        level = math.sqrt(self.tc * self.base(hi))
        hit = (1 / level - 1 / self.td) / (1 / self.tc - 1 / self.td)
        return self.cache / hit


DOMAIN = ss.Domain(unique_bytes=(MIB, 64 * GIB), size_mean=(KIB, 16 * MIB), process_num=(1, 16))


def steps_apart(name, a, b):
    return ss.grid_steps(name, a, b, DOMAIN)


# ---- the search on synthetic functions -----------------------------------------------------------
def test_search_converges_on_known_focal_points_and_knee():
    fs = Synthetic()
    lines = []
    ex = ss.explore(fs.measure, DOMAIN, ss.Rules(), repeats=3, progress=lines.append)
    assert ex.settled and len(ex.rounds) <= 3, lines
    assert any("knee at" in ln for ln in lines) and any("settled" in ln for ln in lines)
    knee = ex.model.knee
    truth = fs.true_knee(*DOMAIN.unique_bytes)
    # within one step of the fine uniqueBytes grid (a factor sqrt(2))
    assert steps_apart("unique_bytes", knee.unique_bytes, truth) <= 1.0, (knee, truth)
    assert knee.cache_level > 5 * knee.device_level
    focal = ex.focal
    assert set(focal) == {"cache", "device"}
    assert (
        focal["cache"].unique_bytes <= fs.cache < knee.unique_bytes < focal["device"].unique_bytes
    )
    for regime, w in focal.items():
        sizes = [s for s in DOMAIN.grid("size_mean") if s <= DOMAIN.largest_size(w.unique_bytes)]
        expected = {
            "size_mean": fs.true_focal("size_mean", sizes[0], sizes[-1]),
            "read_frac": 0.5,
            "seq_frac": fs.true_focal("seq_frac", 0, 1),
            "process_num": fs.true_focal("process_num", 1, 16),
        }
        for name, value in expected.items():
            assert steps_apart(name, w.get(name), value) <= 0.5, (regime, name, w, value)


def test_prediction_of_a_separable_system_is_close_on_held_out_workloads():
    fs = Synthetic()
    ex = ss.explore(fs.measure, DOMAIN)
    held_out = ss.draw_workloads(DOMAIN, 60, seed=11)
    grid_points = {w for r in ex.rounds for c in r["curves"] for w in c["xs"]}
    assert not {w.unique_bytes for w in held_out} <= grid_points  # not the search's points
    v = ss.validate(ex.model, fs.measure, held_out)
    assert v.median_error < 0.03, sorted(v.errors)
    assert len(v.errors) == 60 and v.max_error == max(v.errors)
    # at the focal point the product form returns the focal throughput itself
    cache = ex.model.regimes["cache"]
    assert ex.model.predict(cache.focal) == pytest.approx(cache.throughput, rel=1e-9)


def test_the_median_error_comes_with_the_interval_that_holds_the_models():
    """Twenty held-out workloads pin a median error loosely: the interval of order
    statistics that holds the population's median with at least 90% confidence is
    the 6th to the 15th smallest of 20 (95.9%), the 15th to the 26th of 40 (91.9%);
    drawn 2,000 times from a known skewed distribution it holds the true median as
    often as it says; with fewer than 5 values no interval reaches 90%.  The
    validation stores it and the check declares both ends as figures."""
    assert ss.median_interval(range(20)) == (5, 14, pytest.approx(0.9586, abs=1e-4))
    assert ss.median_interval(range(40))[:2] == (14, 25)
    assert ss.median_interval([3.0, 1.0, 2.0, 4.0]) is None
    assert ss.median_interval([5.0, 1.0, 4.0, 2.0, 3.0]) == (1.0, 5.0, 0.9375)
    rng = np.random.default_rng(7)
    held = 0
    for _ in range(2000):
        low, high, confidence = ss.median_interval(rng.lognormal(0.0, 1.0, 20))
        held += low <= 1.0 <= high  # the lognormal's median is e^0
    assert abs(held / 2000 - confidence) < 0.02, held
    fs = Synthetic(noise=0.05)
    ex = ss.explore(fs.measure, DOMAIN)
    v = ss.validate(ex.model, fs.measure, ss.draw_workloads(DOMAIN, 20, seed=4))
    low, high, confidence = v.median_error_interval
    ordered = sorted(v.errors)
    assert (low, high) == (ordered[5], ordered[14]) and low <= v.median_error <= high
    assert ss.Validation.from_dict(v.as_dict()).median_error_interval == v.median_error_interval
    result = synthetic_result(Synthetic())[0]
    result["validation"] = v.as_dict()
    figures = declared_figures(result)[0]
    assert figures["prediction_error_median_low"][0] == pytest.approx(100 * low)
    assert figures["prediction_error_median_high"][0] == pytest.approx(100 * high)
    from scratchbench.figures import DESCRIPTIVE_ROLES

    for end in ("low", "high"):  # the model's, not the file system's: never ranked
        assert figures[f"prediction_error_median_{end}"][1].role in DESCRIPTIVE_ROLES
    assert (
        "96% confidence (20 held-out workloads" in figures["prediction_error_median_high"][1].label
    )
    few = ss.Validation(v.workloads[:4], v.predicted[:4], v.measured[:4])
    result["validation"] = few.as_dict()
    assert "prediction_error_median_low" not in declared_figures(result)[0]


def test_a_large_focal_request_size_sweeps_only_the_footprints_it_fits():
    """A focal sizeMean of 4 MiB (the SAN's cache regime chose 1 MiB in a nightly search)
    sweeps uniqueBytes from the first footprint its requests fit in: the kernel refuses
    a point whose requests are larger than its uniqueBytes, and the search died of it."""
    fs = Synthetic()

    def measure(workloads, reps):
        refused = [w.words() for w in workloads if not DOMAIN.fits(w)]
        if refused:
            raise ss.SelfScaleError(f"requests do not fit in uniqueBytes: {refused[0]}")
        return fs.measure(workloads, reps)

    start = ss.initial_focal(DOMAIN).with_value("size_mean", 4 * MIB)
    ex = ss.explore(measure, DOMAIN, start=start)
    first = ex.rounds[0]["curves"][0]
    assert first["parameter"] == "unique_bytes" and first["xs"][0] >= 6 * MIB, first["xs"]


def test_a_second_validation_launch_measures_the_drift_between_launches():
    """The held-out workloads measured in two launches: the drift between them (the
    file system 20% faster in the second) is the retest figure, which the passes of one
    launch do not show; each workload's measurement is the median of both launches."""
    fs = Synthetic(noise=0.01)
    ex = ss.explore(fs.measure, DOMAIN)
    held_out = ss.draw_workloads(DOMAIN, 12, seed=4)

    def faster(workloads, reps):
        return [[1.2 * v for v in r] for r in fs.measure(workloads, 3)]

    v = ss.validate(ex.model, lambda ws, reps: fs.measure(ws, 3), held_out, again=faster)
    assert v.retest == pytest.approx(0.2, abs=0.03)
    assert v.spread is not None and v.spread > 0.05, "both launches' passes around one median"
    assert all(len(p) == 6 and len(m) == 2 for p, m in zip(v.passes, v.launches))
    assert v.measured == [pytest.approx(float(np.median(p))) for p in v.passes]
    again = ss.Validation.from_dict(v.as_dict())
    assert again.launches == v.launches and again.retest == v.retest
    one = ss.validate(ex.model, lambda ws, reps: fs.measure(ws, 3), held_out)
    assert one.retest is None and one.launches == []
    result = synthetic_result(Synthetic())[0]
    assert "validation_retest" not in declared_figures(result)[0]
    result["validation"] = v.as_dict()
    figures, _ = declared_figures(result)
    assert figures["validation_retest"][0] == pytest.approx(100 * v.retest)


def test_the_searchs_own_points_measured_again_say_how_far_the_target_moved():
    """Some of the search's own points measured again with the held-out workloads, in
    the same launches: a target 20% slower since the search shows as a drift of 20% (a
    level of 0.8), which the passes and the launches of the validation cannot show; the
    model scaled by that level predicts the slower target as well as the model predicted
    the search's; the revisited points are not held-out workloads and not in the error."""
    fs = Synthetic()  # without noise: the same workload measures the same twice
    ex = ss.explore(fs.measure, DOMAIN)
    held_out = ss.draw_workloads(DOMAIN, 12, seed=4)
    revisit = ex.model.points[:5]
    assert len(revisit) == 5, "the search keeps its points"
    seen = []

    def slower(workloads, reps):
        seen.append(list(workloads))
        return [[0.8 * v for v in r] for r in fs.measure(workloads, 3)]

    v = ss.validate(ex.model, slower, held_out, again=slower, revisit=revisit)
    assert seen == [held_out + [w for w, _ in revisit]] * 2, "in the same launches"
    assert len(v.workloads) == len(v.measured) == len(v.passes) == 12
    assert v.drift == pytest.approx(0.2, abs=0.03) and v.drift_level == pytest.approx(0.8, abs=0.03)
    assert v.retest == 0, "both launches equally slow: the launches alone do not show it"
    assert v.median_error > 0.15 and v.drift_scaled_median_error < 0.08
    assert [(w, s) for w, s, _ in v.revisited] == revisit
    again = ss.Validation.from_dict(v.as_dict())
    assert again.revisited == v.revisited and again.drift == v.drift
    assert v.as_dict()["drift_scaled_median_error"] == v.drift_scaled_median_error
    plain = ss.validate(ex.model, slower, held_out)
    assert plain.drift is None and plain.drift_level is None
    assert plain.drift_scaled_median_error is None and plain.as_dict()["revisited"] == []
    assert plain.errors == v.errors, "the revisited points change no held-out error"
    result = synthetic_result(Synthetic())[0]
    assert "validation_drift" not in declared_figures(result)[0]
    result["validation"] = v.as_dict()
    figures = declared_figures(result)[0]
    assert figures["validation_drift"][0] == pytest.approx(100 * v.drift)
    assert "5 of the search's own points" in figures["validation_drift"][1].label


def test_the_tags_say_how_many_launches_measure_the_held_out_workloads():
    """Nightly and acceptance measure them twice (the drift is their floor); quick keeps
    its minutes with one launch; the driver refuses any other count."""
    import yaml

    table = yaml.safe_load((REPO / "reframe_checks" / "workloads.yaml").read_text())["selfscale"]
    launches = {}
    for tag, params in table.items():
        options = search_options(params)
        launches[tag] = options[options.index("--validate-launches") + 1]
    assert launches == {"quick": "1", "nightly": "2", "acceptance": "2"}
    # twenty held-out workloads left the nightly median error anywhere within 4-32%
    assert [
        search_options(table[t])[search_options(table[t]).index("--validate") + 1]
        for t in ("nightly", "acceptance")
    ] == ["40", "40"]
    with pytest.raises(ValueError, match="selfscale space_filling: expected a whole number"):
        search_options({"space_filling": "lots"})
    refused = driver(["--dir", "/tmp", "--kernel", "k", "--out", "o", "--validate-launches", "3"])
    assert refused.returncode == 2 and "--validate-launches: invalid choice: 3" in refused.stderr


class ReadWriteSynthetic(Synthetic):
    """A FUSE-like file system, not separable: reads come from the page cache at 5 GiB/s
    and scale with processes, every write costs a 50 us round trip plus its bytes at 800
    MiB/s, whatever the processes; a workload mixes them byte by byte (each byte read
    takes the read time, each byte written the write time)."""

    def throughput(self, w):
        reads = 5 * GIB * w.process_num / (w.process_num + 1) * (0.8 + 0.2 * w.seq_frac)
        writes = w.size_mean / (w.size_mean / (800 * MIB) + 50e-6)
        value = 1.0 / (w.read_frac / reads + (1 - w.read_frac) / writes)
        return value * math.exp(self.noise * self.rng.standard_normal())


def test_reads_and_writes_predicted_apart_where_they_scale_apart():
    """Where request size and processes act on reads and writes differently, the
    direction curves predict each apart and mix them as the workload does: the median
    error on held-out workloads falls many times below the product form's, which
    applies the one sizeMean curve measured at the focal readFrac to both."""
    fs = ReadWriteSynthetic()
    domain = ss.Domain(unique_bytes=(MIB, 4 * GIB), size_mean=(KIB, 16 * MIB), process_num=(1, 8))
    ex = ss.explore(fs.measure, domain)
    regime = ex.model.regimes["cache"]
    assert set(regime.directions) == {"read", "write"}
    assert set(regime.directions["write"]) == set(ss.DIRECTED_PARAMETERS)
    held_out = ss.draw_workloads(domain, 60, seed=11)
    split = ss.validate(ex.model, fs.measure, held_out)
    product = ss.validate(ex.model.product_form(), fs.measure, held_out)
    assert split.median_error < 0.05 and product.median_error > 4 * split.median_error, (
        split.median_error,
        product.median_error,
    )
    # without the rule, the search measures no direction curves: the product form
    plain = ss.explore(fs.measure, domain, ss.Rules(direction_curves=False))
    assert not plain.model.regimes["cache"].directions
    assert plain.points_measured < ex.points_measured


class SharedWriteSynthetic(Synthetic):
    """Reads that each process does at its own 2 GiB/s (they scale with processes) and
    writes that all processes share at 1 GiB/s (one write-back behind them all).  One
    process reads or writes, never both at once: its times add up.  With P processes,
    the others read while one waits for a write: a share (P - 1) / P of the shorter
    direction's time is hidden.  So how reads and writes mix changes with processNum,
    which no overlap taken from the readFrac curve alone (measured at one processNum)
    holds."""

    def throughput(self, w):
        p = w.process_num
        reads = w.read_frac / (2 * GIB * p)
        writes = (1 - w.read_frac) / GIB
        hidden = (p - 1) / p * min(reads, writes)
        value = 1.0 / (reads + writes - hidden) * self.factor("seq_frac", w.seq_frac)
        value *= w.size_mean / (w.size_mean + 16 * KIB)
        return value * math.exp(self.noise * self.rng.standard_normal())


def test_how_reads_and_writes_mix_follows_the_processes():
    """Where more processes hide more of the shorter direction's time (one reads while
    another waits for a write), the share of the time hidden is read along each
    directed parameter's own curve, not only the readFrac curve's: mixed workloads at
    other process counts come out several times closer, and along the processNum curve
    itself the prediction is its measurement."""
    fs = SharedWriteSynthetic()
    domain = ss.Domain(unique_bytes=(MIB, GIB), size_mean=(KIB, 16 * MIB), process_num=(1, 16))
    ex = ss.explore(fs.measure, domain, ss.Rules(max_rounds=2))
    regime = ex.model.regimes["cache"]
    held_out = [w for w in ss.draw_workloads(domain, 80, seed=17) if 0.1 <= w.read_frac <= 0.9]
    by_parameter = ss.validate(ex.model, fs.measure, held_out)
    lines = ss.Regime._overlap_lines

    def read_frac_only(self):
        return {q: f for q, f in lines(self).items() if q == "read_frac"}

    ss.Regime._overlap_lines = read_frac_only
    try:
        model = ss.Exploration.from_dict(ex.as_dict()).model
        by_read_frac = ss.validate(model, fs.measure, held_out)
    finally:
        ss.Regime._overlap_lines = lines
    # at the process counts the processNum curve measured, other than the focal one
    # (past them, both take the share at its last point)
    processes = regime.curves["process_num"]
    inside = [
        k
        for k, w in enumerate(held_out)
        if w.process_num <= max(processes.xs) and w.process_num != regime.focal.process_num
    ]
    error, error_read_frac = (
        float(np.median([v.errors[k] for k in inside])) for v in (by_parameter, by_read_frac)
    )
    assert len(inside) >= 15 and error < 0.05, (len(inside), error)
    assert error_read_frac > 3 * error, (error, error_read_frac)
    assert by_parameter.median_error < by_read_frac.median_error
    for x, y in zip(processes.xs, processes.ys):
        w = regime.focal.with_value("process_num", x)
        assert ex.model.predict_in(w, "cache") == pytest.approx(y, rel=0.02), x


class SizeFootprintSynthetic(Synthetic):
    """Not separable in uniqueBytes and sizeMean: a request that hits the page cache
    costs 2 us plus its bytes at 5 GiB/s; one that misses costs a 200 us device latency
    plus its bytes at 500 MiB/s.  Past the cache, 4 KiB requests fall about 100x and
    16 MiB requests about 10x: no one uniqueBytes curve holds both falls.  Reads and
    writes cost the same, and each process adds as much (so that the other parameters'
    curves hold exactly)."""

    def throughput(self, w):
        hit = min(1.0, self.cache / w.unique_bytes)
        size = w.size_mean
        seconds = hit * (2e-6 + size / (5 * GIB)) + (1 - hit) * (200e-6 + size / (500 * MIB))
        value = size / seconds * w.process_num * self.factor("seq_frac", w.seq_frac)
        return value * math.exp(self.noise * self.rng.standard_normal())


def test_the_size_curves_follow_a_fall_with_the_footprint_that_depends_on_the_request_size():
    """Where how far throughput falls past the cache depends on the request size (the
    uniqueBytes x sizeMean interaction of issue 26, section 4), the uniqueBytes curves
    measured at the smallest and largest sizeMean, interpolated in log sizeMean between
    them and the focal one, predict held-out workloads past the cache several times
    closer than the one uniqueBytes curve; the stored figures rebuild them."""
    fs = SizeFootprintSynthetic(cache=GIB)
    domain = ss.Domain(unique_bytes=(MIB, 16 * GIB), size_mean=(KIB, 16 * MIB), process_num=(1, 8))
    lines = []
    ex = ss.explore(fs.measure, domain, progress=lines.append)
    sizes = sorted(c.fixed["size_mean"] for c in ex.model.size_curves)
    # the domain's ends, and a size between the focal one and the far end
    focal_size = ex.model.unique_curve.fixed["size_mean"]
    assert sizes == ss.size_curve_sizes(domain, focal_size) == [KIB, 256 * KIB, 16 * MIB], sizes
    assert any("uniqueBytes at sizeMean 16 MiB" in ln for ln in lines), lines
    held_out = ss.draw_workloads(domain, 60, seed=11)
    # the curves alone: what the size curves hold, without the correction by the points
    curves = dataclasses.replace(ex.model, points=[])
    with_sizes = ss.validate(curves, fs.measure, held_out)
    one_curve = ss.validate(dataclasses.replace(curves, size_curves=[]), fs.measure, held_out)
    # past the cache, where the falls differ (inside it, both models are the same)
    past = [k for k, w in enumerate(held_out) if w.unique_bytes > 2 * fs.cache]
    error, error_one = (
        float(np.median([v.errors[k] for k in past])) for v in (with_sizes, one_curve)
    )
    assert len(past) >= 10 and error < 0.05 and error_one > 3 * error, (error, error_one)
    assert with_sizes.max_error < one_curve.max_error
    # the product form is the paper's: one uniqueBytes curve
    assert not ex.model.product_form().size_curves
    result = {
        "exploration": ex.as_dict(),
        "validation": with_sizes.as_dict(),
        "timing": {"total_s": 1.0},
    }
    figures, _ = declared_figures(result)
    assert "curve_unique_bytes_16g_size_16m" in figures
    stored = {name: (value, decl.as_dict()) for name, (value, decl) in figures.items()}
    rebuilt = ss.Model.from_figures(json.loads(json.dumps(stored)))
    for w in held_out[:20]:
        assert rebuilt.predict(w) == pytest.approx(ex.model.predict(w), rel=1e-6)
    # without the rule, no size curves are measured
    plain = ss.explore(fs.measure, domain, ss.Rules(size_curves=False))
    assert not plain.model.size_curves and plain.points_measured < ex.points_measured


class DirtyDataSynthetic(Synthetic):
    """Not separable in uniqueBytes and readFrac, as a page cache is: reads come from it
    at 5 GiB/s up to its size and from the device at 400 MiB/s past it; writes go to
    it at 4 GiB/s only while the footprint stays under the dirty limit (a tenth of the
    cache), then at the device's 400 MiB/s write-back rate.  Between a tenth of the cache
    and the cache, writes have fallen 10x and reads not at all: no one uniqueBytes curve
    holds both, whatever the readFrac it is measured at.  A workload mixes them byte by
    byte."""

    def throughput(self, w):
        hit = min(1.0, self.cache / w.unique_bytes)
        reads = 1.0 / (hit / (5 * GIB) + (1 - hit) / (400 * MIB))
        clean = min(1.0, 0.1 * self.cache / w.unique_bytes)
        writes = 1.0 / (clean / (4 * GIB) + (1 - clean) / (400 * MIB))
        value = w.process_num / (w.read_frac / reads + (1 - w.read_frac) / writes)
        value *= self.factor("seq_frac", w.seq_frac)
        return value * math.exp(self.noise * self.rng.standard_normal())


def test_reads_and_writes_fall_with_the_footprint_each_by_its_own_curve():
    """Where reads and writes fall with the footprint differently (writes past the dirty
    limit, reads past the cache: the uniqueBytes x readFrac interaction measured on this
    machine's disk), the uniqueBytes curves measured with readFrac 1 and 0 predict
    held-out workloads several times closer than without them; the stored figures
    rebuild them, and the rule turns them off."""
    fs = DirtyDataSynthetic(cache=4 * GIB)
    domain = ss.Domain(unique_bytes=(MIB, 32 * GIB), size_mean=(KIB, 16 * MIB), process_num=(1, 8))
    lines = []
    ex = ss.explore(
        fs.measure, domain, ss.Rules(direction_unique_curves=True), progress=lines.append
    )
    assert set(ex.model.direction_unique) == {"read", "write"}
    assert ex.model.direction_unique["write"].fixed["read_frac"] == 0.0
    assert any(ln.startswith("uniqueBytes, writes only (readFrac 0)") for ln in lines), lines
    held_out = ss.draw_workloads(domain, 80, seed=13)
    curves = dataclasses.replace(ex.model, points=[])  # without the correction by the points
    split = ss.validate(curves, fs.measure, held_out)
    one = ss.validate(dataclasses.replace(curves, direction_unique={}), fs.measure, held_out)
    # between the dirty limit and the cache, where the falls differ (elsewhere both
    # models hold: each regime's direction curves are measured at its own footprint)
    between = [k for k, w in enumerate(held_out) if 0.1 * fs.cache < w.unique_bytes <= fs.cache]
    error, error_one = (float(np.median([v.errors[k] for k in between])) for v in (split, one))
    assert len(between) >= 10 and error < 0.05 and error_one > 3 * error, (error, error_one)
    assert split.median_error <= one.median_error
    assert not ex.model.product_form().direction_unique
    result = {"exploration": ex.as_dict(), "validation": split.as_dict(), "timing": {"total_s": 1}}
    figures, _ = declared_figures(result)
    assert any(name.endswith("_write") and "curve_unique_bytes_" in name for name in figures)
    stored = {name: (value, decl.as_dict()) for name, (value, decl) in figures.items()}
    rebuilt = ss.Model.from_figures(json.loads(json.dumps(stored)))
    assert set(rebuilt.direction_unique) == {"read", "write"}
    for w in held_out[:20]:
        assert rebuilt.predict(w) == pytest.approx(ex.model.predict(w), rel=1e-6)
    assert ss.Model.from_dict(json.loads(json.dumps(ex.model.as_dict()))).predict(
        held_out[0]
    ) == pytest.approx(ex.model.predict(held_out[0]), rel=1e-9)
    # off by default (Rules): no direction uniqueBytes curves are measured
    plain = ss.explore(fs.measure, domain)
    assert not plain.model.direction_unique and plain.points_measured < ex.points_measured


class SequentialFootprintSynthetic(Synthetic):
    """Not separable in uniqueBytes and seqFrac, nor in sizeMean and processNum: past the
    cache, random requests fall with the footprint and sequential ones (read ahead) do
    not; small requests stop scaling with processes.  No curve the search measures holds
    either interaction."""

    def throughput(self, w):
        past = max(1.0, w.unique_bytes / self.cache)
        value = 5 * GIB / past ** (1.0 - w.seq_frac)
        value *= (w.size_mean / (w.size_mean + 64 * KIB)) ** (1.0 + 0.3 * math.log(w.process_num))
        value *= 1 + w.read_frac
        return value * math.exp(self.noise * self.rng.standard_normal())


def test_space_filling_workloads_give_every_prediction_measured_neighbours():
    """The space-filling workloads (a Latin hypercube over the domain) are measured after
    the curves and enter the model's points only: each parameter's range is covered
    evenly, they are counted, and held-out workloads, which the points on the curves'
    lines lie far from, come out closer in every one of four searches."""
    domain = ss.Domain(unique_bytes=(MIB, 16 * GIB), size_mean=(KIB, 16 * MIB), process_num=(1, 8))
    spread = ss.space_filling_workloads(domain, 48)
    assert len(spread) == 48 and spread == ss.space_filling_workloads(domain, 48)
    for name in ("read_frac", "seq_frac"):
        # one workload in each of the 48 strata, give or take the rounding to 3 decimals
        counts = np.histogram([w.get(name) for w in spread], bins=8, range=(0, 1))[0]
        assert all(5 <= c <= 7 for c in counts), (name, counts)
    assert {w.process_num for w in spread} == set(range(1, 9))
    assert ss.space_filling_workloads(domain, 0) == []
    with pytest.raises(ss.SelfScaleError, match="rule space_filling: expected 0 or more"):
        ss.Rules(space_filling=-1)

    held_out = ss.draw_workloads(domain, 60, seed=17)
    truth = Synthetic.measure(SequentialFootprintSynthetic(cache=GIB), held_out, 1)
    ratios = []
    for seed in (5, 6, 7, 8):
        without, spread_too = (
            ss.explore(
                SequentialFootprintSynthetic(cache=GIB, noise=0.02, seed=seed).measure,
                domain,
                ss.Rules(space_filling=count),
            )
            for count in (0, 48)
        )
        assert set(spread) <= {w for w, _ in spread_too.model.points}
        assert spread_too.points_measured == without.points_measured + 48
        errors = [
            ss.validate(ex.model, lambda ws, reps: truth, held_out).median_error
            for ex in (without, spread_too)
        ]
        ratios.append(errors[1] / errors[0])
    # (seeded: 12.4 -> 11.2%, 16.1 -> 14.0%, 14.4 -> 11.1%, 18.6 -> 13.5%)
    assert max(ratios) < 0.95 and np.mean(ratios) < 0.85, ratios


def test_the_curves_are_corrected_by_their_error_at_the_measured_points_nearest():
    """Where the parameters interact in ways no curve holds, the curves' error at the
    search's own points, taken at the points nearest a workload, brings the held-out
    error down; at a measured point the prediction is its measurement; the points
    round-trip through the stored figures and JSON; the product form and a model
    without points are the curves alone."""
    fs = SequentialFootprintSynthetic(cache=GIB, noise=0.02, seed=5)
    domain = ss.Domain(unique_bytes=(MIB, 16 * GIB), size_mean=(KIB, 16 * MIB), process_num=(1, 8))
    ex = ss.explore(fs.measure, domain)
    model, curves = ex.model, dataclasses.replace(ex.model, points=[])
    assert len(model.points) >= 50
    assert all(curves.correction(w) == 1.0 for w, _ in model.points[:5])
    held_out = ss.draw_workloads(domain, 60, seed=17)
    truth = Synthetic.measure(SequentialFootprintSynthetic(cache=GIB), held_out, 1)
    corrected = ss.validate(model, lambda ws, reps: truth, held_out)
    alone = ss.validate(curves, lambda ws, reps: truth, held_out)
    # (seeded: 13.8% alone, 12.4% corrected; the search's points lie on lines through
    # the focal points, so a random workload's nearest lie some way off)
    assert corrected.median_error < 0.95 * alone.median_error, (
        corrected.median_error,
        alone.median_error,
    )
    # at a measured point (away from the throughput ceiling), its own measurement
    point, measured = next(
        (w, v) for w, v in model.points if v < 0.5 * model.per_process_ceiling * w.process_num
    )
    assert model.predict(point) == pytest.approx(measured, rel=1e-9)
    assert not model.product_form().points
    result = {
        "exploration": ex.as_dict(),
        "validation": corrected.as_dict(),
        "timing": {"total_s": 1},
    }
    figures, _ = declared_figures(result)
    stored = json.loads(json.dumps({n: (v, d.as_dict()) for n, (v, d) in figures.items()}))
    rebuilt = ss.Model.from_figures(stored)
    assert len(rebuilt.points) == len(model.points)
    from_json = ss.Model.from_dict(json.loads(json.dumps(model.as_dict())))
    for w in held_out[:20]:
        assert rebuilt.predict(w) == pytest.approx(model.predict(w), rel=1e-6)
        assert from_json.predict(w) == pytest.approx(model.predict(w), rel=1e-9)
    # a malformed stored point is one line naming the figure
    stored["focal_unique_bytes_cache"][1]["chart"]["selfscale"]["points"][0][-1] = -1
    with pytest.raises(ss.SelfScaleError, match="focal_unique_bytes_cache: a measured throughput"):
        ss.Model.from_figures(stored)


def test_different_caches_give_different_knees():
    small = ss.explore(Synthetic(cache=512 * MIB).measure, DOMAIN).model.knee
    large = ss.explore(Synthetic(cache=8 * GIB).measure, DOMAIN).model.knee
    assert 8 <= large.unique_bytes / small.unique_bytes <= 32


def test_no_knee_means_one_regime_and_the_model_still_predicts():
    fs = Synthetic(flat_unique=True)  # a memory file system: no device behind the cache
    ex = ss.explore(fs.measure, DOMAIN)
    assert ex.model.knee is None and set(ex.focal) == {"cache"}
    w = ss.Workload(8 * GIB, 256 * KIB, 0.3, 0.9, 6)
    assert ex.model.predict(w) == pytest.approx(fs.throughput(w), rel=0.05)


def test_noise_still_settles_near_the_truth_and_the_repeat_variation_is_reported():
    fs = Synthetic(noise=0.05, seed=3)
    ex = ss.explore(fs.measure, DOMAIN, ss.Rules(max_rounds=4), repeats=12)
    for regime in ex.focal:
        cv = ex.repeat_cv(regime)
        assert len(ex.repeat[regime]) == 12
        assert 0.02 < cv < 0.10, cv  # the 5% noise, measured
    truth = fs.true_knee(*DOMAIN.unique_bytes)
    assert steps_apart("unique_bytes", ex.model.knee.unique_bytes, truth) <= 1.5
    cache = ex.focal["cache"]
    assert steps_apart("read_frac", cache.read_frac, 0.5) <= 1.0
    assert steps_apart("process_num", cache.process_num, fs.true_focal("process_num", 1, 16)) <= 1.0


class CoreCliff(Synthetic):
    """Throughput that falls off a cliff past 2 processes (more ranks than cores), as on
    this 2-core machine: flat up to 2, 0.4 of that from 3 on."""

    @staticmethod
    def factor(name, v):
        if name == "process_num":
            return 1.0 if v <= 2 else 0.4
        return Synthetic.factor(name, v)


@pytest.mark.parametrize("fs", [Synthetic(), CoreCliff()], ids=["separable", "core-cliff"])
def test_the_focal_throughput_is_the_focal_points_own_measurement(fs):
    """Every focal point is a point the sweeps measured, and the model's throughput there
    is its measurement, not an interpolation across a cliff nor a curve measured with
    the other parameters elsewhere."""
    ex = ss.explore(fs.measure, DOMAIN)
    for name, regime in ex.model.regimes.items():
        for p, curve in regime.curves.items():
            assert regime.focal.get(p) in curve.xs, (name, p, regime.focal, curve.xs)
        assert ex.model.predict(regime.focal) == pytest.approx(
            fs.throughput(regime.focal), rel=1e-6
        ), name
    v = ss.validate(ex.model, fs.measure, ss.draw_workloads(DOMAIN, 40, seed=5))
    assert v.median_error < 0.03, sorted(v.errors)


def test_a_knee_below_a_range_the_page_cache_held_is_not_called_the_devices():
    """A curve that falls (CPU caches to memory, the background load) while the page
    cache still holds the largest uniqueBytes keeps its two regimes (their shape curves
    differ), and the rounds say what the page cache held."""
    fs = Synthetic(cache=4 * GIB)
    lines = []
    held = ss.explore(fs.measure, DOMAIN, resident=lambda w: 1.0, progress=lines.append)
    assert set(held.focal) == {"cache", "device"}
    assert all(r["top_resident"] == 1.0 for r in held.rounds)
    assert any("is not the device's" in line for line in lines), lines
    lines = []
    spilled = ss.explore(
        fs.measure,
        DOMAIN,
        progress=lines.append,
        resident=lambda w: min(1.0, fs.cache / w.unique_bytes),
    )
    assert set(spilled.focal) == {"cache", "device"}
    assert spilled.rounds[-1]["top_resident"] == pytest.approx(fs.cache / (64 * GIB))
    assert not any("is not the device's" in line for line in lines)


def _one_regime_model(unique_ys, throughput):
    focal = ss.Workload(16 * MIB, 64 * KIB, 0.5, 0.5, 2)
    xs = [MIB * 2**k for k in range(len(unique_ys))]
    curves = {
        p: ss.Curve(
            p,
            [focal.get(p) / 2, focal.get(p)],
            [throughput, throughput],
            {q: focal.get(q) for q in ss.PARAMETERS if q != p},
            "cache",
        )
        for p in ss.SHAPE_PARAMETERS
    }
    regime = ss.Regime("cache", focal, throughput, curves)
    return ss.Model(ss.Curve("unique_bytes", xs, unique_ys), {"cache": regime}), focal


def test_one_noisy_unique_bytes_point_does_not_move_every_prediction():
    """A point of the fine uniqueBytes grid 1.5x too high at the focal uniqueBytes
    (16 MiB) would scale every other uniqueBytes's prediction by 1/1.5: the model reads
    the curve smoothed over neighbouring points, never across the knee."""
    ys = [100.0] * 8
    ys[4] = 150.0
    model, focal = _one_regime_model(ys, 100.0)
    for u in (MIB, 4 * MIB, 64 * MIB):
        assert model.predict(focal.with_value("unique_bytes", u)) == pytest.approx(
            100.0, rel=0.2
        ), u
    step = ss.Curve("unique_bytes", [MIB * 2**k for k in range(6)], [10, 12, 10, 1, 1.2, 1])
    smooth = step.smoothed(split=6 * MIB)
    assert smooth.ys[1] == pytest.approx((10 * 12 * 10) ** (1 / 3))
    # the points next to the knee average with their neighbour on their side only
    assert smooth.ys[2] == pytest.approx((12 * 10) ** 0.5)
    assert smooth.ys[3] == pytest.approx(1.2**0.5)


def test_a_prediction_never_passes_the_fastest_measured_rate_per_process():
    """Large requests and all reads each measured 2x the focal throughput (one process):
    the product form says 4x for a workload with both, more than any point measured;
    the prediction stops at the fastest rate per process measured, times its processes."""
    focal = ss.Workload(16 * MIB, 64 * KIB, 0.5, 0.5, 1)
    others = {
        "seq_frac": ([0.0, 0.5, 1.0], [100.0, 100.0, 100.0]),
        "process_num": ([1, 2], [100.0, 150.0]),
    }
    curves = {
        p: ss.Curve(
            p,
            *others.get(
                p,
                (
                    [focal.get(p), 2 * focal.get(p)] if p == "size_mean" else [0.5, 1.0],
                    [100.0, 200.0],
                ),
            ),
            regime="cache",
        )
        for p in ss.SHAPE_PARAMETERS
    }
    model = ss.Model(
        ss.Curve("unique_bytes", [MIB, 16 * MIB], [100.0, 100.0]),
        {"cache": ss.Regime("cache", focal, 100.0, curves)},
    )
    assert model.per_process_ceiling == 200.0
    assert model.predict(focal) == pytest.approx(100.0)
    large_reads = ss.Workload(16 * MIB, 128 * KIB, 1.0, 0.5, 1)
    assert model.predict_in(large_reads, "cache") == pytest.approx(400.0)
    assert model.predict(large_reads) == pytest.approx(200.0)
    # one favourable parameter reaches no further than measured; two processes double
    # the ceiling (the product says 600)
    assert model.predict(large_reads.with_value("read_frac", 0.5)) == pytest.approx(200.0)
    assert model.predict(large_reads.with_value("process_num", 2)) == pytest.approx(400.0)


def test_exploration_round_trips_through_json():
    ex = ss.explore(Synthetic().measure, DOMAIN, repeats=2)
    again = ss.Exploration.from_dict(json.loads(json.dumps(ex.as_dict())))
    w = ss.Workload(3 * GIB, 48 * KIB, 0.2, 0.7, 5)
    assert again.model.predict(w) == pytest.approx(ex.model.predict(w), rel=1e-12)
    assert again.focal == ex.focal and again.repeat == ex.repeat


# ---- the rules, on curves drawn by hand ------------------------------------------------------
RULES = ss.Rules()


def test_focal_value_is_the_stated_fraction_between_minimum_and_maximum():
    rising = ss.Curve("read_frac", [0, 0.25, 0.5, 0.75, 1], [100, 200, 300, 400, 500])
    assert ss.focal_value(rising, RULES) == pytest.approx(0.5)
    assert ss.focal_value(rising, ss.Rules(focal_fraction=0.75)) == pytest.approx(0.75)
    falling = ss.Curve("seq_frac", [0, 0.5, 1], [400, 250, 100])
    assert ss.focal_value(falling, RULES) == pytest.approx(0.5)
    # log scale: halfway in throughput between 4k (10) and 64k (30) is 16k (20)
    sizes = ss.Curve("size_mean", [4096, 16384, 65536], [10, 20, 30])
    assert ss.focal_value(sizes, RULES) == 16384
    # rise, then a fall past the peak: the focal value is on the way from min to max
    peaked = ss.Curve("size_mean", [1024, 4096, 16384, 65536, 262144], [10, 50, 100, 60, 40])
    assert 4096 < ss.focal_value(peaked, RULES) < 16384


def test_a_flat_curve_has_its_focal_value_in_the_middle_and_the_whole_range_useful():
    flat = ss.Curve("read_frac", [0, 0.5, 1], [100, 104, 98])
    assert ss.focal_value(flat, RULES, DOMAIN) == 0.5
    assert ss.useful_range(flat, RULES) == (0, 1)
    procs = ss.Curve("process_num", [1, 2, 4, 8, 16], [50, 51, 50, 52, 51])
    assert ss.focal_value(procs, RULES, DOMAIN) == 4  # geometric middle of 1..16


def test_useful_range_is_where_the_curve_still_moves():
    saturating = ss.Curve(
        "size_mean", [1024, 4096, 16384, 65536, 262144, 1048576], [10, 11, 60, 100, 101, 100]
    )
    assert ss.useful_range(saturating, RULES) == (4096, 65536)
    peaked = ss.Curve("size_mean", [1024, 4096, 16384, 65536, 262144], [10, 50, 100, 60, 58])
    assert ss.useful_range(peaked, RULES) == (1024, 65536)
    # steps are weighed in log throughput: 20 to 80 MiB/s at the small-request end is a
    # step of 4x however small beside the 2 GiB/s the curve reaches (a range cut there
    # would predict 1 KiB requests at the 4 KiB ones' throughput)
    per_request = ss.Curve(
        "size_mean", [1024, 4096, 16384, 65536, 262144, 1048576], [20, 80, 310, 900, 1700, 2050]
    )
    assert ss.useful_range(per_request, RULES) == (1024, 262144)


def test_knee_is_the_largest_fall_not_a_small_one_or_a_noisy_point():
    xs = [2**k * MIB for k in range(0, 15)]
    # a CPU-cache step (2x at 16 MiB), then the page cache (20x at 2 GiB), one noisy point
    ys = [(2.0 if x < 16 * MIB else 1.0) * (20.0 if x < 2 * GIB else 1.0) for x in xs]
    ys[9] *= 1.3
    knee = ss.find_knee(ss.Curve("unique_bytes", xs, ys), RULES)
    assert GIB < knee.unique_bytes < 4 * GIB
    # the cache level is fitted over the whole cache regime, CPU-cache points included
    assert 20 <= knee.cache_level / knee.device_level <= 40
    small_drop = [100 if x < GIB else 80 for x in xs]
    assert ss.find_knee(ss.Curve("unique_bytes", xs, small_drop), RULES) is None


def test_the_knee_lies_where_the_page_cache_stopped_holding_the_footprint():
    """A nightly search here (node of 24 GiB, every point primed up to half of it and the
    rest dropped) measured this uniqueBytes curve: 16.9 GB/s within the CPU caches, 5-6
    GB/s from 64 MiB to 12 GiB, all held by the page cache, 1.8 and 1.3 GB/s at 16 and
    18.3 GiB, three quarters and two thirds held.  One step fitted anywhere puts the
    knee in the CPU caches' fall; between the last footprint held and the next, it is
    the page cache's.  The search does so whenever it is told what the cache held."""
    xs = [2**k * MIB for k in range(12)] + [3037000704, 4 * GIB, 6074000896, 8 * GIB]
    xs += [12148001792, 16 * GIB, 19663945728]
    gbs = [16.87, 15.89, 16.53, 14.48, 10.07, 8.18, 7.37, 6.55, 5.65, 5.06, 5.85, 6.39]
    gbs += [6.44, 5.95, 6.22, 6.09, 5.34, 1.83, 1.34]
    curve = ss.Curve("unique_bytes", xs, [g * 1e9 for g in gbs])
    assert ss.find_knee(curve, RULES).unique_bytes < 256 * MIB
    held = [1.0] * 17 + [0.75, 0.66]
    edge = ss.page_cache_edge(curve.xs, held)
    assert edge == (12148001792, 16 * GIB)
    knee = ss.find_knee(curve, RULES, edge)
    assert 12148001792 <= knee.unique_bytes <= 16 * GIB
    assert knee.device_level < 2e9 < 5e9 < knee.cache_level
    assert ss.page_cache_edge(curve.xs, [1.0] * 19) is None, "the largest held: no edge"
    assert ss.page_cache_edge(curve.xs, [0.5] * 19) is None, "none held"
    assert ss.page_cache_edge(curve.xs, [1.0] * 18 + [None]) is None, "not known"

    class CpuCaches(Synthetic):
        """4x faster within 16 MiB (CPU caches); the device only 2.5x slower than the
        page cache, its fall spread past 4 GiB: the larger fall is the CPU caches'."""

        def base(self, unique):
            return super().base(unique) * (4.0 if unique <= 16 * MIB else 1.0)

    fs = CpuCaches(cache=4 * GIB, device_rate=2000 * MIB)
    blind = ss.explore(fs.measure, DOMAIN)
    assert blind.model.knee.unique_bytes < 64 * MIB
    told = ss.explore(fs.measure, DOMAIN, resident=lambda w: min(1.0, fs.cache / w.unique_bytes))
    assert 4 * GIB <= told.model.knee.unique_bytes < 8 * GIB
    assert told.focal["cache"].unique_bytes == 512 * MIB, "regime_margin below the knee"


def test_regime_focal_points_sit_below_the_knee_and_beyond_memory():
    domain = ss.Domain(unique_bytes=(MIB, 64 * GIB))
    knee = ss.Knee(unique_bytes=4 * GIB, cache_level=1e9, device_level=1e8, throughput=3e8)
    assert ss.regime_focals(knee, None, domain, RULES) == {"cache": 512 * MIB, "device": 64 * GIB}
    assert ss.regime_focals(knee, None, domain, ss.Rules(regime_margin=4))["cache"] == GIB
    low = ss.Knee(unique_bytes=2 * MIB, cache_level=1e9, device_level=1e8, throughput=3e8)
    assert ss.regime_focals(low, None, domain, RULES)["cache"] == MIB  # the bottom


def test_domain_from_the_node_is_bounded_by_memory_and_free_space():
    d = ss.Domain.for_node(memory_bytes=16 * GIB, free_bytes=1000 * GIB, max_processes=8)
    assert d.unique_bytes == (MIB, 20 * GIB)  # 1.25 x memory
    d = ss.Domain.for_node(memory_bytes=16 * GIB, free_bytes=10 * GIB, max_processes=8)
    assert d.unique_bytes == (MIB, 5 * GIB)  # half the free space
    d = ss.Domain.for_node(16 * GIB, 1000 * GIB, 8, unique_max=256 * MIB)
    assert d.unique_bytes[1] == 256 * MIB and d.grid("process_num") == [1, 2, 3, 4, 8]
    assert d.grid("read_frac") == [0, 0.25, 0.5, 0.75, 1]
    grid = d.grid("unique_bytes")
    assert grid[0] == MIB and grid[-1] == 256 * MIB and len(grid) == 17


def test_held_out_workloads_fit_the_domain_and_are_reproducible():
    a = ss.draw_workloads(DOMAIN, 50, seed=5)
    assert a == ss.draw_workloads(DOMAIN, 50, seed=5) != ss.draw_workloads(DOMAIN, 50, seed=6)
    assert all(DOMAIN.fits(w) for w in a)
    assert len({w.process_num for w in a}) > 4 and len({w.read_frac for w in a}) > 40


def test_the_module_is_pure_numpy():
    tree = ast.parse((REPO / "scratchbench" / "selfscale.py").read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    }
    assert imported <= {
        "__future__",
        "bisect",
        "math",
        "dataclasses",
        "typing",
        "numpy",
        "scratchbench",
    }, imported
    ours = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module.startswith("scratchbench")
    }
    assert ours <= {"scratchbench.units"}, ours
    calls = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert "open" not in calls and "print" not in calls


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: ss.Workload(4096, 4096, 1.5, 0.5, 1), "readFrac: expected a fraction from 0 to 1"),
        (lambda: ss.Workload(4096, 100, 0.5, 0.5, 1), "sizeMean: expected an integer number"),
        (
            lambda: ss.Workload(4096, 4096, 0.5, 0.5, 0),
            "processNum: expected an integer of at least",
        ),
        (lambda: ss.Workload.from_dict({"unique_bytes": 1}), "missing sizeMean, readFrac"),
        (lambda: ss.Workload.from_dict({p: "x" for p in ss.PARAMETERS}), "expected a number"),
        (lambda: ss.Domain(unique_bytes=(GIB, MIB)), "domain uniqueBytes: expected 1 <= low"),
        (lambda: ss.Rules(focal_fraction=1.5), "rule focal_fraction: expected a number between"),
        (lambda: ss.Rules.from_dict({"focal": 0.5}), "rules: unknown focal"),
        (lambda: ss.Domain.for_node(16 * GIB, 2 * MIB, 4), "the target has room for 1 MiB"),
        (lambda: ss.Curve("size_mean", [1, 2], [1, -1]), "throughput must be positive"),
        (lambda: ss.Model.from_figures({}), "no uniqueBytes curve"),
        (lambda: ss.draw_workloads(DOMAIN, 0, 1), "expected at least 1 workload"),
    ],
)
def test_bad_input_is_one_line(make, message):
    with pytest.raises(ss.SelfScaleError) as err:
        make()
    assert message in str(err.value) and "\n" not in str(err.value)


# ---- the figures a check stores, the model rebuilt from them, the pages --------------------------
def synthetic_result(fs, seed=1):
    ex = ss.explore(fs.measure, DOMAIN, repeats=5)
    v = ss.validate(ex.model, fs.measure, ss.draw_workloads(DOMAIN, 10, seed))
    return {
        "schema": "scratchbench-selfscale 1",
        "exploration": ex.as_dict(),
        "validation": v.as_dict(),
        "timing": {"total_s": 321.0},
        "error": None,
    }, ex


def test_far_workloads_lie_in_their_distance_bands():
    """Each far workload lies, in the one parameter it pushes, within its band past the
    model's measured range, as the advisor measures a job's distance; sizes stay on the
    kernel's 512-byte unit and uniqueBytes within the bytes the target can hold."""
    ex = ss.explore(Synthetic().measure, DOMAIN)
    ranges = ex.model.measured_range()
    far = ss.draw_far_workloads(ex.model, DOMAIN, 6, seed=3, unique_limit=math.inf)
    assert far == ss.draw_far_workloads(ex.model, DOMAIN, 6, seed=3, unique_limit=math.inf)
    assert [f.band for f in far] == [2.0] * 6 + [4.0] * 6
    lower = {2.0: 1.0, 4.0: 2.0}
    for f in far:
        value = f.workload.get(f.parameter)
        assert ss.distance_past(ranges, f.parameter, value) == f.distance
        assert lower[f.band] * 1.01 < f.distance <= f.band * 1.01, f
        for other in ss.FAR_PARAMETERS:
            if other != f.parameter:
                assert ss.distance_past(ranges, other, f.workload.get(other)) == 1.0, f
        assert f.workload.size_mean % ss.UNIT == 0 and f.workload.size_mean >= ss.UNIT
        assert f.workload.size_mean <= DOMAIN.largest_size(f.workload.unique_bytes)
    assert {f.parameter for f in far} == set(ss.FAR_PARAMETERS)
    # no room on the target past the measured uniqueBytes: only request sizes are pushed
    tight = ss.draw_far_workloads(
        ex.model, DOMAIN, 6, seed=3, unique_limit=ranges["unique_bytes"][1]
    )
    assert tight and {f.parameter for f in tight} == {"size_mean"}
    with pytest.raises(ss.SelfScaleError, match="at least 1 workload a band"):
        ss.draw_far_workloads(ex.model, DOMAIN, 0, seed=3, unique_limit=math.inf)


def test_declared_figures_rebuild_the_model():
    result, ex = synthetic_result(Synthetic(noise=0.02))
    figures, samples = declared_figures(result)
    for name in (
        "focal_throughput_cache",
        "focal_throughput_device",
        "knee_unique_bytes",
        "prediction_error_median",
        "prediction_error_max",
        "focal_variation_cache",
        "exploration_time",
        "curve_unique_bytes_1g",
        "curve_read_frac_50pct_cache",
        "knee_throughput",
        "focal_size_mean_device",
    ):
        assert name in figures, name
    assert len(samples["focal_throughput_cache"]) == 5
    # where the search put a focal point or found the knee differs between file systems:
    # the pages show these figures and never rank file systems on them
    from scratchbench.figures import DESCRIPTIVE_ROLES

    for name in (
        "focal_throughput_cache",
        "focal_throughput_device",
        "knee_unique_bytes",
        "prediction_error_median",
    ):
        assert figures[name][1].role in DESCRIPTIVE_ROLES, name
    stored = {name: (value, decl.as_dict()) for name, (value, decl) in figures.items()}
    model = ss.Model.from_figures(json.loads(json.dumps(stored)))
    for w in ss.draw_workloads(DOMAIN, 20, seed=9):
        assert model.predict(w) == pytest.approx(ex.model.predict(w), rel=1e-6)
    assert model.knee.unique_bytes == ex.model.knee.unique_bytes
    del stored["focal_unique_bytes_cache"]
    with pytest.raises(ss.SelfScaleError, match="no focal point of the cache regime"):
        ss.Model.from_figures(stored)


def test_the_headline_label_does_not_move_with_the_focal_point():
    """Pages and verdicts follow a figure by its label: two file systems (or two nights)
    whose searches find other focal points still share one headline series."""
    small, big = (
        declared_figures(synthetic_result(Synthetic(cache=c, noise=0.02))[0])[0]
        for c in (1 * GIB, 8 * GIB)
    )
    assert small["focal_unique_bytes_cache"][1].label != big["focal_unique_bytes_cache"][1].label
    for regime in ("cache", "device"):
        name = f"focal_throughput_{regime}"
        assert small[name][1].label == big[name][1].label


def test_pages_draw_one_graph_per_parameter_and_compare_two_targets(tmp_path):
    """Two targets whose page caches differ 8x: each target's page has a graph per
    parameter, the compare page puts both targets' curves on the same axes, and a model
    rebuilt from the history store predicts what the search's own model predicts."""
    runs = tmp_path / "results" / "runs"
    models = {}
    cases = []
    for target, cache in (("fastfs", 8 * GIB), ("slowfs", GIB)):
        result, ex = synthetic_result(Synthetic(cache=cache, noise=0.01))
        models[target] = ex.model
        figures, samples = declared_figures(result)
        cases.append(
            make_case(
                "KernelSelfScale",
                {"scratch_target": target},
                "gnu-openmpi",
                target,
                {n: (v, d.unit, samples.get(n, [])) for n, (v, d) in figures.items()},
                declarations={n: d.as_dict() for n, (_, d) in figures.items()},
                title="Self-scaling I/O (Chen and Patterson, seed 003)",
            )
        )
    run_dir = runs / "night00"
    run_dir.mkdir(parents=True)
    (run_dir / "report.json").write_text(json.dumps(make_report("night00", 1_800_000_000, cases)))
    db = tmp_path / "history.sqlite"
    conn = store.connect(db)
    assert store.ingest_all(conn, runs)[0] == 1
    # the advisor's way in: a target's stored figures -> the model
    for target, model in models.items():
        rows = store.figure_rows(conn, "WHERE c.scratch_target = ?", (target,))
        stored = {
            r["metric"]: (r["value"], {"chart": json.loads(r["chart"]) if r["chart"] else None})
            for r in rows
        }
        rebuilt = ss.Model.from_figures(stored)
        w = ss.Workload(2 * GIB, 128 * KIB, 0.6, 0.4, 3)
        assert rebuilt.predict(w) == pytest.approx(model.predict(w), rel=1e-6)
    conn.close()
    out = tmp_path / "pages"
    pages.build(out, db_path=db)
    titles = [
        f"Throughput against {ss.PAPER_NAMES[p]} (self-scaling, seed 003)" for p in ss.PARAMETERS
    ]
    for target in ("fastfs", "slowfs"):
        page = (out / f"fs-{target}.html").read_text()
        for title in titles:
            assert title in page, (target, title)
    compare = (out / "compare.html").read_text()
    for title in titles:
        assert title in compare
    # the uniqueBytes graph of the compare view: both targets' curves, knees and focal
    # points in one plot
    specs = [json.loads(m) for m in _plot_specs(compare)]
    unique = [
        s for s in specs if any(str(t.get("name", "")).endswith("(focal)") for t in s["data"])
    ]
    assert unique, "no uniqueBytes comparison plot"
    names = {t["name"] for t in unique[0]["data"]}
    for target, model in models.items():
        focal = ss.size_words(model.unique_curve.fixed["size_mean"])
        assert {f"{target}: measured, sizeMean {focal} (focal)", f"{target}: knee"} <= names
    assert unique[0]["layout"]["xaxis"]["type"] == "log"


def _plot_specs(html_text):
    """The Plotly specifications embedded in a page (JSON in data attributes or
    scripts), as the page builder writes them."""
    import html as html_module
    import re

    found = []
    for match in re.finditer(r"data-spec=\"([^\"]+)\"", html_text):
        found.append(html_module.unescape(match.group(1)))
    for match in re.finditer(
        r"<script type=\"application/json\"[^>]*>(.*?)</script>", html_text, re.S
    ):
        found.append(match.group(1))
    return found


# ---- the kernel's selfscale mode ------------------------------------------------------------------
def report_of(path):
    return parse_kernel_json(Path(path).read_text())


def kernel(build, np_, args, tmp, **kw):
    out = Path(tmp) / f"r{time.monotonic_ns()}.json"
    result = mpirun(build, np_, ["selfscale", *map(str, args), "--output", out], **kw)
    return result, (report_of(out) if out.exists() else None)


@pytest.fixture
def shm_dir():
    base = Path("/dev/shm")
    if not base.is_dir():
        pytest.skip("no /dev/shm (tmpfs) here")
    d = Path(tempfile.mkdtemp(prefix="sb-selfscale-", dir=base))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def disk_dir(tmp_path_factory):
    """A directory on the machine's disk (never tmpfs): under SCRATCHBENCH_HOME."""
    DISK_ROOT.mkdir(parents=True, exist_ok=True)
    d = Path(tempfile.mkdtemp(prefix="sb-selfscale-disk-", dir=DISK_ROOT))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("build", ["openmpi", "asan", "mpich"])
def test_kernel_measures_a_point_as_asked(kernels, tmp_path, build):
    result, report = kernel(
        kernels[build],
        3,
        [
            "--dir",
            tmp_path,
            "--point",
            "64m:64k:0.3:0.6:2",
            "--point",
            "64m:4k:1:0:3",
            "--requests",
            3000,
            "--warmup",
            0,
            "--reps",
            2,
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert kernel_problems(report, expected_ranks=3, expected_nodes=1) == []
    first = report["repetitions"][1]["phases"]["p0"]
    assert first["active"] == 2 and first["per_rank"]["active"] == [1, 1, 0]
    assert first["requests"] == 6000
    assert first["size_min"] == 32 * KIB and first["size_max"] == 96 * KIB
    m = first["measured"]
    assert abs(m["read_frac"] - 0.3) < 0.03 and abs(m["seq_frac"] - 0.6) < 0.03
    assert abs(m["size_mean"] - 64 * KIB) < 0.03 * 64 * KIB
    second = report["repetitions"][1]["phases"]["p1"]
    assert second["measured"]["read_frac"] == 1 and second["measured"]["seq_frac"] == 0
    assert second["read_bytes"] == second["bytes"] and second["requests"] == 3 * 3000
    assert report["summary"]["p0"]["throughput_Bps"]["n"] == 2
    assert report["summary"]["verify_bad_words"] == 0
    assert not list(tmp_path.glob("sbk.selfscale.*")), "the run directory was left behind"


def test_kernel_windows_end_on_time_though_the_clock_is_read_every_few_requests(kernels, shm_dir):
    """The stream reads the clock about once a millisecond of requests (at most every
    64th): a window of fast cached 512 B requests and one of 4 MiB requests (a clock read
    each) both end at their duration, not a stride of requests later, and each is timed
    to its end (requests / window = the rate reported)."""
    result, report = kernel(
        kernels["openmpi"],
        1,
        ["--dir", shm_dir, "--point", "8m:512:1:1:1", "--point", "64m:4m:0.5:1:1"]
        + ["--duration", 0.3, "--warmup", 0.05, "--reps", 2, "--size-spread", 0],
        shm_dir,
    )
    assert result.returncode == 0, result.stderr
    for rep in report["repetitions"]:
        for phase in ("p0", "p1"):
            p = rep["phases"][phase]
            window = p["measured"]["window_s"]
            assert 0.3 <= window < 0.6, (phase, window)
            assert p["requests_per_s"] == pytest.approx(p["requests"] / window, rel=1e-6)
        assert rep["phases"]["p0"]["requests"] > 64 * 100, "hundreds of strides in a window"


@pytest.mark.parametrize("build", ["openmpi", "asan"])
def test_kernel_appends_write_only_sequential_points_to_a_new_file(kernels, tmp_path, build):
    """--append: a write-only sequential point writes each rank's new file from its
    start, emptied whenever it reaches uniqueBytes (here 1 MiB, 4 times over in 4,096
    requests of 1 KiB), as a job's output grows its file; the data file is not written
    (a read point after it still verifies every read), the report says which points
    appended, and the new files are removed after the point."""
    data_before = tmp_path / "kept"
    data_before.mkdir()
    result, report = kernel(
        kernels[build],
        2,
        [
            "--dir",
            data_before,
            "--append",
            "--size-spread",
            0,
            "--point",
            "1m:1k:0:1:2",
            "--point",
            "1m:1k:1:1:2",
            "--requests",
            4096,
            "--warmup",
            0,
            "--keep",
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert report["config"]["append"] is True
    phases = report["repetitions"][0]["phases"]
    writes, reads = phases["p0"], phases["p1"]
    assert writes["appended"] is True and reads["appended"] is False
    assert writes["requests"] == 2 * 4096 and writes["bytes"] == 2 * 4096 * KIB
    assert writes["requests_per_s"] > 0
    assert report["summary"]["verify_bad_words"] == 0
    (run_dir,) = data_before.glob("sbk.selfscale.*")
    assert sorted(p.name for p in run_dir.iterdir() if p.name.startswith("selfscale.")) == [
        "selfscale.data.0"
    ]
    assert (run_dir / "selfscale.data.0").stat().st_size == MIB


def test_kernel_request_stream_is_reproducible_from_its_seed(kernels, tmp_path):
    def digests(seed):
        result, report = kernel(
            kernels["openmpi"],
            2,
            [
                "--dir",
                tmp_path,
                "--point",
                "32m:16k:0.5:0.5:2",
                "--requests",
                500,
                "--warmup",
                0,
                "--seed",
                seed,
            ],
            tmp_path,
        )
        assert result.returncode == 0, result.stderr
        phase = report["repetitions"][0]["phases"]["p0"]
        return phase["per_rank"]["request_digest"], phase["bytes"], phase["read_requests"]

    assert digests(7) == digests(7)
    assert digests(7)[0] != digests(8)[0]


def test_kernel_records_the_cache_state(kernels, shm_dir, disk_dir, tmp_path):
    # On disk the data is written once, synced and dropped: the first point starts cold,
    # and reading all of it sequentially leaves it resident.
    args = ["--point", "128m:1m:1:1:1", "--requests", 128, "--warmup", 0]
    result, report = kernel(kernels["openmpi"], 1, ["--dir", disk_dir, *args], tmp_path)
    assert result.returncode == 0, result.stderr
    phase = report["repetitions"][0]["phases"]["p0"]
    assert phase["resident_fraction_before"] < 0.1, phase["resident_fraction_before"]
    assert phase["resident_fraction_after"] > 0.9
    # --prime reads a cold footprint once first: the point starts in its steady state
    result, report = kernel(kernels["openmpi"], 1, ["--dir", disk_dir, *args, "--prime"], tmp_path)
    assert result.returncode == 0, result.stderr
    phase = report["repetitions"][0]["phases"]["p0"]
    assert phase["primed_bytes"] == 128 * MIB and phase["resident_fraction_before"] > 0.9
    # what the point found before priming, and the first pass's rate
    assert phase["resident_fraction_found"] < 0.1 and phase["prime_Bps"] > 0
    # tmpfs is the page cache: always resident
    result, report = kernel(kernels["openmpi"], 1, ["--dir", shm_dir, *args], tmp_path)
    assert result.returncode == 0, result.stderr
    phase = report["repetitions"][0]["phases"]["p0"]
    assert phase["resident_fraction_before"] == 1.0 == phase["resident_fraction_after"]
    assert phase["resident_fraction_found"] == 1.0 and phase["prime_Bps"] is None
    assert report["filesystem"]["type"] == "tmpfs"


def test_kernel_keeps_the_prime_limit_of_a_footprint_cached_and_drops_the_rest(
    kernels, disk_dir, tmp_path
):
    # --prime reads a footprint within its limit to the cache; of a larger one, which the
    # point before left half cached, it reads the first --prime-limit bytes and drops the
    # rest: each point starts in a state of its own size, not of the points before it.
    args = ["--point", "64m:1m:1:1:1", "--point", "128m:1m:1:1:1", "--requests", 32]
    args += ["--warmup", 0, "--prime", "--prime-limit", "96m"]
    result, report = kernel(kernels["openmpi"], 1, ["--dir", disk_dir, *args], tmp_path)
    assert result.returncode == 0, result.stderr
    assert report["config"]["prime_limit_bytes"] == 96 * MIB
    within, beyond = (report["repetitions"][0]["phases"][p] for p in ("p0", "p1"))
    assert within["primed_bytes"] == 64 * MIB and within["dropped_bytes"] == 0
    assert within["resident_fraction_before"] > 0.9
    assert beyond["primed_bytes"] == 96 * MIB and beyond["dropped_bytes"] == 32 * MIB
    assert 0.4 < beyond["resident_fraction_found"] < 0.7
    # 96 of 128 MiB, give or take the readahead the drop meets in flight
    assert 0.7 <= beyond["resident_fraction_before"] < 0.9, beyond["resident_fraction_before"]
    # the limit bounds --prime and nothing else
    alone = ["--dir", disk_dir, *args[:-3], "--prime-limit", "96m"]
    result, _ = kernel(kernels["openmpi"], 1, alone, tmp_path)
    assert result.returncode == 2
    assert "--prime-limit needs --prime" in result.stderr


def test_kernel_samples_the_cache_state_of_a_large_footprint(kernels, disk_dir, tmp_path):
    """Beyond 1 GiB the kernel looks at 64 stretches of the footprint, not every page
    (0.8 s a look at 18 GiB here): reading the first 128 MiB of a cold 1.25 GiB
    footprint leaves a tenth of it resident, and the sample says so."""
    args = ["--point", "1280m:1m:1:1:1", "--requests", 128, "--warmup", 0, "--seed", 3]
    result, report = kernel(kernels["openmpi"], 1, ["--dir", disk_dir, *args], tmp_path)
    assert result.returncode == 0, result.stderr
    phase = report["repetitions"][0]["phases"]["p0"]
    assert phase["resident_fraction_before"] < 0.02, phase["resident_fraction_before"]
    # 128 MiB of 1280 (the read-ahead may add a little)
    assert 0.08 <= phase["resident_fraction_after"] <= 0.13, phase["resident_fraction_after"]


def test_kernel_keeps_reuses_and_discards_its_data(kernels, tmp_path, request):
    k = kernels["openmpi"]
    # a short path: the core's message names the kept directory twice in 240 characters
    target = Path(tempfile.mkdtemp(prefix="sbss", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(target, ignore_errors=True))
    result, first = kernel(
        k,
        2,
        [
            "--dir",
            target,
            "--point",
            "16m:64k:0.5:0.5:2",
            "--keep",
            "--prepare",
            "32m",
            "--duration",
            0.1,
            "--warmup",
            0,
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    kept = Path(first["filesystem"]["run_dir"])
    assert (kept / "selfscale.data.0").stat().st_size == 32 * MIB
    result, again = kernel(
        k,
        2,
        ["--existing", kept, "--point", "32m:1m:1:0:1", "--duration", 0.1, "--warmup", 0],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert again["summary"]["verify_bad_words"] == 0 and kept.exists()
    result, _ = kernel(k, 2, ["--existing", kept, "--point", "64m:1m:1:0:1"], tmp_path)
    assert result.returncode == 2
    assert "holds 32 MiB of data per node, less than uniqueBytes 64 MiB" in result.stderr
    result, _ = kernel(k, 2, ["--existing", kept, "--discard"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert not kept.exists() and list(target.iterdir()) == []


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--point", "1g:64k:0.5:0.5"],
            "--point: expected uniqueBytes:sizeMean:readFrac:seqFrac:"
            "processNum (such as 1g:64k:0.5:0.5:2), got '1g:64k:0.5:0.5'",
        ),
        (
            ["--point", "1g:64k:1.5:0.5:1"],
            "--point: readFrac '1.5': expected a fraction from 0 to 1",
        ),
        (["--point", "1g:64k:0.5:x:1"], "--point: seqFrac 'x': expected a fraction from 0 to 1"),
        (
            ["--point", "1g:64k:0.5:0.5:0"],
            "--point: processNum '0': expected an integer of at least 1",
        ),
        (
            ["--point", "1g:100:0.5:0.5:1"],
            "--point: sizeMean '100': expected a size from 512 bytes",
        ),
        (
            ["--point", "64k:64k:0.5:0.5:1"],
            "--point 1: requests up to 98304 bytes (sizeMean x "
            "(1 + spread)) do not fit in uniqueBytes 65536",
        ),
        (
            ["--point", "1g:64k:0.5:0.5:3"],
            "--point 1: processNum 3 is more than the 2 ranks launched",
        ),
        ([], "--point is required"),
        (["--point", "1g:64k:0.5:0.5:1", "--discard"], "--discard needs --existing"),
        (["--point", "1g:64k:0.5:0.5:1", "--fadvise"], "--fadvise and --scan-file do not apply"),
        (["--point", "1g:64k:0.5:0.5:1", "--size-spread", "1"], "--size-spread must be below 1"),
        (["--point", "1g:64k:0.5:0.5:1", "--prepare", "512m"], "--prepare 536870912 bytes is less"),
        (["--point", "1g:64k:0.5:0.5:1", "--duration", "0"], "--duration must be more than 0"),
        (
            ["--point", "1g:64k:0:0.5:1", "--append"],
            "--append: no --point is write-only and sequential",
        ),
    ],
)
def test_kernel_bad_input_is_one_line(kernels, tmp_path, args, message):
    result, _ = kernel(kernels["openmpi"], 2, ["--dir", tmp_path, *args], tmp_path)
    assert result.returncode == 2, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("scratchbench-kernel:")]
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert not list(tmp_path.glob("sbk.selfscale.*"))


# ---- the driver: sweeps through the kernel, in one allocation -------------------------------------
def driver(args, timeout=600, background=False):
    """The driver's completed run, or with background=True its Popen (own session)."""
    env = dict(os.environ, **MPI["openmpi"]["env"])
    cmd = [sys.executable, DRIVER, *map(str, args)]
    if background:
        return subprocess.Popen(
            cmd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    return run(cmd, env=env, timeout=timeout)


def launcher(np_):
    return f"{MPI['openmpi']['run']} --oversubscribe -np {np_}"


@pytest.fixture
def room_for_twice_the_data(tmp_path, shm_dir):
    """A 130 MiB tmpfs of its own (root), where the search's 64 MiB take half the room,
    as the nightly searches' data do on a real target; /dev/shm for a normal user."""
    if os.geteuid() != 0:
        yield shm_dir
        return
    mount = tmp_path / "fs"
    mount.mkdir()
    options = "size=130m"
    assert subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", mount]).returncode == 0
    try:
        yield mount
    finally:
        subprocess.run(["umount", mount])


def test_driver_explores_validates_and_leaves_nothing(kernels, room_for_twice_the_data, tmp_path):
    """The job-side driver end to end.  Its far validation writes only the data its own
    workloads touch, not the search's again (a file as large as the search's, half the
    free space, did not fit on one server of the embedded SAN)."""
    binary, _ = kernels["openmpi"]
    shm_dir = room_for_twice_the_data
    out = tmp_path / "result.json"
    result = driver(
        [
            "--kernel",
            binary,
            "--launcher",
            launcher(2),
            "--dir",
            shm_dir,
            "--processes",
            2,
            "--out",
            out,
            "--reports",
            tmp_path / "reports",
            "--unique-max",
            "64m",
            "--size-max",
            "256k",
            "--duration",
            0.1,
            "--warmup",
            0.05,
            "--passes",
            1,
            "--request-window",
            0.1,
            "--request-passes",
            1,
            "--rules",
            json.dumps({"max_rounds": 2}),
            "--validate",
            4,
            "--validate-far",
            2,
            "--repeat",
            4,
            "--revisit",
            3,
        ]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "selfscale: round 1: sweeping uniqueBytes" in result.stdout
    assert "selfscale: validation: prediction error median" in result.stdout
    data = json.loads(out.read_text())
    assert data["error"] is None and data["schema"] == "scratchbench-selfscale 1"
    ex = ss.Exploration.from_dict(data["exploration"])
    v = ss.Validation.from_dict(data["validation"])
    assert len(v.workloads) == 4 and all(m > 0 for m in v.measured)
    # the held-out workloads measured in two launches, the second one's drift said
    labels = [p["label"] for p in data["points"]]
    # with 3 of the search's own points again, whose move since the search is said
    assert labels.count("validation") == 7 and labels.count("validation again") == 7
    assert all(len(m) == 2 for m in v.launches) and v.retest is not None
    assert "the second launch lies" in result.stdout
    searched = {json.dumps(w.as_dict(), sort_keys=True) for w, _ in ex.model.points}
    assert len(v.revisited) == 3 and v.drift is not None
    assert all(json.dumps(w.as_dict(), sort_keys=True) in searched for w, _, _ in v.revisited)
    assert "the search's own points measured again lie" in result.stdout
    assert declared_figures(data)[0]["validation_drift"][0] == pytest.approx(100 * v.drift)
    assert declared_figures(data)[0]["validation_retest"][0] == pytest.approx(100 * v.retest)
    for regime in ex.focal:
        assert len(ex.repeat[regime]) == 4 and ex.repeat_cv(regime) is not None
    # tmpfs is the page cache: the driver reports the cache state to the search
    assert all(r["top_resident"] == 1.0 for r in ex.rounds), ex.rounds
    assert all(p["resident_fraction_after"] == 1.0 for p in data["points"])
    assert data["timing"]["launches"] == len(list((tmp_path / "reports").glob("launch-*.json")))
    far = [w["workload"] for w in data["far_validation"]["workloads"]]

    def footprints(points):
        return sorted((int(p["unique_bytes"]), int(p["size_mean"])) for p in points)

    far_launch = next(
        report["config"]
        for report in map(json.loads, map(Path.read_text, (tmp_path / "reports").glob("*.json")))
        if footprints(report["config"]["points"]) == footprints(far)
    )
    assert far_launch["prepare_bytes"] == max(w["unique_bytes"] for w in far)
    assert data["timing"]["prepare_bytes"] == 64 * MIB, "the search's data, the largest"
    assert ex.domain.unique_bytes[1] == 64 * MIB
    assert list(shm_dir.iterdir()) == [], "the kept data was left behind"
    # what one request costs, measured at the smallest request size the search may use,
    # stored with the roles the advisor charges requests by
    rates = data["request_rates"]
    assert rates["size"] == ex.domain.size_mean[0] and rates["read"] > 0 and rates["write"] > 0
    assert "selfscale: request rate at 1 KiB sequential requests, 1 process" in result.stdout
    figures, _ = declared_figures(data)
    for direction in ("read", "write"):
        value, declaration = figures[f"request_rate_{direction}"]
        assert (value, declaration.role, declaration.unit) == (
            rates[direction],
            f"{direction}_requests_per_s",
            "ops/s",
        )
    # and at 4x that size: the share of a request's time that does not grow with its
    # bytes, which the advisor charges a smaller request (on tmpfs a 4 KiB read copies
    # 4 KiB, so it costs more than a 1 KiB one, but in windows this short on a busy
    # machine it can time no slower: the share is then taken as 1, never above)
    assert rates["larger_size"] == 4 * rates["size"]
    assert 0.0 <= rates["fixed_share"]["read"] <= 1.0 and rates["larger"]["read"] > 0
    assert 0.0 <= rates["fixed_share"]["write"] <= 1.0
    assert "of a request's time does not grow with its bytes" in result.stdout
    for direction in ("read", "write"):
        value, declaration = figures[f"request_fixed_share_{direction}"]
        assert (value, declaration.role, declaration.unit) == (
            pytest.approx(100.0 * rates["fixed_share"][direction]),
            f"{direction}_request_fixed_share",
            "%",
        )
    # and at the kernel's unit, below the domain's smallest size: a 512 B request's time
    # as a share of a 1 KiB one's, which prices the requests under 1 KiB
    assert rates["unit_size"] == ss.UNIT < rates["size"]
    for direction in ("read", "write"):
        assert rates["unit"][direction] > 0
        share = rates["unit_share"][direction]
        assert share == pytest.approx(rates[direction] / rates["unit"][direction])
        value, declaration = figures[f"request_unit_share_{direction}"]
        assert (value, declaration.role, declaration.unit) == (
            pytest.approx(100.0 * share),
            f"{direction}_request_unit_share",
            "%",
        )
    assert "/s at 512 B: " in result.stdout and "of a 1 KiB request's time)" in result.stdout
    # tmpfs keeps a file's pages across a new open: nothing dropped, no first pass
    reopen = data["reopen"]
    assert (reopen["kept"], reopen["first_pass_Bps"]) == (1.0, None), reopen
    assert "selfscale: reopen: 100% of the cached" in result.stdout
    assert figures["cache_dropped_at_reopen"][0] == 0.0 and "first_pass_read_rate" not in figures
    # the model checked past its measured range, in a launch of its own whose data is
    # gone too; the rebuilt model carries each band's error for the advisor
    far = [ss.FarWorkload.from_dict(w) for w in data["far_validation"]["workloads"]]
    assert far and {f.band for f in far} <= set(ss.FAR_BANDS)
    assert "selfscale: far validation: " in result.stdout
    errors = ss.far_errors(far, ss.Validation.from_dict(data["far_validation"]["validation"]))
    stored = {n: (v, d.as_dict()) for n, (v, d) in figures.items()}
    rebuilt = ss.Model.from_figures(json.loads(json.dumps(stored)))
    assert rebuilt.far_errors.keys() == errors.keys()
    for key, (error, count) in errors.items():
        assert rebuilt.far_errors[key] == (pytest.approx(error, rel=1e-9), count)
        assert figures[f"prediction_error_far_{key[0]}_{key[1]:g}x"][1].role == "model_error_far"
    # tmpfs is the page cache: a knee found there is recorded as still in it
    if ex.model.knee:
        assert ex.model.knee.top_resident == 1.0 and ex.model.knee.upper_in_page_cache
        assert figures["knee_throughput"][1].chart["selfscale"]["top_resident"] == 1.0


def test_the_fixed_share_of_a_request_comes_from_two_sizes():
    """A request takes a + b x bytes: 1 KiB at 1,000,000/s (1 µs) and 4 KiB at 500,000/s
    (2 µs) give b = 1/3072 µs a byte and a = 2/3 µs, two thirds of a 1 KiB request; a
    larger request that costs no more each (a round trip to a server) gives 1; a
    missing rate or a single size gives None."""
    sys.path.insert(0, str(DRIVER.parent))
    try:
        from selfscale_search import fixed_share
    finally:
        sys.path.pop(0)
    assert fixed_share(KIB, 1e6, 4 * KIB, 5e5) == pytest.approx(2 / 3, rel=1e-12)
    assert fixed_share(KIB, 1e6, 4 * KIB, 1.2e6) == 1.0
    assert fixed_share(KIB, 1e6, 4 * KIB, 1e6) == 1.0
    assert fixed_share(KIB, 1e6, 4 * KIB, 1e5) == 0.0  # bytes are all of it
    assert fixed_share(KIB, None, 4 * KIB, 5e5) is None
    assert fixed_share(KIB, 1e6, KIB, 1e6) is None


def test_the_unit_share_of_a_request_is_its_time_against_the_smallest_size():
    """1 KiB requests at 1,000,000/s and 512 B ones at 1,250,000/s: a 512 B request takes
    0.8 of a 1 KiB one's time; one slower than the 1 KiB one (noise, or a round trip
    whatever its size) gives more than 1, which the advisor takes as 1; a missing rate
    gives None."""
    sys.path.insert(0, str(DRIVER.parent))
    try:
        from selfscale_search import unit_share
    finally:
        sys.path.pop(0)
    assert unit_share(1e6, 1.25e6) == pytest.approx(0.8, rel=1e-12)
    assert unit_share(1e6, 0.9e6) == pytest.approx(1 / 0.9, rel=1e-12)
    assert unit_share(None, 1e6) is None and unit_share(1e6, None) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs of its own needs root")
def test_the_search_waits_for_the_room_its_data_took(tmp_path, monkeypatch, capsys):
    """After removing a search's data, a file system that frees space late (a SAN's
    servers) is waited for until its free space is back, within 256 MiB, and a directory
    can be made there, both for ROOM_STEADY_S in a row (a GlusterFS server that was full
    refused a nightly SAN search's next run directory after the mount counted its room
    free, and after a probe had made one); the wait is said.  One that never gives it
    back is waited for ROOM_WAIT_S, then the search goes on, saying how much is free."""
    selfscale_search = driver_module()
    monkeypatch.setattr(selfscale_search, "ROOM_STEADY_S", 0.5)
    monkeypatch.setattr(selfscale_search, "ROOM_POLL_S", 0.05)
    mount = tmp_path / "fs"
    mount.mkdir()
    options = "size=640m,nr_inodes=64"
    assert subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", mount]).returncode == 0

    def wait_while(*events):
        """wait_for_room while (seconds, action) events happen; its time and words."""
        timers = [threading.Timer(at, action) for at, action in events]
        started = time.monotonic()
        for t in timers:
            t.start()
        selfscale_search.wait_for_room(str(mount), free_before)
        for t in timers:
            t.join()
        return time.monotonic() - started, capsys.readouterr().out

    try:
        free_before = selfscale_search.free_bytes(mount)
        data = mount / "data"
        data.write_bytes(b"\0" * (400 * MIB))
        took, said = wait_while((0.75, data.unlink))
        assert took >= 1.25, "given back at 0.75 s, and still there 0.5 s later"
        assert re.search(r"gave its room back in [12] s \(still there [01] s later\)", said), said
        # the bytes free, but no directory can be made (here: no inode left), for a
        # while (0.15-0.3 s: shorter than ROOM_STEADY_S), then again, then for good
        fillers = []
        while True:
            try:
                (mount / f"f{len(fillers)}").touch()
            except OSError:
                break
            fillers.append(mount / f"f{len(fillers)}")
        last = fillers[-1]
        assert not selfscale_search.can_create(str(mount))
        took, said = wait_while((0.15, last.unlink), (0.3, last.touch), (0.75, last.unlink))
        assert took >= 1.25 and re.search(r"gave its room back in [12] s", said), (took, said)
        assert sorted(mount.iterdir()) == sorted(fillers[:-1]), "the probe leaves nothing"
        for filler in fillers[:-1]:
            filler.unlink()
        # never given back: waited for ROOM_WAIT_S, then on
        data.write_bytes(b"\0" * (400 * MIB))
        monkeypatch.setattr(selfscale_search, "ROOM_WAIT_S", 1)
        took, said = wait_while()
        assert said.startswith("selfscale: the file system has 240 MiB free after 1 s, not yet")
        assert said.rstrip().endswith("it had: going on")
    finally:
        subprocess.run(["umount", mount])


def driver_module():
    """reframe_checks/scripts/selfscale_search.py as a module."""
    sys.path.insert(0, str(DRIVER.parent))
    try:
        import selfscale_search
    finally:
        sys.path.pop(0)
    return selfscale_search


def kernel_args(binary, where, reports, **options):
    """The driver's arguments for its Kernel class: 2 ranks on `where`, one pass."""
    return argparse.Namespace(
        kernel=str(binary),
        launcher=launcher(2),
        dir=str(where),
        reports=str(reports),
        seed=1,
        size_spread=0.5,
        **{
            "requests": 0,
            "direct": False,
            "passes": 1,
            "request_passes": 1,
            "request_window": 0.1,
            **options,
        },
    )


#: the disk's curve falls over the range to at most this share of where tmpfs's falls
FALL_MARGIN = 0.7


def test_tmpfs_and_disk_have_different_knees(kernels, shm_dir, disk_dir, tmp_path):
    """The same uniqueBytes sweep of writes that are synced inside the timed window: on
    the disk, a footprint the page cache absorbs costs little to write back and a large
    one costs the device's rate; tmpfs has no device behind its cache.  Where the disk's
    knee lies moves from machine to machine (128-400 MiB seen), and tmpfs may lose a
    third at 2 GiB (CI: a fitted fall from 8.5 to 5.1 GB/s past 1.5 GiB), so what is
    judged is how far each curve falls over the range: the disk's, to its device, at
    least FALL_MARGIN further than tmpfs's (seen: 0.37-0.48 of it)."""
    selfscale_search = driver_module()
    binary, _ = kernels["openmpi"]
    knees, falls, resident = {}, {}, {}
    for name, where in (("tmpfs", shm_dir), ("disk", disk_dir)):
        args = kernel_args(
            binary,
            where,
            tmp_path / name,
            fsync="inside",
            warmup=0.2,
            duration=0.6,
            prepare=2 * GIB,
        )
        os.environ.update(MPI["openmpi"]["env"])
        k = selfscale_search.Kernel(args)
        sweep = [
            ss.Workload(u, 256 * KIB, 0.0, 0.0, 2) for u in [64 * MIB * 2**i for i in range(6)]
        ]
        try:
            values = k.measure(sweep, 1)
        finally:
            k.discard()
        curve = ss.Curve("unique_bytes", [w.unique_bytes for w in sweep], [v[0] for v in values])
        knees[name] = ss.find_knee(curve, ss.Rules())
        # the last two points' throughput over the first two's
        falls[name] = sum(curve.ys[-2:]) / sum(curve.ys[:2])
        resident[name] = [p["resident_fraction_after"] for p in k.points]
        assert k.run_dir is None and list(Path(where).iterdir()) == []
    assert all(r == 1.0 for r in resident["tmpfs"])
    assert knees["disk"] is not None, "no knee on the disk"
    assert falls["disk"] <= FALL_MARGIN * falls["tmpfs"], (falls, knees)


def test_request_rates_are_timed_over_a_small_footprint(kernels, shm_dir, tmp_path):
    """A cache regime whose focal footprint is large (2 GiB at nightly node-local sizes)
    still times its request rates over at most REQUEST_RATE_FOOTPRINT: the time a large
    footprint adds is the bytes' part, which the model charges at the job's footprint."""
    selfscale_search = driver_module()
    binary, _ = kernels["openmpi"]
    args = kernel_args(
        binary,
        shm_dir,
        tmp_path / "reports",
        fsync="outside",
        warmup=0.05,
        duration=0.1,
        prepare=0,
        request_passes=2,
        request_window=0.15,
    )
    os.environ.update(MPI["openmpi"]["env"])
    domain = ss.Domain(unique_bytes=(MIB, 256 * MIB))
    large = ss.Regime("cache", ss.Workload(256 * MIB, 64 * KIB, 0.5, 1.0, 2), 1e9, {})
    small = ss.Regime("cache", ss.Workload(4 * MIB, 64 * KIB, 0.5, 1.0, 2), 1e9, {})
    kernel = selfscale_search.Kernel(args)
    try:
        rates = selfscale_search.request_rates(
            kernel, argparse.Namespace(regimes={"cache": large}), domain
        )
        timed = {p["workload"]["unique_bytes"] for p in kernel.points}
        most = selfscale_search.REQUEST_RATE_FOOTPRINT
        assert most == 16 * MIB and (rates["unique_bytes"], timed) == (most, {most}), rates
        assert rates["read"] > 0 and rates["write"] > 0
        # its own windows and passes, and requests of exactly the two sizes (a program's)
        probe = json.loads(sorted((tmp_path / "reports").glob("launch-*.json"))[-1].read_text())
        config = probe["config"]
        assert (config["duration_s"], config["reps"], config["size_spread"]) == (0.15, 2, 0), config
        assert config["append"] is True
        # a focal footprint below it is kept: the page cache holds what the curves did
        rates = selfscale_search.request_rates(
            kernel, argparse.Namespace(regimes={"cache": small}), domain
        )
        assert rates["unique_bytes"] == 4 * MIB
        assert {p["workload"]["unique_bytes"] for p in kernel.points[-4:]} == {4 * MIB}
    finally:
        kernel.discard()
    assert list(shm_dir.iterdir()) == []


def test_driver_failure_is_one_line_and_removes_the_data(kernels, shm_dir, tmp_path):
    binary, _ = kernels["openmpi"]
    out = tmp_path / "result.json"
    # four processes asked for, two launched: the kernel refuses the first sweep
    result = driver(
        [
            "--kernel",
            binary,
            "--launcher",
            launcher(2),
            "--dir",
            shm_dir,
            "--processes",
            4,
            "--out",
            out,
            "--reports",
            tmp_path / "reports",
            "--unique-max",
            "16m",
            "--duration",
            0.05,
            "--warmup",
            0,
        ]
    )
    assert result.returncode == 2, result.stdout + result.stderr
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("selfscale_search:")]
    assert len(errors) == 1 and "more than the 2 ranks launched" in errors[0], result.stderr
    assert json.loads(out.read_text())["error"]["code"] == 2
    assert list(shm_dir.iterdir()) == []
    result = driver(
        [
            "--kernel",
            binary,
            "--launcher",
            launcher(2),
            "--dir",
            tmp_path / "nope",
            "--processes",
            2,
            "--out",
            out,
        ]
    )
    assert (
        result.returncode == 2 and "--dir" in result.stderr and "not a directory" in result.stderr
    )


@pytest.mark.parametrize(
    "option, value, expected",
    [
        ("--validate-far", -1, "--validate-far: expected 0 or more, got -1"),
        ("--revisit", -2, "--revisit: expected 0 or more, got -2"),
        ("--passes", 0, "--passes: expected at least 1, got 0"),
        ("--validate", 0, "--validate: expected at least 1, got 0"),
        ("--request-passes", 0, "--request-passes: expected at least 1, got 0"),
        ("--request-window", 0, "--request-window: expected seconds above 0, got 0.0"),
    ],
)
def test_driver_refuses_a_count_out_of_range(kernels, shm_dir, tmp_path, option, value, expected):
    binary, _ = kernels["openmpi"]
    out = tmp_path / "result.json"
    result = driver(
        ["--kernel", binary, "--launcher", launcher(2), "--dir", shm_dir, "--processes", 2]
        + ["--out", out, option, value]
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith(expected), result.stderr
    assert not out.exists() and list(shm_dir.iterdir()) == [], "a refusal created nothing"


def test_driver_stopped_by_a_signal_removes_the_data(kernels, shm_dir, tmp_path):
    binary, _ = kernels["openmpi"]
    proc = driver(
        [
            "--kernel",
            binary,
            "--launcher",
            launcher(2),
            "--dir",
            shm_dir,
            "--processes",
            2,
            "--out",
            tmp_path / "r.json",
            "--reports",
            tmp_path / "reports",
            "--unique-max",
            "64m",
            "--duration",
            1,
            "--warmup",
            0,
        ],
        background=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(shm_dir.glob("sbk.selfscale.*")):
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stdout + stderr
    assert "stopped by SIGTERM" in stderr
    assert list(shm_dir.iterdir()) == [], "the kept data was left behind"
