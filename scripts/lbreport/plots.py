"""The report's plots, PNG and SVG, each readable on its own: a title that says what and for
which data, axis labels with units, a legend. matplotlib (Debian's python3-matplotlib), no
display needed."""

from __future__ import annotations

import math
import os
import re
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402

from . import stats  # noqa: E402
from .analysis import is_baseline, row_label, row_name, type_rank  # noqa: E402

plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 110, "font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
                     "svg.hashsalt": "layerbench", "legend.fontsize": 8})
MARKERS = {"dense": "s", "conv": "o", "depthwise": "^", "pointwise": "v", "lstm": "D"}


def _plain(v, _pos=None):
    return f"{v:g}"


def _plain_log(ax, x=True, y=True):
    """Log axes labelled 1, 2, 4, 0.5 instead of 2^0, 10^-0.3."""
    for on, axis in ((x, ax.xaxis), (y, ax.yaxis)):
        if on:
            axis.set_major_formatter(FuncFormatter(_plain))
            axis.set_minor_formatter(FuncFormatter(lambda v, p: ""))


def _save(fig, out_dir, stem):
    paths = []
    for ext in ("png", "svg"):
        p = os.path.join(out_dir, f"{stem}.{ext}")
        fig.savefig(p, metadata={"Date": None} if ext == "svg" else None)
        paths.append(p)
    plt.close(fig)
    return paths


def _grid(n):
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    return rows, cols


def throughput_vs_batch(cases, out_dir):
    """Per layer type, per backend (and thread count): median GFLOP/s over the problems at each batch (f32, no ReLU)."""
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))  # type -> row -> batch -> [GFLOP/s]
    for c in cases:
        if is_baseline(c) and c.batch and c.gflops:
            data[c.type][row_label(c)][c.batch].append(c.gflops)
    types = [t for t in sorted(data, key=type_rank) if any(len(v) >= 2 for v in data[t].values())]
    if not types:
        return None
    rows, cols = _grid(len(types))
    fig, axes = plt.subplots(rows, cols, figsize=(4.8 * cols, 3.8 * rows), squeeze=False, layout="constrained")
    for ax, typ in zip(axes.flat, types):
        for key in sorted(data[typ], key=lambda k: (k[0], k[1], k[2] or 0)):
            pts = sorted((b, stats.median(v)) for b, v in data[typ][key].items())
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{row_name(key)} ({key[0]})")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        _plain_log(ax)
        ax.set_title(f"{typ}: throughput vs batch")
        ax.set_xlabel("batch (mb of the problem)")
        ax.set_ylabel("GFLOP/s (median over problems)")
        ax.legend()
    for ax in list(axes.flat)[len(types):]:
        ax.set_visible(False)
    fig.suptitle("Throughput vs batch per backend (f32, no ReLU, hot caches)")
    return _save(fig, out_dir, "throughput_vs_batch")


def memory_vs_batch(host_fits, device_fits, out_dir, per_plot=6):
    """Measured peak memory at each batch and the fitted line fixed + slope × batch."""
    panels = [(name, fits[:per_plot]) for name, fits in (("host", host_fits), ("device", device_fits)) if fits]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6.8 * len(panels), 4.6), squeeze=False, layout="constrained")
    for ax, (name, fits) in zip(axes.flat, panels):
        for i, f in enumerate(fits):
            color = f"C{i % 10}"
            bs = f["batches"]
            ax.plot(bs, [y / 1e6 for y in f["peaks"]], "o", color=color)
            xs = [0, max(bs)]
            ax.plot(xs, [(f["fixed"] + f["slope"] * x) / 1e6 for x in xs], "-", color=color,
                    label=f"{_short(f['short'])}: {f['fixed'] / 1e6:.3g} MB + {f['slope'] / 1e6:.3g} MB/sample")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("batch (samples)")
        ax.set_ylabel(f"{name} peak memory (MB, 10⁶ bytes)")
        ax.set_title(f"{name} peak memory vs batch: points measured, lines fitted")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=7)
    fig.suptitle("Peak memory = fixed part + per-sample slope (the largest cases)")
    return _save(fig, out_dir, "memory_vs_batch")


def _short(label, n=60):
    return label if len(label) <= n else label[: n - 1] + "…"


def _slug(s):
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower() or "unknown"


