#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/check.h"
#include "cuda/elementwise.h"

namespace lb::cuda {
namespace {

// One thread per element, grid-stride so any n fits the launch limits.
template <class T>
__global__ void relu_kernel(const T* in, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = float(in[i]);
    out[i] = v > 0.0f ? in[i] : T(0.0f);
  }
}

template <class T>
__global__ void relu_backward_kernel(const T* out, const T* dy, T* dz, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dz[i] = float(out[i]) > 0.0f ? dy[i] : T(0.0f);
}

constexpr int kThreads = 256;

int64_t blocks_for(int64_t n) {
  return std::min<int64_t>(ceil_div(n, kThreads), 65535 * 8);
}

template <class T>
void launch(const void* in, void* out, int64_t n) {
  relu_kernel<T><<<int(blocks_for(n)), kThreads>>>(static_cast<const T*>(in), static_cast<T*>(out), n);
  LB_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_backward(const void* out, const void* dy, void* dz, int64_t n) {
  relu_backward_kernel<T><<<int(blocks_for(n)), kThreads>>>(
      static_cast<const T*>(out), static_cast<const T*>(dy), static_cast<T*>(dz), n);
  LB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void relu(const void* in, void* out, int64_t n, Storage s) {
  if (n == 0) return;
  switch (s) {
    case Storage::f32:
      return launch<float>(in, out, n);
    case Storage::f16:
      return launch<__half>(in, out, n);
    case Storage::bf16:
      return launch<__nv_bfloat16>(in, out, n);
    default:
      throw Error("relu on the device: storage " + std::string(name(s)) + " is not a floating type");
  }
}

void relu_backward(const void* out, const void* dy, void* dz, int64_t n, Storage s) {
  if (n == 0) return;
  switch (s) {
    case Storage::f32:
      return launch_backward<float>(out, dy, dz, n);
    case Storage::f16:
      return launch_backward<__half>(out, dy, dz, n);
    case Storage::bf16:
      return launch_backward<__nv_bfloat16>(out, dy, dz, n);
    default:
      throw Error("relu backward on the device: storage " + std::string(name(s)) + " is not a floating type");
  }
}

}  // namespace lb::cuda
