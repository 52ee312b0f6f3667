"""Regression verdicts: nightly (one figure's history) and acceptance (runs before/after).

Nightly (``nightly``, ``nightly_many``): the history of a figure, oldest first, is
segmented into levels by E-divisive applied recursively (each split tested with a
calibrated level test that allows for correlated nights, splits smaller than
``MIN_EFFECT`` merged), and the newest runs are scanned for a change of level that is
too recent to be a segment yet, with the worst (or best) newest run left out so that
no single run can make a change.  The verdict is about the newest level against the
one before it.  Whether a regression is news is decided from the history alone: the
same verdict is computed for the history as it stood on the nights before.

Acceptance (``acceptance``): the run is the unit of independence.  Each run is
summarised by the median of its repetitions; the runs before and after are compared
with Welch's t-test (on logarithms for positive figures), with a 95% confidence
interval of the relative change and the number of runs still needed.

Whether higher or lower is better is declared by the caller (``better``), never
guessed from a unit.  The method, the false-alarm bound and the simulation behind the
numbers: reports/VERDICTS.md; ci/benchmarks/verdict_simulation.py reproduces them.
"""

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from statistics import NormalDist
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from reports import verdict_methods as methods
from scratchbench import units

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

BETTER = ("higher", "lower")

# ---- nightly ---------------------------------------------------------------------------
ALPHA = 0.01  # bound: false regressions per unchanged figure per night
ALPHA_RECENT = 0.006  # recent-change scan, k <= RECENT_EARLY, one-sided (each way)
ALPHA_LATER = 0.0015  # recent-change scan, RECENT_EARLY < k <= RECENT, one-sided
ALPHA_SPLIT = 0.005  # one segmentation split, two-sided (a worse newest level: half)
ALPHA_REFERENCE = 0.05  # a looser split: only to pick the level a recent change is
# compared with
MIN_EFFECT = 0.05  # smaller changes of level are not reported (and are merged)
MIN_HISTORY = 8  # runs with a value before any verdict
NOISE_FLOOR = 0.001  # the least run-to-run spread assumed: 0.1% of the level
WINDOW = 100  # the newest runs a verdict looks at
RECENT = 30  # the newest k = 2..RECENT runs are scanned for a recent change
RECENT_EARLY = 10  # up to here with the lower threshold, beyond with the higher
MIN_SEGMENT = 3  # a level in the segmented history holds at least 3 runs
OVERFIT_DEPTH = 2  # spread is measured around levels split this deep, untested
MIN_REFERENCE = 5  # runs of the level before a recent change, at least
SUSPECT_Z = NormalDist().inv_cdf(1 - 0.001)  # one night this far below the level: suspect
LEAVE_OUT_Z = SUSPECT_Z  # a newest run this far from the others is left out of the scan
MAX_CORRELATION = 0.8  # the estimated night-to-night correlation is capped here
CORRELATION_SLACK = 0.3  # a split's correlation: at most that around finer levels + this
SAME_CHANGE = 3  # change points this close (runs) are the same change
LOOK_BACK = 3  # a change is news unless one of the 3 nights before reported it
CHUNK = 256  # figures judged together (pairwise distances: CHUNK x 101 x 101)


def _stats():
    """scipy.stats, imported when a verdict is first judged: the import takes most of a
    second, which the commands that judge nothing (run, ingest, history) should not pay."""
    from scipy import stats

    return stats


# Critical values (|z| needed) by number of runs in the window, linear in between: the
# worse of independent and AR(1) phi=0.5 noise, from `calibrate()` (40,000 simulated
# series per length and noise, seed 2026; 99 = no such test fits).  reports/VERDICTS.md.
CALIBRATION_LENGTHS: tuple[int, ...] = (8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100)
CRITICAL_RECENT = (2.11, 2.22, 2.28, 2.39, 2.5, 2.62, 2.69, 2.74, 2.78, 2.78, 2.8, 2.8, 2.82, 2.82)
CRITICAL_LATER = (99.0, 99.0, 99.0, 99.0, 2.59, 3.04, 3.38, 4.2, 3.62, 3.54, 3.5, 3.5, 3.39, 3.39)
CRITICAL_SPLIT: tuple[float, ...] = (
    9.92, 10.46, 9.84, 9.17, 7.58, 6.79, 6.29, 5.6, 5.33, 5.01, 4.85, 4.84, 4.67, 4.63,
)  # fmt: skip
CRITICAL_REFERENCE: tuple[float, ...] = (
    4.87, 5.36, 5.46, 5.39, 4.97, 4.66, 4.39, 4.03, 3.85, 3.68, 3.61, 3.56, 3.52, 3.47,
)  # fmt: skip
# The same, the worst of independent, phi=0.5 and phi=0.8 noise: a history whose
# nights correlate strongly wanders in long swings that pass for levels.  A history
# takes these as its correlation (the local estimate over the whole window, before any
# split) goes from CORRELATED_FROM to CORRELATED_AT, linearly; the tables above below.
CORRELATED_FROM, CORRELATED_AT = 0.5, 0.8
CRITICAL_RECENT_CORRELATED: tuple[float, ...] = (
    2.21, 2.25, 2.32, 2.42, 2.5, 2.63, 2.67, 2.73, 2.78, 2.78, 2.82, 2.79, 2.85, 2.83,
)  # fmt: skip
CRITICAL_LATER_CORRELATED: tuple[float, ...] = (
    99.0, 99.0, 99.0, 99.0, 2.56, 2.94, 4.97, 4.07, 5.06, 3.91, 3.45, 3.48, 3.37, 3.37,
)  # fmt: skip
CRITICAL_SPLIT_CORRELATED: tuple[float, ...] = (
    11.35, 13.3, 13.5, 13.69, 12.87, 11.79, 10.74, 9.37, 8.28, 7.2, 6.92, 6.49, 6.32, 6.08,
)  # fmt: skip
CRITICAL_REFERENCE_CORRELATED: tuple[float, ...] = (
    5.92, 7.26, 7.88, 8.33, 8.25, 7.78, 7.12, 6.08, 5.35, 4.93, 4.71, 4.46, 4.38, 4.25,
)  # fmt: skip

# ---- acceptance ------------------------------------------------------------------------
ACCEPTANCE_ALPHA = 0.05
ACCEPTANCE_POWER = 0.8
# An acceptance verdict is about a change an admin acts on: a smaller one, even when
# significant, is "no significant change" (a trace log written by the same cores made a
# node-local figure 6.5% slower once while the SAN's writes lost 50-75%).
ACCEPTANCE_MIN_EFFECT = 0.10
# A share (a figure in %) must also move this many percentage points: open and close
# taking 0.02% of a write instead of 0.01% is -50% and nothing an admin acts on.
ACCEPTANCE_MIN_POINTS = 1.0
MIN_RUNS = 2  # a side needs 2 runs to measure its run-to-run spread

# Labels, in order of precedence.
NIGHTLY_LABELS = {
    "invalid": "the latest value is not a number (nan or inf)",
    "insufficient-history": f"fewer than {MIN_HISTORY} runs with a value",
    "regression": "a new regression: the newest level is worse than the one before (notify)",
    "ongoing-regression": "the regression already reported is still there (no new notification)",
    "recovered": "a regression reported before is over: the level regained at least half "
    "of the loss, or the regression is no longer seen (notify, once)",
    "improvement": "a new improvement: the newest level is better than the one before",
    "suspect": "the latest run alone is far worse than the level: not yet a change",
    "ok": "no change of level; the detail says when the last one was",
}
ACCEPTANCE_LABELS = (
    "better",
    "worse",
    "no significant change",
    "insufficient",
    "invalid",
    "too short to trust",
)
# One line each for a verdict file.
NIGHTLY_METHOD = (
    f"{methods.SEGMENTATION} segmentation (recursive) and a scan of the newest 2-30 runs, "
    f"z-tests with {methods.CORRELATED_NIGHTS} night-to-night correlation, critical values "
    "calibrated by simulation; "
    f"regression = newest level at least {MIN_EFFECT:.0%} worse than the one before; one "
    "bad night is only suspect (reports/VERDICTS.md)"
)
NIGHTLY_FALSE_ALARMS = (
    f"at most {ALPHA:.0%} of unchanged figures get a regression verdict "
    "per night, with independent or correlated (AR(1) phi <= 0.5) nights"
)
ACCEPTANCE_METHOD = (
    "each run summarised by the median of its repetitions; "
    f"{methods.COMPARISON} on the runs (logarithms for positive figures), alpha "
    f"{ACCEPTANCE_ALPHA:.0%}, {1 - ACCEPTANCE_ALPHA:.0%} CI of the change; "
    f"better or worse only when significant after the Benjamini-Hochberg adjustment over "
    f"the figures judged together and a change of at least {ACCEPTANCE_MIN_EFFECT:.0%} "
    f"(and {ACCEPTANCE_MIN_POINTS:g} percentage point for a share)"
)


