#!/usr/bin/env bash
# The GPU check: everything worth knowing from a short loan of a GPU machine (one command
# of at most 10 minutes, no package registry), in priority order, each stage in its own
# time box, results flushed to OUTDIR after every stage. Runs what scripts/gpu-bundle.sh
# built (${LB_GPU_BUNDLE:-.gpu-bundle}/bin, its libraries in lib/). docs/gpu-check.md
# says what each stage runs and what comes back.
#
# usage: scripts/gpu-check.sh OUTDIR [--budget SECONDS] [--dry-run]
#   --budget   the whole check's time (default 360: a device loan of 15 minutes, machine
#              start included, still has room for a second run of it)
#   --dry-run  every stage's logic on tiny problems, CPU kernels beside the GPU ones, in
#              90 s (default), its last sweep cut by its box every time: for CI, on a
#              machine without a GPU (scripts/tests/gpu_check_test.sh)
# Exit status: 0 when every test and check passed and no command failed; 1 otherwise
# (a test that exits 77 is SKIPPED only where nvidia-smi sees no GPU); 2 for bad usage.
set -uo pipefail

usage() {
  echo "usage: scripts/gpu-check.sh OUTDIR [--budget SECONDS] [--dry-run]" >&2
  exit 2
}
out="" budget="" dry=0
while [ $# -gt 0 ]; do
  case $1 in
    --budget)
      [ $# -ge 2 ] || usage
      budget=$2
      shift 2
      ;;
    --budget=*) budget=${1#--budget=} && shift ;;
    --dry-run) dry=1 && shift ;;
    -h | --help) usage ;;
    -*) echo "gpu-check: unknown option '$1'" >&2 && usage ;;
    *)
      [ -z "$out" ] || usage
      out=$1
      shift
      ;;
  esac
done
[ -n "$out" ] || usage
if [ -z "$budget" ]; then budget=360 && [ $dry = 1 ] && budget=90; fi
case $budget in '' | *[!0-9]* | ? | 1?)
  echo "gpu-check: --budget '$budget': expected whole seconds, at least 20" >&2
  exit 2
  ;;
esac
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
if [ -n "$(ls -A "$out")" ]; then
  echo "gpu-check: $out is not empty (at most 8 files come back from a device command: start empty)" >&2
  exit 2
