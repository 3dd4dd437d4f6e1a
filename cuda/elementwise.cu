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
void launch(const void* in, void* out, int64_t n) {
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>(ceil_div(n, kThreads), 65535 * 8);
  relu_kernel<T><<<int(blocks), kThreads>>>(static_cast<const T*>(in), static_cast<T*>(out), n);
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

}  // namespace lb::cuda
