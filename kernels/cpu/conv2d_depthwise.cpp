// conv2d.cpu.depthwise — depthwise convolution (G = C = K: one R×S filter per channel), NCHW
// f32, as a direct kernel vectorised along the output width.
//
// For image n and channel c, with y the P×Q output plane and x the H×W input plane:
//   y[p][q] = b[c] + sum_{r,s} W[c][r][s] · x[p·SH - PH + r·DH][q·SW - PW + s·DW]
// There is no GEMM to hand this to (per channel it is a 1×R·S row times an R·S×P·Q matrix),
// so it is direct: the output row is cut into blocks of L columns (L = 16 on AVX-512, 8 on
// AVX2), one vector accumulator each, starting at the bias; every tap adds its broadcast
// weight times the L inputs it reads. Padding costs no branches: lane masks (built once in
// prepare(), the same for every plane) zero the inputs outside the row, and kernel rows
// above or below the image read a row of zeros. relu=fused is a max in the store;
// relu=inplace/separate is relu_pass() afterwards.
//
// Paths (make_plan() picks one per problem):
//  - generic, any shape, AVX-512 or AVX2: per block and tap one masked load (SW = 1), two
//    loads and an even-lane permute (SW = 2) or a gather (SW > 2); 3×3 with the taps
//    unrolled and one accumulator per kernel row, other sizes with R, S at run time.
//  - AVX-512 3×3 fast paths, which read each input once per block instead of once per tap
//    (the generic 3×3 block costs 9 loads, most split across cache lines, for 9 FMAs):
//    wide_s1 (stride 1): two output rows at once from four input rows, one aligned-with-the-
//      block chunk load per input row, the three taps as lane shifts (valignd) of it and
//      its neighbours: per two blocks 4 loads + 8 shifts + 18 FMAs;
//    wide_s2 (stride 2 across): the 32 input columns of a block split once into even and
//      odd columns (two permutes), taps as those shifted by ≤ 1 lane: 6 loads + 6 permutes
//      + ≤ 3 shifts + 9 FMAs per block (generic: 18 loads + 9 permutes);
//    narrow (Q ≤ 8, W ≤ 16, the 7×7 end of MobileNet): output rows p and p+1 share one
//      vector (lanes 0-7, 8-15), each tap one two-source permute of the two input rows,
//      so a 7×7 plane is 4 vectors instead of 7 half-empty ones.
//  - AVX2 3×3 row-pass paths (written over the ISA type, instantiated for AVX2), which read
//    each input row once per block for all the output rows of a pass that use it:
//    rows_s1 (stride 1, dilation 1): 4 output rows per pass from 6 input rows, the taps as
//      3 unaligned loads per input row: 18 loads per 36 FMAs (generic: 36 per 36);
//    rows_s2 (stride 2 both ways, dilation 1): 3 output rows per pass from 7 input rows, per
//      input row the 2L columns from the block's first tap column and the 2L from one
//      further (4 loads), split into even / odd columns by one shufps each (3 taps), the
//      outputs left in shufps' lane order and put back once per output vector: 28 loads +
//      21 shuffles + 3 permutes per 27 FMAs (generic: 54 loads + 54 shuffles).
//    Both: interior blocks load unmasked, blocks that reach outside the row load masked
//    (lane vectors built once in prepare()); the last block of a row overlaps its neighbour
//    instead of storing masked (vmaskmovps stores are microcoded on AMD); Q < 8 (7×7
//    planes): one block per row spilling into the next row, the plane's last row stored
//    early with its first lanes spliced from the row before; P % rows: one shorter pass.
//  - scalar: the same sums one output at a time.
// Measured here (Zen 5, 1 thread, batch 1, min of 300): the fast paths took MobileNet's
// depthwise layers from 34-139 µs (generic path) to 12-53 µs.
//
// Prediction: memory-bound. Per image, with x and y streamed once:
//   FLOPs = 2·C·P·Q·R·S;   bytes = 4·(C·H·W + C·P·Q + C·R·S + C)
// 3×3 stride 1 ("same" padding): 18 FLOPs per 8 bytes = 2.25 FLOP/B; stride 2: 18 per 20
// bytes = 0.9 FLOP/B. A core's 64 FLOP/cycle (2 FMA × 16 lanes) would need 28-71 B/cycle
// to be compute-bound, more than any level past L1 supplies, so
//   time ≥ bytes / bandwidth of the level x and y live in.
// Measured bandwidths here (one core): L2/L3 ~70-120 GB/s, DRAM ~35 GB/s (read or copy).
// Batch 1 (x + y ≤ 3.2 MB, in L2/L3): the fast paths reach 55-80 GB/s on the large planes
// (dw2: 3.2 MB in ~40 µs); the 14×14 and 7×7 planes are bound by per-vector shuffle work
// instead (~20 GB/s). Batch 32 (~100 MB): DRAM-bound, ~25-35 GB/s, i.e. ~3-4 ms for dw2.
// oneDNN's default path moves 3× these bytes (it reorders x to nhwc and y back in run()).
//
// AVX2 (2-core Zen 3 EPYC VM, shared with other work while measured): 32 FLOP/cycle (2 FMA
// × 8 lanes) would need 14-36 B/cycle, so the same bound holds on paper; per FMA the
// generic 3×3 path issues 1 load (7/16 of unaligned 32-byte loads split a cache line:
// ~1.4 load slots per FMA at 2 loads/cycle), plus a mask built per masked load, a masked
// (microcoded) store per partial block and one 9-FMA chain per row-block: it ran at 4-11 %
// of the FMA peak, neither compute- nor memory-bound. rows_s1: 0.5 loads per FMA, FMA-bound
// at 4.5 cycles per 8 outputs; rows_s2: ~1 load and ~0.9 shuffles per FMA, ~7 cycles per 8
// outputs (shuffle ports shared with the FMAs). Bytes: dw2 batch 1, 3.2 MB and 451 k FMAs
// (~75 µs at 2 FMA/cycle, 3 GHz); this VM's one-core L2/L3 bandwidth measured 30-35 GB/s
// under contention (~100 µs): batch 1 is near both bounds, batch 32 (~100 MB) DRAM-bound.
// Measured (min of 100-300 runs, data in L2): rows_s1 ~2 ns per 8 outputs (9 FMAs), rows_s2
// ~4.6 ns. Against conv2d.onednn.blocked, from the generic path's 0.15-0.91×: by min of
// runs in one window (1 thread) 0.66-1.06× at batch 1 and 1.1-2.0× at batch 32; in one
// `layerbench run` of the cpu_targets depthwise lines (means; 1 and 2 threads) 0.43-0.81×
// at batch 1 and 0.53-1.86× at batch 32 — its means vary 1.5-2× run to run on this shared
// VM. Furthest behind: the stride-2 planes (dw3, dw5, dw13) and the 7×7 / 14×14 ones, bound
// by per-plane work (masked loads on every block, 7 of 8 lanes used) rather than bandwidth.
//
// Prefetch: once x and y outgrow the caches, the hardware prefetchers alone left the row
// walk latency-bound at ~10 GB/s; each path prefetches the input a fixed distance ahead
// (prefetch_ahead()), which brought batch 32 to the DRAM bandwidth (3-4× faster).
//
// ISA: AVX-512, AVX2 or scalar, the best the CPU has (best_isa(): CPUID, or $LB_CPU_ISA).
// The generic vector code is written once as templates over an ISA type whose operations
// carry the target attribute; the per-ISA entry points are target + flatten, which inlines
// the whole template into them, so nothing outside those functions needs the ISA.
// Threads: the N·C planes split across the pool in contiguous ranges (C ≥ 32 planes at
// batch 1, so both threads of 2 always have work).
// Tunables: L (the ISA's vector width), kPrefetchBytes (distance), kPrefetchAbove (when),
// kRowsS1 / kRowsS2 (output rows per pass of the row-pass paths).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"

