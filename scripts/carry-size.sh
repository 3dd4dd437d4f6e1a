#!/usr/bin/env bash
# What a device call would carry to the GPU machine: the working tree's tracked files and
# its untracked files that git does not ignore, plus the ignored PATHs named (the device
# tool's `carry`, e.g. .gpu-bundle). Prints the total in MiB; exit 1 above the limit, so
# that scripts/gpu-bundle.sh fails here, before a device minute is spent on a carry the
# device tool would refuse (64 MiB in all; 60 by default leaves room for the results).
# usage: scripts/carry-size.sh [--limit MIB] [PATH...]
set -euo pipefail
cd "$(dirname "$0")/.."
limit=60
if [ "${1:-}" = --limit ]; then
  limit=${2:?usage: carry-size.sh [--limit MIB] [PATH...]}
  shift 2
fi
case $limit in '' | *[!0-9]*)
  echo "carry-size: --limit takes whole MiB, not '$limit'" >&2
  exit 2
  ;;
esac
tree=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
extra=0
for path in "$@"; do
  if [ ! -e "$path" ]; then
    echo "carry-size: $path does not exist" >&2
    exit 2
  fi
  extra=$((extra + $(du -sb "$path" | cut -f1)))
done
total=$((tree + extra))
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
echo "carry-size: $(mib "$total") MiB (tree $(mib "$tree") MiB${*:+, $* $(mib "$extra") MiB}), limit $limit MiB"
if [ "$total" -gt $((limit * 1048576)) ]; then
  echo "carry-size: over the limit: the device tool carries 64 MiB in all; make the bundle smaller" >&2
  exit 1
fi
