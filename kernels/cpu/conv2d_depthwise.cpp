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
//    When x and y outgrow the caches and Q % 8 = 0, y is stored non-temporally (no read for
//    ownership of the lines y overwrites whole: a third less DRAM traffic).
//  - AVX2 c8 ("channels as lanes", 3×3, stride 1 or 2 both ways, dilation 1; pick_variant()
//    says for which planes): per image and group of 8 channels, the 8 input planes are
//    transposed band by band into a per-thread scratch laid out [rows][W + 2·PW][8] with the
//    zero border in it (no masks, no edge cases), every output pixel is 9 FMAs of whole
//    8-channel vectors (weights packed in prepare() as [C/8][3][3][8], 5-6 outputs per
//    step sharing each loaded input pixel — depthwise_lanes.h, shared with
//    conv2d.cpu.depthwise_blocked; the zero border written once, when the scratch is), and the
//    [P][Q][8] result is transposed back into the 8 output planes. The transposes are two 4×4 ones within
//    128-bit halves (16 half loads, the upper ones by vinsertf128 from memory, 16 in-lane shuffles and 8
//    stores per 8×8); the output side walks the plane flat (P·Q contiguous per channel), so only its last
//    block overlaps. Bands: as many output rows as keep the input and output bands within
//    kC8BandBytes; the 3 - S input rows a band shares with the next are moved up, not
//    transposed again. Channels past the last group of 8 take the rows_* (or generic) path.
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
// Channels as lanes (c8), AVX2. Prediction: per 8 outputs (8 channels × 1 pixel), 9 FMAs
// and (stride 1, 5 outputs per step) 4.2 loads, plus ~5 instructions per pixel-vector for
// each transpose: stride 1 ~1 input pixel per output (~25 instructions per 8 outputs, about
// twice rows_s1's 13 on a wide plane), stride 2 ~4 input pixels per output (~40). So c8 can
// only win where rows_* waste their work: planes of 7-14 columns (every block an edge block
// with masked loads, 7 of 8 or 14 of 16 lanes used, one short FMA chain per row-block), and
// it is capped below the yardstick, conv2d.onednn.blocked, whose timed part reads and writes
// the nChw8c layout directly (its reorders are untimed): at best ~0.6× of it for stride 1 at
// the same instruction rate, ~0.4× for stride 2 (the input is 4× the output).
// Measured (2-core Zen 3 EPYC VM, AVX2, shared with other work while measured): the ratio
// oneDNN time / ours, from `layerbench run` of the nine MobileNet shapes at batch 1 and 32,
// 1 and 2 threads, both kernels interleaved, twice, each time right after the same run of
// the rows_*-only build (before → after, 1 / 2 threads): dw13 0.42/0.52 → 0.86/0.75 and
// 0.45/0.50 → 0.56/0.72; dw8 0.59/0.61 → 0.64/0.80 and 0.71/0.70 → 0.88/0.74; dw6
// 0.63/0.89 → 0.73/0.83 and 0.63/0.69 → 0.72/1.01; dw14 0.65/0.78 → 0.82/0.87 and
// 0.78/0.92 → 0.60/0.66. Above the stride-2 prediction: oneDNN's jit_dw:avx2 runs well
// below its own bound on these planes. The unchanged paths moved ±0.1-0.3 between the two
// runs, so the dw14 change is within the noise. Not used (measured as fast or slower than
// rows_*): larger planes (dw2-dw5, dw7 at batch 1), and batch 32 (x and y past the caches),
// where c8's eight plane streams per group ran up to 2× slower than rows_*' one even with
// prefetching. Masked loads (vmaskmovps) in the W < 8 transposes made dw14 at batch 32 2.5×
// slower: c8 reads past the row instead.
// Non-temporal y (rows_*, batch 32, Q % 8 = 0), the same two pairs of runs: dw2 0.73/0.84 →
// 0.93/1.00 and 0.72/0.74 → 0.97/1.09; dw3 0.71/0.98 → 0.83/1.13 and 0.72/0.79 → 0.90/0.97;
// dw4 0.78/0.83 → 0.91/1.20 and 1.02/0.79 → 0.93/1.05.
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
// batch 1, so both threads of 2 always have work); c8 splits its units (per image, the C/8
// groups, then the channels past them if any) the same way, each thread with its own bands.
// Tunables: L (the ISA's vector width), kPrefetchBytes (distance), kOutgrowsCachesBytes (when),
// kRowsS1 / kRowsS2 (output rows per pass of the row-pass paths), kC8MaxPlane (where c8 is
// used), kC8BandBytes (its bands).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/depthwise_lanes.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"

