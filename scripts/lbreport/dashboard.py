"""scripts/dashboard: the nightly dashboard, a static site built from a folder of results files
(one layerbench results file per nightly run, .json or .json.gz, in any sub-folder).

    scripts/dashboard [--history results/history] [--out build/dashboard] [--window 10] [--k 3]
                      [--min-change 0.05] [--min-runs 3] [--max-load 1.0] [--keep-months 12]
                      [--repo-url https://github.com/OWNER/REPO] [--alert FILE.md]

Runs are grouped by machine (layerbench_machine; for older files the host name and a hash of
the CPU model and core count) and never judged against another machine's, nor against runs of
the same name on another CPU (layerbench_cpu_signature: a VM moved to another host). DIR/index.html has a
machine and a thread filter (with op, backend, dtype, device and a name filter); on top, per
layer type and backend, the geometric mean of the newest values over their baseline (the
median of the previous --window runs), a sparkline of that ratio over the history and the
counts of regressions and improvements; then the newest run's verdicts; then one card per case
that was measured at least once (unsupported cases get no empty card: the run pages list them).
Each card draws time (with the noise band and flagged points marked), throughput and peak
memory over the runs, labelled with their commit and time; every point links to its run's
page, DIR/runs/<machine>/<run>.html, which links the commits since the run before when
--repo-url is given.

The data is split per machine and month (DIR/data/<machine>/<YYYY-MM>.js) and loaded when the
page needs it, so a year of nightly runs is not one file. Retention: runs older than
--keep-months months before a machine's newest run are left out of the site (the history files
are not touched; docs/nightly.md says how to prune them).

The regression rule, robust to noisy shared machines: for each case and metric (time, host
peak, device peak), take the case's values in the previous --window runs where it was
measured (at least --min-runs of them): their median m and their MAD scaled to a standard
deviation; the band's half-width h = max(k * 1.4826 * MAD, k * m * the case's median
within-run noise, m * (exp(k * the run's noise) - 1), k * 0.01 * m) (a few nights' MAD can be
near zero by chance; a case's own repetitions say how noisy it is: their cv when they ran back
to back, which misses what moves between nights, or, when the run shuffled them over its
length, the median's standard error 1.2533 cv / sqrt(n); the run's noise is the robust
standard deviation of log(x / m) over all its cases — verdicts.noise_band(), as compare uses
it: what moves from one night to the next on a shared machine shows across the cases). The
time x of a run is a regression when
    x > m + h   and   x > (1 + min_change) * m,
an improvement in the mirror case, and "cannot judge" when it moved by more than min_change
but the history is too short (fewer than --min-runs values), the change is inside a noisy
case's band (the band wider than the change), or the run started on a busy machine (1-minute
load average above --max-load per core). When the newest run moved as a whole (the geometric
mean of x / m beyond min_change, two thirds of the cases moved the same way), that is one
finding, a machine change, and the cases are judged relative to it. Runs are ordered by the
date in their context (then by file name).

A run may have a second measurement of the cases it flagged, NAME.confirm.json.gz beside its
NAME.json.gz (scripts/nightly.sh measures them again right after, --flagged lists them): a
regression or improvement stands only when that measurement is outside the band as well, else
it is "cannot judge" (not confirmed). One slow moment of a shared machine rarely lasts through
both; a slower kernel does.

Exit status: 0 no regression in any machine's newest run; 1 regressions (or a run-wide shift)
in a newest run: the alert (Markdown: what regressed, by how much, the commit range) is written
to --alert (default DIR/alert.md), which is removed when there is none; 2 when a history file
could not be read (the rest is built), no file could, or Chart.js cannot be had.
"""

from __future__ import annotations

import argparse
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict

from . import stats
from .results import Complaints, cpu_change, load_many
from .verdicts import DEFAULT_MAX_LOAD_PER_CORE, finite_fraction, noise_band, run_noise, run_shift, steadiness_text

