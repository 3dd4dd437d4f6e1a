// AMX micro-kernels on the hardware's tiles: the tile operations of ukernel_amx.h's
// tile_kernel as the instructions, the last slice's epilogue on AVX-512. Design, tile
// allocation and the prediction (1024 bf16 FLOP / 2048 int8 ops per cycle per core on
// Sapphire Rapids) are in ukernel_amx.h.
// Compiled with -mamx-tile -mamx-bf16 -mamx-int8 and AVX-512 (F, BW, VL, DQ, BF16).
// The tile instructions are written as inline assembly rather than GCC 12's intrinsics,
// whose tile load declares no memory operand (a load from the buffer t could be scheduled
// before the plain stores that fill it) and whose ldtilecfg declares 8 of its 64 bytes.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <utility>

#include "kernels/cpu/ukernel_amx.h"

namespace lb::cpu {
namespace {

// Palette 1, tiles 0-7 all 16 rows of 64 bytes (the layout of ldtilecfg's 64-byte operand).
struct alignas(64) TileConfig {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
constexpr TileConfig kConfig = {1,
                                0,
                                {},
                                {64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0},
                                {16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0}};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");

// One instruction per tile number, the number being part of the encoding.
#define LB_TILE_CASES(M) M(0) else M(1) else M(2) else M(3) else M(4) else M(5) else M(6) else M(7)

struct HwOps {
  // tileloadd, or (Once) tileloaddt1: the same load with a hint that the data is not used
  // again soon (kept out of L1 where the hardware can).
  template <int T, bool Once = false>
  static void load(const void* p, int64_t stride) {
#define LB_LOAD(n)                                                                      \
  if constexpr (T == n) {                                                               \
    if constexpr (Once)                                                                 \
      asm volatile("tileloaddt1 (%0,%1,1), %%tmm" #n ::"r"(p), "r"(stride) : "memory"); \
    else                                                                                \
      asm volatile("tileloadd (%0,%1,1), %%tmm" #n ::"r"(p), "r"(stride) : "memory");   \
  }
    LB_TILE_CASES(LB_LOAD)
#undef LB_LOAD
  }
  template <int T>
  static void load_once(const void* p, int64_t stride) {
    load<T, true>(p, stride);
  }
  template <int T>
  static void store(void* p, int64_t stride) {
#define LB_STORE(n) \
  if constexpr (T == n) asm volatile("tilestored %%tmm" #n ", (%0,%1,1)" ::"r"(p), "r"(stride) : "memory");
    LB_TILE_CASES(LB_STORE)
#undef LB_STORE
  }
  template <int T>
  static void zero() {
#define LB_ZERO(n) \
  if constexpr (T == n) asm volatile("tilezero %%tmm" #n ::);
    LB_TILE_CASES(LB_ZERO)
#undef LB_ZERO
  }
  static void prefetch(const void* p) {
    _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0);
  }
  // C += A·B: tdpbusd (A unsigned, B signed bytes) or tdpbf16ps; AT&T order B, A, C.
  template <bool Int8, int C, int A, int B>
  static void dp() {
#define LB_DP(c, a, b)                                                 \
  if constexpr (C == c && A == a && B == b) {                          \
    if constexpr (Int8)                                                \
      asm volatile("tdpbusd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::);   \
    else                                                               \
      asm volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::); \
  }
    LB_DP(0, 4, 6)
    else LB_DP(1, 4, 7) else LB_DP(2, 5, 6) else LB_DP(3, 5, 7) else static_assert(C < 0, "unused");
#undef LB_DP
  }

  // The last slice: rows [r0, r1) of t (32×32 sums, f32 or s32) → scale, bias, ReLU → f32 c
  // or bf16 out, in the order and with the operations of the AVX-512 micro-kernels'
  // epilogue. One loop per combination of the epilogue's steps (the flags below), its
  // arguments in registers: a loop testing u's fields, which a store through c might
  // change as far as the compiler knows, ran ~30 instructions per 16 outputs, ~500 cycles
  // a 32×32 tile on the Intel AMX VM, as long as the tile's 16 products of a 512-byte slice.
  enum : int { kScale = 1, kRowBias = 2, kColBias = 4, kRelu = 8, kBf16Out = 16 };
  template <bool Int8, int F>
  static void finish_as(const UkArgs& u, const int32_t* t, int r0, int r1) {
    const auto bits = [](int k) {
      return k >= 16 ? __mmask16(0xffff) : __mmask16((1u << (k > 0 ? k : 0)) - 1);
    };
    const __mmask16 mask[2] = {bits(u.n), bits(u.n - 16)};
    const int halves = u.n > 16 ? 2 : 1;
    __m512 bias_col[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    if constexpr ((F & kColBias) != 0)
      for (int h = 0; h < halves; ++h)
        bias_col[h] = _mm512_maskz_loadu_ps(mask[h], u.bias_col + 16 * h);
    const __m512 scale = _mm512_set1_ps(u.scale);
    const float* bias_row = u.bias_row;
    float* c = u.c;
    uint16_t* out = u.out_bf16;
    const int64_t ldc = u.ldc, ldo = u.ldo;
    for (int i = r0; i < r1; ++i)
      for (int h = 0; h < halves; ++h) {
        const __m512i s = _mm512_load_si512(t + i * amx::kNR + 16 * h);
        __m512 v = Int8 ? _mm512_cvtepi32_ps(s) : _mm512_castsi512_ps(s);
        if constexpr ((F & kScale) != 0) v = _mm512_mul_ps(v, scale);
        if constexpr ((F & kRowBias) != 0) v = _mm512_add_ps(v, _mm512_set1_ps(bias_row[i]));
        if constexpr ((F & kColBias) != 0) v = _mm512_add_ps(v, bias_col[h]);
        if constexpr ((F & kRelu) != 0) v = _mm512_max_ps(v, _mm512_setzero_ps());
        if constexpr ((F & kBf16Out) != 0)
          _mm256_mask_storeu_epi16(out + i * ldo + 16 * h, mask[h], (__m256i)_mm512_cvtneps_pbh(v));
        else
          _mm512_mask_storeu_ps(c + i * ldc + 16 * h, mask[h], v);
      }
  }
  template <bool Int8, int... F>
  static void finish_with(int flags, const UkArgs& u, const int32_t* t, int r0, int r1,
                          std::integer_sequence<int, F...>) {
    using Fn = void (*)(const UkArgs&, const int32_t*, int, int);
    static constexpr Fn kLoops[] = {&finish_as<Int8, F>...};
    kLoops[flags](u, t, r0, r1);
  }
  template <bool Int8>
  static void finish(const UkArgs& u, const int32_t* t, int r0, int r1) {
    const int flags = (u.scale != 1.0f ? kScale : 0) | (u.bias_row ? kRowBias : 0) |
                      (u.bias_col ? kColBias : 0) | (u.relu ? kRelu : 0) | (u.out_bf16 ? kBf16Out : 0);
    finish_with<Int8>(flags, u, t, r0, r1, std::make_integer_sequence<int, 32>{});
  }
};

#undef LB_TILE_CASES

}  // namespace

void ukr_bf16_amx(const UkArgs& u) {
  amx::run<HwOps, false>(u);
}
void ukr_u8s8_amx(const UkArgs& u) {
  amx::run<HwOps, true>(u);
}
void amx_configure() {
  asm volatile("ldtilecfg %0" ::"m"(kConfig));
}
void amx_release() {
  amx::flush<HwOps>();
  asm volatile("tilerelease" ::);
}

}  // namespace lb::cpu
