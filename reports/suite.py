"""The suite layer of the nightly verdicts: alerts a site can live with.

Per-figure verdicts (``reports.verdicts.nightly_many``) hold at most 1% false
regressions per unchanged figure per night; over thousands of figures that is still
several false alarms every night.  This layer decides what is *notified*:

1. **The run effect.**  Each night's common shift of the whole suite (a busy file
   system, a slow node) is the median over figures of their log-scale residuals from
   their own median; it is removed from every figure before anything else is judged,
   and is itself a series that is tested (a change of the whole suite).
2. **Groups.**  Figures that move together (a check's figures on one target, system
   and environment) form a group; the group's series is the mean of its members'
   standardised residuals.  Its spread is measured from its own history, so members
   that share a job's conditions count as fewer independent figures.  One history's
   night-to-night correlation is too rough for the far tail the suite works in: a
   figure's is at least its group's median, a group's at least its members' median.
3. **One family, one budget.**  Every group series, every figure alone and the run
   effect are scanned for a recent change of level (the newest k runs against the
   runs before them, k in ``SCAN``), each judged by the spread of the runs before it
   (a change's own nights would count as noise and hide it); the tests share a suite-wide budget of
   ``SUITE_ALPHA`` false notifications a night, split Bonferroni-wise (groups get
   ``GROUP_SHARE`` of it, single figures the rest), with a t quantile for the spread
   estimated from the history.  So at most about 0.7 false notifications a week,
   whatever the number of figures.
4. **Once per change.**  A group is notified on the first night it passes; while it
   passed on one of the ``LOOK_BACK`` nights before, it is ongoing (recomputed from the
   history alone, as the per-figure verdicts do).  A notification names the group and
   every member with its own change.

The simulation behind the numbers: ``ci/benchmarks/verdict_simulation.py --only suite``;
the method and its figures: reports/VERDICTS.md ("The suite layer").
"""

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from reports import verdicts

SUITE_ALPHA = 0.1  # false notifications per night over the whole suite
GROUP_SHARE = 0.8  # of it for group series (the rest: single figures, run effect)
SCAN = (2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 25, 30)  # newest k runs tested
REFERENCE = 60  # runs right before the newest k: the level compared with
NOISE_BEFORE = (2, 3, 5, 8)  # the newest k are judged by the spread of the runs before
#   the newest 2, 3, 5 or 8 (the first that covers them; 8 for larger k)
MIN_REFERENCE = 8  # ... at least this many
LOOK_BACK = 7  # an alert is news unless one of the 7 nights before had it
MAX_CORRELATION = verdicts.MAX_CORRELATION
LEAVE_OUT_Z = verdicts.LEAVE_OUT_Z  # a newest run this far from the others: left out
MIN_SEGMENT = verdicts.MIN_SEGMENT  # a level holds at least 3 runs
SPLIT_Z = 5.0  # an older change this strong starts the level compared with
MIN_RUN_EFFECT = 20  # log-scale figures a run needs for its common shift to count
SUITE_GROUP = "the whole suite"  # the run effect's own group

METHOD = (
    "suite layer: each run's common shift (median over figures) removed and tested; "
    "figures grouped by check, target, system and environment; every group, figure "
    "and the run effect scanned for a change in the newest 2-30 runs, judged by the "
    "spread of the nights before them; one "
    "Bonferroni budget for the whole suite; an alert is notified once"
)
FALSE_NOTIFICATIONS = (
    f"at most {SUITE_ALPHA:g} false notifications a night for the whole "
    f"suite (about {7 * SUITE_ALPHA:.1f} a week), whatever its size "
    "(simulated: reports/VERDICTS.md)"
)


@dataclass
class Alert:
    group: str
    direction: str  # "regression" or "improvement"
    news: bool  # first night of this alert (notified)
    nights: int  # the change covers the newest `nights` runs
    change_run: str  # first run of the changed level
    z: float  # the group's (or the strongest member's) statistic
    threshold: float
    relative_change: float  # median over the members that moved, e.g. -0.2
    members: list = field(default_factory=list)  # [{"series", "metric", "z",
    #   "relative_change"}] worst first