SITE_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dashboard-site")
CHART_JS = os.path.join("node_modules", "chart.js", "dist", "chart.umd.js")
METRICS = [  # key in a point, label, unit, judged for regressions (bigger = worse)
    ("time", "time", "µs", True),
    ("gflops", "throughput", "GFLOP/s", False),
    ("host", "host peak", "MB", True),
    ("device", "device peak", "MB", True),
]
RESULT_EXTENSIONS = (".json", ".json.gz", ".jsonl")
# A run's second measurement of the cases it flagged (scripts/nightly.sh writes it beside the
# run: NAME.confirm.json.gz next to NAME.json.gz): part of that run, not a run of its own.
CONFIRM_SUFFIX = ".confirm"


def parse_args(argv):
    p = argparse.ArgumentParser(prog="dashboard", description="Static dashboard from nightly layerbench results.")
    frac = lambda name: (lambda t: finite_fraction(t, name))  # noqa: E731
    p.add_argument("--history", default="results/history", help="folder of results files, one per run")
    p.add_argument("--out", default="build/dashboard", help="output folder (default build/dashboard)")
    p.add_argument("--window", type=int, default=10, help="previous runs a value is judged against (default 10)")
    p.add_argument("--min-runs", type=int, default=3, help="fewest previous values needed to judge (default 3)")
    p.add_argument("--k", type=frac("--k"), default=3.0, help="band half-width in robust standard deviations")
    p.add_argument("--min-change", type=frac("--min-change"), default=0.05,
                   help="smallest change that counts (default 0.05 = 5 %%)")
    p.add_argument("--max-load", type=frac("--max-load"), default=DEFAULT_MAX_LOAD_PER_CORE,
                   help="busiest start (1-minute load average per core) at which a run is judged (default 1.0)")
    p.add_argument("--keep-months", type=int, default=12, help="months of runs per machine on the site (default 12)")
    p.add_argument("--repo-url", default=os.environ.get("LB_REPO_URL", ""),
                   help="https://github.com/OWNER/REPO: links to the commits between runs (or LB_REPO_URL)")
    p.add_argument("--alert", help="where the alert goes when a newest run regressed (default OUT/alert.md)")
    p.add_argument("--flagged", metavar="FILE",
                   help="also write the cases whose time regressed in a machine's newest run, one per line as "
                        "MACHINE<tab>CASE, for measuring them again (scripts/nightly.sh; empty when none)")
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


def slug(text):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def history_files(folder):
    out = []
    for root, _dirs, files in os.walk(folder):
        out += [os.path.join(root, f) for f in files
                if f.endswith(RESULT_EXTENSIONS) and CONFIRM_SUFFIX + "." not in f]
    return sorted(out)


def confirm_path(run_path):
    """Where a run's confirming measurement is, if it has one: NAME.confirm.json[.gz] beside it."""
    for ext in RESULT_EXTENSIONS:
        if run_path.endswith(ext):
            stem = run_path[: -len(ext)]
            for e in (".json.gz", ".json"):
                if os.path.exists(stem + CONFIRM_SUFFIX + e):
                    return stem + CONFIRM_SUFFIX + e
    return None


def attach_confirms(runs, complain):
    """run.confirm: the run's confirming measurement (a loaded results file) or None."""
    for r in runs:
        path = confirm_path(r.path)
        r.confirm = None
        if path:
            loaded = load_many([path], complain)
            r.confirm = loaded[0] if loaded else None


def _month_index(date):
    m = re.match(r"^(\d{4})-(\d{2})", date or "")
    return int(m.group(1)) * 12 + int(m.group(2)) - 1 if m else None


def retained(runs, keep_months):
    """The runs within keep_months months of the newest (runs without a date are kept)."""
    newest = max((_month_index(r.date) for r in runs if _month_index(r.date) is not None), default=None)
    if newest is None:
        return runs, 0
    kept = [r for r in runs if _month_index(r.date) is None or newest - _month_index(r.date) < keep_months]
    return kept, len(runs) - len(kept)


def compare_url(repo, a, b):
    """The commits between two runs' commits (a link), or "" when either is unknown."""
    a, b = (c.replace("-dirty", "") for c in (a, b))
    if not repo or not a or not b or a == b:
        return ""
    return f"{repo.rstrip('/')}/compare/{a}...{b}"


