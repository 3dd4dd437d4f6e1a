// dense.cuda.03_smem — tiles of A and B staged through shared memory.
//
// What changed from 02: a block of TILE×TILE threads owns a TILE×TILE tile of C and
// walks K in steps of TILE. Each step, thread (tx, ty) loads A[m0+ty][k0+tx] and
// B[n0+ty][k0+tx] — a warp reads 32 consecutive floats of one row: coalesced — into
// shared memory, and then every thread reads its row of A and column of B from there.
// Why faster: every value fetched from global memory (L2) now serves TILE outputs
// instead of one, and shared memory is about an order of magnitude faster than L1
// misses. Bs is padded by one column so the 32 lanes of a warp, which read
// Bs[tx][k] (32 different rows), hit 32 different banks; As[ty][k] is a broadcast.
// Still one FMA per two shared-memory loads. Predicted: 1.5-2x over 02 on large squares.
// Edges: loads outside A or B write 0 into the tile (the products add nothing), and only
// in-range outputs are stored, so any M, N, K works.
#include "cuda/own/common.cuh"

namespace lb::cuda::own {
namespace {

constexpr int TILE = 32;  // the block's C tile is TILE×TILE; K advances TILE per step
static_assert(TILE * TILE <= 1024, "one thread per output of the tile");
static_assert(TILE % 32 == 0, "a warp must cover a whole row of the tile (coalesced loads, one broadcast)");

__global__ void __launch_bounds__(TILE* TILE)
    smem_kernel(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ bias,
                float* __restrict__ c, int M, int N, int K, bool relu) {
  __shared__ float As[TILE][TILE];      // As[row of C tile][k]
  __shared__ float Bs[TILE][TILE + 1];  // Bs[column of C tile][k], padded: conflict-free column reads
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m0 = blockIdx.x * TILE, n0 = blockIdx.y * TILE;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    const int k = k0 + tx;
    As[ty][tx] = (m0 + ty < M && k < K) ? a[(m0 + ty) * K + k] : 0.0f;
    Bs[ty][tx] = (n0 + ty < N && k < K) ? b[(n0 + ty) * K + k] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < TILE; ++kk)
      acc = fmaf(As[ty][kk], Bs[tx][kk], acc);
    __syncthreads();  // the tile is overwritten next step
  }
  const int m = m0 + ty, n = n0 + tx;  // tx -> n: the store is coalesced
  if (m < M && n < N) c[m * N + n] = epilogue(acc, bias, n, relu);
}

}  // namespace

void sgemm_03_smem(const Gemm& g) {
  const dim3 grid(ceil_div(g.m, TILE), ceil_div(g.n, TILE));
  check_grid(grid.x, grid.y, 1, "dense.cuda.03_smem");
  smem_kernel<<<grid, dim3(TILE, TILE)>>>(static_cast<const float*>(g.a), static_cast<const float*>(g.b),
                                          g.bias, static_cast<float*>(g.c), g.m, g.n, g.k, g.relu);
  LB_OWN_LAUNCHED();
}

}  // namespace lb::cuda::own