namespace lb::cpu {
namespace {

// How a block's L inputs of one tap are loaded: stride 1 (contiguous), stride 2 (even
// lanes of 2L contiguous), or any other stride (gather).
enum class Load { unit, pair, gather };

// The per-ISA vector operations. Masks are bit masks (bit j: lane j; for Load::pair,
// bit e: element e of the 2L read).
struct Avx512 {
  static constexpr int kLanes = 16;
  using V = __m512;
  LB_TARGET_AVX512 static inline V set1(float v) { return _mm512_set1_ps(v); }
  LB_TARGET_AVX512 static inline V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  LB_TARGET_AVX512 static inline V add(V a, V b) { return _mm512_add_ps(a, b); }
  LB_TARGET_AVX512 static inline V max0(V a) { return _mm512_max_ps(a, _mm512_setzero_ps()); }
  template <Load LOAD>
  LB_TARGET_AVX512 static inline V load(uint32_t mask, const float* p, int64_t stride) {
    if constexpr (LOAD == Load::unit) {
      return _mm512_maskz_loadu_ps(__mmask16(mask), p);
    } else if constexpr (LOAD == Load::pair) {
      const __m512 lo = _mm512_maskz_loadu_ps(__mmask16(mask), p);
      const __m512 hi = _mm512_maskz_loadu_ps(__mmask16(mask >> 16), p + 16);
      const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
      return _mm512_permutex2var_ps(lo, even, hi);
    } else {
      const __m512i index =
          _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                             _mm512_set1_epi32(int(stride)));
      return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), __mmask16(mask), index, p, 4);
    }
  }
  LB_TARGET_AVX512 static inline void store(uint32_t mask, float* p, V v) {
    _mm512_mask_storeu_ps(p, __mmask16(mask), v);
  }
};

struct Avx2 {
  static constexpr int kLanes = 8;
  using V = __m256;
  LB_TARGET_AVX2 static inline V set1(float v) { return _mm256_set1_ps(v); }
  LB_TARGET_AVX2 static inline V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  LB_TARGET_AVX2 static inline V add(V a, V b) { return _mm256_add_ps(a, b); }
  LB_TARGET_AVX2 static inline V max0(V a) { return _mm256_max_ps(a, _mm256_setzero_ps()); }
  // Bit j of `bits` as lane j's all-ones / all-zeros.
  LB_TARGET_AVX2 static inline __m256i lanes(uint32_t bits) {
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(int(bits)), bit), bit);
  }
  template <Load LOAD>
  LB_TARGET_AVX2 static inline V load(uint32_t mask, const float* p, int64_t stride) {
    if constexpr (LOAD == Load::unit) {
      if ((mask & 0xff) == 0xff) return _mm256_loadu_ps(p);
      return _mm256_maskload_ps(p, lanes(mask));
    } else if constexpr (LOAD == Load::pair) {
      const __m256 lo = _mm256_maskload_ps(p, lanes(mask));
      const __m256 hi = _mm256_maskload_ps(p + 8, lanes(mask >> 8));
      // Even elements: lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6, then the 64-bit pairs put in order.
      const __m256 mixed = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
      return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(mixed), _MM_SHUFFLE(3, 1, 2, 0)));
    } else {
      const __m256i index =
          _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(int(stride)));
      return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), p, index, _mm256_castsi256_ps(lanes(mask)), 4);
    }
  }
  LB_TARGET_AVX2 static inline void store(uint32_t mask, float* p, V v) {
    if ((mask & 0xff) == 0xff)
      _mm256_storeu_ps(p, v);
    else
      _mm256_maskstore_ps(p, lanes(mask), v);
  }
  // For the row-pass paths: plain loads and stores, a load masked by a lane vector (-1: read,
  // 0: zero, never touched), and the even / odd elements of 2L contiguous ones in the
  // lane order 0 1 4 5 2 3 6 7 (one shuffle each; unshuffle() restores the order once per
  // output vector instead of once per tap).
  LB_TARGET_AVX2 static inline V loadu(const float* p) { return _mm256_loadu_ps(p); }
  LB_TARGET_AVX2 static inline V loadu(const float* p, const int32_t* lanes) {
    return _mm256_maskload_ps(p, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lanes)));
  }
  LB_TARGET_AVX2 static inline void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
  LB_TARGET_AVX2 static inline V evens(V lo, V hi) {
    return _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
  }
  LB_TARGET_AVX2 static inline V odds(V lo, V hi) {
    return _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  }
  LB_TARGET_AVX2 static inline V unshuffle(V v) {
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  // Lane j of the result: prev[prev_index[j]] where take_prev[j] is -1, else last[last_index[j]].
  LB_TARGET_AVX2 static inline V splice(V prev, V last, const int32_t* prev_index, const int32_t* last_index,
                                        const int32_t* take_prev) {
    const __m256i pi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(prev_index));
    const __m256i li = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(last_index));
    const __m256i take = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(take_prev));
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(last, li), _mm256_permutevar8x32_ps(prev, pi),
                            _mm256_castsi256_ps(take));
  }
};