# ---- small closed forms ----------------------------------------------------------------
_KS = np.arange(2, RECENT + 1)


def _ar_sum_var(m, phi):
    """Var(sum of m consecutive AR(1) values) / marginal variance."""
    m = np.asarray(m, dtype=float)
    phi = np.asarray(phi, dtype=float)
    q = np.where(phi > 0, phi, 0.5)
    g = m * (1 + q) / (1 - q) - 2 * q * (1 - q**m) / (1 - q) ** 2
    return np.where(phi > 0, g, m)


def _ar_adjacent_cov(m, k, phi):
    """Cov(sum of a block of m, sum of the k values right after it) / marginal variance."""
    phi = np.asarray(phi, dtype=float)
    return phi * (1 - phi**m) * (1 - phi**k) / (1 - phi) ** 2


def _critical(table, n):
    return np.interp(n, CALIBRATION_LENGTHS, table)


def _blended(table, correlated, n, weight):
    """The critical value of ``table`` at window length n, moved towards its
    ``correlated`` twin by ``weight`` (per row, 0..1: see _correlated_weight)."""
    low = _critical(table, n)
    return low + weight * (_critical(correlated, n) - low)


def _correlated_weight(a):
    """0 for a history whose nights correlate at most CORRELATED_FROM, 1 from
    CORRELATED_AT, linear in between: the local estimate over the whole window (each
    run against the mean of up to LOCAL runs either side), which a change of level
    moves only near it.  (Measured around the levels a segmentation finds instead, the
    spurious splits of phi 0.8 noise pass for levels again: 2.4-3.5% regressions at 30
    runs.)"""
    _, phi = _noise(a, np.zeros(a.shape, dtype=bool))
    return np.clip((phi - CORRELATED_FROM) / (CORRELATED_AT - CORRELATED_FROM), 0.0, 1.0)


# ---- the batched core ------------------------------------------------------------------
def _prefix(a):
    s = np.zeros((a.shape[0], a.shape[1] + 1))
    np.cumsum(a, axis=1, out=s[:, 1:])
    return s


def _pairwise_prefix(a):
    """2-D prefix sums of |a_i - a_j| for each row: block sums in O(1)."""
    f, n = a.shape
    p = np.zeros((f, n + 1, n + 1))
    d = np.abs(a[:, :, None] - a[:, None, :])
    np.cumsum(d, axis=1, out=d)
    np.cumsum(d, axis=2, out=p[:, 1:, 1:])
    return p


LOCAL = 14  # the local level of a run: the mean of up to 14 runs either side (same level)


def _local_filter_correlation(phi, h=LOCAL):
    """Lag-1 correlation of x_t - mean(x_{t-h..t+h} without x_t) for AR(1) x (each phi)."""
    w = np.full(2 * h + 1, -1.0 / (2 * h))
    w[h] = 1.0
    lag = np.subtract.outer(np.arange(2 * h + 1), np.arange(2 * h + 1))
    out = []
    for p in np.atleast_1d(phi):
        cov0 = w @ (p ** np.abs(lag)) @ w
        cov1 = w @ (p ** np.abs(lag - 1)) @ w
        out.append(cov1 / cov0)
    return np.array(out)


_PHI_GRID = np.linspace(-0.9, 0.95, 75)
_LOCAL_RHO = _local_filter_correlation(_PHI_GRID)


def _noise(a, starts):
    """Marginal variance and night-to-night correlation (AR(1)) of each row.

    Residuals are winsorised at 3.5 robust standard deviations, so that a bad night
    does not hide the others.  The correlation comes from each run's deviation from
    its local level (the mean of up to LOCAL runs either side within its level, a
    level starting where ``starts`` is True): a shift of level that no split has
    found yet then disturbs only the runs near it, where the lag-1 autocorrelation of
    residuals around whole-window means would take the shift for persistence.  The
    lag-1 correlation of those deviations is mapped back to the AR(1) coefficient
    (closed form for the filter), in [0, MAX_CORRELATION].  The variance is that of
    the residuals around the levels' means, corrected for the means (given phi).
    """
    f, n = a.shape
    rows = np.arange(f)[:, None]
    labels = np.cumsum(starts, axis=1)
    flat = labels + (np.arange(f) * n)[:, None]
    counts = np.bincount(flat.ravel(), minlength=f * n)
    sums = np.bincount(flat.ravel(), weights=a.ravel(), minlength=f * n)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
    e = a - means[flat]
    med = np.median(e, axis=1, keepdims=True)
    mad = 1.4826 * np.median(np.abs(e - med), axis=1, keepdims=True)
    bound = np.where(mad > 0, 3.5 * mad, np.inf)
    e = np.clip(e, med - bound, med + bound)
    ss = (e * e).sum(axis=1)
    # Local deviations, within levels (winsorised values: e + level mean).
    x = e + means[flat]
    s = _prefix(x)
    pos = np.arange(n)
    first = _last_start(starts)
    following = np.where(starts, pos, n)
    end = np.minimum.accumulate(following[:, ::-1], axis=1)[:, ::-1]
    end = np.concatenate([end[:, 1:], np.full((f, 1), n)], axis=1)  # next start after t
    lo = np.maximum(pos - LOCAL, first)
    hi = np.minimum(pos + LOCAL + 1, end)
    count = hi - lo - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        d = x - (s[rows, hi] - s[rows, lo] - x) / count
    ok = count >= 2
    d = np.where(ok, d, 0.0)
    pair = ok[:, 1:] & ok[:, :-1] & (labels[:, 1:] == labels[:, :-1])
    dd = (d * d * ok).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(dd > 0, (d[:, 1:] * d[:, :-1] * pair).sum(axis=1) / dd, 0.0)
    phi = np.clip(np.interp(r, _LOCAL_RHO, _PHI_GRID), 0.0, MAX_CORRELATION)
    # E[sum of squared residuals] = s^2 * sum over levels of (L - G(L)/L)
    used = counts > 0
    lost = np.zeros(f * n)
    lost[used] = _ar_sum_var(counts[used], np.repeat(phi, n)[used]) / counts[used]
    dof = n - lost.reshape(f, n).sum(axis=1)
    s2 = ss / np.maximum(dof, 1e-9)
    return s2, phi