fi
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
bundle=${LB_GPU_BUNDLE:-.gpu-bundle}
case $bundle in /*) ;; *) bundle=$repo/$bundle ;; esac
lb=$bundle/bin/layerbench

# Timing. Every command runs under `timeout -s INT -k grace`: layerbench stops at SIGINT
# and writes what it finished; one that ignores SIGINT is killed `grace` seconds later.
# `reserve` is kept back from the stages for the last flush.
start=$(date +%s)
if [ $dry = 1 ]; then grace=6 reserve=4 min_cmd=8; else grace=8 reserve=15 min_cmd=20; fi
deadline=$((start + budget - reserve))
status=0
now() { date +%s; }
log() {
  local line
  line="[gpu-check $(($(now) - start))s] $*"
  echo "$line"
  echo "$line" >>"$out/gpu-check.log"
}
fail() {
  status=1
  stage_failed=$((stage_failed + 1))
  log "$@"
}

# Work files live outside OUTDIR (a device command returns at most 8 files); OUTDIR gets
# the flushed copies. The run files are removed only once merged into sweep.json.gz.
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
trap 'log "interrupted: flushing what exists"; flush; exit 130' INT TERM
mkdir -p "$work/runs"
: >"$work/tests.log"
: >"$work/checks.log"
: >"$work/runs.log"
export LAYERBENCH_DATA=$repo/bench LAYERBENCH_PEAKS=${LAYERBENCH_PEAKS:-$work/peaks.json}

# Libraries: the bundle's first, then CUDA's wherever this machine keeps them — the
# toolkit's folders, the driver's, or Python's nvidia-* packages (cuBLAS, cuDNN, cudart).
pydirs=$(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, x, "lib") for p in nvidia.__path__ for x in sorted(os.listdir(p))))' 2>/dev/null)
libs="$bundle/lib"
# shellcheck disable=SC2086  # $pydirs is a list of folders
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64 \
  /usr/local/nvidia/lib $pydirs; do
  [ -d "$d" ] && libs="$libs:$d"
done
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"

# --- stages --------------------------------------------------------------------------
# A stage's box: SHARE percent of the time left, at least MIN seconds, never past the
# deadline. A command's box: its WEIGHT's part of what is left of the stage against the
# weights still to come (what a command leaves unused goes to the later ones), at least
# min_cmd. stage_note[N] is the stage's line in the summary.
declare -a stage_note
stages="1 2 3 4 5 6"
stage_no=0 stage_name="" stage_start=0 stage_end=0 stage_cut="" stage_failed=0
stage_begin() { # N NAME SHARE MIN DRY_MIN [MAX]
  stage_no=$1 stage_name=$2 stage_cut="" stage_failed=0 stage_start=$(now)
  local left=$((deadline - stage_start)) box min=$4
  [ $dry = 1 ] && min=$5
  box=$((left * $3 / 100))
  [ "$box" -ge "$min" ] || box=$min
  [ -z "${6:-}" ] || [ "$box" -le "$6" ] || box=$6
  [ "$box" -le "$left" ] || box=$left
  stage_end=$((stage_start + box))
  if [ "$box" -lt 2 ]; then
    stage_note[$1]="stage $1 $2: skipped (no time left: ${left} s before the deadline)"
    log "${stage_note[$1]}"
    return 1
  fi
  log "stage $1 $2: box $box s (of $left s left)"
}
stage_done() {
  local took=$(($(now) - stage_start)) failed=""
  [ "$stage_failed" = 0 ] || failed=", $stage_failed FAILED"
  if [ -n "$stage_cut" ]; then
    stage_note[stage_no]="stage $stage_no $stage_name: cut at $took s ($stage_cut)$failed"
  else
    stage_note[stage_no]="stage $stage_no $stage_name: ran, $took s$failed"
  fi
  log "${stage_note[$stage_no]}"
  flush
}
mark_cut() { stage_cut="${stage_cut:+$stage_cut; }$*"; }
# box WEIGHT LATER_WEIGHTS -> $tbox, the seconds given to `timeout` (grace comes on top);
# returns 1 when the stage has no time left for it.
box() {
  local left=$((stage_end - $(now))) b
  b=$((left * $1 / ($1 + $2)))
  [ "$b" -ge "$min_cmd" ] || b=$min_cmd
  [ "$b" -le "$left" ] || b=$left
  tbox=$((b - grace))
  [ "$tbox" -ge 1 ]
}
# boxed CMD...: in the box; timeout signals the command's whole process group (a test
# under compute-sanitizer is two processes). boxed_lb ARGS...: layerbench, signalled
# alone: a second SIGINT (the group's) would kill it before it writes its results.
boxed() { timeout -s INT -k "$grace" "$tbox" "$@"; }
boxed_lb() { timeout --foreground -s INT -k "$grace" "$tbox" "$lb" "$@"; }

gpu_seen=0 # nvidia-smi lists a GPU: then a SKIP, or "no usable CUDA device", is a failure
no_device() { # LOGFILE: layerbench found no usable GPU although nvidia-smi lists one
  [ $gpu_seen = 1 ] && grep -q "no usable CUDA device" "$1"
}

# --- results -------------------------------------------------------------------------
# Each `layerbench run` writes runs/NN-NAME.json (.jsonl as cases finish). flush merges
# every run so far — its .json where it exists, else its .jsonl (a run killed before
# writing .json) — into OUTDIR/sweep.json.gz, and copies the logs. Inputs differ in
# settings (stages measure different peaks and sources), so the merge is --force: all of
# them come from this machine and this bundle. If the merge fails, the run files go to
# OUTDIR/runs.tar.gz instead, whole.
runs=()
flush() {
  local inputs=() r
  for r in "${runs[@]}"; do
    if [ -s "$r.json" ] && grep -q '"lb_case"' "$r.json"; then
      inputs+=("$r.json")
    elif [ -s "$r.jsonl" ] && grep -q '"lb_case"' "$r.jsonl"; then
      inputs+=("$r.jsonl")
    fi
  done
  if [ ${#inputs[@]} -gt 0 ]; then
    echo "=== merge: ${inputs[*]##*/}" >>"$work/runs.log"
    if "$lb" merge --force "$work/sweep.json" "${inputs[@]}" >>"$work/runs.log" 2>&1 &&
      gzip -c "$work/sweep.json" >"$out/sweep.json.gz.part" && mv "$out/sweep.json.gz.part" "$out/sweep.json.gz"; then
      rm -f "$out/runs.tar.gz"
      log "flushed: sweep.json.gz, $(grep -o '"lb_case": *"[^"]*"' "$work/sweep.json" | sort -u | wc -l) cases from ${#inputs[@]} runs"
    else
      fail "merge of ${inputs[*]##*/} failed (see runs.log.gz): the run files are kept whole in runs.tar.gz"
      tar -czf "$out/runs.tar.gz" -C "$work" runs
    fi
  fi
  local f
  for f in tests checks runs; do
    [ -s "$work/$f.log" ] || continue
    gzip -c "$work/$f.log" >"$out/$f.log.gz.part" && mv "$out/$f.log.gz.part" "$out/$f.log.gz"
  done
  summarize >"$out/summary.txt"
}
# summary.txt: the stages so far, then each run's CPU vs GPU table.
summarize() {
  local n r
  for n in $stages; do [ -n "${stage_note[$n]:-}" ] && echo "${stage_note[$n]}"; done
  # One CPU vs GPU table over every run (scripts/report on the merged sweep, without plots:
  # Python's standard library only), else each run's own.
  if [ -s "$work/report/report.md" ]; then
    echo
    awk '/^## CPU vs GPU/{on=1; print; next} /^## /{on=0} on' "$work/report/report.md"
    return
  fi
  for r in "${runs[@]}"; do
    [ -s "$r.out" ] || continue
    echo
    echo "== ${r##*/}"
    awk '/^problem /{on=1} /^results:/{on=0} on' "$r.out"
  done
}
# The merged sweep's report (report.md, its CSVs) in the work folder, for the summary.
report() {
  [ -s "$work/sweep.json" ] || return 0
  rm -rf "$work/report"
  if timeout -k 5 60 python3 "$repo/scripts/report" "$work/sweep.json" --out "$work/report" --no-plots \
    --layerbench "$lb" >"$work/report.out" 2>&1; then
    log "report: the CPU vs GPU table of every run in summary.txt"
  else
    log "report: scripts/report failed ($(tail -n 1 "$work/report.out")): each run's own table in summary.txt"
    rm -rf "$work/report"
  fi
}

