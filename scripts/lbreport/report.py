"""scripts/report: results files -> Markdown + CSV + plots in one folder, and the headline
block of README.md.

    scripts/report RESULTS.json [MORE.json|.jsonl ...] [--out DIR] [--layerbench PATH]
                   [--noisy-cv 0.05] [--no-plots] [--update-readme README.md]

Writes DIR/report.md, DIR/*.csv (one per table; cases.csv has every case), DIR/*.png and
*.svg. --update-readme replaces the text between <!-- headline:begin --> and
<!-- headline:end --> in the given file with the headline: per layer type the fastest
backend on each device (at most one row per layer type), the count of each claim verdict,
and links to docs/claims.md and to DIR/report.md, where every full table is.

Exit status: 0; 1 when some input could not be read (its one-line error is on stderr, the
report is made from the others); 2 when nothing could be read or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

from . import analysis, claims
from .results import all_cases, load_many, Complaints
from .table import Table

BEGIN, END = "<!-- headline:begin -->", "<!-- headline:end -->"
# The claims the report checks, stated in the repository (scripts/lbreport/ -> the top level).
CLAIMS_DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "docs", "claims.md")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="report", description="Markdown, CSV and plots from layerbench results files.")
    p.add_argument("results", nargs="+", help="results files (.json, or the .jsonl of an interrupted run)")
    p.add_argument("--out", help="output folder (default: <first input without extension>-report)")
    p.add_argument("--layerbench", help="the layerbench binary, for `analyze` of the networks "
                   "(default: $LAYERBENCH, else build/bench/layerbench)")
    p.add_argument("--noisy-cv", type=float, default=0.05,
                   help="list cases whose coefficient of variation of time exceeds this (default 0.05, as layerbench run)")
    p.add_argument("--no-plots", action="store_true", help="tables only")
    p.add_argument("--update-readme", metavar="README.md",
                   help="replace the text between the headline markers in this file")
    return p.parse_args(argv)


def sources_table(runs):
    """One row per file. "unknown" is a plain Google Benchmark file's status: measured, but
    nothing in the file says the case was verified."""
    t = Table([("file", "file"), ("date", "date"), ("machine", "machine"), ("host", "host"), ("CPU", "cpu_model"),
               ("GPU", "gpu_model"), ("commit", "commit"), ("cases", "cases"), ("statuses", "statuses")],
              right=[False] * 7 + [True, False])
    for r in runs:
        st = Counter(c.status for c in r.cases.values())
        sts = ", ".join(f"{n} {s}" for s, n in sorted(st.items()))
        nan = sum(c.nan_reps for c in r.cases.values())
        if nan:
            sts += f"; {nan} NaN repetitions left out"
        t.add([os.path.basename(r.path), r.date, r.machine, r.host, r.cpu_model or "—", r.gpu_model or "—",
               r.commit or "—", len(r.cases), sts],
              [r.path, r.date, r.machine, r.host, r.cpu_model, r.gpu_model, r.commit, len(r.cases), sts])
    return t


def headline(wp, verdicts, runs, readme_dir, report_md=None):
    """The README's block, from the whitepaper table `wp`: per layer type the row of the highest
    throughput on each device (so at most one table row per layer type), the verdict counts of
    the claims, and links (relative to `readme_dir`) to the claims and to the full report."""
    def link(path):
        return os.path.relpath(path, readme_dir)

    sources = "; ".join(sorted({r.cpu_model or r.host for r in runs} | {r.gpu_model for r in runs if r.gpu_model}))
    dates = ", ".join(sorted({r.date[:10] for r in runs if r.date}))
    out = [BEGIN, "",
           f"From `scripts/report` on {', '.join(os.path.basename(r.path) for r in runs)} ({sources}; {dates}). "
           "f32, no ReLU, hot caches; per layer type the backend with the highest throughput on each device, "
           "over the problems every backend of that type measured.", ""]
    # The whitepaper table's columns by their CSV names, not their places (a column added to
    # it once put "% of its ceiling" under "host peak MB" here).
    col = {name: i for i, name in enumerate(wp.csv_headers)}
    rate, pct = col["gflop_per_s"], col["pct_peak_median"]
    best = {}  # (type, device) -> (display cells, raw values) of the fastest row
    for cells, raw in zip(wp.rows, wp.raw):
        if raw[col["pass"]] != "fwd":  # the headline is the forward's; the report has every pass
            continue
        key = (raw[col["type"]], raw[col["device"]])
        if raw[rate] is not None and (key not in best or raw[rate] > best[key][1][rate]):
            best[key] = (cells, raw)
    devices = [d for d in ("cpu", "gpu") if any(k[1] == d for k in best)]
    if devices:
        memory = {"cpu": ("host peak MB", col["host_peak_bytes_max"]),
                  "gpu": ("device peak MB", col["device_peak_bytes_max"])}
        cols = [("layer type", "type")]
        for d in devices:
            cols += [(f"fastest {d.upper()} backend", f"{d}_backend"), ("GFLOP/s", f"{d}_gflop_per_s"),
                     ("% of peak", f"{d}_pct_peak"), (memory[d][0], f"{d}_memory_peak")]
        t = Table(cols, right=[False] + [False, True, True, True] * len(devices))
        for typ in sorted({k[0] for k in best}, key=analysis.type_rank):
            row = [typ]
            for d in devices:
                if (typ, d) in best:
                    cells, raw = best[(typ, d)]
                    name = (raw[col["device"]], raw[col["backend"]], raw[col["threads"]])
                    row += [analysis.row_name(name), cells[rate], cells[pct], cells[memory[d][1]]]
                else:
                    row += ["—"] * 4
            t.add(row)
        out += [t.markdown()]
    else:
        out += ["not measured: no f32 case without ReLU passed in these results.", ""]
    counts = Counter(v.verdict for v in verdicts)
    order = [claims.CONFIRMED, claims.REFUTED, claims.DEPENDS, claims.NOT_MEASURED]
    tally = ", ".join(f"{counts[v]} {v}" for v in order if counts[v])
    out.append(f"Claims ([{link(CLAIMS_DOC)}]({link(CLAIMS_DOC)})): {tally}." +
               (f" Every table, the effect of each optimisation and each verdict with its numbers: "
                f"[the full report]({link(report_md)})." if report_md else ""))
    out += ["", END]
    return "\n".join(out)


def build(runs, cases, analyzer, noisy_cv, out_dir, plots=True, load_problems=(), readme_dir=None):
    """Computes every table and plot; returns (markdown, readme_section, {csv name: text}, [plot paths]).
    The README block links relative to `readme_dir` (default: the current folder)."""
    csvs = {}
    md = ["# layerbench report", ""]
    md.append("Made by `scripts/report` from the results files below. Times are the median over a case's repetitions "
              "(µs = microseconds); MB = 10⁶ bytes; “×N” is the thread count of a CPU kernel; utilisation 100 % = one "
              "core busy. Every table is also a CSV file beside this one.")
    md.append("")
    src = sources_table(runs)
    csvs["sources.csv"] = src.csv()
    md += ["## Sources", "", src.markdown()]
    if load_problems:
        md += ["Files that could not be read (left out of every table):", ""]
        md += [f"- {p}" for p in load_problems] + [""]

    wp, own = analysis.whitepaper(cases)
    csvs["whitepaper.csv"] = wp.csv()
    wp_md = ["### Per layer type and backend (f32, no ReLU, hot caches)", ""]
    if len(wp):
        wp_md.append("Σ over the problems every backend of that layer type measured (so rows of one type compare like "
                     "with like), the fastest kernel of a backend per problem; throughput = FLOPs ÷ time over those "
                     "problems; peaks are the largest of any of them.")
        wp_md += ["", wp.markdown()]
        if own:
            wp_md.append("Rows without a problem in common with the others of their type use their own problems: "
                         + ", ".join(own) + ".\n")
    else:
        wp_md += ["not measured: no f32 case without ReLU passed in these results.", ""]

    opt = analysis.optimisations(cases)
    csvs["optimisations.csv"] = opt.csv()
    opt_md = ["### Effect of each optimisation", ""]
    if len(opt):
        opt_md.append("Pairs of the same case that differ only in dtype or ReLU mode; Δ = geometric mean of "
                      "(optimised ÷ base) − 1, negative = less. Host and device peaks are measured (pairs where both "
                      f"stay under {analysis.MEMORY_FLOOR_BYTES // 1024} KiB are left out: resident memory moves in "
                      "pages); tensors = bytes of the case's own tensors.")
        opt_md += ["", opt.markdown()]
    else:
        opt_md += ["not measured: needs the same cases with several dtypes (--dtype f32,bf16,i8) or ReLU modes "
                   "(--relu none,inplace,separate,fused).", ""]
    md += ["## Whitepaper table", ""] + wp_md + opt_md

    cg, cg_rows = analysis.cpu_gpu(cases)
    csvs["cpu_vs_gpu.csv"] = cg.csv()
    md += ["## CPU vs GPU", ""]
    if len(cg):
        cross = analysis.crossover(cg_rows)
        csvs["crossover.csv"] = cross.csv()
        md += ["Per problem and batch (no ReLU): the fastest CPU kernel (any thread count) and the fastest GPU kernel; "
               "speed-up = CPU time ÷ GPU time, on the GPU's device time (events) and on the host's wall time per run "
               "(launch and synchronisation included; the copies of the activations are in neither).", "",
               cg.markdown(), "", "The crossover: per layer type and dtype, the batch from which the GPU is faster "
               "(the type's problems summed at each batch measured on both).", "", cross.markdown()]
    else:
        has = {c.device for c in cases if c.ok}
        need = "a GPU run" if "gpu" not in has else "a CPU run" if "cpu" not in has else "the same problems on both"
        md += [f"not measured: needs {need} (cases with lb_device cpu and gpu on the same problem).", ""]

    summary, detail, ours, missing_vendor = analysis.ours_vs_vendor(cases)
    csvs["ours_vs_vendor.csv"] = detail.csv()
    md += ["## Our kernels vs the vendor's", ""]
    if len(summary):
        md += ["% of vendor = vendor time ÷ our time × 100 on the same case (100 % = as fast; above = faster). "
               "Vendor: oneDNN for `cpu`, the faster of cuBLAS and cuDNN for `cuda`.", "", summary.markdown(),
               detail.markdown()]
    else:
        md += ["not measured: needs cases of backend `cpu` (against `onednn`) or `cuda` (against `cublas`/`cudnn`) "
               "together with the vendor's on the same problems" +
               (f"; backends here: {', '.join(ours)}" if ours else "; no case of backend `cpu` or `cuda` here") + ".", ""]
    for k, n in sorted(missing_vendor.items()):
        md.append(f"- `{k}`: {n} cases without a vendor case to compare with.")
    if missing_vendor:
        md.append("")

    nets, net_notes = analysis.network_tables(cases, analyzer)
    md += ["## Networks", ""]
    network_analyses, network_rows = [], []
    for net, batch, t, note in nets:
        csvs[f"network_{net}_batch{batch}.csv"] = t.csv()
        md += [f"### {net}, batch {batch}", "", note + ".", "", t.markdown()]
        a = analyzer(net, batch)
        network_analyses.append((net, batch, a))
        # Where the cost is: most MACs vs most time, per time column.
        layer_rows = [r for r in t.raw if r[0] != "total" and r[6]]
        for j, hdr in enumerate(t.headers[7:]):
            timed = [r for r in layer_rows if r[7 + j] is not None]
            if timed:
                network_rows.append((net, batch, hdr, max(layer_rows, key=lambda r: r[6])[0],
                                     max(timed, key=lambda r: r[7 + j])[0]))
    for n in net_notes:
        md += [f"- {n}"]
    if net_notes:
        md.append("")

    verdicts = claims.check_all(cases, network_analyses, network_rows, cg_rows)
    ct = Table([("#", "number"), ("claim", "claim"), ("verdict", "verdict"), ("numbers", "numbers")])
    md += ["## Claims", "", "Each claim of docs/claims.md, checked against these results. Verdicts: confirmed, refuted, "
           "depends (on what, below), or not measured (with the run that would measure it).", ""]
    claims_md = []
    for v in verdicts:
        claims_md += [f"### {v.number}. {v.title} — **{v.verdict}**", "", v.summary, ""]
        claims_md += [f"- {line}" for line in v.lines]
        claims_md.append("")
        if v.table is not None and len(v.table):
            claims_md += [v.table.markdown()]
            csvs[f"claim{v.number}.csv"] = v.table.csv()
        ct.add([v.number, v.title, v.verdict, " ".join(v.lines)], [v.number, v.title, v.verdict, " | ".join(v.lines)])
    csvs["claims.csv"] = ct.csv()
    md += claims_md

    nz = analysis.noisy(cases, noisy_cv)
    csvs["noisy.csv"] = nz.csv()
    md += ["## Noisy cases", ""]
    md += ([f"Coefficient of variation of time over the repetitions above {noisy_cv:.0%} (or flagged by layerbench): "
            f"{len(nz)} cases. Their numbers above are medians; rerun with more repetitions or on a quieter machine "
            "before trusting a small difference.", "", nz.markdown()] if len(nz) else
           [f"none above a coefficient of variation of {noisy_cv:.0%}.", ""])
    above = analysis.above_peak(cases)
    csvs["above_peak.csv"] = above.csv()
    md += ["## Above 100 % of the peak", ""]
    md += (["% of peak divides the model's FLOPs (the direct method's) by the device's measured peak. Above 100 %, a "
            "kernel did less arithmetic than the model counts (an FFT or Winograd convolution), or the peak is not the "
            "hardware's (the GPU's are cuBLASLt's GEMM rates until hardware probes exist): these cases, with what each "
            "ran, are not faster than the machine.", "", above.markdown()] if len(above) else
           ["No case is above 100 % of its peak.", ""])
    failed, grouped = analysis.not_measured(cases)
    csvs["failed.csv"] = failed.csv()
    csvs["unsupported_mistrusted.csv"] = grouped.csv()
    md += ["## Failed, out-of-memory, unsupported and mistrusted cases", ""]
    md += (["Failed and out of memory, one by one:", "", failed.markdown()] if len(failed) else
           ["No case failed or ran out of memory.", ""])
    md += (["Unsupported (the kernel's reason) and mistrusted (verification could not tell), grouped:", "",
            grouped.markdown()] if len(grouped) else ["No case was unsupported or mistrusted.", ""])
    csvs["cases.csv"] = analysis.cases_table(cases).csv()

    plot_paths = []
    if plots:
        from . import plots as P

        fits_host = claims.memory_fits(cases, "host")
        fits_dev = claims.memory_fits(cases, "device")
        md += ["## Plots", ""]
        for what, need, f in (
                ("throughput vs batch", "f32 layers of a bundled network at ≥ 2 batch sizes (and `layerbench analyze`)", lambda: P.throughput_vs_batch(cases, out_dir, analyzer)),
                ("peak memory vs batch", "cases at ≥ 2 batch sizes",
                 lambda: P.memory_vs_batch(fits_host, fits_dev, out_dir)),
                ("roofline", "measured cases with FLOP/s and bytes/s", lambda: P.roofline(runs, cases, out_dir)),
                ("CPU vs GPU time", "measured f32 cases", lambda: P.cpu_vs_gpu_time(cases, cg_rows, out_dir))):
            paths = f()
            if paths:
                plot_paths += paths
            else:
                md += [f"- {what}: not drawn, needs {need}.", ""]
        for p in plot_paths:
            if p.endswith(".png"):
                name = os.path.basename(p)
                md += [f"![{name[:-4]}]({name}) ([SVG]({name[:-4]}.svg))", ""]

    readme = headline(wp, verdicts, runs, readme_dir or os.getcwd(),
                      os.path.join(out_dir, "report.md") if out_dir else None)
    return "\n".join(md) + "\n", readme, csvs, plot_paths


def update_readme(path, section, complain):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        complain(f"{path}: cannot read: {e.strerror}")
        return False
    b, e = text.find(BEGIN), text.find(END)
    if b < 0 or e < 0 or e < b:
        complain(f"{path}: no '{BEGIN}' … '{END}' markers to replace between")
        return False
    new = text[:b] + section + text[e + len(END):]
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, path)
    return True


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    complain = Complaints("report")
    problems = complain.problems

    runs = load_many(args.results, complain)
    if not runs:
        print("report: no results file could be read", file=sys.stderr)
        return 2
    cases = all_cases(runs, complain)
    out_dir = args.out
    if not out_dir and not args.update_readme:
        first = args.results[0]
        out_dir = (first[:-6] if first.endswith(".jsonl") else first[:-5] if first.endswith(".json") else first) + "-report"
    plots = not args.no_plots and bool(out_dir)
    if plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("report: plots need python3-matplotlib (scripts/install-deps.sh installs it); --no-plots skips them",
                  file=sys.stderr)
            return 2
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    analyzer = analysis.Analyzer(args.layerbench or analysis.default_layerbench())
    readme_dir = os.path.dirname(os.path.abspath(args.update_readme)) if args.update_readme else None
    md, section, csvs, plot_paths = build(runs, cases, analyzer, args.noisy_cv, out_dir, plots, problems, readme_dir)
    if out_dir:
        with open(os.path.join(out_dir, "report.md"), "w", encoding="utf-8") as f:
            f.write(md)
        for name, text in csvs.items():
            with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
                f.write(text)
        n_ok = sum(1 for c in cases if c.ok)
        print(f"report: {len(cases)} cases ({n_ok} measured) from {len(runs)} files -> {out_dir}/report.md, "
              f"{len(csvs)} CSV files, {len(plot_paths)} plot files")
    if args.update_readme:
        if not update_readme(args.update_readme, section, complain):
            return 2
        print(f"report: updated the headline block of {args.update_readme}")
    return 1 if problems else 0
