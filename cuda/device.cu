#include <cuda_runtime.h>

#include "cuda/device.h"
#include "kernels/common.h"

// One check macro for the CUDA runtime: the failing call, file:line and CUDA's reason.
#define LB_CUDA_CHECK(call)                                                                            \
  do {                                                                                                 \
    const cudaError_t lb_err_ = (call);                                                                \
    if (lb_err_ != cudaSuccess)                                                                        \
      throw ::lb::Error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + #call + ": " + \
                        cudaGetErrorString(lb_err_));                                                  \
  } while (0)

namespace lb::cuda {
namespace {

// One thread per element; x and y have n floats.
__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

}  // namespace

std::string why_no_device() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(err);
  if (count == 0) return "no CUDA device";
  return {};
}

std::string describe_device() {
  cudaDeviceProp prop{};
  LB_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

void saxpy(float a, const std::vector<float>& x, std::vector<float>& y) {
  const int n = int(x.size());
  const size_t bytes = sizeof(float) * x.size();
  float *dx = nullptr, *dy = nullptr;
  LB_CUDA_CHECK(cudaMalloc(&dx, bytes));
  LB_CUDA_CHECK(cudaMalloc(&dy, bytes));
  LB_CUDA_CHECK(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice));
  LB_CUDA_CHECK(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice));
  constexpr int kThreads = 256;
  saxpy_kernel<<<int(ceil_div(n, kThreads)), kThreads>>>(n, a, dx, dy);
  LB_CUDA_CHECK(cudaGetLastError());
  LB_CUDA_CHECK(cudaMemcpy(y.data(), dy, bytes, cudaMemcpyDeviceToHost));
  LB_CUDA_CHECK(cudaFree(dx));
  LB_CUDA_CHECK(cudaFree(dy));
}

}  // namespace lb::cuda
