"""scripts/compare: two results files, case by case.

    scripts/compare A.json B.json [--threshold 0.05] [--alpha 0.05] [--max-load 1.0] [--all]
                                  [--csv FILE] [--plot FILE.png] [--cross-machine]

For every case measured in both files: the ratio B ÷ A of the median time, of the host and
device memory peaks and of the CPU and GPU utilisation, and, where both files have
repetitions, a one-sided Mann-Whitney U test that B's values are larger than A's (the test
Google Benchmark's tools/compare.py runs on time; here on every metric).

Verdicts on time — a case moved by more than --threshold (a fraction: 0.05 = 5 %) is
  * a regression (or improvement) when the U test says so: p ≤ --alpha;
  * "cannot judge", with the reason, when it cannot say: too few repetitions (the exact test's
    smallest p is 1/C(n1+n2, n1): 2 vs 2 never reaches 0.05, 3 vs 3 only by complete
    separation; use --repetitions 5 or more), a noisy case (the repetitions overlap: p > alpha,
    cv given), a change within the two runs' noise (the ratio within 3 robust standard
    deviations of every case's log time ratio from their median: repetitions are taken back to
    back, so what moves between runs on a shared machine shows only across the cases), or a busy
    machine (the 1-minute load average at a run's start above --max-load per core).
Memory peaks (host, device) are a regression when larger by more than the threshold and by at
least 256 KiB (resident memory moves in pages), and, where the U test can decide, significant.
A case that passed in A and failed (or ran out of memory) in B is a regression. Utilisation is
reported, not judged.

A run-wide shift — the geometric mean of the time ratios beyond the threshold with at least
two thirds of the cases moved the same way — is reported once, as a machine change (clock,
governor, microcode, a neighbour), and the cases are judged relative to that factor, so one
change of the machine is not thousands of regressions.

Files from two machines (layerbench_machine, docs/results-format.md), or from one machine name
on two CPUs (layerbench_cpu_signature: a VM moved to another host), are not compared unless
--cross-machine is given: their ratios measure the machines, not the code.

Exit status: 0 no regression (cases that cannot be judged say why); 1 regression(s) or a
run-wide shift; 2 a file could not be read, bad arguments, different machines, or no case in
common.
"""

from __future__ import annotations

import argparse
import sys

from . import stats
from .analysis import MEMORY_FLOOR_BYTES
from .results import LoadError, cpu_change, load
from .table import Table, fmt_mb, fmt_num, fmt_pct, fmt_time
from .verdicts import (DEFAULT_MAX_LOAD_PER_CORE, NOISE_MAX_BAND, finite_fraction, noise_text, run_noise, run_shift,
                       steadiness_text, too_noisy, within_noise)

# (key, label, gated, formatter of one value)
METRICS = [
    ("time", "time", True, fmt_time),
    ("lb_host_peak_bytes", "host peak MB", True, fmt_mb),
    ("lb_device_peak_bytes", "device peak MB", True, fmt_mb),
    ("lb_cpu_util_avg", "CPU util %", False, fmt_num),
    ("lb_gpu_util_avg", "GPU util %", False, fmt_num),
]


def _alpha(text):
    v = finite_fraction(text, "--alpha")
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"--alpha {text!r}: must be between 0 and 1")
    return v


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints the usage too)
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    p = _Parser(prog="compare", description="Compare two layerbench results files case by case.")
    p.add_argument("a", help="baseline results file (.json, .json.gz or .jsonl)")
    p.add_argument("b", help="contender results file")
    p.add_argument("--threshold", type=lambda t: finite_fraction(t, "--threshold"), default=0.05,
                   help="a change is larger than this fraction (default 0.05 = 5 %%)")
    p.add_argument("--alpha", type=_alpha, default=0.05, help="significance level of the U test (default 0.05)")
    p.add_argument("--max-load", type=lambda t: finite_fraction(t, "--max-load"), default=DEFAULT_MAX_LOAD_PER_CORE,
                   help="busiest start (1-minute load average per core) at which a run is judged (default 1.0)")
    p.add_argument("--cross-machine", action="store_true", help="compare files from different machines")
    p.add_argument("--all", action="store_true", help="print every metric of every case, not only time and changes")
    p.add_argument("--csv", metavar="FILE", help="also write every comparison as CSV")
    p.add_argument("--plot", metavar="FILE.png", help="also draw the time ratios, sorted, with their verdicts")
    return p.parse_args(argv)


def values(case, key):
    return case.times_us() if key == "time" else case.values(key)


def median_value(case, key):
    return case.time_us if key == "time" else case.value(key)


def _cv_text(a, b):
    cvs = [f"{x.cv:.1%}" if x.cv is not None else "—" for x in (a, b)]
    return f"cv {cvs[0]} / {cvs[1]}"


