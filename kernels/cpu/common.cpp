#include "kernels/cpu/common.h"

#include <emmintrin.h>

#include <cstring>

#include "kernels/cpu/ukernel.h"

namespace lb::cpu {

void pixel_rows_to_channels(Isa isa, const float* ct, int64_t K, int64_t P, int64_t k0, int64_t k1,
                            float* y) {
  if (isa == Isa::avx512) return transpose_f32_avx512(ct, K, P, k0, k1, y, P);
  pixel_rows_to_channels<float>(ct, K, P, k0, k1, y);
}

namespace {
template <class T>
void interleave(const T* const* c, int have, int64_t n, uint32_t* d, int64_t after) {
  constexpr int kPer = 4 / int(sizeof(T));
  constexpr int64_t kStep = 16 / sizeof(T);  // elements of one 16-byte load
  // Elements [i, i + kStep) of each row into words d[i …], the first `words` of them stored.
  const auto step = [&](int64_t i, int64_t words) {
    __m128i v[kPer], out[4];
    for (int j = 0; j < kPer; ++j)
      v[j] = j < have ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(c[j] + i)) : _mm_setzero_si128();
    if constexpr (kPer == 4) {
      const __m128i ab0 = _mm_unpacklo_epi8(v[0], v[1]), ab1 = _mm_unpackhi_epi8(v[0], v[1]);
      const __m128i cd0 = _mm_unpacklo_epi8(v[2], v[3]), cd1 = _mm_unpackhi_epi8(v[2], v[3]);
      out[0] = _mm_unpacklo_epi16(ab0, cd0);
      out[1] = _mm_unpackhi_epi16(ab0, cd0);
      out[2] = _mm_unpacklo_epi16(ab1, cd1);
      out[3] = _mm_unpackhi_epi16(ab1, cd1);
    } else {
      out[0] = _mm_unpacklo_epi16(v[0], v[1]);
      out[1] = _mm_unpackhi_epi16(v[0], v[1]);
    }
    uint32_t* o = d + i;
    int64_t q = 0;
    for (; q + 4 <= words; q += 4)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + q), out[q / 4]);
    if (q == words) return;
    __m128i rest = out[q / 4];
    if (q + 2 <= words) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(o + q), rest);
      rest = _mm_srli_si128(rest, 8);
      q += 2;
    }
    if (q < words) o[q] = uint32_t(_mm_cvtsi128_si32(rest));
  };
  int64_t i = 0;
  for (; i + kStep <= n; i += kStep)
    step(i, kStep);
  if (i == n) return;
  if (n >= kStep) return step(n - kStep, kStep);
  if (kStep - n <= after) return step(0, n);
  for (; i < n; ++i) {
    uint32_t word = 0;
    for (int j = 0; j < have; ++j)
      word |= uint32_t(c[j][i]) << (j * 32 / kPer);
    d[i] = word;
  }
}
}  // namespace

void interleave_rows(const uint8_t* const* c, int have, int64_t n, uint32_t* d, int64_t after) {
  interleave(c, have, n, d, after);
}
void interleave_rows(const uint16_t* const* c, int have, int64_t n, uint32_t* d, int64_t after) {
  interleave(c, have, n, d, after);
}

void split_phases(bool avx512, const float* row, int64_t iw, int64_t pw, int64_t sw, int64_t phase_w,
                  float* dst, int64_t phase_stride) {
  if (avx512 && (sw == 2 || sw == 4))
    return phase_split_avx512(row, iw, pw, int(sw), phase_w, dst, phase_stride);
  // Phase p holds padded columns p, p + sw, …: input columns w0 + j·sw, w0 = p − pw, of which
  // j in [lo, hi) are in the row (measured: a bounds test per element took 10 % of AlexNet
  // conv1's time on AVX2).
  for (int64_t p = 0; p < sw; ++p) {
    float* d = dst + p * phase_stride;
    const int64_t w0 = p - pw, lo = w0 >= 0 ? 0 : (sw - 1 - w0) / sw;
    const int64_t hi = w0 >= iw ? 0 : std::min(phase_w, (iw - 1 - w0) / sw + 1);
    for (int64_t j = lo; j < hi; ++j)  // a word of any kind: its bytes, not a float's value
      std::memcpy(d + j, row + w0 + j * sw, sizeof(float));
  }
}

