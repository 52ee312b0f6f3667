"""Regression verdicts: nightly (history) and acceptance (before/after).

Nightly: for each figure of the latest run, its history (the same check, parameters,
partition, environment and metric) is searched for one change point with E-divisive
(Matteson & James 2014: the split that maximises the energy statistic).  Its
significance comes from SciPy's permutation test, which re-pairs values with times at
random: under "no change" the values are exchangeable, so a change is called with
probability at most ``alpha`` (default 1%) per figure per night.  That is the documented
false-alarm rate.  A *regression* is a significant change whose later segment holds the
latest run and whose median is worse than before by at least ``min_effect`` (5%); a
single bad night can only be *suspect* (a robust outlier test), since one point cannot
be told from noise until it persists.

Acceptance: the samples of each figure before and after a change (repetitions within
runs where the check records them, else one per run) are compared with the
Mann-Whitney U test (two-sided, alpha 5%) and a bootstrap 95% confidence interval of
the relative change of the median; a figure is *better* or *worse* only when both
agree, and the effect size (rank-biserial correlation) is reported.  With fewer than
``min_samples`` on a side there is no verdict, only the number of runs still needed.
"""

import hashlib
import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

NIGHTLY_ALPHA = 0.01
ACCEPTANCE_ALPHA = 0.05
MIN_EFFECT = 0.05
MIN_HISTORY = 8
MIN_SEGMENT = 2
MAX_HISTORY = 60
PERMUTATIONS = 999
OUTLIER_Z = float(stats.norm.isf(0.001))   # one-sided 0.1% under normal noise
MIN_SAMPLES = 4   # two-sided Mann-Whitney cannot reach p < 0.05 with fewer


def higher_is_better(unit):
    """Bandwidths and rates: higher is better; times and shares (%): lower is better."""
    unit = (unit or "").strip()
    return not (unit in ("s", "ms", "us", "%", "seconds") or unit.endswith("/op"))


def _seed(key):
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")


# ---- E-divisive --------------------------------------------------------------------------
def energy_statistics(x, min_segment=MIN_SEGMENT):
    """Q(tau) for every split of the last axis of x (batched): E-divisive with alpha=1.

    Returns an array of shape x.shape[:-1] + (n + 1,), -inf where a segment would be
    shorter than ``min_segment``.
    """
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    d = np.abs(x[..., :, None] - x[..., None, :])
    # 2-D prefix sums: block(a, b, c, e) = sum of d[a:b, c:e]
    p = np.zeros(x.shape[:-1] + (n + 1, n + 1))
    p[..., 1:, 1:] = d.cumsum(-1).cumsum(-2)

    def block(a, b, c, e):
        return p[..., b, e] - p[..., a, e] - p[..., b, c] + p[..., a, c]

    q = np.full(x.shape[:-1] + (n + 1,), -np.inf)
    for tau in range(min_segment, n - min_segment + 1):
        m, k = tau, n - tau
        between = block(0, tau, tau, n)
        within_left = block(0, tau, 0, tau) / 2
        within_right = block(tau, n, tau, n) / 2
        e = (2 * between / (m * k)
             - (within_left / (m * (m - 1) / 2) if m > 1 else 0)
             - (within_right / (k * (k - 1) / 2) if k > 1 else 0))
        q[..., tau] = m * k / n * e
    return q


def change_point(values, key="", permutations=PERMUTATIONS):
    """The most likely single change point and its permutation p-value.

    Returns (tau, p_value); tau splits values into values[:tau] and values[tau:].
    """
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 2 * MIN_SEGMENT:
        return None, 1.0
    order = np.arange(n, dtype=float)

    def statistic(t, v, axis=-1):
        # the values in time order, for each re-pairing of times and values
        idx = np.argsort(t, axis=axis)
        ordered = np.take_along_axis(v, idx, axis=axis)
        return energy_statistics(ordered).max(axis=-1)

    observed = energy_statistics(x)
    tau = int(np.argmax(observed))
    if not np.isfinite(observed[tau]) or np.ptp(x) == 0:
        return None, 1.0
    result = stats.permutation_test((order, x), statistic, permutation_type="pairings",
                                    vectorized=True, n_resamples=permutations,
                                    alternative="greater",
                                    rng=np.random.default_rng(_seed(key)))
    return tau, float(result.pvalue)


@dataclass
class NightlyVerdict:
    series: str
    metric: str
    unit: str
    latest: float
    verdict: str                 # ok, regression, improvement, suspect, insufficient-history
    history: int
    p_value: float = None
    change_index: int = None     # index of the first run after the change
    change_run: str = None
    median_before: float = None
    median_after: float = None
    relative_change: float = None
    detail: str = ""


