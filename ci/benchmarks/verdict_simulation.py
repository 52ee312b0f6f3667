#!/usr/bin/env python3
"""Benchmark (not a test): the verdicts on simulated histories, as tables.

Targets (BRIEF section 8): false regressions <= 1% of unchanged figures for independent
and AR(1) phi=0.5 nights; a 20% drop at CV 15% confirmed within 3 nights in >= 80% of
series; 10,000 figures with 100-night histories judged in under 30 s.  Prints Markdown
tables (reports/VERDICTS.md quotes them) and exits 0 whatever the figures are.

    .venv/bin/python ci/benchmarks/verdict_simulation.py [--series 2000] [--quick]
        [--weeks 3] [--only bound,suite,false-alarms,power,cases,acceptance,timing]

The default (bound,suite) prints the suite layer's false notifications a week (10,000
figures a night, independent and shared run-to-run noise, and AR(1) phi 0.8) and its
detection shares, with 95% intervals.
"""

import argparse
import math
import os
import sys
import time

import numpy as np
from scipy import stats

from reports import suite, verdicts

REGRESSION = ("regression", "ongoing-regression")


# ---- simulated histories -----------------------------------------------------------------
def noise(rng, count, n, cv, phi=0.0, outliers=0.0):
    """Multiplicative noise around 1: lognormal with the given CV, AR(1) in the log.

    outliers: share of nights that are bad nights (at 30-70% of the level).
    """
    sigma = math.sqrt(math.log1p(cv * cv))
    e = rng.standard_normal((count, n))
    if phi:
        x = np.empty_like(e)
        x[:, 0] = e[:, 0]
        c = math.sqrt(1 - phi * phi)
        for t in range(1, n):
            x[:, t] = phi * x[:, t - 1] + c * e[:, t]
        e = x
    values = np.exp(sigma * e - sigma * sigma / 2)
    if outliers:
        bad = rng.random((count, n)) < outliers
        values[bad] *= rng.uniform(0.3, 0.7, bad.sum())
    return values


def judge(rows, better="higher", level=1000.0):
    """Verdicts of each row (a full history, oldest first)."""
    rows = np.asarray(rows) * level
    ids = [f"r{i}" for i in range(rows.shape[1])]
    return verdicts.nightly_many(verdicts.History(list(r), ids, better) for r in rows)


def judge_nights(rows, nights):
    """Verdicts of each row's history as it stood on each of its last `nights` nights:
    [[verdict for night 1 of row 0, ...], ...]."""
    rows = np.asarray(rows) * 1000.0
    n = rows.shape[1]
    ids = [f"r{i}" for i in range(n)]
    histories = [
        verdicts.History(list(r[: n - nights + 1 + j]), ids[: n - nights + 1 + j], "higher")
        for r in rows
        for j in range(nights)
    ]
    out = verdicts.nightly_many(histories)
    return [out[i * nights : (i + 1) * nights] for i in range(len(rows))]


def share(flags):
    flags = np.asarray(flags, dtype=bool)
    return flags.mean() if flags.size else math.nan


def pct(x, spread=None):
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{100 * x:.1f}%" if spread is None else f"{100 * x:.2f}% ±{100 * spread:.2f}"


def binomial_ci(hits, total):
    """Half-width of the 95% interval (Wilson, as +- around the share)."""
    if not total:
        return math.nan
    p = hits / total
    z = 1.96
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(abs(centre + half - p), abs(p - (centre - half)))


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    print(flush=True)


