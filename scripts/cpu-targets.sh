#!/usr/bin/env bash
# The cpu backend's targets measured on this host against oneDNN, in one command: the lines
# of bench/suites/cpu_targets.txt as runs of `layerbench run`, our kernels and oneDNN's in
# the same run, and their ratios (oneDNN's time ÷ ours, scripts/ratios):
#   lowp  the bf16 / int8 lines (GEMM, dense, LSTM) on dense and lstm; where this CPU runs
#         them on AMX tiles, once per AMX blocking (LB_AMX_BLOCKING: the default, then each
#         of --blockings) and once with LB_CPU_ISA=avx512, every run with oneDNN's cases of
#         its own, so that each ratio pairs times taken in the same minutes;
#   f32   the other lines (GEMM, convolutions, depthwise, LSTM) on our default, depthwise and
#         blocked-depthwise kernels against oneDNN's default and blocked ones.
# For a development host, or a machine lent with the GPU bundle (--layerbench
# .gpu-bundle/bin/layerbench: its libraries are found beside it). Without --layerbench it
# builds layerbench in LB_BUILD_DIR (default build/), as that folder is configured.
# docs/running.md has more.
#
# usage: scripts/cpu-targets.sh OUTDIR [--suite FILE] [--layerbench PATH] [--threads 1,2]
#                               [--budget SECONDS] [--quick] [--blockings "B;B;..."]
#                               [--recheck N] [--recheck-below RATIO]
#   --budget     the whole command's time: each run gets a share of what is left (f32 three
#                parts, each low-precision run one, the recheck two), stops between cases when
#                it is spent and keeps what it finished; default: no limit
#   --quick      3-6 repetitions of at least 0.3 s of timed work per case (else 5-20, 1 s)
#   --blockings  AMX blockings after the default (default "kc_bytes=512;kc_bytes=2048,mc=192;prefetch=2;kc_bytes=512,prefetch=2")
#   --recheck    N repetitions (default 8; 0: no recheck) for each case where our fastest
#                kernel was slower than oneDNN's (ratio below --recheck-below, default 1.0)
#                in the f32 run or the default low-precision run: that problem measured
#                again, that kernel's and oneDNN's repetitions shuffled among each other
#                (--benchmark_enable_random_interleaving), slowest first, so that a busy
#                minute of a shared host lands on both sides alike
# OUTDIR (new or empty) gets at most four files: cpu-targets.log (every line, the ratio
# tables, the recheck's first-run and rechecked ratio side by side), ratios.csv (every run's
# ratios, the run named in the first column: "recheck" for the recheck's), host.txt and
# runs.tar.gz (each run's results JSON, gzipped, and its output).
# Exit status: 0 when every run finished (a run cut by --budget counts, and so does a recheck
# that the budget cut or left out) and no case failed;
# 1 otherwise; 2 for bad usage or a layerbench that cannot start.
set -uo pipefail

usage() {
  echo "usage: scripts/cpu-targets.sh OUTDIR [--suite FILE] [--layerbench PATH] [--threads 1,2]" \
    "[--budget SECONDS] [--quick] [--blockings \"B;B;...\"]" \
    "[--recheck N] [--recheck-below RATIO]" >&2
  exit 2
}
out="" suite="" lb="" threads="1,2" budget=0 quick=0 recheck=8 recheck_below=1.0
blockings="kc_bytes=512;kc_bytes=2048,mc=192;prefetch=2;kc_bytes=512,prefetch=2"
while [ $# -gt 0 ]; do
  case $1 in
    --suite | --layerbench | --threads | --budget | --blockings | --recheck | --recheck-below)
      [ $# -ge 2 ] || usage
      case $1 in
        --suite) suite=$2 ;;
        --layerbench) lb=$2 ;;
        --threads) threads=$2 ;;
        --budget) budget=$2 ;;
        --blockings) blockings=$2 ;;
        --recheck) recheck=$2 ;;
        --recheck-below) recheck_below=$2 ;;
      esac
      shift 2
      ;;
    --quick) quick=1 && shift ;;
    -h | --help) usage ;;
    -*) echo "cpu-targets: unknown option '$1'" >&2 && usage ;;
    *)
      [ -z "$out" ] || usage
      out=$1
      shift
      ;;
  esac