# run NAME [--no-self-budget] ARGS...: one `layerbench run` in its box; --budget a little
# under the box so that it stops itself between cases, SIGINT at the box otherwise.
# --no-self-budget leaves --budget off, so that SIGINT cuts it mid-case (the dry run's
# last sweep, for the interrupt path).
run_seq=0
run() {
  local name=$1 self=1
  shift
  if [ "${1:-}" = --no-self-budget ]; then self=0 && shift; fi
  local w=$1 rest=$2
  shift 2
  if ! box "$w" "$rest"; then
    mark_cut "$name not started"
    log "stage $stage_no $stage_name: $name not started (no time left in the box)"
    return
  fi
  run_seq=$((run_seq + 1))
  local f margin args=()
  f=$work/runs/$(printf %02d "$run_seq")-$name
  runs+=("$f")
  margin=$((tbox / 8))
  [ $margin -ge 2 ] || margin=2
  [ $margin -le 30 ] || margin=30
  if [ $self = 1 ] && [ $((tbox - margin)) -ge 1 ]; then args=(--budget $((tbox - margin))); fi
  echo "=== stage $stage_no $name (box $tbox s): layerbench run $* ${args[*]} --out ${f##*/}.json" >>"$work/runs.log"
  local t0 rc
  t0=$(now)
  boxed_lb run "$@" "${args[@]}" "${common[@]}" --out "$f.json" >"$f.out" 2>&1
  rc=$?
  cat "$f.out" >>"$work/runs.log"
  # Counted in its results file (.json, else .jsonl: stdout may end early).
  local res=$f.json total finished unsup budgeted took=$(($(now) - t0)) what
  [ -s "$res" ] || res=$f.jsonl
  total=$(sed -n 's/^layerbench run: \([0-9]*\) cases.*/\1/p' "$f.out" | sed -n 1p)
  finished=$(grep -o '"lb_case": *"[^"]*"' "$res" 2>/dev/null | sort -u | wc -l)
  unsup=$(grep -o '"lb_status": *"unsupported"' "$res" 2>/dev/null | wc -l)
  budgeted=$(grep -o '"lb_status": *"not_run"' "$res" 2>/dev/null | wc -l)
  what="$name: $((finished - budgeted)) of ${total:-?} cases ($unsup unsupported) in $took s"
  case $rc in
    0 | 1)
      if [ "$budgeted" -gt 0 ]; then
        mark_cut "$name stopped by its --budget, $budgeted cases not run"
        what="$what, then its --budget stopped it: $budgeted not run"
      fi
      if [ $rc = 1 ]; then
        fail "stage $stage_no $stage_name: $what; some cases FAILED (runs.log.gz):"
        grep -E '^\[[0-9]+/[0-9]+\] .*(failed|mistrusted)' "$f.out" | sed -n 1,5p | cut -c1-300 | sed 's/^/    /' |
          tee -a "$out/gpu-check.log"
      else
        log "stage $stage_no $stage_name: $what"
      fi
      ;;
    124)
      mark_cut "$name cut by SIGINT at $tbox s"
      if [ -s "$f.json" ]; then what="$what, cut by SIGINT at its box ($tbox s): finished cases kept"; else what="$what, cut at its box ($tbox s) and ended without ${f##*/}.json: the finished cases come from its .jsonl"; fi
      log "stage $stage_no $stage_name: $what"
      ;;
    137)
      mark_cut "$name killed"
      fail "stage $stage_no $stage_name: $what, ignored SIGINT for $grace s and was KILLED (a hang?): finished cases come from its .jsonl"
      ;;
    *) fail "stage $stage_no $stage_name: $what; FAILED with exit $rc: $(grep -v '^\[' "$f.out" | tail -n 1)" ;;
  esac
  if no_device "$f.out"; then fail "stage $stage_no $stage_name: $name: nvidia-smi lists a GPU, but layerbench found $(grep -m1 -o 'no usable CUDA device[^[]*' "$f.out")"; fi
}

