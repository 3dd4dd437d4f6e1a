#!/usr/bin/env bash
# scripts/slurm-sweep.sh on a real Slurm cluster of one node on localhost (Debian's
# slurm-wlm and munge): a munge key, munged, slurmctld and slurmd of its own, every file in a
# temporary folder, on free ports. The smoke suite on the ref backend (21 cases, quick
# repetitions) in 4 shards with --wait: exit 0, the 4 array tasks COMPLETED with exit 0, the
# shards partitioning the cases, and merged.json holding every case `layerbench run --list`
# names exactly once, whole, measured on one machine. A shard that fails (exit 1, the shard
# named, no merge) and a merge that fails (its exit status). Then the refusals, exit 2 with one
# line: no sbatch on PATH, --shards 0, no binary, --shard among the run's arguments,
# arguments layerbench refuses, results in DIR already. The cluster is torn down whatever
# happens. SKIPPED (77) where the daemons are not installed (scripts/install-deps.sh installs
# them). One line per broken assertion.
# usage: scripts/tests/slurm_sweep_test.sh BUILD_DIR
set -uo pipefail
build=$(cd "${1:?usage: slurm_sweep_test.sh BUILD_DIR}" && pwd) || exit 2
repo=$(cd "$(dirname "$0")/../.." && pwd)
lb=$build/bench/layerbench
sweep_sh=$repo/scripts/slurm-sweep.sh
export PATH=$PATH:/usr/sbin:/sbin # the daemons, for a PATH without the sbin folders
for cmd in munged mungekey slurmctld slurmd sbatch scontrol sinfo scancel squeue; do
  if ! command -v $cmd >/dev/null; then
    echo "slurm_sweep_test: SKIPPED: $cmd not installed (Debian: slurm-wlm munge)"
    exit 77
  fi
done

