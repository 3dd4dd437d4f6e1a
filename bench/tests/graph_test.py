#!/usr/bin/env python3
"""ctest: whole networks through the CLI (`check --graph`, `run --graph`) and scripts/graphs.

A small network of this test's own (a branch, a sum, a concat, pools, a dense layer and a
softmax), given by path:
- `check --graph` passes on every CPU backend built (the others say why not), at batch 2;
- `run --graph --batch auto --memory-limit` doubles the batch from 1 and stops where the next
  would need more than the limit, saying so; every batch is verified and measured;
- the measured host peak holds what the run says it holds: at least its arena and
  parameters (the tensors are resident, not merely reserved) and at most those plus the
  kernels' declared copies and workspaces, within 10 % + 8 MB, on our cpu backend (else
  oneDNN's or Eigen's; the reference computes in double beside its outputs, undeclared);
- the arena grows by liveness's per-sample bytes, and scripts/graphs fits that slope.

usage: graph_test.py path/to/layerbench path/to/scripts/graphs
"""
import json
import os
import subprocess
import sys
import tempfile

LB, GRAPHS = sys.argv[1], sys.argv[2]
NETWORK = """input c=16 h=64 w=64
c1   conv2d oc=16 kh=3 kw=3 ph=1
bn1  batchnorm
r1   relu
a    conv2d oc=16 kh=1 kw=1
ar   relu6
b    conv2d in=r1 oc=16 kh=3 kw=3 ph=1
sum  add in=ar,b
cat  concat in=sum,r1
p    maxpool k=2
g    global_avgpool
f    flatten
fc   dense oc=10
prob softmax
"""


def run(*args, expect=0):
    p = subprocess.run([LB, *args], capture_output=True, text=True)
    if p.returncode != expect:
        sys.exit(f"FAIL: layerbench {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p.stdout


with tempfile.TemporaryDirectory() as tmp:
    net = os.path.join(tmp, "branchy.txt")
    with open(net, "w") as f:
        f.write(NETWORK)
    out = run("check", "--graph", net, "--batch", "2")
    statuses = [line.split()[0] for line in out.splitlines() if line.startswith(("passed", "failed", "unsupported"))]
    assert "failed" not in statuses, out
    assert statuses.count("passed") >= 1, out
    for line in out.splitlines():
        if line.startswith("unsupported"):
            print("  " + line)

    results = os.path.join(tmp, "runs.json")
    limit_gib = 0.1  # about 107 MB: the arena is 1 MB per sample, so a handful of doublings
    listing = run("list")
    backend = next((b for b in ("cpu", "onednn", "eigen") if f".{b}." in listing), None)
    if backend is None:
        print("SKIPPED: no CPU backend but the reference is built")
        sys.exit(77)
    out = run("run", "--graph", net, "--backend", backend, "--batch", "auto", "--memory-limit", str(limit_gib),
              "--min-time", "0.01", "--out", results)
    print(out)
    with open(results) as f:
        runs = json.load(f)["runs"]
    batches = [r["batch"] for r in runs]
    assert batches == [2 ** i for i in range(len(batches))] and len(batches) >= 3, batches
    assert all(r["status"] == "passed" for r in runs), runs
    stop = runs[-1].get("auto_stop", "")
    assert "GiB available" in stop, stop
    for r in runs:
        held = r["arena_bytes"] + r["parameter_bytes"]
        peak = r["host_peak_bytes"]
        assert peak >= 0.95 * held - 1e6, (r["batch"], peak, held)
        own = r["scratch_bytes"] + r["temporary_bytes"]
        assert peak <= 1.1 * (held + own) + 8e6, (r["batch"], peak, held, own)
        assert abs(r["arena_bytes"] - r["liveness_activations"]) <= 64 * 16, r  # rounding of each buffer to 64 bytes
    per_sample = (runs[-1]["liveness_activations"] - runs[0]["liveness_activations"]) / (batches[-1] - 1)

    p = subprocess.run([sys.executable, GRAPHS, results], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    fit_rows = [line for line in p.stdout.splitlines() if line.startswith(f"| {net} |") and f"| {backend} |" in line]
    fit_line = fit_rows[-1].split("|")  # the fit table comes after the per-batch rows
    liveness_slope_mb = float(fit_line[9])
    assert abs(liveness_slope_mb - per_sample / 1e6) <= 0.05 + 0.01 * per_sample / 1e6, (fit_line, per_sample)
    measured_slope_mb = float(fit_line[7])
    assert 0.8 * per_sample / 1e6 <= measured_slope_mb <= 1.25 * per_sample / 1e6 + 0.5, (fit_line, per_sample)
    print(f"graphs: liveness {per_sample / 1e6:.2f} MB per sample, measured {measured_slope_mb:.2f}")
print("PASS")
