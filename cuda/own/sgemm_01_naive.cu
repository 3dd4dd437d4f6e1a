// dense.cuda.01_naive — one thread per output, the starting point of the SGEMM steps.
//
// Computes C (M×N) = A (M×K) · Bᵀ + bias with B N×K (launch.h): thread (tx, ty) of a
// BLOCK×BLOCK block owns C[m][n], m = row of the block tile + tx, n = column + ty, and
// walks K alone. Both operands are K-contiguous, so within a warp (32 consecutive tx)
// the 32 loads of A hit 32 different rows (32 cache lines per load instruction) and the
// B load is a broadcast; the store is strided by N. What keeps this from being
// hopeless is L1: each line a thread touches is reused for the next 31 k.
// Predicted: a few % of cuBLAS, limited by L1 wavefronts (32 per load of A).
#include "cuda/own/common.cuh"

namespace lb::cuda::own {
namespace {

constexpr int BLOCK = 32;  // BLOCK×BLOCK threads, one output each
static_assert(BLOCK * BLOCK <= 1024, "a block holds at most 1024 threads");

__global__ void __launch_bounds__(BLOCK* BLOCK)
    naive_kernel(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ bias,
                 float* __restrict__ c, int M, int N, int K, bool relu) {
  const int m = blockIdx.x * BLOCK + threadIdx.x;
  const int n = blockIdx.y * BLOCK + threadIdx.y;
  if (m >= M || n >= N) return;
  const float* arow = a + m * K;  // row m of A (K values)
  const float* brow = b + n * K;  // row n of B
  float acc = 0.0f;
  for (int k = 0; k < K; ++k)
    acc = fmaf(arow[k], brow[k], acc);
  c[m * N + n] = epilogue(acc, bias, n, relu);
}

}  // namespace

void sgemm_01_naive(const Gemm& g) {
  const dim3 grid(ceil_div(g.m, BLOCK), ceil_div(g.n, BLOCK));
  check_grid(grid.x, grid.y, 1, "dense.cuda.01_naive");
  naive_kernel<<<grid, dim3(BLOCK, BLOCK)>>>(static_cast<const float*>(g.a), static_cast<const float*>(g.b),
                                             g.bias, static_cast<float*>(g.c), g.m, g.n, g.k, g.relu);
  LB_OWN_LAUNCHED();
}

}  // namespace lb::cuda::own