// How the planes are computed (make_plan() picks; the fast paths are AVX-512, 3×3 only).
enum class Variant {
  generic,  // any shape, any ISA: per block and tap, one masked (or pair, or gather) load
  wide_s1,  // stride 1, dilation 1, PW ≤ 2: aligned-to-the-block loads, taps by lane shifts
  wide_s2,  // stride 2 across (any down), dilation 1, PW ≤ 2: even/odd split, then lane shifts
  narrow,   // Q ≤ 8, W ≤ 16, any stride/dilation: two output rows per vector
  rows_s1,  // stride 1, dilation 1: several output rows per pass share each input row's loads
  rows_s2,  // stride 2 both ways, dilation 1: the same, taps from even / odd splits
};

// What every plane shares, built once in prepare().
struct Plan {
  Conv2d c;
  int64_t P = 0, Q = 0;
  int lanes = 1;
  Variant variant = Variant::generic;
  // generic: the column blocks of an output row and, per block and tap column s, the
  // mask of the inputs it may read.
  std::vector<int64_t> q0;         // first output column of each block
  std::vector<uint32_t> out_mask;  // lanes of each block inside the row
  std::vector<uint32_t> in_mask;   // [block][s]: inputs inside the image
  Load load = Load::unit;
  // wide_*: lanes of input chunk m (columns 16m .. 16m+15) inside the row, at [m + kChunkBias].
  std::vector<uint16_t> chunk_mask;
  // Whether the paths prefetch the input (prefetch_ahead()): only when x and y outgrow the
  // caches, since for cache-resident planes it only costs.
  bool prefetch = false;
  // narrow: per tap column s, the two-source permute index (lanes 0-7 from the upper
  // output row's input row, 8-15 from the lower's) and the lanes that read inside the row.
  int32_t tap_index[3][16] = {};
  uint16_t tap_mask[3] = {};
  // rows_*: the column blocks of an output row, L outputs each, the last one ending at Q
  // (overlapping its neighbour, so no store is masked) or, when Q < L, the one block
  // starting at 0; per block whether any load reaches outside the row and, per load slot,
  // the lanes inside it (-1 / 0) for the masked loads of those blocks.
  std::vector<int64_t> row_q0;
  std::vector<uint8_t> row_edge;
  std::vector<int32_t> row_lanes;  // [block][slot][L]
  // Q < L: a block spills L - Q lanes into the next row, which that row's store then
  // overwrites; the plane's last row is stored L - Q floats early instead, its first lanes
  // spliced from the row before (Isa::splice with these indices).
  bool short_rows = false;
  int32_t splice_prev[16] = {}, splice_last[16] = {}, splice_take_prev[16] = {};
};
constexpr int64_t kChunkBias = 2;

// Software prefetch of the input kPrefetchBytes ahead of `from`, `floats` of it (each path
// calls it per output row with what that row consumes, so it keeps pace; planes are
// contiguous, so it runs on into the next ones). Measured: without it, once x and y
// outgrow L3 (MobileNet batch ≥ 8) the hardware prefetchers alone left the row walk
// latency-bound at ~10 GB/s, 3-4× below the ~35 GB/s one core streams from DRAM here.
constexpr int64_t kPrefetchBytes = 8192;
constexpr int64_t kPrefetchAbove = int64_t(8) << 20;  // bytes of x and y together
inline void prefetch_ahead(const float* from, int64_t floats) {
  const char* p = reinterpret_cast<const char*>(from) + kPrefetchBytes;
  for (int64_t off = 0; off < floats * int64_t(sizeof(float)); off += 64)
    _mm_prefetch(p + off, _MM_HINT_T0);
}

// The row-pass paths' loads per block and input row ("slots"), as the column of lane 0
// from the block's first tap column q0·S - PW: stride 1, the three taps (slot 3 unused);
// stride 2, the two L-wide halves of the 2L columns from there and the two from one further.
constexpr int kRowSlots = 4;
constexpr int64_t kSlotOffset[2][kRowSlots] = {{0, 1, 2, 0}, {0, 0, 1, 1}};  // + L·(slot % 2) for stride 2

Variant pick_variant(const Conv2d& c, int64_t P, int64_t Q, Isa isa) {
  if (c.kh != 3 || c.kw != 3) return Variant::generic;
  if (isa == Isa::avx2) {
    // Q < L needs a row before the last (the splice) and L - Q ≤ Q lanes of it.
    const bool rows = c.dh == 1 && c.dw == 1 && (Q >= Avx2::kLanes || (2 * Q >= Avx2::kLanes && P >= 2));
    if (rows && c.sh == 1 && c.sw == 1) return Variant::rows_s1;
    if (rows && c.sh == 2 && c.sw == 2) return Variant::rows_s2;
    return Variant::generic;
  }
  if (isa != Isa::avx512) return Variant::generic;
  if (Q <= 8 && c.iw <= 16) return Variant::narrow;
  if (c.dh != 1 || c.dw != 1 || c.pw > 2) return Variant::generic;
  if (c.sw == 1 && c.sh == 1) return Variant::wide_s1;
  if (c.sw == 2) return Variant::wide_s2;
  return Variant::generic;
}

