// AVX-512 micro-kernels, 14×32 tiles: 28 zmm accumulators (of 32), two zmm of B per
// step and 14 broadcasts of A folded into the FMAs as {1to16} memory operands.
//
// Prediction (f32): per k step 28 FMAs (2 × 16 lanes × 14 rows) = 14 cycles on Zen 5's two
// 512-bit FMA pipes, against 2 loads + 14 broadcast loads (≤ 3 loads/cycle): FMA-bound, so
// the tile alone can reach ~100 % of peak; 28 independent chains hide the 4-cycle FMA latency
// (8 needed). The B micro-panel (kc × 32 × 4 B = 32 KB at kc = 256) stays in L1 across the
// MC/14 tiles that reuse it. bf16 (vdpbf16ps) and u8·s8 (vpdpbusd) do 2 and 4 multiply-adds
// per lane per instruction on the same tile: ≤ 2× and ≤ 4× the f32 rate where the machine
// runs them at full width (measured peaks here: bf16 1.84×, int8 3.98× f32).
// One row of C (batch-1 dense, the LSTM's recurrence at batch 1: a GEMV, memory-bound on B's
// bytes) read B one panel at a time, a single stream: on the Zen 4 VM 1×4096→4096 (67 MB)
// took 3.1 ms, 1.37× slower than AVX2's four-panel row kernel on the same host. row_panels
// reads four panels of 32 columns at once (8 accumulators; 8 panels measured 0.79–1.01×):
// same VM, old and new builds alternately, 3 runs each (results/cpu-zen4-2core/
// 2026-12-02_avx512-gemv-row-panels): 1×4096→4096 1.23× / 1.15× faster at 1 / 2 threads,
// AlexNet fc6 1.39× / 1.16×, fc8 1.31× / 1.36×, MobileNet's fc 1.48× / 1.46×, LSTM 512 batch 1
// 1.29× / 1.34×; dense batch 4 (control) 1.03× / 1.05×. The same for u8·s8 (int8 batch-1
// dense was 0.68× oneDNN there at 1 thread): 1×4096→4096 1.53× / 1.36×, AlexNet fc6 1.57× /
// 1.44×, fc8 1.35× / 1.22×, MobileNet's fc 1.24× / 1.27× (that VM's noisier hour: the batch-4
// control 0.86× / 1.20×). bf16 keeps the tile (batch-1 dense 1.26× / 1.20× oneDNN there).
// Unmeasured on Zen 5.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mavx512vnni -mfma.
// GCC 12 reports -W(maybe-)uninitialized inside its own AVX-512 headers (the undefined
// pass-through operand of masked loads), judged at the header line: silenced there only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "kernels/cpu/ukernel.h"

