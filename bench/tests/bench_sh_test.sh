#!/usr/bin/env bash
# scripts/bench.sh's extra arguments replace the defaults they name: a user who narrows
# the main job gets only what was asked for, and never "--network given twice".
#   bench_sh_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
cd "$(dirname "$0")/../.."
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
list() { LB_BUILD_DIR=$build scripts/bench.sh "$@" --list 2>&1; }

# Narrowed to one network and batch: every case is one of mobilenet_v1's layers at mb=1.
out=$(list --network mobilenet_v1 --batch 1) || fail "bench.sh --network mobilenet_v1 --batch 1: $out"
cases=$(grep -c '/threads:' <<<"$out" || true)
[ "$cases" -gt 0 ] || fail "no cases listed: $out"
others=$(grep '/threads:' <<<"$out" | grep -v -- '-mb1[-/]' || true)
[ -z "$others" ] || fail "cases outside batch 1: $(head -3 <<<"$others")"
grep -q '/fc[678]-\|/proj-\|/lstm' <<<"$out" && fail "another network's layers: $(grep -m3 '/fc[678]-\|/proj-\|/lstm' <<<"$out")"
grep -q '/pw13-mb1' <<<"$out" || fail "mobilenet_v1's pw13 missing"
# --separable-baseline is a default: the standard convolution each block replaces, at relu none.
grep -q '/dw14\.pw14_standard-mb1/' <<<"$out" || fail "no standard convolution for mobilenet_v1's dw14 -> pw14"
grep '_standard-mb1-relu' <<<"$out" && fail "a standard convolution swept over the ReLU modes"
# Given again it is passed once (a switch), and --no-separable-baseline leaves it out.
out=$(list --network mobilenet_v1 --batch 1 --separable-baseline) || fail "bench.sh --separable-baseline: $out"
grep -q '/dw14\.pw14_standard-mb1/' <<<"$out" || fail "--separable-baseline given: no standard convolution"
out=$(list --network mobilenet_v1 --batch 1 --no-separable-baseline) || fail "bench.sh --no-separable-baseline: $out"
grep -q '_standard-' <<<"$out" && fail "--no-separable-baseline: $(grep -m1 '_standard-' <<<"$out")"
grep -q '/pw13-mb1' <<<"$out" || fail "--no-separable-baseline dropped mobilenet_v1's layers"

# A suite replaces the default networks too; a flag given as --flag=value replaces its default.
out=$(list --suite smoke --dtype=f32 --relu none) || fail "bench.sh --suite smoke: $out"
grep '/threads:' <<<"$out" | grep -v '/f32/' && fail "--dtype=f32 did not replace --dtype all"
grep -q 'mobilenet\|/pw13-\|/conv5-mb' <<<"$out" && fail "the default networks ran beside --suite"
echo "bench.sh: extra arguments replace the defaults they name"