def collect(runs, repo="", max_load=DEFAULT_MAX_LOAD_PER_CORE):
    """One machine's runs -> (runs sorted, run rows, cases as dicts with one point per run)."""
    runs = sorted(runs, key=lambda r: (r.date, r.path))
    run_rows = []
    for i, r in enumerate(runs):
        prev = runs[i - 1].commit if i else ""
        run_rows.append({"index": i, "id": slug(r.name), "date": r.date, "month": (r.date or "undated")[:7],
                         "host": r.host, "machine": r.machine, "commit": r.commit, "prev_commit": prev,
                         "commits_url": compare_url(repo, prev, r.commit), "cpu": r.cpu_model, "gpu": r.gpu_model,
                         "cpu_signature": r.cpu_signature, "cpu_change": cpu_change(runs[i - 1], r) if i else "",
                         "file": os.path.basename(r.path), "busy": r.busy(max_load), "steadiness": steadiness_text(r),
                         "href": f"runs/{slug(r.machine)}/{slug(r.name)}.html"})
    cases = {}
    for i, r in enumerate(runs):
        again = getattr(r, "confirm", None)
        for key, c in r.cases.items():
            c2 = again.cases.get(key) if again else None
            d = cases.setdefault(key, {"name": c.label, "kernel": c.kernel, "op": c.op, "backend": c.backend,
                                       "dtype": c.dtype, "device": c.device, "type": c.type, "threads": c.threads,
                                       "problem": c.problem, "points": []})
            ts = c.times_us() if c.ok else []
            # What the run's own repetitions say about the value's noise: back to back, their cv
            # (a floor: they miss what moves between nights); shuffled over the run, each met
            # another moment of it, so the median's standard error, 1.2533 cv / sqrt(n).
            rep_noise = None
            if c.ok and c.cv is not None:
                rep_noise = 1.2533 * c.cv / math.sqrt(len(ts)) if r.shuffled and len(ts) > 1 else c.cv
            d["points"].append({
                "run": i, "status": c.status, "cpu": r.cpu_signature,
                "time": c.time_us if c.ok else None,
                "confirm": c2.time_us if c2 is not None and c2.ok else None,
                "time_lo": min(ts) if ts else None, "time_hi": max(ts) if ts else None,
                "cv": c.cv if c.ok else None, "rep_noise": rep_noise,
                "gflops": c.gflops if c.ok else None,
                "host": c.host_peak / 1e6 if c.ok and c.host_peak is not None else None,
                "device": c.device_peak / 1e6 if c.ok and c.device_peak is not None else None,
                "reason": "" if c.ok else (c.error_message or c.reason)})
    ordered = sorted(cases.values(), key=lambda d: (d["op"], d["backend"], d["dtype"], d["name"]))
    for n, d in enumerate(ordered):
        d["id"] = n
        d["measured"] = any(p["time"] is not None for p in d["points"])
    return runs, run_rows, ordered


def judge_value(prev, x, k, min_change, min_runs, shift=1.0, rep_noise=None, noise=None, again=None):
    """One value against its history -> (verdict, details). verdict: "regression", "improvement",
    "cannot judge" (details["why"] says why) or "" (within the band or too small to count).
    Floors under the spread, since the MAD of a few nights can be near zero by chance:
    `rep_noise`, the case's typical relative noise by its repetitions within a run (their cv,
    or the median's standard error when they were shuffled over the run), and `noise`, the run's
    case-to-case spread (run_noise() of every case's value over its median before). `again`, a
    second measurement of the same run (scripts/nightly.sh measures what it flagged once more):
    a verdict stands only when that one is outside the band too."""
    d = {"runs": len(prev)}
    if len(prev) < min_runs:
        d["why"] = f"history too short ({len(prev)} of {min_runs} runs)"
        return ("cannot judge", d) if prev and abs(x / stats.median(prev) - 1) > min_change else ("", d)
    m = stats.median(prev) * shift
    # The band's half-width: k spreads, whichever is widest (the run's noise through
    # noise_band(), the definition compare uses too).
    halves = {"its own spread over the runs before": k * stats.mad(prev) * shift,
              "its repetitions' spread": k * m * (rep_noise or 0.0),
              "the run's case-to-case noise": m * (noise_band(noise, k) or 0.0)}
    widest = max(halves, key=halves.get)
    half = max(halves[widest], k * 0.01 * m)
    # spread: the band's half-width over k (the page's s), whichever spread set it
    d.update(median=m, spread=half / k, limit=max(m + half, (1 + min_change) * m),
             low=min(m - half, (1 - min_change) * m))
    if m <= 0:
        return "", d
    verdict = "regression" if x > d["limit"] else "improvement" if x < d["low"] else ""
    if verdict and again is not None:
        d["again"] = again
        if not (again > d["limit"] if verdict == "regression" else again < d["low"]):
            d["why"] = (f"not confirmed: measured again right after, {again / m:.3f}× the median "
                        f"(band {d['low'] / m:.3f}-{d['limit'] / m:.3f}×)")
            return "cannot judge", d
    if verdict:
        return verdict, d
    if abs(x / m - 1) > min_change:
        d["why"] = f"noisy: inside the band (±{half / m:.0%} of the median, from {widest})"
        return "cannot judge", d
    return "", d


