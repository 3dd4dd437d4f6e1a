#!/usr/bin/env bash
# One-off: issue 14's f32 convolution targets on the device machine's Intel CPU, with the bundle.
out=$1
export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:${LD_LIBRARY_PATH:-}
lb=$PWD/.gpu-bundle/bin/layerbench
timeout -s INT 235 "$lb" run --suite "$PWD/results/cpu-zen5-2core/2026-12-03_conv-targets_one-run/problems.txt" \
  --kernel conv2d.cpu.default,conv2d.cpu.depthwise,conv2d.cpu.depthwise_blocked,conv2d.onednn.blocked \
  --threads 1,2 --repetitions 3,5 --case-time 0.2 --budget 215 --out "$out/conv.json" >"$out/conv.log" 2>&1
echo "exit $?" >>"$out/conv.log"
gzip -9 "$out/conv.json" 2>/dev/null
grep -cE "^\[" "$out/conv.log"; tail -3 "$out/conv.log"
