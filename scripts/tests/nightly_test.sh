#!/usr/bin/env bash
# scripts/nightly.sh end to end, small: two nights of two kernels into a temporary history
# (the second under another commit name, LB_COMMIT, as the tree did not change), then checks
# the history's names, that the dashboard shows both nights and exits 0 (too little history
# to judge is "cannot judge", never an alert), and that the exports were written.
#   nightly_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lb-nightly-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$(dirname "$0")/../.."
fail() { echo "nightly test: FAIL: $*" >&2; exit 1; }
small=(--kernel dense.onednn.default --benchmark_min_time=0.002 --case-time 0.05)
for commit in aaaaaaaaaaaa bbbbbbbbbbbb; do
  LB_SETTLE=0 LB_BUILD_DIR=$build LB_HISTORY=$tmp/history LB_SITE=$tmp/site LB_MACHINE=test-machine LB_COMMIT=$commit \
    scripts/nightly.sh "${small[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "nightly.sh exited $?"; }
  sleep 1  # distinct time stamps
done
files=$(cd "$tmp/history" && ls */*.json.gz)
echo "$files"
[ "$(echo "$files" | wc -l)" = 2 ] || fail "expected two nights, got: $files"
echo "$files" | grep -Eq '^test-machine/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{6}_aaaaaaaaaaaa\.json\.gz$' || fail "names: $files"
grep -q '"name":"test-machine"' "$tmp/site/data/index.js" || fail "the dashboard does not show test-machine"
[ ! -e "$tmp/site/alert.md" ] || fail "an alert after two nights"
for f in smaller-is-better bigger-is-better bencher; do
  [ -s "$tmp/site/export/$f.json" ] || fail "no export $f.json"
done
echo "nightly test: ok"