def _history(pts, run, key, window, through=False):
    """The case's `key` in the last `window` runs before `run` (and `run` itself when `through`)
    that ran on its CPU: a run under the same machine name on another CPU (the points' "cpu",
    the signature; "" where a file does not say) measures the CPU, not the code."""
    cpu = pts[run].get("cpu", "") if run in pts else ""
    return [pts[r][key] for r in sorted(pts)
            if (r < run or (through and r == run)) and pts[r].get(key) is not None
            and (not cpu or not pts[r].get("cpu") or pts[r]["cpu"] == cpu)][-window:]


def _typical_rep_noise(pts, run, window):
    """The median of the case's within-run noise (the points' rep_noise) over the runs up to this one."""
    return stats.median(_history(pts, run, "rep_noise", window + 1, through=True))


def judge(cases, last_run, window, min_runs, k, min_change, shift=1.0, busy="", verdicts=("regression",)):
    """The rule (module docstring) on one run -> the findings with the verdicts asked for."""
    out = []
    noise = run_noise(_time_ratios(cases, last_run, window, min_runs))
    for d in cases:
        pts = {p["run"]: p for p in d["points"]}
        now = pts.get(last_run)
        if now is None:
            continue
        for key, label, unit, judged in METRICS:
            if not judged or now.get(key) is None:
                continue
            prev = _history(pts, last_run, key, window)
            verdict, det = judge_value(prev, now[key], k, min_change, min_runs, shift if key == "time" else 1.0,
                                       _typical_rep_noise(pts, last_run, window) if key == "time" else None,
                                       noise if key == "time" else None, now.get("confirm") if key == "time" else None)
            if busy and key == "time" and verdict in ("regression", "improvement", "cannot judge"):
                verdict, det["why"] = "cannot judge", f"busy machine: {busy}"
            if verdict not in verdicts:
                continue
            m = det.get("median")
            out.append({"case": d["id"], "name": d["name"], "metric": label, "unit": unit, "value": now[key],
                        "median": m, "spread": det.get("spread"), "limit": det.get("limit"),
                        "ratio": now[key] / m if m else None, "runs": det["runs"], "run": last_run,
                        "again": det.get("again"),
                        "verdict": verdict, "why": det.get("why", "")})
    out.sort(key=lambda r: -(r["ratio"] or 0))
    return out


def bands(cases, n_runs, window, min_runs, k, min_change):
    """Per case and run: the time band the run was judged against and whether it was flagged
    (drawn on the cards: the band shaded, flagged points marked)."""
    noise = {r: run_noise(_time_ratios(cases, r, window, min_runs)) for r in range(n_runs)}
    for d in cases:
        pts = {p["run"]: p for p in d["points"]}
        for r, p in pts.items():
            if p.get("time") is None:
                continue
            prev = _history(pts, r, "time", window)
            verdict, det = judge_value(prev, p["time"], k, min_change, min_runs,
                                       rep_noise=_typical_rep_noise(pts, r, window), noise=noise.get(r),
                                       again=p.get("confirm"))
            p["band"] = [det["low"], det["limit"]] if "limit" in det else None
            p["flag"] = verdict if verdict in ("regression", "improvement") else ""