def roofline(runs, cases, out_dir):
    """One roofline per device (CPU model, GPU model): compute ceilings (and the memory roof
    where the context has a bandwidth peak), each measured case at its arithmetic intensity."""
    run_of = {r.path: r for r in runs}
    devices = defaultdict(list)  # (device, model) -> cases
    for c in cases:
        if not c.ok or not c.value("lb_flop_per_s") or not c.value("lb_bytes_per_s"):
            continue
        r = run_of.get(c.source)
        model = (r.gpu_model if c.device == "gpu" else r.cpu_model) if r else ""
        devices[(c.device, model or c.device)].append(c)
    paths = []
    for (device, model), cs in sorted(devices.items()):
        peaks = {}
        for r in runs:
            if (r.gpu_model if device == "gpu" else r.cpu_model or device) in (model, ""):
                for p in r.peaks():
                    if p.device == device:
                        peaks[(p.kind, p.threads)] = p
        fig, ax = plt.subplots(figsize=(8, 5.4), layout="constrained")
        ais = [c.value("lb_flop_per_s") / c.value("lb_bytes_per_s") for c in cs]
        lo, hi = min(ais) / 4, max(ais) * 4
        bw = [p for p in peaks.values() if p.unit == "B/s"]
        compute = [p for p in peaks.values() if p.unit != "B/s"]
        xs = [lo * (hi / lo) ** (i / 100) for i in range(101)]
        for i, p in enumerate(sorted(compute, key=lambda p: (p.kind, p.threads or 0))):
            label = f"peak {p.kind}" + (f" ×{p.threads}" if p.threads else "") + f" {p.per_second / 1e9:,.0f} G{p.unit}"
            if bw:
                ys = [min(p.per_second, x * bw[0].per_second) / 1e9 for x in xs]
            else:
                ys = [p.per_second / 1e9] * len(xs)
            ax.plot(xs, ys, "--", color=f"C{i % 10}", linewidth=1, label=label)
        if bw:
            ax.plot(xs, [x * bw[0].per_second / 1e9 for x in xs], ":", color="gray",
                    label=f"memory roof {bw[0].kind} {bw[0].per_second / 1e9:,.0f} GB/s")
        by = defaultdict(list)
        for c, ai in zip(cs, ais):
            by[(c.type, c.dtype)].append((ai, c.gflops))
        for j, ((typ, dt), pts) in enumerate(sorted(by.items(), key=lambda kv: (type_rank(kv[0][0]), kv[0][1]))):
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=MARKERS.get(typ, "x"), s=22, alpha=0.8,
                       label=f"{typ} {dt} ({len(pts)})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP per byte of minimum traffic)")
        ax.set_ylabel("achieved GFLOP/s (int8: GOP/s)")
        note = "" if bw else " — no memory-bandwidth peak in the results' context, compute ceilings only"
        ax.set_title(f"Roofline: {model} ({device}){note}", fontsize=9)
        ax.legend(loc="lower right", ncol=2, fontsize=7)
        paths += _save(fig, out_dir, f"roofline_{device}_{_slug(model)}")
    return paths or None


def cpu_vs_gpu_time(cases, cpu_gpu_rows, out_dir):
    """Per layer type: the summed time of the fastest CPU and the fastest GPU kernel over the
    problems both measured (without GPU data: the CPU bars alone, and the title says so)."""
    totals = defaultdict(lambda: [0.0, 0.0, 0])
    if cpu_gpu_rows:
        for cpu, gpu in cpu_gpu_rows:
            t = totals[cpu.type]
            t[0] += cpu.time_us
            t[1] += gpu.time_us
            t[2] += 1
        title = "CPU vs GPU time per layer type (fastest kernel each, problems measured on both)"
    else:
        best = {}
        for c in cases:
            if is_baseline(c) and c.device == "cpu":
                if c.problem not in best or c.time_us < best[c.problem].time_us:
                    best[c.problem] = c
        for c in best.values():
            totals[c.type][0] += c.time_us
            totals[c.type][2] += 1
        title = "CPU time per layer type (fastest kernel, f32) — GPU: not measured in these results"
    if not totals:
        return None
    types = sorted(totals, key=type_rank)
    fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
    x = list(range(len(types)))
    w = 0.38
    if cpu_gpu_rows:
        ax.bar([i - w / 2 for i in x], [totals[t][0] / 1e3 for t in types], w, label="CPU (fastest kernel)")
        ax.bar([i + w / 2 for i in x], [totals[t][1] / 1e3 for t in types], w, label="GPU (fastest kernel)")
    else:
        ax.bar(x, [totals[t][0] / 1e3 for t in types], w, label="CPU (fastest kernel)")
    ax.set_xticks(x, [f"{t}\n({totals[t][2]} problems)" for t in types])
    ax.set_yscale("log")
    _plain_log(ax, x=False)
    ax.set_ylabel("time, summed over the problems (ms)")
    ax.set_xlabel("layer type")
    ax.set_title(title, fontsize=9)
    ax.legend()
    return _save(fig, out_dir, "cpu_vs_gpu_time")
