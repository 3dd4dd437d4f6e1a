#!/usr/bin/python3
"""scripts/dashboard without a browser: the site's files, the data it embeds, the run pages,
and the regression rule on made-up series (the browser test checks the page itself)."""

import datetime
import glob
import gzip
import json
import os
import re
import shutil
import unittest

from helpers import TempDir, fixture, script

from lbreport import dashboard
from lbreport.results import load

HISTORY = fixture("history")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def data_of(site):
    with open(os.path.join(site, "data", "index.js"), encoding="utf-8") as f:
        text = f.read()
    return json.loads(text[text.index("=") + 1:].strip().rstrip(";"))


def month_of(site, machine, month):
    with open(os.path.join(site, "data", machine, month + ".js"), encoding="utf-8") as f:
        text = f.read()
    return json.loads(text[text.index(", [") + 2:].strip().rstrip(");"))


ZEN = "zen5-vm"
PLANTED = "dense.onednn.default/f32/fc-mb1/threads:1"
PLANTED_MEMORY = "lstm.onednn.default/bf16/lstm-mb1/threads:1"
NOISY = "conv2d.eigen.im2col/f32/pw8-mb1/threads:1"


class Site(unittest.TestCase):
    def test_build(self):
        with TempDir() as tmp:
            p = script("dashboard", "--history", HISTORY, "--out", tmp, "--repo-url", "https://example.org/lb")
            self.assertEqual(p.returncode, 1, p.stderr)  # regressions: exit 1 and an alert
            self.assertIn("zen5-vm: 8 runs, 8 cases; newest run", p.stdout)
            self.assertIn("2 regressions, 1 improvements, 1 cannot judge", p.stdout)
            self.assertIn("1 runs older than 12 months", p.stdout)
            for f in ("index.html", "app.js", "style.css", "chart.umd.js", "data/index.js", "alert.md"):
                self.assertTrue(os.path.getsize(os.path.join(tmp, f)) > 0, f)
            page = read(os.path.join(tmp, "index.html"))
            self.assertNotIn("{{", page)
            self.assertIn("x &gt; m + 3.0 × max(s, 1 % of m)", page)
            d = data_of(tmp)
            # Two machines, both hosts called `vm`: never merged.
            names = [m["name"] for m in d["machines"]]
            self.assertEqual(names[0], ZEN)
            self.assertEqual(len(names), 2)
            self.assertTrue(names[1].startswith("vm-"), names)
            zen = d["machines"][0]
            self.assertEqual([r["date"][:10] for r in zen["runs"]],
                             ["2026-10-30", "2026-10-31"] + [f"2026-11-0{i}" for i in range(1, 7)])
            self.assertEqual(zen["months"], ["2026-10", "2026-11"])
            regs = {(f["name"], f["metric"]) for f in zen["findings"] if f["verdict"] == "regression"}
            self.assertEqual(regs, {(PLANTED, "time"), (PLANTED_MEMORY, "host peak")})
            noisy = [f for f in zen["findings"] if f["name"] == NOISY]
            self.assertEqual([f["verdict"] for f in noisy], ["cannot judge"])
            self.assertIn("noisy", noisy[0]["why"])
            self.assertEqual(zen["never_measured"], 1)
            self.assertNotIn("conv2d.eigen.im2col/f32/dw8-mb1/threads:1", [c["name"] for c in zen["cases"]])
            # The failed night is a gap with its reason, not a number.
            conv1 = next(c for c in zen["cases"] if c["name"] == "conv2d.onednn.default/f32/conv1-mb1/threads:1")
            nov = {c["id"]: c for c in month_of(tmp, ZEN, "2026-11")}
            night4 = next(p for p in nov[conv1["id"]]["points"] if p["run"] == 3)
            self.assertEqual((night4["status"], night4["time"]), ("failed", None))
            self.assertIn("synthetic failure", night4["reason"])
            # The planted point is flagged and has its band.
            fc = next(c for c in zen["cases"] if c["name"] == PLANTED)
            last = nov[fc["id"]]["points"][-1]
            self.assertEqual(last["flag"], "regression")
            self.assertLess(last["band"][1], last["time"])
            # Every run has a page, with the case's row and the link to the commits since the run before.
            for run in zen["runs"]:
                html = read(os.path.join(tmp, run["href"]))
                self.assertIn(f'id="case-{conv1["id"]}"', html)
                if run["index"]:
                    self.assertIn(f'href="https://example.org/lb/compare/{run["prev_commit"]}...{run["commit"]}"',
                                  html)
            alert = read(os.path.join(tmp, "alert.md"))
            self.assertIn(PLANTED, alert)
            self.assertIn(PLANTED_MEMORY, alert)
            self.assertNotIn(NOISY, alert)
            self.assertIn(f"Commit range: `{zen['runs'][-2]['commit']}..{zen['runs'][-1]['commit']}`", alert)

    def test_broken_history_file(self):
        with TempDir() as tmp:
            hist = os.path.join(tmp, "history")
            shutil.copytree(os.path.join(HISTORY, "vm-intel"), hist)
            shutil.copyfile(fixture("truncated.json"), os.path.join(hist, "2026-11-09T020000_x.json"))
            p = script("dashboard", "--history", hist, "--out", os.path.join(tmp, "site"))
            self.assertEqual(p.returncode, 2)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn("2026-11-09T020000_x.json: truncated", p.stderr)
            self.assertIn("3 runs", p.stdout)

    def test_machine_steadiness_is_shown(self):
        """--steadiness's probe of the newest run: on the summary line, the page's data and the run's page."""
        with TempDir() as tmp:
            hist = os.path.join(tmp, "history")
            shutil.copytree(os.path.join(HISTORY, "vm-intel"), hist)
            newest = sorted(glob.glob(os.path.join(hist, "*.json")))[-1]
            with open(newest, encoding="utf-8") as f:
                doc = json.load(f)
            doc["context"]["layerbench_steadiness"] = json.dumps(
                {"windows": 50, "fma_spread": 0.134, "fma_slowest": 1.36, "clock_spread": 0.026})
            with open(newest, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            site = os.path.join(tmp, "site")
            p = script("dashboard", "--history", hist, "--out", site)
            shared = ("one core's FMA throughput varied ±13.4% (robust SD of 50 windows over the run, slowest 1.36× "
                      "the median), its clock ±2.6%: other work shares the core (the throughput moved, the clock did not)")
            self.assertIn("its machine: " + shared, p.stdout)
            runs = data_of(site)["machines"][0]["runs"]
            self.assertEqual([r["steadiness"] for r in runs], ["", "", shared])
            self.assertIn(f"The machine over the run: {shared}.".replace("'", "&#x27;"),
                          read(os.path.join(site, runs[-1]["href"])))
            self.assertNotIn("The machine at the start", read(os.path.join(site, runs[0]["href"])))

    def test_no_history(self):
        p = script("dashboard", "--history", "/nonexistent/history", "--out", "/nonexistent/site")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no such folder", p.stderr)


class Sample(unittest.TestCase):
    """results/history: real nightly runs (scripts/nightly.sh on the 2-core VM), gzipped."""

    SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "results", "history")

    def nights(self):
        return sorted(glob.glob(os.path.join(self.SAMPLE, "*", "*.json.gz")))

    def test_sample_builds(self):
        nights = self.nights()
        self.assertGreaterEqual(len(nights), 3)
        with TempDir() as tmp:
            p = script("dashboard", "--history", self.SAMPLE, "--out", tmp)
            self.assertIn(p.returncode, (0, 1), p.stderr)
            zen = data_of(tmp)["machines"][0]
            self.assertGreaterEqual(len(zen["runs"]), 3)
            self.assertTrue(all(r["commit"] for r in zen["runs"]))
            self.assertEqual(zen["runs"], sorted(zen["runs"], key=lambda r: r["date"]))

    def planted(self, factor, cases, again=None):
        """The sample plus a copy of its newest night, a day later under a new commit, with some
        cases' times (or all) multiplied by factor -> the dashboard's (exit status, stdout, alert).
        again: those cases measured again (a .confirm file beside the night), times × again."""
        nights = self.nights()
        with gzip.open(nights[-1], "rt", encoding="utf-8") as f:
            doc = json.load(f)
        run = load(nights[-1])
        with TempDir() as tmp:
            hist = os.path.join(tmp, "history")
            shutil.copytree(self.SAMPLE, hist)
            night = datetime.datetime.fromisoformat(run.date) + datetime.timedelta(days=1)
            doc["context"]["date"] = night.isoformat()
            doc["context"]["layerbench_git_commit"] = "feedc0ffee00"
            doc["context"]["load_avg"] = [0.0, 0.0, 0.0]
            for r in doc["benchmarks"]:
                if (cases is None or r.get("lb_case") in cases) and isinstance(r.get("real_time"), (int, float)):
                    r["real_time"] *= factor
            name = night.strftime("%Y-%m-%dT%H%M%S") + "_feedc0ffee00.json.gz"
            with gzip.open(os.path.join(hist, run.machine, name), "wt") as f:
                json.dump(doc, f)
            if again is not None:
                doc["benchmarks"] = [r for r in doc["benchmarks"] if r.get("lb_case") in cases]
                for r in doc["benchmarks"]:
                    if isinstance(r.get("real_time"), (int, float)):
                        r["real_time"] *= again / factor
                with gzip.open(os.path.join(hist, run.machine, name.replace(".json.gz", ".confirm.json.gz")),
                               "wt") as f:
                    json.dump(doc, f)
            # The sample's own nights judged on their load too would hide the plant: judge on time alone.
            p = script("dashboard", "--history", hist, "--out", os.path.join(tmp, "site"), "--max-load", "1000")
            alert = os.path.join(tmp, "site", "alert.md")
            return p, (read(alert) if os.path.exists(alert) else ""), run

    def steady_cases(self, n):
        """The n cases whose times moved least over the sample's nights."""
        runs = [load(f) for f in self.nights()]
        spread = {}
        for key, c in runs[-1].cases.items():
            ts = [r.cases[key].time_us for r in runs if key in r.cases and r.cases[key].ok]
            if len(ts) == len(runs):
                spread[c.name] = max(ts) / min(ts)
        return sorted(spread, key=spread.get)[:n]

    def test_planted_slowdown_alerts(self):
        steady = self.steady_cases(3)
        p, alert, run = self.planted(1.2, set(steady))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        for name in steady:
            self.assertIn(name, alert)
        self.assertIn(f"Commit range: `{run.commit}..feedc0ffee00`", alert)
        self.assertIn("+20.0%", alert)

    def test_planted_slowdown_measured_again(self):
        steady = self.steady_cases(3)
        # (The sample's own newest night has cases far off the nights before; they are flagged
        # either way, and not measured again here.)
        p, alert, _ = self.planted(1.2, set(steady), again=1.0)  # not there the second time
        for name in steady:
            self.assertNotIn(name, alert)
        self.assertIn("4 runs", p.stdout)  # the .confirm file is part of its night, not a run
        p, alert, _ = self.planted(1.2, set(steady), again=1.2)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        for name in steady:
            # measured again: the same ratio to the median as the night's
            self.assertRegex(alert, re.escape(f"| {name} | time |") + r"[^\n]*\| (1\.\d{3}) \([^|]*\| \1 \|")

    def test_everything_slower_is_a_machine_change(self):
        p, alert, _ = self.planted(1.2, None)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("run-wide shift ×1.2", p.stdout)
        self.assertIn("**Run-wide shift**", alert)
        self.assertLess(alert.count("| time |"), 5, alert)  # not one line per case