done
[ -n "$out" ] || usage
case $budget in '' | *[!0-9]*)
  echo "cpu-targets: --budget '$budget': expected whole seconds" >&2
  exit 2
  ;;
esac
case $recheck in '' | *[!0-9]*)
  echo "cpu-targets: --recheck '$recheck': expected a whole number of repetitions (0: none)" >&2
  exit 2
  ;;
esac
if ! [[ $recheck_below =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
  echo "cpu-targets: --recheck-below '$recheck_below': expected a ratio such as 1.0" >&2
  exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
suite=${suite:-$repo/bench/suites/cpu_targets.txt}
if [ -z "${lb:-}" ]; then  # ours, built (or rebuilt) in the build folder as it is configured
  build=${LB_BUILD_DIR:-build}
  (cd "$repo" && . scripts/build-folder.sh && lb_build "$build" layerbench >/dev/null) || exit 2
  lb=$(cd "$repo" && cd "$build" && pwd)/bench/layerbench
fi
[ -f "$suite" ] || { echo "cpu-targets: no suite file '$suite'" >&2 && exit 2; }
[ -x "$lb" ] || { echo "cpu-targets: no layerbench at '$lb' (build it, or give --layerbench)" >&2 && exit 2; }
lb=$(cd "$(dirname "$lb")" && pwd)/$(basename "$lb")
# A bundle's libraries (scripts/gpu-bundle.sh) sit in lib/ beside its bin/.
[ -d "$(dirname "$lb")/../lib" ] && export LD_LIBRARY_PATH=$(cd "$(dirname "$lb")/../lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ! why=$("$lb" list 2>&1 >/dev/null); then
  echo "cpu-targets: $lb cannot start: $(echo "$why" | tail -n 1)" >&2
  exit 2
fi
# Every blocking checked by layerbench itself before anything runs.
IFS=';' read -r -a blocking_list <<<"$blockings"
for b in "${blocking_list[@]}"; do
  if ! why=$(LB_AMX_BLOCKING=$b "$lb" list 2>&1 >/dev/null); then
    echo "cpu-targets: --blockings: ${why#layerbench: }" >&2
    exit 2
  fi
done
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
if [ -n "$(ls -A "$out")" ]; then
  echo "cpu-targets: $out is not empty" >&2
  exit 2
fi

work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
status=0
log() {
  echo "[cpu-targets $(($(date +%s) - start))s] $*" | tee -a "$out/cpu-targets.log"
}
if [ $quick = 1 ]; then reps=(--repetitions 3,6 --case-time 0.3); else reps=(--repetitions 5,20 --case-time 1); fi

{
  grep -m1 "model name" /proc/cpuinfo
  echo "flags: $(grep -m1 -o -w 'avx512f\|avx512_bf16\|avx512_vnni\|avx512_fp16\|amx_tile\|amx_bf16\|amx_int8' /proc/cpuinfo | tr '\n' ' ')"
  echo "$(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "layerbench: $lb"
} >"$out/host.txt" 2>&1
log "host: $(head -n 1 "$out/host.txt" | sed 's/.*: //'), $(nproc) CPUs"

# The suite's lines split by precision (comments and blank lines dropped).
grep -E '^(dense|lstm) .*dt=(bf16|i8)( |$)' "$suite" >"$work/lowp.txt"
grep -vE '^[[:space:]]*(#|$)' "$suite" | grep -vE '^(dense|lstm) .*dt=(bf16|i8)( |$)' >"$work/f32.txt"

# The runs: NAME ENV WEIGHT SUITE KERNELS (ENV "-": none).
runs=()
lowp_kernels=dense.cpu.default,dense.onednn.default,lstm.cpu.default,lstm.onednn.default
f32_kernels=dense.cpu.default,dense.onednn.default,conv2d.cpu.default,conv2d.cpu.depthwise
f32_kernels+=,conv2d.cpu.depthwise_blocked,conv2d.onednn.default,conv2d.onednn.blocked,lstm.cpu.default,lstm.onednn.default
if [ -s "$work/lowp.txt" ]; then
  if amx_why=$(LB_CPU_ISA=amx "$lb" list 2>&1 >/dev/null); then
    log "lowp: bf16 and int8 on AMX tiles here: $((${#blocking_list[@]} + 2)) runs (blockings, then AVX-512)"
    runs+=("lowp-amx-default - 1 lowp $lowp_kernels")
    for b in "${blocking_list[@]}"; do
      runs+=("lowp-amx-$(echo "$b" | tr '=,' '-_') LB_AMX_BLOCKING=$b 1 lowp $lowp_kernels")
    done
    runs+=("lowp-avx512 LB_CPU_ISA=avx512 1 lowp $lowp_kernels")
  else
    log "lowp: no AMX here (${amx_why#layerbench: LB_CPU_ISA=amx: }): one run"
    runs+=("lowp - 1 lowp $lowp_kernels")
  fi
fi
[ -s "$work/f32.txt" ] && runs+=("f32 - 3 f32 $f32_kernels")

# The machine's peaks (the % of peak figures divide by) for these thread counts, measured
# before the boxes start, on a tiny case, into layerbench's cache for the runs (a no-op
# where it has them already).
log "peaks: for threads $threads"
"$lb" run --problem "dense mb=16 ic=16 oc=16 dt=f32 relu=none name=peaks" --kernel dense.cpu.default \
  --threads "$threads" --benchmark_min_time=0.01 --out "$work/peaks-run.json" >"$work/peaks.out" 2>&1 ||
  log "peaks: the tiny run exited $?: $(tail -n 1 "$work/peaks.out")"
rm -f "$work"/peaks-run.json*

# The recheck's share of --budget: what the runs leave of their two parts, and more.
weights_left=0
[ "$recheck" -gt 0 ] && weights_left=2
for r in "${runs[@]}"; do
  read -r _ _ w _ _ <<<"$r"
  weights_left=$((weights_left + w))
done
for r in "${runs[@]}"; do
  read -r name env weight part kernels <<<"$r"
  limit=()
  if [ "$budget" -gt 0 ]; then
    left=$((start + budget - $(date +%s)))
    box=$((left * weight / weights_left))
    if [ $box -lt 15 ]; then
      log "$name: not run (no time left: $left s of the budget)"
      status=1
      weights_left=$((weights_left - weight))
      continue
    fi
    limit=(timeout -s INT -k 10 $box)
    bench_budget=(--budget $((box - 5)))
  else
    bench_budget=()
  fi
  weights_left=$((weights_left - weight))
  envs=() label=""
  [ "$env" = - ] || envs=("$env") label=", $env"
  log "$name: $(grep -c . "$work/$part.txt") lines, threads $threads$label${limit:+, box $box s}"
  env "${envs[@]}" "${limit[@]}" "$lb" run --suite "$work/$part.txt" --kernel "$kernels" --threads "$threads" \
    "${reps[@]}" "${bench_budget[@]}" --out "$work/$name.json" >"$work/$name.out" 2>&1
  rc=$?
  not_run=$(grep -o '"lb_status": *"not_run"' "$work/$name.json" 2>/dev/null | wc -l)
  [ "$not_run" -gt 0 ] && log "$name: its share of --budget ran out: $not_run cases not run"
  case $rc in
    0) log "$name: done" ;;
    1)
      log "$name: some cases FAILED:"
      grep -E '^\[[0-9]+/[0-9]+\] .*(failed|mistrusted)' "$work/$name.out" | sed -n 1,5p | cut -c1-300 | sed 's/^/    /' |
        tee -a "$out/cpu-targets.log"
      status=1
      ;;
    124) log "$name: cut by its box; its finished cases kept" ;;
    *) log "$name: layerbench exited $rc: $(tail -n 1 "$work/$name.out")" && status=1 ;;
  esac
  # A run cut before it wrote its JSON left its finished cases in the .jsonl.
  res=$work/$name.json
  [ -s "$res" ] || res=$work/$name.jsonl
  if [ -s "$res" ] && python3 "$repo/scripts/ratios" "$res" --backend cpu --baseline onednn --csv "$work/$name.csv" \
    >"$work/$name.ratios" 2>&1; then
    { echo && echo "## $name$label" && cat "$work/$name.ratios" && echo; } >>"$out/cpu-targets.log"
    [ -f "$out/ratios.csv" ] || sed -n '1s/^/run,/p' "$work/$name.csv" >"$out/ratios.csv"
    sed "1d; s/^/$name,/" "$work/$name.csv" >>"$out/ratios.csv"
    log "$name: $(tail -n 1 "$work/$name.ratios" | sed 's/^ratios: //')"
  else
    if [ -s "$res" ]; then why=$(tail -n 1 "$work/$name.ratios"); else why="no case finished"; fi
    log "$name: no ratios ($why)"
    status=1
  fi