tmp=$(mktemp -d)
chmod 755 "$tmp" # munged wants every folder above its socket open to all
daemons=()       # pids, stopped in this order: slurmd, slurmctld, munged
teardown() {
  if [ ${#daemons[@]} -eq 3 ]; then
    # Jobs first, so that no slurmstepd outlives its slurmd.
    scancel --user="$(id -un)" 2>/dev/null
    for _ in $(seq 20); do
      [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.5
    done
  fi
  for pid in ${daemons[@]+"${daemons[@]}"}; do
    kill "$pid" 2>/dev/null
    for _ in $(seq 20); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    kill -9 "$pid" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap teardown EXIT
trap 'exit 1' INT TERM HUP

errors=0
bad() {
  echo "slurm_sweep_test: FAILED: $*"
  errors=$((errors + 1))
}
fail() {
  bad "$*"
  exit 1
}
# Polls a command until it succeeds, for at most $1 seconds.
await() {
  local seconds=$1
  shift
  for _ in $(seq $((seconds * 4))); do
    "$@" && return 0
    sleep 0.25
  done
  return 1
}

# The peaks in their cache before the shards start: shards that started together on a stale
# cache would each measure their own, seconds each.
export LAYERBENCH_PEAKS=${LAYERBENCH_PEAKS:-$tmp/peaks.json}
"$lb" run --problem "dense mb=1 ic=1 oc=1" --backend ref --benchmark_min_time=0.002 --benchmark_repetitions=2 \
  --out "$tmp/peaks-run.json" >"$tmp/peaks-run.log" 2>&1 || fail "layerbench run: $(tail -n 2 "$tmp/peaks-run.log")"

# munge: a key of its own, and munged on a socket of its own.
mkdir -m 700 "$tmp/munge-key" && mkdir -m 755 "$tmp/munge"
mungekey --create --keyfile="$tmp/munge-key/munge.key" || fail "mungekey"
socket=$tmp/munge/munge.socket
munged --foreground --socket="$socket" --key-file="$tmp/munge-key/munge.key" --log-file="$tmp/munge/munged.log" \
  --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munged.seed" 2>/dev/null & # its log says the same
daemons=($!)
await 10 test -S "$socket" || fail "munged did not start: $(tail -n 2 "$tmp/munge/munged.log")"

# Two ports that nothing listens on now (the daemons bind all addresses; the munge key keeps
# any other cluster's messages out).
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s:
    x.bind(("", 0))
print(*(x.getsockname()[1] for x in s))')
mkdir "$tmp/state" "$tmp/spool" "$tmp/log"
cat >"$tmp/slurm.conf" <<CONF
ClusterName=layerbench-test
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=256 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=10 State=UP
CONF
export SLURM_CONF=$tmp/slurm.conf
slurmctld -D -i >"$tmp/log/slurmctld.out" 2>&1 &
ctld_pid=$!
slurmd -D -N localhost >"$tmp/log/slurmd.out" 2>&1 &
daemons=($! "$ctld_pid" "${daemons[@]}")
node_idle() { [ "$(sinfo -h -n localhost -o %T 2>/dev/null)" = idle ]; }
await 30 node_idle || fail "the node is not idle: $(sinfo -h -o '%T %E' 2>&1), $(tail -n 2 "$tmp/log/slurmctld.log")"

# The sweep: 4 shards, waited for.
args=(--suite smoke --backend ref --benchmark_min_time=0.002 --benchmark_repetitions=2)
out=$tmp/sweep
start=$(date +%s)
timeout 150 "$sweep_sh" "$out" --shards 4 --layerbench "$lb" --partition test --time 5 --wait -- "${args[@]}" \
  >"$tmp/sweep.out" 2>&1
rc=$?
echo "slurm_sweep_test: the sweep took $(($(date +%s) - start)) s; its output:"
sed 's/^/  /' "$tmp/sweep.out"
[ $rc = 0 ] || bad "slurm-sweep.sh --wait: exit $rc, expected 0"
array_job=$(sed -n 's/^array job: \([0-9][0-9]*\) .*/\1/p' "$tmp/sweep.out")
merge_job=$(sed -n 's/^merge job: \([0-9][0-9]*\)$/\1/p' "$tmp/sweep.out")
if [ -z "$array_job" ] || [ -z "$merge_job" ]; then fail "no 'array job:' and 'merge job:' lines in the output"; fi
grep -qx "merged file: $out/merged.json" "$tmp/sweep.out" || bad "no 'merged file: $out/merged.json' line"
grep -qx "merge job $merge_job: COMPLETED (exit 0:0)" "$tmp/sweep.out" || bad "the merge job did not COMPLETE"
tasks=$(scontrol show job -o "$array_job" |
  sed -n 's/.* ArrayTaskId=\([^ ]*\) .* JobState=\([^ ]*\) .* ExitCode=\([^ ]*\) .*/\1 \2 \3/p' | sort)
[ "$tasks" = "$(printf '%s COMPLETED 0:0\n' 0 1 2 3)" ] || bad "array tasks (id, state, exit): ${tasks//$'\n'/; }"
sed 's/^/  merge job: /' "$out/logs/merge.out"

# The files: every listed case in one shard and once, whole, in merged.json; one machine.
"$lb" run "${args[@]}" --list >"$tmp/list.txt" 2>&1 || fail "layerbench run --list: $(tail -n 2 "$tmp/list.txt")"
python3 - "$tmp/list.txt" "$out" 4 <<'PY' || errors=$((errors + 1))
import json
import os
import sys

listing, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(listing) as f:
    listed = [line.split("  unsupported: ")[0] for line in f.read().splitlines() if line]
problems = []


def runs(doc):
    return doc["benchmarks"] + doc.get("layerbench_not_measured", [])


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"slurm_sweep_test: FAILED: {path}: {e}")


shards = [load(os.path.join(out, f"shard-{i}.json")) for i in range(n)]
merged = load(os.path.join(out, "merged.json"))
in_shards = [{r["lb_case"] for r in runs(doc)} for doc in shards]
if sorted(c for s in in_shards for c in s) != sorted(set(listed)):
    problems.append("the shards do not partition the listed cases")
count = {}
for r in runs(merged):
    count.setdefault(r["lb_case"], []).append(r)
if len(listed) != len(set(listed)) or set(count) != set(listed):
    problems.append(f"merged.json's cases differ from the {len(listed)} listed: "
                    f"missing {sorted(set(listed) - set(count))[:3]}, extra {sorted(set(count) - set(listed))[:3]}")
for case, case_runs in count.items():
    if len(case_runs) != case_runs[0]["lb_case_runs"]:
        problems.append(f"{case}: {len(case_runs)} run objects, lb_case_runs {case_runs[0]['lb_case_runs']}")
machines = {doc["context"].get("layerbench_machine") for doc in shards + [merged]}
if len(machines) != 1 or not merged["context"].get("layerbench_machine"):
    problems.append(f"the shards and merged.json name machines {sorted(map(str, machines))}, expected one")
sources = merged["context"].get("layerbench_merged_from", "").split()
if sources != [os.path.join(out, f"shard-{i}.json") for i in range(n)]:
    problems.append(f"layerbench_merged_from: {sources}")
for p in problems:
    print(f"slurm_sweep_test: FAILED: {p}")
print(f"slurm_sweep_test: {len(count)} cases in merged.json, in shards of {[len(s) for s in in_shards]}")
sys.exit(1 if problems else 0)
PY

# --wait when a job fails, through a layerbench that exits 3 at the argument LB_FAIL names
# (sbatch passes the environment on): a shard, and the merge never runs (exit 1, the shard
# named); the merge itself (its exit status).
mkdir "$tmp/bin"
cat >"$tmp/bin/layerbench" <<WRAP
#!/usr/bin/env bash
for a in "\$@"; do [ "\$a" != "\$LB_FAIL" ] || exit 3; done
exec "$lb" "\$@"
WRAP
chmod +x "$tmp/bin/layerbench"
tiny=(--problem "dense mb=1 ic=1 oc=1" --backend ref --benchmark_min_time=0.002 --benchmark_repetitions=2)
for fail_at in 1/2 merge; do
  LB_FAIL=$fail_at timeout 60 "$sweep_sh" "$tmp/fails-${fail_at%/*}" --shards 2 --layerbench "$tmp/bin/layerbench" \
    --partition test --time 5 --wait -- "${tiny[@]}" >"$tmp/fails.out" 2>&1
  rc=$?
  if [ $fail_at = merge ]; then
    [ $rc = 3 ] || bad "a merge that exits 3: slurm-sweep.sh --wait exit $rc, expected 3"
    grep -q "merge job [0-9]*: FAILED (exit 3:0)" "$tmp/fails.out" || bad "a merge that exits 3: $(cat "$tmp/fails.out")"
  else
    [ $rc = 1 ] || bad "a shard that exits 3: slurm-sweep.sh --wait exit $rc, expected 1"
    grep -q "shard 1: FAILED (exit 3:0), log .*/logs/shard-1.out" "$tmp/fails.out" ||
      bad "a shard that exits 3 is not named: $(cat "$tmp/fails.out")"
  fi
done

# Refusals: exit 2, one line, nothing submitted.
refused() { # WHAT EXPECTED_TEXT COMMAND...
  local what=$1 text=$2
  shift 2
  "$@" >"$tmp/refused.out" 2>"$tmp/refused.err"
  local rc=$? lines
  lines=$(grep -c . "$tmp/refused.err")
  if [ $rc != 2 ] || [ "$lines" != 1 ] || ! grep -q -- "$text" "$tmp/refused.err"; then
    bad "$what: exit $rc and $lines lines ($(cat "$tmp/refused.err")), expected exit 2 and one line with '$text'"
  fi
}
jobs_before=$(squeue -h -o %i | wc -l)
refused "no sbatch" "sbatch not found" env PATH=/nonexistent /bin/bash "$sweep_sh" "$tmp/r" --shards 2
refused "--shards 0" "--shards '0'" "$sweep_sh" "$tmp/r" --shards 0 --layerbench "$lb"
refused "no binary" "no layerbench binary" "$sweep_sh" "$tmp/r" --shards 2 --layerbench "$tmp/none"
refused "--shard in ARGS" "sets --shard and --out" "$sweep_sh" "$tmp/r" --shards 2 --layerbench "$lb" -- --shard 0/2
refused "bad ARGS" "unknown backend 'bogus'" "$sweep_sh" "$tmp/r" --shards 2 --layerbench "$lb" -- --backend bogus
refused "results in DIR" "holds shard-0's results" "$sweep_sh" "$out" --shards 4 --layerbench "$lb" -- "${args[@]}"
[ "$(squeue -h -o %i | wc -l)" = "$jobs_before" ] || bad "a refused sweep submitted a job"

if [ $errors -gt 0 ]; then
  echo "slurm_sweep_test: $errors failures; slurmctld's last lines:"
  tail -n 5 "$tmp/log/slurmctld.log"
  exit 1
fi
echo "slurm_sweep_test: passed"
