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


def _log_axis_with_numbers(ax, axis="y"):
    """A log axis that shows numbers whatever its range: majors at 1, 2, 5 × 10^n, and when the
    range is too narrow for two of them, the minor ticks labelled too."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(FuncFormatter(_plain))
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    if hi / max(lo, 1e-300) < 5:
        target.set_minor_locator(LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)))
        target.set_minor_formatter(FuncFormatter(_plain))
    else:
        target.set_minor_formatter(FuncFormatter(lambda v, p: ""))


def network_batches(cases, analyzer):
    """-> {network: {(type, row): {network batch: [cases]}}} for the f32 baseline cases of each
    bundled network's layers (`layerbench analyze` says which problems are its layers and how
    their mb scales with the network's batch: the LSTM LM's projection has mb = batch × 35)."""
    from .analysis import _layer_key  # noqa: PLC0415

    out = {}
    if analyzer is None or analyzer.problem:
        return out
    layer_cases = [c for c in cases if is_baseline(c) and c.layer and c.batch and c.time_us]
    for net in analyzer.networks():
        a1 = analyzer(net, 1)
        if a1 is None:
            continue
        per_sample = {}
        for layer in a1.get("layers", []):
            if layer.get("problem"):
                keys = dict(w.split("=", 1) for w in layer["problem"].split()[1:] if "=" in w)
                per_sample[_layer_key(layer["problem"])] = int(keys.get("mb", "1"))
        groups = defaultdict(lambda: defaultdict(list))
        for c in layer_cases:
            mb1 = per_sample.get(_layer_key(c.problem))
            if mb1 and c.batch % mb1 == 0:
                groups[(c.type, row_label(c))][c.batch // mb1].append(c)
        if groups:
            out[net] = groups
    return out


def throughput_vs_batch(cases, out_dir, analyzer=None):
    """Per network, per layer type and backend (and thread count): throughput over that type's
    layers (Σ FLOPs ÷ Σ time, the fastest kernel of the backend per layer) against the network's
    batch — never pooled over networks, whose layers scale their mb differently. Error bars:
    the same sum over the repetitions' fastest and slowest times."""
    nets = network_batches(cases, analyzer)
    panels = []
    for net, groups in nets.items():
        lines = {}
        for (typ, row), by_batch in groups.items():
            if len(by_batch) < 2:
                continue
            pts = []
            for b, cs in sorted(by_batch.items()):
                best = {}
                for c in cs:
                    if c.problem not in best or c.time_us < best[c.problem].time_us:
                        best[c.problem] = c
                flops = sum(c.flops or 0 for c in best.values())
                t = sum(c.time_us for c in best.values())
                t_lo = sum(min(c.times_us() or [c.time_us]) for c in best.values())
                t_hi = sum(max(c.times_us() or [c.time_us]) for c in best.values())
                if flops and t:
                    g = flops / t / 1e3  # FLOPs per µs -> GFLOP/s
                    pts.append((b, g, g - flops / t_hi / 1e3, flops / t_lo / 1e3 - g, len(best)))
            if len(pts) >= 2:
                lines[(typ, row)] = pts
        if lines:
            panels.append((net, lines))
    if not panels:
        return None
    rows, cols = _grid(len(panels))
    fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols, 4.4 * rows), squeeze=False, layout="constrained")
    for ax, (net, lines) in zip(axes.flat, panels):
        for (typ, row), pts in sorted(lines.items(), key=lambda kv: (type_rank(kv[0][0]), kv[0][1][1], kv[0][1][2] or 0)):
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[[p[2] for p in pts], [p[3] for p in pts]],
                        marker=MARKERS.get(typ, "o"), capsize=3, markersize=4,
                        label=f"{typ}: {row_name(row)} ({pts[0][4]} layers)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(_plain))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, p: ""))
        _log_axis_with_numbers(ax)
        ax.set_title(f"{net}: throughput vs batch")
        ax.set_xlabel(f"{net} batch (samples)")
        ax.set_ylabel("throughput (GFLOP/s, Σ FLOPs ÷ Σ time)")
        ax.legend(fontsize=6.5)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("Throughput vs batch per network and layer type (f32, no ReLU, hot caches; bars: fastest..slowest "
                 "repetition)")
    return _save(fig, out_dir, "throughput_vs_batch")