# test_bin LABEL NAME WEIGHT LATER [WRAPPER...]: one test binary of the bundle, run in its
# box (under WRAPPER: compute-sanitizer). Sets $rc and leaves its output in test.out.
test_bin() {
  local label=$1 name=$2 w=$3 rest=$4
  shift 4
  rc=-1
  if [ ! -x "$bundle/bin/$name" ]; then
    fail "stage $stage_no $stage_name: $name is not in the bundle ($bundle/bin): rebuild it with scripts/gpu-bundle.sh"
    return
  fi
  if ! box "$w" "$rest"; then
    mark_cut "$label not started"
    fail "stage $stage_no $stage_name: $label not started (no time left in the box)"
    return
  fi
  local t0 tmp=$work/test.out
  echo "=== $label: ${*##*/} $name (box $tbox s)" >>"$work/tests.log"
  t0=$(now)
  boxed "$@" "$bundle/bin/$name" >"$tmp" 2>&1
  rc=$?
  cat "$tmp" >>"$work/tests.log"
  local took=$(($(now) - t0)) skipped
  skipped=$(grep -c '^\[  SKIPPED \]' "$tmp")
  if [ $# -gt 0 ] && grep -q 'Device not supported' "$tmp"; then
    log "stage $stage_no $stage_name: $label: compute-sanitizer cannot use this GPU (Device not supported: a gVisor machine?): not run"
    return
  fi
  case $rc in
    0) log "stage $stage_no $stage_name: $label passed ($took s$([ "$skipped" -gt 0 ] && echo ", $skipped tests skipped inside"))" ;;
    77)
      if [ $gpu_seen = 1 ]; then
        fail "stage $stage_no $stage_name: $label SKIPPED although nvidia-smi lists a GPU: FAILED ($(grep -m1 SKIPPED "$tmp"))"
      else
        log "stage $stage_no $stage_name: $label SKIPPED (no GPU: $(grep -m1 -o 'SKIPPED: .*' "$tmp" | cut -c10-))"
      fi
      ;;
    124 | 137)
      mark_cut "$label cut at $tbox s"
      fail "stage $stage_no $stage_name: $label did not finish in its box ($tbox s): FAILED (a hang?)"
      ;;
    *)
      fail "stage $stage_no $stage_name: $label FAILED (exit $rc, $took s)"
      grep -E '^\[  FAILED  \]|ERROR SUMMARY|^SKIPPED' "$tmp" | sort -u | sed -n 1,10p | sed 's/^/    /' |
        tee -a "$out/gpu-check.log"
      ;;
  esac
}

# --- stage 1: the machine ----------------------------------------------------------------
lib_version() { # PATH: the version its file name or its Python package gives
  local real
  real=$(realpath "$1")
  case $real in
    */site-packages/* | */dist-packages/*)
      python3 - "$real" 2>/dev/null <<'EOF' || echo "python package, version unknown"
import importlib.metadata as md, os, sys
want = sys.argv[1]
for d in md.distributions():
    if (d.metadata["Name"] or "").lower().startswith("nvidia"):
        for f in d.files or []:
            if os.path.realpath(d.locate_file(f)) == want:
                print(f"python package {d.metadata['Name']} {d.version}")
                sys.exit(0)
sys.exit(1)
EOF
      ;;
    *.so.*) echo "version ${real##*.so.}" ;;
    *) echo "version not in its name" ;;
  esac
}
find_lib() { # PATTERN [DIR]: where the loader finds it: DIR, LD_LIBRARY_PATH, ld.so.cache
  local d f ds
  IFS=: read -ra ds <<<"${2:+$2:}$LD_LIBRARY_PATH"
  for d in "${ds[@]}"; do
    for f in "$d"/$1; do [ -e "$f" ] && echo "$f" && return; done
  done
  /sbin/ldconfig -p 2>/dev/null | awk -v p="^${1//\*/.*}\$" '$1 ~ p {print $NF; exit}'
}
describe_lib() { # LABEL PATH: one line in environment.txt and the log
  local line
  line="$1: $2 -> $(realpath "$2"), $(lib_version "$2")"
  echo "$line" >>"$out/environment.txt"
  log "stage 1 environment: $line"
}

