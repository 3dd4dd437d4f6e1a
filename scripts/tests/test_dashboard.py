#!/usr/bin/python3
"""scripts/dashboard without a browser: the site's files, the data it embeds, the run pages,
and the regression rule on made-up series (the browser test checks the page itself)."""

import json
import os
import shutil
import unittest

from helpers import TempDir, fixture, script

from lbreport import dashboard

HISTORY = fixture("history")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def data_of(site):
    with open(os.path.join(site, "data.js"), encoding="utf-8") as f:
        text = f.read()
    return json.loads(text[text.index("=") + 1:].strip().rstrip(";"))


class Site(unittest.TestCase):
    def test_build(self):
        with TempDir() as tmp:
            p = script("dashboard", "--history", HISTORY, "--out", tmp)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("8 runs, 7 cases, 2 regressions", p.stdout)
            for f in ("index.html", "app.js", "style.css", "chart.umd.js", "data.js"):
                self.assertTrue(os.path.getsize(os.path.join(tmp, f)) > 0, f)
            page = read(os.path.join(tmp, "index.html"))
            self.assertNotIn("{{", page)
            self.assertIn("x &gt; m + 3.0 × max(s, 1 % of m)", page)
            d = data_of(tmp)
            self.assertEqual([r["date"][:10] for r in d["runs"]], [f"2026-11-0{i}" for i in range(1, 9)])
            regs = {(r["name"], r["metric"]) for r in d["regressions"]}
            self.assertEqual(regs, {("dense.onednn.default/f32/fc-mb1/threads:1", "time"),
                                    ("lstm.onednn.default/bf16/lstm-mb1/threads:1", "host peak")})
            # The failed night is a gap with its reason, not a number.
            conv1 = next(c for c in d["cases"] if c["name"] == "conv2d.onednn.default/f32/conv1-mb1/threads:1")
            night4 = next(p for p in conv1["points"] if p["run"] == 3)
            self.assertEqual((night4["status"], night4["time"]), ("failed", None))
            self.assertIn("synthetic failure", night4["reason"])
            # Every point's run has a page, with the case's row as its anchor.
            for run in d["runs"]:
                path = os.path.join(tmp, run["href"])
                html = read(path)
                self.assertIn(f'id="case-{conv1["id"]}"', html)
            self.assertEqual(sorted(os.listdir(os.path.join(tmp, "runs"))),
                             sorted(f[:-5] + ".html" for f in os.listdir(HISTORY)))

    def test_broken_history_file(self):
        with TempDir() as tmp:
            hist = os.path.join(tmp, "history")
            shutil.copytree(HISTORY, hist)
            shutil.copyfile(fixture("truncated.json"), os.path.join(hist, "2026-11-09T020000_nightly.json"))
            p = script("dashboard", "--history", hist, "--out", os.path.join(tmp, "site"))
            self.assertEqual(p.returncode, 1)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn("2026-11-09T020000_nightly.json: truncated", p.stderr)
            self.assertIn("8 runs", p.stdout)

    def test_no_history(self):
        p = script("dashboard", "--history", "/nonexistent/history", "--out", "/nonexistent/site")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no such folder", p.stderr)


def series(values):
    return [{"id": 0, "name": "c", "points": [{"run": i, "time": v, "host": None, "device": None}
                                               for i, v in enumerate(values)]}]


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
        self.assertEqual(flagged(noisy + [260]), ["time"])

    def test_one_wild_night_does_not_widen_the_band(self):
        self.assertEqual(flagged([100, 100, 300, 100, 101, 99, 130]), ["time"])

    def test_flat_history_and_small_changes(self):
        self.assertEqual(flagged([100, 100, 100, 100, 103]), [])  # under min-change
        self.assertEqual(flagged([100, 100, 100, 100, 106]), ["time"])

    def test_too_few_runs(self):
        self.assertEqual(flagged([100, 100, 300]), [])
        self.assertEqual(flagged([100, 100, 100, 300], min_runs=4), [])

    def test_faster_is_never_a_regression(self):
        self.assertEqual(flagged([100, 101, 99, 100, 50]), [])


if __name__ == "__main__":
    unittest.main()
