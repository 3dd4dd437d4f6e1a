#!/usr/bin/env bash
# scripts/cpu-targets.sh end to end on a tiny suite (a line of each op and precision): exit
# 0, a low-precision run (on an AMX host one per blocking, then AVX-512) and an f32 run,
# each with its ratios in ratios.csv and its results JSON in runs.tar.gz, four files in
# OUTDIR; the recheck (every case taken as a loss with --recheck-below 100): its shuffled
# runs' ratios and the table of first-run and rechecked ratios; and the refusals: a bad AMX
# blocking, a bad --recheck and an OUTDIR in use, exit 2 before any run.
# One line per broken assertion.
# usage: scripts/tests/cpu_targets_test.sh BUILD_DIR
set -uo pipefail
build=$(cd "${1:?usage: cpu_targets_test.sh BUILD_DIR}" && pwd) || exit 2
repo=$(cd "$(dirname "$0")/../.." && pwd)
lb=$build/bench/layerbench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/suite.txt" <<'SUITE'
# one line of each op and precision the script splits
dense mb=32 ic=64 oc=48 dt=f32 name=fc
dense mb=32 ic=64 oc=48 dt=bf16 name=fc
dense mb=32 ic=64 oc=48 dt=i8 name=fc
conv2d mb=1 ic=8 ih=10 iw=10 oc=8 kh=3 kw=3 ph=1 g=8 name=dw
lstm mb=4 t=3 ic=16 hc=16 dt=bf16 name=lstm
SUITE

errors=0
bad() {
  echo "cpu_targets_test: FAILED: $*"
  errors=$((errors + 1))
}

# One thread: the runs, files and ratios are the same on more, at twice the time.
"$repo/scripts/cpu-targets.sh" "$tmp/out" --suite "$tmp/suite.txt" --layerbench "$lb" --quick --threads 1 \
  --blockings "kc_bytes=64,mc=32" --recheck 2 --recheck-below 100 >"$tmp/stdout" 2>&1
rc=$?
[ $rc = 0 ] || bad "exit status $rc, expected 0: $(tail -n 3 "$tmp/stdout")"
files=$(ls "$tmp/out" | tr '\n' ' ')
[ "$files" = "cpu-targets.log host.txt ratios.csv runs.tar.gz " ] || bad "OUTDIR holds '$files'"
if LB_CPU_ISA=amx "$lb" list >/dev/null 2>&1; then
  lowp_runs="lowp-amx-default lowp-amx-kc_bytes-64_mc-32 lowp-avx512"
else
  lowp_runs="lowp"
fi
mkdir -p "$tmp/runs" && tar -xzf "$tmp/out/runs.tar.gz" -C "$tmp/runs" || bad "runs.tar.gz does not unpack"
for run in $lowp_runs f32; do
  grep -q "^\[cpu-targets [0-9]*s\] $run: done$" "$tmp/out/cpu-targets.log" || bad "no '$run: done' in the log"
  [ "$(grep -c "^$run," "$tmp/out/ratios.csv")" -ge 2 ] || bad "ratios.csv has under 2 rows of $run"
  python3 -c 'import gzip, json, sys; d = json.load(gzip.open(sys.argv[1])); assert d["benchmarks"]' \
    "$tmp/runs/$run.json.gz" 2>/dev/null || bad "$run.json.gz is missing from runs.tar.gz or has no cases"
done
# Each precision went to its own runs: the f32 run has no bf16 case, the low-precision no f32.
grep -q '^f32,.*dt=bf16' "$tmp/out/ratios.csv" && bad "a bf16 case in the f32 run"
grep -q '^lowp[^,]*,.*,f32,' "$tmp/out/ratios.csv" && bad "an f32 case in a low-precision run"
head -n 1 "$tmp/out/ratios.csv" | grep -q '^run,problem,dtype,threads,kernel,' || bad "ratios.csv's header"
# The recheck: every problem of the f32 and the default low-precision run again, shuffled.
problems=$(grep -cvE '^[[:space:]]*(#|$)' "$tmp/suite.txt")
grep -q "recheck: $problems problems with a case below 100× oneDNN; 2 shuffled repetitions each" \
  "$tmp/out/cpu-targets.log" || bad "the recheck did not take all $problems problems"
[ "$(grep -c '^recheck,' "$tmp/out/ratios.csv")" -ge "$problems" ] || bad "ratios.csv has under $problems recheck rows"
[ -f "$tmp/runs/recheck-$problems.json.gz" ] || bad "recheck-$problems.json.gz is missing from runs.tar.gz"
python3 -c 'import gzip, json, sys; d = json.load(gzip.open(sys.argv[1]))
assert d["context"]["layerbench_repetitions_shuffled"] == "true"' "$tmp/runs/recheck-1.json.gz" 2>/dev/null ||
  bad "recheck-1's repetitions were not shuffled"
grep -qE '^\| dense mb=32 ic=64 oc=48 dt=f32 relu=none \| 1 \| dense\.cpu\.[a-z_]+ \| [0-9.]+× \| [0-9.]+× \|$' \
  "$tmp/out/cpu-targets.log" || bad "no first-run and rechecked ratio of the f32 dense case in the log"

# Refusals: a blocking layerbench rejects, an OUTDIR with files in it.
"$repo/scripts/cpu-targets.sh" "$tmp/out2" --suite "$tmp/suite.txt" --layerbench "$lb" --blockings "mc=33" \
  >"$tmp/refused" 2>&1
rc=$?
[ $rc = 2 ] || bad "a bad blocking: exit $rc, expected 2"
grep -q "cpu-targets: --blockings: LB_AMX_BLOCKING=mc=33: mc must be a multiple of 32" "$tmp/refused" ||
  bad "a bad blocking: no reason given ($(cat "$tmp/refused"))"
[ -z "$(ls -A "$tmp/out2" 2>/dev/null)" ] || bad "a bad blocking left files in OUTDIR"
"$repo/scripts/cpu-targets.sh" "$tmp/out2" --suite "$tmp/suite.txt" --layerbench "$lb" --recheck 2x >"$tmp/refused" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "cpu-targets: --recheck '2x': expected a whole number" "$tmp/refused" ||
  bad "a bad --recheck: exit $rc ($(cat "$tmp/refused"))"
"$repo/scripts/cpu-targets.sh" "$tmp/out" --suite "$tmp/suite.txt" --layerbench "$lb" >"$tmp/refused" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "is not empty" "$tmp/refused" || bad "an OUTDIR in use: exit $rc ($(cat "$tmp/refused"))"

[ $errors = 0 ] && echo "cpu_targets_test: passed" && exit 0
exit 1