stage1() {
  stage_begin 1 environment 10 45 35 || return 1
  local env=$out/environment.txt cpu memavail missing="" bin
  {
    echo "== machine"
    date -u
    uname -a
    echo "CPUs: $(nproc)"
    grep -m1 'model name' /proc/cpuinfo
    grep -E '^(MemTotal|MemAvailable):' /proc/meminfo
    echo "cgroup memory.max: $(cat /sys/fs/cgroup/memory.max 2>/dev/null || echo '?')"
    echo "== bundle $bundle: built from $(cat "$bundle/COMMIT" 2>/dev/null || echo '?'); tree at $(git rev-parse --short=12 HEAD 2>/dev/null || echo '?')"
    cat "$bundle/BUILD" 2>/dev/null
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  } >"$env" 2>&1
  cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
  memavail=$(awk '/^MemAvailable:/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
  log "stage 1 environment: $(nproc) CPUs ($cpu), MemAvailable $memavail; bundle built from $(cat "$bundle/COMMIT" 2>/dev/null || echo '?')"
  log "stage 1 environment: library search: $LD_LIBRARY_PATH"

  local smi
  smi=$(command -v nvidia-smi)
  if [ -z "$smi" ]; then
    log "stage 1 environment: nvidia-smi not found (PATH, /usr/local/nvidia/bin): no GPU here"
    echo "== nvidia-smi: not found" >>"$env"
  elif ! timeout -k 5 30 "$smi" -L >"$work/smi.txt" 2>&1; then
    fail "stage 1 environment: nvidia-smi -L failed: $(tail -n 1 "$work/smi.txt")"
    { echo "== nvidia-smi -L" && cat "$work/smi.txt"; } >>"$env"
  else
    { echo "== nvidia-smi -L" && cat "$work/smi.txt"; } >>"$env"
    if grep -q '^GPU ' "$work/smi.txt"; then
      gpu_seen=1
      log "stage 1 environment: GPU: $(timeout -k 5 30 "$smi" --format=csv,noheader \
        --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit,ecc.mode.current 2>&1 | sed -n 1p)"
    else
      log "stage 1 environment: nvidia-smi lists no GPU: a test's SKIP is SKIPPED here, not a failure"
    fi
    { echo "== nvidia-smi -q" && timeout -k 5 60 "$smi" -q; } >>"$env" 2>&1
  fi

  if [ ! -x "$lb" ]; then
    missing="layerbench ($lb: build the bundle with scripts/gpu-bundle.sh)"
  else
    for bin in "$bundle"/bin/*; do
      echo "== ldd $bin" >>"$env"
      ldd "$bin" >>"$env" 2>&1
      missing="$missing $(ldd "$bin" 2>/dev/null | awk '/not found/ {print $1}' | tr '\n' ' ')"
    done
  fi
  # The CUDA libraries: linked ones as ldd resolves them; those loaded at run time (the
  # driver, cuDNN's sub-libraries, NVRTC for its run-time compiled engines) as the loader
  # would find them.
  echo "== CUDA libraries: path -> file, version" >>"$env"
  local linked stem path cudnn_dir="" major="" sub
  linked=$(ldd "$lb" 2>/dev/null)
  for stem in libcudart libcublasLt libcudnn; do
    path=$(awk -v s="$stem.so" 'index($1, s) == 1 && $3 ~ /^\// {print $3; exit}' <<<"$linked")
    if [ -n "$path" ]; then
      describe_lib "$stem" "$path"
    elif [ $stem = libcudart ]; then
      log "stage 1 environment: libcudart: linked statically (CUDA::cudart_static)"
      echo "libcudart: linked statically" >>"$env"
    elif [ $stem = libcublasLt ]; then
      # Not linked: layerbench opens it at its first use (cuda/cublas/library.h), where the
      # loader finds it, else at the path its build found (then `layerbench list` says which).
      path=$(find_lib 'libcublasLt.so.[0-9]*' "$(dirname "$(realpath "$lb")")")
      if [ -n "$path" ]; then
        describe_lib "libcublasLt (opened at first use)" "$path"
      else
        log "stage 1 environment: libcublasLt not in LD_LIBRARY_PATH or ld.so.cache: layerbench looks at its build's path"
      fi
    elif [ -x "$lb" ] && ! grep -q "^[[:space:]]*$stem\.so" <<<"$linked"; then
      missing="$missing $stem (not linked: a bundle built without CUDA?)"
    fi
    if [ $stem = libcudnn ] && [ -n "$path" ]; then
      cudnn_dir=$(dirname "$(realpath "$path")")
      major=$(awk 'index($1, "libcudnn.so") == 1 {print $1; exit}' <<<"$linked")
      major=${major##*.so.}
    fi
  done
  if [ -n "$cudnn_dir" ]; then
    for sub in graph engines_precompiled engines_runtime_compiled heuristic ops cnn adv; do
      path=$(find_lib "libcudnn_$sub.so.$major" "$cudnn_dir")
      if [ -n "$path" ]; then echo "libcudnn_$sub: $path" >>"$env"; else missing="$missing libcudnn_$sub.so.$major"; fi
    done
  fi
  path=$(find_lib libcuda.so.1)
  if [ -n "$path" ]; then
    describe_lib "libcuda (driver)" "$path"
  else
    log "stage 1 environment: libcuda.so.1 (the driver's) not found"
    [ $gpu_seen = 1 ] && missing="$missing libcuda.so.1"
  fi
  path=$(find_lib 'libnvrtc.so.*' "$cudnn_dir")
  if [ -n "$path" ]; then
    describe_lib libnvrtc "$path"
  else
    log "stage 1 environment: libnvrtc not found: cuDNN's run-time compiled engines are unavailable"
  fi

  local cs
  cs=$(command -v compute-sanitizer)
  echo "== compute-sanitizer: ${cs:-not found}" >>"$env"
  [ -n "$cs" ] && timeout -k 5 30 "$cs" --version >>"$env" 2>&1
  missing=$(echo "$missing" | sed 's/^ *//; s/  */ /g; s/ *$//')
  if [ -z "$missing" ]; then
    kernels_list=$(timeout -k 5 60 "$lb" list 2>&1) || missing="(layerbench list failed: $(tail -n 1 <<<"$kernels_list"))"
    { echo "== layerbench list" && echo "$kernels_list"; } >>"$env"
  fi
  if [ -n "$missing" ]; then
    fail "stage 1 environment: MISSING: $missing; the check stops here (LD_LIBRARY_PATH and ldd in environment.txt)"
    stage_note[1]="stage 1 environment: STOPPED, missing: $missing"
    flush
    return 1
  fi
  # The machine's peaks (the % of peak figures divide by), measured once here for the
  # thread count and the GPU the runs use and cached for them (LAYERBENCH_PEAKS), so
  # that no run spends its own box on them.
  local peak_kernels=dense.cpu.default
  [ $gpu_seen = 1 ] && peak_kernels=$peak_kernels,dense.cublas.lt
  if box 1 0; then
    boxed_lb run --problem "dense mb=16 ic=16 oc=16 dt=f32 relu=none name=peaks" --kernel "$peak_kernels" \
      --threads "$threads" --benchmark_min_time=0.01 >"$work/peaks.out" 2>&1
    case $? in # 1: the tiny case failed (stages 2 and 4 check the kernels), not the peaks
      0 | 1) sed -n 's/^layerbench: measuring the /peak: /p' "$work/peaks.out" | while read -r line; do log "stage 1 environment: $line"; done ;;
      124 | 137)
        mark_cut "peaks not measured in $tbox s"
        log "stage 1 environment: the peaks were not measured in the box ($tbox s): the first runs measure them"
        ;;
      *) fail "stage 1 environment: measuring the peaks FAILED: $(tail -n 1 "$work/peaks.out")" ;;
    esac
    { echo "== peaks" && cat "$work/peaks.out"; } >>"$env"
  fi
  stage_done
}

