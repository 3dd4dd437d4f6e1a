#!/usr/bin/env bash
# The nightly command (docs/nightly.md): builds layerbench, runs the nightly subset
# (bench/suites/nightly.txt: a dozen layers, every CPU kernel, 1 thread and all cores, 20 to
# 40 repetitions of 0.1 s each, shuffled among the cases, each on a set-up of its own, so
# that a busy stretch or one allocation's luck does not land on a few cases whole; 6-7
# minutes on a 2-core machine), keeps the results gzipped in the history, rebuilds the
# dashboard, exports for other dashboards, and exits 1 with an alert (Markdown: what
# regressed, by how much, the commit range) when the newest run regressed. Cases the
# dashboard flags are measured once more right away (kept beside the run as
# NAME.confirm.json.gz): a regression stands only when that measurement shows it too, so
# one slow moment of a shared machine does not raise an alert. The run probes the
# machine's steadiness (--steadiness 2): the dashboard says when other work shared the cores.
#
#   LB_HISTORY    where the history goes: $LB_HISTORY/<machine>/<date>T<time>_<commit>.json.gz
#                 (default ~/.local/share/layerbench/history: outside the repository; a
#                 checkout of a history branch works as well, docs/nightly.md)
#   LB_SITE       the dashboard's folder (default $LB_BUILD_DIR/dashboard)
#   LB_BUILD_DIR  the build folder (default build)
#   LB_MACHINE    the machine's name in the results (layerbench reads it; default host-<hash>)
#   LB_REPO_URL   https://github.com/OWNER/REPO: the dashboard links the commits between runs
#   LB_COMMIT     the commit written in the file name, for a rerun of an unchanged tree
#                 (default: the commit layerbench recorded)
#   LB_MAX_LOAD   the dashboard's --max-load: busiest start (load average per core) at which
#                 a run's times are judged (default 1)
#   LB_SETTLE     seconds to wait at most, after the build, for the 1-minute load average to
#                 fall to LB_MAX_LOAD per core before the run starts (default 180; 0: no wait)
#   LB_CONFIRM    0: do not measure flagged cases again (default 1)
# Extra arguments go to `layerbench run` and replace the defaults below (e.g. --kernel ...,
# --benchmark_min_time=0.05, --suite FILE).
# Exit status: 0 no regression; 1 regression (alert written, its path printed); 2 the build,
# the run or the dashboard failed.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

build=${LB_BUILD_DIR:-build}
history=${LB_HISTORY:-${XDG_DATA_HOME:-$HOME/.local/share}/layerbench/history}
site=${LB_SITE:-$build/dashboard}
py=/usr/bin/python3
[ -x "$py" ] || py=python3

. scripts/build-folder.sh
lb_build "$build" layerbench >/dev/null

# The build itself raises the 1-minute load average a night's start is judged by (a minute
# to decay): wait for it to settle, then run whatever it is (the dashboard says if busy).
settle=${LB_SETTLE:-180}
waited=0
busy() { awk -v m="${LB_MAX_LOAD:-1}" -v n="$(nproc)" '{ exit !($1 > m * n) }' /proc/loadavg 2>/dev/null; }
while [ "$waited" -lt "$settle" ] && busy; do
  sleep 5
  waited=$((waited + 5))
done
if [ "$waited" -gt 0 ]; then
  echo "nightly: waited $waited s for the load average to settle (now $(cut -d' ' -f1 /proc/loadavg))"
fi