def series(values, again=None):
    """One case's points; `again`: the newest run's second measurement."""
    pts = [{"run": i, "time": v, "host": None, "device": None} for i, v in enumerate(values)]
    pts[-1]["confirm"] = again
    return [{"id": 0, "name": "c", "points": pts}]


def on_cpus(values, cpus):
    """One case's points, each run on the CPU (signature) given for it."""
    cases = series(values)
    for p, cpu in zip(cases[0]["points"], cpus):
        p["cpu"] = cpu
    return cases


def verdicts(values, again=None, **kw):
    rule = dict(window=10, min_runs=3, k=3.0, min_change=0.05)
    rule.update(kw)
    return [r["verdict"] for r in dashboard.judge(series(values, again), len(values) - 1, **rule,
                                                   verdicts=("regression", "improvement", "cannot judge"))]


def flagged(values, **kw):
    rule = dict(window=10, min_runs=3, k=3.0, min_change=0.05)
    rule.update(kw)
    return [r["metric"] for r in dashboard.judge(series(values), len(values) - 1, **rule)]


class Rule(unittest.TestCase):
    def test_steady_case_flags_a_clear_slowdown(self):
        self.assertEqual(flagged([100, 101, 99, 100, 100, 130]), ["time"])

    def test_noisy_case_needs_more(self):
        noisy = [100, 125, 80, 122, 78, 120, 85]
        self.assertEqual(flagged(noisy + [130]), [])
        self.assertEqual(verdicts(noisy + [130]), ["cannot judge"])  # moved, but inside its band
        self.assertEqual(flagged(noisy + [260]), ["time"])

    def test_one_wild_night_does_not_widen_the_band(self):
        self.assertEqual(flagged([100, 100, 300, 100, 101, 99, 130]), ["time"])

    def test_flat_history_and_small_changes(self):
        self.assertEqual(flagged([100, 100, 100, 100, 103]), [])  # under min-change
        self.assertEqual(flagged([100, 100, 100, 100, 106]), ["time"])

    def test_too_few_runs(self):
        self.assertEqual(flagged([100, 100, 300]), [])
        self.assertEqual(verdicts([100, 100, 300]), ["cannot judge"])
        self.assertEqual(verdicts([100, 100, 101]), [])  # unchanged: nothing to judge
        self.assertEqual(flagged([100, 100, 100, 300], min_runs=4), [])

    def test_faster_is_never_a_regression(self):
        self.assertEqual(flagged([100, 101, 99, 100, 50]), [])

    def test_a_verdict_stands_only_if_measured_again_it_shows(self):
        steady = [100, 101, 99, 100, 100, 130]
        self.assertEqual(verdicts(steady, again=131), ["regression"])
        self.assertEqual(verdicts(steady, again=101), ["cannot judge"])
        found = dashboard.judge(series(steady, 101), 5, window=10, min_runs=3, k=3.0, min_change=0.05,
                                verdicts=("cannot judge",))
        self.assertIn("not confirmed: measured again right after, 1.010×", found[0]["why"])
        self.assertEqual(verdicts([100, 101, 99, 100, 100, 60], again=99), ["cannot judge"])

    def test_runs_on_another_cpu_are_not_history(self):
        # A VM moved from a Zen 5 host to a Zen 4 one under the same machine name: twice as slow
        # is the CPU, not a regression, and the Zen 4 runs are judged only among themselves.
        rule = dict(window=10, min_runs=3, k=3.0, min_change=0.05,
                    verdicts=("regression", "improvement", "cannot judge"))
        cpus = ["zen5"] * 5 + ["zen4"] * 4
        values = [100, 101, 99, 100, 100, 200, 201, 199, 200]
        for n in range(6, 10):
            self.assertEqual(dashboard.judge(on_cpus(values[:n], cpus), n - 1, **rule), [], n)
        self.assertEqual([r["verdict"] for r in dashboard.judge(on_cpus(values[:8] + [240], cpus), 8, **rule)],
                         ["regression"])
        # Without the signatures (older files) the move is a regression: what the filter prevents.
        self.assertEqual([r["verdict"] for r in dashboard.judge(series(values[:6]), 5, **rule)], ["regression"])

    def test_a_noisy_night_widens_every_band(self):
        # 20 steady cases; in the newest night each moved by its own factor (0.75-1.33: a busy
        # neighbour) and one by 1.3: inside that night's noise, so not a regression.
        cases = []
        for i in range(20):
            f = 0.75 * (1.33 / 0.75) ** (i / 19)
            pts = [{"run": r, "time": 100.0, "host": None, "device": None} for r in range(5)]
            pts.append({"run": 5, "time": 100.0 * f, "host": None, "device": None})
            cases.append({"id": i, "name": f"c{i}", "points": pts})
        cases[3]["points"][-1]["time"] = 130.0
        found = dashboard.judge(cases, 5, window=10, min_runs=3, k=3.0, min_change=0.05,
                                verdicts=("regression", "cannot judge"))
        self.assertNotIn("regression", [f["verdict"] for f in found], found)
        self.assertIn("from the run's case-to-case noise", next(f["why"] for f in found if f["name"] == "c3"))
        # The same 1.3 on a quiet night is a regression.
        for d in cases:
            d["points"][-1]["time"] = 100.0
        cases[3]["points"][-1]["time"] = 130.0
        self.assertEqual([f["name"] for f in dashboard.judge(cases, 5, window=10, min_runs=3, k=3.0,
                                                             min_change=0.05)], ["c3"])

    def test_shuffled_repetitions_floor_the_band_by_their_standard_error(self):
        # A case whose repetitions vary 12 %: taken back to back that cv is a floor under its
        # band (±36 %, 1.2 inside it); shuffled over the run, 20 of them put the median's
        # standard error at 1.2533 x 12 % / sqrt(20) = 3.4 % (band ±10 %), and 1.2 stands out.
        def judged(rep_noise):
            d = series([100, 101, 99, 100, 120])
            for p in d[0]["points"]:
                p["rep_noise"] = rep_noise
            return [f["verdict"] for f in dashboard.judge(d, 4, window=10, min_runs=3, k=3.0, min_change=0.05,
                                                          verdicts=("regression", "cannot judge"))]
        self.assertEqual(judged(0.12), ["cannot judge"])
        self.assertEqual(judged(1.2533 * 0.12 / 20 ** 0.5), ["regression"])

    def test_a_points_repetition_noise_follows_how_the_run_took_them(self):
        night = sorted(glob.glob(os.path.join(Sample.SAMPLE, "*", "*.json.gz")))[0]
        with gzip.open(night, "rt", encoding="utf-8") as f:
            doc = json.load(f)
        with TempDir() as tmp:
            back = os.path.join(tmp, "back.json")
            with open(back, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            doc["context"]["layerbench_repetitions_shuffled"] = "true"
            shuffled = os.path.join(tmp, "shuffled.json")
            with open(shuffled, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            checked = 0
            for path, is_shuffled in ((back, False), (shuffled, True)):
                run = load(path)
                self.assertEqual(run.shuffled, is_shuffled)
                _, _, cases = dashboard.collect([run])
                for d in cases:
                    p = d["points"][0]
                    c = run.cases[next(k for k, c in run.cases.items() if c.label == d["name"])]
                    if p["cv"] is None or len(c.times_us()) < 2:
                        continue
                    n = len(c.times_us())
                    want = 1.2533 * p["cv"] / n ** 0.5 if is_shuffled else p["cv"]
                    self.assertAlmostEqual(p["rep_noise"], want, places=12)
                    checked += 1
            self.assertGreater(checked, 10)


if __name__ == "__main__":
    unittest.main()
