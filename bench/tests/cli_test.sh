#!/usr/bin/env bash
# The CLI as a user meets it: exit codes, one-line errors that name the token or
# file:line, nothing on stdout when the input is bad, and the bundled data.
# usage: cli_test.sh path/to/layerbench
set -u
lb=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
passes=0

# expect CODE PATTERN -- command...: exit code CODE, PATTERN (grep -E) in stdout+stderr.
# For CODE 2 also: stderr is one line and stdout is empty.
expect() {
  local code=$1 pattern=$2
  shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  local why=""
  [ "$got" = "$code" ] || why="exit $got, expected $code"
  if [ -z "$why" ] && ! cat "$tmp/out" "$tmp/err" | grep -qE -- "$pattern"; then why="no match for /$pattern/"; fi
  if [ -z "$why" ] && [ "$code" = 2 ]; then
    [ "$(wc -l <"$tmp/err")" = 1 ] || why="stderr has $(wc -l <"$tmp/err") lines, expected 1"
    [ -s "$tmp/out" ] && why="stdout is not empty on bad input"
  fi
  if [ -n "$why" ]; then
    failures=$((failures + 1))
    echo "FAIL: $* -> $why"
    sed 's/^/    /' "$tmp/out" "$tmp/err" | head -20
  else
    passes=$((passes + 1))
  fi
}

# count N PATTERN: the last command's stdout has exactly N lines matching PATTERN.
count() {
  local got
  got=$(grep -cE -- "$2" "$tmp/out")
  if [ "$got" = "$1" ]; then
    passes=$((passes + 1))
  else
    failures=$((failures + 1))
    echo "FAIL: $got lines match /$2/, expected $1"
  fi
}

