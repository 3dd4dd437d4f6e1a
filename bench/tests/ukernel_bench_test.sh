#!/usr/bin/env bash
# lb_ukernel_bench end to end: every micro-kernel this CPU runs, and AMX's on emulated
# tiles (--emulated), passes its one-call check against the double product and is timed
# (FLOP/s and s_per_call > 0); a path the CPU lacks is skipped with its reason, never timed;
# no case of a real engine at 150 % of its peak or more (a FLOP count off by 2× would be);
# an unknown flag is refused; --slice times each other kind of K slice, and refuses an unknown
# one. One line per broken assertion.
# usage: bench/tests/ukernel_bench_test.sh LB_UKERNEL_BENCH
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin" --emulated --benchmark_min_time=0.01 --benchmark_format=json >"$tmp/out.json" 2>"$tmp/err"
rc=$?
errors=0
[ $rc = 0 ] || { echo "ukernel_bench_test: FAILED: exit $rc: $(tail -n 3 "$tmp/err")"; errors=1; }
python3 - "$tmp/out.json" <<'PY' || errors=1
import json, sys

doc = json.load(open(sys.argv[1]))
bad = []

for b in doc["benchmarks"]:
    name, path = b["name"], b["name"].split("/")[0]
    if b.get("error_occurred"):
        why = b.get("error_message", "")
        if "wrong tile" in why or path.startswith("amx_emulated") or path.startswith("avx512_f32") and "AVX-512" not in why:
            bad.append(f"{name}: {why}")
        continue
    if not (b.get("FLOP/s", 0) > 0 and b.get("s_per_call", 0) > 0):
        bad.append(f"{name}: no FLOP/s or s_per_call")
    if not path.startswith("amx_emulated") and b.get("pct_peak", 0) >= 150:
        bad.append(f"{name}: {b['pct_peak']:.0f} % of its engine's peak")
# Every path, each mode and depth: 5 depths x 2 modes, x 2 prefetch distances on AMX.
want = {"avx512_f32": 10, "avx512_bf16": 10, "avx512_int8": 10, "amx_bf16": 20, "amx_int8": 20,
        "amx_emulated_bf16": 20, "amx_emulated_int8": 20}
for path, n in want.items():
    got = sum(b["name"].split("/")[0] == path for b in doc["benchmarks"])
    if got != n:
        bad.append(f"{path}: {got} cases, expected {n}")
timed = [b for b in doc["benchmarks"] if b["name"].startswith("amx_emulated") and not b.get("error_occurred")]
if len(timed) != 40:
    bad.append(f"{len(timed)} emulated AMX cases checked and timed, expected 40")
for line in bad:
    print("ukernel_bench_test: FAILED:", line)
sys.exit(1 if bad else 0)
PY
"$bin" --no-such-flag >"$tmp/refused" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "no-such-flag" "$tmp/refused" || {
  echo "ukernel_bench_test: FAILED: an unknown flag: exit $rc ($(head -c 200 "$tmp/refused"))"
  errors=1
}
# Every kind of K slice checks and times the emulated tiles (the epilogue's deferral to the
# next call, or to the release, included); an unknown kind is refused.
for slice in first middle only; do
  "$bin" --emulated --slice=$slice --benchmark_filter='amx_emulated_.*/l2/kc_bytes:256' \
    --benchmark_min_time=0.01 --benchmark_format=json >"$tmp/$slice.json" 2>"$tmp/err"
  n=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(b["name"].endswith("/slice:"+sys.argv[2]) and not b.get("error_occurred") and b["FLOP/s"] > 0 for b in d["benchmarks"]))' "$tmp/$slice.json" $slice 2>&1)
  [ "$n" = 4 ] || { echo "ukernel_bench_test: FAILED: --slice=$slice: $n of 4 cases checked and timed"; errors=1; }
done
"$bin" --slice=sideways >"$tmp/refused" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "expected --slice=first, middle, last or only" "$tmp/refused" || {
  echo "ukernel_bench_test: FAILED: --slice=sideways: exit $rc ($(head -c 200 "$tmp/refused"))"
  errors=1
}
[ $errors = 0 ] && echo "ukernel_bench_test: passed"
exit $errors
