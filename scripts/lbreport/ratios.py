"""scripts/ratios: one backend's speed against another's, case by case, from results files —
the form the project's targets take ("≥ 0.9× oneDNN on the same case, same thread count").

    scripts/ratios RESULTS.json [MORE ...] --backend cpu --baseline onednn [--min 0.9] [--csv FILE]
                   [--statistic median|fastest] [--plot ratios.png]
    scripts/ratios RESULTS.json [MORE ...] --steps dense.cpu.naive,dense.cpu.blocked,...

Pairs every measured case of --backend with the cases of --baseline on the same problem line
(layer names aside), dtype, thread count, cache mode and synchronisation, and reports
ratio = baseline time / kernel time (above 1: faster than the baseline). Where the baseline
has several kernels for a problem (oneDNN's default and NCHW convolutions), the fastest one
is the yardstick. After the table, the ratios as a distribution per op, dtype and thread
count: the geomean, the minimum and maximum and the five worst problems (--plot draws each
group's ratios on a log axis with its geomean). Times are each case's median over its repetitions; --statistic fastest
takes each case's fastest repetition instead (and that repetition's % of peak and of
bandwidth): on a shared host, where a neighbour slows some repetitions and not others, the
fastest repetitions of two kernels are the fairer pair. --steps instead prints one row per
problem, dtype and thread count with each listed kernel's GFLOP/s and % of the machine's peak, in the order given (a progression).

Exit status: 0; 1 with --min when some ratio is below it, or when an input could not be read;
2 when nothing could be read, no case pairs up, or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import math
import sys

from .results import all_cases, load_many, problem_without, Complaints
from .table import Table, fmt_num, fmt_time


def parse_args(argv):
    p = argparse.ArgumentParser(prog="ratios", description="Speed of one backend against another, case by case.")
    p.add_argument("results", nargs="+", help="results files (.json, or the .jsonl of an interrupted run)")
    p.add_argument("--backend", help="the backend measured (e.g. cpu)")
    p.add_argument("--baseline", help="the yardstick backend (e.g. onednn)")
    p.add_argument("--min", type=float, help="exit 1 when a ratio is below this")
    p.add_argument("--steps", help="comma-separated kernel ids: GFLOP/s and %% of peak of each, side by side")
    p.add_argument("--csv", help="also write the table as CSV here")
    p.add_argument("--statistic", choices=("median", "fastest"), default="median",
                   help="each case's time: the median of its repetitions (default) or the fastest one")
    p.add_argument("--plot", help="the ratios' distribution per op, dtype and threads, as PNG")
    a = p.parse_args(argv)
    if bool(a.steps) == bool(a.backend and a.baseline):
        p.error("give either --backend and --baseline, or --steps")
    return a


def same_case(c) -> tuple:
    """What a kernel's case and its baseline's must share."""
    return (problem_without(c.problem, "name"), c.dtype, c.threads, c.cache, c.blocking_sync)


def label(c) -> str:
    """A problem as a row names it: its layer name and batch, else its line."""
    return f"{c.layer} mb={c.batch}" if c.layer else problem_without(c.problem, "name")


def timed(c, statistic):
    """A case's time in µs and a function giving its counters, by the statistic: the median
    over its repetitions, or its fastest repetition (the median where a file has none)."""
    fastest = c.fastest() if statistic == "fastest" else None
    if fastest is None:
        return c.time_us, c.value
    t, row = fastest
    return t, lambda key: c.value_in(row, key)


def ratio_table(cases, backend, baseline, statistic="median"):
    base = {}
    for c in cases:
        if c.backend == baseline and c.ok:
            k = same_case(c)
            if k not in base or timed(c, statistic)[0] < timed(base[k], statistic)[0]:
                base[k] = c
    t = Table([("problem", "problem"), ("dtype", "dtype"), ("threads", "threads"), ("kernel", "kernel"),
               ("time", "time_us"), ("% of peak", "pct_peak"), ("% of bandwidth", "pct_bw"),
               ("baseline", "baseline"), ("baseline time", "baseline_time_us"), ("ratio", "ratio")],
              right=[False, False, True, False, True, True, True, False, True, True])
    ratios = []
    for c in sorted((c for c in cases if c.backend == backend and c.ok),
                    key=lambda c: (c.op, label(c), c.dtype, c.threads, c.kernel)):
        b = base.get(same_case(c))
        if b is None:
            continue
        (time, value), base_time = timed(c, statistic), timed(b, statistic)[0]
        r = base_time / time
        ratios.append((c, r))
        pct, bw = value("lb_pct_peak"), value("lb_pct_bw")
        t.add([label(c), c.dtype, c.threads, c.kernel, fmt_time(time),
               fmt_num(pct) + " %" if pct is not None else "—", fmt_num(bw) + " %" if bw is not None else "—",
               b.kernel, fmt_time(base_time), f"{r:.2f}×"],
              [problem_without(c.problem, "name"), c.dtype, c.threads, c.kernel, time, pct, bw, b.kernel,
               base_time, r])
    return t, ratios


def distribution(ratios):
    """Per op, dtype and threads: how many, the geomean, the minimum and the five worst
    problems (their ratios), as a table: a target such as "≥ 1.0× geomean, none < 0.8×" reads
    off one row."""
    groups = {}
    for c, r in ratios:
        groups.setdefault((c.op, c.dtype, c.threads), []).append((r, label(c)))
    t = Table([("op", "op"), ("dtype", "dtype"), ("threads", "threads"), ("cases", "cases"),
               ("geomean", "geomean"), ("min", "min"), ("max", "max"), ("five worst", "worst")],
              right=[False, False, True, True, True, True, True, False])
    for (op, dtype, threads), rs in sorted(groups.items()):
        rs.sort()
        geo = math.exp(sum(math.log(r) for r, _ in rs) / len(rs))
        worst = "; ".join(f"{name} {r:.2f}×" for r, name in rs[:5])
        t.add([op, dtype, threads, len(rs), f"{geo:.2f}×", f"{rs[0][0]:.2f}×", f"{rs[-1][0]:.2f}×", worst],
              [op, dtype, threads, len(rs), geo, rs[0][0], rs[-1][0], worst])
    return t, groups


def plot_distribution(groups, backend, baseline, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = sorted(groups)
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.45 * len(keys)))
    for i, k in enumerate(keys):
        xs = [r for r, _ in groups[k]]
        ax.scatter(xs, [i] * len(xs), s=14, alpha=0.6)
        geo = math.exp(sum(math.log(x) for x in xs) / len(xs))
        ax.plot([geo, geo], [i - 0.3, i + 0.3], color="black")
    ax.axvline(1.0, color="grey", linestyle=":")
    ax.set_xscale("log", base=2)
    ax.set_yticks(range(len(keys)), [f"{op} {dt} {th}t" for op, dt, th in keys])
    ax.set_xlabel(f"{baseline} time / {backend} time (above 1: {backend} faster); bar: geomean")
    fig.tight_layout()
    fig.savefig(path)


def steps_table(cases, kernels):
    by = {}
    for c in cases:
        if c.kernel in kernels and c.ok:
            by.setdefault((label(c), c.dtype, c.threads), {})[c.kernel] = c
    cols = [("problem", "problem"), ("dtype", "dtype"), ("threads", "threads")]
    for k in kernels:
        cols += [(f"{k} GFLOP/s", f"{k}_gflops"), (f"{k} % of peak", f"{k}_pct_peak")]
    t = Table(cols, right=[False, False] + [True] * (1 + 2 * len(kernels)))
    for (problem, dtype, threads), ks in sorted(by.items()):
        cells, raw = [problem, dtype, threads], [problem, dtype, threads]
        for k in kernels:
            c = ks.get(k)
            g = c.gflops if c else None
            pct = c.value("lb_pct_peak") if c else None
            cells += [fmt_num(g), fmt_num(pct) + " %" if pct is not None else "—"]
            raw += [g, pct]
        t.add(cells, raw)
    return t


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    complain = Complaints("ratios")
    runs = load_many(a.results, complain)
    if not runs:
        return 2
    cases = all_cases(runs, complain)
    if a.steps:
        t = steps_table(cases, [k.strip() for k in a.steps.split(",") if k.strip()])
        ratios = None
    else:
        t, ratios = ratio_table(cases, a.backend, a.baseline, a.statistic)
    if not t.rows:
        print("ratios: no case pairs up" if ratios is not None else "ratios: none of the kernels has a measured case",
              file=sys.stderr)
        return 2
    print(t.markdown())
    if a.csv:
        with open(a.csv, "w", encoding="utf-8") as f:
            f.write(t.csv())
    status = 1 if complain.problems else 0
    if ratios is not None:
        rs = [r for _, r in ratios]
        low = [(c, r) for c, r in ratios if a.min is not None and r < a.min]
        by = "fastest repetitions" if a.statistic == "fastest" else "medians of the repetitions"
        print(f"\nratios: {len(rs)} cases, {a.backend} / {a.baseline} from {min(rs):.2f}× to {max(rs):.2f}× "
              f"(by the {by})" + (f"; {len(low)} below {a.min:g}×" if a.min is not None else ""))
        for c, r in low:
            print(f"  below: {c.name} {r:.2f}×")
        if low:
            status = 1
        d, groups = distribution(ratios)
        print("\n" + d.markdown())
        if a.plot:
            try:
                plot_distribution(groups, a.backend, a.baseline, a.plot)
            except ImportError:
                print("ratios: --plot needs python3-matplotlib (scripts/install-deps.sh installs it)", file=sys.stderr)
                return 2
    return status