# Good input.
expect 0 '^usage: layerbench' -- "$lb" help
expect 0 'dense\.ref\.naive .*f32 tf32 f16 bf16 i8 f8' -- "$lb" list
expect 0 'total .* 61,100,840 .* 714\.19' -- "$lb" analyze alexnet
expect 0 'total .* 4,221,032 .* 568\.74' -- "$lb" analyze mobilenet_v1
expect 0 'memory \(training, sgd, by liveness\)' -- "$lb" analyze lstm_lm --batch 8 --training
# Networks as graphs: ResNet-50's projection shortcuts and MobileNet v2's inverted residuals,
# the papers' parameter counts; the memory at the moment it peaks; every network listed.
expect 0 'total .* 25,557,032 .* 4089\.18' -- "$lb" analyze resnet50
expect 0 'total .* 3,504,872 .* 300\.77' -- "$lb" analyze mobilenet_v2
expect 0 'memory \(inference, by liveness\): .* at their peak \(s1b1_add\)' -- "$lb" analyze resnet50
expect 0 '"networks": \[' -- "$lb" list --json
expect 0 '^networks: .*resnet50' -- "$lb" list
# One training-memory formula: optimizer state in f32 copies, f32 master weights under bf16,
# the LSTM's saved gates and cell states (50 steps x 64 x 5 x 512 x 4 bytes = 32.768 MB).
expect 0 'adam state \(f32\) 0\.13 \+ f32 master weights 0\.07 \+ kept for the backward' -- "$lb" analyze "dense mb=8 ic=128 oc=128" --dtype bf16 --training --optimizer adam
expect 0 'kept for the backward beyond input and output MB +32\.768' -- "$lb" analyze "lstm mb=64 t=50 ic=512 hc=512" --training
expect 2 "optimizer 'lamb': expected sgd, momentum or adam" -- "$lb" analyze alexnet --training --optimizer lamb
expect 2 'analyze: --optimizer is a training step' -- "$lb" analyze alexnet --optimizer adam
expect 0 '"params": 61100840' -- "$lb" analyze alexnet --json
expect 0 'MACs +115,605,504' -- "$lb" analyze "conv2d mb=1 ic=64 ih=56 iw=56 oc=64 kh=3 kw=3 ph=1"
expect 0 'parameter MB +2\.004' -- "$lb" analyze "dense mb=1 ic=1000 oc=1000" --dtype bf16
expect 0 'check: 25 passed, 0 failed, 0 mistrusted, 0 unsupported, 0 out_of_memory, 0 not_run' -- "$lb" check --backend ref
expect 0 'check: 1 passed, 0 failed' -- "$lb" check --backend ref --problem "dense mb=3 ic=5 oc=7 relu=fused" --seed 9
expect 0 'check: [0-9]+ passed, 0 failed' -- "$lb" check --problem "dense mb=3 ic=5 oc=7 relu=fused" --seed 9
expect 0 'check: 2 passed, 0 failed' -- "$lb" check --network lstm_lm --batch 2 --dtype f32,bf16 --kernel dense.ref.naive
expect 0 'unsupported +lstm\.ref\.naive' -- "$lb" check --problem "lstm mb=1 t=2 ic=3 hc=4 dt=i8"
# Passes (dir=): a case per pass, named for it; an LSTM's missing ones left out of --dir; a
# pass a kernel does not compute is unsupported with its reason, not run as the forward.
expect 0 '^dense\.ref\.naive/f32/mb4ic8oc8-dir_bwd_w/threads:1$' -- "$lb" run --problem "dense mb=4 ic=8 oc=8" --backend ref --dir training --list
count 4 '^dense\.ref\.naive/'
expect 0 '^conv2d\.cpu\.depthwise/f32/mb1ic4ih5iw5oc4kh3kw3sh1ph1g4-dir_train/threads:1  unsupported: cpu: dir=train not computed \(fwd only\)$' -- "$lb" run --problem "conv2d mb=1 ic=4 ih=5 iw=5 oc=4 kh=3 kw=3 ph=1 g=4" --kernel conv2d.cpu.depthwise --dir training --list
count 4 '^conv2d\.cpu\.depthwise/'
expect 0 'diff_src: error at most' -- "$lb" check --backend ref --problem "dense mb=3 ic=5 oc=7 dir=bwd_d"
expect 0 'check: 1 passed, 0 failed, 0 mistrusted, 0 unsupported' -- "$lb" check --backend ref --problem "dense mb=3 ic=5 oc=7 dir=bwd_d"
expect 0 'check: 12 passed, 0 failed, 0 mistrusted, 0 unsupported' -- "$lb" check --backend ref --problem "conv2d mb=2 ic=4 ih=6 iw=6 oc=4 kh=3 kw=3 ph=1 g=2 relu=inplace" --dir all --dtype f32,bf16
expect 0 'cpu: dir=bwd not computed \(fwd only\)' -- "$lb" check --problem "conv2d mb=1 ic=4 ih=5 iw=5 oc=4 kh=3 kw=3 ph=1 g=4 dir=bwd" --kernel conv2d.cpu.depthwise
# The LSTM's one pass back through time: all six gradients checked on the whole batch.
expect 0 'check: 1 passed, 0 failed' -- "$lb" check --problem "lstm mb=2 t=3 ic=3 hc=4 l=2 dir=bwd relu=inplace" --backend ref
expect 0 'check: 1 passed, 0 failed' -- "$lb" check --problem "lstm mb=2 t=3 ic=3 hc=4 l=2 dir=bwd relu=inplace" --backend cpu
expect 0 'ref: dt=i8 not supported \(f32, tf32, f16, bf16 only\): no gradients in integer or f8 arithmetic are defined' -- "$lb" check --backend ref --problem "dense mb=3 ic=5 oc=7 dt=i8 dir=bwd_w"

