// AVX2 micro-kernel, 6×16 f32 tiles: 12 ymm accumulators (of 16), two ymm of B and one
// broadcast per row. Per k step 12 FMAs of 8 lanes against 2 loads + 6 broadcasts: FMA-bound
// on two 256-bit pipes, i.e. at best half the AVX-512 tile's rate on a machine that has both.
// Compiled with -mavx2 -mfma.
#include <immintrin.h>

#include "kernels/cpu/ukernel.h"

namespace lb::cpu {
namespace {

constexpr int MR = 6;
constexpr int NR = 16;
static_assert(MR * NR / 8 + NR / 8 <= 16, "accumulators and B must fit the 16 ymm registers");

inline __m256i mask_of(int n) {  // the first n (clamped to 0..8) lanes set
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
}

template <int M>
void tile(const UkArgs& u) {
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
  const __m256i mask[2] = {mask_of(u.n), mask_of(u.n - 8)};
  __m256 bias_col[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  if (u.last && u.bias_col)
    for (int h = 0; h < 2; ++h)
      bias_col[h] = _mm256_maskload_ps(u.bias_col + 8 * h, mask[h]);
  for (int i = 0; i < M; ++i) {
    float* c = u.c + i * u.ldc;
    for (int h = 0; h < 2; ++h) {
      __m256 v = acc[i][h];
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
    case 1: return tile<1>(u);
    case 2: return tile<2>(u);
    case 3: return tile<3>(u);
    case 4: return tile<4>(u);
    case 5: return tile<5>(u);
    default: return tile<6>(u);
  }
}

}  // namespace lb::cpu
