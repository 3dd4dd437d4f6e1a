// pool2d.cuda.default, device side: max and average pooling (kernels/ops/pool2d.h) on NCHW,
// f32, f16 or bf16 storage, arithmetic in f32. One thread per output, grid-stride: its
// K×K window read from the plane (taps over the padding left out of a max, zeros in an
// average, which divides by K²: PyTorch's count_include_pad), the ReLU fused in the store.
// Adjacent threads take adjacent outputs of a row, so their taps are S apart: coalesced for
// S = 1, half the bandwidth at S = 2 (the overlapping windows of 3×3 stride 2 come from L1).
// Prediction: memory-bound, at the copy bandwidth for x + y bytes. Never run on a GPU yet:
// written and compiled without one (2026-12-08).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/own/common.cuh"

namespace lb::cuda::own {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void pool_kernel(const T* __restrict__ x, T* __restrict__ y, Pool q) {
  const long long outputs = (long long)q.planes * q.oh * q.ow;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < outputs;
       i += (long long)gridDim.x * blockDim.x) {
    const int o = int(i % q.ow), p = int(i / q.ow % q.oh);
    const long long plane = i / ((long long)q.oh * q.ow);
    const T* in = x + plane * q.ih * (long long)q.iw;
    float acc = q.avg ? 0.0f : -INFINITY;
    for (int r = 0; r < q.k; ++r) {
      const int h = p * q.s - q.p + r;
      if (h < 0 || h >= q.ih) continue;
      for (int s = 0; s < q.k; ++s) {
        const int w = o * q.s - q.p + s;
        if (w < 0 || w >= q.iw) continue;
        const float v = float(in[h * (long long)q.iw + w]);
        acc = q.avg ? acc + v : fmaxf(acc, v);
      }
    }
    if (q.avg) acc *= 1.0f / float(q.k * q.k);
    y[i] = T(q.relu ? fmaxf(acc, 0.0f) : acc);
  }
}

template <class T>
void pool_as(const Pool& q) {
  const long long outputs = (long long)q.planes * q.oh * q.ow;
  if (outputs == 0) return;
  const int blocks = int(std::min<long long>((outputs + kThreads - 1) / kThreads, 65535LL * 8));
  pool_kernel<T><<<blocks, kThreads>>>(static_cast<const T*>(q.x), static_cast<T*>(q.y), q);
  LB_OWN_LAUNCHED();
}

}  // namespace

void pool2d(const Pool& q) {
  switch (q.type) {
    case Floats::f32:
      return pool_as<float>(q);
    case Floats::f16:
      return pool_as<__half>(q);
    case Floats::bf16:
      return pool_as<__nv_bfloat16>(q);
  }
}

}  // namespace lb::cuda::own