Plan make_plan(const Conv2d& c, Isa isa) {
  Plan pl;
  pl.c = c;
  pl.P = c.oh();
  pl.Q = c.ow();
  pl.lanes = isa == Isa::avx512 ? Avx512::kLanes : isa == Isa::avx2 ? Avx2::kLanes : 1;
  pl.variant = pick_variant(c, pl.P, pl.Q, isa);
  pl.prefetch = int64_t(sizeof(float)) * c.mb * c.ic * (c.ih * c.iw + pl.P * pl.Q) > kPrefetchAbove;
  pl.load = c.sw == 1 ? Load::unit : c.sw == 2 ? Load::pair : Load::gather;
  const int lanes = pl.lanes;
  for (int64_t q0 = 0; q0 < pl.Q; q0 += lanes) {
    const int64_t n = std::min<int64_t>(lanes, pl.Q - q0);
    pl.q0.push_back(q0);
    pl.out_mask.push_back(uint32_t((uint64_t(1) << n) - 1));
    for (int64_t s = 0; s < c.kw; ++s) {
      const int64_t start = q0 * c.sw - c.pw + s * c.dw;  // input column of lane 0
      uint32_t m = 0;
      if (pl.load == Load::pair) {  // element e of the 2L read, for e < 2n
        for (int64_t e = 0; e < 2 * n; ++e)
          if (start + e >= 0 && start + e < c.iw) m |= uint32_t(1) << e;
      } else {
        const int64_t step = pl.load == Load::unit ? 1 : c.sw;
        for (int64_t j = 0; j < n; ++j)
          if (start + j * step >= 0 && start + j * step < c.iw) m |= uint32_t(1) << j;
      }
      pl.in_mask.push_back(m);
    }
  }
  // Chunks -2 .. 2·blocks+3 of a row: enough for wide_s2's look-ahead pair.
  const int64_t blocks = ceil_div(pl.Q, 16);
  for (int64_t m = -kChunkBias; m <= 2 * blocks + 3; ++m) {
    uint16_t bits = 0;
    for (int64_t j = 0; j < 16; ++j)
      if (16 * m + j >= 0 && 16 * m + j < c.iw) bits = uint16_t(bits | (1u << j));
    pl.chunk_mask.push_back(bits);
  }
  if (pl.variant == Variant::narrow)
    for (int s = 0; s < 3; ++s)
      for (int j = 0; j < 8; ++j) {
        const int64_t e = j * c.sw - c.pw + s * c.dw;  // element of the 16 loaded from a row
        if (e < 0 || e >= 16) continue;
        pl.tap_index[s][j] = int32_t(e);
        pl.tap_index[s][8 + j] = int32_t(16 + e);
        pl.tap_mask[s] = uint16_t(pl.tap_mask[s] | (1u << j) | (1u << (8 + j)));
      }
  if (pl.variant == Variant::rows_s1 || pl.variant == Variant::rows_s2) {
    const bool s2 = pl.variant == Variant::rows_s2;
    const int64_t L = lanes;
    pl.short_rows = pl.Q < L;
    for (int64_t q0 = 0; q0 < pl.Q; q0 += L)
      pl.row_q0.push_back(pl.short_rows ? 0 : std::min(q0, pl.Q - L));
    for (const int64_t q0 : pl.row_q0) {
      bool edge = false;
      for (int slot = 0; slot < kRowSlots; ++slot) {
        const int64_t start = q0 * c.sw - c.pw + kSlotOffset[s2][slot] + (s2 ? L * (slot % 2) : 0);
        for (int64_t j = 0; j < L; ++j) {
          const bool in = start + j >= 0 && start + j < c.iw;
          edge = edge || !in;
          pl.row_lanes.push_back(in ? -1 : 0);
        }
      }
      pl.row_edge.push_back(edge);
    }
    const int64_t d = L - pl.Q;  // when short_rows: the lanes taken from the row before
    for (int64_t j = 0; j < L; ++j) {
      pl.splice_prev[j] = int32_t(((pl.Q - d + j) % L + L) % L);
      pl.splice_last[j] = int32_t(((j - d) % L + L) % L);
      pl.splice_take_prev[j] = j < d ? -1 : 0;
    }
  }
  return pl;
}

// One plane: x is H×W, w is R×S, y is P×Q. R and S are compile-time when KH, KW > 0.
// `zero` is a row of W zeros, read for kernel rows outside the image.
template <class I, int KH, int KW, Load LOAD>
inline void plane(const Plan& pl, const float* x, const float* w, float bias, float* y, bool relu,
                  const float* zero) {
  using V = typename I::V;
  const Conv2d& c = pl.c;
  const int64_t W = c.iw, R = KH > 0 ? KH : c.kh, S = KW > 0 ? KW : c.kw;
  const int64_t blocks = int64_t(pl.q0.size());
  const V b = I::set1(bias);
  if constexpr (KH > 0 && KW > 0) {
    V wv[KH][KW];
    for (int r = 0; r < KH; ++r)
      for (int s = 0; s < KW; ++s)
        wv[r][s] = I::set1(w[r * KW + s]);
    for (int64_t p = 0; p < pl.P; ++p) {
      prefetch_ahead(x + p * c.sh * W, pl.prefetch ? c.sh * W : 0);
      const float* rows[KH];
      for (int r = 0; r < KH; ++r) {
        const int64_t h = p * c.sh - c.ph + r * c.dh;
        rows[r] = h >= 0 && h < c.ih ? x + h * W : zero;
      }
      float* yrow = y + p * pl.Q;
      for (int64_t k = 0; k < blocks; ++k) {
        const uint32_t* mask = &pl.in_mask[k * KW];
        const int64_t col = pl.q0[k] * c.sw - c.pw;
        V acc[KH];
        for (int r = 0; r < KH; ++r) {
          acc[r] = r == 0 ? b : I::set1(0.0f);
          for (int s = 0; s < KW; ++s)
            acc[r] =
                I::fma(I::template load<LOAD>(mask[s], rows[r] + col + s * c.dw, c.sw), wv[r][s], acc[r]);
        }
        for (int r = 1; r < KH; ++r)
          acc[0] = I::add(acc[0], acc[r]);
        I::store(pl.out_mask[k], yrow + pl.q0[k], relu ? I::max0(acc[0]) : acc[0]);
      }
    }
  } else {
    for (int64_t p = 0; p < pl.P; ++p) {
      prefetch_ahead(x + p * c.sh * W, pl.prefetch ? c.sh * W : 0);
      float* yrow = y + p * pl.Q;
      for (int64_t k = 0; k < blocks; ++k) {
        const uint32_t* mask = &pl.in_mask[k * S];
        const int64_t col = pl.q0[k] * c.sw - c.pw;
        V acc = b;
        for (int64_t r = 0; r < R; ++r) {
          const int64_t h = p * c.sh - c.ph + r * c.dh;
          const float* row = h >= 0 && h < c.ih ? x + h * W : zero;
          for (int64_t s = 0; s < S; ++s)
            acc = I::fma(I::template load<LOAD>(mask[s], row + col + s * c.dw, c.sw), I::set1(w[r * S + s]),
                         acc);
        }
        I::store(pl.out_mask[k], yrow + pl.q0[k], relu ? I::max0(acc) : acc);
      }
    }
  }
}

// Planes first .. last-1 of the N·C planes (plane i is image i / C, channel i % C).
template <class I, int KH, int KW, Load LOAD>
inline void planes(const Plan& pl, const float* x, const float* w, const float* b, float* y, bool relu,
                   const float* zero, int64_t first, int64_t last) {
  const Conv2d& c = pl.c;
  const int64_t in = c.ih * c.iw, out = pl.P * pl.Q, RS = c.kh * c.kw;
  for (int64_t i = first; i < last; ++i) {
    const int64_t ch = i % c.ic;
    plane<I, KH, KW, LOAD>(pl, x + i * in, w + ch * RS, b[ch], y + i * out, relu, zero);
  }
}

