#!/usr/bin/python3
"""What other tools read from our results files. Google Benchmark's tools/compare.py pairs
benchmarks by name and takes the geometric mean of real_time and cpu_time over them (one zero
time makes it NaN, and its OVERALL_GEOMEAN line is dropped); github-action-benchmark's Google
Benchmark parser charts every entry's real_time in its time_unit. So every entry of
"benchmarks" must be a measured case: a non-zero finite time in a known unit, no error entry,
each (name, repetition, aggregate) once, and the aggregates Google Benchmark writes for a case
with repetitions. Format 2 of the results (docs/results-format.md) keeps the other cases in
"layerbench_not_measured" instead; the fixture format2_run.json is written by hand in that
shape, and a run of `layerbench` in that format (LAYERBENCH given, format 2 built) is checked
the same way."""

import json
import math
import os
import subprocess
import tempfile
import unittest
from collections import defaultdict

from helpers import fixture

from lbreport import results as R

TIME_UNITS = ("ns", "us", "ms", "s")
GB_COMPARE = "/usr/share/benchmark/compare.py"  # Debian's libbenchmark-tools
GB_AGGREGATES = {"mean", "median", "stddev", "cv"}


def contract_problems(doc):
    """-> the ways a results document breaks what compare.py and github-action-benchmark read."""
    out = []
    rows = doc.get("benchmarks")
    if not isinstance(rows, list) or not rows:
        return ["no benchmarks list"]
    seen = set()
    aggregates = defaultdict(set)
    repeated = {}
    for i, r in enumerate(rows):
        name = r.get("name")
        if not isinstance(name, str) or not name:
            out.append(f"benchmarks[{i}]: no name")
            continue
        if r.get("error_occurred"):
            out.append(f"{name}: an error entry (not measured) in benchmarks")
        kind = r.get("run_type", "iteration")
        key = (name, r.get("repetition_index"), r.get("aggregate_name"), kind)
        if key in seen:
            out.append(f"{name}: appears twice as {key[1:]}")
        seen.add(key)
        if r.get("time_unit") not in TIME_UNITS:
            out.append(f"{name}: time_unit {r.get('time_unit')!r}")
        if kind == "aggregate":  # named "<run_name>_<aggregate>", grouped by run_name
            if name != f"{r.get('run_name')}_{r.get('aggregate_name')}":
                out.append(f"{name}: an aggregate not named <run_name>_<aggregate_name>")
            aggregates[r.get("run_name")].add(r.get("aggregate_name"))
            continue
        repeated[r.get("run_name", name)] = r.get("repetitions", 1)
        for t in ("real_time", "cpu_time"):
            v = r.get(t)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                out.append(f"{name}: {t} {v!r} (compare.py's geometric mean needs it > 0)")
        if not isinstance(r.get("iterations"), int) or r["iterations"] <= 0:
            out.append(f"{name}: iterations {r.get('iterations')!r}")
    for name, reps in repeated.items():
        if isinstance(reps, int) and reps > 1 and not GB_AGGREGATES <= aggregates[name]:
            out.append(f"{name}: {reps} repetitions without the aggregates {sorted(GB_AGGREGATES - aggregates[name])}")
    return out


def geomean_like_compare_py(rows):
    """compare.py's calculate_geomean over iterations: NaN when any time is 0."""
    ts = [r["real_time"] for r in rows if r.get("run_type", "iteration") == "iteration"]
    if any(t <= 0 for t in ts):
        return float("nan")
    return math.exp(sum(math.log(t) for t in ts) / len(ts))


class Contract(unittest.TestCase):
    def test_new_format_fixture_meets_it(self):
        with open(fixture("format2_run.json"), encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(contract_problems(doc), [])
        self.assertTrue(math.isfinite(geomean_like_compare_py(doc["benchmarks"])))
        # github-action-benchmark: one chart value per entry, real_time in its unit.
        charted = [(r["name"], r["real_time"], r["time_unit"]) for r in doc["benchmarks"]]
        self.assertTrue(all(v > 0 for _, v, _ in charted))

    def test_the_check_fails_on_the_old_shape(self):
        # Format 1 put unsupported cases in benchmarks with time 0: exactly what breaks the tools.
        with open(fixture("cpu_run.json"), encoding="utf-8") as f:
            doc = json.load(f)
        problems = contract_problems(doc)
        self.assertTrue(any("error entry" in p for p in problems), problems)
        self.assertTrue(math.isnan(geomean_like_compare_py(doc["benchmarks"])))

    def test_we_read_the_new_format(self):
        run = R.load(fixture("format2_run.json"))
        self.assertEqual((run.format_version, run.machine, run.machine_id), (2, "zen3-vm", "0123456789abcdef"))
        st = {c.name: c.status for c in run.cases.values()}
        self.assertEqual(st["conv2d.eigen.im2col/f32/dw8-mb1/threads:1"], "unsupported")
        self.assertEqual(st["dense.onednn.default/f32/huge-mb65536/threads:1"], "out_of_memory")
        oom = next(c for c in run.cases.values() if c.status == "out_of_memory")
        self.assertIn("layerbench check", oom.repro)
        self.assertEqual((oom.type, oom.dtype, oom.threads), ("dense", "f32", 1))
        ok = [c for c in run.cases.values() if c.ok]
        self.assertEqual(len(ok), 2)
        peaks = {(p.kind, p.threads): p for p in run.peaks()}
        self.assertAlmostEqual(peaks[("f32_fma", 2)].per_second, 2.0e11)
        self.assertIn("AVX2", peaks[("f32_fma", 2)].how)

    def test_google_benchmarks_compare_py(self):
        """Google Benchmark's own tools/compare.py (Debian's libbenchmark-tools) on our files:
        its OVERALL_GEOMEAN line is there for the new format, and missing for the old shape."""
        if not os.path.exists(GB_COMPARE):
            self.skipTest(f"{GB_COMPARE} missing: scripts/install-deps.sh installs libbenchmark-tools")

        def overall(name):
            path = fixture(name)
            p = subprocess.run(["/usr/bin/python3", GB_COMPARE, "--no-color", "benchmarks", path, path],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            return [l for l in p.stdout.splitlines() if l.startswith("OVERALL_GEOMEAN")]

        line = overall("format2_run.json")
        self.assertEqual(len(line), 1)
        self.assertEqual(line[0].split()[1:3], ["+0.0000", "+0.0000"])
        self.assertEqual(overall("cpu_run.json"), [])

    @unittest.skipUnless(os.environ.get("LAYERBENCH"), "LAYERBENCH not given")
    def test_a_real_run_in_the_new_format(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "r.json")
            p = subprocess.run([os.environ["LAYERBENCH"], "run", "--suite", "smoke", "--kernel", "dense.onednn.default,conv2d.eigen.im2col",
                                "--benchmark_min_time=0.002", "--repetitions", "3,3", "--out", out],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            with open(out, encoding="utf-8") as f:
                doc = json.load(f)
        if doc["context"].get("layerbench_format_version") != "2":
            self.skipTest("this layerbench writes format 1 (unmeasured cases in benchmarks)")
        self.assertEqual(contract_problems(doc), [])


if __name__ == "__main__":
    unittest.main()
