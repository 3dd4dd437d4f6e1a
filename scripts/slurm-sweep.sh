#!/usr/bin/env bash
# A layerbench sweep as a Slurm job array, in one command: array task i of n runs
# `layerbench run ARGS --shard i/n --out DIR/shard-i.json`, and a job that waits for the
# whole array (--dependency=afterok) merges the n shards into DIR/merged.json. DIR and the
# binary must be seen alike by this host and every node (a shared filesystem); relative
# paths in ARGS are taken from the directory the command is run in, as sbatch's jobs are.
#
# usage: scripts/slurm-sweep.sh DIR --shards N [--layerbench PATH] [--partition P] [--time T]
#                               [--sbatch OPTION]... [--wait] [-- RUN ARGS...]
#   --shards      n, the size of the job array
#   --layerbench  the binary (default: build/bench/layerbench of this checkout)
#   --partition, --time
#                 given to sbatch for both jobs; --sbatch gives it any other option, one per
#                 --sbatch (--sbatch --cpus-per-task=2 for a sweep with --threads 1,2)
#   --wait        block until the merge job ends, and exit with its status
#   -- ARGS       the sweep, as for `layerbench run` (--shard and --out are set here)
# Before anything is submitted, ARGS are checked by `layerbench run ARGS --list` on this host.
# DIR gets shard-i.json (and their logs, shard-i.jsonl), merged.json, the two job scripts
# (shard.sbatch, merge.sbatch) and each job's output in logs/.
# The merge is plain when the shards ran on one machine; forced, with a line in
# logs/merge.out saying why, when they name several (a sweep over several nodes).
# `layerbench merge` takes shards whose peaks differ (measured again between them) and
# skips a shard with no cases; any other difference in settings it refuses.
# Prints the two job ids and the merged file's path.
# Exit status: 0 submitted (with --wait: the merge job COMPLETED); 2 bad usage (no sbatch on
# PATH, N < 1, no binary, ARGS that layerbench refuses, results in DIR already and neither
# --resume, --resume-force nor --overwrite in ARGS, sbatch refusing a job); with --wait, the
# merge job's exit status when it failed, 1 when it ended otherwise (a shard failed, so the
# merge never ran; cancelled; out of time).
set -euo pipefail

usage() {
  echo "usage: scripts/slurm-sweep.sh DIR --shards N [--layerbench PATH] [--partition P] [--time T]" \
    "[--sbatch OPTION]... [--wait] [-- RUN ARGS...]" >&2
  exit 2
}
refuse() {
  echo "slurm-sweep: $*" >&2
  exit 2
}

dir="" shards="" lb="" wait=0
sbatch_options=()
run_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --shards | --layerbench | --partition | --time | --sbatch)
      [ $# -ge 2 ] || usage
      case $1 in
        --shards) shards=$2 ;;
        --layerbench) lb=$2 ;;
        --partition) sbatch_options+=("--partition=$2") ;;
        --time) sbatch_options+=("--time=$2") ;;
        --sbatch) sbatch_options+=("$2") ;;
      esac
      shift 2
      ;;
    --wait) wait=1 && shift ;;
    --)
      shift
      run_args=("$@")
      break
      ;;
    -h | --help) usage ;;
    -*) refuse "unknown option '$1' (--help: the usage)" ;;
    *)
      [ -z "$dir" ] || usage
      dir=$1
      shift
      ;;
  esac
done
[ -n "$dir" ] || usage

command -v sbatch >/dev/null || refuse "sbatch not found on PATH (is this a Slurm submit host?)"
[ $wait = 0 ] || command -v scontrol >/dev/null || refuse "--wait: scontrol not found on PATH"
case $shards in '' | *[!0-9]* | 0*) refuse "--shards '$shards': expected a whole number n >= 1" ;; esac
[ -n "$lb" ] || lb=$(cd "$(dirname "$0")/.." && pwd)/build/bench/layerbench
if [ ! -f "$lb" ] || [ ! -x "$lb" ]; then refuse "no layerbench binary at '$lb' (--layerbench PATH)"; fi
lb=$(cd "$(dirname "$lb")" && pwd)/$(basename "$lb")
keep=0 # an option in ARGS that continues or replaces results
for a in ${run_args[@]+"${run_args[@]}"}; do
  case $a in
    --shard | --shard=* | --out | --out=*) refuse "'$a' in the run's arguments: the sweep sets --shard and --out" ;;
    --list) refuse "'--list' in the run's arguments: \`layerbench run ARGS --list\` lists the cases" ;;
    --resume | --resume-force | --overwrite) keep=1 ;;
  esac
done
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
if [ $keep = 0 ]; then
  for ((i = 0; i < shards; i++)); do
    if [ -e "$dir/shard-$i.json" ] || [ -s "$dir/shard-$i.jsonl" ]; then
      refuse "$dir holds shard-$i's results already: another DIR, or --resume or --overwrite after --"
    fi
  done
fi

# The run's arguments as layerbench reads them, before the cluster sees them; --list wants
# no --out, and so none of the options that continue or replace one.
list_args=()
for a in ${run_args[@]+"${run_args[@]}"}; do
  case $a in --resume | --resume-force | --overwrite) ;; *) list_args+=("$a") ;; esac
