// add.cuda.default and softmax.cuda.default, device side: the element-wise ops
// (kernels/ops/add.h, softmax.h) on f32, f16 or bf16 storage, arithmetic in f32.
//   add: one thread per element, grid-stride; the ReLU fused in the store.
//   softmax, IH·IW = 1 (a classifier's rows): one block of 256 threads per row, the
//     channels strided over the threads; the max and the sum reduced across the block
//     (warp shuffles, then one value per warp in shared memory); expf() of x - max, the
//     row read three times (from L2 after the first).
//   softmax, IH·IW > 1: one thread per position, down its channels (IH·IW apart: adjacent
//     threads read adjacent positions, coalesced), three passes.
// Prediction: memory-bound both; add at the copy bandwidth (3 values moved per element),
// softmax at about a third of it on rows that miss L2. Never run on a GPU yet: written and
// compiled without one (2026-12-08).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/own/common.cuh"

namespace lb::cuda::own {
namespace {

constexpr int kThreads = 256;

template <class T>
__device__ __forceinline__ float to_float(T v) {
  return float(v);
}
template <class T>
__device__ __forceinline__ T from_float(float v) {
  return T(v);
}

template <class T>
__global__ void add_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y, long long n,
                           bool relu) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const float v = to_float(a[i]) + to_float(b[i]);
    y[i] = from_float<T>(relu ? fmaxf(v, 0.0f) : v);
  }
}

// The block's reduction of v (max or sum), every thread getting the result.
template <bool Max>
__device__ float block_reduce(float v, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = Max ? fmaxf(v, other) : v + other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads();  // shared is free (an earlier reduction has been read)
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : (Max ? -INFINITY : 0.0f);
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = Max ? fmaxf(v, other) : v + other;
  }
  return v;
}

template <class T>
__global__ void softmax_rows(const T* __restrict__ x, T* __restrict__ y, int channels, bool relu) {
  __shared__ float shared[32];
  const long long base = (long long)blockIdx.x * channels;
  float top = -INFINITY;
  for (int c = threadIdx.x; c < channels; c += blockDim.x)
    top = fmaxf(top, to_float(x[base + c]));
  top = block_reduce<true>(top, shared);
  float sum = 0.0f;
  for (int c = threadIdx.x; c < channels; c += blockDim.x)
    sum += expf(to_float(x[base + c]) - top);
  const float scale = 1.0f / block_reduce<false>(sum, shared);
  for (int c = threadIdx.x; c < channels; c += blockDim.x) {
    const float v = expf(to_float(x[base + c]) - top) * scale;
    y[base + c] = from_float<T>(relu ? fmaxf(v, 0.0f) : v);
  }
}

template <class T>
__global__ void softmax_positions(const T* __restrict__ x, T* __restrict__ y, int samples, int channels,
                                  int positions, bool relu) {
  const long long total = (long long)samples * positions;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long n = i / positions, at = i % positions;
    const long long base = n * channels * (long long)positions + at;
    float top = -INFINITY, sum = 0.0f;
    for (int c = 0; c < channels; ++c)
      top = fmaxf(top, to_float(x[base + (long long)c * positions]));
    for (int c = 0; c < channels; ++c)
      sum += expf(to_float(x[base + (long long)c * positions]) - top);
    const float scale = 1.0f / sum;
    for (int c = 0; c < channels; ++c) {
      const float v = expf(to_float(x[base + (long long)c * positions]) - top) * scale;
      y[base + (long long)c * positions] = from_float<T>(relu ? fmaxf(v, 0.0f) : v);
    }
  }
}

int blocks_for(long long n) {
  return int(std::min<long long>((n + kThreads - 1) / kThreads, 65535LL * 8));
}

template <class T>
void add_as(const AddRun& a) {
  if (a.n == 0) return;
  add_kernel<T><<<blocks_for(a.n), kThreads>>>(static_cast<const T*>(a.a), static_cast<const T*>(a.b),
                                               static_cast<T*>(a.y), a.n, a.relu);
  LB_OWN_LAUNCHED();
}

template <class T>
void softmax_as(const SoftmaxRun& s) {
  const auto* x = static_cast<const T*>(s.x);
  auto* y = static_cast<T*>(s.y);
  if (s.positions == 1) {
    check_grid(s.samples, 1, 1, "softmax");
    softmax_rows<T><<<s.samples, kThreads>>>(x, y, s.channels, s.relu);
  } else {
    softmax_positions<T><<<blocks_for((long long)s.samples * s.positions), kThreads>>>(
        x, y, s.samples, s.channels, s.positions, s.relu);
  }
  LB_OWN_LAUNCHED();
}

}  // namespace

void add(const AddRun& a) {
  switch (a.type) {
    case Floats::f32:
      return add_as<float>(a);
    case Floats::f16:
      return add_as<__half>(a);
    case Floats::bf16:
      return add_as<__nv_bfloat16>(a);
  }
}

void softmax(const SoftmaxRun& s) {
  switch (s.type) {
    case Floats::f32:
      return softmax_as<float>(s);
    case Floats::f16:
      return softmax_as<__half>(s);
    case Floats::bf16:
      return softmax_as<__nv_bfloat16>(s);
  }
}

}  // namespace lb::cuda::own
