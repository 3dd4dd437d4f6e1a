#!/usr/bin/env bash
# One-off: issue 14's AMX checks on the device machine's Intel CPU (AMX), with the bundle.
out=$1
export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:${LD_LIBRARY_PATH:-}
lb=$PWD/.gpu-bundle/bin/layerbench
{ grep -m1 "model name" /proc/cpuinfo; grep -o -w 'amx[a-z_0-9]*\|avx512_fp16\|avx512_bf16' /proc/cpuinfo | sort | uniq -c; nproc; uname -r; } >"$out/cpu.txt" 2>&1
P=(--suite "$PWD/.gpu-bundle/amx.txt")
echo "== check AMX" >"$out/check.log"
timeout -s INT 70 "$lb" check --suite conformance --kernel dense.cpu.default,conv2d.cpu.default,lstm.cpu.default --dtype bf16,i8 --threads 2 >>"$out/check.log" 2>&1; echo "exit $?" >>"$out/check.log"
timeout -s INT 110 "$lb" run "${P[@]}" --kernel dense.cpu.default,dense.onednn.default,lstm.cpu.default,lstm.onednn.default --threads 1,2 --repetitions 3,6 --case-time 0.3 --budget 95 --out "$out/amx.json" >"$out/amx.log" 2>&1; echo "exit $?" >>"$out/amx.log"
LB_CPU_ISA=avx512 timeout -s INT 80 "$lb" run "${P[@]}" --kernel dense.cpu.default,lstm.cpu.default --threads 1,2 --repetitions 3,6 --case-time 0.3 --budget 65 --out "$out/avx512.json" >"$out/avx512.log" 2>&1; echo "exit $?" >>"$out/avx512.log"
gzip -9 "$out"/*.json 2>/dev/null
tail -4 "$out/check.log"; grep -E "^\[" "$out/amx.log" | cut -c1-150; grep -E "^\[" "$out/avx512.log" | cut -c1-150
