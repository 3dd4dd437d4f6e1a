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
// Prefetch: once x and y outgrow the caches, the hardware prefetchers alone left the row
// walk latency-bound at ~10 GB/s; each path prefetches the input a fixed distance ahead
// (prefetch_ahead()), which brought batch 32 to the DRAM bandwidth (3-4× faster).
//
// ISA: AVX-512, AVX2 or scalar, the best the CPU has (best_isa(): CPUID, or $LB_CPU_ISA).
// The generic vector code is written once as templates over an ISA type whose operations
// carry the target attribute; the per-ISA entry points are target + flatten, which inlines
// the whole template into them, so nothing outside those functions needs the ISA.
// Threads: the N·C planes split across the pool in contiguous ranges.
// Tunables: L (the ISA's vector width), kPrefetchBytes (distance), kPrefetchAbove (when).
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
};

// How the planes are computed (make_plan() picks; the fast paths are AVX-512, 3×3 only).
enum class Variant {
  generic,  // any shape, any ISA: per block and tap, one masked (or pair, or gather) load
  wide_s1,  // stride 1, dilation 1, PW ≤ 2: aligned-to-the-block loads, taps by lane shifts
  wide_s2,  // stride 2 across (any down), dilation 1, PW ≤ 2: even/odd split, then lane shifts
  narrow,   // Q ≤ 8, W ≤ 16, any stride/dilation: two output rows per vector
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

Variant pick_variant(const Conv2d& c, int64_t Q, bool avx512) {
  if (!avx512 || c.kh != 3 || c.kw != 3) return Variant::generic;
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
  pl.variant = pick_variant(c, pl.Q, isa == Isa::avx512);
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
  }
}

__attribute__((target("avx2,fma"), flatten)) void planes_avx2(const Plan& pl, const float* x, const float* w,
                                                              const float* b, float* y, bool relu,
                                                              const float* zero, int64_t first,
                                                              int64_t last) {
  planes_any<Avx2>(pl, x, w, b, y, relu, zero, first, last);
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
    static constexpr const char* kVariants[] = {"generic", "wide_s1", "wide_s2", "narrow"};
    return std::string(name(isa_)) + ", " + kVariants[int(plan_.variant)];
  }

  size_t scratch_bytes() const override {
    return zero_.bytes() + plan_.q0.size() * sizeof(int64_t) +
           (plan_.out_mask.size() + plan_.in_mask.size()) * sizeof(uint32_t);
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
