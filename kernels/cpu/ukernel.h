// The micro-kernels: C tile (m ≤ MR rows × n ≤ NR columns) from one A micro-panel and one
// B micro-panel, kc deep, with the epilogue. One set per ISA, each in its own file compiled
// for that ISA only (CMake sets the flags per file) and free of standard-library templates,
// so nothing compiled for AVX-512 can be picked by the linker for code that runs elsewhere.
//
// Packed panels are k-major in groups of KG (the instruction's dot-product depth: f32 1,
// bf16 2 for vdpbf16ps, u8·s8 4 for vpdpbusd): element (r, k) at [(k/KG)·R·KG + r·KG + k%KG].
#pragma once

#include <cstdint>

namespace lb::cpu {

struct UkArgs {
  int64_t kc = 0;           // depth of this slice, a multiple of KG (zero-padded)
  const void* a = nullptr;  // A micro-panel, MR rows
  const void* b = nullptr;  // B micro-panel, NR columns
  float* c = nullptr;       // f32 C tile (partial sums between K slices; the result for f32)
  int64_t ldc = 0;
  uint16_t* out_bf16 = nullptr;  // last slice of a bf16 GEMM: the result goes here instead
  int64_t ldo = 0;
  int m = 0, n = 0;                 // valid rows and columns of the tile
  bool load_c = false;              // add the partial sums already in c
  bool last = false;                // last K slice: apply scale, bias, ReLU and write the result
  float scale = 1.0f;               // u8·s8: the product of the operands' scales
  const float* bias_row = nullptr;  // bias of the tile's rows (already offset), or null
  const float* bias_col = nullptr;  // bias of the tile's columns, or null
  bool relu = false;
  bool stream = false;  // last slice, C not read: full tiles may bypass the caches
  int prefetch = 0;     // AMX: tile steps ahead to prefetch A and B into L1 (0: none)
};

// MR×NR: avx512 14×32, avx2 5×16, scalar 8×16.
void ukr_f32_avx512(const UkArgs& u);
void ukr_bf16_avx512(const UkArgs& u);  // bf16 × bf16, f32 accumulation (vdpbf16ps)
void ukr_u8s8_avx512(const UkArgs& u);  // u8 × s8, s32 accumulation (vpdpbusd)
void ukr_f32_avx2(const UkArgs& u);
// u8 × s8 on AVX2, 4×16: A packed as u16 pairs (KG 2, zero-extended), B as s8 pairs (KG 2),
// products widened to s16 and summed in s32 by vpmaddwd (exact; see ukernel_avx2.cpp).
void ukr_u8s8_avx2(const UkArgs& u);
// A single row of C (m = 1) over up to kRowPanelsAvx2 B micro-panels bstride bytes apart, n
// columns in all (a GEMV: several streams of B in flight, see ukernel_avx2.cpp).
constexpr int kRowPanelsAvx2 = 4;
void ukr_f32_avx2_row(const UkArgs& u, int64_t bstride);
// The same on AVX-512: up to kRowPanelsAvx512 panels of 32 columns (see ukernel_avx512.cpp).
constexpr int kRowPanelsAvx512 = 4;
void ukr_f32_avx512_row(const UkArgs& u, int64_t bstride);
void ukr_u8s8_avx512_row(const UkArgs& u, int64_t bstride);  // u8 · s8 (vpdpbusd), the same way
// d[k·ldd + p] = s[p·lds + k] for p < rows, k0 ≤ k < k1, in 16×16 blocks of registers (the
// pixels-as-rows pointwise product's Cᵀ into y's channel rows).
void transpose_f32_avx512(const float* s, int64_t lds, int64_t rows, int64_t k0, int64_t k1, float* d,
                          int64_t ldd);
// One input row of iw floats into its sw phase rows (sw 2 or 4, the indirect convolution's
// padded image split along W): phase p's element j is row[j·sw + p − pw], zero where that
// lies outside the row, for j < phase_w; phase p at dst + p·phase_stride. A block of 16
// elements of every phase from 16·sw consecutive columns: sw loads and 1 (sw 2) or 3 (sw 4)
// permutes per phase, against a strided copy of one element at a time.
void phase_split_avx512(const float* row, int64_t iw, int64_t pw, int sw, int64_t phase_w, float* dst,
                        int64_t phase_stride);
void ukr_f32_scalar(const UkArgs& u);

}  // namespace lb::cpu

