// conv2d.cuda.implicit_gemm — convolution as a GEMM whose A operand is never materialised.
//
// Per group, the convolution is the product C (pixels × out channels) = A · Bᵀ with
//   M = N·P·Q output pixels, N' = K/G output channels, K' = (C/G)·R·S taps,
//   A[m][t] = x[n][c][p·SH − PH + r·DH][q·SW − PW + s·DW] (0 outside the image),
//   B[k][t] = W[k][c][r][s] (W's own layout: K'-contiguous rows, as in dense),
// with m = (n, p, q) and t = (c, r, s). A is gathered straight from x into shared
// memory tile by tile (no im2col buffer, so no extra traffic or memory); the math is
// the 05-style 2-D register-blocked tile (TM×TN outputs per thread, k-major tiles).
// What makes it cheap: each thread gathers for one fixed pixel (row) of the tile, so it
// decodes (n, p, q) once; the taps are looked up in a small table built in prepare()
// (plane offset, r·DH, s·DW per t) instead of two divisions per element. Adjacent
// threads take adjacent pixels, so gathers and the NCHW output stores are coalesced
// along q. Groups are blockIdx.z; 1×1 (pointwise) convolutions take this path too (a
// plain GEMM over C with a 1-entry window).
// Predicted: ~40-60 % of cuDNN f32 on 3×3 layers like res3x3 (cuDNN adds f32 Winograd/
// FFT and better pipelining); close to 05's dense efficiency on large pointwise layers.
// Edges: zero-filled gathers (image borders, tile tails) and predicated stores.
#include "cuda/own/common.cuh"

namespace lb::cuda::own {
namespace {

constexpr int BM = 64;  // block tile: output pixels
constexpr int BN = 64;  // block tile: output channels
constexpr int BK = 16;  // taps per shared-memory step
constexpr int TM = 4;   // outputs per thread along pixels (strided by BM/TM)
constexpr int TN = 4;   // outputs per thread along channels (strided by BN/TN)
constexpr int PAD = 2;  // Bs row stride ≡ 2 (mod 32): its transposed stores hit 32 banks
constexpr int THREADS = (BM / TM) * (BN / TN);
static_assert(BM % TM == 0 && BN % TN == 0, "TM, TN must divide the block tile");
static_assert(THREADS <= 1024 && THREADS % 32 == 0, "whole warps, at most 1024 threads");
static_assert(THREADS % BM == 0, "each thread gathers for one fixed pixel of the tile");
static_assert((BM * BK) % THREADS == 0 && (BN * BK) % THREADS == 0, "every thread loads the same count");

__global__ void __launch_bounds__(THREADS)
    implicit_gemm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                         const float* __restrict__ bias, float* __restrict__ y, const Tap* __restrict__ table,
                         Conv cv) {
  constexpr int RS = BM / TM, CS = BN / TN;
  __shared__ float As[BK][BM];        // As[tap][pixel]
  __shared__ float Bs[BK][BN + PAD];  // Bs[tap][channel]
  const int t = threadIdx.x;
  const int Cg = cv.c / cv.g, Kg = cv.k / cv.g, taps = Cg * cv.r * cv.s;
  const int PQ = cv.p * cv.q, pixels = cv.n * PQ, HW = cv.h * cv.w_;
  const int grp = blockIdx.z;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;

  // The pixel this thread gathers for, decoded once.
  const int gm = m0 + t % BM;
  const bool pixel_ok = gm < pixels;
  int x_base = 0, ih0 = 0, iw0 = 0;
  if (pixel_ok) {
    const int img = gm / PQ, pq = gm % PQ;
    x_base = (img * cv.c + grp * Cg) * HW;  // first channel of this group in image img
    ih0 = pq / cv.q * cv.sh - cv.ph;
    iw0 = pq % cv.q * cv.sw - cv.pw;
  }
  const float* wg = w + grp * Kg * taps;  // this group's Kg×taps block of W

  const int tm = t % RS, tn = t / RS;  // outputs: pixels tm + i·RS, channels tn + j·CS
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < taps; k0 += BK) {
#pragma unroll
    for (int i = t; i < BM * BK; i += THREADS) {  // i % BM == t % BM: always this thread's pixel
      const int tap = k0 + i / BM;
      float v = 0.0f;
      if (pixel_ok && tap < taps) {
        const Tap e = table[tap];
        const int h = ih0 + e.dy, wi = iw0 + e.dx;
        if (h >= 0 && h < cv.h && wi >= 0 && wi < cv.w_) v = x[x_base + e.plane + h * cv.w_ + wi];
      }
      As[i / BM][i % BM] = v;
    }
#pragma unroll
    for (int i = t; i < BN * BK; i += THREADS) {
      const int kk = i % BK, kl = n0 + i / BK, tap = k0 + kk;
      Bs[kk][i / BK] = (kl < Kg && tap < taps) ? wg[kl * taps + tap] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float ra[TM], rb[TN];
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
    if (m >= pixels) continue;
    const int img = m / PQ, pq = m % PQ;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int kl = n0 + tn + j * CS;
      if (kl >= Kg) continue;
      const int k = grp * Kg + kl;
      y[(img * cv.k + k) * PQ + pq] = epilogue(acc[i][j], bias, k, cv.relu);
    }
  }
}

}  // namespace

void conv2d_implicit_gemm(const Conv& c, const Tap* table) {
  const int pixels = c.n * c.p * c.q, kg = c.k / c.g;
  const dim3 grid(ceil_div(pixels, BM), ceil_div(kg, BN), c.g);
  check_grid(grid.x, grid.y, grid.z, "conv2d.cuda.implicit_gemm");
  implicit_gemm_kernel<<<grid, THREADS>>>(c.x, c.w, c.bias, c.y, table, c);
  LB_OWN_LAUNCHED();
}

}  // namespace lb::cuda::own
