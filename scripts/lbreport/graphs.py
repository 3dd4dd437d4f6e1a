"""scripts/graphs: whole networks' runs (`layerbench run --graph ... --out FILE.json`) as tables:
time and images/s per batch, the measured peak host memory beside liveness's prediction and
what the run says it held (the arena, the layers' parameters, the kernels' own copies and
workspaces, and the temporaries they share), and per network, backend and dtype the fit peak = fixed + slope x batch
(least squares over the batches measured), of the measured peak and of liveness's.
Where a GPU backend and a CPU backend ran the same network, the batch from which the GPU's
images/s lead (the crossover).

    scripts/graphs RUNS.json[.gz] [MORE ...] [--out report.md] [--plot memory.png]

Exit status: 0; 2 when nothing could be read.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import defaultdict

MB = 1e6


def fit(points):
    """(fixed, slope) of y = fixed + slope * x by least squares; slope None with one point."""
    n = len(points)
    if n == 0:
        return None, None
    if n == 1:
        return points[0][1], None
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return my - slope * mx, slope


def load(paths):
    runs, machines = [], set()
    for path in paths:
        try:
            with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            print(f"graphs: {path}: {e}", file=sys.stderr)
            continue
        if "layerbench_graph_runs" not in data:
            print(f"graphs: {path}: not a file of graph runs (layerbench run --graph --out)", file=sys.stderr)
            continue
        machines.add(data.get("machine", "?") + (f", {data['cpu']}" if data.get("cpu") else ""))
        runs.extend(data.get("runs", []))
    return runs, machines


def measured(r):
    return r.get("status") in ("passed", "mistrusted") and "seconds" in r


def is_gpu(backend):
    return backend in ("cuda", "cublas", "cudnn")


def render(runs, machines):
    out = [f"# Whole networks: time and host memory against batch ({', '.join(sorted(machines))})", ""]
    groups = defaultdict(list)
    for r in runs:
        groups[(r["network"], r["dtype"], r.get("threads", 1), r["backend"])].append(r)
    out += ["| network | dtype | threads | backend | batch | ms/run | images/s | host peak MB | liveness MB "
            "| arena + params + kernels' own MB | peak / liveness | peak / (liveness + kernels' own) | status |",
            "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    fits = []
    for (network, dtype, threads, backend), rows in sorted(groups.items()):
        rows.sort(key=lambda r: r["batch"])
        for r in rows:
            if not measured(r):
                out.append(f"| {network} | {dtype} | {threads} | {backend} | {r['batch']} | | | | "
                           f"{r['liveness_bytes'] / MB:.1f} | | | | {r['status']}: {r.get('reason', '')} |")
                continue
            own = r["scratch_bytes"] + r.get("temporary_bytes", 0)  # the kernels' own, and their shared temporaries
            held = r["arena_bytes"] + r["parameter_bytes"] + own
            live = r["liveness_bytes"]
            out.append(f"| {network} | {dtype} | {threads} | {backend} | {r['batch']} | {r['seconds'] * 1e3:.2f} | "
                       f"{r['images_per_s']:.1f} | {r['host_peak_bytes'] / MB:.1f} | {live / MB:.1f} | "
                       f"{held / MB:.1f} | {r['host_peak_bytes'] / live:.2f} | "
                       f"{r['host_peak_bytes'] / (live + own):.2f} | {r['status']} |")
        ok = [r for r in rows if measured(r)]
        peak_fixed, peak_slope = fit([(r["batch"], r["host_peak_bytes"]) for r in ok])
        live_fixed, live_slope = fit([(r["batch"], r["liveness_bytes"]) for r in ok])
        stop = next((r["auto_stop"] for r in rows if "auto_stop" in r), "")
        fits.append((network, dtype, threads, backend, len(ok), peak_fixed, peak_slope, live_fixed, live_slope, stop))
    out += ["", "## Memory = fixed + slope x batch (least squares over the batches measured)", "",
            "| network | dtype | threads | backend | batches | measured fixed MB | measured MB / sample "
            "| liveness fixed MB | liveness MB / sample | --batch auto stopped |",
            "|---|---|---|---|---:|---:|---:|---:|---:|---|"]
    for network, dtype, threads, backend, n, pf, ps, lf, ls, stop in fits:
        def mb(v):
            return "" if v is None else f"{v / MB:.1f}"
        out.append(f"| {network} | {dtype} | {threads} | {backend} | {n} | {mb(pf)} | {mb(ps)} | {mb(lf)} | {mb(ls)} "
                   f"| {stop} |")
    shares = [(k, max((r for r in rows if measured(r) and r.get("type_share")), key=lambda r: r["batch"], default=None))
              for k, rows in sorted(groups.items())]
    shares = [(k, r) for k, r in shares if r]
    if shares:
        types = sorted({t for _, r in shares for t in r["type_share"]},
                       key=lambda t: -max(r["type_share"].get(t, 0) for _, r in shares))
        out += ["", "## Where the time goes (--per-node: each layer type's share of a forward, at the largest batch)",
                "", "| network | dtype | threads | backend | batch | " + " | ".join(types) + " |",
                "|---|---|---|---|---:|" + "---:|" * len(types)]
        for (network, dtype, threads, backend), r in shares:
            cells = " | ".join(f"{100 * r['type_share'].get(t, 0):.1f} %" if t in r["type_share"] else ""
                               for t in types)
            out.append(f"| {network} | {dtype} | {threads} | {backend} | {r['batch']} | {cells} |")
    out += ["", "## CPU against GPU (images/s)", ""]
    crossover = []
    by_network = defaultdict(lambda: defaultdict(dict))
    for r in runs:
        if measured(r):
            by_network[(r["network"], r["dtype"])][r["batch"]][r["backend"]] = r["images_per_s"]
    for (network, dtype), batches in sorted(by_network.items()):
        both = [(b, v) for b, v in sorted(batches.items())
                if any(is_gpu(k) for k in v) and any(not is_gpu(k) for k in v)]
        if not both:
            continue
        lead = next((b for b, v in both
                     if max(x for k, x in v.items() if is_gpu(k)) > max(x for k, x in v.items() if not is_gpu(k))), None)
        crossover.append(f"- {network} {dtype}: the GPU leads from batch {lead}" if lead else
                         f"- {network} {dtype}: the CPU leads at every batch measured on both")
    out += crossover or ["No network ran on both a GPU and a CPU backend in these files."]
    return "\n".join(out) + "\n"


def plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    groups = defaultdict(list)
    for r in runs:
        if measured(r):
            groups[(r["network"], r["backend"], r["dtype"])].append(r)
    for (network, backend, dtype), rows in sorted(groups.items()):
        rows.sort(key=lambda r: r["batch"])
        line, = ax.plot([r["batch"] for r in rows], [r["host_peak_bytes"] / MB for r in rows], marker="o",
                        label=f"{network} {backend} {dtype}")
        ax.plot([r["batch"] for r in rows], [r["liveness_bytes"] / MB for r in rows], linestyle=":",
                color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch")
    ax.set_ylabel("peak host memory, MB (dotted: liveness)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


def main(argv=None):
    p = argparse.ArgumentParser(prog="graphs", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--out", help="write the Markdown here (default: stdout)")
    p.add_argument("--plot", help="peak host memory against batch, as PNG")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    runs, machines = load(args.runs)
    if not runs:
        print("graphs: no graph runs could be read", file=sys.stderr)
        return 2
    md = render(runs, machines)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(md)
    else:
        sys.stdout.write(md)
    if args.plot:
        plot(runs, args.plot)
    return 0
