// dense.cuda.06_vec — 128-bit (float4) accesses: global loads, shared-memory reads, stores.
//
// What changed from 05: the tiles are fetched from global memory as float4 (one load
// instruction per 4 values), and the inner loop reads its TM values of A and TN values
// of B from shared memory as float4 too (TM/4 + TN/4 instead of TM + TN loads per k).
// For that a thread's outputs are runs of 4 consecutive rows and columns: rows
// tm·4 + q + i·(BM/2), columns tn·4 + q + j·(BN/2) (q < 4, i, j < 2 at TM = TN = 8), so a
// quarter warp's float4 reads of Bs cover 128 consecutive bytes (no bank conflict).
// C is stored as float4 where a row of 4 is in range and aligned.
// Why faster: 05 spends issue slots and shared-memory wavefronts on scalar loads; this
// quarters the load instructions of the main loop. Predicted: 1.1-1.3x over 05.
// Vector loads need K % 4 == 0 and 16-byte aligned A and B; otherwise the same kernel
// is instantiated with four predicated scalar loads per float4 (no alignment needed),
// so every shape runs. Edges: zero-filled loads and predicated stores.
#include <cstdint>

#include "cuda/own/common.cuh"

namespace lb::cuda::own {
namespace {

constexpr int BM = 128;  // block tile rows (M)
constexpr int BN = 128;  // block tile columns (N)
constexpr int BK = 8;    // K per shared-memory step
constexpr int TM = 8;    // outputs per thread along M (TM/4 runs of 4)
constexpr int TN = 8;    // outputs per thread along N (TN/4 runs of 4)
constexpr int PAD = 4;   // extra columns: conflict-free transposed stores, rows stay 16-byte aligned
constexpr int THREADS = (BM / TM) * (BN / TN);
static_assert(TM % 4 == 0 && TN % 4 == 0, "outputs come in float4 runs");
static_assert(BM % TM == 0 && BN % TN == 0, "TM, TN must divide the block tile");
static_assert(BK % 4 == 0, "tiles are loaded as float4 along K");
static_assert(PAD % 4 == 0, "shared rows must stay 16-byte aligned for float4 reads");
static_assert(THREADS <= 1024 && THREADS % 32 == 0, "whole warps, at most 1024 threads");
static_assert((BM * BK / 4) % THREADS == 0 && (BN * BK / 4) % THREADS == 0,
              "every thread loads the same count");

// Four values of row `row` (of `rows`) of a K-contiguous matrix, from column k; zeros
// outside. VEC: one aligned float4 load (K % 4 == 0, k % 4 == 0, so k < K covers k + 3).
template <bool VEC>
__device__ __forceinline__ float4 load4(const float* __restrict__ p, int row, int rows, int k, int K) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (row >= rows) return v;
  if (VEC) {
    if (k < K) v = *reinterpret_cast<const float4*>(p + row * K + k);
  } else {
    const float* r = p + row * K;
    if (k < K) v.x = r[k];
    if (k + 1 < K) v.y = r[k + 1];
    if (k + 2 < K) v.z = r[k + 2];
    if (k + 3 < K) v.w = r[k + 3];
  }
  return v;
}

template <bool VEC>
__global__ void __launch_bounds__(THREADS)
    vec_kernel(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ bias,
               float* __restrict__ c, int M, int N, int K, bool relu, bool vec_store) {
  constexpr int RG = TM / 4, CG = TN / 4;           // runs of 4 per thread
  constexpr int RSTEP = BM / RG, CSTEP = BN / CG;   // distance between a thread's runs
  __shared__ __align__(16) float As[BK][BM + PAD];  // As[k][m]
  __shared__ __align__(16) float Bs[BK][BN + PAD];  // Bs[k][n]
  const int t = threadIdx.x;
  const int tn = t % (BN / TN), tm = t / (BN / TN);
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int i = t; i < BM * BK / 4; i += THREADS) {
      const int r = i / (BK / 4), kq = i % (BK / 4) * 4;
      const float4 v = load4<VEC>(a, m0 + r, M, k0 + kq, K);
      As[kq][r] = v.x, As[kq + 1][r] = v.y, As[kq + 2][r] = v.z, As[kq + 3][r] = v.w;
    }
#pragma unroll
    for (int i = t; i < BN * BK / 4; i += THREADS) {
      const int r = i / (BK / 4), kq = i % (BK / 4) * 4;
      const float4 v = load4<VEC>(b, n0 + r, N, k0 + kq, K);
      Bs[kq][r] = v.x, Bs[kq + 1][r] = v.y, Bs[kq + 2][r] = v.z, Bs[kq + 3][r] = v.w;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float ra[TM], rb[TN];
#pragma unroll
      for (int i = 0; i < RG; ++i) {
        const float4 v = *reinterpret_cast<const float4*>(&As[kk][i * RSTEP + tm * 4]);
        ra[4 * i] = v.x, ra[4 * i + 1] = v.y, ra[4 * i + 2] = v.z, ra[4 * i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < CG; ++j) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[kk][j * CSTEP + tn * 4]);
        rb[4 * j] = v.x, rb[4 * j + 1] = v.y, rb[4 * j + 2] = v.z, rb[4 * j + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
          acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + i / 4 * RSTEP + tm * 4 + i % 4;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < CG; ++j) {
      const int n = n0 + j * CSTEP + tn * 4;  // first of a run of 4 columns
      if (n >= N) continue;
      float v[4];
#pragma unroll
      for (int q = 0; q < 4; ++q)
        v[q] = epilogue(acc[i][4 * j + q], bias, n + q < N ? n + q : n, relu);
      if (vec_store) {  // N % 4 == 0: n < N covers n + 3
        *reinterpret_cast<float4*>(c + m * N + n) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (n + q < N) c[m * N + n + q] = v[q];
      }
    }
  }
}

bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

}  // namespace

void sgemm_06_vec(const Gemm& g) {
  const dim3 grid(ceil_div(g.m, BM), ceil_div(g.n, BN));
  check_grid(grid.x, grid.y, 1, "dense.cuda.06_vec");
  const auto* a = static_cast<const float*>(g.a);
  const auto* b = static_cast<const float*>(g.b);
  auto* c = static_cast<float*>(g.c);
  const bool vec_load = g.k % 4 == 0 && aligned16(a) && aligned16(b);
  const bool vec_store = g.n % 4 == 0 && aligned16(c);
  if (vec_load)
    vec_kernel<true><<<grid, THREADS>>>(a, b, g.bias, c, g.m, g.n, g.k, g.relu, vec_store);
  else
    vec_kernel<false><<<grid, THREADS>>>(a, b, g.bias, c, g.m, g.n, g.k, g.relu, vec_store);
  LB_OWN_LAUNCHED();
}

}  // namespace lb::cuda::own