@dataclass
class SuiteVerdict:
    alerts: list  # Alert, regressions first, strongest first
    tests: int  # group series + single figures + run effect
    group_threshold: Optional[float]
    figure_threshold: Optional[float]
    run_effect: Optional[float]  # tonight's common shift, relative (e.g. -0.03)
    groups: int
    figures: int

    @property
    def regressions(self) -> list[Alert]:
        return [a for a in self.alerts if a.direction == "regression"]

    @property
    def notify(self) -> bool:
        return any(a.news for a in self.regressions)


# ---- one night on an aligned matrix ------------------------------------------------------
def _running_median(a, width):
    """Median of the `width` runs around each run, leaving out missing ones (sorting
    puts nan last; numpy's nanmedian is 50 times slower on windows)."""
    half = width // 2
    padded = np.full((a.shape[0], a.shape[1] + 2 * half), np.nan)
    padded[:, half : half + a.shape[1]] = a
    windows = np.sort(np.lib.stride_tricks.sliding_window_view(padded, width, axis=1), axis=2)
    count = np.sum(np.isfinite(windows), axis=2)
    low = np.take_along_axis(windows, np.maximum(count - 1, 0)[..., None] // 2, axis=2)[..., 0]
    high = np.take_along_axis(windows, (count // 2)[..., None], axis=2)[..., 0]
    return np.where(count > 0, (low + high) / 2, np.nan)


def _running_mean(a, width):
    """Mean of the `width` runs around each run, leaving out missing ones."""
    half = width // 2
    finite = np.isfinite(a)
    padded = np.zeros((a.shape[0], a.shape[1] + 2 * half + 1))
    counts = np.zeros_like(padded)
    padded[:, half + 1 : half + 1 + a.shape[1]] = np.where(finite, a, 0.0)
    counts[:, half + 1 : half + 1 + a.shape[1]] = finite
    total, number = np.cumsum(padded, axis=1), np.cumsum(counts, axis=1)
    window = total[:, width:] - total[:, :-width]
    count = number[:, width:] - number[:, :-width]
    with np.errstate(all="ignore"):
        return np.where(count > 0, window / count, np.nan)


def _median(a, axis, keepdims=False):
    """Median leaving out missing values (numpy's median where none is missing: nanmedian
    is several times slower)."""
    if np.isfinite(a).all():
        return np.median(a, axis=axis, keepdims=keepdims)
    return _nan(np.nanmedian, a, axis=axis, keepdims=keepdims)


def _nan(f, *args, **kw):
    import warnings

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args, **kw)


def _tame(a):
    """Hampel filter as the per-figure verdicts use it (``verdicts._tame``), allowing
    missing nights: one bad night moves no level."""
    local = _running_median(a, 5)
    r = a - local
    bound = 3.5 * 1.4826 * _median(np.abs(r), axis=1, keepdims=True)
    bound = np.where(bound > 0, bound, np.inf)
    return np.clip(a, local - bound, local + bound)


def _level_start(body, sigma):
    """Where the newest level of each row's history begins: the strongest single split
    of ``body`` when its two sides differ by SPLIT_Z of their standard errors (an older
    improvement or regression must not blur the level a new change is compared with),
    else 0."""
    m, n = body.shape
    finite = np.isfinite(body)
    c = np.concatenate([np.zeros((m, 1)), np.cumsum(np.where(finite, body, 0), axis=1)], 1)
    k = np.concatenate([np.zeros((m, 1)), np.cumsum(finite, axis=1)], 1)
    best = np.zeros(m, dtype=int)
    top = np.zeros(m)
    for s in range(MIN_REFERENCE, n - MIN_SEGMENT + 1):
        a, b = k[:, s], k[:, n] - k[:, s]
        with np.errstate(all="ignore"):
            z = np.abs((c[:, n] - c[:, s]) / b - c[:, s] / a) / (sigma * np.sqrt(1 / a + 1 / b))
        z = np.nan_to_num(z)
        better = z > top
        best, top = np.where(better, s, best), np.where(better, z, top)
    return np.where(top >= SPLIT_Z, best, 0)


def _noise(t):
    """Marginal spread, AR(1) correlation, runs used and level start of tamed
    series t (rows), from all but the newest 2 runs, with the per-figure verdicts'
    estimator (``verdicts._noise``: residuals around the levels, the correlation from
    deviations around local levels, mapped back to AR(1)); missing nights take their
    row's median."""
    body = t[:, :-2]
    m, n = body.shape
    d = np.diff(body, axis=1)
    rough = 1.4826 / math.sqrt(2) * _median(np.abs(d), axis=1)
    start = _level_start(body, np.where(rough > 0, rough, np.inf))
    filled = np.where(np.isfinite(body), body, _median(body, axis=1, keepdims=True))
    filled = np.nan_to_num(filled)
    starts = np.zeros(body.shape, dtype=bool)
    starts[:, 0] = True
    starts[np.arange(m), start] = True
    s2, phi = verdicts._noise(filled, starts)
    used = np.sum(np.isfinite(body), axis=1)
    # The lag-1 estimate is biased low by about (1 + 4 phi) / n (Kendall): corrected,
    # since the suite's thresholds sit far in the tail.
    phi = np.clip(phi + (1 + 4 * phi) / np.maximum(used, 1), 0.0, MAX_CORRELATION)
    return np.sqrt(s2), phi, used, start


def _degrees(used, phi, start):
    """Degrees of freedom of a spread from ``used`` runs: about n (1 - phi) / (1 + phi)
    independent runs, less a mean per level."""
    return np.maximum(used * (1 - phi) / (1 + phi) - 1 - (start > 0), 2.0)


def _scan(series, floor=0.0, pool=None, phi_floor=None):
    """z of the newest k runs against up to REFERENCE runs before them, for k in SCAN,
    each way: (z down, z up, change down, change up (rows x len(SCAN), on the series'
    scale), degrees of freedom of the spread (rows x len(SCAN)), spread and correlation
    from the runs before the newest 8 (or as many as the history allows)).  nan where a k does not fit or the
    newest run is missing.

    The spread and correlation that judge the newest k runs are measured on the runs
    before them (``NOISE_BEFORE``): a change's own runs would otherwise count as noise
    and hide it.  One history's correlation is too rough an estimate for the tail the
    suite works in, so a row's correlation is at least the median of its ``pool``'s
    (a group index per row: figures of one job share its nights) and at least its
    ``phi_floor``.

    One bad night makes no change: the worst newest run (the best, upwards) is left out
    when it lies LEAVE_OUT_Z spreads beyond the mean of the other newest runs (as the
    per-figure scan does); a real change moves the newest runs together."""
    m, n = series.shape
    t = _tame(series)
    finite = np.isfinite(t)
    csum = np.concatenate([np.zeros((m, 1)), np.cumsum(np.where(finite, t, 0), axis=1)], 1)
    ccount = np.concatenate([np.zeros((m, 1)), np.cumsum(finite, axis=1)], 1)
    rows = np.arange(m)
    out = [np.full((m, len(SCAN)), np.nan) for _ in range(5)]
    noise = {}
    for before in NOISE_BEFORE:
        if n - before >= MIN_REFERENCE:
            sigma, phi, used, start = _noise(t[:, : n - before + 2])
            if pool is not None:
                phi = np.maximum(phi, _pool_median(np.nan_to_num(phi), pool)[pool])
            if phi_floor is not None:
                phi = np.maximum(phi, phi_floor)
            sigma = np.where(np.isfinite(sigma), np.maximum(sigma, floor), sigma)
            noise[before] = (sigma, phi, _degrees(used, phi, start), start)
    for j, k in enumerate(SCAN):
        before = next((b for b in NOISE_BEFORE if b >= min(k, NOISE_BEFORE[-1])), None)
        if n - k < MIN_REFERENCE or before not in noise:
            continue
        sigma, phi, df, level_start = noise[before]
        ok = np.isfinite(series[:, -1]) & (sigma > 0)
        newest = series[:, n - k :]
        # The level before: up to REFERENCE runs, from the start of the newest level
        # when that leaves MIN_REFERENCE runs.
        lo = np.full(m, max(0, n - k - REFERENCE))
        lo = np.where(n - k - level_start >= MIN_REFERENCE, np.maximum(lo, level_start), lo)
        kc = np.sum(np.isfinite(newest), axis=1).astype(float)
        rc = ccount[:, n - k] - ccount[rows, lo]
        total = np.nansum(newest, axis=1)
        with np.errstate(all="ignore"):
            ref_mean = (csum[:, n - k] - csum[rows, lo]) / rc
        for way, extreme in ((0, np.nanmin), (1, np.nanmax)):
            worst = _nan(extreme, newest, axis=1)
            with np.errstate(all="ignore"):
                others = (total - worst) / (kc - 1)
                drop = (kc >= 2) & (
                    (others - worst) * (1 if way == 0 else -1) >= LEAVE_OUT_Z * sigma
                )
                mean = np.where(drop, others, total / kc)
            kk = np.maximum(kc - drop, 1)
            rr = np.maximum(rc, 1)
            v = (
                verdicts._ar_sum_var(kk, phi) / kk**2
                + verdicts._ar_sum_var(rr, phi) / rr**2
                - 2 * verdicts._ar_adjacent_cov(rr, kk, phi) / (kk * rr)
            )
            good = ok & (kc >= min(k, 2)) & (rc >= MIN_REFERENCE)
            d = mean - ref_mean
            with np.errstate(all="ignore"):
                out[way][:, j] = np.where(good, d / (sigma * np.sqrt(v)), np.nan)
            out[2 + way][:, j] = np.where(good, d, np.nan)
        out[4][:, j] = df
    if not noise:
        return (*out, np.full(m, np.nan), np.zeros(m))
    earliest = noise[max(noise)]  # the spread least touched by a recent change
    return (*out, earliest[0], earliest[1])


def _pool_median(values, pool):
    """Median of ``values`` over the rows of each pool index (0..max)."""
    order = np.lexsort((values, pool))
    counts = np.bincount(pool)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    ordered = values[order]
    low = ordered[first + np.maximum(counts - 1, 0) // 2]
    high = ordered[first + counts // 2 - (counts == 0)]
    return np.where(counts > 0, (low + high) / 2, 0.0)


def _critical(p, df):
    return verdicts._stats().t.isf(p, df)


def night(
    matrix: np.ndarray, logs: np.ndarray, group_of: np.ndarray, *, alpha: float = SUITE_ALPHA
) -> tuple[
    dict[tuple[int, str], tuple[int, float, float, list[tuple[int, float, float]]]], dict[str, Any]
]:
    """The suite's alerts for the newest run (the last column) of an aligned matrix.

    matrix: figures x runs, oriented so that higher is better (log values where
    ``logs``), nan where a figure has no value; group_of: a group index per figure.
    Returns (fired, details): fired maps (group index or -1 for the run effect,
    direction) to (k, z, threshold, [(figure, z, change)...]); details holds the
    thresholds and tonight's run effect (log scale)."""
    matrix = np.asarray(matrix, dtype=float)
    logs = np.asarray(logs, dtype=bool)
    group_of = np.asarray(group_of)
    f, n = matrix.shape
    centred = matrix - _median(matrix, axis=1, keepdims=True)
    effect = _run_effect(centred, logs, n)
    adjusted = np.where(logs[:, None], centred - effect[None, :], centred)
    # Standardise each figure (its spread from its history) so that a group's series
    # weighs its members alike.
    # No figure has less run-to-run spread than the per-figure verdicts assume.
    level = np.abs(_median(matrix, axis=1))
    floor = np.where(logs, verdicts.NOISE_FLOOR, verdicts.NOISE_FLOOR * level)
    fig_down, fig_up, fig_cd, fig_cu, fig_df, sigma, fig_phi = _scan(
        adjusted, np.nan_to_num(floor), pool=group_of
    )
    sigma = np.where(sigma > 0, sigma, np.nan)
    standard = adjusted / sigma[:, None]
    groups = int(group_of.max()) + 1 if f else 0
    members = [np.flatnonzero(group_of == g) for g in range(groups)]
    group_series = (
        np.array([_nan(np.nanmean, standard[idx], axis=0) for idx in members])
        if groups
        else np.zeros((0, n))
    )
    # A group's series is as correlated from night to night as its members.
    g_down, g_up, _, _, g_df, _, _ = (
        _scan(group_series, phi_floor=_pool_median(np.nan_to_num(fig_phi), group_of))
        if groups
        else (np.zeros((0, len(SCAN))),) * 5 + (None, None)
    )
    e_down, e_up, e_cd, e_cu, e_df, _, _ = _scan(effect[None, :])
    tested_figures = int(np.sum(np.isfinite(fig_down).any(axis=1)))
    tested_groups = int(np.sum(np.isfinite(g_down).any(axis=1)))
    per_k = len(SCAN)
    p_group = alpha * GROUP_SHARE / max(tested_groups, 1) / per_k
    p_single = alpha * (1 - GROUP_SHARE) / (tested_figures + 1) / per_k
    fired: dict[tuple[int, str], tuple[int, float, float, int]] = {}
    if groups:
        _consider(fired, np.arange(groups), g_down, g_up, g_df, p_group)
    _consider(fired, group_of, fig_down, fig_up, fig_df, p_single)
    _consider(fired, np.array([-1]), e_down, e_up, e_df, p_single)
    out = {}
    for (key, direction), (k, z, crit, j) in fired.items():
        idx = members[key] if key >= 0 else np.arange(f)
        sign = -1 if direction == "regression" else 1
        fz, fc = (fig_down, fig_cd) if sign < 0 else (fig_up, fig_cu)
        if key < 0:
            # The whole suite moved: every figure that moved with it, before the run
            # effect was taken out (computed only on such a night).
            raw = _scan(centred, np.nan_to_num(floor), pool=group_of)
            fz, fc = (raw[0], raw[2]) if sign < 0 else (raw[1], raw[3])
        moved = [
            (int(i), float(fz[i, j]), float(fc[i, j]))
            for i in idx
            if np.isfinite(fz[i, j]) and sign * fz[i, j] > 0
        ]
        moved.sort(key=lambda m: sign * m[1], reverse=True)
        if key < 0:
            moved.insert(0, (-1, z, float((e_cd if sign < 0 else e_cu)[0, j])))
        out[(key, direction)] = (k, z, crit, moved)
    details = {
        "group_threshold": _threshold(p_group, g_df) if groups else None,
        "figure_threshold": _threshold(p_single, fig_df) if f else None,
        "run_effect": float(effect[-1]),
        "tests": tested_groups + tested_figures + 1,
        "groups": tested_groups,
        "figures": tested_figures,
    }
    return out, details


def _run_effect(centred: np.ndarray, logs: np.ndarray, n: int) -> np.ndarray:
    """The run effect: the median shift of the log-scale figures each night (none with
    fewer than MIN_RUN_EFFECT of them)."""
    if logs.sum() >= MIN_RUN_EFFECT:
        effect = _median(centred[logs], axis=0)
        return np.nan_to_num(effect - _median(effect, axis=0))
    return np.zeros(n)


def _consider(
    fired: dict[tuple[int, str], tuple[int, float, float, int]],
    keys: np.ndarray,
    down: np.ndarray,
    up: np.ndarray,
    df: np.ndarray,
    p: float,
) -> None:
    """Record in fired the rows that pass their critical value (df: rows x len(SCAN)),
    the strongest per (group, direction)."""
    with np.errstate(invalid="ignore"):
        crit = _critical(p, df)
    for direction, sign, z in (("regression", -1, down), ("improvement", 1, up)):
        with np.errstate(invalid="ignore"):
            s = np.where(np.isfinite(z) & np.isfinite(crit), sign * z / crit, -np.inf)
        j = np.argmax(s, axis=1) if s.size else np.zeros(0, dtype=int)
        best = s[np.arange(len(s)), j]
        for r in np.flatnonzero(best >= 1.0):
            key, strength = int(keys[r]), best[r]
            old = fired.get((key, direction))
            if old is None or strength > abs(old[1]) / old[2]:
                fired[(key, direction)] = (
                    SCAN[j[r]],
                    float(z[r, j[r]]),
                    float(crit[r, j[r]]),
                    int(j[r]),
                )


def _threshold(p, df):
    """The critical value of a change of the newest 2 runs, for the median row."""
    column = df[:, 0] if df.size else df
    finite = column[np.isfinite(column)]
    return float(_critical(p, np.median(finite))) if finite.size else None


def news(
    fired_tonight: Iterable[tuple[int, str]], fired_before: Iterable[Iterable[tuple[int, str]]]
) -> dict[tuple[int, str], bool]:
    """Which of tonight's alerts are news: the same group and direction fired on none
    of the nights before (``fired_before``: the fired dicts of up to LOOK_BACK nights)."""
    seen: set[tuple[int, str]] = set()
    for earlier in fired_before:
        seen.update(earlier)
    return {key: key not in seen for key in fired_tonight}


# ---- histories from the store -------------------------------------------------------------
def judge(
    histories: Iterable[verdicts.History],
    groups: Iterable[Hashable],
    runs: Iterable[str],
    *,
    alpha: float = SUITE_ALPHA,
    window: int = verdicts.WINDOW,
) -> SuiteVerdict:
    """Suite verdict for the newest of ``runs`` (run ids, oldest first).

    histories: ``verdicts.History`` items (values oldest first, one run id each);
    groups: a group label per history (a check on one target, system and environment).
    A history whose run ids are not in ``runs`` raises ValueError."""
    histories, groups = list(histories), list(groups)
    if len(histories) != len(groups):
        raise ValueError(
            f"suite: {len(histories)} histories but {len(groups)} group labels; "
            "expected one label per history"
        )
    runs = list(runs)[-(window + LOOK_BACK) :]
    column = {r: j for j, r in enumerate(runs)}
    matrix = np.full((len(histories), len(runs)), np.nan)
    logs = np.zeros(len(histories), dtype=bool)
    for i, h in enumerate(histories):
        verdicts._check_better(h.better, f"{h.series or 'history'} {h.metric}: better")
        sign = -1.0 if h.better == "lower" else 1.0
        values = np.array(
            [verdicts._as_float(v, "value") if v is not None else np.nan for v in h.values],
            dtype=float,
        )
        finite = values[np.isfinite(values)]
        logs[i] = finite.size > 0 and bool(np.all(finite > 0))
        for run, value in zip(h.run_ids, values):
            j = column.get(run)
            if j is not None and np.isfinite(value):
                matrix[i, j] = sign * (math.log(value) if logs[i] else value)
    labels = sorted(set(groups), key=str)
    index = {g: j for j, g in enumerate(labels)}
    group_of = np.array([index[g] for g in groups], dtype=int)
    nights = []
    for back in range(LOOK_BACK + 1):
        end = len(runs) - back
        if end - max(0, end - window) < MIN_REFERENCE + 2:
            break
        nights.append(night(matrix[:, max(0, end - window) : end], logs, group_of, alpha=alpha))
    if not nights:
        return SuiteVerdict([], 0, None, None, None, len(labels), len(histories))
    tonight, details = nights[0]
    is_news = news(tonight, [fired for fired, _ in nights[1:]])
    alerts = []
    for (key, direction), (k, z, crit, moved) in tonight.items():
        name = SUITE_GROUP if key < 0 else str(labels[key])
        members: list[dict[str, Any]] = []
        for i, mz, d in moved:
            if i < 0:
                members.append(
                    {
                        "series": SUITE_GROUP,
                        "metric": "",
                        "z": round(mz, 2),
                        "relative_change": float(math.expm1(d)),
                    }
                )
                continue
            h = histories[i]
            rel = math.expm1(d) if logs[i] else None
            if rel is not None and h.better == "lower":
                rel = math.expm1(-d)
            members.append(
                {"series": h.series, "metric": h.metric, "z": round(mz, 2), "relative_change": rel}
            )
        rels = [m["relative_change"] for m in members if m["relative_change"] is not None]
        alerts.append(
            Alert(
                name,
                direction,
                is_news[(key, direction)],
                k,
                str(runs[len(runs) - k]),
                round(z, 2),
                round(crit, 2),
                float(np.median(rels)) if rels else math.nan,
                members,
            )
        )
    alerts.sort(key=lambda a: (a.direction != "regression", -abs(a.z) / a.threshold))
    effect = details["run_effect"]
    return SuiteVerdict(
        alerts,
        details["tests"],
        details["group_threshold"],
        details["figure_threshold"],
        float(math.expm1(effect)),
        details["groups"],
        details["figures"],
    )
