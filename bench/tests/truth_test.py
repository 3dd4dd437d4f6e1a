#!/usr/bin/env python3
"""ctest -L bench: the measurements tell the truth, on every optimised CPU backend built.

- host peak of dense f32, batch 256, 4096->4096 is within 10 % of our tensors' bytes
  plus what the kernel reports holding (scratchpad, reordered weights);
- relu=separate costs one more output buffer than relu=inplace (output size +-5 % + 0.5 MB);
- bf16 parameter bytes are half of f32's;
- no case is above 100 % of its compute peak or its memory level's bandwidth (int8
  convolutions too, every CPU convolution kernel built, opt-in ones included, int8 GEMMs,
  and a depthwise layer larger than the caches but not by much), the context has the bandwidth peaks, and a batch-1 layer is memory-bound, a
  batch-256 one compute-bound;
- CPU utilisation is what the scheduler accounted for the same timed loop (its run time,
  from /proc/self/task/*/schedstat), and the threads asked for one core each (run + time
  waiting for a CPU). The f32 and bf16 sweep runs beside a process that keeps one core
  busy, so a reading that only holds on an idle machine fails here; the int8 runs before it
  have the cores to themselves, as the peaks had (a neighbour slowed oneDNN's int8 GEMM on
  one thread of the Zen 5 VM by 14 %, enough to hide a probe that under-measured by 13 %).
Exit 77 (ctest: skipped) when no optimised CPU backend is built.

usage: truth_test.py path/to/layerbench
"""
import json
import os
import subprocess
import sys
import tempfile

LB = sys.argv[1]
listing = subprocess.run([LB, "list"], capture_output=True, text=True, check=True).stdout
backends = listing.splitlines()[0].split(":")[1].split()
# Opt-in kernels (the steps of a progression, `list` marks them) are left out, as a default
# sweep leaves them out: the naive step alone would take minutes here.
kernels = [line.split()[0] for line in listing.splitlines()
           if line.startswith("dense.") and " cpu " in line and ".ref." not in line and "[opt-in]" not in line]
# Every optimised CPU convolution, opt-in variants included (oneDNN on its blocked layouts
# read 110 % of an int8 peak that its probe under-measured), for the int8 ceiling.
conv_kernels = [line.split()[0] for line in listing.splitlines()
                if line.startswith("conv2d.") and " cpu " in line and ".ref." not in line]
threads = [1, 2] if os.cpu_count() >= 2 else [1]
if not kernels:
    print("SKIPPED: no optimised CPU dense kernel built (backends: %s)" % " ".join(backends))
    sys.exit(77)

