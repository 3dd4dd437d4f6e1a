#!/usr/bin/env bash
# The test command: installs what is missing, configures, builds and runs every test,
# then the two hardening stages, which CI runs too:
#   sanitize  an ASan + UBSan build of the C++ code in build-asan/ (ref backend only:
#             no oneDNN, Eigen or CUDA) and its `ctest -L unit` — unit tests, the CLI
#             test and `check --backend ref` on every bundled suite and network;
#   fuzz      the fuzz targets of kernels/tests/fuzz (problem lines, suites, networks,
#             and whole problem lines through the ref and oneDNN kernels' supports() and
#             the model),
#             built with clang in build-fuzz/, run for 60 s in all over a
#             temporary copy of the seed corpus, so that the repository is not written.
#   scripts/test.sh                          everything (what CI runs)
#   scripts/test.sh -L unit                  extra arguments go to the main build's ctest
#   scripts/test.sh --no-sanitize --no-fuzz  skips those stages; LB_QUICK=1 skips both
# LB_BUILD_DIR picks the main build folder (default: build); LB_CMAKE_ARGS adds configure
# options to it. LB_FUZZ_SECONDS changes the fuzzing time (default 60, split evenly over
# the targets, which run as many at a time as there are cores).
# Exit status: non-zero if any stage failed; every stage runs even when one before failed.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

sanitize=1
fuzz=1
if [ -n "${LB_QUICK:-}" ] && [ "${LB_QUICK}" != 0 ]; then
  sanitize=0
  fuzz=0
fi
ctest_args=()
for arg in "$@"; do
  case $arg in
    --no-sanitize) sanitize=0 ;;
    --no-fuzz) fuzz=0 ;;
    *) ctest_args+=("$arg") ;;
  esac
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
times=()
elapsed() { echo $(($(date +%s) - $1)); }
# The ten slowest tests of a build folder's last ctest run, from its log.
slowest() {
  local log=$1/Testing/Temporary/LastTest.log
  [ -f "$log" ] || return 0
  echo "$2: the ten slowest tests"
  awk '/^[0-9]+\/[0-9]+ Testing: / {name = $3} /^Test time = / {printf "  %8.1f s  %s\n", $4, name}' "$log" |
    sort -rn | sed -n 1,10p
}

scripts/install-deps.sh
. scripts/build-folder.sh

# The main build, as before: a failed configure or build stops here. A folder configured
# already is built as it is (any generator); LB_CMAKE_ARGS are given to it.
t=$(date +%s)
build=${LB_BUILD_DIR:-build}
# shellcheck disable=SC2086  # LB_CMAKE_ARGS is a list of options
lb_configure "$build" ${LB_CMAKE_ARGS:-}
lb_build "$build"
# -LE long: the long sweeps (kernels/tests/verify_sweep.cpp) run by hand, `ctest -L long`.
ctest --test-dir "$build" --output-on-failure --parallel "$(nproc)" -LE long "${ctest_args[@]}" || status=1
slowest "$build" main
times+=("main $(elapsed "$t") s")

if [ $sanitize = 1 ]; then
  echo "== sanitize: ASan + UBSan build in build-asan/, ctest -L unit"
  t=$(date +%s)
  # The preset asan (CMakePresets.json): -O1, as AddressSanitizer's own documentation advises
  # (a third less compiling than -O2: conv2d_depthwise.cpp 19.5 s against 29 s on the Zen 5
  # VM), with line numbers in every report; -g1 (line tables, inlined frames included) names
  # the same frames and lines as -g, and compiles the harness a third faster than -g
  # (bench/harness/results.cpp: 44 s against 70 s). Leak checking is on (LeakSanitizer works here; where ptrace is forbidden it cannot
  # stop the threads and says so: ASAN_OPTIONS=detect_leaks=0 then turns it off).
  if lb_configure build-asan --preset=asan && lb_build build-asan &&
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:check_initialization_order=1:strict_init_order=1} \
      UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
      ctest --test-dir build-asan -L unit --output-on-failure --parallel "$(nproc)"; then
    slowest build-asan sanitize
  else
    slowest build-asan sanitize
    echo "sanitize: FAILED"
    status=1
  fi
  times+=("sanitize $(elapsed "$t") s")
fi

if [ $fuzz = 1 ]; then
  echo "== fuzz: fuzz targets in build-fuzz/, ${LB_FUZZ_SECONDS:-60} s of fuzzing in all, $(nproc) at a time"
  t=$(date +%s)
  targets=(problem suite network supports)
  seconds=$((${LB_FUZZ_SECONDS:-60} / ${#targets[@]}))
  # fuzz_one TARGET: its verdict, the lines to print, in $tmp/TARGET.verdict; 1 on a finding.
  fuzz_one() {
    local target=$1 finding
    cp -r "kernels/tests/fuzz/corpus/$target" "$tmp/$target"
    # A finding (crash, sanitizer report, leak, exception, hang over 10 s, more than
    # 2 GB) stops the target and leaves the input in build-fuzz/findings/.
    if build-fuzz/fuzz_"$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -dict=kernels/tests/fuzz/parsers.dict -artifact_prefix="build-fuzz/findings/$target-" \
      "$tmp/$target" >"$tmp/$target.log" 2>&1; then
      echo "fuzz_$target: $(grep -E '^Done [0-9]+ runs' "$tmp/$target.log" || echo 'ran'), no findings" >"$tmp/$target.verdict"
    else
      finding=$(sed -n 's/.*Test unit written to //p' "$tmp/$target.log" | tail -n 1)
      {
        echo "fuzz_$target: FAILED"
        tail -n 40 "$tmp/$target.log"
        echo "fuzz_$target: reproduce with build-fuzz/fuzz_$target ${finding:-build-fuzz/findings/$target-*}"
      } >"$tmp/$target.verdict"
      return 1
    fi
  }
  if LB_SOURCE_DIR=kernels/tests/fuzz lb_configure build-fuzz -DCMAKE_CXX_COMPILER=clang++ &&
    lb_build build-fuzz; then
    mkdir -p build-fuzz/findings
    # Each target is one process on one core: as many at a time as there are cores.
    for target in "${targets[@]}"; do
      while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
      fuzz_one "$target" &
    done
    wait || true
    for target in "${targets[@]}"; do
      cat "$tmp/$target.verdict" 2>/dev/null || echo "fuzz_$target: FAILED (no verdict)"
      grep -q ': FAILED' "$tmp/$target.verdict" 2>/dev/null && status=1
      [ -f "$tmp/$target.verdict" ] || status=1
    done
  else
    echo "fuzz: FAILED to build"
    status=1
  fi
  times+=("fuzz $(elapsed "$t") s")
fi

summary=$(printf '%s, ' "${times[@]}")
echo "test.sh: ${summary}$(elapsed "$start") s in all"
exit $status
