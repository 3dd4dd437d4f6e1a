#!/usr/bin/env bash
# The whole GPU check in one go, for a machine with a GPU, CUDA, cuBLAS and cuDNN but no
# package registry. Runs what scripts/gpu-bundle.sh built here (.gpu-bundle/):
#   1. the machine: nvidia-smi;
#   2. the `gpu` tests (smoke test, every GPU kernel verified on smoke and awkward shapes);
#   3. `layerbench check` for every GPU backend on the smoke suite and the bundled
#      networks, in f32, tf32, f16 and bf16;
#   4. one CPU + GPU sweep: alexnet and mobilenet_v1 layers and lstm_lm at batch 1 and 32,
#      GEMM 4096^3 and 8192^3 (cuBLAS, our whole SGEMM progression and mma.sync GEMM,
#      oneDNN) and the I=H=512 LSTM at batch 1 and 64, in f32, tf32 and bf16; GPU cases
#      with spin and with blocking waits (claim 2); merged into sweep.json.
# usage: scripts/gpu-check.sh OUTDIR      (LB_GPU_CHECK_QUICK=1: a small sweep, for trying
# the script on a machine without a GPU). Exit status: non-zero if a test or check failed.
set -uo pipefail
out=${1:?usage: scripts/gpu-check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
bundle=${LB_GPU_BUNDLE:-.gpu-bundle}
start=$(date +%s)
status=0
log() { echo "[gpu-check $(($(date +%s) - start))s] $*" | tee -a "$out/gpu-check.log"; }

# Libraries: the bundle's first, then CUDA's wherever this machine keeps them — the
# toolkit's folders, or Python's nvidia-* packages (cuBLAS, cuDNN, cudart) — and the driver's.
libs="$PWD/$bundle/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64 \
  $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, x, "lib") for p in nvidia.__path__ for x in sorted(os.listdir(p))))' 2>/dev/null); do
  [ -d "$d" ] && libs="$libs:$d"
done
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LAYERBENCH_DATA="$PWD/bench" LAYERBENCH_PEAKS="$out/peaks.json"
lb="$bundle/bin/layerbench"

log "machine: $(nproc) CPUs; bundle built from $(cat "$bundle/COMMIT" 2>/dev/null || echo '?'), tree at $(git rev-parse --short=12 HEAD 2>/dev/null || echo '?')"
{ nvidia-smi || echo "nvidia-smi failed"; } >"$out/nvidia-smi.txt" 2>&1
if ldd "$lb" | grep -q 'not found'; then
  log "missing libraries: $(ldd "$lb" | grep 'not found' | tr -s ' \n' ' ')"
  exit 1
fi

log "gpu tests"
: >"$out/gpu-tests.log"
for t in lb_cuda_smoke lb_gpu_tests; do
  "$bundle/bin/$t" >>"$out/gpu-tests.log" 2>&1
  rc=$?
  case $rc in
    0) log "$t: passed" ;;
    77) log "$t: SKIPPED ($(grep -m1 SKIPPED "$out/gpu-tests.log"))" ;;
    *) log "$t: FAILED (exit $rc)"; status=1 ;;
  esac
done

log "checks"
: >"$out/checks.log"
for backend in $("$lb" list | head -n 1 | cut -d: -f2); do
  case $backend in cublas | cudnn | cuda) ;; *) continue ;; esac
  for source in "--suite smoke" "--network alexnet" "--network mobilenet_v1" "--network lstm_lm"; do
    # shellcheck disable=SC2086  # $source is two words on purpose
    "$lb" check --backend "$backend" $source --dtype f32,tf32,f16,bf16 >>"$out/checks.log" 2>&1 || status=1
    log "check $backend $source: $(tail -n 1 "$out/checks.log")"
  done
done

log "sweep"
quick=${LB_GPU_CHECK_QUICK:-0}
common=(--dtype f32,tf32,bf16 --threads "1,$(nproc)" --sync spin,blocking --verify-macs 50000000
  --benchmark_min_time=0.05 --benchmark_repetitions=3)
networks=(--network alexnet,mobilenet_v1,lstm_lm --batch 1,32)
# --backend cuda sweeps our whole SGEMM progression (its steps are opt-in elsewhere).
gemm=(--suite gpu_gemm --backend cublas,cuda,onednn)
lstm=(--suite lstm --backend cudnn,cuda,onednn,cpu)
if [ "$quick" = 1 ]; then
  networks=(--network alexnet --batch 1 --backend onednn,cublas,cudnn)
  gemm=(--problem "dense mb=256 ic=256 oc=256 name=gemm256" --backend cublas,cuda,onednn)
  lstm=(--problem "lstm mb=2 t=3 ic=16 hc=16 name=lstm16" --backend cudnn,cuda,onednn)
  common=(--dtype f32,bf16 --threads 1 --sync spin,blocking --benchmark_min_time=0.01 --benchmark_repetitions=2)
fi
"$lb" run "${networks[@]}" "${common[@]}" --out "$out/sweep-networks.json" >"$out/sweep.log" 2>&1 || status=1
log "networks: $(grep -c '^\[' "$out/sweep.log") cases"
"$lb" run "${gemm[@]}" "${common[@]}" --out "$out/sweep-gemm.json" >>"$out/sweep.log" 2>&1 || status=1
"$lb" run "${lstm[@]}" "${common[@]}" --out "$out/sweep-lstm.json" >>"$out/sweep.log" 2>&1 || status=1
"$lb" merge "$out/sweep.json" "$out/sweep-networks.json" "$out/sweep-gemm.json" "$out/sweep-lstm.json" \
  >>"$out/gpu-check.log" 2>&1 || status=1
rm -f "$out"/sweep-*.json "$out"/sweep-*.jsonl
grep -A200 '^problem ' "$out/sweep.log" | tail -n 60 >"$out/summary.txt"

log "done, status $status; files: $(cd "$out" && ls | tr '\n' ' ')"
cat "$out/summary.txt"
exit $status
