#!/usr/bin/python3
"""scripts/ratios: pairs a backend's cases with the baseline's on the same problem, dtype and
threads, takes the fastest baseline kernel, computes baseline time / time, flags ratios
below --min; --steps lays kernels side by side; broken inputs are one line."""

import copy
import unittest

from helpers import TempDir, load_json, scaled, script, write_results

CONV = "conv2d.eigen.im2col/f32/conv1-mb1/threads:1"


class Ratios(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cpu = load_json("cpu_run.json")

    def run_on(self, doc, *args):
        with TempDir() as tmp:
            return script("ratios", write_results(tmp, "r.json", doc), *args)

    def rows(self, out):
        return [l for l in out.splitlines() if l.startswith("| ") and not l.startswith("| problem")]

    def test_pairs_and_ratio(self):
        p = self.run_on(self.cpu, "--backend", "eigen", "--baseline", "onednn")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        row = next(r for r in self.rows(p.stdout) if r.startswith("| conv1 mb=1 | f32 | 1 |"))
        self.assertIn("0.93×", row)  # onednn 242 µs / eigen 260 µs
        self.assertIn("ratios: 6 cases", p.stdout)

    def test_twice_as_fast_doubles_the_ratio_and_min_flags_the_rest(self):
        faster = scaled(self.cpu, CONV, "real_time", 0.5)
        p = self.run_on(faster, "--backend", "eigen", "--baseline", "onednn", "--min", "1.0")
        self.assertEqual(p.returncode, 1, p.stdout)
        row = next(r for r in self.rows(p.stdout) if r.startswith("| conv1 mb=1 | f32 | 1 |"))
        self.assertIn("1.86×", row)
        self.assertIn("5 below 1×", p.stdout)
        self.assertNotIn("below: " + CONV, p.stdout)

    def test_distribution_per_op_dtype_and_threads(self):
        faster = scaled(self.cpu, CONV, "real_time", 0.5)
        with TempDir() as tmp:
            png = tmp + "/ratios.png"
            p = script("ratios", write_results(tmp, "r.json", faster), "--backend", "eigen", "--baseline", "onednn",
                       "--plot", png)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        table = p.stdout.split("| op |", 1)[1]
        rows = [l.split("|") for l in table.splitlines()[2:] if l.startswith("| ")]
        ratios = {}  # (op, dtype, threads) -> the per-case ratios the first table printed
        for r in self.rows(p.stdout.split("| op |", 1)[0]):
            cells = [c.strip() for c in r.split("|")]
            ratios.setdefault(cells[2], []).append(float(cells[10].rstrip("×")))
        self.assertGreaterEqual(len(rows), 1)
        for row in rows:
            cells = [c.strip() for c in row]
            n, geo, low, worst = int(cells[4]), float(cells[5].rstrip("×")), float(cells[6].rstrip("×")), cells[8]
            self.assertLessEqual(low, geo)
            self.assertEqual(len(worst.split("; ")), min(n, 5))
        every = [r for rs in ratios.values() for r in rs]
        self.assertIn(f"{min(every):.2f}×", table)  # the worst case's ratio is some group's minimum
        self.assertIn("1.86×", table)  # the case made twice as fast is in its group's maximum

    def test_fastest_repetitions(self):
        # Two of eigen's three repetitions twice as slow (a neighbour's moment): the median
        # moves with them, the fastest repetition does not.
        slowed = copy.deepcopy(self.cpu)
        reps = [r for r in slowed["benchmarks"] if r.get("lb_case") == CONV and r.get("run_type") == "iteration"]
        fastest = min(reps, key=lambda r: r["real_time"])
        for r in reps:
            if r is not fastest:
                r["real_time"] *= 2
                r["lb_pct_peak"] /= 2
        median = self.run_on(slowed, "--backend", "eigen", "--baseline", "onednn")
        best = self.run_on(slowed, "--backend", "eigen", "--baseline", "onednn", "--statistic", "fastest")
        self.assertEqual(best.returncode, 0, best.stdout + best.stderr)
        row = lambda p: next(r for r in self.rows(p.stdout) if r.startswith("| conv1 mb=1 | f32 | 1 |"))
        self.assertIn("0.47×", row(median))  # onednn 242 µs / eigen 520 µs (two of three doubled)
        self.assertIn("0.93×", row(best))  # onednn's fastest 242 µs / eigen's fastest 259 µs
        self.assertIn("| 32.3 % |", row(best))  # the fastest repetition's own % of peak
        self.assertIn("by the fastest repetitions", best.stdout)
        self.assertIn("by the medians of the repetitions", median.stdout)

    def test_steps_side_by_side(self):
        p = self.run_on(self.cpu, "--steps", "conv2d.eigen.im2col,conv2d.onednn.default")
        self.assertEqual(p.returncode, 0, p.stderr)
        header = p.stdout.splitlines()[0]
        self.assertLess(header.index("conv2d.eigen.im2col GFLOP/s"), header.index("conv2d.onednn.default GFLOP/s"))
        self.assertTrue(any(r.startswith("| conv1 mb=1 | f32 | 1 |") for r in self.rows(p.stdout)))

    def test_nothing_pairs(self):
        p = self.run_on(self.cpu, "--backend", "cpu", "--baseline", "onednn")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no case pairs up", p.stderr)

    def test_unreadable_file_is_one_line(self):
        with TempDir() as tmp:
            bad = tmp + "/bad.json"
            with open(bad, "w") as f:
                f.write("{not json")
            p = script("ratios", bad, "--backend", "eigen", "--baseline", "onednn")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


if __name__ == "__main__":
    unittest.main()
