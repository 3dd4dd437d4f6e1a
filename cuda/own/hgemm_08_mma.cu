// dense.cuda.08_mma — bf16/f16 tensor cores: mma.sync + ldmatrix + swizzled shared memory
// + a multi-stage cp.async pipeline, f32 accumulation.
//
// What changed from 07: the inputs are 16-bit and the products run on the tensor cores
// with warp-level mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16} (the Ampere-style
// instruction class, which Hopper still runs; Hopper's wgmma is not used). Both
// operands are K-contiguous, which is exactly the .row (A = x, M×K) and .col (B = W
// read as K×N column-major) form, so no transposition is needed anywhere:
//  - cp.async.cg moves 16-byte chunks global -> shared without passing through
//    registers; STAGES K-tiles are in flight (commit/wait_group), so the copy of tile
//    kt + STAGES-1 overlaps the math on tile kt;
//  - a tile row is BK = 64 halves = 128 bytes = 8 chunks; chunk c of row r is stored at
//    chunk c ^ (r % 8) (XOR swizzle), so the 8 row addresses of every ldmatrix phase
//    fall on 8 different 16-byte bank groups: no bank conflicts, no padding;
//  - ldmatrix.x4 loads a warp's 16×16 A fragment, or two 8-column B fragments, in one
//    instruction in exactly the register layout mma.sync wants.
// Each warp owns a WM×WN = 64×32 tile: 4×4 mma tiles of 16×8, 64 f32 accumulators per
// thread. The epilogue adds the f32 bias, applies the fused ReLU, rounds once to the
// output type and stores pairs (4 bytes) where N is even.
// Why faster: the tensor cores do 16×8×16 MACs per instruction and per warp. H200's
// dense bf16 peak is ~990 TFLOP/s (wgmma; mma.sync reaches roughly two thirds of it)
// against ~67 TFLOP/s of f32 FMA. Predicted: 5-8x over 07's f32, ~40-55 % of cuBLAS
// bf16 (which uses wgmma + TMA on sm_90) on 4096²; operand traffic halves too.
// Constraints: K % 8 == 0 and 16-byte aligned A and B (16-byte cp.async rows); M and N
// any (chunks outside A or B are zero-filled with src-size 0; stores are predicated).
#include <cstdint>

#include "cuda/own/common.cuh"

namespace lb::cuda::own {
namespace {

constexpr int BM = 128;        // block tile rows (M)
constexpr int BN = 128;        // block tile columns (N)
constexpr int BK = 64;         // K per stage, in elements (128 bytes per row)
constexpr int STAGES = 3;      // K-tiles in flight
constexpr int WARPS_M = 2;     // warps along M
constexpr int WARPS_N = 4;     // warps along N
constexpr int MIN_BLOCKS = 2;  // blocks per SM: registers capped at 128, 2 x 96 KiB of shared memory
constexpr int THREADS = WARPS_M * WARPS_N * 32;
constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile
constexpr int MI = WM / 16, NI = WN / 8;             // mma tiles (16×8) per warp tile
constexpr int CHUNKS = BK * 2 / 16;                  // 16-byte chunks per tile row
constexpr int STAGE_ELEMS = (BM + BN) * BK;
constexpr int SMEM_BYTES = STAGES * STAGE_ELEMS * 2;
static_assert(CHUNKS == 8, "the XOR swizzle maps 8 chunks of a 128-byte row over 8 rows");
static_assert(BK % 16 == 0, "mma.m16n8k16 steps through K by 16");
static_assert(WM % 16 == 0 && WN % 16 == 0,
              "A fragments are 16 rows; B is loaded two 8-column tiles at a time");
static_assert(BM % 8 == 0 && BN % 8 == 0, "swizzle rows come in groups of 8");
static_assert((BM * CHUNKS) % THREADS == 0 && (BN * CHUNKS) % THREADS == 0,
              "every thread copies the same count");
static_assert(STAGES >= 2, "a pipeline needs at least two stages");
static_assert(SMEM_BYTES <= 227 * 1024, "sm_90 allows 227 KiB of shared memory per block");
static_assert(MIN_BLOCKS * (SMEM_BYTES + 1024) <= 228 * 1024,
              "MIN_BLOCKS blocks share an SM's 228 KiB (1 KiB reserved each)");
static_assert(kMmaKMultiple * 2 == 16, "K % kMmaKMultiple == 0 makes rows whole 16-byte chunks");

template <bool BF16>
struct Half;
template <>
struct Half<true> {
  using T = __nv_bfloat16;
  static __device__ __forceinline__ T one(float v) { return __float2bfloat16_rn(v); }
  static __device__ __forceinline__ __nv_bfloat162 two(float v0, float v1) {
    return __floats2bfloat162_rn(v0, v1);
  }
  // d += a·b on a 16×8×16 tile (fragment layouts: PTX ISA, "mma.m16n8k16").
  static __device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct Half<false> {
  using T = __half;
  static __device__ __forceinline__ T one(float v) { return __float2half_rn(v); }
  static __device__ __forceinline__ __half2 two(float v0, float v1) { return __floats2half2_rn(v0, v1); }
  static __device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronously; zero-fills the 16 bytes when !valid (src
// is then not read, but must still be a valid address).
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Element offset of (row, chunk) in a swizzled tile of BK-element rows.
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * BK + ((chunk ^ (row % 8)) * 8);
}

template <bool BF16>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    mma_kernel(const typename Half<BF16>::T* __restrict__ a, const typename Half<BF16>::T* __restrict__ b,
               const float* __restrict__ bias, typename Half<BF16>::T* __restrict__ c, int M, int N, int K,
               bool relu, bool pair_store) {
  using T = typename Half<BF16>::T;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);  // stage s: A tile (BM×BK) then B tile (BN×BK), both swizzled
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int wm0 = warp / WARPS_N * WM, wn0 = warp % WARPS_N * WN;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  const int ktiles = ceil_div(K, BK);

  // Issues the copies of K-tile `kt` into stage `s` (no commit).
  auto load_stage = [&](int s, int kt) {
    T* as = smem + s * STAGE_ELEMS;
    T* bs = as + BM * BK;
    const int k0 = kt * BK;
#pragma unroll
    for (int i = t; i < BM * CHUNKS; i += THREADS) {
      const int row = i / CHUNKS, ch = i % CHUNKS, gm = m0 + row, gk = k0 + ch * 8;
      const bool valid = gm < M && gk < K;  // K % 8 == 0: the whole chunk is in or out
      cp_async16(smem_addr(as + swizzled(row, ch)), valid ? a + gm * K + gk : a, valid);
    }
#pragma unroll
    for (int i = t; i < BN * CHUNKS; i += THREADS) {
      const int row = i / CHUNKS, ch = i % CHUNKS, gn = n0 + row, gk = k0 + ch * 8;
      const bool valid = gn < N && gk < K;
      cp_async16(smem_addr(bs + swizzled(row, ch)), valid ? b + gn * K + gk : b, valid);
    }
  };

  float acc[MI][NI][4] = {};
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) load_stage(s, s);
    cp_async_commit();  // empty groups keep the group count in step with kt
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed
    __syncthreads();              // ... and everyone's; stage (kt-1) % STAGES is free again
    const int next = kt + STAGES - 1;
    if (next < ktiles) load_stage(next % STAGES, next);
    cp_async_commit();

