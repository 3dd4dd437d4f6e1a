"""scripts/export: layerbench results in the input formats of existing dashboards.

    scripts/export --format FORMAT RESULTS.json [MORE.json ...] [--out FILE]

FORMAT:
  github-action-benchmark         the action's `customSmallerIsBetter` input: a JSON array of
                                  {"name", "unit", "value", "range", "extra"}; per case its
                                  time (us), host and device memory peak (bytes) and host CPU
                                  utilisation (% of one core) — all smaller is better.
  github-action-benchmark-bigger  `customBiggerIsBetter`: throughput (GFLOP/s) and GPU
                                  utilisation (%), for a second action step.
  bencher                         Bencher Metric Format (BMF): {benchmark: {measure: {"value",
                                  "lower_value", "upper_value"}}} with the built-in measures
                                  `latency` (ns) and `throughput` (FLOP/s as operations/s) and
                                  the measures `host-peak-memory`, `device-peak-memory` (bytes),
                                  `cpu-utilisation`, `gpu-utilisation` (%), which Bencher
                                  creates on first use. lower/upper = the repetitions' min/max.

A benchmark is a case (lb_case, plus "cache cold" / "blocking sync" when they apply). Cases
that were not measured (failed, unsupported, out of memory) are left out and counted on
stderr. Exit status: 0; 1 when an input could not be read (the rest are exported); 2 when
none could or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from .results import all_cases, load_many, Complaints

FORMATS = ("github-action-benchmark", "github-action-benchmark-bigger", "bencher")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="export", description="Export layerbench results for other dashboards.")
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("results", nargs="+")
    p.add_argument("--out", help="write here instead of standard output")
    return p.parse_args(argv)


def _spread(vs):
    return f"± {statistics.pstdev(vs):.4g}" if len(vs) > 1 else None


def _extra(c):
    lines = [c.problem, f"kernel {c.kernel} on {c.device}, {c.threads} thread(s), status {c.status}",
             f"repetitions {max(len(c.reps), 1)}"]
    if c.cv is not None:
        lines.append(f"cv {c.cv:.3f}" + (" (noisy)" if c.noisy else ""))
    return "\n".join(lines)


def github_action_benchmark(cases, bigger=False):
    out = []
    for c in cases:
        extra = _extra(c)
        if bigger:
            metrics = [("throughput", "GFLOP/s", [v / 1e9 for v in c.values("lb_flop_per_s")], c.gflops),
                       ("GPU utilisation", "%", c.values("lb_gpu_util_avg"), c.value("lb_gpu_util_avg"))]
        else:
            metrics = [("time", "us", c.times_us(), c.time_us),
                       ("host peak memory", "bytes", c.values("lb_host_peak_bytes"), c.host_peak),
                       ("device peak memory", "bytes", c.values("lb_device_peak_bytes"), c.device_peak),
                       ("CPU utilisation", "%", c.values("lb_cpu_util_avg"), c.value("lb_cpu_util_avg"))]
        for what, unit, vs, v in metrics:
            if v is None:
                continue
            entry = {"name": f"{c.label} - {what}", "unit": unit, "value": v}
            if _spread(vs):
                entry["range"] = _spread(vs)
            entry["extra"] = extra
            out.append(entry)
    return out


def bencher(cases):
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
        out[c.label] = measures
    return out


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    complain = Complaints("export")
    problems = complain.problems

    runs = load_many(args.results, complain)
    if not runs:
        print("export: no results file could be read", file=sys.stderr)
        return 2
    cases = sorted(all_cases(runs, complain), key=lambda c: c.label)
    measured = [c for c in cases if c.ok]
    if len(measured) < len(cases):
        print(f"export: {len(cases) - len(measured)} cases not measured (failed, unsupported or out of memory) "
              "are left out", file=sys.stderr)
    if args.format == "bencher":
        doc = bencher(measured)
    else:
        doc = github_action_benchmark(measured, bigger=args.format.endswith("-bigger"))
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 1 if problems else 0