# Kernel ids from `layerbench list`: the GPU ones a default sweep takes (not opt-in); one
# CPU kernel per op, oneDNN's where it has one (the CPU's side of the CPU vs GPU answer;
# docs/backends.md compares ours with it), else the op's first; the SGEMM progression's
# steps 01-06 (07 runs in stage 5).
kernels() { # gpu | cpu | progression
  case $1 in
    gpu) awk '$2 == "gpu" && !/\[opt-in\]/ {print $1}' <<<"$kernels_list" ;;
    cpu) awk '$2 == "cpu" && !/\[opt-in\]/ && $1 !~ /\.ref\./ {
            split($1, id, "."); if (!(id[1] in pick) || id[2] == "onednn" && pick[id[1]] !~ /\.onednn\./) pick[id[1]] = $1
          } END { for (op in pick) print pick[op] }' <<<"$kernels_list" | sort ;;
    progression) awk '$2 == "gpu" && $1 ~ /^dense\.cuda\.0[1-6]_/ {print $1}' <<<"$kernels_list" ;;
  esac | paste -sd, -
}

# --- what each stage runs: the real problems, or tiny ones for --dry-run ----------------
threads=$(nproc)
if [ $dry = 1 ]; then
  # Tiny problems; the CPU kernels run beside the GPU ones (unsupported without a GPU).
  printf '%s\n' "dense mb=64 ic=128 oc=128 dt=f32 relu=none name=gemm_tiny" >"$work/gemm.txt"
  printf '%s\n' "lstm mb=2 t=3 ic=16 hc=16 l=1 dt=f32 relu=none name=lstm_tiny" >"$work/lstm.txt"
  printf '%s\n' "dense mb=4 ic=64 oc=33 dt=f32 relu=none name=fc_tiny" \
    "conv2d mb=1 ic=8 ih=12 iw=12 oc=8 kh=3 kw=3 sh=1 ph=1 g=1 dt=f32 relu=fused name=conv_tiny" \
    "conv2d mb=1 ic=8 ih=12 iw=12 oc=8 kh=3 kw=3 sh=1 ph=1 g=8 dt=f32 relu=none name=dw_tiny" >"$work/net.txt"
  confirm_sources=("--suite $work/gemm.txt" "--suite smoke --dir bwd_d,bwd_w,bwd,train")
  check_sources=("--suite smoke" "--suite $work/net.txt")
  check_backends=cublas,cudnn,cuda,cpu
  gemm_src=(--suite "$work/gemm.txt")
  lstm_src=(--suite "$work/lstm.txt")
  net_src=(--suite "$work/net.txt")
  net2_src=(--suite "$work/net.txt" --batch 2)
  prog_src=(--suite "$work/gemm.txt")
  # Minutes on any development host, far more than its box: at batch 1 and 16 alone the
  # sweep once finished inside its 70 s box (62 s, the 2-core AMD EPYC Zen 3 VM, quiet),
  # and the test that it is cut failed.
  cpu_net_src=(--network "alexnet,mobilenet_v1" --batch "1,16,64,256")
  common=(--benchmark_min_time=0.01)