    const T* as = smem + (kt % STAGES) * STAGE_ELEMS;
    const T* bs = as + BM * BK;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      unsigned af[MI][4], bf[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        // lanes 0-15: rows 0-15 at k 0-7; lanes 16-31: rows 0-15 at k 8-15 -> a0..a3
        const int row = wm0 + mi * 16 + lane % 16, ch = kk * 2 + lane / 16;
        ldmatrix_x4(af[mi], smem_addr(as + swizzled(row, ch)));
      }
#pragma unroll
      for (int nj = 0; nj < NI / 2; ++nj) {
        // matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
        const int row = wn0 + nj * 16 + lane / 16 * 8 + lane % 8, ch = kk * 2 + lane / 8 % 2;
        unsigned r[4];
        ldmatrix_x4(r, smem_addr(bs + swizzled(row, ch)));
        bf[2 * nj][0] = r[0], bf[2 * nj][1] = r[1], bf[2 * nj + 1][0] = r[2], bf[2 * nj + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
          Half<BF16>::mma(acc[mi][ni], af[mi], bf[ni]);
    }
  }
  cp_async_wait<0>();  // only empty groups remain; leave nothing in flight

  // Accumulator fragment: d0, d1 at (row g, columns 2q, 2q+1), d2, d3 at row g + 8.
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = m0 + wm0 + mi * 16 + g + half * 8;
      if (m >= M) continue;
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        const int n = n0 + wn0 + ni * 8 + 2 * q;
        if (n >= N) continue;
        const float v0 = epilogue(acc[mi][ni][2 * half], bias, n, relu);
        if (n + 1 < N) {
          const float v1 = epilogue(acc[mi][ni][2 * half + 1], bias, n + 1, relu);
          if (pair_store) {  // N even, n even: 4-byte aligned
            *reinterpret_cast<decltype(Half<BF16>::two(0.0f, 0.0f))*>(c + m * N + n) =
                Half<BF16>::two(v0, v1);
          } else {
            c[m * N + n] = Half<BF16>::one(v0);
            c[m * N + n + 1] = Half<BF16>::one(v1);
          }
        } else {
          c[m * N + n] = Half<BF16>::one(v0);
        }
      }
    }
}

bool aligned(const void* p, std::uintptr_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

}  // namespace

void hgemm_08_setup() {
  LB_CUDA_CHECK(
      cudaFuncSetAttribute(mma_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  LB_CUDA_CHECK(
      cudaFuncSetAttribute(mma_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
}

void hgemm_08_mma(const Gemm& g, bool bf16) {
  if (g.k % kMmaKMultiple != 0 || !aligned(g.a, 16) || !aligned(g.b, 16))
    throw Error(
        "dense.cuda.08_mma: needs K % 8 == 0 and 16-byte aligned operands (K = " + std::to_string(g.k) + ")");
  const dim3 grid(ceil_div(g.m, BM), ceil_div(g.n, BN));
  check_grid(grid.x, grid.y, 1, "dense.cuda.08_mma");
  const bool pair_store = g.n % 2 == 0 && aligned(g.c, 4);
  if (bf16) {
    using T = Half<true>::T;
    mma_kernel<true><<<grid, THREADS, SMEM_BYTES>>>(static_cast<const T*>(g.a), static_cast<const T*>(g.b),
                                                    g.bias, static_cast<T*>(g.c), g.m, g.n, g.k, g.relu,
                                                    pair_store);
  } else {
    using T = Half<false>::T;
    mma_kernel<false><<<grid, THREADS, SMEM_BYTES>>>(static_cast<const T*>(g.a), static_cast<const T*>(g.b),
                                                     g.bias, static_cast<T*>(g.c), g.m, g.n, g.k, g.relu,
                                                     pair_store);
  }
  LB_OWN_LAUNCHED();
}

}  // namespace lb::cuda::own
