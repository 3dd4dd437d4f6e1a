"""scripts/compare: two results files, case by case.

    scripts/compare A.json B.json [--threshold 0.05] [--alpha 0.05] [--all] [--csv FILE]

For every case measured in both files: the ratio B ÷ A of the median time, of the host and
device memory peaks and of the CPU and GPU utilisation, and, where both files have
repetitions, a one-sided Mann-Whitney U test that B's values are larger than A's (the test
Google Benchmark's tools/compare.py runs on time; here on every metric).

A regression — exit status 1 — is a case whose time, host peak or device peak in B is
  * larger than A's by more than --threshold (a fraction: 0.05 = 5 %), and
  * significantly larger: U test p ≤ --alpha. With few repetitions the test cannot reach
    alpha (3 vs 3 repetitions: only complete separation gives p = 0.05; 2 vs 2 never does);
    such a case is judged on the threshold alone and marked "untested";
  * for memory, also larger by at least 256 KiB (resident memory moves in pages);
or a case that passed in A and failed (or ran out of memory) in B.
Utilisation is reported, not judged: more CPU or GPU use is not better or worse by itself.

Exit status: 0 no regression; 1 regression(s); 2 a file could not be read or bad arguments.
"""

from __future__ import annotations

import argparse
import sys

from . import stats
from .analysis import MEMORY_FLOOR_BYTES
from .results import LoadError, load
from .table import Table, fmt_mb, fmt_num, fmt_pct, fmt_time

# (key, label, gated, formatter of one value)
METRICS = [
    ("time", "time", True, fmt_time),
    ("lb_host_peak_bytes", "host peak MB", True, fmt_mb),
    ("lb_device_peak_bytes", "device peak MB", True, fmt_mb),
    ("lb_cpu_util_avg", "CPU util %", False, fmt_num),
    ("lb_gpu_util_avg", "GPU util %", False, fmt_num),
]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="compare", description="Compare two layerbench results files case by case.")
    p.add_argument("a", help="baseline results file (.json or .jsonl)")
    p.add_argument("b", help="contender results file")
    p.add_argument("--threshold", type=float, default=0.05,
                   help="a regression is larger than this fraction (default 0.05 = 5 %%)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of the U test (default 0.05)")
    p.add_argument("--all", action="store_true", help="print every metric of every case, not only time and changes")
    p.add_argument("--csv", metavar="FILE", help="also write every comparison as CSV")
    return p.parse_args(argv)


def values(case, key):
    return case.times_us() if key == "time" else case.values(key)


def median_value(case, key):
    return case.time_us if key == "time" else case.value(key)


def compare_metric(a, b, key, gated, threshold, alpha):
    """-> dict with medians, ratio, p (or None), tested, verdict ('regression', 'improvement', '')."""
    ma, mb = median_value(a, key), median_value(b, key)
    if ma is None or mb is None:
        return None
    va, vb = values(a, key), values(b, key)
    ratio = mb / ma if ma > 0 else (1.0 if mb == 0 else None)
    p = None
    tested = len(va) >= 2 and len(vb) >= 2 and stats.min_one_sided_p(len(va), len(vb)) <= alpha
    if len(va) >= 2 and len(vb) >= 2:
        p = stats.mann_whitney_greater(vb, va)
        p_better = stats.mann_whitney_greater(va, vb)
    verdict = ""
    if gated and ratio is not None:
        big_enough = key == "time" or abs(mb - ma) >= MEMORY_FLOOR_BYTES
        if ratio > 1 + threshold and big_enough and (not tested or p <= alpha):
            verdict = "regression"
        elif ratio < 1 - threshold and big_enough and (not tested or p_better <= alpha):
            verdict = "improvement"
    return {"a": ma, "b": mb, "ratio": ratio, "p": p, "tested": tested, "n": (len(va), len(vb)), "verdict": verdict}


def run(a_run, b_run, threshold, alpha, show_all):
    table = Table([("case", "case"), ("metric", "metric"), ("A", "a"), ("B", "b"), ("B ÷ A", "ratio"),
                   ("U test p (B > A)", "p_value"), ("repetitions", "repetitions"), ("verdict", "verdict")],
                  right=[False, False, True, True, True, True, True, False])
    common = sorted(set(a_run.cases) & set(b_run.cases))
    regressions, improvements, newly_failing, fixed = [], [], [], []
    time_ratios = []
    untested = 0
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
            r = compare_metric(a, b, mkey, gated, threshold, alpha)
            if r is None:
                continue
            if mkey == "time" and r["ratio"]:
                time_ratios.append(r["ratio"])
            if r["verdict"] == "regression":
                regressions.append((b, label, r))
            elif r["verdict"] == "improvement":
                improvements.append((b, label, r))
            if r["verdict"] and not r["tested"]:
                untested += 1
            changed = r["ratio"] is not None and abs(r["ratio"] - 1) > threshold
            if not (show_all or mkey == "time" or r["verdict"] or (changed and gated)):
                continue
            verdict = r["verdict"] + (" (untested)" if r["verdict"] and not r["tested"] else "")
            table.add([b.label, label, fmt(r["a"]), fmt(r["b"]),
                       "—" if r["ratio"] is None else f"{r['ratio']:.3f}",
                       "—" if r["p"] is None else f"{r['p']:.3g}", f"{r['n'][0]} vs {r['n'][1]}", verdict],
                      [b.label, label, r["a"], r["b"], r["ratio"], r["p"], f"{r['n'][0]} {r['n'][1]}", verdict])
    summary = {
        "common": len(common), "only_a": len(set(a_run.cases) - set(b_run.cases)),
        "only_b": len(set(b_run.cases) - set(a_run.cases)), "regressions": regressions,
        "improvements": improvements, "newly_failing": newly_failing, "fixed": fixed,
        "geomean_time": stats.geomean(time_ratios), "untested": untested,
    }
    return table, summary


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
    table, s = run(runs[0], runs[1], args.threshold, args.alpha, args.all)
    print(f"compare: A = {args.a}, B = {args.b}; threshold {args.threshold:.0%}, alpha {args.alpha}")
    print(table.markdown())
    if args.csv:
        with open(args.csv, "w", encoding="utf-8") as f:
            f.write(table.csv())
    g = s["geomean_time"]
    print(f"time B ÷ A over the {s['common']} cases in both (geometric mean): "
          f"{'—' if g is None else f'{g:.3f} ({fmt_pct(stats.pct_change(g), True)})'}")
    if s["only_a"] or s["only_b"]:
        print(f"cases only in A: {s['only_a']}, only in B: {s['only_b']} (not compared)")
    if s["fixed"]:
        print(f"cases that failed in A and pass in B: {len(s['fixed'])}")
    if s["untested"]:
        print(f"{s['untested']} verdicts rest on the threshold alone: too few repetitions for the U test to reach "
              f"alpha {args.alpha} (3 vs 3 is the least that can)")
    n = len(s["regressions"]) + len(s["newly_failing"])
    print(f"compare: {n} regressions ({len(s['regressions'])} slower or bigger, {len(s['newly_failing'])} newly "
          f"failing), {len(s['improvements'])} improvements")
    return 1 if n else 0