done
listing=$(mktemp)
trap 'rm -f "$listing" "$listing.err"' EXIT
if ! "$lb" run ${list_args[@]+"${list_args[@]}"} --list >"$listing" 2>"$listing.err"; then
  refuse "layerbench refuses the run's arguments: $(sed -n '$p' "$listing.err")"
fi
cases=$(grep -c . "$listing" || true)
[ "$cases" -gt 0 ] || refuse "the sweep has no cases"
mkdir -p "$dir/logs" 2>/dev/null || refuse "cannot make '$dir/logs'"

# Job scripts, kept in DIR: what each job ran, with every argument quoted as given.
{
  echo '#!/usr/bin/env bash'
  echo "# Array task i of $shards: shard i of the sweep (scripts/slurm-sweep.sh)."
  echo 'set -euo pipefail'
  printf 'exec %q run' "$lb"
  for a in ${run_args[@]+"${run_args[@]}"}; do printf ' %q' "$a"; done
  # shellcheck disable=SC2016 # $SLURM_ARRAY_TASK_ID is the job's, expanded where it runs
  printf ' --shard "$SLURM_ARRAY_TASK_ID/%d" --out %q/"shard-$SLURM_ARRAY_TASK_ID.json"\n' "$shards" "$dir"
} >"$dir/shard.sbatch"
{
  echo '#!/usr/bin/env bash'
  echo "# The $shards shards merged into one file once every array task COMPLETED (scripts/slurm-sweep.sh)."
  echo 'set -euo pipefail'
  printf 'lb=%q dir=%q n=%d\n' "$lb" "$dir" "$shards"
  cat <<'MERGE'
inputs=()
for ((i = 0; i < n; i++)); do inputs+=("$dir/shard-$i.json"); done
# --force where the shards ran on several machines (a shard with no cases names none);
# layerbench's merge refuses any other difference but the peaks and the shard.
force=()
if command -v python3 >/dev/null; then
  why=$(python3 - "${inputs[@]}" <<'PY'
import json
import sys

machines = set()
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            machines.add(json.load(f)["context"]["layerbench_settings"]["machine"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # layerbench's merge names what it cannot read
machines.discard("")
if len(machines) > 1:
    print(f"the shards ran on {len(machines)} machines ({', '.join(sorted(machines))})")
PY
  )
  if [ -n "$why" ]; then
    echo "slurm-sweep: $why: merging with --force"
    force=(--force)
  fi
fi
exec "$lb" merge ${force[@]+"${force[@]}"} "$dir/merged.json" "${inputs[@]}"
MERGE
} >"$dir/merge.sbatch"

# One line of sbatch's refusal, and no half-submitted sweep left behind.
submit() {
  local out
  if ! out=$(sbatch --parsable ${sbatch_options[@]+"${sbatch_options[@]}"} "$@" 2>&1); then
    [ -z "${array_job:-}" ] || scancel "$array_job" 2>/dev/null || true
    refuse "sbatch refused the ${what} job: $(sed -n '$p' <<<"$out")"
  fi
  out=$(sed -n '$p' <<<"$out") # the id, after any warning line
  echo "${out%%;*}"            # "id;cluster" on a federation
}
what=array
array_job=$(submit --job-name=layerbench-shards --array="0-$((shards - 1))" \
  --output="$dir/logs/shard-%a.out" "$dir/shard.sbatch")
what=merge
merge_job=$(submit --job-name=layerbench-merge --dependency="afterok:$array_job" --kill-on-invalid-dep=yes \
  --output="$dir/logs/merge.out" "$dir/merge.sbatch")
echo "array job: $array_job ($shards shards of $cases cases into $dir/shard-I.json, I < $shards; logs in $dir/logs)"
echo "merge job: $merge_job"
echo "merged file: $dir/merged.json"
[ $wait = 1 ] || exit 0

# --wait: the merge job's state until it ends. A job that ended stays known to slurmctld
# for MinJobAge (300 s by default), well beyond one poll.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
while :; do
  if ! record=$(scontrol show job -o "$merge_job" 2>&1); then
    echo "slurm-sweep: merge job $merge_job is no longer known to Slurm: see $dir/logs/merge.out" >&2
    exit 1
  fi
  state=$(field JobState "$record")
  case $state in
    PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | REQUEUED | REQUEUE_HOLD | RESIZING | SIGNALING | STAGE_OUT)
      sleep 2
      ;;
    *) break ;;
  esac
done
exit_code=$(field ExitCode "$record")
echo "merge job $merge_job: $state (exit $exit_code)"
case $state in
  COMPLETED) exit 0 ;;
  FAILED)
    echo "slurm-sweep: the merge failed: $(sed -n '$p' "$dir/logs/merge.out" 2>/dev/null)" >&2
    status=${exit_code%%:*} signal=${exit_code##*:}
    [ "$status" != 0 ] || status=$((128 + signal))
    exit "$status"
    ;;
esac
echo "slurm-sweep: the merge job ended $state ($(field Reason "$record"))" >&2
# The array's tasks that did not complete: why a merge never ran.
while read -r task; do
  task_state=$(field JobState "$task")
  [ "$task_state" = COMPLETED ] && continue
  id=$(field ArrayTaskId "$task")
  echo "slurm-sweep: shard $id: $task_state (exit $(field ExitCode "$task")), log $dir/logs/shard-$id.out" >&2
done < <(scontrol show job -o "$array_job" 2>/dev/null || true)
exit 1