stamp=$(date -u +%Y-%m-%dT%H%M%S)
work=$(mktemp -d "${TMPDIR:-/tmp}/lb-nightly.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The defaults, each left out when the caller gives that flag (layerbench refuses a flag twice).
defaults=(--suite bench/suites/nightly.txt --threads "1,$(nproc)" --repetitions 20,40 --rse 1 --case-time 4
  --benchmark_min_time=0.1 --benchmark_enable_random_interleaving=true --verify-macs 30000000 --steadiness 2)
given() { for a in "${@:2}"; do case $a in "$1" | "$1"=*) return 0 ;; esac; done; return 1; }
args=()
i=0
while [ $i -lt ${#defaults[@]} ]; do
  flag=${defaults[$i]%%=*}
  if [[ ${defaults[$i]} == *=* ]]; then n=1; else n=2; fi
  given "$flag" "$@" || args+=("${defaults[@]:$i:$n}")
  i=$((i + n))
done
"$build/bench/layerbench" run "${args[@]}" --out "$work/run.json" "$@" ||
  { echo "nightly: the run failed" >&2; exit 2; }

# The machine and commit the run recorded name its place in the history.
read -r machine commit machine_name < <("$py" - "$work/run.json" <<'PY'
import os, re, sys
sys.path.insert(0, os.path.join(os.getcwd(), "scripts"))
from lbreport.results import load
run = load(sys.argv[1])
print(re.sub(r"[^A-Za-z0-9._-]+", "_", run.machine), re.sub(r"[^A-Za-z0-9._-]+", "_", run.commit or "unknown"),
      run.machine)
PY
)
commit=${LB_COMMIT:-$commit}
mkdir -p "$history/$machine"
kept="$history/$machine/${stamp}_${commit}.json.gz"
gzip -9 -n -c "$work/run.json" >"$kept"
echo "nightly: kept $kept ($(du -k "$kept" | cut -f1) KiB)"

mkdir -p "$site/export"
scripts/export --format github-action-benchmark --out "$site/export/smaller-is-better.json" "$kept" || true
scripts/export --format github-action-benchmark-bigger --out "$site/export/bigger-is-better.json" "$kept" || true
scripts/export --format bencher --out "$site/export/bencher.json" "$kept" || true

dashboard() {
  status=0
  scripts/dashboard --history "$history" --out "$site" --alert "$site/alert.md" --flagged "$work/flagged.txt" \
    ${LB_REPO_URL:+--repo-url "$LB_REPO_URL"} ${LB_MAX_LOAD:+--max-load "$LB_MAX_LOAD"} || status=$?
}
dashboard
# Flagged cases of this run, measured again with the same settings (a --benchmark_filter of
# their names), then judged once more: the dashboard keeps a verdict the second measurement
# does not show as "cannot judge (not confirmed)".
flagged=()
if [ "$status" = 1 ] && [ -s "$work/flagged.txt" ]; then
  mapfile -t flagged < <(awk -F'\t' -v m="$machine_name" '$1 == m { print $2 }' "$work/flagged.txt")
fi
if [ ${#flagged[@]} -gt 0 ] && [ "${LB_CONFIRM:-1}" != 0 ]; then
  if given --benchmark_filter "$@"; then
    echo "nightly: not measuring the ${#flagged[@]} flagged cases again: --benchmark_filter was given" >&2
  else
    pattern=$(printf '%s\n' "${flagged[@]}" | sed 's/[][\.*^$()+?{}|]/\\&/g' | paste -sd'|')
    echo "nightly: measuring the ${#flagged[@]} flagged cases again"
    if "$build/bench/layerbench" run "${args[@]}" --out "$work/confirm.json" "$@" \
      "--benchmark_filter=^($pattern)/" >"$work/confirm.log" 2>&1; then
      gzip -9 -n -c "$work/confirm.json" >"${kept%.json.gz}.confirm.json.gz"
      dashboard
    else
      echo "nightly: measuring them again failed (the verdicts stand unconfirmed):" >&2
      tail -3 "$work/confirm.log" >&2
    fi
  fi
fi
echo "nightly: $(($(date +%s) - start)) s; dashboard: $site/index.html"
case $status in
  0) exit 0 ;;
  1) echo "nightly: REGRESSION — see $site/alert.md" >&2; exit 1 ;;
  *) echo "nightly: the dashboard could not be built (exit $status)" >&2; exit 2 ;;
esac
