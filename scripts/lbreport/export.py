"""scripts/export: layerbench results in the input formats of existing dashboards.

    scripts/export --format FORMAT RESULTS.json [MORE.json ...] [--out FILE]
                   [--filter REGEX] [--headline]

FORMAT:
  github-action-benchmark         the action's `customSmallerIsBetter` input: a JSON array of
                                  {"name", "unit", "value", "range", "extra"}; per case its
                                  time (us) and host and device memory peak (bytes) — all
                                  smaller is better, so the action may alert on them.
  github-action-benchmark-bigger  `customBiggerIsBetter`: throughput (GFLOP/s), for a second
                                  action step.
  github-action-benchmark-utilisation
                                  CPU utilisation (% of one core) and GPU utilisation (%), to
                                  chart only (`fail-on-alert: false`): more use is neither better
                                  nor worse, so it is in neither alerting file.
  bencher                         Bencher Metric Format (BMF): {benchmark: {measure: {"value",
                                  "lower_value", "upper_value"}}} with the built-in measures
                                  `latency` (ns) and `throughput` (FLOP/s as operations/s) and
                                  the measures `host-peak-memory`, `device-peak-memory` (bytes),
                                  `cpu-utilisation`, `gpu-utilisation` (%), which Bencher
                                  creates on first use. lower/upper = the repetitions' min/max.

A benchmark is a case (lb_case, plus "cache cold" / "blocking sync" when they apply), named
"<machine>: <case>" when the files come from more than one machine (grouped, never merged).
Cases that were not measured (failed, unsupported, out of memory) are left out and counted on
stderr. --filter REGEX keeps the cases whose name matches; --headline keeps the headline
subset: f32, no ReLU, hot caches, spin sync, and per problem, backend and thread count only the
fastest kernel (a few hundred series instead of thousands). Exit status: 0; 1 when an input could not be read (the rest are exported); 2 when
none could or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys

from .results import all_cases, load_many, Complaints

FORMATS = ("github-action-benchmark", "github-action-benchmark-bigger", "github-action-benchmark-utilisation",
           "bencher")


def _regex(text):
    try:
        return re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"--filter {text!r}: not a regular expression ({e})") from None


def parse_args(argv):
    p = argparse.ArgumentParser(prog="export", description="Export layerbench results for other dashboards.")
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("results", nargs="+")
    p.add_argument("--out", help="write here instead of standard output")
    p.add_argument("--filter", type=_regex, help="only cases whose name matches this regular expression")
    p.add_argument("--headline", action="store_true", help="only the headline subset (see the module's help)")
    return p.parse_args(argv)


def headline(cases):
    """f32, no ReLU, hot, spin sync; per (problem, backend, threads) the fastest kernel."""
    best = {}
    for c in cases:
        if c.dtype != "f32" or c.relu not in ("none", "") or c.cache != "hot" or c.blocking_sync:
            continue
        key = (c.machine_name, c.problem, c.backend, c.threads)
        if key not in best or c.time_us < best[key].time_us:
            best[key] = c
    return sorted(best.values(), key=lambda c: c.label)


def _spread(vs):
    return f"± {statistics.pstdev(vs):.4g}" if len(vs) > 1 else None


def _extra(c):
    lines = [c.problem, f"kernel {c.kernel} on {c.device}, {c.threads} thread(s), status {c.status}",
             f"repetitions {max(len(c.reps), 1)}"]
    if c.cv is not None:
        lines.append(f"cv {c.cv:.3f}" + (" (noisy)" if c.noisy else ""))
    return "\n".join(lines)


def github_action_benchmark(cases, kind="smaller", prefix=False):
    out = []
    for c in cases:
        extra = _extra(c)
        if kind == "bigger":
            metrics = [("throughput", "GFLOP/s", [v / 1e9 for v in c.values("lb_flop_per_s")], c.gflops)]
        elif kind == "utilisation":
            metrics = [("CPU utilisation", "%", c.values("lb_cpu_util_avg"), c.value("lb_cpu_util_avg")),
                       ("GPU utilisation", "%", c.values("lb_gpu_util_avg"), c.value("lb_gpu_util_avg"))]
        else:
            metrics = [("time", "us", c.times_us(), c.time_us),
                       ("host peak memory", "bytes", c.values("lb_host_peak_bytes"), c.host_peak),
                       ("device peak memory", "bytes", c.values("lb_device_peak_bytes"), c.device_peak)]
        name = f"{c.machine_name}: {c.label}" if prefix else c.label
        for what, unit, vs, v in metrics:
            if v is None:
                continue
            entry = {"name": f"{name} - {what}", "unit": unit, "value": v}
            if _spread(vs):
                entry["range"] = _spread(vs)
            entry["extra"] = extra
            out.append(entry)
    return out


def bencher(cases, prefix=False):
    out = {}
    for c in cases:
        measures = {}

        def put(slug, vs, v, scale=1.0):
            if v is None:
                return
            m = {"value": v * scale}
            if vs:
                m["lower_value"] = min(vs) * scale
                m["upper_value"] = max(vs) * scale
            measures[slug] = m

        put("latency", c.times_us(), c.time_us, 1e3)  # Bencher's latency is in nanoseconds
        put("throughput", c.values("lb_flop_per_s"), c.value("lb_flop_per_s"))
        put("host-peak-memory", c.values("lb_host_peak_bytes"), c.host_peak)
        put("device-peak-memory", c.values("lb_device_peak_bytes"), c.device_peak)
        put("cpu-utilisation", c.values("lb_cpu_util_avg"), c.value("lb_cpu_util_avg"))
        put("gpu-utilisation", c.values("lb_gpu_util_avg"), c.value("lb_gpu_util_avg"))
        out[f"{c.machine_name}: {c.label}" if prefix else c.label] = measures
    return out


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    complain = Complaints("export")
    problems = complain.problems

    runs = load_many(args.results, complain)
    if not runs:
        print("export: no results file could be read", file=sys.stderr)
        return 2
    machines = sorted({r.machine for r in runs})
    cases = []
    for m in machines:  # per machine: the same case on two machines is two series, never one
        mine = [r for r in runs if r.machine == m]
        for c in all_cases(mine, complain):
            c.machine_name = m
            cases.append(c)
    cases.sort(key=lambda c: (c.machine_name, c.label))
    measured = [c for c in cases if c.ok]
    if len(measured) < len(cases):
        print(f"export: {len(cases) - len(measured)} cases not measured (failed, unsupported or out of memory) "
              "are left out", file=sys.stderr)
    if args.filter:
        measured = [c for c in measured if args.filter.search(c.label)]
    if args.headline:
        measured = headline(measured)
    if not measured:
        print("export: no measured case left to export (check --filter)", file=sys.stderr)
        return 2
    prefix = len(machines) > 1
    if prefix:
        print(f"export: {len(machines)} machines ({', '.join(machines)}): names start with the machine",
              file=sys.stderr)
    if args.format == "bencher":
        doc = bencher(measured, prefix)
    else:
        kind = args.format.rsplit("-", 1)[-1] if args.format != "github-action-benchmark" else "smaller"
        doc = github_action_benchmark(measured, kind, prefix)
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 1 if problems else 0