def memory_vs_batch(host_fits, device_fits, out_dir):
    """Measured peak memory at each batch, one line per layer type and thread count (its largest
    case), fitted as fixed + slope × batch only from ≥ 3 batch sizes (with R²); error bars: the
    repetitions' smallest and largest peak."""
    panels = [(name, fits) for name, fits in (("host", host_fits), ("device", device_fits)) if fits]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(7.2 * len(panels), 5.0), squeeze=False, layout="constrained")
    for ax, (name, fits) in zip(axes.flat, panels):
        chosen = {}
        for f in fits:  # largest memory first: the first per (type, threads) stands for it
            c0 = next(iter(f["cases"].values()))
            chosen.setdefault((type_rank(f["type"]), c0.threads), f)
        for i, ((_, threads), f) in enumerate(sorted(chosen.items())):
            color = f"C{i % 10}"
            bs = f["batches"]
            key = "lb_host_peak_bytes" if name == "host" else "lb_device_peak_bytes"
            spread = [f["cases"][b].values(key) or [y] for b, y in zip(bs, f["peaks"])]
            ys = [y / 1e6 for y in f["peaks"]]
            err = [[y - min(v) / 1e6 for y, v in zip(ys, spread)], [max(v) / 1e6 - y for y, v in zip(ys, spread)]]
            label = f"{f['type']} ×{threads}: {_short(f['short'], 44)}"
            if len(bs) >= 3:
                label += (f" — {f['fixed'] / 1e6:.3g} MB + {f['slope'] / 1e6:.3g} MB/sample, R² = {f['r2']:.3f}")
                xs = [0, max(bs)]
                ax.plot(xs, [(f["fixed"] + f["slope"] * x) / 1e6 for x in xs], "-", color=color, linewidth=1)
            else:
                label += f" — {len(bs)} batch sizes: not fitted"
            ax.errorbar(bs, ys, yerr=err, fmt="o", color=color, capsize=3, markersize=4, label=label)
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("batch (samples)")
        ax.set_ylabel(f"{name} peak memory (MB, 10⁶ bytes)")
        ax.set_title(f"{name} peak memory vs batch: points measured, lines fitted (≥ 3 batch sizes)")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=7)
    fig.suptitle("Peak memory = fixed + slope × batch (per layer type and threads: its largest case)")
    return _save(fig, out_dir, "memory_vs_batch")


def _short(label, n=60):
    return label if len(label) <= n else label[: n - 1] + "…"


def _slug(s):
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower() or "unknown"


def roofline(runs, cases, out_dir):
    """One roofline per device (CPU model, GPU model): compute ceilings and memory roofs (DRAM
    and L2 per thread count, a GPU's device memory) where the context has them, each measured
    case at its arithmetic intensity."""
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
            ax.plot(xs, [p.per_second / 1e9] * len(xs), "--", color=f"C{i % 10}", linewidth=1, label=label)
        # Memory roofs: the fastest stream of each level and thread count (DRAM: read, write or
        # triad; L2: a read of a buffer held there), up to the highest compute ceiling.
        roofs = {}
        for p in bw:
            level = "L2" if "l2" in p.kind else "device memory" if device == "gpu" else "DRAM"
            key = (level, p.threads or 0)
            if key not in roofs or p.per_second > roofs[key].per_second:
                roofs[key] = p
        top = max((p.per_second for p in compute), default=None)
        for (level, threads), p in sorted(roofs.items()):
            ys = [x * p.per_second / 1e9 for x in xs]
            if top:
                ys = [min(y, top / 1e9) for y in ys]
            ax.plot(xs, ys, ":" if level != "L2" else "-.", color="gray" if level != "L2" else "silver",
                    linewidth=1.0 if threads <= 1 else 1.8, label=f"{level} roof" + (f" ×{threads}" if threads else "") +
                    f" {p.per_second / 1e9:,.0f} GB/s ({p.kind})")
        by = defaultdict(list)
        for c, ai in zip(cs, ais):
            by[(c.type, c.dtype)].append((ai, c.gflops))
        for j, ((typ, dt), pts) in enumerate(sorted(by.items(), key=lambda kv: (type_rank(kv[0][0]), kv[0][1]))):
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=MARKERS.get(typ, "x"), s=22, alpha=0.8,
                       label=f"{typ} {dt} ({len(pts)})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _log_axis_with_numbers(ax, "x")
        _log_axis_with_numbers(ax, "y")
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
    _log_axis_with_numbers(ax)
    for bars in ax.containers:
        ax.bar_label(bars, fmt="%.3g", fontsize=7)
    ax.set_ylabel("time, summed over the problems (ms, log scale)")
    ax.set_xlabel("layer type")
    ax.set_title(title, fontsize=9)
    ax.legend()
    return _save(fig, out_dir, "cpu_vs_gpu_time")


VERDICT_COLOURS = {"regression": "#d62728", "improvement": "#2ca02c", "cannot judge": "#e6a700", "": "#1f77b4"}


def ratio_plot(ratios, threshold, path, title, shift=None):
    """compare's time ratios B ÷ A, sorted, one point per case, coloured by verdict, with the
    threshold band (and the run-wide shift, when there is one) drawn."""
    pts = sorted(ratios, key=lambda r: r[1])
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    xs = list(range(1, len(pts) + 1))
    for verdict, colour in VERDICT_COLOURS.items():
        sel = [(x, r) for x, (_, r, v) in zip(xs, pts) if v == verdict]
        if sel:
            ax.scatter([x for x, _ in sel], [r for _, r in sel], s=14, color=colour,
                       label=f"{verdict or 'no change'} ({len(sel)})")
    ax.axhline(1.0, color="gray", linewidth=1)
    ax.axhspan(1 - threshold, 1 + threshold, color="gray", alpha=0.12, label=f"±{threshold:.0%} threshold")
    if shift:
        ax.axhline(shift, color="#9467bd", linestyle="--", linewidth=1, label=f"run-wide shift ×{shift:.3f}")
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 7.5)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.2f}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _p: ""))
    lo, hi = min([r for _, r, _ in pts] + [1 - threshold]), max([r for _, r, _ in pts] + [1 + threshold])
    ax.set_ylim(lo / 1.05, hi * 1.05)
    ax.set_xlim(0, len(pts) + 1)
    ax.set_xlabel("case, sorted by ratio (count)")
    ax.set_ylabel("time B ÷ A (median over repetitions, ratio)")
    ax.set_title(f"Time ratio per case: {title}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.savefig(path)
    plt.close(fig)
    return path
