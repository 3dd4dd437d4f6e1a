"""scripts/dashboard: the nightly dashboard, a static site built from a folder of results files
(one layerbench results JSON per nightly run).

    scripts/dashboard [--history results/history] [--out build/dashboard] [--window 10] [--k 3]
                      [--min-change 0.05] [--min-runs 3]

DIR/index.html shows, per case, time series of time, throughput and peak memory (host and
device), filters by op, backend, dtype and device, and at the top a table of regressions in
the newest run. Every point links to its run's page, DIR/runs/<run>.html, which lists that
run's machine and cases. Chart.js comes from npm at build time (scripts/dashboard-site/
package.json; `npm ci` runs there when node_modules is missing) and is copied into DIR.

The regression rule, robust to noisy shared machines: for each case and metric (time, host
peak, device peak), take the case's values in the previous --window runs where it was
measured (at least --min-runs of them): their median m and their MAD scaled to a standard
deviation, s = 1.4826 * MAD. The newest value x is a regression when
    x > m + k * max(s, 0.01 * m)   and   x > (1 + min_change) * m.
A median and a MAD are not moved by one or two wild nights, so a noisy case has a wide band
and a steady case a narrow one; the 1 % floor stops a perfectly flat history from flagging
every tiny change, and --min-change stops a steady case from flagging a change too small to
matter. Runs are ordered by the date in their context (then by file name).

Exit status: 0; 1 when a history file could not be read (it is left out, one line on stderr);
2 when none could, or Chart.js cannot be had.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys

from . import stats
from .results import load_many, Complaints

SITE_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dashboard-site")
CHART_JS = os.path.join("node_modules", "chart.js", "dist", "chart.umd.js")
METRICS = [  # key in a point, label, unit, judged for regressions (bigger = worse)
    ("time", "time", "µs", True),
    ("gflops", "throughput", "GFLOP/s", False),
    ("host", "host peak", "MB", True),
    ("device", "device peak", "MB", True),
]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="dashboard", description="Static dashboard from nightly layerbench results.")
    p.add_argument("--history", default="results/history", help="folder of results files, one per run")
    p.add_argument("--out", default="build/dashboard", help="output folder (default build/dashboard)")
    p.add_argument("--window", type=int, default=10, help="previous runs a regression is judged against (default 10)")
    p.add_argument("--min-runs", type=int, default=3, help="fewest previous values needed to judge (default 3)")
    p.add_argument("--k", type=float, default=3.0, help="band half-width in robust standard deviations (default 3)")
    p.add_argument("--min-change", type=float, default=0.05, help="smallest change that counts (default 0.05 = 5 %%)")
    return p.parse_args(argv)


def chart_js(complain):
    path = os.path.join(SITE_SRC, CHART_JS)
    if os.path.isfile(path):
        return path
    npm = shutil.which("npm")
    if not npm:
        complain(f"Chart.js is missing ({path}) and npm is not installed: install node and npm, then run "
                 f"`npm ci` in {SITE_SRC}")
        return None
    print(f"dashboard: installing the page's npm packages (npm ci in {SITE_SRC})", file=sys.stderr)
    p = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=SITE_SRC,
                       capture_output=True, text=True)
    if p.returncode != 0 or not os.path.isfile(path):
        complain(f"`npm ci` in {SITE_SRC} failed: {(p.stderr or p.stdout).strip().splitlines()[-1:]}")
        return None
    return path


def run_id(run):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", run.name)


def collect(runs):
    """-> (runs as dicts, cases as dicts with one point per run that has the case)."""
    runs = sorted(runs, key=lambda r: (r.date, r.path))
    run_rows = []
    for i, r in enumerate(runs):
        run_rows.append({"index": i, "id": run_id(r), "date": r.date, "host": r.host, "commit": r.commit,
                         "cpu": r.cpu_model, "gpu": r.gpu_model, "file": os.path.basename(r.path),
                         "href": f"runs/{run_id(r)}.html"})
    cases = {}
    for i, r in enumerate(runs):
        for key, c in r.cases.items():
            d = cases.setdefault(key, {"name": c.label, "kernel": c.kernel, "op": c.op, "backend": c.backend,
                                       "dtype": c.dtype, "device": c.device, "type": c.type, "problem": c.problem,
                                       "points": []})
            d["points"].append({
                "run": i, "status": c.status,
                "time": c.time_us if c.ok else None,
                "gflops": c.gflops if c.ok else None,
                "host": c.host_peak / 1e6 if c.ok and c.host_peak is not None else None,
                "device": c.device_peak / 1e6 if c.ok and c.device_peak is not None else None,
                "reason": "" if c.ok else (c.error_message or c.reason)})
    ordered = sorted(cases.values(), key=lambda d: (d["op"], d["backend"], d["dtype"], d["name"]))
    for n, d in enumerate(ordered):
        d["id"] = n
    return runs, run_rows, ordered


def judge(cases, last_run, window, min_runs, k, min_change):
    """The regression rule (module docstring) on the newest run."""
    out = []
    for d in cases:
        pts = {p["run"]: p for p in d["points"]}
        now = pts.get(last_run)
        if now is None:
            continue
        for key, label, unit, judged in METRICS:
            if not judged or now.get(key) is None:
                continue
            prev = [pts[r][key] for r in sorted(pts) if r < last_run and pts[r].get(key) is not None][-window:]
            if len(prev) < min_runs:
                continue
            m = stats.median(prev)
            s = stats.mad(prev)
            limit = max(m + k * max(s, 0.01 * m), (1 + min_change) * m)
            x = now[key]
            if m > 0 and x > limit:
                out.append({"case": d["id"], "name": d["name"], "metric": label, "unit": unit, "value": x,
                            "median": m, "mad": s, "limit": limit, "ratio": x / m, "runs": len(prev),
                            "run": last_run})
    out.sort(key=lambda r: -r["ratio"])
    return out


def _fmt(v, unit):
    if v is None:
        return "—"
    return f"{v:.4g} {unit}"


def run_page(run, row, cases, all_runs):
    e = html.escape
    ctx_keys = ["date", "layerbench_host", "host_name", "layerbench_cpu_model", "layerbench_cpu_isa",
                "layerbench_gpu_model", "layerbench_gpu_driver", "layerbench_cuda_version", "layerbench_git_commit",
                "layerbench_build", "layerbench_compiler", "num_cpus"]
    ctx_rows = "".join(f"<tr><th>{e(k)}</th><td>{e(str(run.context[k]))}</td></tr>"
                       for k in ctx_keys if k in run.context)
    peaks = "".join(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in sorted(run.context.items())
                    if k.startswith("layerbench_peak_"))
    body = []
    for d in cases:
        p = next((p for p in d["points"] if p["run"] == row["index"]), None)
        if p is None:
            continue
        body.append(f"<tr id=\"case-{d['id']}\"><td>{e(d['name'])}</td><td>{e(p['status'])}</td>"
                    f"<td>{_fmt(p['time'], 'µs')}</td><td>{_fmt(p['gflops'], 'GFLOP/s')}</td>"
                    f"<td>{_fmt(p['host'], 'MB')}</td><td>{_fmt(p['device'], 'MB')}</td>"
                    f"<td>{e(p['reason'])}</td></tr>")
    idx = row["index"]
    prev = f"<a href=\"{e(all_runs[idx - 1]['id'])}.html\">← previous run</a>" if idx > 0 else ""
    nxt = f"<a href=\"{e(all_runs[idx + 1]['id'])}.html\">next run →</a>" if idx + 1 < len(all_runs) else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>layerbench run {e(row['id'])}</title>
<link rel="stylesheet" href="../style.css"></head>
<body>
<header><h1>layerbench run <code>{e(row['id'])}</code></h1>
<nav><a href="../index.html">← dashboard</a> {prev} {nxt}</nav></header>
<main>
<section><h2>Machine and build</h2><table class="kv">{ctx_rows}</table>
<h3>Measured peaks</h3><table class="kv">{peaks or '<tr><td>none recorded</td></tr>'}</table>
<p>From <code>{e(row['file'])}</code>.</p></section>
<section><h2>Cases ({len(body)})</h2>
<table class="cases"><thead><tr><th>case</th><th>status</th><th>time</th><th>throughput</th><th>host peak</th>
<th>device peak</th><th>reason</th></tr></thead><tbody>
{''.join(body)}
</tbody></table></section>
</main></body></html>
"""