done

# The recheck. Every problem where our fastest kernel was slower than oneDNN's (ratio
# below --recheck-below) at some thread count, in the f32 or the default low-precision
# run, slowest first: RATIO|PROBLEM|THREADS|KERNELS (those kernels and the baseline).
# The runs whose ratios the recheck starts from (ratios.csv's first column).
first_runs='^(f32|lowp|lowp-amx-default)$'
if [ "$recheck" -gt 0 ] && [ -s "$out/ratios.csv" ]; then
  awk -F, -v below="$recheck_below" -v first_runs="$first_runs" '
    NR > 1 && $1 ~ first_runs {
      k = $2 SUBSEP $4
      if (!(k in best) || $11 + 0 > best[k]) { best[k] = $11 + 0; kernel[k] = $5 }
      baseline[k] = $9
    }
    END {
      for (k in best) {
        if (best[k] >= below + 0) continue
        split(k, pt, SUBSEP); p = pt[1]
        if (!(p in worst) || best[k] < worst[p]) worst[p] = best[k]
        threads[p] = threads[p] (threads[p] == "" ? "" : ",") pt[2]
        if (index("," kernels[p] ",", "," kernel[k] ",") == 0) kernels[p] = kernels[p] (kernels[p] == "" ? "" : ",") kernel[k]
        if (index("," kernels[p] ",", "," baseline[k] ",") == 0) kernels[p] = kernels[p] "," baseline[k]
      }
      for (p in worst) printf "%.4f|%s|%s|%s\n", worst[p], p, threads[p], kernels[p]
    }' "$out/ratios.csv" | sort -t'|' -k1,1g >"$work/recheck.txt"
  todo=$(grep -c . "$work/recheck.txt")
  log "recheck: $todo problems with a case below ${recheck_below}× oneDNN; $recheck shuffled repetitions each"
  i=0
  while IFS='|' read -r worst problem thr kernels; do
    i=$((i + 1))
    name=recheck-$i
    thr=$(echo "$thr" | tr ',' '\n' | sort -n | paste -sd, -)
    ncases=$(($(echo "$kernels" | tr ',' '\n' | grep -c .) * $(echo "$thr" | tr ',' '\n' | grep -c .)))
    limit=()
    if [ "$budget" -gt 0 ]; then
      # About 0.3 s a repetition (0.1 s of timed work, the case set up again each time);
      # a shuffled run cut short keeps nothing, so one that would not fit does not start.
      left=$((start + budget - $(date +%s)))
      need=$(((ncases * recheck * 3 + 9) / 10 + 5))
      if [ $left -lt $need ]; then
        log "recheck: $((todo - i + 1)) problems not rechecked (no time left: $left s of the budget, $need s wanted)"
        break
      fi
      limit=(timeout -s INT -k 10 $left)
    fi
    log "$name: $(printf %.2f "$worst")× at worst: $problem, threads $thr, $kernels"
    "${limit[@]}" "$lb" run --problem "$problem" --kernel "$kernels" --threads "$thr" \
      --benchmark_repetitions="$recheck" --benchmark_enable_random_interleaving \
      --out "$work/$name.json" >"$work/$name.out" 2>&1 </dev/null
    rc=$?
    case $rc in
      0) ;;
      1) log "$name: some cases FAILED: $(grep -m1 -E 'failed|mistrusted' "$work/$name.out" | cut -c1-300)" && status=1 ;;
      124) log "$name: cut by the budget: nothing kept" && break ;;
      *) log "$name: layerbench exited $rc: $(tail -n 1 "$work/$name.out")" && status=1 ;;
    esac
    if [ -s "$work/$name.json" ] && python3 "$repo/scripts/ratios" "$work/$name.json" --backend cpu --baseline onednn \
      --csv "$work/$name.csv" >"$work/$name.ratios" 2>&1; then
      sed "1d; s/^/recheck,/" "$work/$name.csv" >>"$out/ratios.csv"
    else
      log "$name: no ratios ($(tail -n 1 "$work/$name.ratios" 2>/dev/null))"
      status=1
    fi
  done <"$work/recheck.txt"
  # Each rechecked case's first-run ratio beside its rechecked one.
  if grep -q '^recheck,' "$out/ratios.csv"; then
    {
      echo
      echo "## recheck: $recheck shuffled repetitions, oneDNN's time ÷ ours by the medians"
      echo
      echo "| problem | threads | kernel | first run | rechecked |"
      echo "|---|---:|---|---:|---:|"
      awk -F, -v first_runs="$first_runs" 'NR > 1 && $1 ~ first_runs { first[$2 SUBSEP $4 SUBSEP $5] = $11 }
        $1 == "recheck" {
          k = $2 SUBSEP $4 SUBSEP $5
          printf "| %s | %s | %s | %s | %.2f× |\n", $2, $4, $5, (k in first) ? sprintf("%.2f×", first[k]) : "–", $11
        }' "$out/ratios.csv"
      echo
    } >>"$out/cpu-targets.log"
    # Counted over the cases (problem, threads) that were below in the first run.
    log "recheck: $(awk -F, -v below="$recheck_below" -v first_runs="$first_runs" '
      NR > 1 && $1 ~ first_runs {
        k = $2 SUBSEP $4; if (!(k in first) || $11 + 0 > first[k]) first[k] = $11 + 0 }
      $1 == "recheck" { k = $2 SUBSEP $4; if (!(k in best) || $11 + 0 > best[k]) best[k] = $11 + 0 }
      END { n = 0; m = 0; for (k in best) if (first[k] < below + 0) { n++; if (best[k] >= below + 0) m++ }
        printf "%d of the %d cases below %s× in the first run are at %s× or more rechecked, by our fastest kernel",
          m, n, below, below }' "$out/ratios.csv")"
  fi
fi

# Each run's results (its JSON, else the .jsonl of a run cut before it wrote one) and
# output, in one file.
(cd "$work" && for f in *.jsonl; do [ -s "${f%l}" ] && rm -f "$f"; done 2>/dev/null
gzip -9 ./*.json ./*.jsonl 2>/dev/null
tar -czf "$out/runs.tar.gz" $(ls ./*.gz ./*.out 2>/dev/null)) || status=1
log "done, exit $status: $(cd "$out" && ls | tr '\n' ' ')"
exit $status