// Picks the compiled variant for the plan's kernel size and stride.
template <class I>
inline void planes_any(const Plan& pl, const float* x, const float* w, const float* b, float* y, bool relu,
                       const float* zero, int64_t first, int64_t last) {
  const bool k3 = pl.c.kh == 3 && pl.c.kw == 3;
  switch (pl.load) {
    case Load::unit:
      if (k3) return planes<I, 3, 3, Load::unit>(pl, x, w, b, y, relu, zero, first, last);
      return planes<I, 0, 0, Load::unit>(pl, x, w, b, y, relu, zero, first, last);
    case Load::pair:
      if (k3) return planes<I, 3, 3, Load::pair>(pl, x, w, b, y, relu, zero, first, last);
      return planes<I, 0, 0, Load::pair>(pl, x, w, b, y, relu, zero, first, last);
    case Load::gather:
      return planes<I, 0, 0, Load::gather>(pl, x, w, b, y, relu, zero, first, last);
  }
}

// ---- AVX-512 fast paths, 3×3 (compiled into planes_avx512) ----

// One thread's planes [first, last) and the tensors (plane i is image i / C, channel i % C).
struct Planes {
  const float *x, *w, *b;
  float* y;
  bool relu;
  const float* zero;  // a row of W zeros, read for kernel rows outside the image
  int64_t first, last;
};

// Lanes j + O (O in (-16, 16)) of the row window prev | cur | next: the input of a tap
// whose column is O from the block's own, as one lane shift (valignd) of two neighbours.
template <int O>
LB_TARGET_AVX512 inline __m512 shifted(__m512 prev, __m512 cur, __m512 next) {
  static_assert(O > -16 && O < 16, "a shift within one neighbouring vector");
  if constexpr (O == 0) {
    (void)prev, (void)next;
    return cur;
  } else if constexpr (O < 0) {
    (void)next;
    return _mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(cur), _mm512_castps_si512(prev), 16 + O));
  } else {
    (void)prev;
    return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(next), _mm512_castps_si512(cur), O));
  }
}

LB_TARGET_AVX512 inline void weights3x3(const float* w, __m512 (&wv)[3][3]) {
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 3; ++s)
      wv[r][s] = _mm512_set1_ps(w[r * 3 + s]);
}

LB_TARGET_AVX512 inline void store(float* y, __mmask16 m, __m512 v, bool relu) {
  _mm512_mask_storeu_ps(y, m, relu ? _mm512_max_ps(v, _mm512_setzero_ps()) : v);
}

// Stride 1: output rows p and p+1 together, from input rows p-PH .. p-PH+3, each loaded
// once per block as one 16-wide chunk aligned with the output block (the chunks before
// and after are kept from the neighbouring blocks). Per two blocks: 4 loads, 8 lane shifts,
// 18 FMAs, instead of 18 loads (most of them split across cache lines).
template <int PW>
LB_TARGET_AVX512 void wide_s1(const Plan& pl, const Planes& io) {
  const int64_t H = pl.c.ih, W = pl.c.iw, P = pl.P, Q = pl.Q, PH = pl.c.ph;
  const int64_t blocks = ceil_div(Q, 16);
  const uint16_t* chunk = pl.chunk_mask.data() + kChunkBias;  // chunk[m], m >= -2
  const __mmask16 last = __mmask16((1u << (Q - 16 * (blocks - 1))) - 1);
  const int64_t C = pl.c.ic, in = pl.c.ih * pl.c.iw, out = pl.P * pl.Q;
  const bool relu = io.relu;
  const float* zero = io.zero;
  for (int64_t i = io.first, ch = io.first % C; i < io.last; ++i, ch = ch + 1 < C ? ch + 1 : 0) {
    const float* x = io.x + i * in;
    float* y = io.y + i * out;
    __m512 wv[3][3];
    weights3x3(io.w + 9 * ch, wv);
    const __m512 b = _mm512_set1_ps(io.b[ch]);
    for (int64_t p = 0; p < P; p += 2) {
      prefetch_ahead(x + p * W, pl.prefetch ? 2 * W : 0);
      const float* rows[4];
      for (int u = 0; u < 4; ++u) {
        const int64_t h = p - PH + u;
        rows[u] = h >= 0 && h < H ? x + h * W : zero;
      }
      __m512 prev[4], cur[4];
      for (int u = 0; u < 4; ++u) {
        prev[u] = _mm512_setzero_ps();  // chunk -1: left of the row
        cur[u] = _mm512_maskz_loadu_ps(chunk[0], rows[u]);
      }
      const bool two = p + 1 < P;
      float* y0 = y + p * Q;
      for (int64_t k = 0; k < blocks; ++k) {
        // acc[i][u % 2]: output row p+i, split by input row parity for shorter FMA chains.
        __m512 acc[2][2] = {{b, _mm512_setzero_ps()}, {b, _mm512_setzero_ps()}};
        for (int u = 0; u < 4; ++u) {
          const __m512 next = _mm512_maskz_loadu_ps(chunk[k + 1], rows[u] + 16 * (k + 1));
          const __m512 t[3] = {shifted<0 - PW>(prev[u], cur[u], next), shifted<1 - PW>(prev[u], cur[u], next),
                               shifted<2 - PW>(prev[u], cur[u], next)};
          for (int s = 0; s < 3; ++s) {
            if (u <= 2) acc[0][u % 2] = _mm512_fmadd_ps(t[s], wv[u][s], acc[0][u % 2]);
            if (u >= 1) acc[1][u % 2] = _mm512_fmadd_ps(t[s], wv[u - 1][s], acc[1][u % 2]);
          }
          prev[u] = cur[u];
          cur[u] = next;
        }
        const __mmask16 m = k + 1 < blocks ? __mmask16(0xffff) : last;
        store(y0 + 16 * k, m, _mm512_add_ps(acc[0][0], acc[0][1]), relu);
        if (two) store(y0 + Q + 16 * k, m, _mm512_add_ps(acc[1][0], acc[1][1]), relu);
      }
    }
  }
}

// The tap at column offset O (in [-2, 2]) from 2q, from the even and odd columns of the
// row (E[j] = x[2j], O[j] = x[2j+1], per block of 16 outputs, with both neighbours).
template <int O>
LB_TARGET_AVX512 inline __m512 tap_s2(const __m512 (&e)[3], const __m512 (&o)[3]) {
  if constexpr (O % 2 == 0)
    return shifted<O / 2>(e[0], e[1], e[2]);
  else
    return shifted<(O - 1) / 2>(o[0], o[1], o[2]);
}