def _split_z(s, f, a0, t, b0, s2, phi):
    """Standardised difference of the means of [a0, t) and [t, b0) under AR(1) noise."""
    m, k = t - a0, b0 - t
    left = (s[f, t] - s[f, a0]) / m
    right = (s[f, b0] - s[f, t]) / k
    var = s2 * (
        _ar_sum_var(k, phi) / k**2
        + _ar_sum_var(m, phi) / m**2
        - 2 * _ar_adjacent_cov(m, k, phi) / (m * k)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return (right - left) / np.sqrt(var)


def _best_splits(p, seg_f, seg_a, seg_b):
    """E-divisive (Matteson & James 2014, alpha = 1): where each segment splits best."""
    n1 = p.shape[1]
    length = seg_b - seg_a
    count = length - 2 * MIN_SEGMENT + 1
    sid = np.repeat(np.arange(len(seg_f)), count)
    first = np.cumsum(count) - count
    tau = seg_a[sid] + MIN_SEGMENT + (np.arange(count.sum()) - first[sid])
    a0, b0 = seg_a[sid], seg_b[sid]
    flat = p.reshape(-1)
    base = seg_f[sid] * n1 * n1

    def block(r0: np.ndarray, r1: np.ndarray, c0: np.ndarray, c1: np.ndarray) -> np.ndarray:
        return (
            flat[base + r1 * n1 + c1]
            - flat[base + r0 * n1 + c1]
            - flat[base + r1 * n1 + c0]
            + flat[base + r0 * n1 + c0]
        )

    m, k = tau - a0, b0 - tau
    energy = (
        2 * block(a0, tau, tau, b0) / (m * k)
        - block(a0, tau, a0, tau) / (m * (m - 1))
        - block(tau, b0, tau, b0) / (k * (k - 1))
    )
    q = m * k / (m + k) * energy
    best = np.maximum.reduceat(q, first)
    hit = np.flatnonzero(q >= best[sid])
    _, at = np.unique(sid[hit], return_index=True)
    return tau[hit[at]]


def _overfit(p, depth=OVERFIT_DEPTH):
    """E-divisive splits `depth` levels deep with no test: levels to measure spread around."""
    f, n = p.shape[0], p.shape[1] - 1
    starts = np.zeros((f, n), dtype=bool)
    seg_f, seg_a, seg_b = np.arange(f), np.zeros(f, dtype=int), np.full(f, n)
    for _ in range(depth):
        keep = seg_b - seg_a >= 2 * MIN_SEGMENT
        seg_f, seg_a, seg_b = seg_f[keep], seg_a[keep], seg_b[keep]
        if not len(seg_f):
            break
        t = _best_splits(p, seg_f, seg_a, seg_b)
        starts[seg_f, t] = True
        seg_f = np.concatenate([seg_f, seg_f])
        seg_a, seg_b = np.concatenate([seg_a, t]), np.concatenate([t, seg_b])
    return starts


def _tested_splits(a, p, s, starts, overfit, seg_f, seg_a, seg_b):
    """Each segment's E-divisive split and its z.

    The spread is measured around levels split more finely than any test would (the
    split under test, those accepted and ``overfit``): other shifts in the window would
    otherwise count as noise and hide this one.  The correlation is measured around
    the accepted levels only: splitting correlated noise makes it look independent.
    """
    t = _best_splits(p, seg_f, seg_a, seg_b)
    fine = starts[seg_f] | overfit[seg_f]
    fine[np.arange(len(seg_f)), t] = True
    s2, phi_fine = _noise(a[seg_f], fine)
    _, phi = _noise(a[seg_f], starts[seg_f])
    # A plateau of a few dozen runs also reads as correlation; the finely split levels
    # see none, and correlated noise keeps some even there.
    phi = np.minimum(phi, phi_fine + CORRELATION_SLACK)
    return t, _split_z(s, seg_f, seg_a, t, seg_b, s2, phi)


def _segment(a, s, weight):
    """Recursive E-divisive at two tiers.

    Returns ``found`` (F x n, True where a level starts: splits beyond
    CRITICAL_REFERENCE, used to pick the level a recent change is compared with),
    ``strong`` (those also beyond CRITICAL_SPLIT, with every enclosing split strong
    too: the changes the history states rest on), each split's z and its critical
    value, and the noise around the strong levels.
    """
    f, n = a.shape
    found = np.zeros((f, n), dtype=bool)
    strong = np.zeros((f, n), dtype=bool)
    split_z = np.full((f, n), np.nan)
    split_crit = np.full((f, n), np.nan)
    if n >= 2 * MIN_SEGMENT:
        p = _pairwise_prefix(a)
        overfit = _overfit(p)
        seg_f, seg_a, seg_b = np.arange(f), np.zeros(f, dtype=int), np.full(f, n)
        under_strong = np.ones(f, dtype=bool)
        while len(seg_f):
            t, z = _tested_splits(a, p, s, found, overfit, seg_f, seg_a, seg_b)
            length = seg_b - seg_a
            split = np.abs(z) >= _blended(
                CRITICAL_REFERENCE, CRITICAL_REFERENCE_CORRELATED, length, weight[seg_f]
            )
            crit = _blended(CRITICAL_SPLIT, CRITICAL_SPLIT_CORRELATED, length, weight[seg_f])
            sure = split & under_strong & (np.abs(z) >= crit)
            if not split.any():
                break
            sf, st = seg_f[split], t[split]
            found[sf, st] = True
            strong[seg_f[sure], t[sure]] = True
            split_z[sf, st] = z[split]
            split_crit[sf, st] = crit[split]
            seg_f = np.concatenate([sf, sf])
            seg_a = np.concatenate([seg_a[split], st])
            seg_b = np.concatenate([st, seg_b[split]])
            under_strong = np.concatenate([sure[split], sure[split]])
            keep = seg_b - seg_a >= 2 * MIN_SEGMENT
            seg_f, seg_a, seg_b = seg_f[keep], seg_a[keep], seg_b[keep]
            under_strong = under_strong[keep]
    s2, phi = _noise(a, strong)
    return found, strong, split_z, split_crit, s2, phi


def _analyse(raw, floor=None):
    """Segmentation and recent scan of equal-length rows (oriented analysis scale).
    ``floor``: the least run-to-run variance of each row (see NOISE_FLOOR)."""
    a = _tame(raw)
    f, n = a.shape
    s = _prefix(a)
    weight = _correlated_weight(a)
    found, strong, split_z, split_crit, s2, phi = _segment(a, s, weight)
    if floor is not None:
        s2 = np.maximum(s2, floor)
    first_of = _last_start(found)
    ref_pos = n - _KS - MIN_REFERENCE
    reference_start = first_of[:, np.clip(ref_pos, 0, n - 1)]
    reference_start[:, ref_pos < 0] = 0
    spread = _robust_spread(a, strong)
    down, up, reference, ks = _recent_scan(raw, a, s, s2, phi, spread, reference_start)
    # A k whose newest runs or reference hold a strong change of the history compares
    # mixed levels: not scanned.
    cum = np.cumsum(strong, axis=1)
    r = reference_start[:, : len(ks)]
    mixed = (
        cum[:, n - ks - 1] - np.take_along_axis(cum, r, axis=1) + cum[:, n - 1 : n] - cum[:, n - ks]
    ) > 0
    return SimpleNamespace(
        a=a,
        s=s,
        weight=weight,
        found=found,
        strong=strong,
        split_z=split_z,
        split_crit=split_crit,
        s2=s2,
        phi=phi,
        first_of=first_of,
        reference_start=r,
        down=down,
        up=up,
        reference=reference,
        ks=ks,
        mixed=mixed,
    )


def _tame(a):
    """Winsorise single bad (or good) nights: each value is kept within 3.5 robust
    standard deviations of the running median of the 5 runs around it (Hampel)."""
    f, n = a.shape
    padded = np.full((f, n + 4), np.nan)
    padded[:, 2:-2] = a
    local = np.nanmedian(np.lib.stride_tricks.sliding_window_view(padded, 5, axis=1), axis=2)
    r = a - local
    bound = 3.5 * 1.4826 * np.median(np.abs(r), axis=1, keepdims=True)
    bound = np.where(bound > 0, bound, np.inf)
    return np.clip(a, local - bound, local + bound)


def _recent_scan(raw, a, s, s2, phi, spread, reference_start):
    """Has the level of the newest k (2..RECENT) runs dropped (risen)?

    The newest k runs (``raw``) are compared with the level before them (``a``, the
    tamed values, from ``reference_start``).  One bad night makes no change: the worst
    (best) of the newest runs is left out when it lies LEAVE_OUT_Z robust spreads
    beyond the level before, or that far beyond the mean of the other newest runs.
    Returns (z, the newest runs' mean, whether one was left out) for a drop, the same
    for a rise, the reference level, each (F, K), and the k scanned.
    """
    f, n = a.shape
    ks = _KS[_KS <= n - MIN_REFERENCE]
    r = reference_start[:, : len(ks)]
    rows = np.arange(f)[:, None]
    tail = np.cumsum(raw[:, ::-1], axis=1)[:, ks - 1]
    worst = np.minimum.accumulate(raw[:, ::-1], axis=1)[:, ks - 1]
    best = np.maximum.accumulate(raw[:, ::-1], axis=1)[:, ks - 1]
    size = n - ks - r
    reference = (s[rows, n - ks] - s[rows, r]) / size
    s2c, phic = s2[:, None], phi[:, None]
    far = LEAVE_OUT_Z * spread[:, None]
    out = []
    for extreme, sign in ((worst, -1), (best, 1)):
        others = (tail - extreme) / (ks - 1)
        with np.errstate(invalid="ignore"):
            drop = (sign * (extreme - reference) >= far) | (
                sign * (extreme - others) >= far * np.sqrt(1 + 1 / (ks - 1))
            )
        m = ks - drop
        mean = (tail - np.where(drop, extreme, 0.0)) / m
        var = s2c * (
            _ar_sum_var(m, phic) / m**2
            + _ar_sum_var(size, phic) / size**2
            - 2 * _ar_adjacent_cov(size, m, phic) / (size * m)
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(((mean - reference) / np.sqrt(var), mean, drop))
    return out[0], out[1], reference, ks


def _robust_spread(a, starts):
    """1.4826 x the median absolute residual around the levels: a bad night's no weight."""
    f, n = a.shape
    labels = np.cumsum(starts, axis=1) + (np.arange(f) * n)[:, None]
    counts = np.bincount(labels.ravel(), minlength=f * n)
    sums = np.bincount(labels.ravel(), weights=a.ravel(), minlength=f * n)
    means = sums / np.maximum(counts, 1)
    return 1.4826 * np.median(np.abs(a - means[labels]), axis=1)


def _last_start(starts):
    """For each position: the first run of the level it belongs to."""
    n = starts.shape[1]
    return np.maximum.accumulate(np.where(starts, np.arange(n), 0), axis=1)


def _relative(before, after, log, sign):
    """Relative change of a level on the figure's own scale.

    before, after: levels on the analysis scale (oriented: higher is better, logarithms
    when ``log``); sign: +1 when higher is better, -1 when lower is.
    """
    before, after = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    d = sign * (after - before)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        linear = np.where(before != 0, d / np.abs(before), np.sign(d) * np.inf)
        return np.where(log, np.expm1(d), linear)


# ---- inputs ------------------------------------------------------------------------------
@dataclass(frozen=True)
class History:
    """One figure's history for ``nightly_many``: values oldest first, one run id each."""

    values: Sequence[float]
    run_ids: Sequence[str]
    better: str
    series: str = ""
    metric: str = ""
    unit: str = ""


@dataclass
class _Prepared:
    history: History
    values: np.ndarray  # finite values of the window, original scale
    index: np.ndarray  # their positions in history.values
    left_out: int  # non-finite values of the window left out
    latest: float
    log: bool
    sign: float


def _check_better(better: str, what: str = "better") -> None:
    if better not in BETTER:
        raise ValueError(
            f"{what}: {better!r}; expected 'higher' or 'lower' (declared with the figure)"
        )


def _as_float(value, what):
    if value is None:
        return math.nan
    if isinstance(value, (bool, np.bool_)) or isinstance(value, (str, bytes)):
        raise ValueError(f"{what}: {value!r} is not a number")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: {value!r} is not a number") from None


def _prepare(h: History) -> _Prepared:
    _check_better(h.better, f"{h.series or 'history'} better")
    values = list(h.values)
    if not values:
        raise ValueError(
            f"values of {h.series or 'a history'}: empty; at least the latest value is needed"
        )
    if len(h.run_ids) != len(values):
        raise ValueError(
            f"run_ids of {h.series or 'a history'}: {len(h.run_ids)} ids for "
            f"{len(values)} values; one run id per value expected"
        )
    first = max(0, len(values) - WINDOW)
    window = np.array(
        [_as_float(v, f"values[{i}]") for i, v in enumerate(values[first:], start=first)]
    )
    finite = np.isfinite(window)
    kept = window[finite]
    log = bool(kept.size) and bool((kept > 0).all())
    return _Prepared(
        h,
        kept,
        np.flatnonzero(finite) + first,
        int((~finite).sum()),
        float(window[-1]),
        log,
        1.0 if h.better == "higher" else -1.0,
    )


# ---- the states a history is in -----------------------------------------------------------
@dataclass
class _State:
    kind: str  # regression, recovered, improvement, suspect, ok
    change: Optional[int] = None  # window position of the first run of the newest level
    since: Optional[int] = None  # first run of the level before it
    before: Optional[float] = None  # analysis-scale levels
    after: Optional[float] = None
    regressed_from: Optional[int] = None  # recovered: first run of the regression
    z: Optional[float] = None
    threshold: Optional[float] = None
    source: str = ""  # "recent" (newest runs scanned) or "history" (segments)
    left_out: bool = False  # recent: one newest run (a bad or good night) left out


def _levels(a, starts_row):
    """[(first, end, mean)] of the levels of one row."""
    edges = [0] + list(np.flatnonzero(starts_row)) + [len(a)]
    return [(b, e, float(a[b:e].mean())) for b, e in zip(edges[:-1], edges[1:])]


def _merge_small(a, starts_row, log, sign, min_effect):
    """Hunter's merge step: drop the change point between levels closer than min_effect."""
    starts_row = starts_row.copy()
    while starts_row.any():
        levels = _levels(a, starts_row)
        effects = [
            abs(float(_relative(levels[i - 1][2], levels[i][2], log, sign)))
            for i in range(1, len(levels))
        ]
        weakest = int(np.argmin(effects))
        if effects[weakest] >= min_effect:
            break
        starts_row[levels[weakest + 1][0]] = False
    return starts_row


def _was_regression(earlier, before, after, p, min_effect):
    """Was the level `before` a regression from `earlier` (by min_effect at least), and
    has `after` regained at least half of the loss?"""
    fell = float(_relative(earlier, before, p.log, p.sign))
    return before < earlier and abs(fell) >= min_effect and after - before >= (earlier - before) / 2


def _scan_block(prepared, min_effect):
    """The block's arrays: the analysis, the recent scan's significant changes in each
    direction and the latest run alone against its level (the suspect test)."""
    raw = np.array([p.sign * (np.log(p.values) if p.log else p.values) for p in prepared])
    logs = np.array([p.log for p in prepared])[:, None]
    # Identical values have no spread: a change would be infinitely many of it.
    floor = np.where(
        logs[:, 0], NOISE_FLOOR**2, (NOISE_FLOOR * np.median(np.abs(raw), axis=1)) ** 2
    )
    x = _analyse(raw, np.maximum(floor, np.finfo(float).tiny))
    s, s2, reference, ks = x.s, x.s2, x.reference, x.ks
    f, n = x.a.shape
    (z_down, down, drop_down), (z_up, up, drop_up) = x.down, x.up
    w = x.weight[:, None]
    crit = np.where(
        ks <= RECENT_EARLY,
        _blended(CRITICAL_RECENT, CRITICAL_RECENT_CORRELATED, n, w),
        _blended(CRITICAL_LATER, CRITICAL_LATER_CORRELATED, n, w),
    )
    signs = np.array([p.sign for p in prepared])[:, None]
    big_down = np.abs(_relative(reference, down, logs, signs)) >= min_effect
    big_up = np.abs(_relative(reference, up, logs, signs)) >= min_effect
    sig_down = (z_down <= -crit) & (down < reference) & big_down & ~x.mixed
    sig_up = (z_up >= crit) & (up > reference) & big_up & ~x.mixed
    # The latest run alone against the level it belongs to.
    rows = np.arange(f)
    r1 = x.first_of[:, n - 2]
    level1 = (s[rows, n - 1] - s[rows, r1]) / (n - 1 - r1)
    with np.errstate(invalid="ignore", divide="ignore"):
        z1 = (raw[:, -1] - level1) / np.sqrt(s2)
    big1 = np.abs(_relative(level1, raw[:, -1], logs[:, 0], signs[:, 0])) >= min_effect
    suspect = (z1 <= -SUSPECT_Z) & (raw[:, -1] < level1) & big1
    return SimpleNamespace(
        raw=raw,
        x=x,
        n=n,
        crit=crit,
        directions=(
            ("down", sig_down, z_down, down, drop_down),
            ("up", sig_up, z_up, up, drop_up),
        ),
        sig_down=sig_down,
        sig_up=sig_up,
        level1=level1,
        z1=z1,
        suspect=suspect,
    )


def _recent_state(i, block):
    """The recent scan's strongest significant change of history i, or None."""
    x, raw, n, crit = block.x, block.raw, block.n, block.crit
    reference, ks = x.reference, x.ks
    state = None
    for direction, sig_all, z_all, level_all, drop_all in block.directions:
        sig, z, level, drop = sig_all[i], z_all[i], level_all[i], drop_all[i]
        if not sig.any():
            continue
        j = int(np.argmax(np.where(sig, np.abs(z), -np.inf)))
        k = int(ks[j])
        # The scan's window may reach back over a run of the old level: the change
        # starts at the first of the newest k runs past the midpoint of the levels.
        newest = raw[i, n - k :]
        mid = (reference[i, j] + level[j]) / 2
        past = newest < mid if direction == "down" else newest > mid
        first = int(np.argmax(past)) if past.any() else 0
        after = float(newest[first:].mean()) if first else float(level[j])
        candidate = _State(
            "regression" if direction == "down" else "improvement",
            change=n - k + first,
            since=int(x.reference_start[i, j]),
            before=float(reference[i, j]),
            after=after,
            z=float(z[j]),
            threshold=float(crit[i, j]),
            source="recent",
            left_out=bool(drop[j]),
        )
        if state is None or abs(candidate.z) > abs(state.z):
            state = candidate
    return state


def _history_state(i, p, block, history, min_effect):
    """The last change of level of history i's segmentation (older than the recent
    scan's runs), or None when it has a single level."""
    x = block.x
    if len(history) < 2:
        return None
    (b0, _, before), (b1, _, after) = history[-2], history[-1]
    found = np.isfinite(x.split_z[i, b1])
    kind = "regression" if after < before else "improvement"
    if (
        kind == "improvement"
        and len(history) >= 3
        and _was_regression(history[-3][2], before, after, p, min_effect)
    ):
        kind = "recovered"
    return _State(
        kind,
        change=b1,
        since=b0,
        before=before,
        after=after,
        z=float(x.split_z[i, b1]) if found else None,
        threshold=float(x.split_crit[i, b1]) if found else None,
        source="history",
        regressed_from=b0 if kind == "recovered" else None,
    )


def _state_of(i, p, block, min_effect):
    """The state of history i of the block."""
    x, n, suspect = block.x, block.n, block.suspect
    if not (block.sig_down[i].any() or block.sig_up[i].any() or x.found[i].any() or suspect[i]):
        return _State("ok")
    row = x.a[i]
    levels = _levels(row, _merge_small(row, x.found[i], p.log, p.sign, min_effect))
    # Changes in the newest RECENT runs are the recent scan's to judge.
    older = x.strong[i].copy()
    older[n - RECENT :] = False
    history = _levels(row, _merge_small(row, older, p.log, p.sign, min_effect))
    state = _recent_state(i, block)
    if state is not None and state.kind == "improvement":
        # A recovery: the level before it was a regression from an earlier level,
        # and the newest runs regained at least half of the loss.
        before_it = [lv for lv in levels if lv[1] <= state.since]
        if before_it and _was_regression(
            before_it[-1][2], state.before, state.after, p, min_effect
        ):
            state.kind, state.regressed_from = "recovered", state.since
    if state is None:
        state = _history_state(i, p, block, history, min_effect)
    if state is None:
        state = _State("suspect" if suspect[i] else "ok")
    # A crash of the latest night is suspect whatever the level before it was (an
    # improvement or a recovery there must not hide it).
    if state.kind == "suspect" or (suspect[i] and state.kind in ("ok", "improvement", "recovered")):
        state = _State(
            "suspect",
            before=float(block.level1[i]),
            after=float(block.raw[i, -1]),
            z=float(block.z1[i]),
            threshold=SUSPECT_Z,
        )
    return state


def _judge_block(prepared, min_effect):
    """States of histories with the same number of runs in their window (>= MIN_HISTORY)."""
    block = _scan_block(prepared, min_effect)
    states, noise = [], []
    for i, p in enumerate(prepared):
        noise.append((float(np.sqrt(block.x.s2[i])), float(block.x.phi[i])))
        states.append(_state_of(i, p, block, min_effect))
    return states, noise


def _judge(prepared, min_effect):
    """States (or None when the window is too short) and noise of prepared histories."""
    states = [None] * len(prepared)
    noise = [(None, None)] * len(prepared)
    by_length = {}
    for i, p in enumerate(prepared):
        if np.isfinite(p.latest) and len(p.values) >= MIN_HISTORY:
            by_length.setdefault(len(p.values), []).append(i)
    for idx in by_length.values():
        for start in range(0, len(idx), CHUNK):
            part = idx[start : start + CHUNK]
            got, got_noise = _judge_block([prepared[i] for i in part], min_effect)
            for i, state, nz in zip(part, got, got_noise):
                states[i], noise[i] = state, nz
    return states, noise


# ---- verdicts ----------------------------------------------------------------------------
@dataclass
class NightlyVerdict:
    series: str
    metric: str
    unit: str
    better: str
    verdict: str  # a key of NIGHTLY_LABELS
    notify: bool  # regression or recovered: news for the admin
    latest: Optional[float]
    latest_run: str
    history: int  # runs with a value in the window
    scale: str = ""  # "log" (every value positive) or "linear"
    change_run: Optional[str] = None  # first run of the newest level
    change_index: Optional[int] = None  # its position in the values given
    runs_since_change: Optional[int] = None
    reference_run: Optional[str] = None  # first run of the level compared with
    median_before: Optional[float] = None
    median_after: Optional[float] = None
    relative_change: Optional[float] = None  # of the level, e.g. -0.18 = 18% lower
    change_low: Optional[float] = None  # its approximate 95% interval (from z)
    change_high: Optional[float] = None
    statistic: Optional[float] = None  # standardised change (z)
    threshold: Optional[float] = None  # |z| needed
    noise: Optional[float] = None  # run-to-run spread (log scale: about the CV)
    correlation: Optional[float] = None  # estimated night-to-night correlation (AR(1))
    detail: str = ""


def nightly(
    values: Sequence[float],
    run_ids: Sequence[str],
    better: str,
    *,
    series: str = "",
    metric: str = "",
    unit: str = "",
    min_effect: float = MIN_EFFECT,
) -> NightlyVerdict:
    """Verdict for the latest value of one figure's history (oldest first).

    better: "higher" or "lower", as the figure declares.  See ``nightly_many``.
    """
    return nightly_many(
        [History(values, run_ids, better, series, metric, unit)], min_effect=min_effect
    )[0]


def nightly_many(
    histories: Iterable[History], min_effect: float = MIN_EFFECT
) -> list[NightlyVerdict]:
    """Verdicts for many figures at once (``History`` items), in their order.

    Histories with the same number of runs are judged together, vectorised.  Raises
    ValueError for a history that is not one: no values, run ids not one per value,
    ``better`` not "higher" or "lower", a value that is not a number.
    """
    histories = list(histories)
    prepared = [_prepare(h) for h in histories]
    today, noise = _judge(prepared, min_effect)
    # The nights before, recomputed from the history alone: the night before for every
    # figure with a verdict (a regression no longer seen is a recovery), LOOK_BACK
    # nights for a change that may already have been reported.
    news = {
        i
        for i, s in enumerate(today)
        if s is not None and s.kind in ("regression", "recovered", "improvement")
    }
    earlier: dict[int, list[tuple[_State | None, _Prepared]]] = {
        i: [] for i, s in enumerate(today) if s is not None
    }
    for back in range(1, LOOK_BACK + 1):
        usable = [i for i in (earlier if back == 1 else news) if len(histories[i].values) > back]
        prior = [
            _prepare(
                History(
                    histories[i].values[:-back],
                    histories[i].run_ids[:-back],
                    histories[i].better,
                    histories[i].series,
                )
            )
            for i in usable
        ]
        states, _ = _judge(prior, min_effect)
        for i, p, state in zip(usable, prior, states):
            earlier[i].append((state, p))
    return [
        _verdict(p, today[i], noise[i], earlier.get(i, []), min_effect)
        for i, p in enumerate(prepared)
    ]


def _fmt(x):
    return units.number(x)


def _pct(x: float | None) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:+.1%}"


def _interval(relative, z, log):
    """An approximate 95% interval of a relative change whose standardised size is z:
    the change's standard error is |change / z| (on the log scale when ``log``)."""
    if (
        relative is None
        or z is None
        or not z
        or not math.isfinite(relative)
        or not math.isfinite(z)
        or relative <= -1
        and log
    ):
        return None, None
    d = math.log1p(relative) if log else relative
    half = 1.959964 * abs(d / z)
    low, high = d - half, d + half
    return (math.expm1(low), math.expm1(high)) if log else (low, high)


def _oriented(p, value):
    """A value on the analysis scale (higher is better, logarithm when ``p.log``)."""
    return p.sign * (math.log(value) if p.log else value)


def _suspect_again(p, last, last_p, min_effect):
    """z of the latest run against the level the night before called it suspect from,
    when the latest run is as far below that level: a second bad night is never 'ok'
    (without a spread of its own, as in identical histories, the new level would
    otherwise pass for the usual one).  None otherwise."""
    if last is None or last.kind != "suspect" or last_p.log != p.log or not last.z:
        return None
    previous = _oriented(last_p, last_p.latest)
    if previous == last.before:
        return None
    z = (_oriented(p, p.latest) - last.before) * last.z / (previous - last.before)
    big = abs(float(_relative(last.before, _oriented(p, p.latest), p.log, p.sign))) >= min_effect
    return float(z) if z <= -SUSPECT_Z and big else None


def _known(p, state, earlier):
    """Did one of the earlier nights' states (each on its own window) already report
    this change: the same kind, its change point within SAME_CHANGE runs?"""
    for other, other_p in earlier:
        if (
            other is not None
            and other.kind == state.kind
            and abs(int(other_p.index[other.change]) - int(p.index[state.change])) <= SAME_CHANGE
        ):
            return True
    return False


def _verdict(p, state, noise, earlier, min_effect):
    h = p.history
    run_ids = list(h.run_ids)
    v = NightlyVerdict(
        h.series,
        h.metric,
        h.unit,
        h.better,
        "ok",
        False,
        p.latest if math.isfinite(p.latest) else None,
        str(run_ids[-1]),
        len(p.values),
        "log" if p.log else "linear",
    )
    v.noise, v.correlation = noise
    left_out = (
        f" ({p.left_out} value(s) in the window are not numbers and were left out)"
        if p.left_out
        else ""
    )
    if not math.isfinite(p.latest):
        v.verdict = "invalid"
        v.detail = f"the latest value ({p.latest}) of run {run_ids[-1]} is not a measurement"
        return v
    if state is None:
        v.verdict = "insufficient-history"
        v.detail = f"{len(p.values)} run(s) with a value, {MIN_HISTORY} needed{left_out}"
        return v
    v.statistic, v.threshold = state.z, state.threshold
    if state.kind == "suspect":
        return _suspect_verdict(v, p, state, left_out)
    if state.kind == "ok":
        return _ok_verdict(v, p, earlier, min_effect, left_out)
    return _change_verdict(v, p, state, earlier, left_out)


def _unit_words(p):
    """' unit' after a figure, or nothing for a figure without a unit."""
    return f" {p.history.unit}" if p.history.unit else ""


def _suspect_verdict(v, p, state, left_out):
    """v as the suspect verdict of a latest run alone off its level."""
    unit = _unit_words(p)
    v.verdict = "suspect"
    v.relative_change = float(_relative(state.before, state.after, p.log, p.sign))
    v.change_low, v.change_high = _interval(v.relative_change, state.z, p.log)
    level = p.sign * state.before
    v.median_before = float(np.exp(level)) if p.log else level
    v.detail = (
        f"the latest run is {_pct(v.relative_change)} from the level "
        f"{_fmt(v.median_before)}{unit} ({abs(state.z):.1f} times the run-to-run "
        f"spread): one run, not yet a confirmed change{left_out}"
    )
    return v


def _ok_verdict(v, p, earlier, min_effect, left_out):
    """v for a window without a change of level, read against last night's state: a
    second suspect run, or the end of last night's regression."""
    unit = _unit_words(p)
    v.detail = f"no change of level in the last {len(p.values)} runs{left_out}"
    last, last_p = earlier[0] if earlier else (None, None)
    again = _suspect_again(p, last, last_p, min_effect)
    if again is not None:
        v.verdict = "suspect"
        v.statistic, v.threshold = again, SUSPECT_Z
        v.median_before = float(np.exp(p.sign * last.before)) if p.log else p.sign * last.before
        v.relative_change = float(_relative(last.before, _oriented(p, p.latest), p.log, p.sign))
        v.change_low, v.change_high = _interval(v.relative_change, again, p.log)
        v.detail = (
            f"the latest run, like the one before it, is "
            f"{_pct(v.relative_change)} from the level "
            f"{_fmt(v.median_before)}{unit} ({abs(again):.1f} times the "
            f"run-to-run spread): not yet a confirmed change{left_out}"
        )
        return v
    if last is not None and last.kind == "regression" and last_p.log == p.log:
        # A regression last night, none tonight: recovered if the newest runs
        # regained half of its loss, else only no longer confirmed.
        start = str(last_p.history.run_ids[int(last_p.index[last.change])])
        newest = p.values[-LOOK_BACK:]
        level = p.sign * float(np.mean(np.log(newest) if p.log else newest))
        if level - last.after >= (last.before - last.after) / 2:
            v.verdict, v.notify = "recovered", True
            v.detail = (
                f"recovered: the regression since run {start} is no longer "
                f"seen, the newest {len(newest)} runs regained at least half "
                f"of its loss; {v.detail}"
            )
        else:
            v.detail = f"the regression since run {start} is no longer confirmed; " + v.detail
    return v


def _change_verdict(v, p, state, earlier, left_out):
    """v for a change of level (a regression, a recovery or an improvement), news only
    the first night it is seen."""
    run_ids = list(p.history.run_ids)
    unit = _unit_words(p)
    change, since = state.change, state.since
    v.change_index = int(p.index[change])
    v.change_run = str(run_ids[v.change_index])
    v.reference_run = str(run_ids[int(p.index[since])])
    v.runs_since_change = len(p.values) - change
    v.median_before = float(np.median(p.values[since:change]))
    v.median_after = float(np.median(p.values[change:]))
    v.relative_change = float(_relative(state.before, state.after, p.log, p.sign))
    v.change_low, v.change_high = _interval(v.relative_change, state.z, p.log)
    trimmed = (
        (
            "; its "
            + ("worst" if state.kind == "regression" else "best")
            + " newest run left out, being a night apart"
        )
        if state.left_out
        else ""
    )
    how = (
        f"median {_fmt(v.median_before)} -> {_fmt(v.median_after)}{unit}, level "
        f"{_pct(v.relative_change)}"
        + (
            f", z {state.z:+.1f} beyond {state.threshold:.2f}{trimmed}"
            if state.z is not None
            else ""
        )
        + ")"
    )
    runs = f"{v.runs_since_change} run(s)"
    if state.kind == "regression":
        if _known(p, state, earlier):
            v.verdict = "ongoing-regression"
            v.detail = (
                f"ongoing regression since run {v.change_run} ({runs}; already "
                f"reported): {how}{left_out}"
            )
        else:
            v.verdict, v.notify = "regression", True
            v.detail = (
                f"regression since run {v.change_run} ({runs}) against the level "
                f"since run {v.reference_run} ({how}{left_out}"
            )
        return v
    if state.kind == "recovered":
        start = str(run_ids[int(p.index[state.regressed_from])])
        # News on the night the regression ends: the night before was still one.
        if not earlier or earlier[0][0] is None or earlier[0][0].kind != "regression":
            v.detail = (
                f"recovered since run {v.change_run} from the regression of run "
                f"{start} ({how}{left_out}"
            )
        else:
            v.verdict, v.notify = "recovered", True
            v.detail = (
                f"recovered: since run {v.change_run} ({runs}) the level regained "
                f"at least half of the regression of run {start} ({how}{left_out}"
            )
        return v
    # improvement
    if _known(p, state, earlier):
        v.detail = f"improved since run {v.change_run} ({how}{left_out}"
    else:
        v.verdict = "improvement"
        v.detail = f"improvement since run {v.change_run} ({runs}; {how}{left_out}"
    return v


# ---- acceptance ---------------------------------------------------------------------------
@dataclass
class AcceptanceVerdict:
    series: str
    metric: str
    unit: str
    better: str
    verdict: str  # better, worse, no significant change, insufficient,
    # invalid (too short to trust: set by the caller)
    runs_before: int
    runs_after: int
    repetitions_before: int = 0
    repetitions_after: int = 0
    scale: str = ""  # "log" (every value positive) or "linear"
    median_before: Optional[float] = None  # median of the runs' medians
    median_after: Optional[float] = None
    relative_change: Optional[float] = None  # of the mean level (geometric on log scale)
    absolute_change: Optional[float] = None  # of the medians, in the figure's unit
    ci_low: Optional[float] = None  # 95% CI of relative_change
    ci_high: Optional[float] = None
    p_value: Optional[float] = None  # Welch's t-test on the runs' medians
    p_adjusted: Optional[float] = None  # Benjamini-Hochberg, over the figures judged together
    judged_together: int = 1  # how many figures that adjustment covers
    effect_size: Optional[float] = None  # Hedges' g: change / run-to-run spread
    mean_before: Optional[float] = None  # the runs' means the test compares (log
    mean_after: Optional[float] = None  # scale: geometric), whose change is shown
    run_spread: Optional[float] = None  # pooled run-to-run SD (log scale: ~CV)
    resolvable_change: Optional[float] = None  # smallest change these runs resolve
    runs_needed_before: int = 0
    runs_needed_after: int = 0
    detail: str = ""


def acceptance(
    before_runs: Iterable[Sequence[float]],
    after_runs: Iterable[Sequence[float]],
    better: str,
    *,
    series: str = "",
    metric: str = "",
    unit: str = "",
    alpha: float = ACCEPTANCE_ALPHA,
    min_effect: float = ACCEPTANCE_MIN_EFFECT,
    p_adjusted: float | None = None,
    judged_together: int = 1,
) -> AcceptanceVerdict:
    """Before/after verdict of one figure from its runs.

    before_runs, after_runs: one list of repetitions per run (a run without
    repetitions is a list of one value).  Each run counts once, summarised by its
    median; repetitions never count as independent samples.  Better or worse needs
    both p < alpha (p_adjusted in its place when given: see acceptance_together) and a
    relative change of at least min_effect (the practical minimum; a share in % must
    also move ACCEPTANCE_MIN_POINTS); a figure whose median before is 0 has no relative
    change and is decided on significance alone.
    """
    _check_better(better)
    before_runs, after_runs = list(before_runs), list(after_runs)
    sides = {}
    for name, runs in (("before_runs", before_runs), ("after_runs", after_runs)):
        medians, count, invalid = _run_medians(name, runs)
        if invalid:
            return AcceptanceVerdict(
                series,
                metric,
                unit,
                better,
                "invalid",
                len(before_runs),
                len(after_runs),
                detail=invalid,
            )
        sides[name] = (medians, count)
    (b, nb_reps), (a, na_reps) = sides["before_runs"], sides["after_runs"]
    v = AcceptanceVerdict(
        series, metric, unit, better, "insufficient", len(b), len(a), nb_reps, na_reps
    )
    unit_s = f" {unit}" if unit else ""
    if len(b):
        v.median_before = float(np.median(b))
    if len(a):
        v.median_after = float(np.median(a))
    if len(b) < MIN_RUNS or len(a) < MIN_RUNS:
        return _too_few_runs(v, b, a)
    log = bool((b > 0).all() and (a > 0).all())
    v.scale = "log" if log else "linear"
    xb, xa = (np.log(b), np.log(a)) if log else (b, a)
    assert v.median_before is not None and v.median_after is not None  # MIN_RUNS a side
    v.absolute_change = v.median_after - v.median_before
    diff = float(xa.mean() - xb.mean())
    vb, va = xb.var(ddof=1), xa.var(ddof=1)
    pooled = math.sqrt(((len(b) - 1) * vb + (len(a) - 1) * va) / (len(b) + len(a) - 2))
    v.run_spread = pooled
    base = float(xb.mean())
    v.mean_before = float(np.exp(base)) if log else base
    v.mean_after = float(np.exp(xa.mean())) if log else float(xa.mean())

    def relative(x: float) -> float | None:
        if log:
            return math.expm1(x)
        return x / abs(base) if base else None

    v.relative_change = relative(diff)
    if vb == 0 and va == 0:
        # No run-to-run spread at all: any difference is certain, none is none.
        v.p_value = 1.0 if diff == 0 else 0.0
        low = high = diff
    else:
        test = _stats().ttest_ind(xa, xb, equal_var=False)
        v.p_value = float(test.pvalue)
        ci = test.confidence_interval(1 - alpha)
        low, high = float(ci.low), float(ci.high)
        j = 1 - 3 / (4 * (len(a) + len(b)) - 9)  # Hedges' small-sample correction
        v.effect_size = diff / pooled * j if pooled > 0 else None
    v.ci_low, v.ci_high = relative(low), relative(high)
    if p_adjusted is not None:
        v.p_adjusted, v.judged_together = float(p_adjusted), judged_together
    significant = (v.p_value if v.p_adjusted is None else v.p_adjusted) < alpha
    too_small = _too_small_words(v, min_effect) if significant else ""
    direction = 1 if better == "higher" else -1
    if significant and not too_small:
        v.verdict = "better" if diff * direction > 0 else "worse"
    else:
        v.verdict = "no significant change"
    v.detail = _comparison_words(v, b, a, log, low, high, unit_s, alpha) + too_small
    if pooled > 0:
        _resolution(v, b, a, log, base, pooled, relative, significant, alpha, min_effect)
    return v


def _too_small_words(v: AcceptanceVerdict, min_effect: float) -> str:
    """Why a significant change is still no change an admin acts on ("" when it is one):
    under min_effect, or a share in % that moved less than ACCEPTANCE_MIN_POINTS."""
    assert v.mean_before is not None and v.mean_after is not None
    if v.unit == "%" and abs(v.mean_after - v.mean_before) < ACCEPTANCE_MIN_POINTS:
        return (
            f"; significant, but smaller than the {ACCEPTANCE_MIN_POINTS:g} percentage point "
            "a share must move to count as a change"
        )
    if v.relative_change is not None and abs(v.relative_change) < min_effect:
        return (
            f"; significant, but smaller than the {min_effect:.0%} an acceptance counts as a change"
        )
    return ""


def acceptance_together(
    figures: Sequence[dict[str, Any]], alpha: float = ACCEPTANCE_ALPHA
) -> list[AcceptanceVerdict]:
    """Verdicts of the figures of one acceptance, judged together.

    figures: the keyword arguments of acceptance() for each figure.  An acceptance
    judges tens to thousands of figures at once; at alpha each, an unchanged file system
    would get a false "better" or "worse" on about alpha of them.  Benjamini-Hochberg
    (SciPy's false_discovery_control) adjusts every p-value for the figures judged
    together: with nothing changed, any false verdict at all has a chance of at most
    alpha, and among the figures called changed at most a share alpha is expected to be
    false.  A figure alone is judged on its own p.
    """
    first = [acceptance(**f, alpha=alpha) for f in figures]
    tested = [i for i, v in enumerate(first) if v.p_value is not None]
    if len(tested) < 2:
        return first
    adjusted = _stats().false_discovery_control([first[i].p_value for i in tested], method="bh")
    verdicts = list(first)
    for i, q in zip(tested, adjusted):
        verdicts[i] = acceptance(
            **figures[i], alpha=alpha, p_adjusted=float(q), judged_together=len(tested)
        )
    return verdicts


def _comparison_words(v, b, a, log, low, high, unit_s, alpha):
    """The detail of a comparison: the means, their change, its interval, Welch's p."""
    change = (
        _pct(v.relative_change)
        if v.relative_change is not None
        else f"{v.absolute_change:+.4g}{unit_s} from a median of 0"
    )
    interval = (
        f"{_pct(v.ci_low)} to {_pct(v.ci_high)}"
        if v.ci_low is not None
        else f"{low:+.4g} to {high:+.4g}{unit_s}"
    )
    # The change shown is the one of the means shown beside it (the test's own).
    average = "geometric mean" if log else "mean"
    return (
        f"{average} of {len(b)} run(s) {_fmt(v.mean_before)} -> of {len(a)} "
        f"run(s) {_fmt(v.mean_after)}{unit_s} ({change}, {1 - alpha:.0%} CI "
        f"{interval}, Welch p={v.p_value:.3g}"
        + (
            f", {v.p_adjusted:.3g} adjusted for the {v.judged_together} figures judged together"
            if v.p_adjusted is not None and v.judged_together > 1
            else ""
        )
        + ")"
    )


def _run_medians(name, runs):
    """(the runs' medians, the number of repetitions, None), or the one-line detail of
    the first run holding a value that is not a measurement in place of None; a run
    that is not a list of numbers is a ValueError."""
    medians, count = [], 0
    for i, run in enumerate(runs):
        if isinstance(run, (str, bytes)) or not hasattr(run, "__len__"):
            raise ValueError(f"{name}[{i}]: {run!r}; expected a list of the run's repetitions")
        reps = [_as_float(x, f"{name}[{i}][{j}]") for j, x in enumerate(run)]
        if not reps:
            raise ValueError(f"{name}[{i}]: a run without values")
        bad = [x for x in reps if not math.isfinite(x)]
        if bad:
            return None, count, f"{name}[{i}] holds {bad[0]}: not a measurement"
        medians.append(float(np.median(reps)))
        count += len(reps)
    return np.array(medians), count, None


def _too_few_runs(v, b, a):
    """v as the insufficient verdict of fewer than MIN_RUNS runs on a side."""
    v.runs_needed_before = max(0, MIN_RUNS - len(b))
    v.runs_needed_after = max(0, MIN_RUNS - len(a))
    v.detail = (
        f"{len(b)} run(s) before and {len(a)} after; {MIN_RUNS} runs a side are "
        "needed to measure the run-to-run spread (repetitions within a run do "
        f"not count): {v.runs_needed_before} more run(s) before, "
        f"{v.runs_needed_after} more run(s) after"
    )
    return v


def _resolution(v, b, a, log, base, pooled, relative, significant, alpha, min_effect):
    """The smallest change these runs resolve and, short of significance, the runs a
    side that would resolve min_effect with the power asked, at this spread."""
    step = math.log1p(min_effect) if log else min_effect * abs(base)
    za = _stats().norm.isf(alpha / 2) + _stats().norm.isf(1 - ACCEPTANCE_POWER)
    df = len(a) + len(b) - 2
    t = _stats().t.isf(alpha / 2, df) + _stats().t.isf(1 - ACCEPTANCE_POWER, df)
    resolvable = t * pooled * math.sqrt(1 / len(a) + 1 / len(b))
    v.resolvable_change = relative(resolvable) if log or base else None
    if step > 0 and not significant:
        need = math.ceil(2 * (za * pooled / step) ** 2) + 1
        v.runs_needed_before = max(0, need - len(b))
        v.runs_needed_after = max(0, need - len(a))
        v.detail += (
            f"; these runs resolve changes of about "
            f"{_pct(v.resolvable_change).lstrip('+')} and more: "
            f"{v.runs_needed_before} more run(s) before and "
            f"{v.runs_needed_after} after would resolve {min_effect:.0%}"
        )


def as_dict(verdict: "DataclassInstance") -> dict[str, Any]:
    """A verdict as plain JSON-able Python types (non-finite numbers become None)."""

    def plain(x: Any) -> Any:
        if isinstance(x, np.generic):
            x = x.item()
        if isinstance(x, float) and not math.isfinite(x):
            return None
        return x

    return {k: plain(x) for k, x in asdict(verdict).items()}


# ---- calibration ------------------------------------------------------------------------
def _ar1(rng, count, n, phi):
    x = rng.standard_normal((count, n))
    if phi:
        c = math.sqrt(1 - phi * phi)
        for t in range(1, n):
            x[:, t] = phi * x[:, t - 1] + c * x[:, t]
    return x


def _calibrate_splits(rng, replicates, lengths, correlations):
    """CRITICAL_SPLIT and CRITICAL_REFERENCE (see calibrate): the top split's |z| on
    pure noise, its (1 - ALPHA_SPLIT) and (1 - ALPHA_REFERENCE) quantiles, the largest
    over the correlations."""
    split, reference = [], []
    for n in lengths:
        worst = np.zeros(2)
        for phi in correlations:
            z: list[np.ndarray] | np.ndarray
            z = []
            for start in range(0, replicates, CHUNK):
                xb = _tame(_ar1(rng, min(CHUNK, replicates - start), n, phi))
                f = len(xb)
                p = _pairwise_prefix(xb)
                z.append(
                    np.abs(
                        _tested_splits(
                            xb,
                            p,
                            _prefix(xb),
                            np.zeros(xb.shape, dtype=bool),
                            _overfit(p),
                            np.arange(f),
                            np.zeros(f, dtype=int),
                            np.full(f, n),
                        )[1]
                    )
                )
            z = np.nan_to_num(np.concatenate(z))
            worst = np.maximum(worst, np.quantile(z, [1 - ALPHA_SPLIT, 1 - ALPHA_REFERENCE]))
        split.append(round(float(worst[0]), 2))
        reference.append(round(float(worst[1]), 2))
    return split, reference


def calibrate(
    replicates: int = 40000,
    seed: int = 2026,
    lengths: Sequence[int] = CALIBRATION_LENGTHS,
    correlations: Sequence[float] = (0.0, 0.5),
) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """Critical values: (CRITICAL_RECENT, CRITICAL_LATER, CRITICAL_SPLIT,
    CRITICAL_REFERENCE); with correlations (0.0, 0.5, 0.8), their _CORRELATED tables.

    For each window length, series of pure noise (independent, and AR(1) with each
    correlation given) go through the same estimates and statistics as real
    histories; a critical value is the (1 - alpha) quantile of its statistic, the
    largest over the correlations.  First the top split of the segmentation
    (ALPHA_SPLIT and ALPHA_REFERENCE, two-sided), then, with those in place, the
    recent-change scan (one-sided: ALPHA_RECENT for k <= RECENT_EARLY, ALPHA_LATER
    beyond).
    """
    global CRITICAL_SPLIT, CRITICAL_REFERENCE, CALIBRATION_LENGTHS
    global CRITICAL_SPLIT_CORRELATED, CRITICAL_REFERENCE_CORRELATED
    rng = np.random.default_rng(seed)
    split, reference = _calibrate_splits(rng, replicates, lengths, correlations)
    saved = (
        CRITICAL_SPLIT,
        CRITICAL_REFERENCE,
        CRITICAL_SPLIT_CORRELATED,
        CRITICAL_REFERENCE_CORRELATED,
        CALIBRATION_LENGTHS,
    )
    # Both sets alike while the recent scan is calibrated: the blend then changes nothing.
    CRITICAL_SPLIT = CRITICAL_SPLIT_CORRELATED = tuple(split)
    CRITICAL_REFERENCE = CRITICAL_REFERENCE_CORRELATED = tuple(reference)
    CALIBRATION_LENGTHS = tuple(lengths)
    try:
        early, later = [], []
        for n in lengths:
            worst = np.full(2, -np.inf)
            for phi in correlations:
                lowest: list[np.ndarray] | np.ndarray
                lowest = []
                for start in range(0, replicates, CHUNK):
                    x = _analyse(_ar1(rng, min(CHUNK, replicates - start), n, phi))
                    z = np.where(x.mixed, np.inf, x.down[0])
                    z = np.where(np.isnan(z), np.inf, z)
                    first = x.ks <= RECENT_EARLY
                    lowest.append(
                        np.stack(
                            [
                                z[:, first].min(axis=1) if first.any() else np.full(len(z), np.inf),
                                z[:, ~first].min(axis=1)
                                if (~first).any()
                                else np.full(len(z), np.inf),
                            ],
                            axis=1,
                        )
                    )
                lowest = np.clip(np.concatenate(lowest), -99.0, 99.0)
                assert isinstance(lowest, np.ndarray)  # numpy's stubs: np.clip -> Any
                worst = np.maximum(
                    worst,
                    [
                        -np.quantile(lowest[:, 0], ALPHA_RECENT),
                        -np.quantile(lowest[:, 1], ALPHA_LATER),
                    ],
                )
            # No k beyond RECENT_EARLY fits a short window: nothing to pass.
            early.append(round(float(worst[0]), 2) if worst[0] > 0 else 99.0)
            later.append(round(float(worst[1]), 2) if worst[1] > 0 else 99.0)
    finally:
        (
            CRITICAL_SPLIT,
            CRITICAL_REFERENCE,
            CRITICAL_SPLIT_CORRELATED,
            CRITICAL_REFERENCE_CORRELATED,
            CALIBRATION_LENGTHS,
        ) = saved
    return tuple(early), tuple(later), tuple(split), tuple(reference)