# Bad input: one line, exit 2, nothing on stdout.
expect 2 'expected a command' -- "$lb"
expect 2 "unknown command 'frobnicate'" -- "$lb" frobnicate
expect 2 "unknown network 'resnet9000' \(available: alexnet" -- "$lb" analyze resnet9000
expect 2 "unknown suite 'nope' \(available: " -- "$lb" check --suite nope
expect 2 "unknown network 'resnet9000' \(available: alexnet" -- "$lb" check --graph resnet9000
expect 2 "unknown backend 'tpu' \(built in: " -- "$lb" run --graph alexnet --backend tpu
expect 2 'check: --batch auto is for run --graph' -- "$lb" check --graph alexnet --batch auto
expect 2 '--memory-limit -1: expected a number such as 8 \(GiB\)' -- "$lb" run --graph alexnet --batch auto --memory-limit -1
expect 2 '--kernel dense.nope.x: no such kernel' -- "$lb" check --graph alexnet --kernel dense.nope.x
expect 2 "unknown flag '--bacth'" -- "$lb" run --graph alexnet --bacth 4
# A batch that cannot fit is out_of_memory before anything is allocated, and the run goes on.
expect 0 'out_of_memory: out of memory: needs at least .* GiB by liveness, 0\.10 GiB available' -- "$lb" run --graph alexnet --backend ref --batch 64 --memory-limit 0.1
expect 2 "unknown backend 'tpu' \(built in: ref" -- "$lb" check --backend tpu
expect 2 "dtype 'f33': expected one of" -- "$lb" check --dtype f32,f33
expect 2 "unknown flag '--bacth'" -- "$lb" analyze alexnet --bacth 4
expect 2 '--batch 0: expected an integer >= 1' -- "$lb" analyze alexnet --batch 0
expect 2 "'conv3d': unknown op" -- "$lb" analyze "conv3d mb=1 ic=3"
expect 2 'conv2d: kh=0: must be >= 1' -- "$lb" check --problem "conv2d mb=1 ic=3 ih=8 iw=8 oc=4 kh=0 kw=3"
expect 2 "lstm: dir=bwd_d: an LSTM's data and weight gradients come out of one pass back through time; use dir=bwd" -- "$lb" check --problem "lstm mb=1 t=2 ic=3 hc=4 dir=bwd_d"
expect 2 'dense: dir=back: expected one of fwd fwd_train bwd_d bwd_w bwd train' -- "$lb" check --problem "dense mb=1 ic=3 oc=4 dir=back"
expect 2 '--dir bwd_x: expected fwd fwd_train bwd_d bwd_w bwd train, training or all' -- "$lb" run --dir bwd_x --list
expect 2 'analyze: dir=bwd_w: the model is of the forward pass' -- "$lb" analyze "dense mb=1 ic=3 oc=4 dir=bwd_w"
printf 'dense mb=1 ic=1 oc=1\n# fine so far\nconv2d mb=1 ic=3 ih=8 iw=8 oc=4 kh=3 kw=3 g=2\n' >"$tmp/bad.txt"
expect 2 "bad\.txt:3: conv2d: g=2: must divide ic=3 and oc=4" -- "$lb" check --suite "$tmp/bad.txt"
printf 'input c=3 h=8 w=8\nc1 conv2d oc=8 kh=3 kw=3\nfc dense oc=4\n' >"$tmp/net.txt"
expect 2 "net\.txt:3: dense: needs a vector or sequence input, the previous layer gives 8x6x6" -- "$lb" analyze "$tmp/net.txt"
expect 2 "give one of --suite, --network, --problem" -- "$lb" check --suite smoke --network alexnet

