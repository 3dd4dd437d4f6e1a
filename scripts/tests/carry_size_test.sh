#!/usr/bin/env bash
# scripts/carry-size.sh: the tree alone fits the default 60 MiB (exit 0); a named path
# counts on top of it; over a limit it exits 1 before anything is carried; bad input exits 2.
set -uo pipefail
cs=$(cd "$(dirname "$0")/.." && pwd)/carry-size.sh
errors=0
bad() {
  echo "carry_size_test: FAILED: $*"
  errors=$((errors + 1))
}
out=$("$cs") || bad "the tree alone: exit $?, expected 0 ($out)"
tree=$(sed -n 's/^carry-size: \([0-9.]*\) MiB (tree .*/\1/p' <<<"$out")
[ -n "$tree" ] || bad "no size printed: $out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -c $((3 * 1048576)) /dev/zero >"$tmp/bundle"
out=$("$cs" "$tmp/bundle") || bad "tree + 3 MiB: exit $?"
with=$(sed -n 's/^carry-size: \([0-9.]*\) MiB .*/\1/p' <<<"$out")
awk -v a="$tree" -v b="$with" 'BEGIN { exit !(b - a > 2.95 && b - a < 3.05) }' || bad "3 MiB counted as $tree -> $with MiB"
"$cs" --limit 0 >/dev/null 2>&1
[ $? = 1 ] || bad "over --limit 0: expected exit 1"
"$cs" --limit x >/dev/null 2>&1
[ $? = 2 ] || bad "--limit x: expected exit 2"
"$cs" "$tmp/missing" >/dev/null 2>&1
[ $? = 2 ] || bad "a missing path: expected exit 2"
[ $errors = 0 ] && echo "carry_size_test: passed ($tree MiB tree)"
exit $((errors > 0))
