// What our own CUDA kernels share (device side): the bias + ReLU epilogue, the launch
// check, and the 16-bit type traits of the tensor-core kernel.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda/check.h"
#include "cuda/own/launch.h"

namespace lb::cuda::own {

// The fused epilogue of every kernel: + bias[n] (none when bias is null), then the
// ReLU when relu = fused. The caller has checked n against the bias length.
__device__ __forceinline__ float epilogue(float acc, const float* __restrict__ bias, int n, bool relu) {
  const float v = bias ? acc + bias[n] : acc;
  return relu ? fmaxf(v, 0.0f) : v;
}

// After every <<<...>>>: a bad configuration surfaces here, with file:line.
#define LB_OWN_LAUNCHED() LB_CUDA_CHECK(cudaGetLastError())

// Grid limits on y and z (x allows 2^31 - 1).
inline constexpr int kMaxGridYZ = 65535;

// Throws when a grid would exceed its limits (supports() is meant to have said so first).
inline void check_grid(long long x, long long y, long long z, const char* what) {
  if (x < 1 || y < 1 || z < 1 || x > 2147483647LL || y > kMaxGridYZ || z > kMaxGridYZ)
    throw ::lb::Error(std::string(what) + ": grid " + std::to_string(x) + "x" + std::to_string(y) + "x" +
                      std::to_string(z) + " exceeds the launch limits");
}

}  // namespace lb::cuda::own