namespace lb::cpu {
namespace {

// How a block's L inputs of one tap are loaded: stride 1 (contiguous), stride 2 (even
// lanes of 2L contiguous), or any other stride (gather).
enum class Load { unit, pair, gather };

// The per-ISA vector operations. Masks are bit masks (bit j: lane j; for Load::pair,
// bit e: element e of the 2L read).
// (kLanes, V, fma, max0, stream, fence: from the channels-as-lanes types, depthwise_lanes.h.)
struct Avx512 : Lanes16 {
  LB_TARGET_AVX512 static inline V set1(float v) { return _mm512_set1_ps(v); }
  LB_TARGET_AVX512 static inline V add(V a, V b) { return _mm512_add_ps(a, b); }
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

struct Avx2 : Lanes8 {
  LB_TARGET_AVX2 static inline V set1(float v) { return _mm256_set1_ps(v); }
  LB_TARGET_AVX2 static inline V add(V a, V b) { return _mm256_add_ps(a, b); }
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
  c8,       // AVX2, stride 1 or 2 both ways, dilation 1: 8 channels as the lanes (nChw8c bands)
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
  // rows_*: y stored non-temporally (bypassing the caches, no read for ownership) when x and
  // y outgrow the caches and every block is whole and 32-byte aligned (Q % L = 0, y aligned).
  bool stream = false;
  int32_t splice_prev[16] = {}, splice_last[16] = {}, splice_take_prev[16] = {};
  // c8: the path of the channels past the last whole group of 8 (rows_* or generic), and
  // the band geometry: the input band is in_rows × wp pixels of 8 channels (zero border
  // included), the output band band × Q.
  Variant rest = Variant::generic;
  int64_t groups = 0;  // C / 8
  int64_t band = 0, in_rows = 0, wp = 0;
  int64_t scratch_floats = 0;  // per thread: input band, then output band (64-byte multiples)
};
constexpr int64_t kChunkBias = 2;
// c8: the bytes of one thread's input and output bands together (L1 is 32 KB on Zen 3).
constexpr int64_t kC8BandBytes = 24 << 10;

// Software prefetch of the input kPrefetchBytes ahead of `from`, `floats` of it (each path
// calls it per output row with what that row consumes, so it keeps pace; planes are
// contiguous, so it runs on into the next ones). Measured: without it, once x and y
// outgrow L3 (MobileNet batch ≥ 8) the hardware prefetchers alone left the row walk
// latency-bound at ~10 GB/s, 3-4× below the ~35 GB/s one core streams from DRAM here.
constexpr int64_t kPrefetchBytes = 8192;
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

// AVX2's plane-at-a-time path for 3×3: a row-pass one where the shape allows, else generic.
Variant pick_avx2_rows(const Conv2d& c, int64_t P, int64_t Q) {
  if (c.kh != 3 || c.kw != 3) return Variant::generic;
  // Q < L needs a row before the last (the splice) and L - Q ≤ Q lanes of it.
  const bool rows = c.dh == 1 && c.dw == 1 && (Q >= Avx2::kLanes || (2 * Q >= Avx2::kLanes && P >= 2));
  if (rows && c.sh == 1 && c.sw == 1) return Variant::rows_s1;
  if (rows && c.sh == 2 && c.sw == 2) return Variant::rows_s2;
  return Variant::generic;
}

// Whether x and y together outgrow the caches (kOutgrowsCachesBytes): then the paths prefetch.
bool outgrows_caches(const Conv2d& c, int64_t P, int64_t Q) {
  return int64_t(sizeof(float)) * c.mb * c.ic * (c.ih * c.iw + P * Q) > kOutgrowsCachesBytes;
}

// c8 where it measured faster than the row-pass paths here (see the header): x and y in the
// caches, C ≥ 8, and the input plane at most kC8MaxPlane[S - 1] pixels (stride 1: 28×28,
// stride 2: 14×14). Larger planes and batch 32 measured as fast or faster on rows_*, which
// transpose nothing (c8's transposes cost ~5 instructions per 8-channel pixel each way).
constexpr int64_t kC8MaxPlane[2] = {28 * 28, 14 * 14};

Variant pick_variant(const Conv2d& c, int64_t P, int64_t Q, Isa isa) {
  if (c.kh != 3 || c.kw != 3) return Variant::generic;
  if (isa == Isa::avx2) {
    const bool c8 = c.dh == 1 && c.dw == 1 && c.sh == c.sw && (c.sh == 1 || c.sh == 2) && c.ic >= 8 &&
                    c.ih * c.iw <= kC8MaxPlane[c.sh - 1] && !outgrows_caches(c, P, Q);
    if (c8) return Variant::c8;
    return pick_avx2_rows(c, P, Q);
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
  pl.prefetch = outgrows_caches(c, pl.P, pl.Q);
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
  if (pl.variant == Variant::c8) {
    pl.rest = pick_avx2_rows(c, pl.P, pl.Q);
    pl.groups = c.ic / 8;
    const int64_t S = c.sh;
    pl.wp = std::max((pl.Q - 1) * S + 3, c.pw + c.iw);
    // Output rows per band: as many as keep both bands within kC8BandBytes, at least 1.
    const int64_t row_bytes = 32 * (S * pl.wp + pl.Q);
    pl.band = std::clamp<int64_t>((kC8BandBytes - 32 * (3 - S) * pl.wp) / row_bytes, 1, pl.P);
    pl.in_rows = (pl.band - 1) * S + 3;
    pl.scratch_floats = (8 * pl.in_rows * pl.wp + 15) / 16 * 16 + (8 * pl.band * pl.Q + 15) / 16 * 16;
  }
  const Variant rows_variant = pl.variant == Variant::c8 ? pl.rest : pl.variant;
  if (rows_variant == Variant::rows_s1 || rows_variant == Variant::rows_s2) {
    const bool s2 = rows_variant == Variant::rows_s2;
    const int64_t L = lanes;
    pl.short_rows = pl.Q < L;
    pl.stream = pl.variant == rows_variant && pl.prefetch && pl.Q % L == 0;
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
inline void store_rows(const Plan& pl, float* y, int64_t p, int64_t q0, typename I::V (&v)[NR], bool relu,
                       bool stream) {
  const int64_t P = pl.P, Q = pl.Q;
  for (int i = 0; i < NR; ++i)
    if (relu) v[i] = I::max0(v[i]);
  if (stream) {
    for (int i = 0; i < NR; ++i)
      I::stream(y + (p + i) * Q + q0, v[i]);
    return;
  }
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
                      typename I::V b, int64_t p, const float* zero, bool relu, bool stream) {
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
    store_rows<I, NR>(pl, y, p, q0, acc, relu, stream);
  }
}

// The last `rest` rows of the plane, as one pass of M = rest rows.
template <class I, int M, int S>
inline void rows_rest(const Plan& pl, const float* x, float* y, const typename I::V (&wv)[3][3],
                      typename I::V b, const float* zero, bool relu, bool stream, int64_t rest) {
  if constexpr (M > 1)
    if (rest < M) return rows_rest<I, M - 1, S>(pl, x, y, wv, b, zero, relu, stream, rest);
  rows_pass<I, M, S>(pl, x, y, wv, b, pl.P - M, zero, relu, stream);
}

// Stride S (both ways) 3×3, per plane: passes of NR ≤ P output rows, then one of the
// P % NR left (of 2 when that would be short_rows' last row alone, which needs the row
// before: that pass recomputes one row).
template <class I, int NR, int S>
inline void rows_planes(const Plan& pl, const Planes& io) {
  using V = typename I::V;
  const int64_t P = pl.P, C = pl.c.ic, in = pl.c.ih * pl.c.iw, out = P * pl.Q;
  const int64_t full = P / NR * NR, rest = pl.short_rows && P % NR == 1 ? 2 : P % NR;
  const bool stream = pl.stream && reinterpret_cast<uintptr_t>(io.y) % 32 == 0;
  for (int64_t i = io.first, ch = io.first % C; i < io.last; ++i, ch = ch + 1 < C ? ch + 1 : 0) {
    const float* x = io.x + i * in;
    float* y = io.y + i * out;
    V wv[3][3];
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s)
        wv[r][s] = I::set1(io.w[9 * ch + 3 * r + s]);
    const V b = I::set1(io.b[ch]);
    for (int64_t p = 0; p < full; p += NR)
      rows_pass<I, NR, S>(pl, x, y, wv, b, p, io.zero, io.relu, stream);
    if (rest > 0) rows_rest<I, NR, S>(pl, x, y, wv, b, io.zero, io.relu, stream, rest);
  }
  if (stream) I::fence();
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

// ---- c8: channels as lanes, AVX2 3×3 (compiled into planes_avx2) ----

// The 8×8 transposes of the c8 path, as two 4×4 ones within 128-bit halves: a[i] holds
// [row i, 4 elements | row i+4, the same 4 elements] (two 128-bit loads, the second by
// vinsertf128 from memory), and after 8 in-lane shuffles a[k] holds element k of rows 0-7.
// 8 shuffles per 4 elements instead of 12 (unpack, shuffle and a permute2f128 per 8).
LB_TARGET_AVX2 inline void transpose4_halves(__m256 (&a)[4]) {
  const __m256 t0 = _mm256_unpacklo_ps(a[0], a[1]), t1 = _mm256_unpackhi_ps(a[0], a[1]);
  const __m256 t2 = _mm256_unpacklo_ps(a[2], a[3]), t3 = _mm256_unpackhi_ps(a[2], a[3]);
  a[0] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  a[1] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  a[2] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  a[3] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
}
LB_TARGET_AVX2 inline __m256 halves(__m128 lo, __m128 hi) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
}

// Input row h of the 8 planes at x (planes `in` floats apart) into band row `dst` (wp
// pixels of 8 channels): columns PW .. PW+W-1 from the row. The other columns are never
// written, so they keep the zeros the scratch was allocated with; a row outside the image
// is zero, written only when there are several bands (one band: that scratch row only ever
// holds zeros). Per 4 columns: 8 half loads, 8 shuffles, 4 stores; the last block of 8
// overlaps its neighbour (W ≥ 8). W < 8: the columns past the row are read too (the row
// after, or the next plane) and dropped; masked loads only in the tensor's last row
// (`last_row`), since with them dw14 at batch 32 (x out of cache) ran 2.5× slower.
LB_TARGET_AVX2 inline void c8_fill_row(const Plan& pl, const float* x, int64_t in, int64_t h, float* dst,
                                       bool last_row) {
  const int64_t W = pl.c.iw, PW = pl.c.pw, wp = pl.wp;
  const __m256 zero = _mm256_setzero_ps();
  if (h < 0 || h >= pl.c.ih) {
    if (pl.band < pl.P)  // else this row of the scratch only ever holds zeros
      for (int64_t k = 0; k < wp; ++k)
        _mm256_store_ps(dst + 8 * k, zero);
    return;
  }
  const float* row = x + h * W;
  float* out = dst + 8 * PW;
  __m256 a[4];
  if (W < 8) {
    for (int64_t c0 = 0; c0 < W; c0 += 4) {
      if (last_row) {
        const __m128i lanes = _mm_cmpgt_epi32(_mm_set1_epi32(int(W - c0)), _mm_setr_epi32(0, 1, 2, 3));
        for (int j = 0; j < 4; ++j)
          a[j] = halves(_mm_maskload_ps(row + j * in + c0, lanes),
                        _mm_maskload_ps(row + (j + 4) * in + c0, lanes));
      } else {
        for (int j = 0; j < 4; ++j)
          a[j] = halves(_mm_loadu_ps(row + j * in + c0), _mm_loadu_ps(row + (j + 4) * in + c0));
      }
      transpose4_halves(a);
      for (int64_t k = 0; k < std::min<int64_t>(4, W - c0); ++k)
        _mm256_store_ps(out + 8 * (c0 + k), a[k]);
    }
    return;
  }
  for (int64_t w = 0;; w += 8) {
    const int64_t w0 = std::min(w, W - 8);
    for (int64_t c0 = w0; c0 < w0 + 8; c0 += 4) {
      for (int j = 0; j < 4; ++j)
        a[j] = halves(_mm_loadu_ps(row + j * in + c0), _mm_loadu_ps(row + (j + 4) * in + c0));
      transpose4_halves(a);
      for (int k = 0; k < 4; ++k)
        _mm256_store_ps(out + 8 * (c0 + k), a[k]);
    }
    if (w0 == W - 8) break;
  }
}

// Outputs t0 .. t1-1 of a band (flat: row-major P×Q, 8 channels each, at `out`) to the 8
// output planes at y (planes `plane` floats apart), from flat index `base` of each: per 8
// outputs 16 half loads, 16 shuffles, 8 stores; the last block overlaps its neighbour, or
// (fewer than 8 in all) goes one float at a time.
LB_TARGET_AVX2 inline void c8_store(const float* out, int64_t n, float* y, int64_t plane) {
  if (n < 8) {
    for (int64_t t = 0; t < n; ++t)
      for (int j = 0; j < 8; ++j)
        y[j * plane + t] = out[8 * t + j];
    return;
  }
  __m256 a[4];
  for (int64_t t = 0;; t += 8) {
    const int64_t t0 = std::min(t, n - 8);
    const float* src = out + 8 * t0;
    for (int c0 = 0; c0 < 8; c0 += 4) {  // channels c0 .. c0+3
      for (int k = 0; k < 4; ++k)
        a[k] = halves(_mm_load_ps(src + 8 * k + c0), _mm_load_ps(src + 8 * (k + 4) + c0));
      transpose4_halves(a);
      for (int j = 0; j < 4; ++j)
        _mm256_storeu_ps(y + (c0 + j) * plane + t0, a[j]);
    }
    if (t0 == n - 8) break;
  }
}

// One image's group of 8 channels: planes x, y (8 each, consecutive), weights wg
// ([3][3][8]) and bias bg ([8]), band by band: the band's input rows transposed into the
// scratch (the rows it shares with the band before moved up instead), its outputs computed
// as 9 FMAs of 8-channel vectors each, then transposed back.
template <int S>
LB_TARGET_AVX2 inline void c8_group(const Plan& pl, const float* x, float* y, const float* wg,
                                    const float* bg, bool relu, float* scratch, bool last_group) {
  const int64_t P = pl.P, Q = pl.Q, wp = pl.wp, in = pl.c.ih * pl.c.iw, plane = P * Q;
  constexpr int kShared = 3 - S;  // input rows a band shares with the next
  float* bin = scratch;
  float* bout = scratch + (8 * pl.in_rows * pl.wp + 15) / 16 * 16;
  __m256 wv[3][3];
  lane_weights<Lanes8>(wg, wv);
  for (int64_t p0 = 0; p0 < P; p0 += pl.band) {
    const int64_t pb = std::min(pl.band, P - p0), rows = (pb - 1) * S + 3;
    int64_t u = 0;
    if (p0 > 0) {
      std::memmove(bin, bin + 8 * wp * (pl.band * S), sizeof(float) * 8 * wp * kShared);
      u = kShared;
    }
    for (; u < rows; ++u) {
      const int64_t h = p0 * S - pl.c.ph + u;
      c8_fill_row(pl, x, in, h, bin + 8 * wp * u, last_group && h == pl.c.ih - 1);
    }
    for (int64_t i = 0; i < pb; ++i) {
      const float* src = bin + 8 * wp * (i * S);
      const float* const rows[3] = {src, src + 8 * wp, src + 16 * wp};
      float* dst = bout + 8 * Q * i;
      int64_t q = 0;
      constexpr int kStep = Lanes8::kStep[S - 1];
      for (; q + kStep <= Q; q += kStep)
        lane_outputs<Lanes8, S, kStep>(rows, q * S, wv, bg, relu, dst + 8 * q);
      if (q < Q) lane_last_outputs<Lanes8, S, kStep - 1>(rows, q * S, wv, bg, relu, dst + 8 * q, Q - q);
    }
    c8_store(bout, pb * Q, y + p0 * Q, plane);
  }
}

// The units [first, last) of this thread: per image, its C/8 groups of 8 channels, then
// (C % 8 ≠ 0) one unit of the channels left, which take pl.rest.
template <class RestFn>
LB_TARGET_AVX2 inline void c8_units(const Plan& pl, const Planes& io, const float* wpack, const float* bpack,
                                    float* scratch, RestFn rest) {
  const int64_t C = pl.c.ic, G = pl.groups, per_image = G + (C % 8 != 0);
  const int64_t in = pl.c.ih * pl.c.iw, out = pl.P * pl.Q;
  for (int64_t unit = io.first; unit < io.last; ++unit) {
    const int64_t n = unit / per_image, g = unit % per_image;
    if (g == G) {
      Planes r = io;
      r.first = n * C + 8 * G;
      r.last = (n + 1) * C;
      rest(r);
      continue;
    }
    const int64_t i = n * C + 8 * g;         // first plane of the group
    const bool last = i + 8 == pl.c.mb * C;  // the tensor's last planes
    if (pl.c.sh == 1)
      c8_group<1>(pl, io.x + i * in, io.y + i * out, wpack + 72 * g, bpack + 8 * g, io.relu, scratch, last);
    else
      c8_group<2>(pl, io.x + i * in, io.y + i * out, wpack + 72 * g, bpack + 8 * g, io.relu, scratch, last);
  }
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
    case Variant::rows_s2:
    case Variant::c8:  // AVX2 only (pick_variant)
      return planes_any<Avx512>(pl, x, w, b, y, relu, zero, first, last);
  }
}

// Planes [first, last) of the N·C, or for c8 units [first, last) (c8_units()), with
// wpack / bpack / scratch (the thread's) its packed weights, bias and bands.
__attribute__((target("avx2,fma"), flatten)) void planes_avx2(const Plan& pl, const float* x, const float* w,
                                                              const float* b, float* y, bool relu,
                                                              const float* zero, int64_t first, int64_t last,
                                                              const float* wpack, const float* bpack,
                                                              float* scratch) {
  const Planes io{x, w, b, y, relu, zero, first, last};
  const auto rows = [&pl](Variant v, const Planes& r) {
    switch (v) {
      case Variant::rows_s1:
        return rows_any<Avx2, 1, kRowsS1>(pl, r);
      case Variant::rows_s2:
        return rows_any<Avx2, 2, kRowsS2>(pl, r);
      default:
        return planes_any<Avx2>(pl, r.x, r.w, r.b, r.y, r.relu, r.zero, r.first, r.last);
    }
  };
  if (pl.variant == Variant::c8)
    return c8_units(pl, io, wpack, bpack, scratch, [&](const Planes& r) { rows(pl.rest, r); });
  rows(pl.variant, io);
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

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    relu_ = p.relu;
    isa_ = best_isa();
    plan_ = make_plan(p.conv(), isa_);
    zero_ = AlignedBuffer<float>(size_t(p.conv().iw));
    pool_ = std::make_unique<Pool>(std::max(1, ctx.threads));
    if (plan_.variant == Variant::c8) {
      // Weights as [C/8][3][3][8] and bias as [C/8][8]: one aligned vector per tap of a group.
      const float* w = ts.at(Arg::wei).as<float>();
      const float* b = ts.at(Arg::bias).as<float>();
      wpack_ = AlignedBuffer<float>(size_t(72 * plan_.groups));
      bpack_ = AlignedBuffer<float>(size_t(8 * plan_.groups));
      lane_pack(w, b, 8 * plan_.groups, plan_.groups, 8, wpack_.data(), bpack_.data());
      bands_ = AlignedBuffer<float>(size_t(plan_.scratch_floats * pool_->size()));
    }
  }