namespace lb::cpu {

// Indirect tile (AVX-512, 14×32 at most): B is not packed but read straight from a
// zero-padded input image, row k of the tile's B being the 32 elements at x + off[k]
// (convolution with unit width stride: a tile's pixels are consecutive in one input row),
// or, for a tile that runs past its output row's end into the next, lanes < split from
// x + off[k] and lanes ≥ split from x + next_row + off[k]. An element is 4 bytes: an f32,
// or for the low-precision tiles a pixel's bf16 pair or u8 quad of consecutive channels
// (k steps over channel pairs / quads), A's element the matching pair or quad of weights
// (bf16, s8); the sums are f32 or s32, scaled by `scale` (s32: to f32) in the epilogue.
struct IndirectArgs {
  int64_t kc = 0;                // k steps (f32 elements, bf16 pairs, u8 quads)
  const float* a = nullptr;      // A micro-panel, 14 rows, k-major (4-byte elements)
  const float* x = nullptr;      // the tile's first pixel in the padded image; 32 elements are
                                 // read at every x + off[k], whatever n (see the kernel)
  const int64_t* off = nullptr;  // kc offsets, one per (channel, filter row, filter column)
  int split = 32;                // lanes from the next output row: [split, 32); 32 = none
  int64_t next_row = 0;          // floats from a row's pixel to the next row's, less the row's width
  float* c = nullptr;
  int64_t ldc = 0;
  int m = 0, n = 0;
  bool load_c = false, last = false;
  const float* bias_row = nullptr;
  bool relu = false;
  float scale = 1.0f;            // int8: the product of the operands' scales
  uint16_t* out_bf16 = nullptr;  // bf16: the last slice's result here (row stride ldc), not in c
};
void ukr_f32_indirect_avx512(const IndirectArgs& u);
void ukr_bf16_indirect_avx512(const IndirectArgs& u);  // vdpbf16ps
void ukr_u8s8_indirect_avx512(const IndirectArgs& u);  // vpdpbusd, x's quads u8, A's s8

}  // namespace lb::cpu

namespace lb::cpu {

// Indirect f32 tile (AVX2) with the roles swapped: 16 output channels in the lanes (A loaded
// as vectors from 16-channel panels) × 6 output pixels broadcast from a zero-padded image,
// anywhere in it: row k of pixel j's B is the one float at x[j] + off[k]. The sums leave
// through a transpose (C rows are channels): element (channel i, pixel j) at c[j] + i·ldc.
struct IndirectPixelsArgs {
  int64_t kc = 0;
  const float* a = nullptr;      // A micro-panel, 16 channels, k-major ([k][16]), 32-byte aligned
  const float* x[6] = {};        // every x[j] is read, whatever n: repeat a valid one past n
  const int64_t* off = nullptr;  // kc offsets, one per (channel, filter row, filter column)
  float* c[6] = {};
  int64_t ldc = 0;
  int m = 0, n = 0;  // valid channels (≤ 16) and pixels (≤ 6)
  // The offsets come in runs of 3 consecutive floats (off[k+1] = off[k] + 1: a 3-wide filter
  // row at unit width stride and dilation) and kc is a multiple of 3: one offset read per run.
  bool runs_of_3 = false;
  bool load_c = false, last = false;
  const float* bias_row = nullptr;
  bool relu = false;
};
constexpr int kPixelsAvx2 = 6, kChannelsAvx2 = 16;
void ukr_f32_indirect_pixels_avx2(const IndirectPixelsArgs& u);

// Indirect f32 row tile (AVX-512), channels in the lanes as above: up to 32 output channels
// (two vectors of A per k step from a panel k-major [k][16·⌈m/16⌉], 64-byte aligned) × up to
// 14 output pixels consecutive in one output row, each broadcast from the padded image: row k
// of pixel j's B is the float at x + off[k] + j (pixels are consecutive in a phase image). The
// whole depth in one call; the sums, plus bias and ReLU, leave through 16×16 transposes into
// C's channel rows: element (channel i, pixel j) at c + i·ldc + j.
struct IndirectRowArgs {
  int64_t kc = 0;
  const float* a = nullptr;
  const float* x = nullptr;      // the first pixel; n rounded up to even floats are read at every x + off[k]
  const int64_t* off = nullptr;  // kc offsets, one per (channel, filter row, filter column)
  float* c = nullptr;
  int64_t ldc = 0;
  int m = 0, n = 0;  // valid channels (≤ 32) and pixels (≤ 14)
  const float* bias_row = nullptr;
  bool relu = false;
};
constexpr int kRowPixelsAvx512 = 14, kRowChannelsAvx512 = 32;
void ukr_f32_indirect_row_avx512(const IndirectRowArgs& u);

}  // namespace lb::cpu