def nightly(series, metric, unit, values, run_ids, alpha=NIGHTLY_ALPHA, min_effect=MIN_EFFECT):
    """Verdict for the latest value of one history (oldest first)."""
    values = [v for v in values][-MAX_HISTORY:]
    run_ids = list(run_ids)[-MAX_HISTORY:]
    latest = values[-1]
    base = NightlyVerdict(series, metric, unit, latest, "ok", len(values))
    if len(values) < MIN_HISTORY:
        base.verdict = "insufficient-history"
        base.detail = f"{len(values)} runs, {MIN_HISTORY} needed"
        return base
    up = higher_is_better(unit)
    tau, p = change_point(values, key=f"{series}|{metric}")
    base.p_value = p
    if tau is not None and p < alpha:
        before, after = np.median(values[:tau]), np.median(values[tau:])
        change = (after - before) / abs(before) if before else math.inf
        base.change_index, base.change_run = tau, run_ids[tau]
        base.median_before, base.median_after = float(before), float(after)
        base.relative_change = float(change)
        worse = change < -min_effect if up else change > min_effect
        better = change > min_effect if up else change < -min_effect
        if worse:
            base.verdict = "regression"
            base.detail = (f"changed at run {run_ids[tau]}: median {before:.4g} -> {after:.4g} "
                           f"{unit} ({change:+.1%}), p={p:.3f}")
            return base
        if better:
            base.verdict = "improvement"
            base.detail = (f"changed at run {run_ids[tau]}: median {before:.4g} -> {after:.4g} "
                           f"{unit} ({change:+.1%}), p={p:.3f}")
            return base
    history = np.asarray(values[:-1], dtype=float)
    median = float(np.median(history))
    mad = float(stats.median_abs_deviation(history, scale="normal"))
    if mad > 0:
        z = (latest - median) / mad
        deviation = (latest - median) / abs(median) if median else 0.0
        low = z < -OUTLIER_Z and deviation < -min_effect
        high = z > OUTLIER_Z and deviation > min_effect
        if (up and low) or (not up and high):
            base.verdict = "suspect"
            base.detail = (f"latest {latest:.4g} {unit} is {abs(z):.1f} robust standard "
                           f"deviations from the median {median:.4g}: one run, not yet a "
                           "confirmed change")
    return base


# ---- acceptance ---------------------------------------------------------------------------
@dataclass
class AcceptanceVerdict:
    series: str
    metric: str
    unit: str
    verdict: str                   # better, worse, no significant change, insufficient
    n_before: int
    n_after: int
    median_before: float = None
    median_after: float = None
    relative_change: float = None
    ci_low: float = None
    ci_high: float = None
    p_value: float = None
    effect_size: float = None      # rank-biserial correlation, -1..1, positive = after higher
    runs_needed_before: int = 0
    runs_needed_after: int = 0
    detail: str = ""


def acceptance(series, metric, unit, before, after, samples_per_run=(1, 1),
               alpha=ACCEPTANCE_ALPHA):
    before = [float(v) for v in before if v is not None]
    after = [float(v) for v in after if v is not None]
    v = AcceptanceVerdict(series, metric, unit, "insufficient", len(before), len(after))
    if len(before) < MIN_SAMPLES or len(after) < MIN_SAMPLES:
        per_before, per_after = (max(1, s) for s in samples_per_run)
        v.runs_needed_before = math.ceil(max(0, MIN_SAMPLES - len(before)) / per_before)
        v.runs_needed_after = math.ceil(max(0, MIN_SAMPLES - len(after)) / per_after)
        v.detail = (f"{len(before)} samples before and {len(after)} after; {MIN_SAMPLES} "
                    f"needed on each side: {v.runs_needed_before} more run(s) before, "
                    f"{v.runs_needed_after} more run(s) after")
        return v
    b, a = np.asarray(before), np.asarray(after)
    v.median_before, v.median_after = float(np.median(b)), float(np.median(a))
    base = v.median_before
    v.relative_change = (v.median_after - base) / abs(base) if base else math.inf
    test = stats.mannwhitneyu(a, b, alternative="two-sided")
    v.p_value = float(test.pvalue)
    v.effect_size = float(2 * test.statistic / (len(a) * len(b)) - 1)

    def ratio(x, y, axis=-1):
        mx = np.median(x, axis=axis)
        return (np.median(y, axis=axis) - mx) / np.abs(mx)

    if base:
        ci = stats.bootstrap((b, a), ratio, n_resamples=2000, method="percentile",
                             vectorized=True, confidence_level=0.95,
                             rng=np.random.default_rng(_seed(f"{series}|{metric}")))
        v.ci_low, v.ci_high = (float(ci.confidence_interval.low),
                               float(ci.confidence_interval.high))
    significant = (v.p_value < alpha and v.ci_low is not None
                   and (v.ci_low > 0 or v.ci_high < 0))
    if not significant:
        v.verdict = "no significant change"
    else:
        higher = v.relative_change > 0
        v.verdict = "better" if higher == higher_is_better(unit) else "worse"
    v.detail = (f"median {v.median_before:.4g} -> {v.median_after:.4g} {unit} "
                f"({v.relative_change:+.1%}, 95% CI {_pct(v.ci_low)} to {_pct(v.ci_high)}), "
                f"Mann-Whitney p={v.p_value:.3g}, effect size {v.effect_size:+.2f}")
    return v


def _pct(x):
    return "n/a" if x is None else f"{x:+.1%}"


def as_dict(verdict):
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in asdict(verdict).items()}
