// AVX2 micro-kernel, 5×16 f32 tiles: 10 ymm accumulators (of 16), two ymm of B and one
// broadcast per row. Per k step 10 FMAs of 8 lanes against 2 loads + 5 broadcasts: FMA-bound
// on two 256-bit pipes, i.e. at best half the AVX-512 tile's rate on a machine that has both.
// 5 rows rather than the classic 6: one register pair to spare, nearly the same FMAs per
// load (10 : 7 against 12 : 8).
// Compiled with -mavx2 -mfma.
#include <immintrin.h>

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

// The full 5-row tile's k loop in assembly: from intrinsics GCC 12 keeps this tile's
// accumulators in memory, storing each on every k step (measured: 23 % of peak).
void full_sums(int64_t kc, const float* a, const float* b, float* t) {
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
      "test %[kc], %[kc]\n\t"
      "jz 2f\n\t"
      "1:\n\t"
      "vmovaps (%[b]), %%ymm0\n\t"
      "vmovaps 32(%[b]), %%ymm1\n\t"
      "vbroadcastss 0(%[a]), %%ymm2\n\t"
      "vfmadd231ps %%ymm0, %%ymm2, %%ymm4\n\t"
      "vfmadd231ps %%ymm1, %%ymm2, %%ymm5\n\t"
      "vbroadcastss 4(%[a]), %%ymm2\n\t"
      "vfmadd231ps %%ymm0, %%ymm2, %%ymm6\n\t"
      "vfmadd231ps %%ymm1, %%ymm2, %%ymm7\n\t"
      "vbroadcastss 8(%[a]), %%ymm2\n\t"
      "vfmadd231ps %%ymm0, %%ymm2, %%ymm8\n\t"
      "vfmadd231ps %%ymm1, %%ymm2, %%ymm9\n\t"
      "vbroadcastss 12(%[a]), %%ymm2\n\t"
      "vfmadd231ps %%ymm0, %%ymm2, %%ymm10\n\t"
      "vfmadd231ps %%ymm1, %%ymm2, %%ymm11\n\t"
      "vbroadcastss 16(%[a]), %%ymm2\n\t"
      "vfmadd231ps %%ymm0, %%ymm2, %%ymm12\n\t"
      "vfmadd231ps %%ymm1, %%ymm2, %%ymm13\n\t"
      "add $20, %[a]\n\t"
      "add $64, %[b]\n\t"
      "dec %[kc]\n\t"
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
      : [a] "+r"(a), [b] "+r"(b), [kc] "+r"(kc)
      : [t] "r"(t)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "memory", "cc");
}

template <int M>
void tile(const UkArgs& u) {
  // The sums leave the registers through t (the epilogue reads them from there).
  alignas(32) float t[M * NR];
  if constexpr (M == MR) {
    full_sums(u.kc, static_cast<const float*>(u.a), static_cast<const float*>(u.b), t);
  } else {
    __m256 acc[M][2];
    for (int i = 0; i < M; ++i)
      acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    const float* a = static_cast<const float*>(u.a);
    const float* b = static_cast<const float*>(u.b);
    for (int64_t k = 0; k < u.kc; ++k, a += MR, b += NR) {
      const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
      for (int i = 0; i < M; ++i) {
        const __m256 ai = _mm256_broadcast_ss(a + i);
        acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
      }
    }
    for (int i = 0; i < M; ++i)
      for (int h = 0; h < 2; ++h)
        _mm256_store_ps(t + i * NR + 8 * h, acc[i][h]);
  }
  const __m256i mask[2] = {mask_of(u.n), mask_of(u.n - 8)};
  __m256 bias_col[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  if (u.last && u.bias_col)
    for (int h = 0; h < 2; ++h)
      bias_col[h] = _mm256_maskload_ps(u.bias_col + 8 * h, mask[h]);
  for (int i = 0; i < M; ++i) {
    float* c = u.c + i * u.ldc;
    for (int h = 0; h < 2; ++h) {
      __m256 v = _mm256_load_ps(t + i * NR + 8 * h);
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

}  // namespace

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

}  // namespace lb::cpu
