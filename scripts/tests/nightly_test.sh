#!/usr/bin/env bash
# scripts/nightly.sh end to end, small: two nights of two kernels into a temporary history
# (the second under another commit name, LB_COMMIT, as the tree did not change), then checks
# the history's names, that the dashboard shows both nights and exits 0 (too little history
# to judge is "cannot judge", never an alert), and that the exports were written. Then three
# made-up earlier nights in which one case took a fifth of its time: the next night flags it, measures
# it again (NAME.confirm.json.gz), and exits 1 with an alert that shows both measurements. The
# case is the first night's steadiest (the smallest cv of its repetitions): on the 2-core Zen 5 VM
# alexnet_fc7 at batch 1 took 1.6-2.0 ms or 3.9 ms from one repetition to the next, and a history
# made from the slow mode let the second measurement, in the fast one, fall inside the band.
#   nightly_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lb-nightly-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$(dirname "$0")/../.."
fail() { echo "nightly test: FAIL: $*" >&2; exit 1; }
small=(--kernel dense.onednn.default --benchmark_min_time=0.002 --case-time 0.05)
for commit in aaaaaaaaaaaa bbbbbbbbbbbb; do
  LB_SETTLE=0 LB_BUILD_DIR=$build LB_HISTORY=$tmp/history LB_SITE=$tmp/site LB_MACHINE=test-machine LB_COMMIT=$commit \
    scripts/nightly.sh "${small[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "nightly.sh exited $?"; }
  sleep 1  # distinct time stamps
done
files=$(cd "$tmp/history" && ls */*.json.gz)
echo "$files"
[ "$(echo "$files" | wc -l)" = 2 ] || fail "expected two nights, got: $files"
echo "$files" | grep -Eq '^test-machine/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{6}_aaaaaaaaaaaa\.json\.gz$' || fail "names: $files"
grep -q '"name":"test-machine"' "$tmp/site/data/index.js" || fail "the dashboard does not show test-machine"
[ ! -e "$tmp/site/alert.md" ] || fail "an alert after two nights"
for f in smaller-is-better bigger-is-better bencher; do
  [ -s "$tmp/site/export/$f.json" ] || fail "no export $f.json"
done

# Three earlier nights (copies of the first) with one case 5x as fast: tonight it is 5x slower.
py=/usr/bin/python3
case=$("$py" - "$tmp/history" <<'PY'
import datetime, glob, gzip, json, sys
first = sorted(glob.glob(sys.argv[1] + "/test-machine/*.json.gz"))[0]
with gzip.open(first, "rt") as f:
    doc = json.load(f)
cvs = {r["lb_case"]: r["real_time"] for r in doc["benchmarks"]
       if r.get("lb_case") and r.get("run_type") == "aggregate" and r.get("aggregate_name") == "cv"}
case = min(sorted(cvs), key=cvs.get)
for r in doc["benchmarks"]:
    if r.get("lb_case") == case and r.get("aggregate_name") != "cv" and isinstance(r.get("real_time"), (int, float)):
        r["real_time"] *= 0.2
date = datetime.datetime.fromisoformat(doc["context"]["date"])
for d in (3, 4, 5):
    doc["context"]["date"] = (date - datetime.timedelta(days=d)).isoformat()
    doc["context"]["layerbench_git_commit"] = f"{d}" * 12
    with gzip.open(f"{sys.argv[1]}/test-machine/2000-01-0{d}T000000_{str(d) * 12}.json.gz", "wt") as f:
        json.dump(doc, f)
print(case)
PY
)
status=0
LB_SETTLE=0 LB_BUILD_DIR=$build LB_HISTORY=$tmp/history LB_SITE=$tmp/site LB_MACHINE=test-machine LB_COMMIT=cccccccccccc \
  LB_MAX_LOAD=1000 scripts/nightly.sh "${small[@]}" >"$tmp/log" 2>&1 || status=$?
cat "$tmp/log"
[ "$status" = 1 ] || fail "a case 5x as slow as three nights before: nightly.sh exited $status, not 1"
grep -Eq "measuring the [0-9]+ flagged cases again" "$tmp/log" || fail "the flagged case was not measured again"
ls "$tmp/history/test-machine/"*_cccccccccccc.confirm.json.gz >/dev/null || fail "no .confirm file beside the night"
grep -qF "| $case | time |" "$tmp/site/alert.md" || fail "the alert does not name $case"
grep -F "| $case | time |" "$tmp/site/alert.md" | grep -Eq '\| [0-9]+\.[0-9]{3} \| [0-9.]+ µs \| [0-9]+ \|$' ||
  fail "the alert has no second measurement for $case: $(grep -F "$case" "$tmp/site/alert.md")"
echo "nightly test: ok"
