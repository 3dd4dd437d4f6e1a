// dense.cuda.07_warptile — warp tiling + double-buffered shared memory.
//
// What changed from 06: (1) warp tiling: the block tile is split into one WM×WN tile
// per warp and each warp's tile into per-thread runs of 4 (lanes as LANES_M×LANES_N).
// A warp now reads WM + WN values of As/Bs per k (96 at 32×64) where 06's warps read
// 16 + 128 = 144 for the same 2048 outputs, and a quarter warp's float4 reads are either
// one broadcast (As) or 128 consecutive bytes (Bs). (2) double buffering: two
// shared-memory stages; the next K-tile's global loads are issued into registers before
// the current tile's FMAs and stored into the other stage after them, so their latency
// hides behind arithmetic and there is one __syncthreads per K-tile instead of two.
// BK grows to 16 (more FMAs per barrier); the transposed tile stores then take 2-way
// bank conflicts (4·(BM + PAD) ≡ 16 mod 32 for every PAD ≡ 0 mod 4), paid once per tile.
// MIN_BLOCKS = 2 caps registers at 128 (ptxas wanted 147: one block of 8 warps per SM).
// Why faster: 06 stalls on the global loads at the top of every K-tile and on its
// second barrier; fewer shared-memory wavefronts per FMA. Predicted: 1.2-1.4x over 06
// (~70-80 % of cuBLAS f32 on 4096²). lstm.cuda.default uses it for its input GEMMs (and
// for recurrent GEMMs from batch 32).
// Vector loads need K % 4 == 0 and 16-byte aligned A and B; otherwise predicated scalar
// loads fill the same float4 staging registers. Edges: zero-filled loads, predicated stores.
#include <cstdint>

#include "cuda/own/common.cuh"

