// dense.cuda.05_reg2d — 2-D register blocking: each thread computes a TM×TN block of outputs.
//
// What changed from 04: per k a thread loads TM values of A and TN values of B from
// shared memory into registers and forms their outer product: TM·TN FMAs for TM + TN
// loads (16 loads per 64 FMAs at 8×8, against 9 per 8 in 04). The block tile grows to
// 128×128, which halves global traffic per FMA again.
// Why faster: 04 is still bound by shared-memory bandwidth; this moves the bound toward
// the FMA pipes. Predicted: 1.5-2x over 04 on large squares (~50-60 % of cuBLAS).
// A thread's rows and columns are strided by BM/TM and BN/TN (tm + i·16, tn + j·16),
// so with scalar loads a warp reads 16 consecutive floats of Bs (no bank conflicts)
// and 2 of As, and stores 16 consecutive floats of C per row.
// Edges: zero-filled loads and predicated stores; any M, N, K.
#include "cuda/own/common.cuh"

namespace lb::cuda::own {
namespace {

constexpr int BM = 128;  // block tile rows (M)
constexpr int BN = 128;  // block tile columns (N)
constexpr int BK = 8;    // K per shared-memory step
constexpr int TM = 8;    // outputs per thread along M
constexpr int TN = 8;    // outputs per thread along N
constexpr int PAD = 4;   // extra columns against bank conflicts on the transposed tile stores
constexpr int THREADS = (BM / TM) * (BN / TN);
static_assert(BM % TM == 0 && BN % TN == 0, "TM, TN must divide the block tile");
static_assert(THREADS <= 1024 && THREADS % 32 == 0, "whole warps, at most 1024 threads");
static_assert((BM * BK) % THREADS == 0 && (BN * BK) % THREADS == 0, "every thread loads the same count");

__global__ void __launch_bounds__(THREADS)
    reg2d_kernel(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ bias,
                 float* __restrict__ c, int M, int N, int K, bool relu) {
  constexpr int RS = BM / TM, CS = BN / TN;  // row and column stride of a thread's outputs
  __shared__ float As[BK][BM + PAD];         // As[k][m]
  __shared__ float Bs[BK][BN + PAD];         // Bs[k][n]
  const int t = threadIdx.x;
  const int tn = t % CS, tm = t / CS;  // this thread: tile rows tm + i·RS, columns tn + j·CS
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  float acc[TM][TN] = {};
  float ra[TM], rb[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int i = t; i < BM * BK; i += THREADS) {
      const int r = i / BK, kk = i % BK, m = m0 + r, k = k0 + kk;
      As[kk][r] = (m < M && k < K) ? a[m * K + k] : 0.0f;
    }
#pragma unroll
    for (int i = t; i < BN * BK; i += THREADS) {
      const int r = i / BK, kk = i % BK, n = n0 + r, k = k0 + kk;
      Bs[kk][r] = (n < N && k < K) ? b[n * K + k] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (int i = 0; i < TM; ++i)
        ra[i] = As[kk][tm + i * RS];
#pragma unroll
      for (int j = 0; j < TN; ++j)
        rb[j] = Bs[kk][tn + j * CS];
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
    const int m = m0 + tm + i * RS;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int n = n0 + tn + j * CS;
      if (n < N) c[m * N + n] = epilogue(acc[i][j], bias, n, relu);
    }
  }
}

}  // namespace

void sgemm_05_reg2d(const Gemm& g) {
  const dim3 grid(ceil_div(g.m, BM), ceil_div(g.n, BN));
  check_grid(grid.x, grid.y, 1, "dense.cuda.05_reg2d");
  reg2d_kernel<<<grid, THREADS>>>(static_cast<const float*>(g.a), static_cast<const float*>(g.b), g.bias,
                                  static_cast<float*>(g.c), g.m, g.n, g.k, g.relu);
  LB_OWN_LAUNCHED();
}

}  // namespace lb::cuda::own