// Stride 2 across: per input row and block, the 32 columns it covers are loaded once (two
// chunks) and split into even and odd columns (two permutes); each tap is then one of
// them, shifted by a lane at most. Per block: 6 loads, 6 permutes, ≤ 3 shifts, 9 FMAs,
// instead of 18 loads and 9 permutes.
template <int PW>
LB_TARGET_AVX512 void wide_s2(const Plan& pl, const Planes& io) {
  const int64_t H = pl.c.ih, W = pl.c.iw, P = pl.P, Q = pl.Q, PH = pl.c.ph, SH = pl.c.sh;
  const int64_t blocks = ceil_div(Q, 16);
  const uint16_t* chunk = pl.chunk_mask.data() + kChunkBias;
  const __mmask16 last = __mmask16((1u << (Q - 16 * (blocks - 1))) - 1);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const int64_t C = pl.c.ic, in = pl.c.ih * pl.c.iw, out = pl.P * pl.Q;
  const bool relu = io.relu;
  const float* zero = io.zero;
  for (int64_t i = io.first, ch = io.first % C; i < io.last; ++i, ch = ch + 1 < C ? ch + 1 : 0) {
    const float* x = io.x + i * in;
    float* y = io.y + i * out;
    __m512 wv[3][3];
    weights3x3(io.w + 9 * ch, wv);
    const __m512 b = _mm512_set1_ps(io.b[ch]);
    for (int64_t p = 0; p < P; ++p) {
      const float* rows[3];
      __m512 e[3][3], o[3][3];  // [r][previous, this, next block]
      for (int r = 0; r < 3; ++r) {
        const int64_t h = p * SH - PH + r;
        rows[r] = h >= 0 && h < H ? x + h * W : zero;
        e[r][1] = o[r][1] = _mm512_setzero_ps();  // block -1: left of the row
        const __m512 lo = _mm512_maskz_loadu_ps(chunk[0], rows[r]);
        const __m512 hi = _mm512_maskz_loadu_ps(chunk[1], rows[r] + 16);
        e[r][2] = _mm512_permutex2var_ps(lo, even, hi);
        o[r][2] = _mm512_permutex2var_ps(lo, odd, hi);
      }
      float* yrow = y + p * Q;
      prefetch_ahead(x + p * SH * W, pl.prefetch ? SH * W : 0);
      for (int64_t k = 0; k < blocks; ++k) {
        __m512 acc[3] = {b, _mm512_setzero_ps(), _mm512_setzero_ps()};
        for (int r = 0; r < 3; ++r) {
          e[r][0] = e[r][1];
          e[r][1] = e[r][2];
          o[r][0] = o[r][1];
          o[r][1] = o[r][2];
          const float* next = rows[r] + 32 * (k + 1);
          const __m512 lo = _mm512_maskz_loadu_ps(chunk[2 * k + 2], next);
          const __m512 hi = _mm512_maskz_loadu_ps(chunk[2 * k + 3], next + 16);
          e[r][2] = _mm512_permutex2var_ps(lo, even, hi);
          o[r][2] = _mm512_permutex2var_ps(lo, odd, hi);
          acc[r] = _mm512_fmadd_ps(tap_s2<0 - PW>(e[r], o[r]), wv[r][0], acc[r]);
          acc[r] = _mm512_fmadd_ps(tap_s2<1 - PW>(e[r], o[r]), wv[r][1], acc[r]);
          acc[r] = _mm512_fmadd_ps(tap_s2<2 - PW>(e[r], o[r]), wv[r][2], acc[r]);
        }
        const __mmask16 m = k + 1 < blocks ? __mmask16(0xffff) : last;
        store(yrow + 16 * k, m, _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]), relu);
      }
    }
  }
}

// Narrow planes (Q ≤ 8, W ≤ 16): lanes 0-7 hold output row p, lanes 8-15 row p+1, so a
// 7×7 plane takes 4 vectors instead of 7 half-empty ones. Per kernel row, the two input
// rows are loaded whole (W ≤ 16 lanes each) and each tap is one two-source permute that
// picks column q·SW + s·DW - PW for both halves, zeroing columns outside the row.
LB_TARGET_AVX512 void narrow(const Plan& pl, const Planes& io) {
  const Conv2d& c = pl.c;
  const int64_t H = c.ih, W = c.iw, P = pl.P, Q = pl.Q;
  const __mmask16 in_row = __mmask16((1u << W) - 1), out_row = __mmask16((1u << Q) - 1);
  __m512i index[3];
  __mmask16 valid[3];
  for (int s = 0; s < 3; ++s) {
    index[s] = _mm512_loadu_si512(pl.tap_index[s]);
    valid[s] = pl.tap_mask[s];
  }
  const int64_t C = pl.c.ic, in = pl.c.ih * pl.c.iw, out = pl.P * pl.Q;
  const bool relu = io.relu;
  const float* zero = io.zero;
  for (int64_t i = io.first, ch = io.first % C; i < io.last; ++i, ch = ch + 1 < C ? ch + 1 : 0) {
    const float* x = io.x + i * in;
    float* y = io.y + i * out;
    __m512 wv[3][3];
    weights3x3(io.w + 9 * ch, wv);
    const __m512 b = _mm512_set1_ps(io.b[ch]);
    for (int64_t p = 0; p < P; p += 2) {
      prefetch_ahead(x + p * c.sh * W, pl.prefetch ? 2 * c.sh * W : 0);
      const bool two = p + 1 < P;
      __m512 acc[3] = {b, _mm512_setzero_ps(), _mm512_setzero_ps()};
      for (int r = 0; r < 3; ++r) {
        const int64_t ha = p * c.sh - c.ph + r * c.dh, hb = ha + c.sh;
        const float* ra = ha >= 0 && ha < H ? x + ha * W : zero;
        const float* rb = two && hb >= 0 && hb < H ? x + hb * W : zero;
        const __m512 va = _mm512_maskz_loadu_ps(in_row, ra), vb = _mm512_maskz_loadu_ps(in_row, rb);
        for (int s = 0; s < 3; ++s)
          acc[r] =
              _mm512_fmadd_ps(_mm512_maskz_permutex2var_ps(valid[s], va, index[s], vb), wv[r][s], acc[r]);
      }
      const __m512 v = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]);
      store(y + p * Q, out_row, v, relu);
      // Lanes 8 .. 8+Q-1 to row p+1: the masked store starts 8 floats before it.
      if (two) store(y + (p + 1) * Q - 8, __mmask16(out_row << 8), v, relu);
    }
  }
}

// ---- Row-pass 3×3 paths (rows_s1, rows_s2), written over the ISA type; used on AVX2 ----

