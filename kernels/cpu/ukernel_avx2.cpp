// AVX2 micro-kernel, 5×16 f32 tiles: 10 ymm accumulators (of 16), two ymm of B and one
// broadcast per row. Per k step 10 FMAs of 8 lanes against 2 loads + 5 broadcasts: FMA-bound
// on two 256-bit pipes, i.e. at best half the AVX-512 tile's rate on a machine that has both.
// 5 rows rather than the classic 6: one register pair to spare, nearly the same FMAs per
// load (10 : 7 against 12 : 8).
// The k loop alone, A and B in L1, runs at 90 % of one core's FMA peak (kc = 256) on the
// 2-core AMD EPYC Zen 3 VM; the whole 1024³ GEMM ran at 54 %. The rest went to C, read and
// written once per 256 of depth by every tile: through masked moves (VMASKMOVPS) for every
// tile, and missing the caches (C's rows are 4 KB apart and C outgrows L2). Now a full tile
// moves C with plain unaligned loads and stores (masks only at the right edge: 54 % → 63 %
// of peak) and prefetches its C rows before its k loop, 5 × 256 cycles ahead of their use
// (→ 70 %; one run each). Measured on that VM, 1 thread, three alternating runs of the old
// and new builds (results/cpu-zen3-2core/2026-12-02_avx2-gemm-epilogue): GEMM 1024³ 1.61× faster
// (0.57–0.66× → 0.91–0.97× oneDNN's inner product), the LSTM 512 batch 64 1.47×, dense
// 64×4096→4096 1.36×, MobileNet's pointwise 1×1 layers 1.25–1.40×. (Prefetching the next
// tile's rows as well made small-depth pointwise layers slower: too many misses in flight.)
// Where the caller asks (UkArgs::stream: C written once and far larger than the caches,
// conv2d.cpp's rule), a full aligned tile stores with MOVNTPS: no read for ownership, no C
// prefetch (the driver fences after its last tile).
// A full tile's epilogue (C's partial sums, bias, ReLU, the stores) runs in the same assembly
// as its k loop, on the accumulators in registers; it went through a stack copy of the sums
// and C++ that read the arguments again after every store to C (they might alias): 60–69 ns
// of fixed cost per tile, now 19–21 ns (stand-alone, 20,000 tiles, best of 30). That cost
// weighs where the depth is small: MobileNet's pw2 (32 deep) 1.69× faster at 1 thread.
// Alternating old and new builds (the same VM, 4 runs at 1 thread / 3 at 2, the median of each
// case's fastest repetition; results/cpu-zen3-2core/2026-12-02_avx2-tile-register-epilogue):
// GEMM 1024³ 1.09× / 1.07×, dense 64×4096→4096 1.14× / 1.09×, LSTM 512 batch 64 1.02× /
// 1.08×, pointwise pw2 1.69× / 1.26×, pw4 1.11× / 1.08×, pw14 1.09× / 1.04×; the untouched
// 3×3 pixel tile (control) 1.00× / 1.07×. Tiles of fewer rows (M = 64 = 12·5 + 4) take the
// same assembly since: pw2 a further 1.09×, dense 64×4096→4096 1.06×, the control 1.02×
// (3 alternating runs at 1 thread, same VM; ab_rows.csv there).
// One row of C (batch-1 dense, a GEMV: memory-bound on W's bytes): the tile reads one B panel
// at a time, front to back, a single stream: 10–11 GB/s from DRAM on that VM, where oneDNN's
// inner product reads its weights at ~17 GB/s (DRAM peak 22 GB/s at 1 thread). A loop over
// 16·P columns of P panels at once keeps P streams in flight; stand-alone over 64 MB of
// panels it read 12.6 / 17.5 / 20.6 GB/s for P = 2 / 4 / 8 (prefetching the next panels
// from one stream instead: no gain). row_panels uses P = 4 (8 accumulators, no spills).
// Measured (same VM, three alternating runs per build, results/cpu-zen3-2core/
// 2026-12-02_avx2-gemv-row-panels): 1×4096→4096 1.42× / 1.35× faster at 1 / 2 threads
// (0.57–0.77× → 0.87–1.01× oneDNN), AlexNet fc6 and fc8 1.26–1.73×, MobileNet's fc
// (weights in L3) 1.18–1.20×.
// Compiled with -mavx2 -mfma.
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/ukernel.h"