else
  grep 'name=gemm4096' "$repo/bench/suites/gpu_gemm.txt" >"$work/gemm4096.txt"
  # First, in at most 90 s: the f16/bf16 verdicts (the exact-grid bias fix) and the
  # backward passes, so that a second run of the check still fits the loan.
  confirm_sources=("--suite smoke" "--suite smoke --dir bwd_d,bwd_w,bwd,train")
  check_sources=("--network mobilenet_v1" "--network alexnet" "--network lstm_lm" "--network resnet50"
    "--graph resnet50,mobilenet_v2,alexnet --batch 2 --kernel dense.cublas.lt,add.cuda.default")
  check_backends=cublas,cudnn,cuda
  gemm_src=(--suite gpu_gemm)
  lstm_src=(--suite lstm)
  # MobileNet first: its last layers were never reached in the first GPU run.
  net_src=(--network mobilenet_v1 --batch "1,32")
  net2_src=(--network alexnet --batch "1,32")
  prog_src=(--suite "$work/gemm4096.txt")
  cpu_net_src=(--network "mobilenet_v1,alexnet" --batch "1,32")
  common=(--benchmark_min_time=0.05)
fi

# --- stage 2: confirm --------------------------------------------------------------------
# What the last loan left open, checked first and quickly: every GPU kernel's f16 and bf16
# verdicts and the backward passes on the smoke suite.
stage2() {
  stage_begin 2 confirm 25 30 8 90 || return
  check_stage "${confirm_sources[@]}"
  stage_done
}

# --- stage 3: tests --------------------------------------------------------------------
stage3() {
  stage_begin 3 tests 25 60 15 || return
  test_bin lb_cuda_smoke lb_cuda_smoke 1 9
  test_bin lb_gpu_own_tests lb_gpu_own_tests 3 6
  test_bin lb_gpu_tests lb_gpu_tests 3 3
  local cs
  cs=$(command -v compute-sanitizer)
  if [ -z "$cs" ]; then
    log "stage $stage_no $stage_name: compute-sanitizer not found (PATH, /usr/local/cuda/bin): memcheck not run"
  else
    test_bin "memcheck lb_gpu_own_tests" lb_gpu_own_tests 3 0 "$cs" --tool memcheck --error-exitcode 86 --print-limit 20
    [ "$rc" = 0 ] && log "stage $stage_no $stage_name: memcheck: $(grep -m1 -o 'ERROR SUMMARY.*' "$work/test.out")"
  fi
  stage_done
}

