// The channels-as-lanes ("c8") compute of AVX2 3×3 depthwise convolution, shared by
// conv2d.cpu.depthwise (NCHW: its c8 path transposes planes into nChw8c bands around it)
// and conv2d.cpu.depthwise_blocked (reads and writes nChw8c directly): 8 channels are the
// 8 lanes of a vector, so every output pixel is 9 FMAs of whole vectors, with the weights
// packed as [C/8][3][3][8] and the bias as [C/8][8].
#pragma once

#include <cstdint>

#include "kernels/cpu/simd.h"

namespace lb::cpu {

// Outputs per step of c8_outputs() by stride (9 weights, ≤ 6 accumulators and the loaded
// input: ≤ 16 vector registers). Measured here: stride 2, 6 ahead of 4 (dw13 0.53-0.59× →
// 0.69-0.70× of oneDNN, 1 thread); stride 1, 4 / 5 / 6 within the noise, 5 slightly ahead.
constexpr int kC8Step[2] = {5, 6};

// NQ consecutive outputs of one row into out[8k .. 8k+7], k < NQ: output k's tap (r, s) is
// input pixel col + k·S + s of rows[r] (8 channels each, so at rows[r] + 8·(col + k·S + s)).
// Per kernel row, the (NQ-1)·S + 3 input pixels are loaded once each, every one feeding the
// outputs whose taps it is (stride 1, NQ = 5: 21 loads per 45 FMAs). STREAM: stored
// non-temporally (the caller fences before its results are read).
template <int S, int NQ, bool STREAM = false>
LB_TARGET_AVX2 inline void c8_outputs(const float* const (&rows)[3], int64_t col, const __m256 (&wv)[3][3],
                                      const float* bias, bool relu, float* out) {
  __m256 acc[NQ];
  for (int k = 0; k < NQ; ++k)
    acc[k] = _mm256_load_ps(bias);
  for (int r = 0; r < 3; ++r) {
    const float* row = rows[r] + 8 * col;
    for (int c = 0; c < (NQ - 1) * S + 3; ++c) {
      const __m256 v = _mm256_load_ps(row + 8 * c);
      for (int k = 0; k < NQ; ++k) {
        const int s = c - k * S;
        if (s >= 0 && s <= 2) acc[k] = _mm256_fmadd_ps(v, wv[r][s], acc[k]);
      }
    }
  }
  for (int k = 0; k < NQ; ++k) {
    const __m256 v = relu ? _mm256_max_ps(acc[k], _mm256_setzero_ps()) : acc[k];
    if constexpr (STREAM)
      _mm256_stream_ps(out + 8 * k, v);
    else
      _mm256_store_ps(out + 8 * k, v);
  }
}

// The last 1 ≤ n ≤ NQ outputs of a row: c8_outputs() with NQ = n.
template <int S, int NQ, bool STREAM = false>
LB_TARGET_AVX2 inline void c8_last_outputs(const float* const (&rows)[3], int64_t col,
                                           const __m256 (&wv)[3][3], const float* bias, bool relu, float* out,
                                           int64_t n) {
  if constexpr (NQ > 1)
    if (n < NQ) return c8_last_outputs<S, NQ - 1, STREAM>(rows, col, wv, bias, relu, out, n);
  c8_outputs<S, NQ, STREAM>(rows, col, wv, bias, relu, out);
}

// One group's 9 weight vectors (wg: [3][3][8], packed by c8_pack()).
LB_TARGET_AVX2 inline void c8_weights(const float* wg, __m256 (&wv)[3][3]) {
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 3; ++s)
      wv[r][s] = _mm256_load_ps(wg + 8 * (3 * r + s));
}

// W (C×3×3) and b (C) packed for `groups` groups of 8 channels: wpack [groups][3][3][8],
// bpack [groups][8], the lanes of channels ≥ C zero (a zero-padded last group).
inline void c8_pack(const float* w, const float* b, int64_t C, int64_t groups, float* wpack, float* bpack) {
  for (int64_t ch = 0; ch < 8 * groups; ++ch) {
    for (int64_t t = 0; t < 9; ++t)
      wpack[72 * (ch / 8) + 8 * t + ch % 8] = ch < C ? w[9 * ch + t] : 0.0f;
    bpack[ch] = ch < C ? b[ch] : 0.0f;
  }
}

}  // namespace lb::cpu