namespace lb::cpu {
namespace {

constexpr int MR = 5;
constexpr int NR = 16;
static_assert(MR * NR / 8 + NR / 8 <= 16, "accumulators and B must fit the 16 ymm registers");

inline __m256i mask_of(int n) {  // the first n (clamped to 0..8) lanes set
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
}

// A full-width tile of M ≤ 5 rows in assembly, k loop and epilogue, the sums never leaving
// the registers (rows past M assembled out: .if on the immediate M). From intrinsics GCC 12
// keeps the 5-row tile's accumulators in memory, storing each on every k step (measured:
// 23 % of peak). flags: kLoadC adds C's partial sums; kLast applies bias_row (one float per
// row) and bias_col (16 floats) where not null, and kRelu; kStream stores with MOVNTPS (C
// 32-byte aligned), else MOVUPS.
constexpr int64_t kLoadC = 1, kLast = 2, kRelu = 4, kStream = 8;
template <int M>
void full_tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc_bytes, int64_t flags,
               const float* bias_row, const float* bias_col) {
  static_assert(M >= 1 && M <= MR);
  const float* p = nullptr;  // C's row being read or written
  asm volatile(
      "vxorps %%ymm4, %%ymm4, %%ymm4\n\t"
      "vxorps %%ymm5, %%ymm5, %%ymm5\n\t"
      ".if %c[m] > 1\n\t"
      "vxorps %%ymm6, %%ymm6, %%ymm6\n\t"
      "vxorps %%ymm7, %%ymm7, %%ymm7\n\t"
      ".endif\n\t"
      ".if %c[m] > 2\n\t"
      "vxorps %%ymm8, %%ymm8, %%ymm8\n\t"
      "vxorps %%ymm9, %%ymm9, %%ymm9\n\t"
      ".endif\n\t"
      ".if %c[m] > 3\n\t"
      "vxorps %%ymm10, %%ymm10, %%ymm10\n\t"
      "vxorps %%ymm11, %%ymm11, %%ymm11\n\t"
      ".endif\n\t"
      ".if %c[m] > 4\n\t"
      "vxorps %%ymm12, %%ymm12, %%ymm12\n\t"
      "vxorps %%ymm13, %%ymm13, %%ymm13\n\t"
      ".endif\n\t"
      "test %[kc], %[kc]\n\t"
      "jz 2f\n\t"
      "1:\n\t"
      "vmovaps (%[b]), %%ymm0\n\t"
      "vmovaps 32(%[b]), %%ymm1\n\t"
      "vbroadcastss 0(%[a]), %%ymm2\n\t"
      "vfmadd231ps %%ymm0, %%ymm2, %%ymm4\n\t"
      "vfmadd231ps %%ymm1, %%ymm2, %%ymm5\n\t"
      ".if %c[m] > 1\n\t"
      "vbroadcastss 4(%[a]), %%ymm2\n\t"
      "vfmadd231ps %%ymm0, %%ymm2, %%ymm6\n\t"
      "vfmadd231ps %%ymm1, %%ymm2, %%ymm7\n\t"
      ".endif\n\t"
      ".if %c[m] > 2\n\t"
      "vbroadcastss 8(%[a]), %%ymm2\n\t"
      "vfmadd231ps %%ymm0, %%ymm2, %%ymm8\n\t"
      "vfmadd231ps %%ymm1, %%ymm2, %%ymm9\n\t"
      ".endif\n\t"
      ".if %c[m] > 3\n\t"
      "vbroadcastss 12(%[a]), %%ymm2\n\t"
      "vfmadd231ps %%ymm0, %%ymm2, %%ymm10\n\t"
      "vfmadd231ps %%ymm1, %%ymm2, %%ymm11\n\t"
      ".endif\n\t"
      ".if %c[m] > 4\n\t"
      "vbroadcastss 16(%[a]), %%ymm2\n\t"
      "vfmadd231ps %%ymm0, %%ymm2, %%ymm12\n\t"
      "vfmadd231ps %%ymm1, %%ymm2, %%ymm13\n\t"
      ".endif\n\t"
      "add $20, %[a]\n\t"
      "add $64, %[b]\n\t"
      "dec %[kc]\n\t"
      "jnz 1b\n\t"
      "2:\n\t"
      "test %[load_c], %[flags]\n\t"
      "jz 3f\n\t"
      "mov %[c], %[p]\n\t"
      "vaddps (%[p]), %%ymm4, %%ymm4\n\t"
      "vaddps 32(%[p]), %%ymm5, %%ymm5\n\t"
      ".if %c[m] > 1\n\t"
      "add %[ldc], %[p]\n\t"
      "vaddps (%[p]), %%ymm6, %%ymm6\n\t"
      "vaddps 32(%[p]), %%ymm7, %%ymm7\n\t"
      ".endif\n\t"
      ".if %c[m] > 2\n\t"
      "add %[ldc], %[p]\n\t"
      "vaddps (%[p]), %%ymm8, %%ymm8\n\t"
      "vaddps 32(%[p]), %%ymm9, %%ymm9\n\t"
      ".endif\n\t"
      ".if %c[m] > 3\n\t"
      "add %[ldc], %[p]\n\t"
      "vaddps (%[p]), %%ymm10, %%ymm10\n\t"
      "vaddps 32(%[p]), %%ymm11, %%ymm11\n\t"
      ".endif\n\t"
      ".if %c[m] > 4\n\t"
      "add %[ldc], %[p]\n\t"
      "vaddps (%[p]), %%ymm12, %%ymm12\n\t"
      "vaddps 32(%[p]), %%ymm13, %%ymm13\n\t"
      ".endif\n\t"
      "3:\n\t"
      "test %[last], %[flags]\n\t"
      "jz 6f\n\t"
      "test %[bias_row], %[bias_row]\n\t"
      "jz 4f\n\t"
      "vbroadcastss 0(%[bias_row]), %%ymm14\n\t"
      "vaddps %%ymm14, %%ymm4, %%ymm4\n\t"
      "vaddps %%ymm14, %%ymm5, %%ymm5\n\t"
      ".if %c[m] > 1\n\t"
      "vbroadcastss 4(%[bias_row]), %%ymm14\n\t"
      "vaddps %%ymm14, %%ymm6, %%ymm6\n\t"
      "vaddps %%ymm14, %%ymm7, %%ymm7\n\t"
      ".endif\n\t"
      ".if %c[m] > 2\n\t"
      "vbroadcastss 8(%[bias_row]), %%ymm14\n\t"
      "vaddps %%ymm14, %%ymm8, %%ymm8\n\t"
      "vaddps %%ymm14, %%ymm9, %%ymm9\n\t"
      ".endif\n\t"
      ".if %c[m] > 3\n\t"
      "vbroadcastss 12(%[bias_row]), %%ymm14\n\t"
      "vaddps %%ymm14, %%ymm10, %%ymm10\n\t"
      "vaddps %%ymm14, %%ymm11, %%ymm11\n\t"
      ".endif\n\t"
      ".if %c[m] > 4\n\t"
      "vbroadcastss 16(%[bias_row]), %%ymm14\n\t"
      "vaddps %%ymm14, %%ymm12, %%ymm12\n\t"
      "vaddps %%ymm14, %%ymm13, %%ymm13\n\t"
      ".endif\n\t"
      "4:\n\t"
      "test %[bias_col], %[bias_col]\n\t"
      "jz 5f\n\t"
      "vmovups (%[bias_col]), %%ymm14\n\t"
      "vmovups 32(%[bias_col]), %%ymm15\n\t"
      "vaddps %%ymm14, %%ymm4, %%ymm4\n\t"
      "vaddps %%ymm15, %%ymm5, %%ymm5\n\t"
      ".if %c[m] > 1\n\t"
      "vaddps %%ymm14, %%ymm6, %%ymm6\n\t"
      "vaddps %%ymm15, %%ymm7, %%ymm7\n\t"
      ".endif\n\t"
      ".if %c[m] > 2\n\t"
      "vaddps %%ymm14, %%ymm8, %%ymm8\n\t"
      "vaddps %%ymm15, %%ymm9, %%ymm9\n\t"
      ".endif\n\t"
      ".if %c[m] > 3\n\t"
      "vaddps %%ymm14, %%ymm10, %%ymm10\n\t"
      "vaddps %%ymm15, %%ymm11, %%ymm11\n\t"
      ".endif\n\t"
      ".if %c[m] > 4\n\t"
      "vaddps %%ymm14, %%ymm12, %%ymm12\n\t"
      "vaddps %%ymm15, %%ymm13, %%ymm13\n\t"
      ".endif\n\t"
      "5:\n\t"
      "test %[relu], %[flags]\n\t"
      "jz 6f\n\t"
      "vxorps %%ymm14, %%ymm14, %%ymm14\n\t"
      "vmaxps %%ymm14, %%ymm4, %%ymm4\n\t"
      "vmaxps %%ymm14, %%ymm5, %%ymm5\n\t"
      ".if %c[m] > 1\n\t"
      "vmaxps %%ymm14, %%ymm6, %%ymm6\n\t"
      "vmaxps %%ymm14, %%ymm7, %%ymm7\n\t"
      ".endif\n\t"
      ".if %c[m] > 2\n\t"
      "vmaxps %%ymm14, %%ymm8, %%ymm8\n\t"
      "vmaxps %%ymm14, %%ymm9, %%ymm9\n\t"
      ".endif\n\t"
      ".if %c[m] > 3\n\t"
      "vmaxps %%ymm14, %%ymm10, %%ymm10\n\t"
      "vmaxps %%ymm14, %%ymm11, %%ymm11\n\t"
      ".endif\n\t"
      ".if %c[m] > 4\n\t"
      "vmaxps %%ymm14, %%ymm12, %%ymm12\n\t"
      "vmaxps %%ymm14, %%ymm13, %%ymm13\n\t"
      ".endif\n\t"
      "6:\n\t"
      "test %[stream], %[flags]\n\t"
      "jnz 7f\n\t"
      "mov %[c], %[p]\n\t"
      "vmovups %%ymm4, (%[p])\n\t"
      "vmovups %%ymm5, 32(%[p])\n\t"
      ".if %c[m] > 1\n\t"
      "add %[ldc], %[p]\n\t"
      "vmovups %%ymm6, (%[p])\n\t"
      "vmovups %%ymm7, 32(%[p])\n\t"
      ".endif\n\t"
      ".if %c[m] > 2\n\t"
      "add %[ldc], %[p]\n\t"
      "vmovups %%ymm8, (%[p])\n\t"
      "vmovups %%ymm9, 32(%[p])\n\t"
      ".endif\n\t"
      ".if %c[m] > 3\n\t"
      "add %[ldc], %[p]\n\t"
      "vmovups %%ymm10, (%[p])\n\t"
      "vmovups %%ymm11, 32(%[p])\n\t"
      ".endif\n\t"
      ".if %c[m] > 4\n\t"
      "add %[ldc], %[p]\n\t"
      "vmovups %%ymm12, (%[p])\n\t"
      "vmovups %%ymm13, 32(%[p])\n\t"
      ".endif\n\t"
      "jmp 8f\n\t"
      "7:\n\t"
      "mov %[c], %[p]\n\t"
      "vmovntps %%ymm4, (%[p])\n\t"
      "vmovntps %%ymm5, 32(%[p])\n\t"
      ".if %c[m] > 1\n\t"
      "add %[ldc], %[p]\n\t"
      "vmovntps %%ymm6, (%[p])\n\t"
      "vmovntps %%ymm7, 32(%[p])\n\t"
      ".endif\n\t"
      ".if %c[m] > 2\n\t"
      "add %[ldc], %[p]\n\t"
      "vmovntps %%ymm8, (%[p])\n\t"
      "vmovntps %%ymm9, 32(%[p])\n\t"
      ".endif\n\t"
      ".if %c[m] > 3\n\t"
      "add %[ldc], %[p]\n\t"
      "vmovntps %%ymm10, (%[p])\n\t"
      "vmovntps %%ymm11, 32(%[p])\n\t"
      ".endif\n\t"
      ".if %c[m] > 4\n\t"
      "add %[ldc], %[p]\n\t"
      "vmovntps %%ymm12, (%[p])\n\t"
      "vmovntps %%ymm13, 32(%[p])\n\t"
      ".endif\n\t"
      "8:\n\t"
      : [a] "+r"(a), [b] "+r"(b), [kc] "+r"(kc), [p] "=&r"(p)
      : [c] "r"(c), [ldc] "r"(ldc_bytes), [flags] "r"(flags), [bias_row] "r"(bias_row),
        [bias_col] "r"(bias_col), [m] "i"(M), [load_c] "i"(kLoadC), [last] "i"(kLast), [relu] "i"(kRelu),
        [stream] "i"(kStream)
      : "xmm0", "xmm1", "xmm2", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
        "xmm13", "xmm14", "xmm15", "memory", "cc");
}

// The epilogue of a tile whose f32 sums are in t (M rows of NR, 32-byte aligned), with masks
// for n < NR: scale (int8's), C's partial sums, bias, ReLU, the stores.
template <int M>
void finish(const UkArgs& u, const float* t) {
  const __m256i mask[2] = {mask_of(u.n), mask_of(u.n - 8)};
  __m256 bias_col[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  if (u.last && u.bias_col)
    for (int h = 0; h < 2; ++h)
      bias_col[h] = _mm256_maskload_ps(u.bias_col + 8 * h, mask[h]);
  const __m256 scale = _mm256_set1_ps(u.scale);
  for (int i = 0; i < M; ++i) {
    float* c = u.c + i * u.ldc;
    for (int h = 0; h < 2; ++h) {
      __m256 v = _mm256_load_ps(t + i * NR + 8 * h);
      if (u.scale != 1.0f) v = _mm256_mul_ps(v, scale);
      if (u.load_c) v = _mm256_add_ps(v, _mm256_maskload_ps(c + 8 * h, mask[h]));
      if (u.last) {
        if (u.bias_row) v = _mm256_add_ps(v, _mm256_set1_ps(u.bias_row[i]));
        if (u.bias_col) v = _mm256_add_ps(v, bias_col[h]);
        if (u.relu) v = _mm256_max_ps(v, _mm256_setzero_ps());
      }
      _mm256_maskstore_ps(c + 8 * h, mask[h], v);
    }
  }
}

template <int M>
void tile(const UkArgs& u) {
  // The sums of a tile narrower than NR leave the registers through t (the epilogue below
  // reads them from there, with masks).
  alignas(32) float t[M * NR];
  // Full tiles that bypass the caches store whole 64-byte lines, aligned.
  const bool stream =
      u.stream && u.n == NR && (reinterpret_cast<uintptr_t>(u.c) & 31) == 0 && (u.ldc & 7) == 0;
  for (int i = 0; i < M && u.c && !stream; ++i) {
    const char* row = reinterpret_cast<const char*>(u.c + i * u.ldc);
    _mm_prefetch(row, _MM_HINT_T0);
    _mm_prefetch(row + (u.n - 1) * 4, _MM_HINT_T0);
  }
  const auto* a = static_cast<const float*>(u.a);
  const auto* b = static_cast<const float*>(u.b);
  if (u.n == NR) {  // the whole tile in registers to the end
    const int64_t flags = (u.load_c ? kLoadC : 0) | (u.last ? kLast : 0) | (u.last && u.relu ? kRelu : 0) |
                          (stream ? kStream : 0);
    full_tile<M>(u.kc, a, b, u.c, u.ldc * int64_t(sizeof(float)), flags, u.last ? u.bias_row : nullptr,
                 u.last ? u.bias_col : nullptr);
    return;
  }
  full_tile<M>(u.kc, a, b, t, NR * int64_t(sizeof(float)), 0, nullptr, nullptr);  // the sums into t
  finish<M>(u, t);
}

// Indirect pixel tiles (ukernel.h): 16 channels (2 ymm of A, aligned) × 6 pixels, 12
// accumulators. Per k step one offset, 2 loads of A, 6 broadcasts of B (4-byte loads never
// split across cache lines: a tile loading 8-pixel rows of B as vectors, about half of them
// split, measured 78 % of peak against this one's 90 %), 12 FMAs.
// Where the offsets come in runs of 3 consecutive floats (a 3-wide filter row at unit width
// stride and dilation) a loop step is a run: one offset, 3 steps at displacements 0, 4 and
// 8 bytes, one loop count — 64 instructions per 36 FMAs instead of 75. Measured on the 2-core
// AMD EPYC Zen 3 VM, 3×3 C=K=64 56² batch 1, one build switching between the two per call
// (60 rounds of 5 calls, median ratio to oneDNN's blocked kernel in the same rounds): 0.884 →
// 0.907 and 0.892 → 0.904 at 1 thread, 0.874 → 0.872 and 0.833 → 0.852 at 2 threads: 0–3 %
// faster, below what whole layerbench runs on that shared host can resolve.
// clang-format off
#define LB_PIXEL_STEP(A0, A1, D)                      \
  "vmovaps " A0 "(%[a]), %%ymm0\n\t"                  \
  "vmovaps " A1 "(%[a]), %%ymm1\n\t"                  \
  "vbroadcastss " D "(%[x0], %[tmp], 4), %%ymm2\n\t"  \
  "vfmadd231ps %%ymm0, %%ymm2, %%ymm4\n\t"            \
  "vfmadd231ps %%ymm1, %%ymm2, %%ymm5\n\t"            \
  "vbroadcastss " D "(%[x1], %[tmp], 4), %%ymm3\n\t"  \
  "vfmadd231ps %%ymm0, %%ymm3, %%ymm6\n\t"            \
  "vfmadd231ps %%ymm1, %%ymm3, %%ymm7\n\t"            \
  "vbroadcastss " D "(%[x2], %[tmp], 4), %%ymm2\n\t"  \
  "vfmadd231ps %%ymm0, %%ymm2, %%ymm8\n\t"            \
  "vfmadd231ps %%ymm1, %%ymm2, %%ymm9\n\t"            \
  "vbroadcastss " D "(%[x3], %[tmp], 4), %%ymm3\n\t"  \
  "vfmadd231ps %%ymm0, %%ymm3, %%ymm10\n\t"           \
  "vfmadd231ps %%ymm1, %%ymm3, %%ymm11\n\t"           \
  "vbroadcastss " D "(%[x4], %[tmp], 4), %%ymm2\n\t"  \
  "vfmadd231ps %%ymm0, %%ymm2, %%ymm12\n\t"           \
  "vfmadd231ps %%ymm1, %%ymm2, %%ymm13\n\t"           \
  "vbroadcastss " D "(%[x5], %[tmp], 4), %%ymm3\n\t"  \
  "vfmadd231ps %%ymm0, %%ymm3, %%ymm14\n\t"           \
  "vfmadd231ps %%ymm1, %%ymm3, %%ymm15\n\t"
// clang-format on

// Run = 1: `steps` k steps; Run = 3: `steps` runs of 3.
template <int Run>
void pixel_sums(int64_t steps, const float* a, const float* const* x, const int64_t* off, float* t) {
  static_assert(Run == 1 || Run == 3);
  int64_t tmp = 0;
  const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5];
  asm volatile(
      "vxorps %%ymm4, %%ymm4, %%ymm4\n\t"
      "vxorps %%ymm5, %%ymm5, %%ymm5\n\t"
      "vxorps %%ymm6, %%ymm6, %%ymm6\n\t"
      "vxorps %%ymm7, %%ymm7, %%ymm7\n\t"
      "vxorps %%ymm8, %%ymm8, %%ymm8\n\t"
      "vxorps %%ymm9, %%ymm9, %%ymm9\n\t"
      "vxorps %%ymm10, %%ymm10, %%ymm10\n\t"
      "vxorps %%ymm11, %%ymm11, %%ymm11\n\t"
      "vxorps %%ymm12, %%ymm12, %%ymm12\n\t"
      "vxorps %%ymm13, %%ymm13, %%ymm13\n\t"
      "vxorps %%ymm14, %%ymm14, %%ymm14\n\t"
      "vxorps %%ymm15, %%ymm15, %%ymm15\n\t"
      "test %[steps], %[steps]\n\t"
      "jz 2f\n\t"
      "1:\n\t"
      "mov (%[off]), %[tmp]\n\t"        //
      LB_PIXEL_STEP("0", "32", "")      // the steps of a run: displacements 0, 4 and 8 bytes
      ".if %c[run] == 3\n\t"            //
      LB_PIXEL_STEP("64", "96", "4")    //
      LB_PIXEL_STEP("128", "160", "8")  //
      ".endif\n\t"
      "add %[a_step], %[a]\n\t"
      "add %[off_step], %[off]\n\t"
      "dec %[steps]\n\t"
      "jnz 1b\n\t"
      "2:\n\t"
      "vmovaps %%ymm4, 0(%[t])\n\t"
      "vmovaps %%ymm5, 32(%[t])\n\t"
      "vmovaps %%ymm6, 64(%[t])\n\t"
      "vmovaps %%ymm7, 96(%[t])\n\t"
      "vmovaps %%ymm8, 128(%[t])\n\t"
      "vmovaps %%ymm9, 160(%[t])\n\t"
      "vmovaps %%ymm10, 192(%[t])\n\t"
      "vmovaps %%ymm11, 224(%[t])\n\t"
      "vmovaps %%ymm12, 256(%[t])\n\t"
      "vmovaps %%ymm13, 288(%[t])\n\t"
      "vmovaps %%ymm14, 320(%[t])\n\t"
      "vmovaps %%ymm15, 352(%[t])\n\t"
      : [a] "+r"(a), [off] "+r"(off), [steps] "+r"(steps), [tmp] "=&r"(tmp)
      : [x0] "r"(x0), [x1] "r"(x1), [x2] "r"(x2), [x3] "r"(x3), [x4] "r"(x4), [x5] "r"(x5), [t] "r"(t),
        [run] "i"(Run), [a_step] "i"(Run * 64), [off_step] "i"(Run * 8)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc");
}
#undef LB_PIXEL_STEP

// One row of C across P column panels at once (P·16 columns, 2·P accumulators): per k step
// one broadcast of A and 2·P loads, one from each of P B panels.
template <int P>
void row_panels(const UkArgs& u, int64_t bstride) {
  __m256 acc[P][2];
  for (int p = 0; p < P; ++p)
    acc[p][0] = acc[p][1] = _mm256_setzero_ps();
  const float* a = static_cast<const float*>(u.a);
  const float* b = static_cast<const float*>(u.b);
  for (int64_t k = 0; k < u.kc; ++k, a += MR, b += NR) {
    const __m256 ak = _mm256_broadcast_ss(a);
    for (int p = 0; p < P; ++p) {
      acc[p][0] = _mm256_fmadd_ps(ak, _mm256_load_ps(b + p * bstride), acc[p][0]);
      acc[p][1] = _mm256_fmadd_ps(ak, _mm256_load_ps(b + p * bstride + 8), acc[p][1]);
    }
  }
  for (int p = 0; p < P; ++p)
    for (int h = 0; h < 2; ++h) {
      const int j = p * NR + 8 * h;  // first column of this vector
      if (j >= u.n) return;
      const bool whole = u.n - j >= 8;
      const __m256i mask = mask_of(u.n - j);
      float* c = u.c + j;
      __m256 v = acc[p][h];
      if (u.load_c) v = _mm256_add_ps(v, whole ? _mm256_loadu_ps(c) : _mm256_maskload_ps(c, mask));
      if (u.last) {
        if (u.bias_col)
          v = _mm256_add_ps(
              v, whole ? _mm256_loadu_ps(u.bias_col + j) : _mm256_maskload_ps(u.bias_col + j, mask));
        if (u.bias_row) v = _mm256_add_ps(v, _mm256_set1_ps(u.bias_row[0]));
        if (u.relu) v = _mm256_max_ps(v, _mm256_setzero_ps());
      }
      if (whole)
        _mm256_storeu_ps(c, v);
      else
        _mm256_maskstore_ps(c, mask, v);
    }
}

// u8 · s8 on AVX2, which has no 4-way u8·s8 dot product (AVX-512 VNNI's vpdpbusd) and
// whose 2-way one, vpmaddubsw, saturates its s16 pair sums (255·127·2 > 32767: random
// operands come out wrong). Exact instead: both operands widened to s16 and multiplied by
// vpmaddwd, whose pair sums are s32 — A (u8) zero-extended to u16 when the driver packs it
// (ukernel.h's layout, KG = 2), B (s8, packed once) sign-extended by vpmovsxbw as it is
// loaded. A 4×16 tile: 8 ymm of s32 sums; per k pair 2 widening loads of B, 4 broadcasts of
// an A pair, 8 vpmaddwd (16 products each) and 8 vpaddd.
// Prediction (the 2-core AMD EPYC Zen 3 VM): vpmaddwd issues 2 per cycle there, as the f32
// FMA does, and a vpmaddwd + vpaddd pair measured 5.1 G/s stand-alone, 82 G products/s per
// core against 51 G FMAs/s for f32: the int8 GEMM at most 1.6× the f32 one. oneDNN's
// sequence (vpmaddubsw + vpmaddwd + vpaddd per 32 products, saturating) measured 196 G
// ops/s stand-alone (98 G products/s; its 3×3 convolution ran at 198 G ops/s): ours at most
// about 0.84× its rate where both are compute-bound.
// Measured on that VM against oneDNN, one run, 1 / 2 threads (results/cpu-zen3-2core/
// 2026-12-02_avx2-int8_cpu-vs-onednn): GEMM 1024³ 0.82× / 0.85×, dense 64×4096→4096 0.92× /
// 0.96×, batch 16 1.55× / 1.63×, batch 1 2.79× / 3.75× (oneDNN's int8 GEMV reads W slowly).
constexpr int kMRU8s8 = 4;
// The k loop in assembly, the sums of rows i < M in ymm(8 + 2i) and ymm(9 + 2i), stored to t
// (M rows of 16 s32) at the end: written with intrinsics, GCC 12 kept the accumulators in
// memory, storing them on every k pair.
template <int M>
void u8s8_sums(int64_t pairs, const uint32_t* a, const int8_t* b, int32_t* t) {
  static_assert(M >= 1 && M <= kMRU8s8);
  asm volatile(
      "vpxor %%ymm8, %%ymm8, %%ymm8\n\t"
      "vpxor %%ymm9, %%ymm9, %%ymm9\n\t"
      "vpxor %%ymm10, %%ymm10, %%ymm10\n\t"
      "vpxor %%ymm11, %%ymm11, %%ymm11\n\t"
      "vpxor %%ymm12, %%ymm12, %%ymm12\n\t"
      "vpxor %%ymm13, %%ymm13, %%ymm13\n\t"
      "vpxor %%ymm14, %%ymm14, %%ymm14\n\t"
      "vpxor %%ymm15, %%ymm15, %%ymm15\n\t"
      "test %[pairs], %[pairs]\n\t"
      "jz 2f\n\t"
      "1:\n\t"
      "vpmovsxbw (%[b]), %%ymm0\n\t"
      "vpmovsxbw 16(%[b]), %%ymm1\n\t"
      "vpbroadcastd 0(%[a]), %%ymm2\n\t"
      "vpmaddwd %%ymm0, %%ymm2, %%ymm4\n\t"
      "vpmaddwd %%ymm1, %%ymm2, %%ymm5\n\t"
      "vpaddd %%ymm4, %%ymm8, %%ymm8\n\t"
      "vpaddd %%ymm5, %%ymm9, %%ymm9\n\t"
      ".if %c[m] > 1\n\t"
      "vpbroadcastd 4(%[a]), %%ymm3\n\t"
      "vpmaddwd %%ymm0, %%ymm3, %%ymm6\n\t"
      "vpmaddwd %%ymm1, %%ymm3, %%ymm7\n\t"
      "vpaddd %%ymm6, %%ymm10, %%ymm10\n\t"
      "vpaddd %%ymm7, %%ymm11, %%ymm11\n\t"
      ".endif\n\t"
      ".if %c[m] > 2\n\t"
      "vpbroadcastd 8(%[a]), %%ymm2\n\t"
      "vpmaddwd %%ymm0, %%ymm2, %%ymm4\n\t"
      "vpmaddwd %%ymm1, %%ymm2, %%ymm5\n\t"
      "vpaddd %%ymm4, %%ymm12, %%ymm12\n\t"
      "vpaddd %%ymm5, %%ymm13, %%ymm13\n\t"
      ".endif\n\t"
      ".if %c[m] > 3\n\t"
      "vpbroadcastd 12(%[a]), %%ymm3\n\t"
      "vpmaddwd %%ymm0, %%ymm3, %%ymm6\n\t"
      "vpmaddwd %%ymm1, %%ymm3, %%ymm7\n\t"
      "vpaddd %%ymm6, %%ymm14, %%ymm14\n\t"
      "vpaddd %%ymm7, %%ymm15, %%ymm15\n\t"
      ".endif\n\t"
      "add $16, %[a]\n\t"
      "add $32, %[b]\n\t"
      "dec %[pairs]\n\t"
      "jnz 1b\n\t"
      "2:\n\t"
      "vmovdqa %%ymm8, 0(%[t])\n\t"
      "vmovdqa %%ymm9, 32(%[t])\n\t"
      ".if %c[m] > 1\n\t"
      "vmovdqa %%ymm10, 64(%[t])\n\t"
      "vmovdqa %%ymm11, 96(%[t])\n\t"
      ".endif\n\t"
      ".if %c[m] > 2\n\t"
      "vmovdqa %%ymm12, 128(%[t])\n\t"
      "vmovdqa %%ymm13, 160(%[t])\n\t"
      ".endif\n\t"
      ".if %c[m] > 3\n\t"
      "vmovdqa %%ymm14, 192(%[t])\n\t"
      "vmovdqa %%ymm15, 224(%[t])\n\t"
      ".endif\n\t"
      : [pairs] "+r"(pairs), [a] "+r"(a), [b] "+r"(b)
      : [t] "r"(t), [m] "i"(M)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc");
}

template <int M>
void u8s8_tile(const UkArgs& u) {
  alignas(32) float t[M * NR];  // the s32 sums, then the same converted to f32 in place
  u8s8_sums<M>(u.kc / 2, static_cast<const uint32_t*>(u.a), static_cast<const int8_t*>(u.b),
               reinterpret_cast<int32_t*>(t));
  for (int j = 0; j < M * NR; j += 8)
    _mm256_store_ps(t + j, _mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(t + j))));
  finish<M>(u, t);
}

}  // namespace