failures = []
with tempfile.TemporaryDirectory() as tmp:
    def extra_run(what, problem, kernel_ids, dtype):
        """One run of one problem (relu=none, one repetition): its iteration entries."""
        path = os.path.join(tmp, what.replace(" ", "_") + ".json")
        q = subprocess.run([LB, "run", "--problem", problem, "--kernel", ",".join(kernel_ids), "--dtype", dtype,
                            "--relu", "none", "--threads", ",".join(map(str, threads)), "--out", path,
                            "--benchmark_min_time=0.3", "--benchmark_repetitions=1"],
                           capture_output=True, text=True)
        print(q.stdout[-1500:], q.stderr[-1000:])
        if q.returncode != 0:
            failures.append(f"layerbench run ({what}) exited {q.returncode}")
        with open(path) as f:
            return [r for r in json.load(f)["benchmarks"] if r.get("run_type") == "iteration"]

    # First, on a quiet machine (the peaks are measured here when not cached, as the cases
    # are): an int8 convolution (ResNet's 3x3, 64 channels, 56x56: compute-bound), held to
    # the int8 peak of the host's fastest int8 engine, and an int8 GEMM (oneDNN's read 110 %
    # of an AVX-512 VNNI probe that copied its accumulators twice a step, on one thread of
    # the Zen 5 VM with the other core idle; with a neighbour on it, 14 % slower, it hid that).
    int8_runs = extra_run("int8 convolution", "conv2d mb=1 ic=64 ih=56 iw=56 oc=64 kh=3 kw=3 ph=1",
                          conv_kernels, "i8")
    int8_runs += extra_run("int8 GEMM", "dense mb=256 ic=4096 oc=4096", kernels, "i8")
    # A depthwise layer at batch 32 (MobileNet's dw2: 104 MB of minimum traffic, 3.1x the
    # Zen 5 VM's L3): beyond what the caches keep, part of it still hits (the blocked
    # depthwise kernel read 122 % of the DRAM peak there), so its ceiling is not DRAM's alone.
    beyond_runs = extra_run("beyond the caches", "conv2d mb=32 ic=32 ih=112 iw=112 oc=32 kh=3 kw=3 ph=1 g=32",
                            conv_kernels, "f32")

    # Then beside a neighbour that keeps one core busy (bounded: it stops by itself).
    busy = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 600: pass"])
    try:
        out = os.path.join(tmp, "truth.json")
        args = [LB, "run", "--problem", "dense mb=256 ic=4096 oc=4096", "--kernel", ",".join(kernels),
                "--dtype", "f32,bf16", "--relu", "separate,inplace", "--threads", ",".join(map(str, threads)),
                "--verify-macs", "50000000", "--out", out,
                "--benchmark_min_time=0.3", "--benchmark_repetitions=1"]
        p = subprocess.run(args, capture_output=True, text=True)
        print(p.stdout[-3000:], p.stderr[-2000:])
        if p.returncode != 0:
            failures.append(f"layerbench run exited {p.returncode}")
        with open(out) as f:
            doc = json.load(f)
        runs = [r for r in doc["benchmarks"] if r.get("run_type") == "iteration"]
        # A memory-bound layer beside it (batch 1: the 64 MB of weights are read once per
        # run, 0.5 FLOP per byte), for the bandwidth ceiling.
        small_runs = extra_run("batch 1", "dense mb=1 ic=4096 oc=4096", kernels, "f32")
    finally:
        busy.kill()
        busy.wait()

by = {}
for r in runs:
    if r.get("error_occurred"):
        if r["lb_status"] != "unsupported":
            failures.append(f"{r['lb_case']}: {r.get('error_message')}")
        continue
    kernel, dt, problem, t = r["lb_case"].split("/")
    by[(kernel, dt, "separate" if "separate" in problem else "inplace", int(t.split(":")[1]))] = r

output_bytes = {"f32": 256 * 4096 * 4, "bf16": 256 * 4096 * 2}
for (kernel, dt, relu, t), r in sorted(by.items()):
    held = r["lb_tensor_bytes"] + r["lb_scratch_bytes"]
    peak = r["lb_host_peak_bytes"]
    line = (f"{kernel} {dt} relu={relu} threads={t}: host peak {peak / 1e6:.1f} MB, tensors+scratch "
            f"{held / 1e6:.1f} MB, cpu {r['lb_cpu_util_avg']:.0f}% (scheduler: on a CPU "
            f"{r.get('lb_cpu_sched_run_pct', -1):.0f}%, waiting {r.get('lb_cpu_sched_wait_pct', -1):.0f}%)")
    print(line)
    if abs(peak - held) > 0.10 * held:
        failures.append(line + " (peak not within 10 %)")
    run, wait = r.get("lb_cpu_sched_run_pct", -1), r.get("lb_cpu_sched_wait_pct", -1)
    if run >= 0:
        # Two accountings of one interval: the process CPU clock and the scheduler's run time.
        if abs(r["lb_cpu_util_avg"] - run) > max(3.0, 0.03 * run):
            failures.append(line + f" (the scheduler accounted {run:.0f}% on a CPU)")
        # The threads asked for the cores they were given: one thread is runnable throughout
        # (on a CPU or waiting for one); of t threads, more than t - 1 are. (Pool threads that
        # sleep at a barrier while a descheduled peer finishes are neither, hence no more.)
        # Eigen's ThreadPoolDevice keeps t workers and runs one block of a small parallelFor on
        # the calling thread too (TensorDeviceThreadPool.h, "avoid a thread hop"), so t + 1 of
        # its threads can be runnable at once; on a contended machine each of them then waits
        # (CI saw 111 % on a CPU + 116 % waiting at t = 2).
        lo = 85 if t == 1 else 100 * (t - 1) + 15
        hi = 110 * (t + 1 if ".eigen." in kernel else t)
        if not lo <= run + wait <= hi:
            failures.append(line + f" (threads asked for {run + wait:.0f}%, expected {lo}-{hi})")
    elif not (90 * t <= r["lb_cpu_util_avg"] <= 110 * t):  # no schedstat: an idle machine is assumed
        failures.append(line + f" (cpu utilisation outside {90 * t}-{110 * t})")
    other = by.get((kernel, dt, "inplace", t))
    if relu == "separate" and other and dt == "f32":
        diff = r["lb_host_peak_bytes"] - other["lb_host_peak_bytes"]
        # +-5 % where the kernel reports all it holds (peak within 1 % of tensors + scratch),
        # +-10 % for a library that holds memory it does not report (Eigen's pool: ~4 MB);
        # plus 0.5 MB either way: RSS moves in pages and the process's own bookkeeping (thread
        # stacks, result records) adds 0.2-0.4 MB per case that does not cancel between two cases.
        accounted = abs(peak - held) <= 0.01 * held
        slack = (0.05 if accounted else 0.10) * output_bytes[dt] + 0.5e6
        if abs(diff - output_bytes[dt]) > slack:
            failures.append(f"{kernel} {dt} threads={t}: separate - inplace = {diff / 1e6:.2f} MB, "
                            f"expected one output, {output_bytes[dt] / 1e6:.2f} MB")
    f32 = by.get((kernel, "f32", relu, t))
    if dt == "bf16" and f32:
        ratio = r["lb_pred_param_bytes"] / f32["lb_pred_param_bytes"]
        if abs(ratio - 0.5) > 0.01:
            failures.append(f"{kernel}: bf16/f32 parameter bytes = {ratio:.3f}")