std::vector<PixelTile> pixel_tiles(const Conv2d& cv, int64_t width) {
  const int64_t OW = cv.ow();
  if (OW >= width) return plane_panels(cv, width);
  std::vector<PixelTile> tiles;
  for (int64_t oh = 0; oh < cv.oh(); ++oh)
    for (int64_t ow = 0; ow < OW; ow += width)
      tiles.push_back({oh, ow, std::min(width, OW - ow)});
  return tiles;
}

std::vector<PixelTile> plane_panels(const Conv2d& cv, int64_t width) {
  std::vector<PixelTile> tiles;
  const int64_t OW = cv.ow(), P = cv.oh() * OW;
  for (int64_t j = 0; j < P; j += width)
    tiles.push_back({j / OW, j % OW, std::min(width, P - j)});
  return tiles;
}

bool panels_fill_lanes(const Conv2d& cv, int64_t width) {
  const int64_t P = cv.oh() * cv.ow();
  return P * 100 >= ceil_div(P, width) * width * 85;
}

bool tiles_fill_lanes(const Conv2d& cv, int64_t width) {
  return cv.ow() * 4 >= width * 3;
}

std::vector<int64_t> tap_offsets(const Conv2d& cv, int64_t units, int64_t rows, int64_t phase_w,
                                 int64_t phase) {
  std::vector<int64_t> off;
  for (int64_t u = 0; u < units; ++u)
    for (int64_t r = 0; r < cv.kh; ++r)
      for (int64_t s = 0; s < cv.kw; ++s)
        off.push_back((s * cv.dw) % cv.sw * phase + (u * rows + r * cv.dh) * phase_w + (s * cv.dw) / cv.sw);
  return off;
}

void relu_pass(Relu relu, TensorSet& ts, Pool* pool) {
  if (relu != Relu::inplace && relu != Relu::separate) return;
  const Tensor& y = ts.at(Arg::dst);
  Tensor& r = relu == Relu::inplace ? ts.at(Arg::dst) : ts.at(Arg::relu_dst);
  const int64_t n = y.elements();
  const bool bf16 = y.storage() == Storage::bf16;
  const void* src = y.data();
  void* dst = r.data();
  auto body = [&](int tid, int threads) {
    const Range part = split(n, 1024, tid, threads);
    if (bf16) {
      // bf16 is a sign bit on top: max(x, 0) keeps x unless its sign bit is set (NaN stays).
      const auto* s = static_cast<const uint16_t*>(src);
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = part.first; i < part.last; ++i)
        d[i] = (s[i] & 0x8000) && (s[i] & 0x7fff) <= 0x7f80 ? 0 : s[i];
    } else {
      const auto* s = static_cast<const float*>(src);
      auto* d = static_cast<float*>(dst);
      for (int64_t i = part.first; i < part.last; ++i)
        d[i] = s[i] > 0.0f ? s[i] : (s[i] != s[i] ? s[i] : 0.0f);
    }
  };
  if (pool)
    pool->run(body);
  else
    body(0, 1);
}

const float* gradient_at_output(Relu relu, TensorSet& ts, Pool& pool) {
  if (relu == Relu::fused) return nullptr;
  float* dz = ts.at(Arg::diff_dst).as<float>();
  if (relu == Relu::none) return dz;
  const bool separate = relu == Relu::separate;
  const float* out = ts.at(separate ? Arg::relu_dst : Arg::dst).as<float>();
  const float* dy = separate ? ts.at(Arg::diff_relu_dst).as<float>() : dz;
  const int64_t n = ts.at(Arg::diff_dst).elements();
  pool.run([&](int tid, int n_threads) {
    for (int64_t i = n * tid / n_threads; i < n * (tid + 1) / n_threads; ++i)
      dz[i] = out[i] > 0.0f ? dy[i] : 0.0f;
  });
  return dz;
}

}  // namespace lb::cpu