void ukr_u8s8_avx2(const UkArgs& u) {
  switch (u.m) {
    case 1:
      return u8s8_tile<1>(u);
    case 2:
      return u8s8_tile<2>(u);
    case 3:
      return u8s8_tile<3>(u);
    default:
      return u8s8_tile<4>(u);
  }
}

void ukr_f32_avx2(const UkArgs& u) {
  switch (u.m) {
    case 1:
      return tile<1>(u);
    case 2:
      return tile<2>(u);
    case 3:
      return tile<3>(u);
    case 4:
      return tile<4>(u);
    default:
      return tile<5>(u);
  }
}

void ukr_f32_avx2_row(const UkArgs& u, int64_t bstride) {
  const int64_t stride = bstride / int64_t(sizeof(float));
  switch ((u.n + NR - 1) / NR) {
    case 1:
      return row_panels<1>(u, stride);
    case 2:
      return row_panels<2>(u, stride);
    case 3:
      return row_panels<3>(u, stride);
    default:
      return row_panels<4>(u, stride);
  }
}

// r[j] (8 lanes) ← column j of the 8×8 matrix whose rows were r[0..7].
inline void transpose8(__m256 r[8]) {
  __m256 t[8], s[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    s[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    s[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    s[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    s[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
  }
}

// The usual tile: 6 pixels consecutive in C's rows. Each channel's 6 results, transposed
// into one vector, leave as 4 + 2 floats: 32 stores instead of 96. (Storing the results took
// ≈ 6 % of the 3×3 64-channel layer's loop either way, within the noise of a shared host:
// it is the output lines' misses more than the instructions.)
void store_consecutive(const IndirectPixelsArgs& u, const float* t) {
  for (int h = 0; h < 2 && 8 * h < u.m; ++h) {
    __m256 r[8];
    for (int j = 0; j < kPixelsAvx2; ++j)
      r[j] = _mm256_load_ps(t + j * kChannelsAvx2 + 8 * h);
    r[6] = r[7] = _mm256_setzero_ps();
    transpose8(r);
    for (int i = 0; i < 8 && 8 * h + i < u.m; ++i) {
      const int ch = 8 * h + i;
      float* c = u.c[0] + ch * u.ldc;
      __m128 lo = _mm256_castps256_ps128(r[i]), hi = _mm256_extractf128_ps(r[i], 1);
      if (u.load_c) {
        lo = _mm_add_ps(lo, _mm_loadu_ps(c));
        hi = _mm_add_ps(hi, _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c + 4))));
      }
      if (u.last) {
        if (u.bias_row) {
          const __m128 b = _mm_set1_ps(u.bias_row[ch]);
          lo = _mm_add_ps(lo, b);
          hi = _mm_add_ps(hi, b);
        }
        if (u.relu) {
          lo = _mm_max_ps(lo, _mm_setzero_ps());
          hi = _mm_max_ps(hi, _mm_setzero_ps());
        }
      }
      _mm_storeu_ps(c, lo);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(c + 4), _mm_castps_si128(hi));  // two floats, unaligned
    }
  }
}