for r in int8_runs + beyond_runs:
    if r.get("error_occurred") and r.get("lb_status") != "unsupported":
        failures.append(f"{r['lb_case']}: {r.get('error_message')}")

# No case above 100 % of a ceiling: a measured peak is the most the machine does, so a case
# above it means the probe missed an engine or a memory level (checked against peaks
# measured with every core to itself; contended ones are lower than the machine's).
peaks = json.loads(doc["context"].get("layerbench_peaks", "[]"))
contended = {p["threads"] for p in peaks if "CONTENDED" in p["method"]}
for kind in ("bw_dram_read", "bw_dram_write", "bw_dram_triad", "bw_l2_read"):
    if not any(p["kind"] == kind for p in peaks):
        failures.append(f"the context has no {kind} peak")
for r in runs + small_runs + int8_runs + beyond_runs:
    if r.get("error_occurred"):
        continue
    name, t = r["lb_case"], int(r["lb_case"].rsplit(":", 1)[1])
    line = (f"{name}: {r.get('lb_pct_peak', -1):.0f}% of peak, {r.get('lb_pct_bw', -1):.0f}% of bandwidth, "
            f"{'memory' if r.get('lb_memory_bound') else 'compute'}-bound, {r.get('lb_pct_roof', -1):.0f}% of its ceiling")
    print(line)
    for key in ("lb_pct_peak", "lb_pct_bw", "lb_pct_roof", "lb_memory_bound"):
        if key not in r:
            failures.append(f"{name}: no {key}")
    if t in contended:
        continue
    # Allowances for a shared host: best-of-5 peaks still move a few % run to run, and a
    # neighbour VM's memory traffic moves bandwidth more; a missed engine or level (AMX
    # read against AVX-512: ~680 %) is far beyond either.
    if r.get("lb_pct_peak", 0) > 105 or r.get("lb_pct_bw", 0) > 110:
        failures.append(line + " (above a measured ceiling: over 105 % of peak or 110 % of bandwidth)")
for r in small_runs:
    if not r.get("error_occurred") and r.get("lb_memory_bound") != 1:
        failures.append(f"{r['lb_case']}: batch 1 at 0.5 FLOP/B is not memory-bound")
for r in runs:
    if not r.get("error_occurred") and r.get("lb_memory_bound") != 0:
        failures.append(f"{r['lb_case']}: batch 256 at 114 FLOP/B is not compute-bound")
if contended:
    print(f"note: peaks on {sorted(contended)} threads were measured contended; cases there are not held to them")

if not by:
    failures.append("no case ran")
for f in failures:
    print("FAIL:", f)
print(f"truth: {0 if failures else 1} passed, {1 if failures else 0} failed")
sys.exit(1 if failures else 0)
