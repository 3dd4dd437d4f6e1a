// The channels-as-lanes compute of 3×3 depthwise convolution, shared by conv2d.cpu.depthwise
// (NCHW: its c8 path, AVX2, transposes planes into nChw8c bands around it) and
// conv2d.cpu.depthwise_blocked (reads and writes nChwLc directly: L = 16 on AVX-512, 8 on
// AVX2): L channels are the L lanes of a vector, so every output pixel is 9 FMAs of whole
// vectors, with the weights packed as [C/L][3][3][L] and the bias as [C/L][L].
// Written once over a lanes type (Lanes8, Lanes16) whose operations carry the target
// attribute; the callers' per-ISA entry points are target + flatten, which inlines it all.
#pragma once

#include <cstdint>

#include "kernels/cpu/simd.h"

namespace lb::cpu {

// Bytes of x and y together past which a depthwise layer is taken to have outgrown the
// caches (batch 32 of MobileNet's layers; batch 1 stays below): both depthwise kernels then
// prefetch the input and (stride 1) store y non-temporally.
constexpr int64_t kOutgrowsCachesBytes = int64_t(8) << 20;

// 8 channels in a ymm register (AVX2). Outputs per step of lane_outputs() by stride (9
// weights, ≤ 6 accumulators and the loaded input: ≤ 16 vector registers). Measured on the
// AVX2 host: stride 2, 6 ahead of 4 (dw13 0.53-0.59× → 0.69-0.70× of oneDNN, 1 thread);
// stride 1, 4 / 5 / 6 within the noise, 5 slightly ahead.
struct Lanes8 {
  static constexpr int kLanes = 8;
  static constexpr int kStep[2] = {5, 6};
  using V = __m256;
  LB_TARGET_AVX2 static inline V load(const float* p) { return _mm256_load_ps(p); }
  LB_TARGET_AVX2 static inline void store(float* p, V v) { _mm256_store_ps(p, v); }
  // Non-temporal store (p 32-byte aligned), and the fence that orders them before the return.
  LB_TARGET_AVX2 static inline void stream(float* p, V v) { _mm256_stream_ps(p, v); }
  LB_TARGET_AVX2 static inline void fence() { _mm_sfence(); }
  LB_TARGET_AVX2 static inline V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  LB_TARGET_AVX2 static inline V max0(V a) { return _mm256_max_ps(a, _mm256_setzero_ps()); }
};

// 16 channels in a zmm register (AVX-512; 32 registers, so longer steps fit).
struct Lanes16 {
  static constexpr int kLanes = 16;
  static constexpr int kStep[2] = {5, 6};
  using V = __m512;
  LB_TARGET_AVX512 static inline V load(const float* p) { return _mm512_load_ps(p); }
  LB_TARGET_AVX512 static inline void store(float* p, V v) { _mm512_store_ps(p, v); }
  LB_TARGET_AVX512 static inline void stream(float* p, V v) { _mm512_stream_ps(p, v); }
  LB_TARGET_AVX512 static inline void fence() { _mm_sfence(); }
  LB_TARGET_AVX512 static inline V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  LB_TARGET_AVX512 static inline V max0(V a) { return _mm512_max_ps(a, _mm512_setzero_ps()); }
};

// NQ consecutive outputs of one row into out[L·k .. L·k + L-1], k < NQ: output k's tap (r, s)
// is input pixel col + k·S + s of rows[r] (L channels each, so at rows[r] + L·(col + k·S + s)).
// Per kernel row, the (NQ-1)·S + 3 input pixels are loaded once each, every one feeding the
// outputs whose taps it is (stride 1, NQ = 5: 21 loads per 45 FMAs). STREAM: stored
// non-temporally (the caller fences before its results are read).
template <class I, int S, int NQ, bool STREAM = false>
inline void lane_outputs(const float* const (&rows)[3], int64_t col, const typename I::V (&wv)[3][3],
                         const float* bias, bool relu, float* out) {
  constexpr int L = I::kLanes;
  typename I::V acc[NQ];
  for (int k = 0; k < NQ; ++k)
    acc[k] = I::load(bias);
  for (int r = 0; r < 3; ++r) {
    const float* row = rows[r] + L * col;
    for (int c = 0; c < (NQ - 1) * S + 3; ++c) {
      const typename I::V v = I::load(row + L * c);
      for (int k = 0; k < NQ; ++k) {
        const int s = c - k * S;
        if (s >= 0 && s <= 2) acc[k] = I::fma(v, wv[r][s], acc[k]);
      }
    }
  }
  for (int k = 0; k < NQ; ++k) {
    const typename I::V v = relu ? I::max0(acc[k]) : acc[k];
    if constexpr (STREAM)
      I::stream(out + L * k, v);
    else
      I::store(out + L * k, v);
  }
}

// The last 1 ≤ n ≤ NQ outputs of a row: lane_outputs() with NQ = n.
template <class I, int S, int NQ, bool STREAM = false>
inline void lane_last_outputs(const float* const (&rows)[3], int64_t col, const typename I::V (&wv)[3][3],
                              const float* bias, bool relu, float* out, int64_t n) {
  if constexpr (NQ > 1)
    if (n < NQ) return lane_last_outputs<I, S, NQ - 1, STREAM>(rows, col, wv, bias, relu, out, n);
  lane_outputs<I, S, NQ, STREAM>(rows, col, wv, bias, relu, out);
}

// One group's 9 weight vectors (wg: [3][3][L], packed by lane_pack()).
template <class I>
inline void lane_weights(const float* wg, typename I::V (&wv)[3][3]) {
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 3; ++s)
      wv[r][s] = I::load(wg + I::kLanes * (3 * r + s));
}

// W (C×3×3) and b (C) packed for `groups` groups of L channels: wpack [groups][3][3][L],
// bpack [groups][L], the lanes of channels ≥ C zero (a zero-padded last group).
inline void lane_pack(const float* w, const float* b, int64_t C, int64_t groups, int L, float* wpack,
                      float* bpack) {
  for (int64_t ch = 0; ch < L * groups; ++ch) {
    for (int64_t t = 0; t < 9; ++t)
      wpack[9 * L * (ch / L) + L * t + ch % L] = ch < C ? w[9 * ch + t] : 0.0f;
    bpack[ch] = ch < C ? b[ch] : 0.0f;
  }
}

}  // namespace lb::cpu
