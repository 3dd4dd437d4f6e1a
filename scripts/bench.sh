#!/usr/bin/env bash
# The main job: builds layerbench if needed and runs the default sweep — the layers of
# alexnet and mobilenet_v1 and lstm_lm, batch 1, 16 and 32, every dtype each backend
# supports, every ReLU mode, CPU kernels on 1 thread and on all cores, GPU backends
# when a GPU is present, and the standard convolution each depthwise → pointwise pair
# replaces (--separable-baseline; --no-separable-baseline leaves it out) — into
# results/runs/<date>_<host>_<device>.json (+ .jsonl as cases finish). 3,500 to 5,000 cases, as the host's ISA allows: each case repeats (at
# least 2 ms a repetition) until the relative standard error of its mean time is 2 % or
# less, with 2 to 10 repetitions and at most 20 ms of timed work unless two repetitions
# take longer, and is verified on at most 3e7 reference MACs. Extra arguments go to
# `layerbench run` and replace the defaults they name: `--network mobilenet_v1 --batch 1`
# runs only that (--suite, --problem and --network all replace the default networks);
# `--rse 0.5 --case-time 2` gives steadier numbers; `--resume --out FILE` continues a run.
set -euo pipefail
cd "$(dirname "$0")/.."
# --no-separable-baseline is ours: it drops that default and goes no further.
given=" "
extra=()
for arg in "$@"; do
  case $arg in
    --no-separable-baseline) given+="--separable-baseline " ;;
    *) extra+=("$arg") ;;
  esac
done
set -- ${extra[@]+"${extra[@]}"}
start=$(date +%s)

build=${LB_BUILD_DIR:-build}
. scripts/build-folder.sh
lb_build "$build" layerbench >/dev/null

device=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  device=$(nvidia-smi --query-gpu=name --format=csv,noheader | sed -n 1p | tr -c 'A-Za-z0-9_.\n-' '-')
fi
out="results/runs/$(date +%Y-%m-%dT%H%M%S)_${LB_MACHINE:-$(hostname -s)}_${device}.json"
for arg in "$@"; do
  case $arg in --out | --out=*) out="" ;; esac  # the caller names the file
done

# The defaults, one flag (and its value) each; an extra argument naming a flag drops it.
defaults=(
  --network alexnet,mobilenet_v1,lstm_lm --batch 1,16,32 --dtype all --relu all
  --threads "1,$(nproc)" --verify-macs 30000000
  --benchmark_min_time=0.002 --rse 2 --repetitions 2,10 --case-time 0.02
  --separable-baseline
)
for arg in "$@"; do
  case $arg in
    --suite | --suite=* | --problem | --problem=*) given+="--network " ;;
    --*) given+="${arg%%=*} " ;;
  esac
done
args=()
i=0
while [ $i -lt ${#defaults[@]} ]; do
  flag=${defaults[$i]}
  width=2
  case $flag in *=* | --separable-baseline) width=1 ;; esac  # a value in the flag, or none
  if [[ $given != *" ${flag%%=*} "* ]]; then
    args+=("${defaults[@]:$i:$width}")
  fi
  i=$((i + width))
done

status=0
"$build/bench/layerbench" run "${args[@]}" ${out:+--out "$out"} "$@" || status=$?
echo "bench.sh: $(($(date +%s) - start)) s"
exit $status
