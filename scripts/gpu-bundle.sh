#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh runs on a GPU machine that has CUDA, cuBLAS and cuDNN
# but no package registry: layerbench and the GPU tests (lb_cuda_smoke, lb_gpu_tests,
# lb_gpu_own_tests), built here (CUDA on, sm_90 + PTX, generic x86-64-v3 host code rather
# than this CPU's -march=native), plus the shared libraries that machine lacks (oneDNN,
# Google Benchmark, OpenMP, OpenCL ICD loader), into .gpu-bundle/ (git-ignored). Carry it
# with the device tool:
#   carry: [".gpu-bundle"], command: "scripts/gpu-check.sh $OUT"
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build="build-gpu"
. scripts/build-folder.sh
lb_configure "$build" -DCMAKE_BUILD_TYPE=Release -DLB_WITH_CUDA=ON -DLB_NATIVE=OFF \
  -DCMAKE_CXX_FLAGS="-march=x86-64-v3" -DCMAKE_CUDA_ARCHITECTURES=90
lb_build "$build" layerbench lb_gpu_tests lb_gpu_own_tests lb_cuda_smoke

rm -rf .gpu-bundle
mkdir -p .gpu-bundle/bin .gpu-bundle/lib
cp "$build/bench/layerbench" "$build/cuda/lb_gpu_tests" "$build/cuda/lb_gpu_own_tests" "$build/cuda/lb_cuda_smoke" \
  .gpu-bundle/bin/
strip .gpu-bundle/bin/*
# Every library the binaries need that is not glibc, libstdc++ or CUDA's own (the GPU
# machine brings those): found with ldd here, copied with their sonames.
for bin in .gpu-bundle/bin/*; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r soname path; do
  case $soname in
    libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux* | libstdc++* | libgcc_s*) ;;
    libcublas* | libcudnn* | libcudart* | libnvidia* | libcuda.so*) ;;
    *) cp -L "$path" ".gpu-bundle/lib/$soname" ;;
  esac
done
git rev-parse --short=12 HEAD >.gpu-bundle/COMMIT
# What it was built with, for the check's environment.txt (the CUDA runtime is linked in
# statically, so the GPU machine cannot say which it is).
nvcc=$(sed -n 's/^set(CMAKE_CUDA_COMPILER "\(.*\)")$/\1/p' "$build"/CMakeFiles/*/CMakeCUDACompiler.cmake | sed -n 1p)
cudnn_h=$(sed -n 's/^LB_CUDNN_INCLUDE:[A-Z]*=//p' "$build/CMakeCache.txt")/cudnn_version.h
{
  echo "built $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -n) from $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD || echo ' (with local changes)')"
  echo "nvcc (CUDA runtime linked in): $("$nvcc" --version | tail -n 1)"
  echo "cuDNN headers: $(awk '/^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) / {printf "%s%s", sep, $3; sep="."}' "$cudnn_h")"
} >.gpu-bundle/BUILD
ls -la .gpu-bundle/bin .gpu-bundle/lib
# The tree and the bundle as the device call will carry them: exit 1 here, not a refused
# carry there, above 60 MiB (the device tool's limit is 64).
scripts/carry-size.sh .gpu-bundle
