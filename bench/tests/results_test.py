#!/usr/bin/env python3
"""ctest -L bench: results that cannot be lost or corrupted. A tiny sweep is interrupted at
random moments (SIGINT, SIGTERM, SIGKILL), its log torn, its disk filled, its --out
contended and its settings changed; after each, --resume must leave every case once, whole,
none "interrupted", in a valid file. Then merge: whole cases only, machines and settings
checked, unreadable inputs one line.

usage: results_test.py path/to/layerbench [trials per signal, default 5]
(5: 15 interrupted runs at random moments in every CI run, each with its resume; the
moments differ from run to run, RESULTS_TEST_SEED repeats one)
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

LB = sys.argv[1]
TRIALS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
failures = []
random.seed(int(os.environ.get("RESULTS_TEST_SEED", time.time())))


def run(*args, expect=0):
    p = subprocess.run([LB, *args], capture_output=True, text=True)
    if expect is not None and p.returncode != expect:
        failures.append(f"{' '.join(args)}: exit {p.returncode}, expected {expect}\n{p.stdout[-1500:]}{p.stderr[-1500:]}")
    return p


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def refused(p, text, what):
    """Bad input or a refusal: exit 2, one line on stderr that says `text`, nothing on stdout."""
    check(p.returncode == 2 and text in p.stderr and p.stderr.count("\n") == 1 and p.stdout == "",
          f"{what}: exit {p.returncode}, stderr {p.stderr!r}, stdout {p.stdout[:200]!r}")


def snapshot(*paths):
    return {p: open(p, "rb").read() if os.path.exists(p) else None for p in paths}


def runs_of(doc):
    """Every case's run objects: the measured ones and those not measured (format 2)."""
    return doc["benchmarks"] + doc.get("layerbench_not_measured", [])


def groups(runs):
    """A file's cases: consecutive objects of one lb_case."""
    out = []
    for r in runs:
        if out and out[-1][0] == r["lb_case"]:
            out[-1][1].append(r)
        else:
            out.append((r["lb_case"], [r]))
    return out


def check_whole(out, expected, what):
    """The final file is valid JSON; every expected case is in it once, whole, none interrupted;
    the log's lines all parse."""
    try:
        with open(out) as f:
            results = json.load(f)
        with open(out + "l") as f:
            for line in f:
                json.loads(line)
    except (OSError, ValueError) as e:
        return check(False, f"{what}: {e}")
    cases = groups(runs_of(results))
    names = [name for name, _ in cases]
    ok = check(sorted(names) == sorted(expected),
               f"{what}: cases missing {sorted(set(expected) - set(names))[:3]}, "
               f"twice {sorted(n for n in set(names) if names.count(n) > 1)[:3]}, unexpected {sorted(set(names) - set(expected))[:3]}")
    for name, runs in cases:
        iterations = [r for r in runs if r["run_type"] == "iteration"]
        ok &= check(all(r.get("error_message") != "interrupted" for r in runs), f"{what}: {name} interrupted")
        ok &= check(len(runs) == runs[0].get("lb_case_runs"), f"{what}: {name}: {len(runs)} objects of {runs[0].get('lb_case_runs')}")
        ok &= check(runs[0].get("error_occurred") or len(iterations) == iterations[0]["repetitions"],
                    f"{what}: {name}: {len(iterations)} repetitions written of {iterations[0]['repetitions']}")
    ok &= check("layerbench_settings" in results["context"], f"{what}: no settings in the context")
    return ok


