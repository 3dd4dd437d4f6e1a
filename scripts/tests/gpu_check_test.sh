#!/usr/bin/env bash
# scripts/gpu-check.sh --dry-run end to end, on a machine without a GPU: a bundle of
# symlinks to BUILD_DIR's binaries, then the checks of what the run left: exit 0 (SKIPs
# are fine without a GPU), stages 1-6 in order (the confirming stage second), a stage cut by its time box whose
# finished cases are in the merged sweep.json.gz (valid JSON), at most 8 files in OUTDIR,
# the budget kept, no work files left behind. One line per broken assertion.
# usage: scripts/tests/gpu_check_test.sh BUILD_DIR     (exit 77: BUILD_DIR has no CUDA build)
set -uo pipefail
build=$(cd "${1:?usage: gpu_check_test.sh BUILD_DIR}" && pwd) || exit 2
repo=$(cd "$(dirname "$0")/../.." && pwd)
for bin in bench/layerbench cuda/lb_cuda_smoke cuda/lb_gpu_tests cuda/lb_gpu_own_tests; do
  if [ ! -x "$build/$bin" ]; then
    echo "SKIPPED: $build/$bin not built (the GPU check needs a CUDA build)"
    exit 77
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bundle/bin" "$tmp/bundle/lib" "$tmp/work"
ln -s "$build/bench/layerbench" "$build"/cuda/lb_* "$tmp/bundle/bin/"
out=$tmp/out
# 40 s, the peaks measured with short repetitions (they are this test's to measure: its own
# cache file): stage 1 took 11 of 60 s with the default repetitions, and the whole test 52 s
# of the test command beside other tests (2-core Zen 5 VM).
budget=40

t0=$(date +%s)
TMPDIR=$tmp/work LB_GPU_BUNDLE=$tmp/bundle LAYERBENCH_PEAK_SECONDS=0.02 "$repo/scripts/gpu-check.sh" "$out" --dry-run --budget $budget \
  >"$tmp/stdout" 2>&1
rc=$?
took=$(($(date +%s) - t0))

errors=0
bad() {
  echo "gpu_check_test: FAILED: $*"
  errors=$((errors + 1))
}
log=$out/gpu-check.log

[ $rc = 0 ] || bad "exit status $rc, expected 0 (no GPU here: SKIPs count as skipped)"
[ -s "$log" ] || bad "no gpu-check.log in OUTDIR"
# Stages 1-6 each began, in order, the confirming checks second.
order=$(sed -n 's/.*\] stage \([1-6]\) [a-z-]*: box .*/\1/p' "$log" | tr -d '\n')
[ "$order" = 123456 ] || bad "stages began in the order '$order', expected 123456"
grep -q '\] stage 2 confirm: box ' "$log" || bad "stage 2 is not the confirming checks"
# Its summary names every stage, and the merged CPU vs GPU table is in summary.txt.
grep -q '^## CPU vs GPU' "$out/summary.txt" || bad "summary.txt has no merged CPU vs GPU table"
for n in 1 2 3 4 5 6; do
  grep -q "^\[gpu-check [0-9]*s\]   stage $n [a-z-]*: \(ran\|cut\)" "$log" || bad "the summary has no line for stage $n"
done
# A stage was cut by its box, the dry run's last sweep (cpu_networks) among what it cut.
grep -q '^\[gpu-check [0-9]*s\]   stage [1-6] [a-z-]*: cut at [0-9]* s (' "$log" || bad "no stage was cut by its time box"
line=$(grep -m1 'cpu_networks: [0-9]* of [0-9]* cases' "$log")
finished=$(sed -n 's/.*cpu_networks: \([0-9]*\) of \([0-9]*\) cases.*/\1/p' <<<"$line")
total=$(sed -n 's/.*cpu_networks: \([0-9]*\) of \([0-9]*\) cases.*/\2/p' <<<"$line")
if [ -z "$finished" ]; then
  bad "no line for the cut sweep cpu_networks in gpu-check.log"
else
  if [ "$finished" -lt 1 ] || [ "$finished" -ge "$total" ]; then
    bad "cpu_networks finished $finished of $total cases: expected it cut after at least one"
  fi
  grep -q 'cpu_networks: .*\(cut by SIGINT\|cut at its box\|stopped it\)' <<<"$line" ||
    bad "cpu_networks' line does not say it was cut: $line"
fi
# The merged results: valid JSON with the cut sweep's finished cases (the network layers;
# every other run of the dry run is on problems named *_tiny).
if [ ! -s "$out/sweep.json.gz" ]; then
  bad "no sweep.json.gz in OUTDIR"
else
  python3 - "$out/sweep.json.gz" "${finished:-1}" <<'EOF' || bad "sweep.json.gz: see the line above"
import gzip, json, sys
try:
    d = json.load(gzip.open(sys.argv[1]))
except Exception as e:
    sys.exit(print(f"gpu_check_test: sweep.json.gz is not gzipped JSON: {e}"))
runs = d.get("benchmarks", []) + d.get("layerbench_not_measured", [])
if not d.get("benchmarks"):
    sys.exit(print("gpu_check_test: sweep.json.gz has no benchmarks"))
cut = {r["lb_case"] for r in runs if not r.get("lb_layer", "").endswith("_tiny")}
measured = {r["lb_case"] for r in d["benchmarks"] if not r.get("lb_layer", "").endswith("_tiny")}
want = max(1, int(sys.argv[2]) - 1)  # the case being written when the cut came may be either side
if len(cut) < want or not measured:
    sys.exit(print(f"gpu_check_test: sweep.json.gz holds {len(cut)} cases ({len(measured)} measured) of the "
                   f"cut sweep, expected at least {want}"))
EOF
fi
files=$(find "$out" -mindepth 1 | wc -l)
[ "$files" -le 8 ] || bad "$files entries in OUTDIR, at most 8 expected: $(find "$out" -mindepth 1 -printf '%f ')"
[ -z "$(find "$out" -mindepth 1 -type d)" ] || bad "OUTDIR holds folders"
[ "$took" -le $((budget + 10)) ] || bad "the dry run took $took s, its budget is $budget s (+10 s slack)"
left=$(find "$tmp/work" -mindepth 1 -maxdepth 1 -printf '%f ')
[ -z "$left" ] || bad "work files left in TMPDIR: $left"

if [ $errors -gt 0 ]; then
  echo "--- gpu-check.sh output (exit $rc, $took s):"
  cat "$tmp/stdout"
  exit 1
fi
echo "gpu_check_test: passed: dry run $took s of its $budget s budget, cpu_networks cut after $finished of $total cases, $files files"