// Adds one column block of a pass's NR output rows into acc (S = 1: NR + 2 input rows, S = 2:
// 2·NR + 1), loading each input row once for all the output rows that read it. col is the
// input column of lane 0's first tap; lanes (per slot, -1 / 0) masks the loads when EDGE.
// Per block and input row: S = 1, 3 loads (the taps); S = 2, 4 loads (2L columns from col
// and 2L from col + 1, which with PW = 1 is 2·q0: on 32-byte boundaries where the row is,
// so only the first load splits a cache line) and 3 shuffles (tap 0: the even elements of
// the first pair; taps 1 and 2: the even and odd ones of the second), the outputs left in
// evens()' lane order. The loop order (an input row's taps, then per output row its three
// FMAs) matters: the orders that interleave the output rows per tap, or pin the loaded taps
// in registers, or split each output row over more accumulators all measured 1.1-2.4×
// slower here (GCC's register allocation: spilled weights and accumulators).
template <class I, int NR, int S, bool EDGE>
inline void accumulate_rows(const float* const* rows, int64_t col, const int32_t* lanes,
                            const typename I::V (&wv)[3][3], typename I::V (&acc)[NR]) {
  using V = typename I::V;
  constexpr int L = I::kLanes;
  const auto load = [&](const float* p, int slot) {
    if constexpr (EDGE)
      return I::loadu(p, lanes + slot * L);
    else
      return I::loadu(p);
  };
  for (int u = 0; u < S * (NR - 1) + 3; ++u) {
    const float* row = rows[u] + col;
    V t[3];
    if constexpr (S == 1) {
      for (int s = 0; s < 3; ++s)
        t[s] = load(row + s, s);
    } else {
      const V c = load(row + 1, 2), d = load(row + 1 + L, 3);
      t[0] = I::evens(load(row, 0), load(row + L, 1));
      t[1] = I::evens(c, d);
      t[2] = I::odds(c, d);
    }
    for (int i = 0; i < NR; ++i) {
      const int r = u - S * i;  // kernel row of input row u for output row i
      if (r >= 0 && r <= 2)
        for (int s = 0; s < 3; ++s)
          acc[i] = I::fma(t[s], wv[r][s], acc[i]);
    }
  }
}

// Stores output rows p .. p+NR-1 of the block at column q0 (see Plan::short_rows).
template <class I, int NR>
inline void store_rows(const Plan& pl, float* y, int64_t p, int64_t q0, typename I::V (&v)[NR], bool relu) {
  const int64_t P = pl.P, Q = pl.Q;
  for (int i = 0; i < NR; ++i)
    if (relu) v[i] = I::max0(v[i]);
  if (!pl.short_rows) {
    for (int i = 0; i < NR; ++i)
      I::storeu(y + (p + i) * Q + q0, v[i]);
    return;
  }
  for (int i = 0; i < NR; ++i) {
    if (p + i + 1 < P)
      I::storeu(y + (p + i) * Q, v[i]);
    else if (i > 0)  // the plane's last row (short_rows has P ≥ 2, so NR ≥ 2)
      I::storeu(y + (p + i) * Q - (I::kLanes - Q),
                I::splice(v[i - 1], v[i], pl.splice_prev, pl.splice_last, pl.splice_take_prev));
  }
}

// One pass of the row-pass paths: output rows p .. p+NR-1 of plane x → y, a walk over the
// column blocks. Interior blocks load unmasked; blocks that reach outside the row (the
// first and last, with padding) load masked.
template <class I, int NR, int S>
inline void rows_pass(const Plan& pl, const float* x, float* y, const typename I::V (&wv)[3][3],
                      typename I::V b, int64_t p, const float* zero, bool relu) {
  using V = typename I::V;
  const int64_t H = pl.c.ih, W = pl.c.iw, PH = pl.c.ph, PW = pl.c.pw;
  const int64_t blocks = int64_t(pl.row_q0.size());
  constexpr int kInRows = S * (NR - 1) + 3;
  constexpr int64_t kSlotLanes = int64_t(kRowSlots) * I::kLanes;
  prefetch_ahead(x + S * p * W, pl.prefetch ? S * NR * W : 0);
  const float* rows[kInRows];
  for (int u = 0; u < kInRows; ++u) {
    const int64_t h = S * p - PH + u;
    rows[u] = h >= 0 && h < H ? x + h * W : zero;
  }
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t q0 = pl.row_q0[k], col = S * q0 - PW;
    V acc[NR];
    for (int j = 0; j < NR; ++j)
      acc[j] = b;
    if (pl.row_edge[k])
      accumulate_rows<I, NR, S, true>(rows, col, &pl.row_lanes[k * kSlotLanes], wv, acc);
    else
      accumulate_rows<I, NR, S, false>(rows, col, nullptr, wv, acc);
    if constexpr (S == 2)
      for (int j = 0; j < NR; ++j)
        acc[j] = I::unshuffle(acc[j]);
    store_rows<I, NR>(pl, y, p, q0, acc, relu);
  }
}

// The last `rest` rows of the plane, as one pass of M = rest rows.
template <class I, int M, int S>
inline void rows_rest(const Plan& pl, const float* x, float* y, const typename I::V (&wv)[3][3],
                      typename I::V b, const float* zero, bool relu, int64_t rest) {
  if constexpr (M > 1)
    if (rest < M) return rows_rest<I, M - 1, S>(pl, x, y, wv, b, zero, relu, rest);
  rows_pass<I, M, S>(pl, x, y, wv, b, pl.P - M, zero, relu);
}

// Stride S (both ways) 3×3, per plane: passes of NR ≤ P output rows, then one of the
// P % NR left (of 2 when that would be short_rows' last row alone, which needs the row
// before: that pass recomputes one row).
template <class I, int NR, int S>
inline void rows_planes(const Plan& pl, const Planes& io) {
  using V = typename I::V;
  const int64_t P = pl.P, C = pl.c.ic, in = pl.c.ih * pl.c.iw, out = P * pl.Q;
  const int64_t full = P / NR * NR, rest = pl.short_rows && P % NR == 1 ? 2 : P % NR;
  for (int64_t i = io.first, ch = io.first % C; i < io.last; ++i, ch = ch + 1 < C ? ch + 1 : 0) {
    const float* x = io.x + i * in;
    float* y = io.y + i * out;
    V wv[3][3];
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s)
        wv[r][s] = I::set1(io.w[9 * ch + 3 * r + s]);
    const V b = I::set1(io.b[ch]);
    for (int64_t p = 0; p < full; p += NR)
      rows_pass<I, NR, S>(pl, x, y, wv, b, p, io.zero, io.relu);
    if (rest > 0) rows_rest<I, NR, S>(pl, x, y, wv, b, io.zero, io.relu, rest);
  }
}

