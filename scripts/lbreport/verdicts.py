"""What compare and the dashboard share about judging: when a machine was too busy to judge,
and when a whole run moved by one factor (a machine change, not thousands of regressions)."""

from __future__ import annotations

import math

from . import stats

# The 1-minute load average at the start, per core, above which a run is not judged: other
# work sharing the cores moves a benchmark's numbers more than most kernel changes.
DEFAULT_MAX_LOAD_PER_CORE = 1.0
# A run-wide shift: the geometric mean of every case's ratio is beyond the threshold and at
# least this share of the cases moved beyond it the same way.
SHIFT_SHARE = 2 / 3
SHIFT_MIN_CASES = 5


def finite_fraction(text: str, name: str):
    """argparse type for a fraction >= 0 (a threshold, a change): NaN, inf and negatives refused."""
    import argparse

    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} {text!r}: not a number") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"{name} {text!r}: must be a finite number >= 0")
    return v


def run_shift(ratios, threshold):
    """-> (factor, moved, total) when the ratios show one run-wide factor, else None."""
    rs = [r for r in ratios if r is not None and r > 0]
    if len(rs) < SHIFT_MIN_CASES:
        return None
    g = stats.geomean(rs)
    if g is None or abs(g - 1) <= threshold:
        return None
    moved = sum(1 for r in rs if (r > 1 + threshold if g > 1 else r < 1 - threshold))
    if moved < SHIFT_SHARE * len(rs):
        return None
    return g, moved, len(rs)
