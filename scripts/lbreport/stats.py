"""The few statistics the scripts share: medians and MADs, geometric means of ratios, a
least-squares line, rank correlation and the Mann-Whitney U test (scipy's)."""

from __future__ import annotations

import math
import statistics
from math import comb

MAD_TO_SIGMA = 1.4826  # MAD x this estimates the standard deviation of normal data


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def mad(xs):
    """Median absolute deviation, scaled to estimate a standard deviation."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    m = statistics.median(xs)
    return MAD_TO_SIGMA * statistics.median(abs(x - m) for x in xs)


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def pct_change(ratio):
    return None if ratio is None else 100.0 * (ratio - 1.0)


def linear_fit(xs, ys):
    """y = intercept + slope * x by least squares -> (intercept, slope, r2); None with < 2 distinct x."""
    pts = [(float(x), float(y)) for x, y in zip(xs, ys) if x is not None and y is not None]
    if len({x for x, _ in pts}) < 2:
        return None
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    sxy = sum((x - mx) * (y - my) for x, y in pts)
    slope = sxy / sxx
    intercept = my - slope * mx
    ss_tot = sum((y - my) ** 2 for _, y in pts)
    ss_res = sum((y - intercept - slope * x) ** 2 for x, y in pts)
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return intercept, slope, r2


def _ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(xs, ys):
    """Spearman's rank correlation; None with fewer than 3 pairs or a constant side."""
    pts = [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None]
    if len(pts) < 3:
        return None
    rx, ry = _ranks([p[0] for p in pts]), _ranks([p[1] for p in pts])
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def min_one_sided_p(n1: int, n2: int) -> float:
    """The smallest p-value an exact one-sided Mann-Whitney U test can give for these sizes:
    complete separation, 1 / C(n1 + n2, n1). With 3 vs 3 repetitions it is 0.05."""
    return 1.0 / comb(n1 + n2, n1)


def mann_whitney_greater(b, a):
    """One-sided Mann-Whitney U test that values in b tend to be larger than in a -> p-value."""
    from scipy.stats import mannwhitneyu  # python3-scipy

    res = mannwhitneyu(b, a, alternative="greater", method="auto")
    return float(res.pvalue)
