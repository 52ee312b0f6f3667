"""What the side-by-side benchmarks share: interleaved pairs of one tool against another,
summarised as the geometric mean of their ratios with a bootstrap interval."""

import math
import os
import random
import statistics

FIO_IOMEM_HELP = ("fio's --iomem (default malloc); mmaphuge puts fio's buffers on huge pages, "
                  "as the kernel's are (needs hugetlb pages: sysctl vm.nr_hugepages)")


def ratio_interval(pairs, resamples=10000, seed=1):
    """Geometric mean of a/b over the pairs (a, b) and its 95% percentile bootstrap
    interval: (mean, low, high)."""
    logs = [math.log(a / b) for a, b in pairs]
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(logs, k=len(logs))) for _ in range(resamples))
    return (math.exp(statistics.fmean(logs)), math.exp(means[int(0.025 * resamples)]),
            math.exp(means[int(0.975 * resamples) - 1]))


def spread(values, width=7):
    """min, median and max of the values, in columns of `width`."""
    return (f"{min(values):{width}.0f} {statistics.median(values):{width}.0f} "
            f"{max(values):{width}.0f}")


def goal_verdict(low, high, goal=0.95):
    """Whether the interval [low, high] of a ratio shows the goal met, missed, or neither."""
    return "met" if low >= goal else "not shown" if high >= goal else "missed"


def load_average():
    """The 1, 5 and 15 minute load averages as printed with every figure: timings on a
    shared machine mean little without them."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} cores)"