def build(runs, out, args, chart_path):
    runs, run_rows, cases = collect(runs)
    regressions = judge(cases, len(runs) - 1, args.window, args.min_runs, args.k, args.min_change) if runs else []
    os.makedirs(os.path.join(out, "runs"), exist_ok=True)
    rule = {"window": args.window, "min_runs": args.min_runs, "k": args.k, "min_change": args.min_change}
    data = {"runs": run_rows, "cases": cases, "regressions": regressions, "rule": rule,
            "metrics": [{"key": k, "label": l, "unit": u} for k, l, u, _ in METRICS]}
    with open(os.path.join(out, "data.js"), "w", encoding="utf-8") as f:
        f.write("// Written by scripts/dashboard: every run and case of the history.\n")
        f.write("window.LB_DATA = " + json.dumps(data, separators=(",", ":")) + ";\n")
    with open(os.path.join(SITE_SRC, "index.html"), encoding="utf-8") as f:
        page = f.read()
    for k, v in rule.items():
        page = page.replace("{{" + k + "}}", html.escape(str(v)))
    page = page.replace("{{min_change_pct}}", f"{args.min_change:.0%}")
    with open(os.path.join(out, "index.html"), "w", encoding="utf-8") as f:
        f.write(page)
    for name in ("app.js", "style.css"):
        shutil.copyfile(os.path.join(SITE_SRC, name), os.path.join(out, name))
    shutil.copyfile(chart_path, os.path.join(out, "chart.umd.js"))
    for run, row in zip(runs, run_rows):
        with open(os.path.join(out, "runs", row["id"] + ".html"), "w", encoding="utf-8") as f:
            f.write(run_page(run, row, cases, run_rows))
    return run_rows, cases, regressions


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    complain = Complaints("dashboard")
    problems = complain.problems

    if not os.path.isdir(args.history):
        print(f"dashboard: {args.history}: no such folder (one results JSON per nightly run goes there)",
              file=sys.stderr)
        return 2
    files = sorted(os.path.join(args.history, f) for f in os.listdir(args.history)
                   if f.endswith(".json") or f.endswith(".jsonl"))
    runs = load_many(files, complain)
    if not runs:
        print(f"dashboard: no results file could be read in {args.history}", file=sys.stderr)
        return 2
    chart_path = chart_js(complain)
    if chart_path is None:
        return 2
    run_rows, cases, regressions = build(runs, args.out, args, chart_path)
    print(f"dashboard: {len(run_rows)} runs, {len(cases)} cases, {len(regressions)} regressions in the newest run "
          f"-> {os.path.join(args.out, 'index.html')}")
    return 1 if problems else 0
