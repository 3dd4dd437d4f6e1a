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

# A suite replaces the default networks too; a flag given as --flag=value replaces its default.
out=$(list --suite smoke --dtype=f32 --relu none) || fail "bench.sh --suite smoke: $out"
grep '/threads:' <<<"$out" | grep -v '/f32/' && fail "--dtype=f32 did not replace --dtype all"
grep -q 'mobilenet\|/pw13-\|/conv5-mb' <<<"$out" && fail "the default networks ran beside --suite"
echo "bench.sh: extra arguments replace the defaults they name"