// Rows per pass: stride 1, 4 (6 input rows: 18 loads per 36 FMAs); stride 2, 3 (7 input
// rows: 28 loads and 21 shuffles per 27 FMAs). Measured here against 3 / 5 and 2 / 4:
// more rows spill, fewer load more. Fewer when the plane has fewer rows.
constexpr int kRowsS1 = 4, kRowsS2 = 3;
template <class I, int S, int NR>
inline void rows_any(const Plan& pl, const Planes& io) {
  if constexpr (NR > 1)
    if (pl.P < NR) return rows_any<I, S, NR - 1>(pl, io);
  rows_planes<I, NR, S>(pl, io);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma"), flatten)) void planes_avx512(
    const Plan& pl, const float* x, const float* w, const float* b, float* y, bool relu, const float* zero,
    int64_t first, int64_t last) {
  const Planes io{x, w, b, y, relu, zero, first, last};
  const int64_t pw = pl.c.pw;
  switch (pl.variant) {
    case Variant::generic:
      return planes_any<Avx512>(pl, x, w, b, y, relu, zero, first, last);
    case Variant::narrow:
      return narrow(pl, io);
    case Variant::wide_s1:
      return pw == 0 ? wide_s1<0>(pl, io) : pw == 1 ? wide_s1<1>(pl, io) : wide_s1<2>(pl, io);
    case Variant::wide_s2:
      return pw == 0 ? wide_s2<0>(pl, io) : pw == 1 ? wide_s2<1>(pl, io) : wide_s2<2>(pl, io);
    case Variant::rows_s1:
    case Variant::rows_s2:  // AVX2 only (pick_variant)
      return planes_any<Avx512>(pl, x, w, b, y, relu, zero, first, last);
  }
}

__attribute__((target("avx2,fma"), flatten)) void planes_avx2(const Plan& pl, const float* x, const float* w,
                                                              const float* b, float* y, bool relu,
                                                              const float* zero, int64_t first,
                                                              int64_t last) {
  const Planes io{x, w, b, y, relu, zero, first, last};
  switch (pl.variant) {
    case Variant::rows_s1:
      return rows_any<Avx2, 1, kRowsS1>(pl, io);
    case Variant::rows_s2:
      return rows_any<Avx2, 2, kRowsS2>(pl, io);
    default:
      return planes_any<Avx2>(pl, x, w, b, y, relu, zero, first, last);
  }
}

// The scalar fallback: the same sums, one output at a time, taps outside the image skipped.
void planes_scalar(const Plan& pl, const float* x, const float* w, const float* b, float* y, bool relu,
                   int64_t first, int64_t last) {
  const Conv2d& c = pl.c;
  const int64_t H = c.ih, W = c.iw, P = pl.P, Q = pl.Q, R = c.kh, S = c.kw;
  for (int64_t i = first; i < last; ++i) {
    const int64_t ch = i % c.ic;
    const float* xp = x + i * H * W;   // H×W
    const float* wp = w + ch * R * S;  // R×S
    float* yp = y + i * P * Q;         // P×Q
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q) {
        float acc = b[ch];
        for (int64_t r = 0; r < R; ++r) {
          const int64_t h = p * c.sh - c.ph + r * c.dh;
          if (h < 0 || h >= H) continue;
          for (int64_t s = 0; s < S; ++s) {
            const int64_t col = q * c.sw - c.pw + s * c.dw;
            if (col >= 0 && col < W) acc += xp[h * W + col] * wp[r * S + s];
          }
        }
        yp[p * Q + q] = relu ? std::max(acc, 0.0f) : acc;
      }
  }
}

class CpuConv2dDepthwise final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32}); !why.empty()) return why;
    if (!p.conv().depthwise()) return "takes depthwise convolutions (g = ic = oc) only";
    // Gather indices (lane · SW) and the masks' 2L elements are 32-bit.
    if (p.conv().sw > (int64_t(1) << 24)) return "sw > 2^24: gather indices are 32-bit";
    return {};
  }

  void prepare(const Problem& p, TensorSet&, const Context& ctx) override {
    relu_ = p.relu;
    isa_ = best_isa();
    plan_ = make_plan(p.conv(), isa_);
    zero_ = AlignedBuffer<float>(size_t(p.conv().iw));
    pool_ = std::make_unique<Pool>(std::max(1, ctx.threads));
  }

  void run(TensorSet& ts) override {
    const float* x = ts.at(Arg::src).as<float>();
    const float* w = ts.at(Arg::wei).as<float>();
    const float* b = ts.at(Arg::bias).as<float>();
    float* y = ts.at(Arg::dst).as<float>();
    const bool fused = relu_ == Relu::fused;
    const int64_t planes = plan_.c.mb * plan_.c.ic;
    pool_->run([&](int tid, int n) {
      const Range range = split(planes, 1, tid, n);
      if (range.first >= range.last) return;
      switch (isa_) {
        case Isa::avx512:
          return planes_avx512(plan_, x, w, b, y, fused, zero_.data(), range.first, range.last);
        case Isa::avx2:
          return planes_avx2(plan_, x, w, b, y, fused, zero_.data(), range.first, range.last);
        case Isa::scalar:
          return planes_scalar(plan_, x, w, b, y, fused, range.first, range.last);
      }
    });
    relu_pass(relu_, ts, pool_.get());
  }

  void release() override {
    pool_.reset();
    plan_ = Plan();
    zero_ = AlignedBuffer<float>();
  }

  std::string details() const override {
    static constexpr const char* kVariants[] = {"generic", "wide_s1", "wide_s2",
                                                "narrow",  "rows_s1", "rows_s2"};
    return std::string(name(isa_)) + ", " + kVariants[int(plan_.variant)];
  }

  size_t scratch_bytes() const override {
    return zero_.bytes() + plan_.q0.size() * sizeof(int64_t) +
           (plan_.out_mask.size() + plan_.in_mask.size()) * sizeof(uint32_t) +
           plan_.row_q0.size() * (sizeof(int64_t) + 1) + plan_.row_lanes.size() * sizeof(int32_t);
  }

 private:
  Relu relu_ = Relu::none;
  Isa isa_ = Isa::scalar;
  Plan plan_;
  AlignedBuffer<float> zero_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace

std::unique_ptr<Kernel> make_depthwise_conv2d() {
  return std::make_unique<CpuConv2dDepthwise>();
}

}  // namespace lb::cpu
