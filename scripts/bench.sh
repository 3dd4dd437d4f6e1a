#!/usr/bin/env bash
# The main job: builds layerbench if needed and runs the default sweep — the layers of
# alexnet and mobilenet_v1 and lstm_lm, batch 1, 16 and 64, every dtype each backend
# supports, every ReLU mode, CPU kernels on 1 thread and on all cores, GPU backends
# when a GPU is present — into results/runs/<date>_<host>_<device>.json (+ .jsonl as
# cases finish). About 5,100 cases: to fit ten minutes on two cores, each case is timed
# for two repetitions of at least 5 ms and verified on at most 3e7 reference MACs; extra
# arguments go to `layerbench run` and win (e.g. --resume --out FILE, or
# --benchmark_min_time=0.5 --benchmark_repetitions=5 for steadier numbers).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

build=${LB_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  scripts/install-deps.sh
  cmake -S . -B "$build" -G Ninja >/dev/null
fi
cmake --build "$build" --parallel "$(nproc)" >/dev/null

device=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr -c 'A-Za-z0-9_.\n-' '-')
fi
out="results/runs/$(date +%Y-%m-%dT%H%M%S)_$(hostname -s)_${device}_$$.json"
for arg in "$@"; do
  case $arg in --out | --out=*) out="" ;; esac  # the caller names the file
done

status=0
"$build/bench/layerbench" run \
  --network alexnet,mobilenet_v1,lstm_lm --batch 1,16,64 --dtype all --relu all \
  --threads "1,$(nproc)" --verify-macs 30000000 \
  --benchmark_min_time=0.005 --benchmark_repetitions=2 \
  ${out:+--out "$out"} "$@" || status=$?
echo "bench.sh: $(($(date +%s) - start)) s"
exit $status