# ---- tables --------------------------------------------------------------------------------
def false_alarms(rng, count):
    print("## False alarms on unchanged figures (one night)\n")
    print(
        f"{count} series per cell; share of figures whose verdict is a regression "
        "(new + ongoing; ±: 95% interval), new regressions alone, suspects and "
        "improvements; last column: share of series with at least one new regression "
        f"notification in 30 consecutive nights ({count // 4} series).\n"
    )
    rows = []
    models = [
        ("independent", 0.15, 0.0, 0.0),
        ("independent", 0.05, 0.0, 0.0),
        ("independent", 0.40, 0.0, 0.0),
        ("AR(1) phi 0.5", 0.15, 0.5, 0.0),
        ("AR(1) phi 0.3", 0.15, 0.3, 0.0),
        ("AR(1) phi 0.8", 0.15, 0.8, 0.0),
        ("independent + 5% bad nights", 0.15, 0.0, 0.05),
        ("AR(1) 0.5 + 5% bad nights", 0.15, 0.5, 0.05),
    ]
    for name, cv, phi, out in models:
        for n in (10, 20, 30, 50, 100):
            if (cv != 0.15 or out) and n not in (30, 100):
                continue
            v = judge(noise(rng, count, n, cv, phi, out))
            kinds = np.array([x.verdict for x in v])
            reg = np.isin(kinds, REGRESSION)
            month_count = count // 4
            nights = judge_nights(noise(rng, month_count, n + 29, cv, phi, out), 30)
            month = [any(x.verdict == "regression" for x in s) for s in nights]
            rows.append(
                [
                    name,
                    f"{cv:.0%}",
                    n,
                    pct(reg.mean(), binomial_ci(reg.sum(), count)),
                    pct(share(kinds == "regression")),
                    pct(share(kinds == "suspect")),
                    pct(share(kinds == "improvement")),
                    pct(share(month)),
                ]
            )
    table(
        [
            "noise",
            "CV",
            "runs",
            "regression (any)",
            "new regression",
            "suspect",
            "improvement",
            ">= 1 new in 30 nights",
        ],
        rows,
    )


