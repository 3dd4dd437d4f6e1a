#!/usr/bin/python3
"""scripts/report as a user runs it: on the CPU run, on CPU + GPU, with broken files among
the inputs; the README section on a copy; and the claims' rules on cases made here.

LAYERBENCH (set by ctest) names the layerbench binary for the network tables; without it
those tests are skipped."""

import csv
import io
import os
import re
import shutil
import unittest

from helpers import TempDir, fixture, script

from lbreport import claims
from lbreport.results import Case

LAYERBENCH = os.environ.get("LAYERBENCH")
CLAIM_TITLES = 10


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def section(md, title):
    """The text of a '## title' section."""
    m = re.search(r"^## " + re.escape(title) + r"\n(.*?)(?=^## |\Z)", md, re.S | re.M)
    return m.group(1) if m else None


def verdicts(md):
    return {int(n): v for n, v in re.findall(r"^### (\d+)\. .* — \*\*(.+?)\*\*$", md, re.M)}


class CpuOnly(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = TempDir()
        cls.out = os.path.join(cls.tmp.__enter__(), "report")
        args = [fixture("cpu_run.json"), "--out", cls.out] + (["--layerbench", LAYERBENCH] if LAYERBENCH else [])
        cls.p = script("report", *args)
        cls.md = read(os.path.join(cls.out, "report.md"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.__exit__(None, None, None)

    def test_exit_and_files(self):
        self.assertEqual(self.p.returncode, 0, self.p.stderr)
        files = set(os.listdir(self.out))
        for name in ("report.md", "whitepaper.csv", "optimisations.csv", "claims.csv", "cases.csv", "noisy.csv",
                     "failed.csv", "cpu_vs_gpu.csv", "ours_vs_vendor.csv", "above_peak.csv"):
            self.assertIn(name, files)
        for stem in ("throughput_vs_batch", "memory_vs_batch", "roofline_cpu_amd-epyc", "cpu_vs_gpu_time"):
            png, svg = os.path.join(self.out, stem + ".png"), os.path.join(self.out, stem + ".svg")
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", stem)
            with open(svg, encoding="utf-8") as f:
                text = f.read()
            self.assertIn("<svg", text)
            self.assertGreater(os.path.getsize(png), 10000, stem)

    def test_whitepaper_rows(self):
        rows = list(csv.DictReader(io.StringIO(read(os.path.join(self.out, "whitepaper.csv")))))
        self.assertEqual({r["type"] for r in rows}, {"dense", "conv", "depthwise", "pointwise", "lstm"})
        for r in rows:
            self.assertEqual(r["device"], "cpu")
            self.assertGreater(float(r["time_us_sum"]), 0)
            self.assertGreater(float(r["gflop_per_s"]), 0)
            self.assertEqual(r["device_peak_bytes_max"], "")  # never invented on a CPU-only run
            self.assertEqual(r["gpu_util_avg_median"], "")

    def test_whitepaper_rows_per_pass(self):
        """A training pass of a problem is its own row under its layer type, after the forward's
        (the cases here are the fixture's forward ones, relabelled: the grouping is the point)."""
        import copy
        from lbreport import analysis, results
        cases = results.all_cases([results.load(fixture("cpu_run.json"))])
        forward = [c for c in cases if analysis.is_baseline(c) and c.type == "conv"]
        self.assertTrue(forward)
        backward = []
        for c in forward:
            b = copy.copy(c)
            b.problem = c.problem + " dir=bwd_w"
            b.name = c.name + "-dir_bwd_w"
            backward.append(b)
        wp, _ = analysis.whitepaper(cases + backward)
        col = {name: i for i, name in enumerate(wp.csv_headers)}
        conv = [(raw[col["pass"]], raw[col["backend"]]) for raw in wp.raw if raw[col["type"]] == "conv"]
        passes = [p for p, _ in conv]
        self.assertEqual(passes, sorted(passes, key=analysis.pass_rank))  # fwd rows first
        self.assertEqual({p for p, _ in conv}, {"fwd", "bwd_w"})
        self.assertEqual(len([1 for p, _ in conv if p == "fwd"]), len([1 for p, _ in conv if p == "bwd_w"]))
        self.assertEqual(analysis.whitepaper(cases)[0].raw, [r for r in wp.raw if r[col["pass"]] == "fwd"])

    def test_optimisations(self):
        rows = list(csv.DictReader(io.StringIO(read(os.path.join(self.out, "optimisations.csv")))))
        opts = {r["optimisation"] for r in rows}
        self.assertTrue({"bf16 vs f32", "i8 vs f32", "in-place vs separate ReLU", "fused vs separate ReLU"} <= opts)
        bf16 = [r for r in rows if r["optimisation"] == "bf16 vs f32"]
        # bf16 halves the tensors: -50 % within rounding, computed from lb_tensor_bytes.
        for r in bf16:
            self.assertAlmostEqual(float(r["tensor_bytes_pct"]), -50.0, delta=0.5)

    def test_gpu_parts_say_what_they_need(self):
        self.assertIn("not measured: needs a GPU run", section(self.md, "CPU vs GPU"))
        v = verdicts(self.md)
        self.assertEqual(len(v), CLAIM_TITLES)
        self.assertEqual(v[2], "not measured")
        self.assertEqual(v[10], "not measured")
        self.assertIn("GPU part not measured: needs", self.md)
        self.assertIn("device memory not measured: needs", self.md)

    def test_claims_with_cpu_numbers(self):
        v = verdicts(self.md)
        for n in (3, 5, 6, 7, 8, 9):
            self.assertIn(v[n], ("confirmed", "refuted", "depends"), f"claim {n}")
        claims_md = section(self.md, "Claims")
        self.assertIn("fixed part", claims_md)
        self.assertRegex(claims_md, r"MAC ratio separable ÷ standard \(model\): median 0\.11")
        self.assertRegex(claims_md, r"CPU: separable takes [0-9.]+× the standard convolution's time")
        self.assertIn("GPU time not measured: needs", claims_md)

    def test_noisy_and_unsupported_listed(self):
        self.assertIn("conv2d.eigen.im2col/f32/dw8-mb1/threads:1", section(self.md, "Failed, out-of-memory, "
                                                                             "unsupported and mistrusted cases"))
        noisy = section(self.md, "Noisy cases")
        self.assertIn("Coefficient of variation", noisy)
        self.assertIn("dense.onednn.default/f32/fc-mb1/threads:1", noisy)  # cv 0.22 in the real run

    @unittest.skipUnless(LAYERBENCH, "LAYERBENCH (the layerbench binary) is not set")
    def test_network_tables(self):
        nets = section(self.md, "Networks")
        self.assertIn("### mobilenet_v1, batch 1", nets)
        self.assertIn("### lstm_lm, batch 4", nets)
        self.assertRegex(nets, r"\| pw8 \| pointwise \| 512x14x14 \| 262,656 \|")
        self.assertRegex(nets, r"\| \*\*total\*\* \|  \|  \| 4,221,032 \|")
        rows = list(csv.DictReader(io.StringIO(read(os.path.join(self.out, "network_mobilenet_v1_batch1.csv")))))
        fc = next(r for r in rows if r["layer"] == "fc")
        self.assertGreater(float(fc["time_us_onednn_cpu_t1"]), 0)


@unittest.skipUnless(LAYERBENCH, "LAYERBENCH not set (ctest sets it)")
class NetworkNeverNamed(unittest.TestCase):
    def test_report_shows_a_network_from_the_data_folder(self):
        # A network the report's code has never heard of, in a data folder of its own: layerbench
        # lists it, runs its layers, and the report finds it there.
        with TempDir() as tmp:
            data = os.path.join(tmp, "data")
            os.makedirs(os.path.join(data, "networks"))
            os.makedirs(os.path.join(data, "suites"))
            with open(os.path.join(data, "networks", "tiny_branches.txt"), "w", encoding="utf-8") as f:
                f.write("input c=3 h=8 w=8\nstem conv2d oc=4 kh=3 kw=3 ph=1\nleft conv2d oc=4 kh=1 kw=1\n"
                        "right conv2d in=stem oc=4 kh=3 kw=3 ph=1\nsum add in=left,right\nr relu\n")
            env = dict(os.environ, LAYERBENCH_DATA=data)
            results = os.path.join(tmp, "run.json")
            import subprocess  # noqa: PLC0415

            p = subprocess.run([LAYERBENCH, "run", "--network", "tiny_branches", "--backend", "ref", "--batch", "1",
                                "--out", results, "--benchmark_min_time=0.001"],
                               capture_output=True, text=True, env=env, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = os.path.join(tmp, "report")
            r = script("report", results, "--out", out, "--layerbench", LAYERBENCH, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            nets = section(read(os.path.join(out, "report.md")), "Networks")
            self.assertIn("### tiny_branches, batch 1", nets)
            self.assertRegex(nets, r"\| right \| conv \| 4x8x8 \|")


class CpuAndGpu(unittest.TestCase):
    def test_everything_together_with_broken_files(self):
        with TempDir() as tmp:
            out = os.path.join(tmp, "r")
            p = script("report", fixture("cpu_run.json"), fixture("gpu_run.json"), fixture("failures.json"),
                       fixture("truncated.json"), fixture("interrupted.jsonl"), fixture("not_results.json"),
                       "--out", out, "--no-plots")
            self.assertEqual(p.returncode, 1, p.stderr)  # some inputs unreadable, report made from the rest
            errors = [l for l in p.stderr.splitlines() if "warning" not in l]
            self.assertEqual(len(errors), 2, p.stderr)
            self.assertTrue(any("truncated.json: truncated" in l for l in errors))
            self.assertTrue(any("not_results.json: not a Google Benchmark results file" in l for l in errors))
            md = read(os.path.join(out, "report.md"))
            self.assertIn("Files that could not be read", md)
            cg = section(md, "CPU vs GPU")
            self.assertIn("GPU speed-up", cg)
            self.assertRegex(cg, r"dense ic=64 oc=33 \| dense \| 1 \| f32 .* 0\.\d\d× \|")  # the CPU wins tiny ones
            vendor = section(md, "Our kernels vs the vendor's")
            self.assertIn("dense.cuda.tiled", vendor)
            v = verdicts(md)
            self.assertEqual(v[2], "confirmed")  # spin ~100 % vs blocking ~5 %
            self.assertEqual(v[6], "confirmed")
            failed = section(md, "Failed, out-of-memory, unsupported and mistrusted cases")
            for needle in ("dense.onednn.default/f32/mb3ic17oc5/threads:1", "repro: layerbench check",
                           "lstm.cudnn.default/f32/mb65536t35ic650hc650l2/threads:1", "out_of_memory", "mistrusted"):
                self.assertIn(needle, failed)
            self.assertFalse([f for f in os.listdir(out) if f.endswith(".png")])

    def test_host_wall_beside_device_time_on_the_first_gpu_run(self):
        # The H200's first run (results/h200/2026-12-04_gpu-check_first-light): at batch 1
        # the GPU's device time says 4.4× faster than the CPU on AlexNet's conv3 in bf16,
        # its host wall per run (launch and synchronisation) 0.86×: the CPU wins.
        sweep = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             "results", "h200", "2026-12-04_gpu-check_first-light", "sweep.json.gz")
        with TempDir() as tmp:
            out = os.path.join(tmp, "r")
            p = script("report", sweep, "--out", out, "--no-plots")
            self.assertEqual(p.returncode, 0, p.stderr)
            cg = section(read(os.path.join(out, "report.md")), "CPU vs GPU")
            self.assertRegex(cg, r"name=conv3 \| conv \| 1 \| bf16 \| .* \| 4\.38× \| 117 µs \| 0\.86× \|")
            self.assertRegex(cg, r"name=conv2 \| conv \| 32 \| f32 \| .* \| 89\.28× \| 209 µs \| 55\.94× \|")
            rows = list(csv.DictReader(io.StringIO(read(os.path.join(out, "crossover.csv")))))
            self.assertEqual({(r["type"], r["dtype"]) for r in rows}, {("conv", "bf16"), ("conv", "f32")})
            self.assertTrue(all(r["batches"] == "1,32" for r in rows))
            # cuDNN's FFT convolution at 195 % of the f32 peak (cuBLASLt's GEMM rate) is flagged
            # with its algorithm; no other case is above 100 %.
            above = list(csv.DictReader(io.StringIO(read(os.path.join(out, "above_peak.csv")))))
            self.assertEqual([r["case"] for r in above], ["conv2d.cudnn.default/f32/conv2-mb32/threads:1"])
            self.assertIn("FFT", above[0]["details"])

    def test_crossover_batch(self):
        # Made cases: the CPU wins at batch 1 and 4, the GPU from 16 on device time; on the
        # host's wall time (a launch's 50 µs more) only at 64. Another type never crosses.
        def case(device, typ, batch, us, wall=None):
            rep = {"real_time": us, "time_unit": "us", "lb_batch": batch}
            if wall is not None:
                rep["lb_host_wall_per_run_s"] = wall * 1e-6
            return Case(source="made", name=f"{typ}.{device}/f32/mb{batch}/threads:1", device=device, type=typ,
                        dtype="f32", problem=f"{typ} mb={batch}", status="passed", reps=[rep])
        rows = []
        for b, cpu, gpu in ((1, 10, 30), (4, 40, 45), (16, 100, 60), (64, 640, 200)):
            rows.append((case("cpu", "dense", b, cpu), case("gpu", "dense", b, gpu, gpu + (50 if b < 64 else 20))))
        rows.append((case("cpu", "conv", 8, 10), case("gpu", "conv", 8, 20, 40)))
        from lbreport import analysis
        t = {r["type"]: r for r in csv.DictReader(io.StringIO(analysis.crossover(rows).csv()))}
        self.assertEqual(t["dense"]["crossover_device"], "16")
        self.assertEqual(t["dense"]["crossover_host_wall"], "64")
        self.assertEqual(t["conv"]["crossover_device"], "none")

    def test_nothing_readable(self):
        p = script("report", fixture("empty.json"), fixture("malformed.json"), "--no-plots", "--out", "/nonexistent")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 3, p.stderr)


class Readme(unittest.TestCase):
    def test_update_between_markers_on_a_copy(self):
        with TempDir() as tmp:
            readme = os.path.join(tmp, "README.md")
            before, after = "# layerbench\n\nintro\n\n", "\n\n## Layout\n\nthe rest\n"
            with open(readme, "w") as f:
                f.write(before + "<!-- headline:begin -->\nold table\n<!-- headline:end -->" + after)
            out = os.path.join(tmp, "report")
            p = script("report", fixture("cpu_run.json"), "--no-plots", "--out", out, "--update-readme", readme)
            self.assertEqual(p.returncode, 0, p.stderr)
            text = read(readme)
            self.assertTrue(text.startswith(before) and text.endswith(after))
            self.assertNotIn("old table", text)
            # The headline: one row per layer type, the verdict counts, links to the claims and the report.
            self.assertIn("| layer type | fastest CPU backend | GFLOP/s | % of peak | host peak MB |", text)
            rows = re.findall(r"^\| (\w+) \| \w+ ×\d+ \|", text, re.M)
            self.assertEqual(rows, ["dense", "conv", "depthwise", "pointwise", "lstm"])
            # Each row's numbers are its whitepaper row's: GFLOP/s, % of peak, host peak MB.
            wp = list(csv.DictReader(open(os.path.join(out, "whitepaper.csv"))))
            for line in re.findall(r"^\| \w+ \| \w+ ×\d+ \|.*$", text, re.M):
                cells = [c.strip() for c in line.strip("|").split("|")]
                backend, threads = cells[1].split(" ×")
                mine = [r for r in wp if r["type"] == cells[0] and r["backend"] == backend and r["threads"] == threads]
                self.assertEqual(len(mine), 1, line)
                self.assertAlmostEqual(float(cells[2]), float(mine[0]["gflop_per_s"]), delta=0.01 * float(cells[2]) + 0.5)
                self.assertAlmostEqual(float(cells[3].rstrip(" %")), float(mine[0]["pct_peak_median"]), delta=0.06)
                self.assertAlmostEqual(float(cells[4]), float(mine[0]["host_peak_bytes_max"]) / 1e6,
                                       delta=0.01 * float(cells[4]) + 0.06, msg=line)
            self.assertRegex(text, r"Claims \(\[[^]]*docs/claims\.md\]\([^)]*docs/claims\.md\)\): "
                                   r"\d+ confirmed, .*\d+ not measured\.")
            self.assertIn("[the full report](report/report.md)", text)
            self.assertEqual(text.count("<!-- headline:begin -->"), 1)
            # A second run replaces, it does not append.
            script("report", fixture("cpu_run.json"), "--no-plots", "--out", out, "--update-readme", readme)
            self.assertEqual(read(readme), text)

    def test_no_markers(self):
        with TempDir() as tmp:
            readme = os.path.join(tmp, "README.md")
            shutil.copyfile(fixture("not_results.json"), readme)
            p = script("report", fixture("cpu_run.json"), "--update-readme", readme)
            self.assertEqual(p.returncode, 2)
            self.assertIn("no '<!-- headline:begin -->'", p.stderr)


def case(name, **kw):
    """A measured case made here, for the rules."""
    c = Case(source="t.json", name=name, kernel=kw.pop("kernel", "conv2d.x.y"), backend=kw.pop("backend", "x"),
             device=kw.pop("device", "cpu"), op=kw.pop("op", "conv2d"), type=kw.pop("type", "conv"),
             dtype=kw.pop("dtype", "f32"), relu=kw.pop("relu", "none"), problem=kw.pop("problem"), status="passed")
    time = kw.pop("time")
    c.reps = [dict({"real_time": time, "time_unit": "us"}, **kw) for _ in range(3)]
    return c


class Rules(unittest.TestCase):
    def test_inplace_relu_refuted_when_it_saves_nothing(self):
        cs = []
        for relu in ("inplace", "separate"):
            cs.append(case(f"k/f32/p-relu_{relu}", relu=relu, time=10.0, lb_host_peak_bytes=8e6, lb_tensor_bytes=4e6,
                           problem=f"dense mb=1 ic=4 oc=4 dt=f32 relu={relu}"))
        self.assertEqual(claims.claim6(cs).verdict, "refuted")

    def test_memory_claims_judge_inference_and_the_training_step_apart(self):
        # Inference: the in-place ReLU saves nothing; the training step: it saves the 4 MB of
        # one buffer. Judged together they would be one median; apart, each says its own.
        cs = []
        for d, saved in (("", 0.0), (" dir=train", 4e6)):
            for relu in ("inplace", "separate"):
                peak = 20e6 + (saved if relu == "separate" else 0.0)
                cs.append(case(f"k/f32/p{d}-relu_{relu}", relu=relu, time=10.0, lb_host_peak_bytes=peak,
                               lb_tensor_bytes=peak, problem=f"dense mb=8 ic=64 oc=64 dt=f32 relu={relu}{d}"))
        v = claims.claim6(cs)
        self.assertEqual(v.verdict, "depends")
        text = "\n".join(v.lines)
        self.assertIn("inference, host peak: in-place lower in 0 of 1 pairs", text)
        self.assertIn("training step, host peak: in-place lower in 1 of 1 pairs", text)
        self.assertNotIn("--dir train", text)
        self.assertEqual(claims.claim6([c for c in cs if "dir=" not in c.problem]).verdict, "refuted")
        only_train = claims.claim6([c for c in cs if "dir=" in c.problem])
        self.assertEqual(only_train.verdict, "confirmed")
        # A batch fit per pass: the training step's slope is its own, not mixed with inference's.
        fits = []
        for d, slope in (("", 2e6), (" dir=train", 6e6)):
            fits += [case(f"k/f32/p{d}-mb{b}", time=10.0 * b, lb_host_peak_bytes=5e6 + slope * b, lb_batch=float(b),
                          problem=f"conv2d mb={b} ic=8 ih=8 iw=8 oc=8 kh=3 kw=3 dt=f32 relu=none{d}")
                     for b in (1, 4, 16)]
        v3 = claims.claim3(fits)
        self.assertEqual(v3.verdict, "confirmed")
        self.assertTrue(any(l.startswith("training step, host / conv: median fixed 5 MB, median 6 MB per sample")
                            for l in v3.lines), v3.lines)
        self.assertTrue(any("(dir=train)" in str(r[0]) for r in v3.table.raw))

    def test_batch_fit_recovers_fixed_and_slope(self):
        cs = [case(f"k/f32/p-mb{b}", time=10.0 * b, lb_host_peak_bytes=5e6 + 2e6 * b, lb_batch=float(b),
                   lb_pred_param_bytes=5e6, lb_pred_act_bytes=2e6 * b,
                   problem=f"conv2d mb={b} ic=8 ih=8 iw=8 oc=8 kh=3 kw=3 dt=f32 relu=none") for b in (1, 4, 16)]
        fit = claims.memory_fits(cs)[0]
        self.assertAlmostEqual(fit["fixed"], 5e6)
        self.assertAlmostEqual(fit["slope"], 2e6)
        self.assertEqual(claims.claim3(cs).verdict, "confirmed")
        # Memory exactly proportional to batch: no fixed part, the claim is refuted.
        prop = [case(f"k/f32/p-mb{b}", time=10.0 * b, lb_host_peak_bytes=2e6 * b, lb_batch=float(b),
                     problem=f"conv2d mb={b} ic=8 ih=8 iw=8 oc=8 kh=3 kw=3 dt=f32 relu=none") for b in (1, 4, 16)]
        self.assertEqual(claims.claim3(prop).verdict, "refuted")

    def test_separable_not_faster_is_refuted(self):
        dw = case("dw", type="depthwise", time=50.0, lb_pred_macs=903168.0,
                  problem="conv2d mb=1 ic=512 ih=14 iw=14 oc=512 kh=3 kw=3 sh=1 ph=1 g=512 dt=f32 relu=none")
        pw = case("pw", type="pointwise", time=60.0, lb_pred_macs=51380224.0,
                  problem="conv2d mb=1 ic=512 ih=14 iw=14 oc=512 kh=1 kw=1 sh=1 ph=0 g=1 dt=f32 relu=none")
        std = case("std", type="conv", time=100.0, lb_pred_macs=462422016.0,
                   problem="conv2d mb=1 ic=512 ih=14 iw=14 oc=512 kh=3 kw=3 sh=1 ph=1 g=1 dt=f32 relu=none")
        v = claims.claim8([dw, pw, std])
        self.assertEqual(v.verdict, "refuted", v.lines)
        # Faster, and by less than the MACs say (0.22 of the time for 0.11 of the MACs): confirmed.
        std.reps = [dict(r, real_time=500.0) for r in std.reps]
        self.assertEqual(claims.claim8([dw, pw, std]).verdict, "confirmed")

    def test_gpu_utilisation_from_the_events_where_nvml_gave_none(self):
        # Short timed loops carry no NVML figure (lb_gpu_util_avg), only the busy share from
        # the events: claim 1's GPU part is judged on that, and says so.
        cs = [case(f"g/f32/p{i}", device="gpu", time=10.0, lb_device_peak_bytes=1e6 * (i + 1),
                   lb_gpu_busy_pct=90.0 - 15 * (i % 3), problem=f"dense mb={i + 1} ic=4 oc=4 dt=f32 relu=none")
              for i in range(6)]
        lines = " ".join(claims.claim1(cs).lines)
        self.assertIn("GPU busy share (event time / wall time)", lines)
        self.assertNotIn("GPU part not measured", lines)
        for c in cs:
            c.reps = [dict(r, lb_gpu_util_avg=50.0 + r["lb_device_peak_bytes"] / 1e6) for r in c.reps]
        self.assertIn("NVML GPU utilisation", " ".join(claims.claim1(cs).lines))


if __name__ == "__main__":
    unittest.main()
