#!/usr/bin/env python3
"""ctest -L bench: a quick sweep of the smoke suite over every backend built, then checks
of the results it wrote, resume, shards and merge, an out-of-memory case and bad input.
The sweep's results file is kept at KEEP (when given) and its path printed, for
scripts/report and the like.

usage: bench_test.py path/to/layerbench [KEEP]
"""
import gzip
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

LB = sys.argv[1]
KEEP = sys.argv[2] if len(sys.argv) > 2 else None
QUICK = ["--benchmark_min_time=0.002", "--benchmark_repetitions=2"]
failures = []


def run(*args, expect=0):
    p = subprocess.run([LB, *args], capture_output=True, text=True)
    if p.returncode != expect:
        failures.append(f"{' '.join(args)}: exit {p.returncode}, expected {expect}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p


def check(cond, what):
    if not cond:
        failures.append(what)


def listed(*args):
    cases = {}
    for line in run("run", "--list", *args).stdout.splitlines():
        name, _, reason = line.partition("  unsupported: ")
        cases[name] = reason
    return cases


def load(path):
    with open(path) as f:
        return json.load(f)


def runs_of(doc):
    """Every case's run objects: the measured ones and those not measured (format 2)."""
    return doc["benchmarks"] + doc.get("layerbench_not_measured", [])


# Case names are what --resume and merge match on: a committed results file's sweep, listed
# again, names its f32 cases as they were named then (2026-12-07, before the axes became
# data, bench/harness/axes.h). Its suite was a temporary file: its lines are the problems
# the results hold, at batch 1 and without their axes' values.
committed = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results", "host-736b9365",
                         "2026-12-07_training-memory-claims", "train_claims.json.gz")
with gzip.open(committed, "rt") as f:
    old = json.load(f)
settings = old["context"]["layerbench_settings"]
with tempfile.TemporaryDirectory() as tmp:
    suite = os.path.join(tmp, "suite.txt")
    lines = set()
    for b in old["benchmarks"]:
        words = [w for w in b["lb_problem"].split() if not w.startswith(("dt=", "relu=", "dir="))]
        lines.add(" ".join("mb=1" if w.startswith("mb=") else w for w in words))
    with open(suite, "w") as f:
        f.write("\n".join(sorted(lines)) + "\n")
    flags = {"batches": "--batch", "dtypes": "--dtype", "relus": "--relu", "dirs": "--dir", "threads": "--threads",
             "backends": "--backend"}
    again = listed("--suite", suite, *[x for key, flag in flags.items() for x in (flag, settings[key])])
    before = {b["lb_case"] for b in old["benchmarks"] if b["lb_dtype"] == "f32"}
    now = {name for name, reason in again.items() if "/f32/" in name and not reason}
    check(before and before == now, f"the committed sweep's f32 cases are named otherwise now: "
          f"{sorted(before - now)[:3]} were, {sorted(now - before)[:3]} are")

# Two networks that name different layers alike each keep theirs: mobilenet_v1's conv1 is
# "mobilenet_v1.conv1" beside alexnet's, not dropped as the same case; a layer both have
# alike, name and problem (their classifiers' softmax, "prob"), is one case.
both = listed("--network", "alexnet,mobilenet_v1", "--backend", "ref")
for layer in ("/conv1-mb1/", "/mobilenet_v1.conv1-mb1/"):
    check(any(layer in name for name in both), f"--network alexnet,mobilenet_v1 lists no {layer} case")
alexnet = listed("--network", "alexnet", "--backend", "ref")
mobilenet = listed("--network", "mobilenet_v1", "--backend", "ref")


def renamed(case):  # kernel/dtype/layer-mb1/... -> kernel/dtype/mobilenet_v1.layer-mb1/...
    parts = case.split("/")
    return "/".join(parts[:2] + ["mobilenet_v1." + parts[2]] + parts[3:])