# run and merge refuse bad input before any file is touched (the results files, faked
# here, stay byte-identical; no sweep runs).
expect 2 "--shard 1/2/3: expected i/n" -- "$lb" run --shard 1/2/3 --list
expect 2 "--noisy-cv -1: expected a number" -- "$lb" run --noisy-cv -1 --list
expect 2 "--noisy-cv nan: expected a number" -- "$lb" run --noisy-cv nan --list
expect 2 "--out '': expected a path ending in \.json" -- "$lb" run --out ''
expect 2 "--benchmark_repetitions=-1: expected an integer >= 1" -- "$lb" run --benchmark_repetitions=-1
expect 2 "--benchmark_repetitions=0: expected an integer >= 1" -- "$lb" run --benchmark_repetitions=0
expect 2 "--benchmark_format=xml: expected console, json or csv" -- "$lb" run --benchmark_format=xml
expect 2 "--benchmark_out: not supported" -- "$lb" run --benchmark_out=x.json
expect 2 "--benchmark_list_tests: not supported" -- "$lb" run --benchmark_list_tests=true
expect 2 "--benchmark_report_aggregates_only: not supported" -- "$lb" run --benchmark_report_aggregates_only=true
expect 2 "--benchmark_min_tme=0.05: unrecognized Google Benchmark flag" -- "$lb" run --benchmark_min_tme=0.05 --list
expect 2 "--benchmark_min_time=abc: rejected by Google Benchmark: .*double" -- "$lb" run --benchmark_min_time=abc --list
# --benchmark_filter narrows the case list itself (--list, the total, the warm-up); a filter
# that is no regular expression, or matches no case, and a sweep with no case are errors.
one='dense mb=4 ic=8 oc=8'
"$lb" run --problem "$one" --backend ref,cpu --benchmark_filter='-ref\.naive/' --list >"$tmp/filtered" 2>&1
if grep -q 'ref\.naive' "$tmp/filtered" || ! grep -q . "$tmp/filtered"; then
  failures=$((failures + 1))
  echo "FAIL: run --benchmark_filter='-ref\.naive/' --list:"
  sed 's/^/    /' "$tmp/filtered"
fi
expect 0 '^dense\.ref\.naive/f32/mb4ic8oc8/threads:1$' -- "$lb" run --problem "$one" --backend ref,cpu --benchmark_filter='^dense.ref.naive/.*manual_time$' --list
expect 2 "--benchmark_filter=\(: not a regular expression" -- "$lb" run --problem "$one" --benchmark_filter='(' --list
expect 2 "--benchmark_filter=nomatch: matches none of the sweep's [0-9]+ cases" -- "$lb" run --problem "$one" --benchmark_filter=nomatch
expect 2 "run: no cases: the kernels selected \(--backend, --kernel\) take none" -- "$lb" run --problem "$one" --kernel conv2d.ref.naive
expect 2 "--resume and --overwrite exclude each other" -- "$lb" run --out "$tmp/r.json" --resume --overwrite
printf '{"context": {}, "benchmarks": []}\n' >"$tmp/r.json"
printf '{"layerbench_settings": {"seed": "1"}}\n' >"$tmp/r.jsonl"
cp "$tmp/r.json" "$tmp/r.json.before" && cp "$tmp/r.jsonl" "$tmp/r.jsonl.before"
expect 2 "r\.json already holds results: --resume continues the run, --overwrite replaces it" -- \
  "$lb" run --suite smoke --backend ref --out "$tmp/r.json"
expect 2 "unrecognized Google Benchmark flag" -- "$lb" run --out "$tmp/r.json" --resume --benchmark_min_tme=1
expect 2 "--benchmark_format=xml" -- "$lb" run --out "$tmp/r.json" --overwrite --benchmark_format=xml
expect 2 "unknown flag '--sed'" -- "$lb" run --out "$tmp/r.json" --resume --sed 2
if cmp -s "$tmp/r.json" "$tmp/r.json.before" && cmp -s "$tmp/r.jsonl" "$tmp/r.jsonl.before"; then
  passes=$((passes + 1))
else
  failures=$((failures + 1))
  echo "FAIL: a rejected flag changed the results files"
fi
mkdir -p "$tmp/dir.json"
expect 2 "is a directory" -- "$lb" run --suite smoke --backend ref --out "$tmp/dir.json"
expect 2 "merge: '.*' is a directory" -- "$lb" merge "$tmp/m.json" "$tmp/dir.json"
printf '{"context": {}, "benchmarks": {"a": 1}}' >"$tmp/object.json"
expect 2 'no "benchmarks" array' -- "$lb" merge "$tmp/m.json" "$tmp/object.json"
printf '{"benchmarks": [' >"$tmp/torn.json"
expect 2 "torn\.json' is not JSON" -- "$lb" merge "$tmp/m.json" "$tmp/torn.json"
printf '{"benchmarks": [1]}' >"$tmp/number.json"
expect 2 "benchmark 0 is not a run object" -- "$lb" merge "$tmp/m.json" "$tmp/number.json"