def compare_metric(a, b, key, gated, threshold, alpha, busy="", shift=1.0, noise=None):
    """-> dict with medians, ratio, p (or None), tested, verdict ('regression', 'improvement',
    'cannot judge' or ''), and why (the reason for 'cannot judge'). `shift` is a run-wide
    factor the time ratios are judged against (A's times scaled by it); `noise`, run_noise() of
    every case's time ratio: a time ratio within it cannot be judged."""
    ma, mb = median_value(a, key), median_value(b, key)
    if ma is None or mb is None:
        return None
    va, vb = values(a, key), values(b, key)
    scale = shift if key == "time" else 1.0
    ratio = mb / ma if ma > 0 else (1.0 if mb == 0 else None)
    judged_ratio = None if ratio is None else ratio / scale
    p = p_better = None
    enough = len(va) >= 2 and len(vb) >= 2
    tested = enough and stats.min_one_sided_p(len(va), len(vb)) <= alpha
    if enough:
        scaled_a = [v * scale for v in va]
        p = stats.mann_whitney_greater(vb, scaled_a)
        p_better = stats.mann_whitney_greater(scaled_a, vb)
    verdict, why = "", ""
    if gated and judged_ratio is not None:
        big_enough = key == "time" or abs(mb - ma) >= MEMORY_FLOOR_BYTES
        worse = judged_ratio > 1 + threshold and big_enough
        better = judged_ratio < 1 - threshold and big_enough
        p_dir = p if worse else p_better
        if not (worse or better):
            pass
        elif key != "time":
            if not tested or p_dir <= alpha:  # memory moves in steps, not noise: the threshold decides
                verdict = "regression" if worse else "improvement"
        elif busy:
            verdict, why = "cannot judge", f"busy machine: {busy}"
        elif not tested:
            least = stats.min_one_sided_p(len(va), len(vb)) if enough else 1.0
            verdict, why = "cannot judge", (f"too few repetitions ({len(va)} vs {len(vb)}): the U test cannot go "
                                            f"below p = {least:.3g} > alpha")
        elif p_dir <= alpha and too_noisy(noise):
            verdict, why = "cannot judge", (f"the two runs are too noisy to judge one case: {noise_text(noise)}, "
                                            f"past ±{NOISE_MAX_BAND:.0%}, where unchanged cases stray further")
        elif p_dir <= alpha and within_noise(ratio, noise):
            verdict, why = "cannot judge", f"within the two runs' noise: {noise_text(noise)}"
        elif p_dir <= alpha:
            verdict = "regression" if worse else "improvement"
        else:
            verdict, why = "cannot judge", f"noisy: the repetitions overlap (p = {p_dir:.3g}, {_cv_text(a, b)})"
    return {"a": ma, "b": mb, "ratio": ratio, "p": p, "tested": tested, "n": (len(va), len(vb)), "verdict": verdict,
            "why": why}


def time_ratios(a_run, b_run, common):
    out = []
    for key in common:
        a, b = a_run.cases[key], b_run.cases[key]
        if a.ok and b.ok and a.time_us and b.time_us:
            out.append(b.time_us / a.time_us)
    return out


def run(a_run, b_run, threshold, alpha, show_all, busy="", shift=None, noise=None):
    table = Table([("case", "case"), ("metric", "metric"), ("A", "a"), ("B", "b"), ("B ÷ A", "ratio"),
                   ("U test p (B > A)", "p_value"), ("repetitions", "repetitions"), ("verdict", "verdict")],
                  right=[False, False, True, True, True, True, True, False])
    common = sorted(set(a_run.cases) & set(b_run.cases))
    regressions, improvements, newly_failing, fixed, unjudged = [], [], [], [], []
    ratios = []  # (case label, time ratio, verdict) for the plot
    factor = shift[0] if shift else 1.0
    for key in common:
        a, b = a_run.cases[key], b_run.cases[key]
        if a.ok and not b.ok:
            if b.status in ("failed", "out_of_memory"):
                newly_failing.append(b)
                table.add([b.label, "status", a.status, b.status, "—", "—", "—", "regression"],
                          [b.label, "status", a.status, b.status, None, None, None, "regression"])
            continue
        if not a.ok and b.ok:
            fixed.append(b)
            continue
        if not (a.ok and b.ok):
            continue
        for mkey, label, gated, fmt in METRICS:
            r = compare_metric(a, b, mkey, gated, threshold, alpha, busy, factor, noise)
            if r is None:
                continue
            if mkey == "time" and r["ratio"]:
                ratios.append((b.label, r["ratio"], r["verdict"]))
            if r["verdict"] == "regression":
                regressions.append((b, label, r))
            elif r["verdict"] == "improvement":
                improvements.append((b, label, r))
            elif r["verdict"] == "cannot judge":
                unjudged.append((b, label, r))
            changed = r["ratio"] is not None and abs(r["ratio"] - 1) > threshold
            if not (show_all or mkey == "time" or r["verdict"] or (changed and gated)):
                continue
            verdict = r["verdict"] + (f" ({r['why']})" if r["why"] else "")
            table.add([b.label, label, fmt(r["a"]), fmt(r["b"]),
                       "—" if r["ratio"] is None else f"{r['ratio']:.3f}",
                       "—" if r["p"] is None else f"{r['p']:.3g}", f"{r['n'][0]} vs {r['n'][1]}", verdict],
                      [b.label, label, r["a"], r["b"], r["ratio"], r["p"], f"{r['n'][0]} {r['n'][1]}", verdict])
    summary = {
        "common": len(common), "only_a": len(set(a_run.cases) - set(b_run.cases)),
        "only_b": len(set(b_run.cases) - set(a_run.cases)), "regressions": regressions,
        "improvements": improvements, "newly_failing": newly_failing, "fixed": fixed, "unjudged": unjudged,
        "geomean_time": stats.geomean([r for _, r, _ in ratios]), "ratios": ratios,
    }
    return table, summary