shared = {c for c in alexnet if c in mobilenet and renamed(c) not in both}
check(any("/prob-mb1/" in c for c in shared), "the two classifiers' softmax is not one case")
check(len(both) == len(alexnet) + len(mobilenet) - len(shared),
      "--network alexnet,mobilenet_v1 lists fewer cases than the two networks alone")

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "smoke.json")
    sweep = ["--suite", "smoke", "--backend", "all", "--threads", "1,2", "--dtype", "f32,bf16,i8"]
    expected = listed(*sweep)
    check(len(expected) > 0, "the smoke sweep lists no cases")
    started = time.monotonic()
    sweep_run = run("run", *sweep, *QUICK, "--out", out)
    elapsed = time.monotonic() - started

    results = load(out)
    if KEEP:
        shutil.copyfile(out, KEEP)
        print(f"the smoke sweep's results: {KEEP} (scripts/report {KEEP})")
    ctx = results["context"]
    for key in ("layerbench_cpu_model", "layerbench_cpu_isa", "layerbench_git_commit", "layerbench_compiler",
                "layerbench_peak_f32_fma_threads1"):
        check(key in ctx, f"context lacks {key}")
    # Where the time went, by phase: every phase there, none negative, "other" the rest of
    # a total that the process's own run time (measured here, around it) bounds.
    phases = json.loads(ctx.get("layerbench_phases", "{}"))
    names = ("peaks", "warm-up", "set-up", "verification", "timed loops", "probes", "writing", "other", "total")
    check(set(phases) == set(names), f"layerbench_phases: {sorted(phases)}")
    if set(phases) == set(names):
        walls = {k: phases[k]["wall_s"] for k in names}
        check(all(v >= -0.01 for v in walls.values()) and walls["timed loops"] > 0, f"phases: {walls}")
        check(math.isclose(sum(walls[k] for k in names[:-1]), walls["total"], rel_tol=1e-6, abs_tol=1e-3),
              f"the phases do not add up to the total: {walls}")
        check(walls["total"] <= elapsed, f"phases total {walls['total']:.2f} s, the process ran {elapsed:.2f} s")
        check(all(phases[k]["sys_s"] >= -0.01 and phases[k]["user_s"] >= -0.01 for k in names), f"phases: {phases}")
    check("time by phase: " in sweep_run.stdout, "the summary has no 'time by phase:' line")
    # The CPU's signature, as /proc/cpuinfo gives it (the model name alone does not tell
    # apart the AMD hosts a VM runs on), and in the machine's identity.
    fields = {}
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                break
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    if "cpu family" in fields and "model" in fields:
        want = (f"{fields.get('vendor_id', 'cpu')} family {fields['cpu family']} model {fields['model']}"
                + (f" stepping {fields['stepping']}" if "stepping" in fields else ""))
        check(ctx.get("layerbench_cpu_signature") == want,
              f"layerbench_cpu_signature {ctx.get('layerbench_cpu_signature')!r}, /proc/cpuinfo says {want!r}")
    # Every run names the libraries it measured, whatever cases it ran.
    built = run("list").stdout.splitlines()[0].split(":")[1].split()
    for backend, key in (("onednn", "layerbench_onednn_version"), ("onednn", "layerbench_onednn_isa"),
                         ("eigen", "layerbench_eigen_version")):
        if backend in built:
            check(ctx.get(key, "").strip() != "", f"context lacks {key}")
    # A run that holds GPU kernels names the GPU it met ("none (why)" here without one), the
    # driver, and the CUDA, cuBLAS and cuDNN versions, measured or not.
    if "cublas" in built:
        for key in ("layerbench_gpu_model", "layerbench_gpu_driver", "layerbench_cuda_version",
                    "layerbench_cublas_version", "layerbench_cudnn_version", "layerbench_gpu_timing"):
            check(ctx.get(key, "").strip() != "", f"context lacks {key} in a run with GPU kernels")
        check("libcublasLt" in ctx.get("layerbench_cublas_version", ""),
              f"layerbench_cublas_version names no library file: {ctx.get('layerbench_cublas_version')}")
    # What Google Benchmark's compare.py and github-action-benchmark read: "benchmarks" holds
    # measured cases only, each with a non-zero time, one name per case and its aggregates.
    check(ctx.get("layerbench_format_version") == "2", "context lacks layerbench_format_version 2")
    measured = results["benchmarks"]
    check(all(not r.get("error_occurred") and r["real_time"] > 0 for r in measured),
          "an entry in benchmarks is not a measured time")
    names = {}
    for r in measured:
        names.setdefault(r["run_name"], set()).add(r["lb_case"])
    check(all(len(cases) == 1 for cases in names.values()), "two cases under one name in benchmarks")
    for name in names:
        aggregates = {r.get("aggregate_name") for r in measured if r["run_name"] == name and r["run_type"] == "aggregate"}
        check({"mean", "median", "stddev"} <= aggregates, f"{name}: aggregates missing from benchmarks: {aggregates}")
    check(all(r["status"] == r["lb_status"] and r["reason"] for r in results.get("layerbench_not_measured", [])),
          "a not-measured entry without its status and reason")
    runs = runs_of(results)
    seen = {r["lb_case"] for r in runs}
    check(seen == set(expected), f"cases missing: {sorted(set(expected) - seen)[:5]}, unexpected: {sorted(seen - set(expected))[:5]}")
    for r in runs:
        name = r["lb_case"]
        if r.get("error_occurred"):
            check(r["lb_status"] == "unsupported" and expected.get(name),
                  f"{name}: error entry that is not a declared unsupported case: {r.get('error_message')}")
            continue
        check(r["lb_status"] in ("passed", "mistrusted"), f"{name}: status {r['lb_status']}")
        if r["run_type"] != "iteration":
            continue
        for key in ("lb_flop_per_s", "lb_cpu_util_avg", "lb_cpu_util_peak", "lb_host_peak_bytes", "lb_tensor_bytes",
                    "lb_pred_macs", "lb_pred_macs_on_input", "lb_pred_param_bytes", "lb_pred_act_bytes", "real_time",
                    "max_bytes_used"):
            check(key in r, f"{name}: no {key}")
        # FLOPs are 2 x the MACs on the input: a padded convolution's are fewer than its MACs.
        if all(key in r for key in ("lb_flop_per_s", "lb_pred_macs_on_input", "lb_pred_macs")) and r["real_time"] > 0:
            seconds = r["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[r["time_unit"]]
            check(math.isclose(r["lb_flop_per_s"] * seconds, 2 * r["lb_pred_macs_on_input"], rel_tol=1e-6),
                  f"{name}: lb_flop_per_s x time is not 2 x lb_pred_macs_on_input")
            padded = " ph=" in r.get("lb_problem", "") and " ph=0" not in r.get("lb_problem", "")
            check(r["lb_pred_macs_on_input"] < r["lb_pred_macs"] if padded
                  else r["lb_pred_macs_on_input"] == r["lb_pred_macs"],
                  f"{name}: MACs on the input {r['lb_pred_macs_on_input']:.0f} against {r['lb_pred_macs']:.0f}")
        for key, value in r.items():
            if key.startswith("lb_") and isinstance(value, (int, float)) and not isinstance(value, bool):
                check(math.isfinite(value) and value >= 0, f"{name}: {key} = {value}")
        if r["threads"] == 1 and "threads:1" in name and r["real_time"] > 0:
            # A pool has no products (its FLOP/s read 0); every case has activation bytes.
            check(r["lb_pred_macs"] > 0 or r.get("lb_op") in ("pool2d", "add", "softmax"), f"{name}: no MACs")
            check(r.get("lb_pred_act_bytes", 0) > 0, f"{name}: no activation bytes")
    # The settings line, the context line, then one line per run as the cases finished.
    with open(out + "l") as f:
        lines = [json.loads(l) for l in f]
    check(len(lines) == len(runs) + 2 and "layerbench_settings" in lines[0] and "context" in lines[1],
          f"jsonl has {len(lines)} lines for {len(runs)} runs")

    # CPU utilisation of single-threaded cases reads as one busy core — on cases with
    # 20 ms of timed work or more (a few ms are at the mercy of one descheduling; the
    # truth test checks utilisation on a substantial case).
    for r in runs:
        if r.get("run_type") == "iteration" and not r.get("error_occurred") and r["lb_case"].endswith("threads:1") \
                and r["real_time"] * r["iterations"] > 20000:  # us
            check(80 <= r["lb_cpu_util_avg"] <= 120, f"{r['lb_case']}: cpu_util {r['lb_cpu_util_avg']:.0f}")

    # --resume finds everything done and keeps it.
    p = run("run", *sweep, *QUICK, "--out", out, "--resume")
    check(f"{len(set(expected))} cases already" in p.stderr and "0 to run" in p.stderr, f"resume said: {p.stderr[:300]}")
    check({r["lb_case"] for r in runs_of(load(out))} == set(expected), "resume lost cases")

    # Shards split the cases disjointly and merge back into one file.
    small = ["--problem", "dense mb=2 ic=8 oc=4", "--backend", "all", "--dtype", "f32,bf16", "--relu", "all"]
    whole = listed(*small)
    parts = [listed(*small, "--shard", f"{i}/3") for i in range(3)]
    check(sorted(n for p in parts for n in p) == sorted(whole), "shards do not partition the cases")
    shard_files = []
    for i in range(3):
        f = os.path.join(tmp, f"shard{i}.json")
        run("run", *small, *QUICK, "--shard", f"{i}/3", "--out", f)
        shard_files.append(f)
    merged = os.path.join(tmp, "merged.json")
    run("merge", merged, shard_files[0], shard_files[1], shard_files[2] + "l")
    check({r["lb_case"] for r in runs_of(load(merged))} == set(whole), "merge lost cases")

    # A case that cannot fit is an error entry with the numbers, and the sweep goes on.
    suite = os.path.join(tmp, "oom.txt")
    with open(suite, "w") as f:
        f.write("dense mb=4194304 ic=4096 oc=4096 name=huge\ndense mb=2 ic=8 oc=4 name=small\n")
    oom = os.path.join(tmp, "oom.json")
    run("run", "--suite", suite, "--backend", "ref", *QUICK, "--out", oom)
    by_case = {r["lb_case"]: r for r in runs_of(load(oom))}
    huge = by_case.get("dense.ref.naive/f32/huge-mb4194304/threads:1", {})
    check(huge.get("error_occurred") and huge.get("error_message", "").startswith("out of memory: needs ")
          and "GiB available" in huge.get("error_message", ""), f"huge case: {huge.get('error_message')}")
    check(by_case.get("dense.ref.naive/f32/small-mb2/threads:1", {}).get("lb_status") == "passed",
          "the sweep did not go on after the out-of-memory case")

    # SIGINT mid-sweep: finished cases are on disk in valid JSON, the process says where
    # and exits non-zero, and --resume runs exactly the rest.
    slow = ["--suite", "smoke", "--backend", "ref", "--benchmark_min_time=0.05", "--benchmark_repetitions=2"]
    todo = set(listed(*slow))
    stopped = os.path.join(tmp, "stopped.json")
    proc = subprocess.Popen([LB, "run", *slow, "--out", stopped], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        time.sleep(0.05)
        if os.path.exists(stopped + "l") and sum(1 for _ in open(stopped + "l")) > 8:
            break
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    check(proc.returncode == 128 + signal.SIGINT, f"SIGINT: exit {proc.returncode}")
    check("interrupted by" in stderr and stopped in stderr and "--resume" in stderr, f"SIGINT said: {stderr[-300:]}")
    done = {r["lb_case"] for r in runs_of(load(stopped))}
    with open(stopped + "l") as f:
        logged = {json.loads(l).get("lb_case") for l in f} - {None}
    check(0 < len(done) < len(todo) and done == logged, f"after SIGINT: {len(done)} in json, {len(logged)} logged")
    check(all(not r.get("error_occurred") for r in runs_of(load(stopped))), "an interrupted case was recorded")
    p = run("run", *slow, "--out", stopped, "--resume")
    check(f"{len(done)} cases already" in p.stderr, f"resume after SIGINT said: {p.stderr[:200]}")
    check({r["lb_case"] for r in runs_of(load(stopped))} == todo, "resume after SIGINT did not finish the sweep")

    # Adaptive repetitions (no --benchmark_repetitions): a case repeats until the mean's
    # relative standard error is at most --rse or its time cap is reached, and says which;
    # only the repetitions that did work are written, and the aggregates are theirs.
    adaptive = os.path.join(tmp, "adaptive.json")
    said = run("run", "--problem", "dense mb=16 ic=256 oc=256", "--backend", "ref", "--benchmark_min_time=0.01",
               "--rse", "2", "--repetitions", "3,8", "--case-time", "0.5", "--out", adaptive).stdout
    written = runs_of(load(adaptive))
    reps = [r for r in written if r["run_type"] == "iteration"]
    aggregates = {r["aggregate_name"]: r for r in written if r["run_type"] == "aggregate"}
    times = [r["real_time"] for r in reps]
    check(3 <= len(reps) <= 8 and all(r["repetitions"] == len(reps) for r in reps), f"{len(reps)} repetitions kept")
    if len(times) >= 2:
        mean, sd = sum(times) / len(times), statistics.stdev(times)
        check(math.isclose(aggregates["mean"]["real_time"], mean, rel_tol=1e-9), "mean is not the kept repetitions'")
        check(math.isclose(aggregates["stddev"]["real_time"], sd, rel_tol=1e-9), "stddev is not the kept repetitions'")
        rse = 100 * sd / mean / math.sqrt(len(times))
        check(all(math.isclose(r["lb_rse_pct"], rse, rel_tol=1e-6) for r in reps), f"lb_rse_pct is not {rse:.3f}")
        stop = reps[0].get("lb_stop")
        check(stop == "rse" and rse <= 2 or stop == "cap" and (len(reps) == 8 or rse > 2),
              f"stopped for {stop!r} at {len(reps)} repetitions, rse {rse:.2f} %")
        # The progress line gives the median repetition: its time and its own GFLOP/s (not
        # the last repetition's); the table at the end the same time.
        median = sorted(times)[len(times) // 2]
        flops = reps[0]["lb_flop_per_s"] * reps[0]["real_time"] * 1e-6
        line = next((l for l in said.splitlines() if l.startswith("[1/1] ")), "")
        fields = line.split()
        shown = (float(fields[2]), float(fields[4])) if len(fields) > 4 else (0, 0)
        check(abs(shown[0] - median) <= 0.051 and abs(shown[1] - flops / median / 1e3) <= 0.051 + 0.002 * shown[1],
              f"the progress line {line!r} is not the median repetition's {median:.1f} us, "
              f"{flops / median / 1e3:.1f} GFLOP/s")
        check(any(l.startswith("mb16ic256oc256") and f" {median:.1f} us" in l for l in said.splitlines()),
              f"the table does not give the median {median:.1f} us:\n{said[-600:]}")

    # One repetition (--repetitions 1,N) is the call Google Benchmark reports, which lasted
    # --benchmark_min_time, never one of its shorter calls that probe for the iteration
    # count (that left the reported call idle: 10^9 iterations at a picosecond each).
    for most in (1, 3):
        one = os.path.join(tmp, f"one{most}.json")
        run("run", "--problem", "dense mb=16 ic=256 oc=256", "--backend", "ref", "--benchmark_min_time=0.01",
            "--repetitions", f"1,{most}", "--case-time", "0.01", "--out", one)
        reps = [r for r in runs_of(load(one)) if r["run_type"] == "iteration"]
        check(1 <= len(reps) <= most and all(r["iterations"] * r["real_time"] >= 0.01e6 for r in reps)
              and all(0.2 < r["real_time"] / statistics.mean(times or [1]) < 5 for r in reps),
              f"--repetitions 1,{most}: {[(r['iterations'], r['real_time']) for r in reps]} against "
              f"the adaptive run's {statistics.mean(times or [0]):.3g} us")

    # --benchmark_enable_random_interleaving: every case's repetitions shuffled among the
    # others' (cases finish in another order than listed), each case set up again when its
    # turn comes and verified once; the adaptive stop and the aggregates work as above.
    shuffled = os.path.join(tmp, "shuffled.json")
    mixed = ["--suite", "smoke", "--backend", "ref,cpu", "--threads", "1"]
    order = [n for n, reason in listed(*mixed).items() if not reason]
    said = run("run", *mixed, "--benchmark_min_time=0.002", "--rse", "2", "--repetitions", "3,6", "--case-time",
               "0.2", "--benchmark_enable_random_interleaving=true", "--out", shuffled).stdout
    # The cases finish together near the end: no ETA extrapolated from the first of them.
    lines = [l for l in said.splitlines() if l.startswith("[")]
    check(lines and not any("ETA" in l for l in lines) and "no ETA" in said,
          f"a shuffled run's progress lines: {lines[:2]}")
    # Each line's time and GFLOP/s are its case's median repetition's own (the upper middle
    # one): the last repetition's GFLOP/s beside the median time differs by the noise.
    reps_of = {}
    for r in load(shuffled)["benchmarks"]:
        if r["run_type"] == "iteration":
            reps_of.setdefault(r["lb_case"], []).append(r)
    compared = 0
    for l in lines:
        fields = l.split()
        if len(fields) < 6 or fields[5] != "GFLOP/s" or fields[1] not in reps_of:
            continue
        rs = sorted(reps_of[fields[1]], key=lambda r: r["real_time"])
        mid = rs[len(rs) // 2]
        compared += 1
        check(abs(float(fields[2]) - mid["real_time"]) <= 0.051
              and abs(float(fields[4]) - mid["lb_flop_per_s"] / 1e9) <= 0.051,
              f"{l!r}: the median repetition ran {mid['real_time']:.2f} us, "
              f"{mid['lb_flop_per_s'] / 1e9:.2f} GFLOP/s")
    check(compared >= 12, f"{compared} progress lines compared with their median repetition")
    doc = load(shuffled)
    check("shuffled among every case's" in doc["context"].get("layerbench_repetitions", "")
          and doc["context"].get("layerbench_repetitions_shuffled") == "true",
          f"layerbench_repetitions: {doc['context'].get('layerbench_repetitions')}")
    check(load(out)["context"].get("layerbench_repetitions_shuffled") == "false",
          "a back-to-back run's context does not say layerbench_repetitions_shuffled false")
    by_case = {}
    for r in doc["benchmarks"]:
        by_case.setdefault(r["lb_case"], []).append(r)
    check(sorted(by_case) == sorted(order), f"shuffled run measured {len(by_case)} of {len(order)} cases")
    for name, rows in by_case.items():
        reps = [r for r in rows if r["run_type"] == "iteration"]
        mean = [r for r in rows if r.get("aggregate_name") == "mean"]
        check(3 <= len(reps) <= 6 and all(r["repetitions"] == len(reps) and r["lb_status"] == "passed" for r in reps)
              and mean and math.isclose(mean[0]["real_time"], statistics.mean(r["real_time"] for r in reps),
                                        rel_tol=1e-9), f"{name}: shuffled repetitions {[r['real_time'] for r in reps]}")
    with open(shuffled + "l") as f:
        finished = [json.loads(l).get("lb_case") for l in f][2:]
    finished = [n for n in dict.fromkeys(finished) if n in by_case]
    # 12 or more cases in the listed order by chance: less than one in 400 million.
    check(len(order) >= 12 and finished != order, f"{len(order)} cases finished in the listed order")

    # Cold caches cost set-up (copies of the inputs), never time per run: a cold sweep
    # takes at most three times the hot one (the same cases, measured back to back).
    seconds = {}
    for cache in ("hot", "cold"):
        start = time.time()
        run("run", "--suite", "smoke", "--backend", "all", *QUICK, "--cache", cache,
            "--out", os.path.join(tmp, f"{cache}.json"))
        seconds[cache] = time.time() - start
    check(seconds["cold"] <= 3 * seconds["hot"], f"cold sweep {seconds['cold']:.1f} s, hot {seconds['hot']:.1f} s")

    # Bad input: one line, exit 2.
    for args, text in ((["--suite", "nope"], "unknown suite 'nope'"), (["--backend", "tpu"], "unknown backend 'tpu'"),
                       (["--dtype", "f33"], "dtype 'f33'"), (["--shard", "3/2"], "--shard 3/2")):
        p = run("run", *args, expect=2)
        check(text in p.stderr and p.stderr.count("\n") == 1 and p.stdout == "", f"{args}: {p.stderr!r}")

for f in failures:
    print("FAIL:", f)
print(f"bench: {0 if failures else 1} passed, {1 if failures else 0} failed")
sys.exit(1 if failures else 0)