# --budget: no case starts once the budget is spent (here at once: the peaks and the warm-up
# take longer); the rest are written as not_run, and --resume runs them.
quick=(run --suite smoke --backend ref --benchmark_min_time=0.002 --case-time 0.02 --out "$tmp/b.json")
expect 2 "^layerbench: --budget -1: expected a number" -- "$lb" "${quick[@]}" --budget -1
expect 0 "not run: time budget \(--budget 0\.001 s spent\)" -- "$lb" "${quick[@]}" --budget 0.001
not_run() {
  /usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(len(d["benchmarks"]),
    sum(r["status"] == "not_run" and r["reason"].startswith("not run: time budget") for r in d["layerbench_not_measured"]))' "$1"
}
read -r measured skipped < <(not_run "$tmp/b.json" 2>/dev/null || echo "none none")
if [ "$measured" = 0 ] && [ "$skipped" -gt 0 ] 2>/dev/null; then passes=$((passes + 1)); else
  failures=$((failures + 1))
  echo "FAIL: --budget 0.001: $measured measured entries, $skipped 'not run: time budget' (expected 0 and > 0)"
fi
expect 0 "resume: [0-9]+ cases already in .*, [1-9][0-9]* to run" -- "$lb" "${quick[@]}" --resume
read -r measured skipped < <(not_run "$tmp/b.json" 2>/dev/null || echo "none none")
if [ "$measured" -gt 0 ] 2>/dev/null && [ "$skipped" = 0 ]; then passes=$((passes + 1)); else
  failures=$((failures + 1))
  echo "FAIL: --resume after --budget: $measured measured entries, $skipped still not run"
fi

# --benchmark_enable_random_interleaving: a value Google Benchmark reads as a switch, and no
# --budget beside it (every case starts early).
expect 2 "^layerbench: --benchmark_enable_random_interleaving=maybe: expected true or false" -- \
  "$lb" "${quick[@]}" --benchmark_enable_random_interleaving=maybe
expect 2 "^layerbench: --budget: not with --benchmark_enable_random_interleaving" -- \
  "$lb" "${quick[@]}" --benchmark_enable_random_interleaving --budget 5

# --steadiness: the machine probed before the cases, the numbers in the context.
steady=(run --problem "dense mb=1 ic=8 oc=8" --backend ref --benchmark_min_time=0.002 --case-time 0.02)
expect 2 "^layerbench: --steadiness -1: expected a number" -- "$lb" "${steady[@]}" --steadiness -1
expect 2 "^layerbench: --steadiness 61: at most 60 seconds" -- "$lb" "${steady[@]}" --steadiness 61
expect 0 "steadiness over the run: one core's FMA throughput varied [0-9.]+ %.*its clock [0-9.]+ % \([0-9]+ windows\)" -- \
  "$lb" "${steady[@]}" --steadiness 0.2 --out "$tmp/s.json"
if /usr/bin/python3 -c 'import json, sys; s = json.loads(json.load(open(sys.argv[1]))["context"]["layerbench_steadiness"])
sys.exit(not (s["windows"] >= 8 and s["fma_spread"] >= 0 and s["clock_spread"] >= 0 and s["fma_slowest"] >= 1 >= s["fma_fastest"] > 0))' \
  "$tmp/s.json"; then passes=$((passes + 1)); else
  failures=$((failures + 1))
  echo "FAIL: --steadiness 0.2: no plausible layerbench_steadiness in the context"
fi

echo "cli: $passes passed, $failures failed"
[ "$failures" = 0 ]