with tempfile.TemporaryDirectory() as tmp:
    suite = os.path.join(tmp, "tiny.txt")
    with open(suite, "w") as f:
        f.write("dense mb=2 ic=8 oc=4\ndense mb=3 ic=16 oc=8 relu=fused\n"
                "conv2d mb=1 ic=2 ih=6 iw=6 oc=4 kh=3 kw=3 ph=1\nlstm mb=1 t=2 ic=4 hc=4\n")
    sweep = ["--suite", suite, "--backend", "ref,cpu,onednn,eigen", "--dtype", "f32", "--threads", "1",
             "--benchmark_min_time=0.004", "--benchmark_repetitions=3"]
    expected = [line.partition("  ")[0] for line in run("run", "--list", *sweep).stdout.splitlines()]
    check(len(expected) >= 8, f"the tiny sweep has {len(expected)} cases")

    # A complete run first: its length sets the window of the random interrupts.
    full = os.path.join(tmp, "full.json")
    start = time.time()
    run("run", *sweep, "--out", full)
    length = time.time() - start
    check_whole(full, expected, "a complete run")
    resume = ["--resume"]

    # A resume with nothing left writes the results file from the log.
    os.remove(full)
    p = run("run", *sweep, "--out", full, "--resume")
    check("0 to run" in p.stderr, f"resume of a complete run said {p.stderr[-300:]!r}")
    check_whole(full, expected, "a resume with nothing left")

    # Interrupts at random moments, then --resume.
    for signo in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        for trial in range(TRIALS):
            out = os.path.join(tmp, f"{signo.name}-{trial}.json")
            proc = subprocess.Popen([LB, "run", *sweep, "--out", out], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            at = random.uniform(0.05, length)
            time.sleep(at)
            proc.send_signal(signo)
            _, stderr = proc.communicate(timeout=120)
            what = f"{signo.name} at {at:.2f} s"
            if proc.returncode == 0:  # it finished first
                check_whole(out, expected, what + " (finished before the signal)")
                continue
            check(proc.returncode in (128 + signo, -signo), f"{what}: exit {proc.returncode}: {stderr[-300:]}")
            if proc.returncode == 128 + signo:  # caught: the results file is written
                check(os.path.exists(out), f"{what}: exit {proc.returncode} but no {out}: {stderr[-300:]}")
            if signo != signal.SIGKILL and os.path.exists(out):
                with open(out) as f:
                    kept = runs_of(json.load(f))
                check(all(r.get("error_message") != "interrupted" for r in kept), f"{what}: an interrupted case was kept")
            p = run("run", *sweep, "--out", out, *resume)
            check_whole(out, expected, f"{what}, resumed")

    # A torn last line (a crash while writing it): cut off with a message, its case run again.
    for trial in range(3):
        out = os.path.join(tmp, f"torn-{trial}.json")
        shutil.copy(full, out)
        shutil.copy(full + "l", out + "l")
        data = open(out + "l", "rb").read()
        cut = random.randrange(len(data) // 2, len(data) - 2)
        while data[cut - 1:cut] == b"\n":
            cut -= 1
        with open(out + "l", "wb") as f:
            f.write(data[:cut])
        os.remove(out)
        p = run("run", *sweep, "--out", out, *resume)
        check("cut off a torn last line" in p.stderr, f"torn line at byte {cut}: said {p.stderr[-300:]!r}")
        check_whole(out, expected, f"torn line at byte {cut}, resumed")

    # A full disk: the error names the errno, the log keeps whole cases, and once there is
    # space --resume completes it.
    disk = os.path.join(tmp, "small")
    os.mkdir(disk)
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24k", "tmpfs", disk], capture_output=True, text=True)
    if mount.returncode != 0:
        print(f"SKIP full disk: cannot mount a tmpfs ({(mount.stderr or 'no reason given').strip()})")
    else:
        try:
            out = os.path.join(disk, "x.json")
            p = run("run", *sweep, "--out", out, expect=2)
            check("No space left on device" in p.stderr, f"full disk said {p.stderr[-300:]!r}")
            with open(out + "l") as f:
                lines = f.read()
            check(lines.endswith("\n"), "full disk: the log ends in a partial line")
            logged = groups([json.loads(l) for l in lines.splitlines() if '"lb_case"' in l])
            check(all(len(g) == g[0]["lb_case_runs"] for _, g in logged), "full disk: a partial case in the log")
            subprocess.run(["mount", "-o", "remount,size=16m", disk], check=True)
            run("run", *sweep, "--out", out, *resume)
            check_whole(out, expected, "full disk, resumed with space")
        finally:
            subprocess.run(["umount", disk])

    # Two runs on one --out: the second is refused naming the first's pid; the first's
    # results are intact.
    shared = os.path.join(tmp, "shared.json")
    slow = [a if a != "--benchmark_min_time=0.004" else "--benchmark_min_time=0.05" for a in sweep]
    first = subprocess.Popen([LB, "run", *slow, "--out", shared], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and not (os.path.exists(shared + "l") and os.path.getsize(shared + "l") > 0):
        time.sleep(0.02)
    for flags in (["--overwrite"], ["--resume"], []):
        refused(run("run", *slow, "--out", shared, *flags, expect=2),
                f"being written by another layerbench run (pid {first.pid})", f"second run {flags}")
    check(first.wait(timeout=300) == 0, f"the first run failed: {first.stderr.read()[-300:]}")
    check_whole(shared, expected, "the first of two runs on one --out")

    # --resume with other settings is refused, leaving the files as they were; --resume-force
    # continues. A flag either parser rejects leaves them as they were too.
    before = snapshot(full, full + "l")
    refused(run("run", *sweep, "--out", full, "--resume", "--seed", "2", expect=2), "seed: '1' before, '2' now",
            "--resume --seed 2")
    check(snapshot(full, full + "l") == before, "a refused resume changed the files")
    for bad in (["--benchmark_min_tme=0.05"], ["--benchmark_format=xml"], ["--benchmark_repetitions=-1"],
                ["--noisy-cv", "nan"], ["--shard", "1/2/3"], []):
        for mode in (["--resume"], ["--overwrite"], []) if bad else ([],):
            p = run("run", *sweep, "--out", full, *bad, *mode, expect=2)
            check(p.stderr.count("\n") == 1, f"{bad} {mode}: {p.stderr!r}")
            check(snapshot(full, full + "l") == before, f"{bad} {mode} changed the files")
    p = run("run", *sweep, "--out", full, "--resume-force", "--seed", "2")
    check("seed: '1' before, '2' now" in p.stderr, f"--resume-force said {p.stderr[-300:]!r}")

    # --benchmark_format=json: stdout is Google Benchmark's JSON alone (our summary goes to stderr).
    p = run("run", *sweep, "--benchmark_format=json")
    try:
        check(len(json.loads(p.stdout)["benchmarks"]) > 0, "--benchmark_format=json wrote no benchmarks")
    except ValueError as e:
        check(False, f"--benchmark_format=json > f is not JSON: {e}: {p.stdout[-300:]!r}")

    # merge: whole cases, the later or the complete copy, said on stderr.
    a, b = os.path.join(tmp, "SIGINT-0.json"), os.path.join(tmp, "SIGTERM-0.json")
    merged = os.path.join(tmp, "merged.json")
    p = run("merge", merged, a, b)
    check(p.stderr.count("kept the later copy") == len(expected), f"merge of two complete runs said {p.stderr[:300]!r}")
    b_cases = dict(groups(runs_of(json.load(open(b)))))
    m_cases = dict(groups(runs_of(json.load(open(merged)))))
    check(m_cases == b_cases, "merge did not keep the later file's cases whole")
    # An interrupted copy of one case (its last object lost) loses to the whole one.
    partial = os.path.join(tmp, "partial.jsonl")
    lines = open(b + "l").read().splitlines()
    victim = max(i for i, l in enumerate(lines) if '"lb_case"' in l)
    with open(partial, "w") as f:
        f.write("\n".join(lines[:victim]) + "\n")
    p = run("merge", merged, a, partial)
    name = json.loads(lines[victim])["lb_case"]
    check(f"{name}: kept the whole copy from {a}" in p.stderr, f"merge with a partial case said {p.stderr[-400:]!r}")
    check(dict(groups(runs_of(json.load(open(merged)))))[name] == dict(groups(runs_of(json.load(open(a)))))[name],
          "merge mixed a whole and an interrupted copy")
    p = run("merge", merged, partial)
    check(f"{name}: left out" in p.stderr and name not in dict(groups(runs_of(json.load(open(merged))))),
          f"merge kept a case that is whole nowhere: {p.stderr[-300:]!r}")
    # Another machine (its name), other settings: refused unless --force; another shard, or
    # other peaks (measured again between shards), is fine.
    results = json.load(open(a))
    for key, value, text in (("layerbench_machine", "elsewhere", "another machine"), ("seed", "7", "other settings"),
                             ("shard", "1/2", None), ("peaks", "f32_fma 1 thread 1.0 GFLOP/s", None)):
        other = json.loads(json.dumps(results))
        (other["context"] if key.startswith("layerbench_") else other["context"]["layerbench_settings"])[key] = value
        path = os.path.join(tmp, f"other-{key}.json")
        json.dump(other, open(path, "w"))
        if text:
            refused(run("merge", merged, a, path, expect=2), text, f"merge with {key}={value}")
            run("merge", "--force", merged, a, path)
        else:
            run("merge", merged, a, path)
    # An input with no cases (a shard whose share was nothing: no machine, no peaks) is
    # skipped and said, whichever place it has; the context is the first input's with cases.
    empty = os.path.join(tmp, "empty-shard.json")
    json.dump({"context": {"layerbench_settings": {"shard": "7/8"}}, "benchmarks": []}, open(empty, "w"))
    p = run("merge", merged, empty, a)
    check(f"{empty}: no cases, nothing taken from it" in p.stderr, f"merge of an empty shard said {p.stderr[-300:]!r}")
    got = json.load(open(merged))
    check(got["context"].get("layerbench_machine") == results["context"].get("layerbench_machine") and
          len(runs_of(got)) == len(runs_of(results)), "merge of an empty shard and a file changed its cases or context")
    # Inputs merge cannot read: one line, exit 2.
    not_array = os.path.join(tmp, "object.json")
    json.dump({"context": {}, "benchmarks": {"x": 1}}, open(not_array, "w"))
    bad_json = os.path.join(tmp, "bad.json")
    open(bad_json, "w").write('{"benchmarks": [')
    for path, text in ((tmp, "is a directory"), (not_array, "no \"benchmarks\" array"), (bad_json, "is not JSON"),
                       (os.path.join(tmp, "missing.json"), "No such file")):
        refused(run("merge", merged, a, path, expect=2), text, f"merge {path}")

for f in failures:
    print("FAIL:", f)
print(f"results: {0 if failures else 1} passed, {1 if failures else 0} failed")
sys.exit(1 if failures else 0)