def _time_ratios(cases, run, window, min_runs):
    """Every case's time in a run over its median in the runs before (those with enough history)."""
    ratios = []
    for d in cases:
        pts = {p["run"]: p for p in d["points"]}
        now = pts.get(run)
        if now is None or now.get("time") is None:
            continue
        prev = _history(pts, run, "time", window)
        if len(prev) >= min_runs and stats.median(prev):
            ratios.append(now["time"] / stats.median(prev))
    return ratios


def newest_shift(cases, last_run, window, min_runs, min_change):
    return run_shift(_time_ratios(cases, last_run, window, min_runs), min_change)


def overview(cases, n_runs, window, findings):
    """Per (layer type, backend): per run, the geometric mean of time ÷ the case's baseline (the
    median of the --window runs before the newest on its CPU), and the newest run's counts."""
    last = n_runs - 1
    groups = defaultdict(list)
    for d in cases:
        if d["measured"]:
            groups[(d["type"], d["backend"])].append(d)
    out = []
    for (typ, backend), ds in sorted(groups.items()):
        series = []
        for r in range(n_runs):
            ratios = []
            for d in ds:
                pts = {p["run"]: p for p in d["points"]}
                base = _history(pts, last, "time", window)
                if base and pts.get(r) and pts[r].get("time") is not None:
                    ratios.append(pts[r]["time"] / stats.median(base))
            series.append(stats.geomean(ratios))
        ids = {d["id"] for d in ds}
        count = lambda v: sum(1 for f in findings if f["case"] in ids and f["verdict"] == v)  # noqa: E731
        out.append({"type": typ, "backend": backend, "cases": len(ds), "ratio": series[-1] if series else None,
                    "series": series, "regressions": count("regression"), "improvements": count("improvement"),
                    "unjudged": count("cannot judge")})
    return out


def _fmt(v, unit):
    if v is None:
        return "—"
    return f"{v:.4g} {unit}"


def run_page(run, row, cases, all_runs):
    e = html.escape
    ctx_keys = ["date", "layerbench_machine", "layerbench_machine_id", "host_name", "layerbench_cpu_model",
                "layerbench_cpu_signature",
                "layerbench_cpu_microcode", "layerbench_kernel", "layerbench_governor", "layerbench_turbo",
                "layerbench_smt", "layerbench_cpu_isa", "layerbench_gpu_model", "layerbench_gpu_driver",
                "layerbench_cuda_version", "layerbench_git_commit", "layerbench_build", "layerbench_compiler",
                "num_cpus", "load_avg", "layerbench_format_version"]
    ctx_rows = "".join(f"<tr><th>{e(k)}</th><td>{e(str(run.context[k]))}</td></tr>"
                       for k in ctx_keys if k in run.context)
    peaks = "".join(f"<tr><th>{e(p.kind)}{' ×' + str(p.threads) if p.threads else ''} ({e(p.device)})</th>"
                    f"<td>{p.per_second / 1e9:,.1f} G{e(p.unit)} — {e(p.how)}</td></tr>" for p in run.peaks())
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
    commits = (f"<p>Commits since the previous run: <a class=\"commits\" href=\"{e(row['commits_url'])}\">"
               f"{e(row['prev_commit'])}…{e(row['commit'])}</a></p>" if row["commits_url"] else "")
    busy = f"<p class=\"busy\">Busy at the start: {e(row['busy'])} — its times are not judged.</p>" if row["busy"] else ""
    if row["cpu_change"]:
        busy += (f"<p class=\"busy\">Not the run before's CPU: {e(row['cpu_change'])} — its times are judged "
                 "only against runs on its own CPU.</p>")
    if row["steadiness"]:
        busy += f"<p class=\"steadiness\">The machine over the run: {e(row['steadiness'])}.</p>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>layerbench run {e(row['id'])}</title>