def power(rng, count):
    print("## Detection power\n")
    print(
        f"A drop of the level after 50 unchanged nights, {count} series per cell.  "
        "Within 3 nights: share of series with a regression verdict (new or ongoing) on "
        "night 2 or 3 of the new level (night 1 can only be suspect).\n"
    )
    drops = (0.05, 0.10, 0.20, 0.30, 0.50)
    cvs = (0.05, 0.10, 0.15, 0.20, 0.30, 0.40)
    rows = []
    for cv in cvs:
        row = [f"{cv:.0%}"]
        for drop in drops:
            base = noise(rng, count, 53, cv)
            base[:, 50:] *= 1 - drop
            nights = judge_nights(base, 3)
            hit = [any(x.verdict in REGRESSION for x in s[1:]) for s in nights]
            row.append(pct(share(hit)))
        rows.append(row)
    print("### Confirmed within 3 nights (independent nights)\n")
    table(["CV \\ drop"] + [f"{d:.0%}" for d in drops], rows)

    print("### By nights since the drop (CV 15%; independent, and AR(1) phi 0.5)\n")
    ks = (1, 2, 3, 4, 5, 7, 10, 15, 20, 30)
    rows = []
    for phi in (0.0, 0.5):
        for drop in drops:
            row = [f"{drop:.0%}", "AR(1) 0.5" if phi else "independent"]
            for k in ks:
                base = noise(rng, count // 2, 50 + k, 0.15, phi)
                base[:, 50:] *= 1 - drop
                kinds = [x.verdict for x in judge(base)]
                row.append(pct(share(np.isin(kinds, REGRESSION))))
            rows.append(row)
    table(["drop", "noise"] + [f"k={k}" for k in ks], rows)

    print("### Within 3 nights at CV 15%, AR(1) phi 0.5\n")
    rows = []
    for drop in drops:
        base = noise(rng, count, 53, 0.15, 0.5)
        base[:, 50:] *= 1 - drop
        nights = judge_nights(base, 3)
        rows.append(
            [
                f"{drop:.0%}",
                pct(share([any(x.verdict in REGRESSION for x in s[1:]) for s in nights])),
            ]
        )
    table(["drop", "within 3 nights"], rows)


def bound():
    print("## The best any test can do (20% drop, CV 15%, 3 nights)\n")
    sigma = math.sqrt(math.log1p(0.15**2))
    delta = -math.log(0.8) / sigma  # the drop in noise standard deviations
    rows = []
    for k in (2, 3, 4, 5, 6, 7):
        for alpha in (0.01, 0.02, 0.03):
            z = stats.norm.isf(alpha)
            rows.append([k, f"{alpha:.0%}", pct(stats.norm.sf(z - delta * math.sqrt(k)))])
    print(
        "Power of the most powerful test (Neyman-Pearson, one-sided z-test) that knows "
        "the noise, the date of the drop and its direction, with k nights after the "
        "drop and an infinitely long history before it, at false-alarm rate alpha.  A "
        "rule that may alarm on nights 2 and 3 (1% each) is, over both nights, a test "
        "at 2% on the 3 nights' data: its power is at most the alpha=2%, k=3 row; "
        "counting night 1 too, the alpha=3% row.\n"
    )
    table(["k nights", "alpha", "power"], rows)
    need = (stats.norm.isf(0.02) + stats.norm.isf(0.2)) * sigma / math.sqrt(3)
    print(
        f"80% within 3 nights at 2% needs a drop of {1 - math.exp(-need):.1%} at CV 15%, "
        f"or CV {_cv_for(0.2, 3, 0.02):.1%} for a 20% drop.\n"
    )


def _cv_for(drop, k, alpha):
    sigma = -math.log(1 - drop) * math.sqrt(k) / (stats.norm.isf(alpha) + stats.norm.isf(0.2))
    return math.sqrt(math.expm1(sigma * sigma))


# ---- the suite layer --------------------------------------------------------------------
SUITE_MODELS = (
    # name, variance shares (figure alone, the whole run, the group's job), AR(1) phi
    ("independent per figure", (1.0, 0.0, 0.0), 0.0),
    ("shared run-to-run", (0.4, 0.4, 0.2), 0.0),
)


def suite_noise(rng, figures, nights, group_of, cv, shares, phi=0.0):
    """Log-scale noise (figures x nights) with total CV `cv`: a part of each figure's
    own (AR(1) with phi), a part common to the whole run, a part common to a group's
    job that night."""
    sigma = math.sqrt(math.log1p(cv * cv))
    own, run, job = (math.sqrt(s) * sigma for s in shares)
    e = rng.standard_normal((figures, nights))
    if phi:
        c = math.sqrt(1 - phi * phi)
        for t in range(1, nights):
            e[:, t] = phi * e[:, t - 1] + c * e[:, t]
    x = own * e + run * rng.standard_normal(nights)[None, :]
    if job:
        x += job * rng.standard_normal((int(group_of.max()) + 1, nights))[group_of]
    return x


def poisson_interval(events, exposure):
    """Rate with its exact 95% interval (Garwood), events per unit of exposure."""
    low = stats.chi2.ppf(0.025, 2 * events) / 2 if events else 0.0
    high = stats.chi2.ppf(0.975, 2 * events + 2) / 2
    return events / exposure, low / exposure, high / exposure


def _suite_nights(x, group_of, first, last, history=verdicts.WINDOW):
    """The fired alerts of each night first..last-1 (column = night), and their news."""
    logs = np.ones(len(x), dtype=bool)
    fired_by_night, news_by_night = [], []
    for e in range(first, last):
        fired, _ = suite.night(x[:, max(0, e + 1 - history) : e + 1], logs, group_of)
        news_by_night.append(suite.news(fired, fired_by_night[-suite.LOOK_BACK :]))
        fired_by_night.append(fired)
    return fired_by_night, news_by_night


def suite_layer(rng, weeks, figures=10000, group_size=8, cv=0.15, replicates=6):
    print("## The suite layer: false notifications a week, and detection\n")
    groups = figures // group_size
    group_of = np.repeat(np.arange(groups), group_size)[:figures]
    warm = 60
    print(
        f"{figures:,} figures a night in {groups:,} groups of {group_size} (a check's "
        f"figures on one target and environment), CV {cv:.0%} (log-normal), {warm} nights "
        f"of history before the first night judged, then {weeks} weeks judged night by "
        "night with `reports.suite` (suite budget "
        f"{suite.SUITE_ALPHA} a night).  A false notification: a new regression alert on "
        "a suite where nothing changed (95% interval: exact Poisson).  Shared "
        "run-to-run: 40% of the variance is the figure's own, 40% common to the whole "
        "run, 20% common to the group's job that night.\n"
    )
    rows = []
    for name, shares, phi in SUITE_MODELS + (("AR(1) phi 0.8 per figure", (1.0, 0.0, 0.0), 0.8),):
        nights = 7 * weeks
        x = suite_noise(rng, figures, warm + nights, group_of, cv, shares, phi)
        _, news = _suite_nights(x, group_of, warm, warm + nights)
        false = sum(
            1 for night in news for (key, d), new in night.items() if new and d == "regression"
        )
        improvements = sum(
            1 for night in news for (key, d), new in night.items() if new and d == "improvement"
        )
        rate, low, high = poisson_interval(false, weeks)
        rows.append(
            [
                name,
                f"{nights} nights",
                f"{false}",
                f"{rate:.2f} [{low:.2f}, {high:.2f}]",
                f"{improvements / weeks:.2f}",
            ]
        )
    table(
        ["noise", "judged", "false notifications", "a week [95%]", "false improvements a week"],
        rows,
    )

    print("### Detection of a 20% drop at CV 15%\n")
    changed = max(groups // 25, 10)
    print(
        f"In each of {replicates} suites per noise model, {changed} groups drop 20% "
        f"together, {changed} single figures (in other groups) drop 20% alone, and "
        f"{changed} groups drop 20% 20 nights after a 20% improvement; the share "
        "notified (a regression alert of the figure's group) by night k of the new "
        "level, with its 95% interval.  The bound: the most powerful single-figure test "
        "at 1% (reports/VERDICTS.md): 60.4% within 3 nights.\n"
    )
    rows = []
    for name, shares, phi in SUITE_MODELS:
        hits = {kind: np.zeros(6) for kind in ("group", "single", "after improvement")}
        totals = dict.fromkeys(hits, 0)
        for _ in range(replicates):
            x = suite_noise(rng, figures, warm + 5, group_of, cv, shares, phi)
            order = rng.permutation(groups)
            whole, single, improved = (
                order[:changed],
                order[changed : 2 * changed],
                order[2 * changed : 3 * changed],
            )
            rows_whole = np.flatnonzero(np.isin(group_of, whole))
            rows_single = np.array([np.flatnonzero(group_of == g)[0] for g in single])
            rows_improved = np.flatnonzero(np.isin(group_of, improved))
            drop = math.log(0.8)
            x[rows_whole, warm:] += drop
            x[rows_single, warm:] += drop
            x[rows_improved, warm - 20 :] -= drop
            x[rows_improved, warm:] += drop
            fired, _ = _suite_nights(x, group_of, warm, warm + 5)
            for kind, gs in (("group", whole), ("single", single), ("after improvement", improved)):
                first = np.full(len(gs), 99)
                for k, night in enumerate(fired, start=1):
                    hit = np.array([(int(g), "regression") in night for g in gs])
                    first = np.where(hit & (first == 99), k, first)
                for k in range(1, 6):
                    hits[kind][k] += np.sum(first <= k)
                totals[kind] += len(gs)
        for kind in hits:
            total = totals[kind]
            row = [name, kind]
            for k in (2, 3, 5):
                row.append(pct(hits[kind][k] / total, binomial_ci(hits[kind][k], total)))
            row.append(f"{hits[kind][3] / total / 0.604:.0%}")
            rows.append(row)
    table(
        [
            "noise",
            "what dropped",
            "by night 2",
            "by night 3",
            "by night 5",
            "night 3 / bound 60.4%",
        ],
        rows,
    )


def cases(rng, count):
    print("## The cases of issue 11\n")
    rows = []
    # An older improvement must not hide a later regression.
    x = np.concatenate(
        [
            noise(rng, count, 20, 0.15),
            1.3 * noise(rng, count, 30, 0.15),
            noise(rng, count, 5, 0.15),
        ],
        axis=1,
    )
    kinds = [v.verdict for v in judge(x)]
    rows.append(["20 nights at 100, 30 at 130, 5 back at 100 (CV 15%)", _counts(kinds)])
    # A level that recovered 10 nights ago.
    x = np.concatenate(
        [
            noise(rng, count, 30, 0.15),
            0.8 * noise(rng, count, 20, 0.15),
            noise(rng, count, 10, 0.15),
        ],
        axis=1,
    )
    kinds = [v.verdict for v in judge(x)]
    rows.append(["30 at 100, 20 at 80, 10 back at 100 (CV 15%)", _counts(kinds)])
    # Recovered: reported once (among the series whose regression was reported).
    for cv in (0.05, 0.15):
        x = np.concatenate(
            [
                noise(rng, count // 4, 30, cv),
                0.8 * noise(rng, count // 4, 20, cv),
                noise(rng, count // 4, 30, cv),
            ],
            axis=1,
        )
        nights = judge_nights(x, 50)
        once = [
            sum(v.verdict == "recovered" for v in s[20:])
            for s in nights
            if any(v.verdict == "regression" for v in s[:20])
        ]
        rows.append(
            [
                f"30 at 100, 20 at 80, 30 back (CV {cv:.0%}), series whose regression "
                f"was notified ({len(once)} of {len(nights)}): 'recovered' verdicts in "
                "the 30 nights after",
                _counts(once),
            ]
        )
    # An old regression: notified once, then ongoing.
    x = np.concatenate(
        [noise(rng, count // 4, 50, 0.15), 0.7 * noise(rng, count // 4, 60, 0.15)], axis=1
    )
    nights = judge_nights(x, 59)
    new = [sum(v.verdict == "regression" for v in s) for s in nights]
    last = [s[-1].verdict for s in nights]
    rows.append(
        ["50 at 100, then 60 at 70 (CV 15%): 'regression' verdicts over nights 2-60", _counts(new)]
    )
    rows.append(["same, the verdict on night 60", _counts(last)])
    # A single bad night.
    for cv in (0.15, 0.40):
        for tail in ([0.05], [0.05, 1.0], [0.3, 1.0]):
            x = noise(rng, count, 40 + len(tail), cv)
            x[:, 40:] *= np.array(tail)
            kinds = [v.verdict for v in judge(x)]
            rows.append([f"CV {cv:.0%}, 40 nights then {tail} of the level", _counts(kinds)])
    # Lower is better: a doubled time.
    x = noise(rng, count, 33, 0.15)
    x[:, 30:] *= 2
    kinds = [v.verdict for v in judge(x, better="lower")]
    rows.append(["a time (lower is better) doubled for 3 nights, CV 15%", _counts(kinds)])
    table(["history", "verdicts"], rows)


def _counts(items):
    values, counts = np.unique(np.asarray(items, dtype=object).astype(str), return_counts=True)
    order = np.argsort(-counts)
    total = counts.sum()
    return ", ".join(f"{values[i]} {counts[i] / total:.1%}" for i in order)


def acceptance(rng, count):
    print("## Acceptance: runs, not repetitions\n")
    print(
        "Each run has its own level (run-to-run CV 15%) and repetitions around it "
        f"(within-run CV 5%); {count} comparisons per cell.  'decided' = better or worse.\n"
    )
    rows = []
    for runs, reps in ((1, 8), (2, 3), (3, 3), (5, 3), (10, 3), (20, 3)):
        for change in (0.0, 0.2):
            decided = worse = 0
            needed = []
            for _ in range(count):
                before = _runs(rng, runs, reps, 1.0)
                after = _runs(rng, runs, reps, 1.0 - change)
                v = verdicts.acceptance(before, after, "higher")
                decided += v.verdict in ("better", "worse")
                worse += v.verdict == "worse"
                needed.append(v.runs_needed_after)
            rows.append(
                [
                    f"{runs} x {reps}",
                    f"{change:.0%}",
                    pct(decided / count),
                    pct(worse / count),
                    f"{np.median(needed):.0f}",
                ]
            )
    table(
        ["runs x repetitions a side", "true drop", "decided", "worse", "median runs still needed"],
        rows,
    )


def _runs(rng, runs, reps, level):
    sigma_run = math.sqrt(math.log1p(0.15**2))
    sigma_rep = math.sqrt(math.log1p(0.05**2))
    out = []
    for _ in range(runs):
        centre = level * math.exp(sigma_run * rng.standard_normal())
        out.append(list(1000 * centre * np.exp(sigma_rep * rng.standard_normal(reps))))
    return out


def timing(rng):
    print("## Time\n")
    print(
        f"nightly_many on {os.cpu_count()} cores, 100-night histories (CV 15%; 5% of the "
        "figures with a 20% drop 10 nights ago); three repetitions: min / median / max.\n"
    )
    rows = []
    for figures in (1000, 10000):
        x = noise(rng, figures, 100, 0.15)
        x[: figures // 20, 90:] *= 0.8
        ids = [f"r{i}" for i in range(100)]
        histories = [
            verdicts.History(list(1000 * r), ids, "higher", f"s{j}", "bw", "MiB/s")
            for j, r in enumerate(x)
        ]
        times = []
        for _ in range(3):
            start = time.perf_counter()
            verdicts.nightly_many(histories)
            times.append(time.perf_counter() - start)
        times.sort()
        rows.append(
            [
                figures,
                f"{times[0]:.2f} / {times[1]:.2f} / {times[2]:.2f} s",
                f"{1000 * times[1] / figures:.2f} ms",
            ]
        )
    table(["figures", "time", "per figure"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--series", type=int, default=4000, help="simulated series per cell (default 4000)"
    )
    parser.add_argument("--quick", action="store_true", help="500 series per cell")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--weeks",
        type=int,
        default=3,
        help="weeks of nights judged by the suite layer per noise model (default 3)",
    )
    parser.add_argument(
        "--only",
        default="bound,suite",
        help="parts to run (default bound,suite: about 2 minutes on an idle "
        "machine); the per-figure tables: false-alarms,power,cases,"
        "acceptance,timing (many minutes)",
    )
    parser.add_argument(
        "--calibrate",
        type=int,
        metavar="REPLICATES",
        help="recompute the critical values (both sets: independent and phi 0.5 "
        "noise, and with phi 0.8 too) with this many series per length and noise "
        "(40000 for the tables in verdicts.py; about 10 minutes) and print them "
        "beside the module's",
    )
    args = parser.parse_args()
    if args.calibrate:
        names = ("CRITICAL_RECENT", "CRITICAL_LATER", "CRITICAL_SPLIT", "CRITICAL_REFERENCE")
        for suffix, correlations in (("", (0.0, 0.5)), ("_CORRELATED", (0.0, 0.5, 0.8))):
            tables = verdicts.calibrate(replicates=args.calibrate, correlations=correlations)
            for name, table in zip(names, tables):
                name += suffix
                print(f"{name}\n  now:        {table}\n  in module:  {getattr(verdicts, name)}")
        return
    count = 500 if args.quick else args.series
    rng = np.random.default_rng(args.seed)
    parts = {
        "bound": lambda: bound(),
        "false-alarms": lambda: false_alarms(rng, count),
        "power": lambda: power(rng, max(count // 2, 200)),
        "cases": lambda: cases(rng, max(count // 4, 200)),
        "acceptance": lambda: acceptance(rng, max(count // 4, 200)),
        "timing": lambda: timing(rng),
        "suite": lambda: suite_layer(rng, args.weeks),
    }
    for name in args.only.split(","):
        if name not in parts:
            sys.exit(f"--only {name}: expected some of {', '.join(parts)}")
        start = time.perf_counter()
        parts[name]()
        print(f"_({name}: {time.perf_counter() - start:.0f} s)_\n", flush=True)


if __name__ == "__main__":
    main()
