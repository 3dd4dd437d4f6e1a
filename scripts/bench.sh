#!/usr/bin/env bash
# The main job. Until the benchmark harness lands it builds layerbench if needed,
# verifies every kernel built in on the smoke suite and on the bundled networks'
# layers, and prints the analytic model of each bundled network.
#   scripts/bench.sh [--batch N]   (batch for the network checks and analyses; default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
batch=1
if [ "${1:-}" = "--batch" ] && [ -n "${2:-}" ]; then batch=$2; fi

build=${LB_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  scripts/install-deps.sh
  cmake -S . -B "$build" -G Ninja >/dev/null
fi
cmake --build "$build" --parallel "$(nproc)" >/dev/null
lb="$build/bench/layerbench"
networks=$(find bench/networks -name '*.txt' -printf '%f\n' | sed 's/\.txt$//' | sort)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

"$lb" list
status=0
check() {  # prints the summary line, and every failure with its repro line
  echo "== check $*"
  "$lb" check "$@" >"$log" || status=1
  grep -A2 '^failed' "$log" || true
  tail -n 1 "$log"
}
echo
check --suite smoke
for net in $networks; do check --network "$net" --batch "$batch"; done
for net in $networks; do
  echo
  "$lb" analyze "$net" --batch "$batch"
done
exit $status
