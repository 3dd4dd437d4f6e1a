#!/usr/bin/env bash
# The test command: installs what is missing, configures, builds and runs every test.
#   scripts/test.sh            all tests (GPU tests report SKIPPED without a GPU)
#   scripts/test.sh -L unit    extra arguments go to ctest
# LB_BUILD_DIR picks the build folder (default: build); LB_CMAKE_ARGS adds configure options.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

scripts/install-deps.sh
build=${LB_BUILD_DIR:-build}
# shellcheck disable=SC2086  # LB_CMAKE_ARGS is a list of options
cmake -S . -B "$build" -G Ninja ${LB_CMAKE_ARGS:-}
cmake --build "$build" --parallel "$(nproc)"
status=0
ctest --test-dir "$build" --output-on-failure --parallel "$(nproc)" "$@" || status=$?
echo "test.sh: $(($(date +%s) - start)) s"
exit $status
