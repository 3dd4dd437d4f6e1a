#!/usr/bin/python3
"""scripts/compare: regressions in time and memory are found (and only they), the U test
decides where repetitions allow, newly failing cases count, broken files are one line."""

import copy
import json
import unittest

from helpers import TempDir, fixture, load_json, scaled, script, write_results

FC = "conv2d.onednn.default/f32/conv1-mb1/threads:1"  # cv 0.3 %: its repetitions separate cleanly
CONV1 = "conv2d.onednn.default/f32/conv1-mb2/threads:1"
# The three repetitions of one case, to make them overlap or separate at will.
TINY = "dense.onednn.default/f32/mb1ic64oc33/threads:1"


class Compare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cpu = load_json("cpu_run.json")

    def compare(self, b_doc, *args, a_doc=None):
        with TempDir() as tmp:
            a = write_results(tmp, "a.json", a_doc or self.cpu)
            b = write_results(tmp, "b.json", b_doc)
            return script("compare", a, b, *args)

    def rows(self, out, verdict):
        return [l for l in out.splitlines() if l.startswith("|") and l.rstrip(" |").endswith(verdict)]

    def test_identical_runs(self):
        p = self.compare(self.cpu)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("compare: 0 regressions", p.stdout)
        self.assertIn("(geometric mean): 1.000 (+0.0 %)", p.stdout)

    def test_slower_case_is_a_regression(self):
        p = self.compare(scaled(self.cpu, FC, "real_time", 1.5))
        self.assertEqual(p.returncode, 1, p.stdout)
        rows = self.rows(p.stdout, "regression")
        self.assertEqual(len(rows), 1, p.stdout)
        self.assertIn(FC, rows[0])
        self.assertIn("| time |", rows[0])
        self.assertIn("1.500", rows[0])
        self.assertIn("| 0.05 |", rows[0])  # 3 vs 3, complete separation: the smallest one-sided p
        self.assertIn("compare: 1 regressions (1 slower or bigger, 0 newly failing)", p.stdout)

    def test_below_threshold_is_not(self):
        self.assertEqual(self.compare(scaled(self.cpu, FC, "real_time", 1.03)).returncode, 0)
        self.assertEqual(self.compare(scaled(self.cpu, FC, "real_time", 1.5), "--threshold", "0.6").returncode, 0)

    def test_faster_is_an_improvement(self):
        p = self.compare(scaled(self.cpu, FC, "real_time", 0.5))
        self.assertEqual(p.returncode, 0)
        self.assertEqual(len(self.rows(p.stdout, "improvement")), 1)

    def test_not_significant_is_not(self):
        # Median 30 % slower, but the repetitions overlap: the U test says it could be noise.
        b = copy.deepcopy(self.cpu)
        a = copy.deepcopy(self.cpu)
        reps_a = [r for r in a["benchmarks"] if r.get("lb_case") == TINY and r.get("run_type") == "iteration"]
        reps_b = [r for r in b["benchmarks"] if r.get("lb_case") == TINY and r.get("run_type") == "iteration"]
        for r, t in zip(reps_a, (1.0, 1.5, 2.0)):
            r["real_time"] = t
        for r, t in zip(reps_b, (0.9, 1.95, 2.6)):
            r["real_time"] = t
        p = self.compare(b, a_doc=a)
        self.assertEqual(p.returncode, 0, p.stdout)
        line = next(l for l in p.stdout.splitlines() if TINY in l and "| time |" in l)
        self.assertIn("1.300", line)

    def test_memory_regression(self):
        p = self.compare(scaled(self.cpu, CONV1, "lb_host_peak_bytes", 1.4))
        self.assertEqual(p.returncode, 1, p.stdout)
        rows = self.rows(p.stdout, "regression")
        self.assertEqual(len(rows), 1)
        self.assertIn("host peak MB", rows[0])

    def test_small_memory_change_in_bytes_is_not(self):
        # +40 % of 0.12 MB is under the 256 KiB floor: pages, not a regression.
        tiny = scaled(self.cpu, TINY, "lb_host_peak_bytes", 1.4)
        self.assertEqual(self.compare(tiny).returncode, 0)

    def test_utilisation_reported_not_judged(self):
        p = self.compare(scaled(self.cpu, FC, "lb_cpu_util_avg", 0.5), "--all")
        self.assertEqual(p.returncode, 0)
        self.assertTrue(any(FC in l and "CPU util %" in l for l in p.stdout.splitlines()))

    def test_newly_failing(self):
        b = copy.deepcopy(self.cpu)
        for r in b["benchmarks"]:
            if r.get("lb_case") == FC:
                r.update(error_occurred=True, error_message="failed: dst: max error 1 > tolerance 1e-06",
                         lb_status="failed")
        p = self.compare(b)
        self.assertEqual(p.returncode, 1)
        self.assertIn("1 newly failing", p.stdout)

    def test_untested_with_two_repetitions(self):
        b = scaled(self.cpu, FC, "real_time", 1.5)
        for doc in (b,):
            doc["benchmarks"] = [r for r in doc["benchmarks"] if r.get("repetition_index") != 2]
        a = copy.deepcopy(self.cpu)
        a["benchmarks"] = [r for r in a["benchmarks"] if r.get("repetition_index") != 2]
        p = self.compare(b, a_doc=a)
        # 2 vs 2 repetitions: the U test can never reach alpha, so a 50 % slowdown is "cannot
        # judge" with that reason — never a red verdict resting on the threshold alone.
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("cannot judge (too few repetitions (2 vs 2): the U test cannot go below p = 0.167", p.stdout)
        self.assertIn("compare: cannot judge 1 changes (1 too few repetitions", p.stdout)
        self.assertIn("compare: 0 regressions", p.stdout)

    def test_noisy_case_cannot_be_judged(self):
        b = copy.deepcopy(self.cpu)
        a = copy.deepcopy(self.cpu)
        for doc, ts in ((a, (1.0, 1.5, 2.0)), (b, (0.9, 1.95, 2.6))):
            reps = [r for r in doc["benchmarks"] if r.get("lb_case") == TINY and r.get("run_type") == "iteration"]
            for r, t in zip(reps, ts):
                r["real_time"] = t
        p = self.compare(b, a_doc=a)
        self.assertEqual(p.returncode, 0, p.stdout)
        line = next(l for l in p.stdout.splitlines() if TINY in l and "| time |" in l)
        self.assertIn("cannot judge (noisy: the repetitions overlap", line)

    def test_busy_machine_cannot_be_judged(self):
        b = scaled(self.cpu, FC, "real_time", 1.5)
        b["context"]["load_avg"] = [5.0, 4.0, 3.0]  # 2 cores
        p = self.compare(b)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("cannot judge (busy machine: B load average 5.00 at the start on 2 cores", p.stdout)
        self.assertIn("--max-load", script("compare", "--help").stdout)
        self.assertEqual(self.compare(b, "--max-load", "3").returncode, 1)

    def test_machine_steadiness_is_reported(self):
        """--steadiness's probe: a throughput that moved 3x more than the clock is a shared core."""
        b = copy.deepcopy(self.cpu)
        b["context"]["layerbench_steadiness"] = json.dumps(
            {"windows": 50, "window_s": 0.02, "fma_spread": 0.117, "fma_slowest": 1.71, "fma_fastest": 0.8,
             "clock_spread": 0.030, "method": "test"})
        a = copy.deepcopy(self.cpu)
        a["context"]["layerbench_steadiness"] = json.dumps(
            {"windows": 50, "fma_spread": 0.019, "fma_slowest": 1.12, "clock_spread": 0.015})
        out = self.compare(b, a_doc=a).stdout
        self.assertIn("compare: B's machine: one core's FMA throughput varied ±11.7% (robust SD of 50 windows over "
                      "the run, slowest 1.71× the median), its clock ±3.0%: other work shares the core", out)
        self.assertIn("compare: A's machine: one core's FMA throughput varied ±1.9%", out)
        self.assertIn("its clock ±1.5%: the core was steady", out)
        # Not probed, or not a probe's numbers: nothing said.
        b["context"]["layerbench_steadiness"] = "{not json"
        self.assertNotIn("machine: one core", self.compare(b).stdout)

    def test_run_wide_shift_is_one_finding(self):
        b = copy.deepcopy(self.cpu)
        for r in b["benchmarks"]:
            if isinstance(r.get("real_time"), (int, float)):
                r["real_time"] *= 1.3
        b = scaled(b, FC, "real_time", 1.5)  # and one case slower still
        p = self.compare(b)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("compare: run-wide shift: every case ×1.3", p.stdout)
        self.assertIn("a machine change", p.stdout)
        rows = self.rows(p.stdout, "regression")
        self.assertEqual(len(rows), 1, p.stdout)  # relative to the shift: only the extra slowdown
        self.assertIn(FC, rows[0])

    def noisy_pair(self, fc_factor, low=0.94, high=1.0 / 0.94):
        """B: every case moved by its own factor between low and high (a shared machine between
        two runs: each case's repetitions agree, the cases do not), FC by fc_factor."""
        b = copy.deepcopy(self.cpu)
        names = sorted({r["lb_case"] for r in b["benchmarks"] if r.get("lb_case")})
        factors = {n: low * (high / low) ** (i / (len(names) - 1)) for i, n in enumerate(names)}
        factors[FC] = fc_factor
        for r in b["benchmarks"]:
            if isinstance(r.get("real_time"), (int, float)) and r.get("lb_case") in factors:
                r["real_time"] *= factors[r["lb_case"]]
        return self.compare(b)

    def test_change_within_the_runs_noise_cannot_be_judged(self):
        p = self.noisy_pair(1.12)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("compare: the two runs' noise, case to case: ±", p.stdout)
        line = next(l for l in p.stdout.splitlines() if l.startswith(f"| {FC} | time |"))
        self.assertIn("cannot judge (within the two runs' noise: ±", line)
        self.assertEqual(self.rows(p.stdout, "regression"), [])
        # Far outside that noise it is a regression still.
        p = self.noisy_pair(1.5)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertEqual(len(self.rows(p.stdout, "regression")), 1, p.stdout)

    def test_runs_too_noisy_judge_no_case(self):
        # Cases spread 0.8-1.25x (a band past ±25 %): even 3x is not called a regression, since
        # on such a machine unchanged cases stray that far (2x seen, 5 robust SDs out).
        p = self.noisy_pair(3.0, 0.8, 1.25)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("no case's time is judged", p.stdout)
        line = next(l for l in p.stdout.splitlines() if l.startswith(f"| {FC} | time |"))
        self.assertIn("cannot judge (the two runs are too noisy to judge one case: ±", line)
        self.assertEqual(self.rows(p.stdout, "regression"), [])

    def test_bad_threshold_and_alpha(self):
        for args in (["--threshold", "nan"], ["--threshold", "-0.1"], ["--threshold", "inf"], ["--alpha", "nan"],
                     ["--alpha", "1.5"], ["--max-load", "nan"]):
            p = script("compare", fixture("cpu_run.json"), fixture("cpu_run.json"), *args)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn(args[0], p.stderr)
            self.assertEqual(p.stdout, "")

    def test_nothing_in_common(self):
        b = copy.deepcopy(self.cpu)
        for r in b["benchmarks"]:
            r["lb_case"] = "other/" + r["lb_case"]
        p = self.compare(b)
        self.assertEqual(p.returncode, 2, p.stdout)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("no case in common", p.stderr)

    def test_machines_are_not_compared_unless_asked(self):
        b = copy.deepcopy(self.cpu)
        b["context"]["layerbench_cpu_model"] = "Intel Xeon"  # the same host name `vm`, another CPU
        p = self.compare(b)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--cross-machine", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        p = self.compare(b, "--cross-machine")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("across machines", p.stdout)

    def test_one_machine_name_on_two_cpus_is_not_compared_unless_asked(self):
        a, b = copy.deepcopy(self.cpu), copy.deepcopy(self.cpu)
        for doc, sig in ((a, "AuthenticAMD family 26 model 2 stepping 0"),
                         (b, "AuthenticAMD family 25 model 17 stepping 1")):
            doc["context"].update(layerbench_machine="epyc-vm", layerbench_cpu_model="AMD EPYC",
                                  layerbench_cpu_signature=sig)
        p = self.compare(b, a_doc=a)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("the CPU changed (AuthenticAMD family 26 model 2 stepping 0 -> AuthenticAMD family 25 "
                      "model 17 stepping 1)", p.stderr)
        p = self.compare(b, "--cross-machine", a_doc=a)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("across machines (epyc-vm vs epyc-vm; the CPU changed", p.stdout)
        # One signature, or a file from before the signature: one machine, compared.
        del a["context"]["layerbench_cpu_signature"]
        self.assertEqual(self.compare(b, a_doc=a).returncode, 0)

    def test_ratio_plot(self):
        with TempDir() as tmp:
            out = tmp + "/ratios.png"
            a = write_results(tmp, "a.json", self.cpu)
            b = write_results(tmp, "b.json", scaled(self.cpu, FC, "real_time", 1.5))
            p = script("compare", a, b, "--plot", out)
            self.assertEqual(p.returncode, 1, p.stderr)
            with open(out, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_broken_file(self):
        p = script("compare", fixture("cpu_run.json"), fixture("truncated.json"))
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.strip().count("\n"), 0)
        self.assertIn("truncated.json: truncated", p.stderr)

    def test_csv(self):
        with TempDir() as tmp:
            out = tmp + "/c.csv"
            p = script("compare", fixture("cpu_run.json"), fixture("cpu_run.json"), "--csv", out)
            self.assertEqual(p.returncode, 0)
            with open(out) as f:
                self.assertTrue(f.readline().startswith("case,metric,a,b,ratio,p_value"))


if __name__ == "__main__":
    unittest.main()