<link rel="stylesheet" href="../../style.css"></head>
<body>
<header><h1>layerbench run <code>{e(row['id'])}</code> on {e(row['machine'])}</h1>
<nav><a href="../../index.html">← dashboard</a> {prev} {nxt}</nav></header>
<main>
<section><h2>Machine and build</h2>{commits}{busy}<table class="kv">{ctx_rows}</table>
<h3>Measured peaks</h3><table class="kv">{peaks or '<tr><td>none recorded</td></tr>'}</table>
<p>From <code>{e(row['file'])}</code>.</p></section>
<section><h2>Cases ({len(body)})</h2>
<table class="cases"><thead><tr><th>case</th><th>status</th><th>time</th><th>throughput</th><th>host peak</th>
<th>device peak</th><th>reason</th></tr></thead><tbody>
{''.join(body)}
</tbody></table></section>
</main></body></html>
"""


def _write_js(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def build_machine(name, runs, out, args):
    """One machine's part of the site -> its index entry (runs, cases without points, verdicts)."""
    runs, run_rows, cases = collect(runs, args.repo_url, args.max_load)
    last = len(runs) - 1
    rule = dict(window=args.window, min_runs=args.min_runs, k=args.k, min_change=args.min_change)
    busy = run_rows[last]["busy"]
    shift = None if busy else newest_shift(cases, last, args.window, args.min_runs, args.min_change)
    findings = judge(cases, last, **rule, shift=shift[0] if shift else 1.0, busy=busy,
                     verdicts=("regression", "improvement", "cannot judge"))
    same_cpu = sum(1 for r in runs[:last] if not cpu_change(r, runs[last]))
    bands(cases, len(runs), **rule)
    months = sorted({r["month"] for r in run_rows})
    for month in months:
        in_month = {r["index"] for r in run_rows if r["month"] == month}
        # (A point's "cpu" is for the rule only: the run rows say which CPU a run had.)
        part = [{"id": d["id"], "points": [{k: v for k, v in p.items() if k != "cpu"} for p in d["points"]
                                           if p["run"] in in_month]} for d in cases]
        _write_js(os.path.join(out, "data", slug(name), month + ".js"),
                  "// Written by scripts/dashboard: one machine's cases in one month.\n"
                  f"window.LB_LOADED({json.dumps(name)}, {json.dumps(month)}, "
                  + json.dumps([c for c in part if c["points"]], separators=(",", ":")) + ");\n")
    for run, row in zip(runs, run_rows):
        _write_js(os.path.join(out, row["href"]), run_page(run, row, cases, run_rows))
    meta = [{k: v for k, v in d.items() if k != "points"} for d in cases]
    never = [d for d in meta if not d["measured"]]
    return {"name": name, "runs": run_rows, "months": months, "cases": [d for d in meta if d["measured"]],
            "never_measured": len(never), "findings": findings, "busy": busy, "same_cpu_runs": same_cpu,
            "shift": {"factor": shift[0], "moved": shift[1], "of": shift[2]} if shift else None,
            "noise": noise_band(run_noise(_time_ratios(cases, last, args.window, args.min_runs)), args.k),
            "overview": overview(cases, len(runs), args.window, findings)}


def alert_text(machines, repo):
    lines = ["# layerbench nightly: regressions", ""]
    for m in machines:
        regs = [f for f in m["findings"] if f["verdict"] == "regression"]
        if not regs and not m["shift"]:
            continue
        runs = m["runs"]
        new = runs[-1]
        prev = runs[-2] if len(runs) > 1 else None
        rng = f"{prev['commit'] or '?'}..{new['commit'] or '?'}" if prev else (new["commit"] or "?")
        lines += [f"## {m['name']}: run {new['id']} ({new['date']})", "",
                  f"Commit range: `{rng}`" + (f" — {new['commits_url']}" if new["commits_url"] else ""), ""]
        if m["shift"]:
            s = m["shift"]
            lines += [f"**Run-wide shift**: every case ×{s['factor']:.3f} ({s['moved']} of {s['of']} cases moved the "
                      "same way) — a machine change (clock, governor, microcode, a busy neighbour) or a change that "
                      "slows everything; the cases below are judged relative to it.", ""]
        if regs:
            lines += ["| case | metric | newest | median before | newest ÷ median | measured again ÷ median | limit "
                      "| runs |", "|---|---|---:|---:|---:|---:|---:|---:|"]
            for f in regs:
                again = f"{f['again'] / f['median']:.3f}" if f.get("again") and f["median"] else "—"
                lines.append(f"| {f['name']} | {f['metric']} | {_fmt(f['value'], f['unit'])} | "
                             f"{_fmt(f['median'], f['unit'])} | {f['ratio']:.3f} ({(f['ratio'] - 1):+.1%}) | {again} | "
                             f"{_fmt(f['limit'], f['unit'])} | {f['runs']} |")
            lines.append("")
    return "\n".join(lines) + "\n"


