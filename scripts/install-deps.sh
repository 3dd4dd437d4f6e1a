#!/usr/bin/env bash
# Installs every Debian package layerbench needs, and only what is missing: a second
# run changes nothing and exits 0. The CUDA toolkit (nvcc, cuBLAS, cuDNN) is not a
# Debian package; CMake looks for it in /usr/local/cuda and builds without it.
set -euo pipefail

packages=(
  cmake ninja-build g++         # the build
  clang-format                  # the layout test (ctest -R format)
  libgtest-dev libbenchmark-dev # GoogleTest, Google Benchmark
  libbenchmark-tools            # Google Benchmark's compare.py (the results-format test runs it)
  nlohmann-json3-dev            # results files
  python3 python3-matplotlib python3-numpy python3-scipy  # result checks, reports, plots
  nodejs chromium               # the dashboard (npm packages) and its headless-browser test
  libdnnl-dev libeigen3-dev     # the oneDNN and Eigen backends (oneDNN 2.6, Eigen 3.4)
  ocl-icd-opencl-dev            # Debian's oneDNN is built with OpenCL; its CMake config needs it
  clang libclang-rt-14-dev      # the fuzz targets (libFuzzer, clang's sanitizer runtimes)
  slurm-wlm munge               # a one-node Slurm cluster for scripts/slurm-sweep.sh's test (ctest -L scale)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