namespace lb::cuda::own {
namespace {

constexpr int BM = 128;        // block tile rows (M)
constexpr int BN = 128;        // block tile columns (N)
constexpr int BK = 16;         // K per stage
constexpr int WARPS_M = 4;     // warps along M
constexpr int WARPS_N = 2;     // warps along N
constexpr int LANES_M = 4;     // lanes of a warp along M
constexpr int LANES_N = 8;     // lanes of a warp along N (8: a quarter warp reads 128 contiguous bytes of Bs)
constexpr int PAD = 4;         // extra columns of the k-major tiles; keeps rows 16-byte aligned
constexpr int MIN_BLOCKS = 2;  // blocks per SM the registers must allow (caps a thread at 128 registers)
constexpr int THREADS = WARPS_M * WARPS_N * 32;
constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile
constexpr int RG = WM / (LANES_M * 4);               // runs of 4 rows per thread
constexpr int CG = WN / (LANES_N * 4);               // runs of 4 columns per thread
constexpr int TM = RG * 4, TN = CG * 4;              // outputs per thread
constexpr int LOADS_A = BM * BK / 4 / THREADS;       // float4 loads per thread per K-tile
constexpr int LOADS_B = BN * BK / 4 / THREADS;
static_assert(LANES_M * LANES_N == 32, "the lanes of a warp form a LANES_M×LANES_N grid");
static_assert(BM % WARPS_M == 0 && BN % WARPS_N == 0, "warps split the block tile evenly");
static_assert(WM % (LANES_M * 4) == 0 && WN % (LANES_N * 4) == 0, "lanes split the warp tile into runs of 4");
static_assert(BK % 4 == 0 && PAD % 4 == 0, "float4 along K and 16-byte aligned shared rows");
static_assert(LOADS_A * THREADS * 4 == BM * BK && LOADS_B * THREADS * 4 == BN * BK,
              "every thread loads the same count");
static_assert(THREADS <= 1024, "a block holds at most 1024 threads");
static_assert(2 * BK * (BM + BN + 2 * PAD) * 4 <= 48 * 1024, "two stages fit static shared memory");

template <bool VEC>
__device__ __forceinline__ float4 load4(const float* __restrict__ p, int row, int rows, int k, int K) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (row >= rows) return v;
  if (VEC) {
    if (k < K) v = *reinterpret_cast<const float4*>(p + row * K + k);  // K % 4 == 0: k < K covers k + 3
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
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    warptile_kernel(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ bias,
                    float* __restrict__ c, int M, int N, int K, bool relu, bool vec_store) {
  __shared__ __align__(16) float As[2][BK][BM + PAD];  // As[stage][k][m]
  __shared__ __align__(16) float Bs[2][BK][BN + PAD];  // Bs[stage][k][n]
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int wm0 = warp / WARPS_N * WM, wn0 = warp % WARPS_N * WN;  // warp tile corner in the block tile
  const int lm = lane / LANES_N, ln = lane % LANES_N;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;

  float4 sa[LOADS_A], sb[LOADS_B];  // the next K-tile, on its way from global memory
  auto fetch = [&](int k0) {
#pragma unroll
    for (int l = 0; l < LOADS_A; ++l) {
      const int i = t + l * THREADS;
      sa[l] = load4<VEC>(a, m0 + i / (BK / 4), M, k0 + i % (BK / 4) * 4, K);
    }
#pragma unroll
    for (int l = 0; l < LOADS_B; ++l) {
      const int i = t + l * THREADS;
      sb[l] = load4<VEC>(b, n0 + i / (BK / 4), N, k0 + i % (BK / 4) * 4, K);
    }
  };
  auto stash = [&](int s) {  // registers -> stage s, transposed to k-major
#pragma unroll
    for (int l = 0; l < LOADS_A; ++l) {
      const int i = t + l * THREADS, r = i / (BK / 4), kq = i % (BK / 4) * 4;
      As[s][kq][r] = sa[l].x, As[s][kq + 1][r] = sa[l].y, As[s][kq + 2][r] = sa[l].z,
      As[s][kq + 3][r] = sa[l].w;
    }
#pragma unroll
    for (int l = 0; l < LOADS_B; ++l) {
      const int i = t + l * THREADS, r = i / (BK / 4), kq = i % (BK / 4) * 4;
      Bs[s][kq][r] = sb[l].x, Bs[s][kq + 1][r] = sb[l].y, Bs[s][kq + 2][r] = sb[l].z,
      Bs[s][kq + 3][r] = sb[l].w;
    }
  };

  float acc[TM][TN] = {};
  fetch(0);
  stash(0);
  __syncthreads();
  int s = 0;
  for (int k0 = 0; k0 < K; k0 += BK, s ^= 1) {
    const bool more = k0 + BK < K;
    if (more) fetch(k0 + BK);  // in flight during the FMAs below
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float ra[TM], rb[TN];
#pragma unroll
      for (int i = 0; i < RG; ++i) {
        const float4 v = *reinterpret_cast<const float4*>(&As[s][kk][wm0 + i * LANES_M * 4 + lm * 4]);
        ra[4 * i] = v.x, ra[4 * i + 1] = v.y, ra[4 * i + 2] = v.z, ra[4 * i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < CG; ++j) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[s][kk][wn0 + j * LANES_N * 4 + ln * 4]);
        rb[4 * j] = v.x, rb[4 * j + 1] = v.y, rb[4 * j + 2] = v.z, rb[4 * j + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
          acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    // Stage s^1 was last read before the previous barrier, so it may be written now; the
    // barrier below publishes it and frees stage s for the next iteration's writes.
    if (more) stash(s ^ 1);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + wm0 + i / 4 * LANES_M * 4 + lm * 4 + i % 4;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < CG; ++j) {
      const int n = n0 + wn0 + j * LANES_N * 4 + ln * 4;  // first of a run of 4 columns
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

void sgemm_07_warptile(const Gemm& g) {
  const dim3 grid(ceil_div(g.m, BM), ceil_div(g.n, BN));
  check_grid(grid.x, grid.y, 1, "dense.cuda.07_warptile");
  const auto* a = static_cast<const float*>(g.a);
  const auto* b = static_cast<const float*>(g.b);
  auto* c = static_cast<float*>(g.c);
  const bool vec_load = g.k % 4 == 0 && aligned16(a) && aligned16(b);
  const bool vec_store = g.n % 4 == 0 && aligned16(c);
  if (vec_load)
    warptile_kernel<true><<<grid, THREADS>>>(a, b, g.bias, c, g.m, g.n, g.k, g.relu, vec_store);
  else
    warptile_kernel<false><<<grid, THREADS>>>(a, b, g.bias, c, g.m, g.n, g.k, g.relu, vec_store);
  LB_OWN_LAUNCHED();
}

}  // namespace lb::cuda::own