  void run(TensorSet& ts) override {
    const float* x = ts.at(Arg::src).as<float>();
    const float* w = ts.at(Arg::wei).as<float>();
    const float* b = ts.at(Arg::bias).as<float>();
    float* y = ts.at(Arg::dst).as<float>();
    const bool fused = relu_ == Relu::fused;
    // The work split across the pool: planes, or c8's units (groups of 8 planes, and the rest).
    const int64_t units = plan_.variant == Variant::c8 ? plan_.c.mb * (plan_.groups + (plan_.c.ic % 8 != 0))
                                                       : plan_.c.mb * plan_.c.ic;
    pool_->run([&](int tid, int n) {
      const Range range = split(units, 1, tid, n);
      if (range.first >= range.last) return;
      switch (isa_) {
        case Isa::avx512:
          return planes_avx512(plan_, x, w, b, y, fused, zero_.data(), range.first, range.last);
        case Isa::avx2:
          return planes_avx2(plan_, x, w, b, y, fused, zero_.data(), range.first, range.last, wpack_.data(),
                             bpack_.data(), bands_.data() + plan_.scratch_floats * tid);
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
    wpack_ = AlignedBuffer<float>();
    bpack_ = AlignedBuffer<float>();
    bands_ = AlignedBuffer<float>();
  }

  std::string details() const override {
    static constexpr const char* kVariants[] = {"generic", "wide_s1", "wide_s2", "narrow",
                                                "rows_s1", "rows_s2", "c8"};
    return std::string(name(isa_)) + ", " + kVariants[int(plan_.variant)] +
           (plan_.stream ? ", y non-temporal" : "");
  }

  size_t scratch_bytes() const override {
    return zero_.bytes() + plan_.q0.size() * sizeof(int64_t) +
           (plan_.out_mask.size() + plan_.in_mask.size()) * sizeof(uint32_t) +
           plan_.row_q0.size() * (sizeof(int64_t) + 1) + plan_.row_lanes.size() * sizeof(int32_t) +
           wpack_.bytes() + bpack_.bytes() + bands_.bytes();
  }

 private:
  Relu relu_ = Relu::none;
  Isa isa_ = Isa::scalar;
  Plan plan_;
  AlignedBuffer<float> zero_;
  AlignedBuffer<float> wpack_, bpack_, bands_;  // c8: packed weights and bias, per-thread bands
  std::unique_ptr<Pool> pool_;
};

}  // namespace

std::unique_ptr<Kernel> make_depthwise_conv2d() {
  return std::make_unique<CpuConv2dDepthwise>();
}

}  // namespace lb::cpu