void ukr_f32_indirect_pixels_avx2(const IndirectPixelsArgs& u) {
  alignas(32) float t[kPixelsAvx2 * kChannelsAvx2];  // [pixel][channel]
  if (u.runs_of_3)
    pixel_sums<3>(u.kc / 3, u.a, u.x, u.off, t);
  else
    pixel_sums<1>(u.kc, u.a, u.x, u.off, t);
  if (u.n == kPixelsAvx2 && u.c[kPixelsAvx2 - 1] == u.c[0] + (kPixelsAvx2 - 1))
    return store_consecutive(u, t);
  __m256 bias[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  if (u.last && u.bias_row)
    for (int h = 0; h < 2; ++h)
      bias[h] = _mm256_maskload_ps(u.bias_row + 8 * h, mask_of(u.m - 8 * h));
  for (int j = 0; j < u.n; ++j) {
    float* tj = t + j * kChannelsAvx2;
    if (u.last)
      for (int h = 0; h < 2; ++h) {
        __m256 v = _mm256_add_ps(_mm256_load_ps(tj + 8 * h), bias[h]);
        if (u.relu && !u.load_c) v = _mm256_max_ps(v, _mm256_setzero_ps());
        _mm256_store_ps(tj + 8 * h, v);
      }
    float* c = u.c[j];
    if (u.load_c) {
      for (int i = 0; i < u.m; ++i) {
        const float v = tj[i] + c[i * u.ldc];
        c[i * u.ldc] = u.last && u.relu && v < 0.0f ? 0.0f : v;
      }
    } else {
      for (int i = 0; i < u.m; ++i)
        c[i * u.ldc] = tj[i];
    }
  }
}

}  // namespace lb::cpu
