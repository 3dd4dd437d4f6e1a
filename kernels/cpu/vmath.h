// Vectorised exp, sigmoid and tanh on f32 lanes, one body for AVX-512 and AVX2 (the ISA
// wrappers Avx512 and Avx2, compiled with target attributes: a caller picks one by CPUID).
// The LSTM's cell (lstm.cpp) and softmax (elementwise.cpp) use them.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/simd.h"

namespace lb::cpu {

// exp(x) = 2^k · e^r, k = round(x / ln2), r = x - k·ln2 (ln2 split in two so that r is
// exact), e^r by its Taylor polynomial to r^7 (|r| ≤ 0.347: truncation < 6e-9).
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693147182464599609375f;  // float(ln 2)
constexpr float kLn2Lo = -1.904654323148236e-09f;   // ln 2 - kLn2Hi
constexpr float kExpMin = -87.0f, kExpMax = 88.0f;  // 2^k stays a normal float
constexpr float kExpC[8] = {1.0f, 1.0f, 1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040};
// tanh(x) = x + x·z·(T1 + z·(T2 + ...)), z = x², for |x| < kTanhSmall: the Taylor series
// (coefficients 2^2n (2^2n - 1) B_2n / (2n)!), truncated after x^15: < 1e-8 relative.
constexpr float kTanhSmall = 0.5f;
constexpr float kTanhC[7] = {-1.0f / 3,         2.0f / 15,          -17.0f / 315,          62.0f / 2835,
                             -1382.0f / 155925, 21844.0f / 6081075, -929569.0f / 638512875};

struct Avx512 {
  static constexpr int kLanes = 16;
  using V = __m512;
  LB_TARGET_AVX512 static inline V load(const float* p) { return _mm512_loadu_ps(p); }
  LB_TARGET_AVX512 static inline void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  LB_TARGET_AVX512 static inline V set1(float v) { return _mm512_set1_ps(v); }
  LB_TARGET_AVX512 static inline V add(V a, V b) { return _mm512_add_ps(a, b); }
  LB_TARGET_AVX512 static inline V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  LB_TARGET_AVX512 static inline V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  LB_TARGET_AVX512 static inline V div(V a, V b) { return _mm512_div_ps(a, b); }
  LB_TARGET_AVX512 static inline V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  LB_TARGET_AVX512 static inline V max(V a, V b) { return _mm512_max_ps(a, b); }
  LB_TARGET_AVX512 static inline V max0(V a) { return _mm512_max_ps(a, _mm512_setzero_ps()); }
  LB_TARGET_AVX512 static inline V clamp(V a, float lo, float hi) {
    return _mm512_min_ps(_mm512_max_ps(a, _mm512_set1_ps(lo)), _mm512_set1_ps(hi));
  }
  LB_TARGET_AVX512 static inline V round(V a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  LB_TARGET_AVX512 static inline V scale2(V p, V k) { return _mm512_scalef_ps(p, k); }  // p · 2^k
  LB_TARGET_AVX512 static inline V abs(V a) { return _mm512_abs_ps(a); }
  // |a| carrying the sign of s
  LB_TARGET_AVX512 static inline V with_sign(V a, V s) {
    const __m512i sign = _mm512_set1_epi32(int(0x80000000u));
    return _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_castps_si512(a), _mm512_and_si512(_mm512_castps_si512(s), sign)));
  }
  // small ? a : b, where small = |x| < t
  LB_TARGET_AVX512 static inline V select_below(V x_abs, float t, V a, V b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x_abs, _mm512_set1_ps(t), _CMP_LT_OQ), b, a);
  }
};

struct Avx2 {
  static constexpr int kLanes = 8;
  using V = __m256;
  LB_TARGET_AVX2 static inline V load(const float* p) { return _mm256_loadu_ps(p); }
  LB_TARGET_AVX2 static inline void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  LB_TARGET_AVX2 static inline V set1(float v) { return _mm256_set1_ps(v); }
  LB_TARGET_AVX2 static inline V add(V a, V b) { return _mm256_add_ps(a, b); }
  LB_TARGET_AVX2 static inline V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  LB_TARGET_AVX2 static inline V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  LB_TARGET_AVX2 static inline V div(V a, V b) { return _mm256_div_ps(a, b); }
  LB_TARGET_AVX2 static inline V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  LB_TARGET_AVX2 static inline V max(V a, V b) { return _mm256_max_ps(a, b); }
  LB_TARGET_AVX2 static inline V max0(V a) { return _mm256_max_ps(a, _mm256_setzero_ps()); }
  LB_TARGET_AVX2 static inline V clamp(V a, float lo, float hi) {
    return _mm256_min_ps(_mm256_max_ps(a, _mm256_set1_ps(lo)), _mm256_set1_ps(hi));
  }
  LB_TARGET_AVX2 static inline V round(V a) {
    return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // p · 2^k for integral k in [-126, 127]: k built into a float's exponent field.
  LB_TARGET_AVX2 static inline V scale2(V p, V k) {
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  }
  LB_TARGET_AVX2 static inline V abs(V a) {
    return _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_set1_epi32(int(0x80000000u))), a);
  }
  LB_TARGET_AVX2 static inline V with_sign(V a, V s) {
    return _mm256_or_ps(a, _mm256_and_ps(s, _mm256_castsi256_ps(_mm256_set1_epi32(int(0x80000000u)))));
  }
  LB_TARGET_AVX2 static inline V select_below(V x_abs, float t, V a, V b) {
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x_abs, _mm256_set1_ps(t), _CMP_LT_OQ));
  }
};

template <class I>
inline typename I::V vexp(typename I::V x) {
  using V = typename I::V;
  x = I::clamp(x, kExpMin, kExpMax);
  const V k = I::round(I::mul(x, I::set1(kLog2e)));
  V r = I::fma(k, I::set1(-kLn2Hi), x);
  r = I::fma(k, I::set1(-kLn2Lo), r);
  V p = I::set1(kExpC[7]);
  for (int i = 6; i >= 0; --i)
    p = I::fma(p, r, I::set1(kExpC[i]));
  return I::scale2(p, k);
}

template <class I>
inline typename I::V vsigmoid(typename I::V x) {
  const auto one = I::set1(1.0f);
  return I::div(one, I::add(one, vexp<I>(I::sub(I::set1(0.0f), x))));
}

template <class I>
inline typename I::V vtanh(typename I::V x) {
  using V = typename I::V;
  const V a = I::abs(x), one = I::set1(1.0f);
  // |x| ≥ 0.5: 1 - 2 / (e^{2|x|} + 1), sign restored
  const V big = I::sub(one, I::div(I::set1(2.0f), I::add(vexp<I>(I::add(a, a)), one)));
  // |x| < 0.5: the odd series
  const V z = I::mul(x, x);
  V p = I::set1(kTanhC[6]);
  for (int i = 5; i >= 0; --i)
    p = I::fma(p, z, I::set1(kTanhC[i]));
  const V small = I::fma(I::mul(x, z), p, x);
  return I::select_below(a, kTanhSmall, small, I::with_sign(big, x));
}

}  // namespace lb::cpu