# --- stage 4: checks ---------------------------------------------------------------------
stage4() {
  stage_begin 4 checks 30 60 15 || return
  check_stage "${check_sources[@]}"
  stage_done
}

# check_stage SOURCE...: `layerbench check` of the GPU backends on each source (one or
# more words each), every float dtype, in the stage's box.
check_stage() {
  local sources=("$@")
  local i n=${#sources[@]} src t0 rc tmp=$work/check.out
  for ((i = 0; i < n; i++)); do
    src=${sources[$i]}
    if ! box 1 $((n - i - 1)); then
      mark_cut "check $src not started"
      log "stage $stage_no $stage_name: check $src not started (no time left in the box)"
      continue
    fi
    echo "=== stage $stage_no check --backend $check_backends $src (box $tbox s)" >>"$work/checks.log"
    t0=$(now)
    # shellcheck disable=SC2086  # $src is two words on purpose
    boxed_lb check --backend "$check_backends" $src --dtype f32,tf32,f16,bf16 >"$tmp" 2>&1
    rc=$?
    cat "$tmp" >>"$work/checks.log"
    local what
    what="check $src: $(grep '^check: ' "$tmp" | tail -n 1 | cut -c8-) ($(($(now) - t0)) s)"
    case $rc in
      0) log "stage $stage_no $stage_name: $what" ;;
      124 | 137)
        mark_cut "check $src cut at $tbox s"
        log "stage $stage_no $stage_name: check $src cut at its box ($tbox s): $(grep -c '^passed' "$tmp") passed before"
        ;;
      *)
        fail "stage $stage_no $stage_name: $what: FAILED (exit $rc)"
        grep -E '^(failed|mistrusted) |repro:' "$tmp" | sed -n 1,10p | sed 's/^/    /' | tee -a "$out/gpu-check.log"
        ;;
    esac
    if no_device "$tmp"; then fail "stage $stage_no $stage_name: check $src: nvidia-smi lists a GPU, but layerbench found $(grep -m1 -o 'no usable CUDA device.*' "$tmp")"; fi
  done
}

# --- stage 5: GPU timed runs -------------------------------------------------------------
# Every float dtype the kernels take (f8: cuBLASLt's GEMMs; tf32 and f16 convolutions too).
stage5() {
  stage_begin 5 gpu-runs 70 90 20 || return
  local gpu extra="" common=("${common[@]}")
  gpu=$(kernels gpu)
  [ $dry = 1 ] && extra=,$(kernels cpu) && common+=(--threads "$threads")
  run gpu_gemm 1 6 "${gemm_src[@]}" --kernel "dense.cublas.lt,dense.cuda.07_warptile,dense.cuda.08_mma${extra}" \
    --dtype f32,tf32,f16,bf16,f8
  run lstm 1 5 "${lstm_src[@]}" --kernel "$gpu$extra" --dtype f32,tf32,bf16 --sync spin,blocking
  run networks 3 2 "${net_src[@]}" --kernel "$gpu$extra" --dtype f32,tf32,f16,bf16
  run networks_2 2 0 "${net2_src[@]}" --kernel "$gpu$extra" --dtype f32,tf32,f16,bf16
  stage_done
}

# --- stage 6: if time is left: the CPU side of the same problems, the SGEMM progression -
stage6() {
  stage_begin 6 cpu-vs-gpu 100 30 5 || return
  local cpu last=() common=("${common[@]}")
  cpu=$(kernels cpu)
  [ $dry = 1 ] && last=(--no-self-budget)
  run cpu_gemm 1 6 "${gemm_src[@]}" --kernel "$cpu" --dtype f32,bf16 --threads "$threads"
  run cpu_lstm 1 5 "${lstm_src[@]}" --kernel "$cpu" --dtype f32,bf16 --threads "$threads"
  run sgemm_progression 1 4 "${prog_src[@]}" --kernel "$(kernels progression)" --dtype f32
  run cpu_networks "${last[@]}" 4 0 "${cpu_net_src[@]}" --kernel "$cpu" --dtype f32,bf16 --threads "$threads"
  stage_done
}

log "gpu-check$([ $dry = 1 ] && echo ' --dry-run'): budget $budget s, into $out"
kernels_list=""
if stage1; then
  for n in 2 3 4 5 6; do "stage$n"; done
else
  for n in 2 3 4 5 6; do stage_note[n]="stage $n: skipped (stage 1 stopped the check)"; done
fi
report
summarize >"$out/summary.txt"
log "summary, exit status $status:"
for n in $stages; do log "  ${stage_note[$n]:-stage $n: not reached}"; done
log "files: $(find "$out" -mindepth 1 -printf '%f\n' | sort | tr '\n' ' ')"
exit $status
