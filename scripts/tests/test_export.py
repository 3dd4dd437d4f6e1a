#!/usr/bin/python3
"""scripts/export: github-action-benchmark's customSmallerIsBetter / customBiggerIsBetter
arrays and Bencher Metric Format, with memory and utilisation as well as time."""

import glob
import json
import unittest

from helpers import fixture, script


def export(fmt, *files):
    p = script("export", "--format", fmt, *[fixture(f) for f in files])
    return p, (json.loads(p.stdout) if p.stdout.strip() else None)


class GithubActionBenchmark(unittest.TestCase):
    def test_smaller_is_better(self):
        p, doc = export("github-action-benchmark", "gpu_run.json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIsInstance(doc, list)
        for e in doc:
            self.assertEqual(set(e) - {"range", "extra"}, {"name", "unit", "value"})
            self.assertIsInstance(e["value"], (int, float))
            self.assertIsInstance(e["name"], str)
            self.assertIsInstance(e.get("range", ""), str)
        units = {e["name"].rsplit(" - ", 1)[1]: e["unit"] for e in doc}
        # Only what is worse when larger: utilisation is not in the alerting file.
        self.assertEqual(units, {"time": "us", "host peak memory": "bytes", "device peak memory": "bytes"})
        self.assertEqual(len({e["name"] for e in doc}), len(doc))
        # The out-of-memory case is not a number and is not exported.
        self.assertFalse([e for e in doc if "mb65536" in e["name"]])
        self.assertIn("1 cases not measured", p.stderr)

    def test_bigger_is_better(self):
        p, doc = export("github-action-benchmark-bigger", "gpu_run.json")
        self.assertEqual(p.returncode, 0)
        self.assertEqual({e["name"].rsplit(" - ", 1)[1] for e in doc}, {"throughput"})

    def test_utilisation_to_chart_only(self):
        p, doc = export("github-action-benchmark-utilisation", "gpu_run.json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual({e["name"].rsplit(" - ", 1)[1] for e in doc}, {"CPU utilisation", "GPU utilisation"})

    def test_filter_and_headline(self):
        p = script("export", "--format", "github-action-benchmark", "--filter", "pw8-mb1/", fixture("cpu_run.json"))
        doc = json.loads(p.stdout)
        self.assertTrue(doc)
        self.assertTrue(all("pw8-mb1/" in e["name"] for e in doc), doc)
        _, everything = export("github-action-benchmark", "cpu_run.json")
        p = script("export", "--format", "github-action-benchmark", "--headline", fixture("cpu_run.json"))
        head = json.loads(p.stdout)
        self.assertTrue(0 < len(head) < len(everything))
        self.assertFalse([e for e in head if "/bf16/" in e["name"] or "relu" in e["name"]])
        p = script("export", "--format", "bencher", "--filter", "(", fixture("cpu_run.json"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("--filter", p.stderr)
        p = script("export", "--format", "bencher", "--filter", "no-such-case", fixture("cpu_run.json"))
        self.assertEqual(p.returncode, 2)

    def test_two_machines_are_two_series(self):
        hist = fixture("history")
        files = [sorted(glob.glob(hist + "/zen5-vm/*.json"))[-1], sorted(glob.glob(hist + "/vm-intel/*.json"))[-1]]
        p = script("export", "--format", "bencher", *files)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        conv1 = [k for k in doc if k.endswith("conv2d.onednn.default/f32/conv1-mb1/threads:1")]
        self.assertEqual(len(conv1), 2, sorted(doc))
        self.assertEqual(len({k.split(": ")[0] for k in conv1}), 2, conv1)  # one per machine
        self.assertIn("zen5-vm: conv2d.onednn.default/f32/conv1-mb1/threads:1", doc)

    def test_cpu_run_has_no_device_memory(self):
        _, doc = export("github-action-benchmark", "cpu_run.json")
        self.assertFalse([e for e in doc if "device" in e["name"]])
        time = next(e for e in doc if e["name"] == "conv2d.onednn.default/f32/pw8-mb1/threads:1 - time")
        self.assertAlmostEqual(time["value"], 536.4, delta=1.0)


class Bencher(unittest.TestCase):
    def test_bmf(self):
        p, doc = export("bencher", "cpu_run.json", "gpu_run.json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIsInstance(doc, dict)
        for bench, measures in doc.items():
            self.assertTrue(bench and len(bench) <= 1024)
            for slug, metric in measures.items():
                self.assertLessEqual(len(slug), 64)
                self.assertIn("value", metric)
                self.assertLessEqual(set(metric), {"value", "lower_value", "upper_value"})
                for v in metric.values():
                    self.assertIsInstance(v, (int, float))
                self.assertLessEqual(metric.get("lower_value", metric["value"]), metric["value"])
                self.assertGreaterEqual(metric.get("upper_value", metric["value"]), metric["value"])
        gpu = doc["conv2d.cudnn.default/f32/pw8-mb1/threads:1"]
        self.assertEqual(set(gpu), {"latency", "throughput", "host-peak-memory", "device-peak-memory",
                                    "cpu-utilisation", "gpu-utilisation"})
        cpu = doc["conv2d.onednn.default/f32/pw8-mb1/threads:1"]
        self.assertAlmostEqual(cpu["latency"]["value"], 536.4e3, delta=1e3)  # nanoseconds
        self.assertNotIn("device-peak-memory", cpu)
        self.assertIn("conv2d.cudnn.default/f32/conv1-mb1-sync_blocking/threads:1", doc)

    def test_broken_input_is_one_line_and_the_rest_exported(self):
        p, doc = export("bencher", "failures.json", "malformed.json")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len([l for l in p.stderr.splitlines() if "malformed.json" in l]), 1)
        self.assertEqual(sorted(doc), ["dense.onednn.default/f32/mb1ic1oc1-relu_inplace/threads:1",
                                       "dense.onednn.default/f32/mb1ic1oc1/threads:1"])

    def test_usage(self):
        p = script("export", "--format", "csv", fixture("cpu_run.json"))
        self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    unittest.main()