def build(runs, out, args, chart_path):
    by_machine = defaultdict(list)
    for r in runs:
        by_machine[r.machine].append(r)
    if os.path.isdir(os.path.join(out, "data")):
        shutil.rmtree(os.path.join(out, "data"))  # a month or machine that left the history leaves the site
    machines, dropped = [], 0
    for name in sorted(by_machine):
        kept, n = retained(by_machine[name], args.keep_months)
        dropped += n
        machines.append(build_machine(name, kept, out, args))
    machines.sort(key=lambda m: (-len(m["runs"]), m["name"]))  # the longest history first
    rule = {"window": args.window, "min_runs": args.min_runs, "k": args.k, "min_change": args.min_change,
            "max_load": args.max_load, "keep_months": args.keep_months}
    index = {"machines": machines, "rule": rule, "repo": args.repo_url, "dropped": dropped,
             "metrics": [{"key": k, "label": l, "unit": u} for k, l, u, _ in METRICS]}
    _write_js(os.path.join(out, "data", "index.js"),
              "// Written by scripts/dashboard: machines, runs, verdicts; cases' points are per month.\n"
              "window.LB_INDEX = " + json.dumps(index, separators=(",", ":")) + ";\n")
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
    return machines, dropped


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    complain = Complaints("dashboard")
    problems = complain.problems

    if not os.path.isdir(args.history):
        print(f"dashboard: {args.history}: no such folder (one results JSON per nightly run goes there)",
              file=sys.stderr)
        return 2
    runs = load_many(history_files(args.history), complain)
    attach_confirms(runs, complain)
    if not runs:
        print(f"dashboard: no results file could be read in {args.history}", file=sys.stderr)
        return 2
    chart_path = chart_js(complain)
    if chart_path is None:
        return 2
    machines, dropped = build(runs, args.out, args, chart_path)
    alert = args.alert or os.path.join(args.out, "alert.md")
    flagged = [m for m in machines if m["shift"] or any(f["verdict"] == "regression" for f in m["findings"])]
    for m in machines:
        count = lambda v: sum(1 for f in m["findings"] if f["verdict"] == v)  # noqa: E731
        judged = "cannot judge its times: busy machine" if m["busy"] else (
            f"{count('regression')} regressions, {count('improvement')} improvements, "
            f"{count('cannot judge')} cannot judge")
        print(f"dashboard: {m['name']}: {len(m['runs'])} runs, {len(m['cases'])} cases; newest run "
              f"{m['runs'][-1]['id']}: {judged}" + (f"; run-wide shift ×{m['shift']['factor']:.3f}" if m["shift"] else "")
              + (f"; its case-to-case noise ±{m['noise']:.0%} (k robust SDs: smaller changes cannot be judged)"
                 if m["noise"] is not None else "")
              + (f"; its machine: {m['runs'][-1]['steadiness']}" if m["runs"][-1]["steadiness"] else "")
              + (f"; {m['runs'][-1]['cpu_change']}: judged only against its {m['same_cpu_runs']} earlier runs on "
                 "this CPU" if m["runs"][-1]["cpu_change"] else ""))
    if dropped:
        print(f"dashboard: {dropped} runs older than {args.keep_months} months before their machine's newest are "
              "left out (retention)")
    print(f"dashboard: {len(machines)} machines -> {os.path.join(args.out, 'index.html')}")
    if args.flagged:
        with open(args.flagged, "w", encoding="utf-8") as f:
            for m in machines:
                for n in sorted({x["name"] for x in m["findings"] if x["verdict"] == "regression" and x["metric"] == "time"}):
                    f.write(f"{m['name']}\t{n}\n")
    if flagged:
        with open(alert, "w", encoding="utf-8") as f:
            f.write(alert_text(flagged, args.repo_url))
        print(f"dashboard: regressions: alert written to {alert}", file=sys.stderr)
        return 1
    if os.path.exists(alert):
        os.remove(alert)
    return 2 if problems else 0
