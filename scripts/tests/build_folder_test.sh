#!/usr/bin/env bash
# A build folder the user configured with a generator other than the scripts' default is
# built as it is (scripts/build-folder.sh): scripts/bench.sh builds layerbench in a folder
# configured with Unix Makefiles where Ninja is installed (Ninja where it is not) and lists
# a sweep from it; the folder is not configured again (its cache unchanged, no second
# generator's files, its options kept). Then the same script in a new folder configures
# it with the scripts' default. The build is small: no tests, no oneDNN, Eigen, CUDA or cpu backend,
# and no optimisation (build type None), so that the test costs a minute, not ten.
#   build_folder_test.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lb-build-folder-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "build folder test: FAIL: $*" >&2; exit 1; }

if command -v ninja >/dev/null 2>&1; then
  default=Ninja default_file=build.ninja other="Unix Makefiles"
else  # CMake's default is the scripts' too: only a new folder to test
  default="Unix Makefiles" default_file=Makefile other=""
fi
small=(-DCMAKE_BUILD_TYPE=None -DBUILD_TESTING=OFF -DLB_WITH_ONEDNN=OFF -DLB_WITH_EIGEN=OFF -DLB_WITH_CUDA=OFF -DLB_WITH_CPU=OFF)
list=(--list --problem "dense mb=2 ic=16 oc=8 dt=f32" --backend ref --threads 1)  # bench.sh's --batch 1,16,32 replaces mb=2
generator_of() { sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$1/CMakeCache.txt"; }

if [ -n "$other" ]; then
  mine=$tmp/mine
  cmake -S "$repo" -B "$mine" -G "$other" "${small[@]}" >/dev/null
  before=$(md5sum <"$mine/CMakeCache.txt")
  LB_BUILD_DIR=$mine "$repo/scripts/bench.sh" "${list[@]}" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "bench.sh exited $?"; }
  grep -q "^dense.ref.naive/f32/mb16ic16oc8/threads:1$" "$tmp/log" || { cat "$tmp/log"; fail "bench.sh listed no case"; }
  [ -x "$mine/bench/layerbench" ] || fail "bench.sh did not build layerbench in $mine"
  [ "$(generator_of "$mine")" = "$other" ] || fail "the generator became '$(generator_of "$mine")'"
  [ "$(md5sum <"$mine/CMakeCache.txt")" = "$before" ] || fail "the folder was configured again (its cache changed)"
  [ ! -e "$mine/$default_file" ] || fail "$default files written beside $other's"
  grep -q '^LB_WITH_EIGEN:STRING=OFF$' "$mine/CMakeCache.txt" || fail "the folder's options were not kept"
  echo "bench.sh built in a folder configured with $other, as it was"
fi

# A new folder: the scripts' default generator. LB_CMAKE_ARGS-like options come from the
# caller of the helper; here it is given the small build's.
new=$tmp/new
(cd "$repo" && . scripts/build-folder.sh && lb_configure "$new" "${small[@]}")
[ "$(generator_of "$new")" = "$default" ] || fail "a new folder got '$(generator_of "$new")', not $default"
[ -f "$new/$default_file" ] || fail "a new folder has no $default_file"
echo "a new folder is configured with $default"
echo "build folder: 1 passed, 0 failed"
