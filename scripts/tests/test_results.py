#!/usr/bin/python3
"""Reading results files: the real CPU run, the GPU run, failures, an interrupted .jsonl, and
every kind of broken file (one line naming the file; the other files still load)."""

import gzip
import json
import os
import statistics
import subprocess
import tempfile
import unittest

from helpers import SCRIPTS, TempDir, fixture

from lbreport import graphs
from lbreport import results as R


class Loading(unittest.TestCase):
    def test_foreign_google_benchmark_file(self):
        # Plain Google Benchmark output: nothing says a case was verified, so it is "unknown"
        # (measured, never "passed"); a NaN repetition is counted and reported, not dropped.
        doc = {"context": {"host_name": "ci", "num_cpus": 4}, "benchmarks": [
            {"name": "BM_x/8", "run_name": "BM_x/8", "run_type": "iteration", "repetitions": 3,
             "repetition_index": i, "iterations": 10, "real_time": t, "cpu_time": 1.0, "time_unit": "ns"}
            for i, t in enumerate([1.0, float("nan"), 3.0])]}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "gb.json")
            with open(path, "w") as f:
                json.dump(doc, f)  # NaN written as Google Benchmark writes it
            run = R.load(path)
            p = subprocess.run([os.path.join(SCRIPTS, "report"), path, "--no-plots", "--out", tmp],
                               capture_output=True, text=True)
            with open(os.path.join(tmp, "report.md"), encoding="utf-8") as f:
                sources = f.read().split("## Whitepaper")[0]
        c = next(iter(run.cases.values()))
        self.assertEqual(c.status, "unknown")
        self.assertTrue(c.ok)
        self.assertEqual((c.nan_reps, len(c.reps), c.time_us), (1, 2, 0.002))
        self.assertTrue(any("1 repetitions of 1 cases have no finite time (NaN)" in w for w in run.warnings))
        self.assertIn("NaN", p.stderr)
        self.assertIn("1 unknown", sources)
        self.assertNotIn("passed", sources)

    def test_machine(self):
        a = R.load(fixture("cpu_run.json"))
        self.assertRegex(a.machine, r"^vm-[0-9a-f]{6}$")  # older file: host name + hash of CPU and cores
        b = R.load(fixture("format2_run.json"))
        self.assertEqual(b.machine, "zen3-vm")
        self.assertEqual(a.format_version, 1)

    def test_gzip_and_cv(self):
        with open(fixture("cpu_run.json"), "rb") as f:
            raw = f.read()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json.gz")
            with gzip.open(path, "wb") as f:
                f.write(raw)
            run = R.load(path)
            self.assertEqual(run.name, "r")
            broken = os.path.join(tmp, "b.json.gz")
            with open(broken, "wb") as f:
                f.write(gzip.compress(raw)[:100])
            with self.assertRaises(R.LoadError):
                R.load(broken)
        # cv as Google Benchmark computes it: the sample standard deviation over the mean.
        c = run.cases[("dense.onednn.default/f32/mb4ic64oc33/threads:1", "hot", None)]
        rows = [{k: v for k, v in r.items() if k != "lb_cv"} for r in c.reps]
        ts = c.times_us()
        again = R.build_cases("x", rows)[c.key]
        self.assertAlmostEqual(again.cv, statistics.stdev(ts) / statistics.mean(ts))

    def test_cpu_run(self):
        run = R.load(fixture("cpu_run.json"))
        self.assertEqual(run.cpu_model, "AMD EPYC")
        types = {c.type for c in run.cases.values() if c.ok}
        self.assertEqual(types, {"dense", "conv", "depthwise", "pointwise", "lstm"})
        c = run.cases[("conv2d.onednn.default/f32/pw8-mb1/threads:1", "hot", None)]
        self.assertTrue(c.ok)
        self.assertEqual((c.batch, c.layer, c.dtype, c.relu, c.threads), (1, "pw8", "f32", "none", 1))
        self.assertEqual(len(c.reps), 3)
        self.assertAlmostEqual(c.time_us, sorted(c.times_us())[1])
        # A case kept with its aggregates only uses the repetitions; the aggregates are there too.
        tiny = run.cases[("dense.onednn.default/f32/mb4ic64oc33/threads:1", "hot", None)]
        self.assertEqual(set(tiny.aggregates), {"mean", "median", "stddev", "cv"})
        unsupported = [c for c in run.cases.values() if c.status == "unsupported"]
        self.assertTrue(unsupported and all(not c.ok and c.reason for c in unsupported))

    def test_peaks_from_context(self):
        cpu = {(p.kind, p.threads): p for p in R.load(fixture("cpu_run.json")).peaks()}
        self.assertAlmostEqual(cpu[("f32_fma", 1)].per_second, 259.2e9)
        self.assertEqual(cpu[("f32_fma", 1)].unit, "FLOP/s")
        gpu = {p.kind: p for p in R.load(fixture("gpu_run.json")).peaks() if p.device == "gpu"}
        self.assertAlmostEqual(gpu["d2d_copy"].per_second, 4021e9)
        self.assertEqual(gpu["d2d_copy"].unit, "B/s")
        self.assertEqual(gpu["i8_gemm"].unit, "OP/s")
        self.assertIsNone(R.parse_peak("fast"))

    def test_gpu_run(self):
        run = R.load(fixture("gpu_run.json"))
        self.assertTrue(run.gpu_model)
        spin = [c for c in run.cases.values() if c.device == "gpu" and c.blocking_sync == 0]
        block = [c for c in run.cases.values() if c.blocking_sync == 1]
        self.assertTrue(spin and block)
        # Blocking sync is its own case, named as layerbench names it.
        self.assertTrue(all(c.name.endswith("-sync_blocking/threads:1") for c in block))
        spin_names = {c.name for c in spin}
        self.assertTrue(all(c.name.replace("-sync_blocking/", "/") in spin_names for c in block))
        self.assertTrue(all(c.device_peak for c in spin))
        oom = [c for c in run.cases.values() if c.status == "out_of_memory"]
        self.assertEqual(len(oom), 1)

    def test_failures(self):
        run = R.load(fixture("failures.json"))
        st = sorted(c.status for c in run.cases.values())
        self.assertEqual(st, ["failed", "mistrusted", "out_of_memory", "passed", "unsupported"])
        failed = next(c for c in run.cases.values() if c.status == "failed")
        self.assertIn("repro: layerbench check", failed.error_message)
        self.assertTrue(next(c for c in run.cases.values() if c.status == "mistrusted").ok)

    def test_format2_jsonl(self):
        """A format-2 run's stream: a settings line (what --resume checks), the context, then
        one line per repetition as cases finish."""
        with open(fixture("format2_run.json"), encoding="utf-8") as f:
            doc = json.load(f)
        with TempDir() as tmp:
            path = os.path.join(tmp, "run.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                f.write(json.dumps({"layerbench_settings": {"batches": "1"}}) + "\n")
                f.write(json.dumps({"context": doc["context"]}) + "\n")
                for r in doc["benchmarks"]:
                    f.write(json.dumps(r) + "\n")
            run = R.load(path)
        self.assertEqual(run.warnings, [])
        self.assertEqual(run.machine, "zen3-vm")
        whole = R.load(fixture("format2_run.json"))
        self.assertEqual(sorted(k for k, c in run.cases.items() if c.ok), sorted(k for k, c in whole.cases.items() if c.ok))

    def test_interrupted_jsonl_with_torn_line(self):
        run = R.load(fixture("interrupted.jsonl"))
        self.assertEqual(len(run.warnings), 1)
        self.assertIn("interrupted.jsonl:16: torn last line", run.warnings[0])
        self.assertTrue(run.context.get("date"))
        self.assertTrue(run.cases and all(c.ok for c in run.cases.values()))


def is_graph_runs(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return "layerbench_graph_runs" in json.load(f)


class Committed(unittest.TestCase):
    """The results committed under results/ (not the ignored results/runs/): every file loads,
    and the development machines stay apart — the Zen 3 and the Zen 5 VMs report the same CPU
    model ("AMD EPYC"), host name ("vm") and core count, so only the machine identity in the
    results tells them apart."""

    def test_machines_stay_apart(self):
        root = os.path.join(os.path.dirname(SCRIPTS), "results")
        paths = [os.path.join(d, f) for d, _, fs in os.walk(root) if os.path.relpath(d, root).split(os.sep)[0] != "runs"
                 for f in fs if f.endswith((".json", ".json.gz"))]
        self.assertGreaterEqual(len(paths), 3)
        by_folder = {}
        for p in paths:
            if is_graph_runs(p):  # `layerbench run --graph`'s own format: scripts/graphs reads it
                runs, machines = graphs.load([p])
                self.assertTrue(runs and machines, p)
                continue
            run = R.load(p)
            by_folder.setdefault(os.path.relpath(p, root).split(os.sep)[0], set()).add(run.machine)
        zen3 = by_folder["history"]  # the nightly sample: the Zen 3 VM
        zen5 = by_folder["cpu-zen5-2core"]
        self.assertEqual(len(zen5), 1, zen5)
        self.assertFalse(zen3 & zen5, (zen3, zen5))


class Broken(unittest.TestCase):
    def expect(self, name, words):
        with self.assertRaises(R.LoadError) as e:
            R.load(fixture(name))
        msg = str(e.exception)
        self.assertTrue(msg.startswith(fixture(name)), msg)
        self.assertNotIn("\n", msg)
        for w in words:
            self.assertIn(w, msg)

    def test_each_kind(self):
        self.expect("truncated.json", ["truncated"])
        self.expect("malformed.json", ["malformed JSON at line", "delimiter"])
        self.expect("not_results.json", ["not a Google Benchmark results file"])
        self.expect("empty.json", ["empty file"])
        self.expect("bad_line.jsonl", [":3:", "malformed line"])
        self.expect("no_such_file.json", ["cannot read"])

    def test_the_others_still_load(self):
        said = []
        names = ["truncated.json", "cpu_run.json", "malformed.json", "interrupted.jsonl", "empty.json"]
        runs = R.load_many([fixture(n) for n in names], said.append)
        self.assertEqual([os.path.basename(r.path) for r in runs], ["cpu_run.json", "interrupted.jsonl"])
        errors = [s for s in said if not s.startswith("warning:")]
        self.assertEqual(len(errors), 3)
        self.assertEqual(len([s for s in said if s.startswith("warning:")]), 1)


class Problems(unittest.TestCase):
    def test_parse_and_drop_keys(self):
        op, keys = R.parse_problem("conv2d mb=2 ic=3 ih=5 iw=5 oc=4 kh=3 kw=3 dt=f32 relu=none name=c1")
        self.assertEqual((op, keys["mb"], keys["name"]), ("conv2d", "2", "c1"))
        self.assertEqual(R.problem_without("dense mb=1 ic=2 oc=3 dt=bf16 relu=none", "mb", "dt"),
                         "dense ic=2 oc=3 relu=none")

    def test_plain_google_benchmark_rows(self):
        rows = [{"name": "dense.cublas.default/f32/mb1ic2oc3/threads:1/manual_time", "run_type": "iteration",
                 "real_time": 1500.0, "time_unit": "ns", "repetition_index": 0,
                 "label": "dense mb=1 ic=2 oc=3 dt=f32 relu=none"}]
        c = next(iter(R.build_cases("x.json", rows).values()))
        self.assertEqual((c.kernel, c.backend, c.device, c.op, c.type, c.dtype), (
            "dense.cublas.default", "cublas", "gpu", "dense", "dense", "f32"))
        self.assertAlmostEqual(c.time_us, 1.5)


if __name__ == "__main__":
    unittest.main()
