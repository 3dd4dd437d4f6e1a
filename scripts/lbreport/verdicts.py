"""What compare and the dashboard share about judging: when a machine was too busy to judge,
when a whole run moved by one factor (a machine change, not thousands of regressions), and how
noisy two runs were case to case (a change inside that noise is not a verdict)."""

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
# The runs' own noise: a case's time ratio is judged only when it lies more than NOISE_K robust
# standard deviations of every case's log ratio from their median, and at least NOISE_MIN_CASES
# cases say how large that spread is. Repetitions taken back to back (the default) have a
# spread (the U test's, a case's cv) that misses what moves between runs on a shared machine — a
# neighbour, the memory bandwidth, the frequency; the cases of the same two runs measure it
# (shuffled repetitions see more of it: the dashboard's rep_noise).
# Measured: two nightly runs on the 2-core Zen 3 VM while other work ran spread 0.12-0.20
# (log), and their U tests called 9-24 of 72 unchanged cases regressions.
NOISE_K = 3.0
NOISE_MIN_CASES = 8
# Past this band (± NOISE_MAX_BAND) two runs judge no single case's time: their noise is not
# a narrow bell with a few stragglers but heavy-tailed, and a kσ gate passes noise. Measured
# on the 2-core Zen 3 VM (2026-12-01, quiet): three nightly runs of one build, 2.5 min apart,
# had bands of ±33-74 % and unchanged cases 5.4 robust SDs out (dense.onednn.default
# mobilenet_fc at 2 threads 2.03×); back-to-back runs of one build ±24-46 %, 1.39× at 4 SDs.
# Below it (a quiet, dedicated machine), the kσ gate above applies.
NOISE_MAX_BAND = 0.25


# `layerbench run --steadiness`: one core's FMA throughput and its clock, timed in ~20 ms
# windows before the cases and before each case. A throughput that moves this many times
# more than the clock is another workload on the same core (a VM's SMT sibling): the clock
# probe is the yardstick of the probe's own jitter, measured at the same time, so no
# absolute bound is assumed.
# Measured on the 2-core Zen 3 VM (2026-12-01): quiet stretches 1.0-4.2 % throughput against
# 0.8-3.1 % clock; a busy one 11.7 % against 3.0 % (windows up to 1.7x the median).
SHARED_CORE_RATIO = 3.0


def steadiness_text(run) -> str:
    """One line on how steady the machine was over the run ("" when not probed)."""
    st = run.steadiness
    if st is None:
        return ""
    fma, clock = st["fma_spread"], st["clock_spread"]
    slowest = st.get("fma_slowest")
    text = (f"one core's FMA throughput varied ±{fma:.1%} (robust SD of {st['windows']} windows over the run"
            + (f", slowest {slowest:.2f}× the median" if isinstance(slowest, (int, float)) else "")
            + f"), its clock ±{clock:.1%}")
    if fma > SHARED_CORE_RATIO * max(clock, 1e-4):
        return text + ": other work shares the core (the throughput moved, the clock did not)"
    return text + ": the core was steady"


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


def run_noise(ratios):
    """The case-to-case noise of two runs from their cases' time ratios -> (median, sigma, n):
    the median and 1.4826 x the MAD of log(ratio) (a robust standard deviation); None with fewer
    than NOISE_MIN_CASES ratios."""
    logs = [math.log(r) for r in ratios if r is not None and r > 0 and math.isfinite(r)]
    if len(logs) < NOISE_MIN_CASES:
        return None
    centre = stats.median(logs)
    return centre, stats.MAD_TO_SIGMA * stats.median([abs(x - centre) for x in logs]), len(logs)


def within_noise(ratio, noise, k=NOISE_K):
    """Whether a ratio lies within k robust standard deviations of the runs' median ratio."""
    if noise is None or ratio is None or ratio <= 0:
        return False
    centre, sigma, _ = noise
    return abs(math.log(ratio) - centre) <= k * sigma


def too_noisy(noise, k=NOISE_K):
    """Whether two runs are too noisy to judge any single case's time (band past NOISE_MAX_BAND)."""
    return noise is not None and noise_band(noise, k) > NOISE_MAX_BAND


def noise_band(noise, k=NOISE_K):
    """The half-width of the band k robust SDs of log(ratio) make, as a fraction of the value
    (exp(k sigma) - 1): the one definition compare's gate and the dashboard's band both use.
    None without a noise estimate."""
    return None if noise is None else math.exp(k * noise[1]) - 1


def noise_text(noise, k=NOISE_K):
    """'±X % (3 robust SDs of N cases' ratios)': the band within_noise() accepts, for a reason."""
    return f"±{noise_band(noise, k):.0%} ({k:g} robust SDs of {noise[2]} cases' time ratios)"