namespace lb::cpu {
namespace {

constexpr int MR = 14;  // rows of A per tile: 14 × 2 accumulators + 2 B registers ≤ 32 zmm
constexpr int NR = 32;  // columns: two zmm
static_assert(MR * NR / 16 + NR / 16 <= 32, "accumulators and B must fit the 32 zmm registers");
constexpr int kStreamingRows = 6;       // tiles of at most this many rows prefetch B ahead
constexpr int64_t kPrefetchSteps = 32;  // how far ahead: 32 k steps of 128 B

// GCC 12 spills the accumulators of the bf16 and VNNI intrinsics to the stack on every
// step (measured: 40 % of the int8 peak); the same instructions as inline assembly, with
// the accumulator as a read-write register operand, keep all 28 in registers.
inline __m512 dpbf16(__m512 acc, __m512i a, __m512i b) {
  asm("vdpbf16ps %[b], %[a], %[acc]" : [acc] "+v"(acc) : [a] "v"(a), [b] "v"(b));
  return acc;
}
inline __m512i dpbusd(__m512i acc, __m512i a_u8, __m512i b_s8) {
  asm("vpdpbusd %[b], %[a], %[acc]" : [acc] "+v"(acc) : [a] "v"(a_u8), [b] "v"(b_s8));
  return acc;
}

struct Masks {
  __mmask16 lo, hi;
};
inline Masks masks(int n) {
  const auto bits = [](int k) {
    return k >= 16 ? __mmask16(0xffff) : __mmask16((1u << (k > 0 ? k : 0)) - 1);
  };
  return {bits(n), bits(n - 16)};
}

// The epilogue for f32 sums `acc`: partial sums, scale, bias, ReLU, store (f32 or bf16).
// The epilogue reads the sums from t (M rows of 32, 64-byte aligned), see LB_STORE_SUMS.
template <int M>
inline void finish(const UkArgs& u, const float* t) {
  const Masks mk = masks(u.n);
  const __mmask16 mask[2] = {mk.lo, mk.hi};
  __m512 bias_col[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  if (u.last && u.bias_col)
    for (int h = 0; h < 2; ++h)
      bias_col[h] = _mm512_maskz_loadu_ps(mask[h], u.bias_col + 16 * h);
  const __m512 scale = _mm512_set1_ps(u.scale);
  for (int i = 0; i < M; ++i) {
    float* c = u.c ? u.c + i * u.ldc : nullptr;  // null: a bf16 result without partial sums
    for (int h = 0; h < 2; ++h) {
      __m512 v = _mm512_load_ps(t + i * NR + 16 * h);
      if (u.scale != 1.0f) v = _mm512_mul_ps(v, scale);
      if (u.load_c) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask[h], c + 16 * h));
      if (u.last) {
        if (u.bias_row) v = _mm512_add_ps(v, _mm512_set1_ps(u.bias_row[i]));
        if (u.bias_col) v = _mm512_add_ps(v, bias_col[h]);
        if (u.relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
      }
      if (u.last && u.out_bf16) {
        const __m256i b = (__m256i)_mm512_cvtneps_pbh(v);
        _mm256_mask_storeu_epi16(u.out_bf16 + i * u.ldo + 16 * h, mask[h], b);
      } else {
        _mm512_mask_storeu_ps(c + 16 * h, mask[h], v);
      }
    }
  }
}

// acc[M][2] (f32 or s32 sums) into t, written out in place: passing the accumulator array
// by reference to a helper made GCC keep it in memory, storing every accumulator on every
// k step (measured: the 8-row tile at half the 14-row one's rate).
inline __m512 to_ps(__m512 v) {
  return v;
}
inline __m512 to_ps(__m512i v) {
  return _mm512_cvtepi32_ps(v);
}
#define LB_STORE_SUMS(acc, t, M)   \
  for (int i_ = 0; i_ < (M); ++i_) \
    for (int h_ = 0; h_ < 2; ++h_) \
  _mm512_store_ps((t) + i_ * NR + 16 * h_, to_ps(acc[i_][h_]))

// The C tile's 2·M cache lines are fetched while the k loop runs: they sit at ldc strides
// (in L3 or memory) and would otherwise stall the epilogue (measured: 19 % of the f32 tile's
// time in the two C loads before this).
template <int M>
inline void prefetch_c(const UkArgs& u) {
  if (!u.c) return;
  for (int i = 0; i < M; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(u.c + i * u.ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(u.c + i * u.ldc + 16), _MM_HINT_T0);
  }
}

// The element kinds of the micro-kernels.
enum class Kind { f32, bf16, u8s8 };

template <int M>
void f32_tile(const UkArgs& u) {
  prefetch_c<M>(u);
  __m512 acc[M][2];
  for (int i = 0; i < M; ++i)
    acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const float* a = static_cast<const float*>(u.a);
  const float* b = static_cast<const float*>(u.b);
  for (int64_t k = 0; k < u.kc; ++k, a += MR, b += NR) {
    // With a few rows the tile streams B from memory (small-batch dense: 4 B of W per
    // multiply-add); the hardware prefetcher alone measured ~20 GB/s here, so B is also
    // fetched kPrefetchSteps steps (4 KB) ahead.
    if constexpr (M <= kStreamingRows) {
      _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchSteps * NR), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchSteps * NR + 16), _MM_HINT_T0);
    }
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
    for (int i = 0; i < M; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
  alignas(64) float t[M * NR];
  LB_STORE_SUMS(acc, t, M);
  finish<M>(u, t);
}

// The accumulator type of a kind (a trait rather than std::conditional_t, which GCC warns
// drops the vector types' attributes).
template <Kind K>
struct SumsOf {
  using type = __m512i;
};
template <>
struct SumsOf<Kind::bf16> {
  using type = __m512;
};
template <>
struct SumsOf<Kind::f32> {
  using type = __m512;
};

// bf16 pairs (vdpbf16ps, f32 sums) or u8·s8 quads (vpdpbusd, s32 sums): per step one
// 32-bit group of A per row, 64 bytes of B per 16 columns, 128 bytes of B in all.
template <Kind K, int M>
void dot_tile(const UkArgs& u) {
  using Acc = typename SumsOf<K>::type;
  prefetch_c<M>(u);
  Acc acc[M][2] = {};
  const auto* a = static_cast<const uint32_t*>(u.a);
  const auto* b = static_cast<const char*>(u.b);
  const int64_t steps = u.kc / (K == Kind::bf16 ? 2 : 4);
#pragma GCC unroll 2
  for (int64_t k = 0; k < steps; ++k, a += MR, b += 2 * 64) {
    const __m512i b0 = _mm512_load_si512(b), b1 = _mm512_load_si512(b + 64);
    for (int i = 0; i < M; ++i) {
      const __m512i ai = _mm512_set1_epi32(int(a[i]));
      if constexpr (K == Kind::bf16) {
        acc[i][0] = dpbf16(acc[i][0], ai, b0);
        acc[i][1] = dpbf16(acc[i][1], ai, b1);
      } else {
        acc[i][0] = dpbusd(acc[i][0], ai, b0);
        acc[i][1] = dpbusd(acc[i][1], ai, b1);
      }
    }
  }
  alignas(64) float t[M * NR];
  LB_STORE_SUMS(acc, t, M);
  finish<M>(u, t);
}

// The full 14-row tiles: the k loop in assembly, accumulators pinned to zmm4-zmm31 and B in
// zmm0-zmm1, each row's A value broadcast once (a load-unit µop) into zmm2/zmm3 in turn.
// GCC 12 compiles the bf16 and VNNI intrinsics spilling accumulators to the stack every
// step (measured 40-50 % of peak), and the f32 one with a worse schedule. Folding A into
// each FMA as a {1to16} memory operand instead measured slower: 28 loads per step rather
// than 14, at the load ports' limit.
// Each k step: B's 32 columns (128 B) at b, A's 14 rows at a (56 B), then a += 56, b += 128;
// B is also fetched 32 steps (4 KB) ahead, for when it streams from memory (small batches).
#define LB_ROW_FMA(off, ra, r0, r1)             \
  "vbroadcastss " #off "(%[a]), %%zmm" #ra      \
  "\n\t"                                        \
  "vfmadd231ps %%zmm0, %%zmm" #ra ", %%zmm" #r0 \
  "\n\t"                                        \
  "vfmadd231ps %%zmm1, %%zmm" #ra ", %%zmm" #r1 "\n\t"
#define LB_ROW_BF16(off, ra, r0, r1)          \
  "vpbroadcastd " #off "(%[a]), %%zmm" #ra    \
  "\n\t"                                      \
  "vdpbf16ps %%zmm0, %%zmm" #ra ", %%zmm" #r0 \
  "\n\t"                                      \
  "vdpbf16ps %%zmm1, %%zmm" #ra ", %%zmm" #r1 "\n\t"
#define LB_ROW_VNNI(off, ra, r0, r1)         \
  "vpbroadcastd " #off "(%[a]), %%zmm" #ra   \
  "\n\t"                                     \
  "vpdpbusd %%zmm0, %%zmm" #ra ", %%zmm" #r0 \
  "\n\t"                                     \
  "vpdpbusd %%zmm1, %%zmm" #ra ", %%zmm" #r1 "\n\t"
// The indirect int8 tile's roles: B (pixels, zmm0/zmm1) is the u8 operand, A (weights,
// broadcast) the s8 one.
#define LB_ROW_VNNI_PIXELS(off, ra, r0, r1)  \
  "vpbroadcastd " #off "(%[a]), %%zmm" #ra   \
  "\n\t"                                     \
  "vpdpbusd %%zmm" #ra ", %%zmm0, %%zmm" #r0 \
  "\n\t"                                     \
  "vpdpbusd %%zmm" #ra ", %%zmm1, %%zmm" #r1 "\n\t"
// Where a full tile's sums go: into t (14×32, row-major), or straight into C rows
// (ldc bytes apart), replacing or adding to what is there.
#define LB_STORE_T                  \
  "vmovaps %%zmm4, 0(%[t])\n\t"     \
  "vmovaps %%zmm5, 64(%[t])\n\t"    \
  "vmovaps %%zmm6, 128(%[t])\n\t"   \
  "vmovaps %%zmm7, 192(%[t])\n\t"   \
  "vmovaps %%zmm8, 256(%[t])\n\t"   \
  "vmovaps %%zmm9, 320(%[t])\n\t"   \
  "vmovaps %%zmm10, 384(%[t])\n\t"  \
  "vmovaps %%zmm11, 448(%[t])\n\t"  \
  "vmovaps %%zmm12, 512(%[t])\n\t"  \
  "vmovaps %%zmm13, 576(%[t])\n\t"  \
  "vmovaps %%zmm14, 640(%[t])\n\t"  \
  "vmovaps %%zmm15, 704(%[t])\n\t"  \
  "vmovaps %%zmm16, 768(%[t])\n\t"  \
  "vmovaps %%zmm17, 832(%[t])\n\t"  \
  "vmovaps %%zmm18, 896(%[t])\n\t"  \
  "vmovaps %%zmm19, 960(%[t])\n\t"  \
  "vmovaps %%zmm20, 1024(%[t])\n\t" \
  "vmovaps %%zmm21, 1088(%[t])\n\t" \
  "vmovaps %%zmm22, 1152(%[t])\n\t" \
  "vmovaps %%zmm23, 1216(%[t])\n\t" \
  "vmovaps %%zmm24, 1280(%[t])\n\t" \
  "vmovaps %%zmm25, 1344(%[t])\n\t" \
  "vmovaps %%zmm26, 1408(%[t])\n\t" \
  "vmovaps %%zmm27, 1472(%[t])\n\t" \
  "vmovaps %%zmm28, 1536(%[t])\n\t" \
  "vmovaps %%zmm29, 1600(%[t])\n\t" \
  "vmovaps %%zmm30, 1664(%[t])\n\t" \
  "vmovaps %%zmm31, 1728(%[t])\n\t"

#define LB_STORE_C                \
  "vmovups %%zmm4, (%[c])\n\t"    \
  "vmovups %%zmm5, 64(%[c])\n\t"  \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm6, (%[c])\n\t"    \
  "vmovups %%zmm7, 64(%[c])\n\t"  \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm8, (%[c])\n\t"    \
  "vmovups %%zmm9, 64(%[c])\n\t"  \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm10, (%[c])\n\t"   \
  "vmovups %%zmm11, 64(%[c])\n\t" \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm12, (%[c])\n\t"   \
  "vmovups %%zmm13, 64(%[c])\n\t" \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm14, (%[c])\n\t"   \
  "vmovups %%zmm15, 64(%[c])\n\t" \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm16, (%[c])\n\t"   \
  "vmovups %%zmm17, 64(%[c])\n\t" \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm18, (%[c])\n\t"   \
  "vmovups %%zmm19, 64(%[c])\n\t" \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm20, (%[c])\n\t"   \
  "vmovups %%zmm21, 64(%[c])\n\t" \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm22, (%[c])\n\t"   \
  "vmovups %%zmm23, 64(%[c])\n\t" \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm24, (%[c])\n\t"   \
  "vmovups %%zmm25, 64(%[c])\n\t" \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm26, (%[c])\n\t"   \
  "vmovups %%zmm27, 64(%[c])\n\t" \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm28, (%[c])\n\t"   \
  "vmovups %%zmm29, 64(%[c])\n\t" \
  "add %[ldc], %[c]\n\t"          \
  "vmovups %%zmm30, (%[c])\n\t"   \
  "vmovups %%zmm31, 64(%[c])\n\t" \
  "add %[ldc], %[c]\n\t"

#define LB_ADD_C                          \
  "vaddps (%[c]), %%zmm4, %%zmm4\n\t"     \
  "vaddps 64(%[c]), %%zmm5, %%zmm5\n\t"   \
  "vmovups %%zmm4, (%[c])\n\t"            \
  "vmovups %%zmm5, 64(%[c])\n\t"          \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm6, %%zmm6\n\t"     \
  "vaddps 64(%[c]), %%zmm7, %%zmm7\n\t"   \
  "vmovups %%zmm6, (%[c])\n\t"            \
  "vmovups %%zmm7, 64(%[c])\n\t"          \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm8, %%zmm8\n\t"     \
  "vaddps 64(%[c]), %%zmm9, %%zmm9\n\t"   \
  "vmovups %%zmm8, (%[c])\n\t"            \
  "vmovups %%zmm9, 64(%[c])\n\t"          \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm10, %%zmm10\n\t"   \
  "vaddps 64(%[c]), %%zmm11, %%zmm11\n\t" \
  "vmovups %%zmm10, (%[c])\n\t"           \
  "vmovups %%zmm11, 64(%[c])\n\t"         \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm12, %%zmm12\n\t"   \
  "vaddps 64(%[c]), %%zmm13, %%zmm13\n\t" \
  "vmovups %%zmm12, (%[c])\n\t"           \
  "vmovups %%zmm13, 64(%[c])\n\t"         \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm14, %%zmm14\n\t"   \
  "vaddps 64(%[c]), %%zmm15, %%zmm15\n\t" \
  "vmovups %%zmm14, (%[c])\n\t"           \
  "vmovups %%zmm15, 64(%[c])\n\t"         \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm16, %%zmm16\n\t"   \
  "vaddps 64(%[c]), %%zmm17, %%zmm17\n\t" \
  "vmovups %%zmm16, (%[c])\n\t"           \
  "vmovups %%zmm17, 64(%[c])\n\t"         \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm18, %%zmm18\n\t"   \
  "vaddps 64(%[c]), %%zmm19, %%zmm19\n\t" \
  "vmovups %%zmm18, (%[c])\n\t"           \
  "vmovups %%zmm19, 64(%[c])\n\t"         \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm20, %%zmm20\n\t"   \
  "vaddps 64(%[c]), %%zmm21, %%zmm21\n\t" \
  "vmovups %%zmm20, (%[c])\n\t"           \
  "vmovups %%zmm21, 64(%[c])\n\t"         \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm22, %%zmm22\n\t"   \
  "vaddps 64(%[c]), %%zmm23, %%zmm23\n\t" \
  "vmovups %%zmm22, (%[c])\n\t"           \
  "vmovups %%zmm23, 64(%[c])\n\t"         \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm24, %%zmm24\n\t"   \
  "vaddps 64(%[c]), %%zmm25, %%zmm25\n\t" \
  "vmovups %%zmm24, (%[c])\n\t"           \
  "vmovups %%zmm25, 64(%[c])\n\t"         \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm26, %%zmm26\n\t"   \
  "vaddps 64(%[c]), %%zmm27, %%zmm27\n\t" \
  "vmovups %%zmm26, (%[c])\n\t"           \
  "vmovups %%zmm27, 64(%[c])\n\t"         \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm28, %%zmm28\n\t"   \
  "vaddps 64(%[c]), %%zmm29, %%zmm29\n\t" \
  "vmovups %%zmm28, (%[c])\n\t"           \
  "vmovups %%zmm29, 64(%[c])\n\t"         \
  "add %[ldc], %[c]\n\t"                  \
  "vaddps (%[c]), %%zmm30, %%zmm30\n\t"   \
  "vaddps 64(%[c]), %%zmm31, %%zmm31\n\t" \
  "vmovups %%zmm30, (%[c])\n\t"           \
  "vmovups %%zmm31, 64(%[c])\n\t"         \
  "add %[ldc], %[c]\n\t"

// The 14 rows of a full tile: row r reads A at byte 4r into zmm2 or zmm3 (in turn) and
// accumulates into zmm(4+2r) and zmm(5+2r).
// Zeroes the 28 accumulators, zmm4-zmm31.
#define LB_ZERO_ACCS                     \
  "vpxord %%zmm4, %%zmm4, %%zmm4\n\t"    \
  "vpxord %%zmm5, %%zmm5, %%zmm5\n\t"    \
  "vpxord %%zmm6, %%zmm6, %%zmm6\n\t"    \
  "vpxord %%zmm7, %%zmm7, %%zmm7\n\t"    \
  "vpxord %%zmm8, %%zmm8, %%zmm8\n\t"    \
  "vpxord %%zmm9, %%zmm9, %%zmm9\n\t"    \
  "vpxord %%zmm10, %%zmm10, %%zmm10\n\t" \
  "vpxord %%zmm11, %%zmm11, %%zmm11\n\t" \
  "vpxord %%zmm12, %%zmm12, %%zmm12\n\t" \
  "vpxord %%zmm13, %%zmm13, %%zmm13\n\t" \
  "vpxord %%zmm14, %%zmm14, %%zmm14\n\t" \
  "vpxord %%zmm15, %%zmm15, %%zmm15\n\t" \
  "vpxord %%zmm16, %%zmm16, %%zmm16\n\t" \
  "vpxord %%zmm17, %%zmm17, %%zmm17\n\t" \
  "vpxord %%zmm18, %%zmm18, %%zmm18\n\t" \
  "vpxord %%zmm19, %%zmm19, %%zmm19\n\t" \
  "vpxord %%zmm20, %%zmm20, %%zmm20\n\t" \
  "vpxord %%zmm21, %%zmm21, %%zmm21\n\t" \
  "vpxord %%zmm22, %%zmm22, %%zmm22\n\t" \
  "vpxord %%zmm23, %%zmm23, %%zmm23\n\t" \
  "vpxord %%zmm24, %%zmm24, %%zmm24\n\t" \
  "vpxord %%zmm25, %%zmm25, %%zmm25\n\t" \
  "vpxord %%zmm26, %%zmm26, %%zmm26\n\t" \
  "vpxord %%zmm27, %%zmm27, %%zmm27\n\t" \
  "vpxord %%zmm28, %%zmm28, %%zmm28\n\t" \
  "vpxord %%zmm29, %%zmm29, %%zmm29\n\t" \
  "vpxord %%zmm30, %%zmm30, %%zmm30\n\t" \
  "vpxord %%zmm31, %%zmm31, %%zmm31\n\t"

#define LB_14_ROWS(ROW) \
  ROW(0, 2, 4, 5)       \
  ROW(4, 3, 6, 7)       \
  ROW(8, 2, 8, 9)       \
  ROW(12, 3, 10, 11)    \
  ROW(16, 2, 12, 13)    \
  ROW(20, 3, 14, 15)    \
  ROW(24, 2, 16, 17)    \
  ROW(28, 3, 18, 19)    \
  ROW(32, 2, 20, 21)    \
  ROW(36, 3, 22, 23)    \
  ROW(40, 2, 24, 25)    \
  ROW(44, 3, 26, 27)    \
  ROW(48, 2, 28, 29)    \
  ROW(52, 3, 30, 31)

#define LB_FULL_TILE(ROWS, STORE)                                                                          \
  asm volatile(LB_ZERO_ACCS                                                                                \
               "test %[steps], %[steps]\n\t"                                                               \
               "jz 2f\n\t"                                                                                 \
               "1:\n\t"                                                                                    \
               "vmovaps (%[b]), %%zmm0\n\t"                                                                \
               "vmovaps 64(%[b]), %%zmm1\n\t"                                                              \
               "prefetcht0 4096(%[b])\n\t"                                                                 \
               "prefetcht0 4160(%[b])\n\t" ROWS                                                            \
               "add $56, %[a]\n\t"                                                                         \
               "add $128, %[b]\n\t"                                                                        \
               "dec %[steps]\n\t"                                                                          \
               "jnz 1b\n\t"                                                                                \
               "2:\n\t" STORE                                                                              \
               : [a] "+r"(a), [b] "+r"(b), [steps] "+r"(steps), [c] "+r"(c)                                \
               : [t] "r"(t), [ldc] "r"(ldc)                                                                \
               : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",  \
                 "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", \
                 "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", \
                 "xmm31", "memory", "cc")

// The 14×32 sums of a full tile, f32 or s32 by the kind, into t (64-byte aligned).
template <Kind K>
void full_tile_sums(const UkArgs& u, void* t) {
  const char* a = static_cast<const char*>(u.a);
  const char* b = static_cast<const char*>(u.b);
  int64_t steps = K == Kind::f32 ? u.kc : K == Kind::bf16 ? u.kc / 2 : u.kc / 4;
  char* c = nullptr;  // unused by LB_STORE_T
  const int64_t ldc = 0;
  if constexpr (K == Kind::f32) {
    LB_FULL_TILE(LB_14_ROWS(LB_ROW_FMA), LB_STORE_T);
  } else if constexpr (K == Kind::bf16) {
    LB_FULL_TILE(LB_14_ROWS(LB_ROW_BF16), LB_STORE_T);
  } else {
    LB_FULL_TILE(LB_14_ROWS(LB_ROW_VNNI), LB_STORE_T);
  }
}

template <Kind K>
void full_tile(const UkArgs& u) {
  prefetch_c<MR>(u);
  alignas(64) float t[MR * NR];
  full_tile_sums<K>(u, t);
  if constexpr (K == Kind::u8s8)
    for (int i = 0; i < MR * NR; i += 16)
      _mm512_store_ps(t + i, _mm512_cvtepi32_ps(_mm512_load_si512(t + i)));
  finish<MR>(u, t);
}

// The last K slice of a full-width f32 tile, its epilogue on the accumulators: per row the
// partial sums in C (kLoadC), the column bias (zmm0/zmm1), the row's bias (broadcast into
// zmm2), ReLU (against zmm3 = 0), then plain or non-temporal (kStream: C 64-byte aligned,
// ldc a multiple of 16) stores. FLAGS: the k* bits; one instantiation each. Before, the
// tile was stored and a second pass over it in C++ added bias and ReLU. Predicted: that
// pass is ~28 loads, adds and stores per tile, a few % where K is deep but up to ~20 % for
// MobileNet's pw2 (K = 32: 448 FMA cycles per tile). Measured on the 2-core AMD EPYC Zen 5
// VM, old and new builds alternately, 3 runs (results/cpu-zen5-2core/
// 2026-12-02_avx512-tile-register-epilogue): pw2 1.22× / 1.20× faster at 1 / 2 threads,
// pw4 1.03× / 1.09×, pw6 1.03× / 1.04×, GEMM 1024³ 1.02×, dense 64×4096 1.00× / 1.03×; the
// non-temporal stores alone (same runs, against a build without them) 1.02-1.05×, as much
// as the untouched 3×3 control moved (1.05× / 1.03×): within the noise on that host.
constexpr int kLoadC = 1, kRowBias = 2, kColBias = 4, kRelu = 8, kStream = 16;
#define LB_EPI_ROW(boff, r0, r1)             \
  ".if %c[flags] & 1\n\t"                    \
  "vaddps (%[c]), %%zmm" #r0 ", %%zmm" #r0   \
  "\n\t"                                     \
  "vaddps 64(%[c]), %%zmm" #r1 ", %%zmm" #r1 \
  "\n\t"                                     \
  ".endif\n\t"                               \
  ".if %c[flags] & 4\n\t"                    \
  "vaddps %%zmm0, %%zmm" #r0 ", %%zmm" #r0   \
  "\n\t"                                     \
  "vaddps %%zmm1, %%zmm" #r1 ", %%zmm" #r1   \
  "\n\t"                                     \
  ".endif\n\t"                               \
  ".if %c[flags] & 2\n\t"                    \
  "vbroadcastss " #boff                      \
  "(%[bias]), %%zmm2\n\t"                    \
  "vaddps %%zmm2, %%zmm" #r0 ", %%zmm" #r0   \
  "\n\t"                                     \
  "vaddps %%zmm2, %%zmm" #r1 ", %%zmm" #r1   \
  "\n\t"                                     \
  ".endif\n\t"                               \
  ".if %c[flags] & 8\n\t"                    \
  "vmaxps %%zmm3, %%zmm" #r0 ", %%zmm" #r0   \
  "\n\t"                                     \
  "vmaxps %%zmm3, %%zmm" #r1 ", %%zmm" #r1   \
  "\n\t"                                     \
  ".endif\n\t"                               \
  ".if %c[flags] & 16\n\t"                   \
  "vmovntps %%zmm" #r0                       \
  ", (%[c])\n\t"                             \
  "vmovntps %%zmm" #r1                       \
  ", 64(%[c])\n\t"                           \
  ".else\n\t"                                \
  "vmovups %%zmm" #r0                        \
  ", (%[c])\n\t"                             \
  "vmovups %%zmm" #r1                        \
  ", 64(%[c])\n\t"                           \
  ".endif\n\t"                               \
  "add %[ldc], %[c]\n\t"
template <int FLAGS>
void full_f32_tile_last(const UkArgs& u) {
  if constexpr (!(FLAGS & kStream)) prefetch_c<MR>(u);
  const char* a = static_cast<const char*>(u.a);
  const char* b = static_cast<const char*>(u.b);
  int64_t steps = u.kc;
  char* c = reinterpret_cast<char*>(u.c);
  const int64_t ldc = u.ldc * int64_t(sizeof(float));
  const float* bias = u.bias_row;
  const float* bias_col = u.bias_col;
  asm volatile(LB_ZERO_ACCS
               "test %[steps], %[steps]\n\t"
               "jz 2f\n\t"
               "1:\n\t"
               "vmovaps (%[b]), %%zmm0\n\t"
               "vmovaps 64(%[b]), %%zmm1\n\t"
               "prefetcht0 4096(%[b])\n\t"
               "prefetcht0 4160(%[b])\n\t"
               LB_14_ROWS(LB_ROW_FMA)
               "add $56, %[a]\n\t"
               "add $128, %[b]\n\t"
               "dec %[steps]\n\t"
               "jnz 1b\n\t"
               "2:\n\t"
               ".if %c[flags] & 4\n\t"
               "vmovups (%[bias_col]), %%zmm0\n\t"
               "vmovups 64(%[bias_col]), %%zmm1\n\t"
               ".endif\n\t"
               "vpxord %%zmm3, %%zmm3, %%zmm3\n\t"
               LB_EPI_ROW(0, 4, 5) LB_EPI_ROW(4, 6, 7) LB_EPI_ROW(8, 8, 9) LB_EPI_ROW(12, 10, 11)
               LB_EPI_ROW(16, 12, 13) LB_EPI_ROW(20, 14, 15) LB_EPI_ROW(24, 16, 17) LB_EPI_ROW(28, 18, 19)
               LB_EPI_ROW(32, 20, 21) LB_EPI_ROW(36, 22, 23) LB_EPI_ROW(40, 24, 25) LB_EPI_ROW(44, 26, 27)
               LB_EPI_ROW(48, 28, 29) LB_EPI_ROW(52, 30, 31)
               : [a] "+r"(a), [b] "+r"(b), [steps] "+r"(steps), [c] "+r"(c)
               : [ldc] "r"(ldc), [bias] "r"(bias), [bias_col] "r"(bias_col), [flags] "i"(FLAGS)
               : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                 "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",
                 "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30",
                 "xmm31", "memory", "cc");
}
#undef LB_EPI_ROW
template <size_t... F>
constexpr auto last_tiles(std::index_sequence<F...>) {
  return std::array<void (*)(const UkArgs&), sizeof...(F)>{&full_f32_tile_last<int(F)>...};
}
constexpr auto kLastTiles = last_tiles(std::make_index_sequence<32>{});

// A full-width f32 tile (n = 32) goes straight to C, added to its partial sums after the
// first K slice; the last slice through full_f32_tile_last.
void full_f32_tile_to_c(const UkArgs& u) {
  if (u.last) {
    const bool stream =
        u.stream && !u.load_c && (reinterpret_cast<uintptr_t>(u.c) & 63) == 0 && (u.ldc & 15) == 0;
    return kLastTiles[(u.load_c ? kLoadC : 0) | (u.bias_row ? kRowBias : 0) | (u.bias_col ? kColBias : 0) |
                      (u.relu ? kRelu : 0) | (stream ? kStream : 0)](u);
  }
  prefetch_c<MR>(u);
  const char* a = static_cast<const char*>(u.a);
  const char* b = static_cast<const char*>(u.b);
  int64_t steps = u.kc;
  char* c = reinterpret_cast<char*>(u.c);
  const int64_t ldc = u.ldc * int64_t(sizeof(float));
  void* t = nullptr;  // unused by LB_STORE_C / LB_ADD_C
  if (u.load_c) {
    LB_FULL_TILE(LB_14_ROWS(LB_ROW_FMA), LB_ADD_C);
  } else {
    LB_FULL_TILE(LB_14_ROWS(LB_ROW_FMA), LB_STORE_C);
  }
}

// Indirect tiles (ukernel.h): B row k is read from x + off[k], always 32 floats: lanes past
// n hold whatever follows (the caller keeps 32 readable floats past its last offset) and
// only feed sums that are never stored. Masked loads here made GCC 12 keep the
// accumulators in memory, storing each on every k step.
// The k loop alone, on plain values (GCC kept the accumulators in memory when the loop sat
// in the function that also builds the epilogue's arguments).
// Lanes [split, 32) as a bit mask (0 < split < 32): B's lanes from the next output row.
inline uint32_t next_lanes(int split) {
  return ~((uint32_t(1) << split) - 1);
}

// CROSS: lanes ≥ split of B from the next output row (IndirectArgs): both rows' 32 elements
// loaded whole (x + next_row + off[k] + 31 lies within what the next row's own tiles read)
// and blended; merging masked loads made GCC keep the accumulators in memory here too (the
// 8-row tile's share of AlexNet conv1's perf samples 11 % → 21 %).
template <Kind K, int M, bool CROSS>
void indirect_sums(int64_t kc, const float* a, const float* x, const int64_t* off, float* t,
                   uint32_t next_lanes, int64_t next_row) {
  using Acc = typename SumsOf<K>::type;
  Acc acc[M][2] = {};
  for (int64_t k = 0; k < kc; ++k, a += MR) {
    const float* b = x + off[k];
    __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
    if constexpr (CROSS) {
      b0 = _mm512_mask_blend_ps(__mmask16(next_lanes), b0, _mm512_loadu_ps(b + next_row));
      b1 = _mm512_mask_blend_ps(__mmask16(next_lanes >> 16), b1, _mm512_loadu_ps(b + next_row + 16));
    }
    for (int i = 0; i < M; ++i) {
      if constexpr (K == Kind::f32) {
        const __m512 ai = _mm512_set1_ps(a[i]);
        acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
      } else {
        const __m512i ai = _mm512_castps_si512(_mm512_set1_ps(a[i]));  // a pair or quad of weights
        if constexpr (K == Kind::bf16) {
          acc[i][0] = dpbf16(acc[i][0], ai, _mm512_castps_si512(b0));
          acc[i][1] = dpbf16(acc[i][1], ai, _mm512_castps_si512(b1));
        } else {  // pixels u8, weights s8
          acc[i][0] = dpbusd(acc[i][0], _mm512_castps_si512(b0), ai);
          acc[i][1] = dpbusd(acc[i][1], _mm512_castps_si512(b1), ai);
        }
      }
    }
  }
  LB_STORE_SUMS(acc, t, M);
}

// The epilogue's arguments of an indirect tile of M rows.
template <int M>
UkArgs indirect_epilogue(const IndirectArgs& ia) {
  UkArgs u;
  u.c = ia.c;
  u.ldc = ia.ldc;
  u.out_bf16 = ia.out_bf16;
  u.ldo = ia.ldc;
  u.m = M;
  u.n = ia.n;
  u.load_c = ia.load_c;
  u.last = ia.last;
  u.scale = ia.scale;
  u.bias_row = ia.bias_row;
  u.relu = ia.relu;
  prefetch_c<M>(u);
  return u;
}

template <Kind K, int M>
void indirect_tile(const IndirectArgs& ia) {
  const UkArgs u = indirect_epilogue<M>(ia);
  alignas(64) float t[M * NR];
  if (ia.split < NR)
    indirect_sums<K, M, true>(ia.kc, ia.a, ia.x, ia.off, t, next_lanes(ia.split), ia.next_row);
  else
    indirect_sums<K, M, false>(ia.kc, ia.a, ia.x, ia.off, t, 0, 0);
  finish<M>(u, t);
}
template <Kind K>
struct Indirect {
  template <int M>
  struct Rows {
    static void run(const IndirectArgs& u) { indirect_tile<K, M>(u); }
  };
};

// The full 14-row indirect tile in assembly, as the packed one (GCC spills this one's
// accumulators too): per k step an offset from the table, two loads of B from the padded
// image, 14 broadcasts of A, 28 FMAs (or dot products); a tile crossing into the next output
// row two masked loads more (lanes ≥ split from x + next_row).
#define LB_INDIRECT_TILE(ROWS)                                                                               \
  asm volatile(                                                                                              \
      "kmovw %k[lo], %%k1\n\t"                                                                               \
      "kmovw %k[hi], %%k2\n\t" LB_ZERO_ACCS                                                                  \
      "test %[steps], %[steps]\n\t"                                                                          \
      "jz 2f\n\t"                                                                                            \
      "1:\n\t"                                                                                               \
      "mov (%[off]), %[tmp]\n\t"                                                                             \
      "vmovups (%[x], %[tmp], 4), %%zmm0\n\t"                                                                \
      "vmovups 64(%[x], %[tmp], 4), %%zmm1\n\t"                                                              \
      ".if %c[cross]\n\t"                                                                                    \
      "vmovups (%[x2], %[tmp], 4), %%zmm0 %{%%k1%}\n\t"                                                      \
      "vmovups 64(%[x2], %[tmp], 4), %%zmm1 %{%%k2%}\n\t"                                                    \
      ".endif\n\t" ROWS                                                                                      \
      "add $56, %[a]\n\t"                                                                                    \
      "add $8, %[off]\n\t"                                                                                   \
      "dec %[steps]\n\t"                                                                                     \
      "jnz 1b\n\t"                                                                                           \
      "2:\n\t" LB_STORE_T                                                                                    \
      : [a] "+r"(a), [off] "+r"(off), [steps] "+r"(steps), [tmp] "=&r"(tmp)                                  \
      : [x] "r"(ia.x), [x2] "r"(ia.x + ia.next_row), [t] "r"(t), [lo] "r"(lanes & 0xffff),                   \
        [hi] "r"(lanes >> 16), [cross] "i"(CROSS ? 1 : 0)                                                    \
      : "k1", "k2", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21",   \
        "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "memory",  \
        "cc")
template <Kind K, bool CROSS>
void indirect_full_tile(const IndirectArgs& ia) {
  const UkArgs u = indirect_epilogue<MR>(ia);
  alignas(64) float t[MR * NR];
  const float* a = ia.a;
  const int64_t* off = ia.off;
  int64_t steps = ia.kc, tmp = 0;
  const uint32_t lanes = CROSS ? next_lanes(ia.split) : 0;
  if constexpr (K == Kind::f32) {
    LB_INDIRECT_TILE(LB_14_ROWS(LB_ROW_FMA));
  } else if constexpr (K == Kind::bf16) {
    LB_INDIRECT_TILE(LB_14_ROWS(LB_ROW_BF16));
  } else {
    LB_INDIRECT_TILE(LB_14_ROWS(LB_ROW_VNNI_PIXELS));
    for (int i = 0; i < MR * NR; i += 16)  // s32 sums to f32, scaled in finish()
      _mm512_store_ps(t + i, _mm512_cvtepi32_ps(_mm512_load_si512(t + i)));
  }
  finish<MR>(u, t);
}
#undef LB_INDIRECT_TILE

// m (1..14) → the tile instantiated for it.
template <template <int> class T, class Args>
void dispatch(const Args& u) {
  switch (u.m) {
    case 1:
      return T<1>::run(u);
    case 2:
      return T<2>::run(u);
    case 3:
      return T<3>::run(u);
    case 4:
      return T<4>::run(u);
    case 5:
      return T<5>::run(u);
    case 6:
      return T<6>::run(u);
    case 7:
      return T<7>::run(u);
    case 8:
      return T<8>::run(u);
    case 9:
      return T<9>::run(u);
    case 10:
      return T<10>::run(u);
    case 11:
      return T<11>::run(u);
    case 12:
      return T<12>::run(u);
    case 13:
      return T<13>::run(u);
    default:
      return T<14>::run(u);  // the full tile, see full_tile()
  }
}
template <int M>
struct F32 {
  static void run(const UkArgs& u) { f32_tile<M>(u); }
};
template <int M>
struct Bf16 {
  static void run(const UkArgs& u) { dot_tile<Kind::bf16, M>(u); }
};
template <int M>
struct U8s8 {
  static void run(const UkArgs& u) { dot_tile<Kind::u8s8, M>(u); }
};

// One row of C across P column panels at once (P·32 columns, 2·P accumulators): per k step
// one broadcast of A and 2·P loads, one pair from each of P B panels (bstride bytes apart) —
// P streams of B in flight where the tile reads one (see ukernel.h's ukr_f32_avx512_row).
// f32 (FMA) or u8·s8 (vpdpbusd on 4-byte groups, s32 sums scaled in the epilogue): either
// way MR 4-byte elements of A and 128 bytes of each panel per step.
template <Kind K, int P>
void row_panels(const UkArgs& u, int64_t bstride) {
  static_assert(K != Kind::bf16, "bf16 has no row kernel");
  using Acc = typename SumsOf<K>::type;
  Acc acc[P][2] = {};
  const auto* a = static_cast<const uint32_t*>(u.a);
  const auto* b = static_cast<const char*>(u.b);
  const int64_t steps = K == Kind::f32 ? u.kc : u.kc / 4;
  for (int64_t k = 0; k < steps; ++k, a += MR, b += 2 * 64) {
    const __m512i ak = _mm512_set1_epi32(int(*a));
    for (int p = 0; p < P; ++p) {
      const char* bp = b + p * bstride;
      if constexpr (K == Kind::f32) {
        acc[p][0] = _mm512_fmadd_ps(_mm512_castsi512_ps(ak), _mm512_load_ps(bp), acc[p][0]);
        acc[p][1] = _mm512_fmadd_ps(_mm512_castsi512_ps(ak), _mm512_load_ps(bp + 64), acc[p][1]);
      } else {
        acc[p][0] = dpbusd(acc[p][0], ak, _mm512_load_si512(bp));
        acc[p][1] = dpbusd(acc[p][1], ak, _mm512_load_si512(bp + 64));
      }
    }
  }
  // The epilogue of a 1-row tile per panel (finish<1>: scale, partial sums, bias, ReLU,
  // f32 or bf16 stores), from the sums in t.
  alignas(64) float t[P * NR];
  LB_STORE_SUMS(acc, t, P);
  for (int p = 0; p < P && p * NR < u.n; ++p) {
    UkArgs panel = u;
    panel.c = u.c + p * NR;
    panel.n = u.n - p * NR;
    panel.bias_col = u.bias_col ? u.bias_col + p * NR : nullptr;
    panel.out_bf16 = u.out_bf16 ? u.out_bf16 + p * NR : nullptr;
    finish<1>(panel, t + p * NR);
  }
}

template <Kind K>
void row_kernel(const UkArgs& u, int64_t bstride) {
  static_assert(kRowPanelsAvx512 == 4, "the switch below covers 1 to 4 panels");
  switch ((u.n + NR - 1) / NR) {
    case 1:
      return row_panels<K, 1>(u, bstride);
    case 2:
      return row_panels<K, 2>(u, bstride);
    case 3:
      return row_panels<K, 3>(u, bstride);
    default:
      return row_panels<K, 4>(u, bstride);
  }
}

// r[j] ← column j of the 16×16 matrix whose rows were r[0..15]: 4×4 blocks within each
// 128-bit lane (unpack, shuffle), then the lanes across registers (two 128-bit shuffles).
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 4) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    t[i + 2] = _mm512_unpacklo_ps(r[i + 2], r[i + 3]);
    t[i + 3] = _mm512_unpackhi_ps(r[i + 2], r[i + 3]);
  }
  __m512 q[16];  // q[4i + c], lane L: column 4L + c of rows 4i..4i+3
  for (int i = 0; i < 16; i += 4) {
    q[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    q[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
    q[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    q[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512 w0 = _mm512_shuffle_f32x4(q[c], q[4 + c], 0x88);  // lanes 0, 2 of rows 0-7
    const __m512 w1 = _mm512_shuffle_f32x4(q[c], q[4 + c], 0xdd);  // lanes 1, 3
    const __m512 w2 = _mm512_shuffle_f32x4(q[8 + c], q[12 + c], 0x88);
    const __m512 w3 = _mm512_shuffle_f32x4(q[8 + c], q[12 + c], 0xdd);
    r[c] = _mm512_shuffle_f32x4(w0, w2, 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(w0, w2, 0xdd);
    r[4 + c] = _mm512_shuffle_f32x4(w1, w3, 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(w1, w3, 0xdd);
  }
}

}  // namespace

void transpose_f32_avx512(const float* s, int64_t lds, int64_t rows, int64_t k0, int64_t k1, float* d,
                          int64_t ldd) {
  for (int64_t kb = k0; kb < k1; kb += 16) {
    const int nk = int(std::min<int64_t>(16, k1 - kb));
    const __mmask16 kmask = masks(nk).lo;
    for (int64_t p0 = 0; p0 < rows; p0 += 16) {
      const int np = int(std::min<int64_t>(16, rows - p0));
      __m512 r[16];
      for (int i = 0; i < 16; ++i)
        r[i] = i < np ? _mm512_maskz_loadu_ps(kmask, s + (p0 + i) * lds + kb) : _mm512_setzero_ps();
      transpose16(r);
      const __mmask16 pmask = masks(np).lo;
      for (int j = 0; j < nk; ++j)
        _mm512_mask_storeu_ps(d + (kb + j) * ldd + p0, pmask, r[j]);
    }
  }
}

namespace {
// Columns [w, w + 16) of a row of iw floats, zero outside it (no address outside the row
// is formed).
inline __m512 row_part(const float* row, int64_t iw, int64_t w) {
  if (w >= 0 && w + 16 <= iw) return _mm512_loadu_ps(row + w);
  const int64_t lo = std::clamp<int64_t>(-w, 0, 16), hi = std::clamp<int64_t>(iw - w, lo, 16);
  if (hi == lo) return _mm512_setzero_ps();
  // Lanes [lo, hi) from the hi - lo floats at row + w + lo (an expanding load).
  return _mm512_maskz_expandloadu_ps(__mmask16(masks(int(hi)).lo & ~masks(int(lo)).lo), row + w + lo);
}
}  // namespace

void phase_split_avx512(const float* row, int64_t iw, int64_t pw, int sw, int64_t phase_w, float* dst,
                        int64_t phase_stride) {
  // kPick[sw / 4][p]: lanes i < 32 / sw pick element p + i·sw of two registers (32
  // elements); the lanes past them repeat the first ones, unused.
  static constexpr auto kPick = [] {
    std::array<std::array<std::array<int32_t, 16>, 4>, 2> t{};
    for (int s = 0; s < 2; ++s)
      for (int p = 0; p < 4; ++p)
        for (int i = 0; i < 16; ++i)
          t[size_t(s)][size_t(p)][size_t(i)] = (p + i * (s == 0 ? 2 : 4)) & 31;
    return t;
  }();
  __m512i idx[4];
  for (int p = 0; p < 4; ++p)
    idx[p] = _mm512_loadu_si512(kPick[size_t(sw / 4)][size_t(p)].data());
  for (int64_t j = 0; j < phase_w; j += 16) {
    const int64_t w0 = j * sw - pw;
    const __mmask16 keep = masks(int(std::min<int64_t>(16, phase_w - j))).lo;
    const __m512 v0 = row_part(row, iw, w0), v1 = row_part(row, iw, w0 + 16);
    if (sw == 2) {
      for (int p = 0; p < 2; ++p)
        _mm512_mask_storeu_ps(dst + p * phase_stride + j, keep, _mm512_permutex2var_ps(v0, idx[p], v1));
      continue;
    }
    const __m512 v2 = row_part(row, iw, w0 + 32), v3 = row_part(row, iw, w0 + 48);
    for (int p = 0; p < 4; ++p) {
      // 8 of phase p from v0:v1 and 8 from v2:v3, then their low halves side by side.
      const __m512 a = _mm512_permutex2var_ps(v0, idx[p], v1), b = _mm512_permutex2var_ps(v2, idx[p], v3);
      _mm512_mask_storeu_ps(dst + p * phase_stride + j, keep, _mm512_shuffle_f32x4(a, b, 0x44));
    }
  }
}

void ukr_f32_avx512_row(const UkArgs& u, int64_t bstride) {
  row_kernel<Kind::f32>(u, bstride);
}
void ukr_u8s8_avx512_row(const UkArgs& u, int64_t bstride) {
  row_kernel<Kind::u8s8>(u, bstride);
}

void ukr_f32_avx512(const UkArgs& u) {
  if (u.m == MR && u.n == NR && u.scale == 1.0f) return full_f32_tile_to_c(u);
  if (u.m == MR) return full_tile<Kind::f32>(u);
  dispatch<F32>(u);
}
void ukr_bf16_avx512(const UkArgs& u) {
  if (u.m == MR) return full_tile<Kind::bf16>(u);
  dispatch<Bf16>(u);
}
void ukr_u8s8_avx512(const UkArgs& u) {
  if (u.m == MR) return full_tile<Kind::u8s8>(u);
  dispatch<U8s8>(u);
}

namespace {
template <Kind K>
void indirect_any(const IndirectArgs& u) {
  if (u.m == MR) return u.split < NR ? indirect_full_tile<K, true>(u) : indirect_full_tile<K, false>(u);
  dispatch<Indirect<K>::template Rows>(u);
}

}  // namespace

namespace {
// The row tile's k loop (ukernel.h's IndirectRowArgs): CV vectors of 16 channels × W pixels
// (W even, ≤ 14), per k step one offset, CV aligned loads of A, W broadcasts (4 bytes: never a
// split cache line, nothing to merge) and CV·W FMAs. The sums, plus bias and ReLU, to
// t[v][pixel][16].
template <int CV, int W>
void row_sums(const IndirectRowArgs& u, float* t) {
  // Every j loop unrolled: rolled, GCC 12 turned the k loop inside out, the sums in memory.
  __m512 acc[CV][W];
#pragma GCC unroll 14
  for (int j = 0; j < W; ++j)
    for (int v = 0; v < CV; ++v)
      acc[v][j] = _mm512_setzero_ps();
  const float* a = u.a;
  const float* x = u.x;
  for (int64_t k = 0; k < u.kc; ++k, a += 16 * CV) {
    const float* b = x + u.off[k];
    __m512 av[CV];
    for (int v = 0; v < CV; ++v)
      av[v] = _mm512_load_ps(a + 16 * v);
#pragma GCC unroll 14
    for (int j = 0; j < W; ++j) {
      const __m512 bj = _mm512_set1_ps(b[j]);
      for (int v = 0; v < CV; ++v)
        acc[v][j] = _mm512_fmadd_ps(av[v], bj, acc[v][j]);
    }
  }
  for (int v = 0; v < CV; ++v) {
    const __m512 bias =
        u.bias_row ? _mm512_maskz_loadu_ps(masks(u.m - 16 * v).lo, u.bias_row + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 14
    for (int j = 0; j < W; ++j) {
      __m512 s = _mm512_add_ps(acc[v][j], bias);
      if (u.relu) s = _mm512_max_ps(s, _mm512_setzero_ps());
      _mm512_store_ps(t + (v * 16 + j) * 16, s);
    }
  }
}
template <int CV>
void row_sums_any(const IndirectRowArgs& u, float* t) {
  switch ((u.n + 1) / 2) {
    case 1:
      return row_sums<CV, 2>(u, t);
    case 2:
      return row_sums<CV, 4>(u, t);
    case 3:
      return row_sums<CV, 6>(u, t);
    case 4:
      return row_sums<CV, 8>(u, t);
    case 5:
      return row_sums<CV, 10>(u, t);
    case 6:
      return row_sums<CV, 12>(u, t);
    default:
      return row_sums<CV, kRowPixelsAvx512>(u, t);
  }
}
}  // namespace

void ukr_f32_indirect_row_avx512(const IndirectRowArgs& u) {
  alignas(64) float t[2 * 16 * 16];  // [vector][pixel][channel]
  if (u.m > 16)
    row_sums_any<2>(u, t);
  else
    row_sums_any<1>(u, t);
  // Each vector's pixels (≤ 14 of 16) transposed into its 16 channel rows.
  const __mmask16 pmask = masks(u.n).lo;
  for (int v = 0; v * 16 < u.m; ++v) {
    __m512 r[16];
    for (int j = 0; j < 16; ++j)
      r[j] = j < u.n ? _mm512_load_ps(t + (v * 16 + j) * 16) : _mm512_setzero_ps();
    transpose16(r);
    for (int i = 0; i < 16 && v * 16 + i < u.m; ++i)
      _mm512_mask_storeu_ps(u.c + (v * 16 + i) * u.ldc, pmask, r[i]);
  }
}

void ukr_f32_indirect_avx512(const IndirectArgs& u) {
  indirect_any<Kind::f32>(u);
}
void ukr_bf16_indirect_avx512(const IndirectArgs& u) {
  indirect_any<Kind::bf16>(u);
}
void ukr_u8s8_indirect_avx512(const IndirectArgs& u) {
  indirect_any<Kind::u8s8>(u);
}

}  // namespace lb::cpu