def _reasons(unjudged):
    counts = {}
    for _, _, r in unjudged:
        head = r["why"].split(":")[0]
        counts[head] = counts.get(head, 0) + 1
    return ", ".join(f"{n} {why}" for why, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    runs = []
    for path in (args.a, args.b):
        try:
            r = load(path)
        except LoadError as e:
            print(f"compare: {e}", file=sys.stderr)
            return 2
        for w in r.warnings:
            print(f"compare: warning: {w}", file=sys.stderr)
        runs.append(r)
    a_run, b_run = runs
    if a_run.machine != b_run.machine and not args.cross_machine:
        print(f"compare: A is from machine {a_run.machine}, B from {b_run.machine}: their ratios would measure the "
              "machines; give --cross-machine to compare them anyway", file=sys.stderr)
        return 2
    cpu = cpu_change(a_run, b_run)
    if cpu and not args.cross_machine:
        print(f"compare: A and B are both machine {a_run.machine}, but {cpu}: their ratios would measure the "
              "CPUs; give --cross-machine to compare them anyway", file=sys.stderr)
        return 2
    common = set(a_run.cases) & set(b_run.cases)
    if not common:
        print(f"compare: no case in common ({len(a_run.cases)} in A, {len(b_run.cases)} in B): nothing to compare",
              file=sys.stderr)
        return 2
    busy = "; ".join(f"{which} {why}" for which, why in (("A", a_run.busy(args.max_load)),
                                                          ("B", b_run.busy(args.max_load))) if why)
    ratios = time_ratios(a_run, b_run, sorted(common))
    shift = None if busy else run_shift(ratios, args.threshold)
    noise = None if busy else run_noise(ratios)
    table, s = run(a_run, b_run, args.threshold, args.alpha, args.all, busy, shift, noise)
    print(f"compare: A = {args.a}, B = {args.b}; threshold {args.threshold:.0%}, alpha {args.alpha}")
    if a_run.machine != b_run.machine or cpu:
        print(f"compare: across machines ({a_run.machine} vs {b_run.machine}"
              + (f"; {cpu}" if cpu else "") + "): the ratios include the machines' difference")
    print(table.markdown())
    if args.csv:
        with open(args.csv, "w", encoding="utf-8") as f:
            f.write(table.csv())
    if args.plot:
        from .plots import ratio_plot

        ratio_plot(s["ratios"], args.threshold, args.plot,
                   f"{b_run.name} ÷ {a_run.name} ({b_run.machine})", shift[0] if shift else None)
    g = s["geomean_time"]
    print(f"time B ÷ A over the {s['common']} cases in both (geometric mean): "
          f"{'—' if g is None else f'{g:.3f} ({fmt_pct(stats.pct_change(g), True)})'}")
    if busy:
        print(f"compare: cannot judge time: busy machine ({busy}); memory is still judged")
    if shift:
        print(f"compare: run-wide shift: every case ×{shift[0]:.3f} ({shift[1]} of {shift[2]} cases moved by more "
              f"than {args.threshold:.0%} the same way) — a machine change (clock, governor, microcode, a busy "
              "neighbour) or a change that slows everything, reported once; cases are judged relative to it")
    for which, r in (("A", a_run), ("B", b_run)):
        if steadiness_text(r):
            print(f"compare: {which}'s machine: {steadiness_text(r)}")
    if noise and too_noisy(noise):
        print(f"compare: the two runs' noise, case to case: {noise_text(noise)}: past ±{NOISE_MAX_BAND:.0%}, no "
              "case's time is judged (on such a machine unchanged cases stray beyond any band; compare runs of a "
              "quiet one, or the nightly's confirmed verdicts)")
    elif noise:
        print(f"compare: the two runs' noise, case to case: {noise_text(noise)}; a time change within it cannot "
              "be judged")
    if s["only_a"] or s["only_b"]:
        print(f"cases only in A: {s['only_a']}, only in B: {s['only_b']} (not compared)")
    if s["fixed"]:
        print(f"cases that failed in A and pass in B: {len(s['fixed'])}")
    if s["unjudged"]:
        print(f"compare: cannot judge {len(s['unjudged'])} changes ({_reasons(s['unjudged'])})")
    n = len(s["regressions"]) + len(s["newly_failing"])
    print(f"compare: {n} regressions ({len(s['regressions'])} slower or bigger, {len(s['newly_failing'])} newly "
          f"failing), {len(s['improvements'])} improvements")
    return 1 if n or shift else 0
