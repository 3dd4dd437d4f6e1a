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

# Good input.
expect 0 '^usage: layerbench' -- "$lb" help
expect 0 'dense\.ref\.naive .*f32 tf32 f16 bf16 i8 f8' -- "$lb" list
expect 0 'total .* 61,100,840 .* 714\.19' -- "$lb" analyze alexnet
expect 0 'total .* 4,221,032 .* 568\.74' -- "$lb" analyze mobilenet_v1
expect 0 'memory \(training\)' -- "$lb" analyze lstm_lm --batch 8 --training
expect 0 '"params": 61100840' -- "$lb" analyze alexnet --json
expect 0 'MACs +115,605,504' -- "$lb" analyze "conv2d mb=1 ic=64 ih=56 iw=56 oc=64 kh=3 kw=3 ph=1"
expect 0 'parameter MB +2\.004' -- "$lb" analyze "dense mb=1 ic=1000 oc=1000" --dtype bf16
expect 0 'check: 21 passed, 0 failed, 0 mistrusted, 0 unsupported, 0 out_of_memory, 0 not_run' -- "$lb" check --backend ref
expect 0 'check: 1 passed, 0 failed' -- "$lb" check --backend ref --problem "dense mb=3 ic=5 oc=7 relu=fused" --seed 9
expect 0 'check: [0-9]+ passed, 0 failed' -- "$lb" check --problem "dense mb=3 ic=5 oc=7 relu=fused" --seed 9
expect 0 'check: 2 passed, 0 failed' -- "$lb" check --network lstm_lm --batch 2 --dtype f32,bf16 --kernel dense.ref.naive
expect 0 'unsupported +lstm\.ref\.naive' -- "$lb" check --problem "lstm mb=1 t=2 ic=3 hc=4 dt=i8"

# Bad input: one line, exit 2, nothing on stdout.
expect 2 'expected a command' -- "$lb"
expect 2 "unknown command 'frobnicate'" -- "$lb" frobnicate
expect 2 "unknown network 'resnet9000' \(available: alexnet" -- "$lb" analyze resnet9000
expect 2 "unknown suite 'nope' \(available: " -- "$lb" check --suite nope
expect 2 "unknown backend 'tpu' \(built in: ref" -- "$lb" check --backend tpu
expect 2 "dtype 'f33': expected one of" -- "$lb" check --dtype f32,f33
expect 2 "unknown flag '--bacth'" -- "$lb" analyze alexnet --bacth 4
expect 2 '--batch 0: expected an integer >= 1' -- "$lb" analyze alexnet --batch 0
expect 2 "'conv3d': unknown op" -- "$lb" analyze "conv3d mb=1 ic=3"
expect 2 'conv2d: kh=0: must be >= 1' -- "$lb" check --problem "conv2d mb=1 ic=3 ih=8 iw=8 oc=4 kh=0 kw=3"
printf 'dense mb=1 ic=1 oc=1\n# fine so far\nconv2d mb=1 ic=3 ih=8 iw=8 oc=4 kh=3 kw=3 g=2\n' >"$tmp/bad.txt"
expect 2 "bad\.txt:3: conv2d: g=2: must divide ic=3 and oc=4" -- "$lb" check --suite "$tmp/bad.txt"
printf 'input c=3 h=8 w=8\nc1 conv2d oc=8 kh=3 kw=3\nfc dense oc=4\n' >"$tmp/net.txt"
expect 2 "net\.txt:3: dense: needs a vector or sequence input, the previous layer gives 8x6x6" -- "$lb" analyze "$tmp/net.txt"
expect 2 "give one of --suite, --network, --problem" -- "$lb" check --suite smoke --network alexnet

echo "cli: $passes passed, $failures failed"
[ "$failures" = 0 ]
