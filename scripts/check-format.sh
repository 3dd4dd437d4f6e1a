#!/usr/bin/env bash
# Every C++ and CUDA file of the repository in .clang-format's layout: clang-format
# --dry-run -Werror over the files git tracks (and new ones it does not ignore), or every
# such file below the source tree where it is not a git checkout. ctest runs it (label unit).
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.h' '*.cu' '*.cuh' |
    while read -r f; do [ -f "$f" ] && echo "$f"; done)
else
  mapfile -t files < <(find bench kernels cuda scripts \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -type f)
fi
clang-format --dry-run -Werror "${files[@]}"
echo "format: ${#files[@]} files in .clang-format's layout"

# Under `set -o pipefail`, `cmd | head` fails the pipeline by chance: head exits after its
# lines, and cmd, still writing, dies of SIGPIPE (exit 141; CI's test command once did, in
# test.sh's list of the slowest tests). `sed -n 1,Np` reads to the end and does not.
mapfile -t shells < <(grep -rl --include='*.sh' 'pipefail' scripts .ci 2>/dev/null || true)
if [ ${#shells[@]} -gt 0 ] && grep -nE '\|[[:space:]]*head([[:space:]]|$)' "${shells[@]}"; then
  echo "format: a pipe into head in a pipefail script (above): use sed -n 1,Np" >&2
  exit 1
fi
