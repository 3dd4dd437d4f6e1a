// What the cpu backend's kernels share: the pool, workspace and buffers a kernel holds
// from prepare() on, and the ReLU passes for relu=inplace/separate.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/buffer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/pool.h"
#include "kernels/kernel.h"

namespace lb::cpu {

// The ReLU's backward in front of a backward pass (kernels/ops/traits.h, pass_args), split
// over the pool: relu=separate: diff_dst := diff_relu_dst where relu_dst > 0, else 0;
// inplace: the same over diff_dst from dst. Returns dz: diff_dst (as given for none), or
// nullptr for fused, whose kernels apply the mask (dst > 0) where they read diff_dst.
const float* gradient_at_output(Relu relu, TensorSet& ts, Pool& pool);

// The element kind of a low-precision dtype's product: bf16, or int8's u8 × s8.
inline Elem lowp_elem(DType dt) {
  return dt == DType::bf16 ? Elem::bf16 : Elem::u8s8;
}

// y[k·P + p] = ct[p·K + k] for channels k0 ≤ k < k1: a convolution's C computed with the
// pixels as rows (Cᵀ, P × K) into NCHW's channel rows, 16 channels at a time (each pixel's
// 16 contiguous sums of Cᵀ to 16 rows of y). The f32 one goes through registers in 16×16
// blocks where `isa` is AVX-512 (transpose_f32_avx512).
template <class T>
void pixel_rows_to_channels(const T* ct, int64_t K, int64_t P, int64_t k0, int64_t k1, T* y) {
  for (int64_t kb = k0; kb < k1; kb += 16) {
    const int64_t ke = std::min(kb + 16, k1);
    for (int64_t p = 0; p < P; ++p)
      for (int64_t k = kb; k < ke; ++k)
        y[k * P + p] = ct[p * K + k];
  }
}
void pixel_rows_to_channels(Isa isa, const float* ct, int64_t K, int64_t P, int64_t k0, int64_t k1, float* y);

// Rows of `per` consecutive channels side by side, as 4-byte words: d[i] holds c[j][i] in
// bits 32/per·j (u8: per 4, a quad; bf16 as uint16_t: per 2, a pair) for i < n, channel
// rows c[have … per) zero. 16 / 8 words a step through SSE2 unpacks, the last overlapping
// the one before; under one step, one load per row where `after` elements past n are
// readable in every row, else element by element. (A convolution's channels into the
// indirect tiles' padded image, conv2d_lowp.cpp; depth rows into the low-precision GEMM's
// A panels, gemm.cpp's pack_strided.)
void interleave_rows(const uint8_t* const* c, int have, int64_t n, uint32_t* d, int64_t after = 0);
void interleave_rows(const uint16_t* const* c, int have, int64_t n, uint32_t* d, int64_t after = 0);
// One input row of iw 4-byte elements (f32, or the words interleave_rows makes, moved as
// bytes: no float operation touches them) into its sw phase rows of the padded image: padded column w + pw
// goes to phase (w + pw) % sw, column (w + pw) / sw; phase p at dst + p·phase_stride; the borders are not
// written. By phase_split_avx512's permutes where `avx512` and sw is 2 or 4, else element by element.
void split_phases(bool avx512, const float* row, int64_t iw, int64_t pw, int64_t sw, int64_t phase_w,
                  float* dst, int64_t phase_stride);

// The AVX-512 indirect convolution tiles' geometry (conv2d.cpp's f32, conv2d_lowp.cpp's bf16
// and int8). Tiles of `width` output pixels in raster order, one crossing a row's end taking
// the next row's first pixels, where output rows are at least `width` wide; else a tile or
// more per row.
struct PixelTile {
  int64_t oh, ow, n;  // first output pixel, pixels
};
std::vector<PixelTile> pixel_tiles(const Conv2d& cv, int64_t width);
// Tiles of `width` output pixels in raster order across rows, whatever a row's width: the
// panels that pack_pixel_panel builds.
std::vector<PixelTile> plane_panels(const Conv2d& cv, int64_t width);
// Whether those panels are at least 85 % used: 13×13 and 14×14 planes (88 %), not 7×7 (49
// pixels in 64 lanes, 77 %).
bool panels_fill_lanes(const Conv2d& cv, int64_t width);
// Whether those tiles are at least 3/4 used: output rows of `width` pixels or more (tiles
// across rows), or of 3/4 of `width` or more (a tile per row). Narrower planes fill a
// GEMM's pixel panels, which run across rows, far better: at 13 or 14 pixels a tile per row
// uses 41-44 % of its 32 lanes, 32-pixel panels of the whole plane 88 %.
bool tiles_fill_lanes(const Conv2d& cv, int64_t width);
// The padded image is split into SW phase images along W (phase p holds padded columns p,
// p + SW, …; `phase` elements each, `rows` rows of `phase_w` per unit of depth), so that
// output pixels ow, ow+1, … read consecutive elements whatever the stride: padded column
// ow·SW + s·DW is column ow + (s·DW) / SW of phase (s·DW) % SW. The offset of each k step
// (unit u < units: a channel, or a pair or quad of channels; filter row r, column s) from a
// tile's first pixel.
std::vector<int64_t> tap_offsets(const Conv2d& cv, int64_t units, int64_t rows, int64_t phase_w,
                                 int64_t phase);

// A panel of output pixels [first, first + n), n ≤ width, at each of kc k steps: d[k·width + j]
// = pad[(i·image) + oh·row + ow + off[k]] for column j's pixel oh·OW + ow of image i (column
// first + j is pixel (first + j) % P of image (first + j) / P). Each output row's run of pixels
// is one copy per k step, without a bounds test (the padding is in the image). Lanes past n are
// zero; with `slack` (every source readable `width` elements past a run's start, and d writable
// `width` elements past its last row) each run is instead a copy of fixed length, 8, 16 or
// `width` elements, in order, the next run overwriting what one copied past its end — what is
// left past n is then not zero, for a tile that stores only n pixels.
template <class T>
void pack_pixel_panel(const T* pad, int64_t image, int64_t row, int64_t OW, int64_t P, int64_t first,
                      int64_t n, const int64_t* off, int64_t kc, int width, bool slack, T* d) {
  struct Run {
    const T* src;
    int64_t len, at;
  };
  Run runs[64];  // at most width (≤ 64) runs
  int nruns = 0;
  int64_t longest = 0;
  for (int64_t at = 0; at < n;) {
    const int64_t j = first + at, p = j % P, oh = p / OW, ow = p % OW, len = std::min(n - at, OW - ow);
    runs[nruns++] = {pad + j / P * image + oh * row + ow, len, at};
    longest = std::max(longest, len);
    at += len;
  }
  auto fixed = [&]<int W>(std::integral_constant<int, W>) {
    for (int64_t k = 0; k < kc; ++k, d += width)
      for (int u = 0; u < nruns; ++u)
        std::copy_n(runs[u].src + off[k], W, d + runs[u].at);
  };
  if (slack && longest <= 8) return fixed(std::integral_constant<int, 8>{});
  if (slack && longest <= 16) return fixed(std::integral_constant<int, 16>{});
  if (slack && width == 32) return fixed(std::integral_constant<int, 32>{});
  for (int64_t k = 0; k < kc; ++k, d += width) {
    if (n < width) std::fill(d + n, d + width, T{});
    for (int u = 0; u < nruns; ++u)
      std::copy_n(runs[u].src + off[k], runs[u].len, d + runs[u].at);
  }
}

// relu=inplace: dst := max(dst, 0); relu=separate: relu_dst := max(dst, 0) (f32 or bf16
// storage); else nothing. Split across the pool.
void relu_pass(Relu relu, TensorSet& ts, Pool* pool);

}  // namespace lb::cpu
