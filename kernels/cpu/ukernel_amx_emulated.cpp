// AMX micro-kernels on emulated tiles: ukernel_amx.h's tile_kernel over a portable model
// of the tile state and instructions, compiled for the baseline ISA, so that the tests run
// the whole AMX path of the GEMM (packing, tile shapes, edges, K slices, epilogue) on any
// x86-64 host. The model follows the Intel SDM's description of each instruction:
//   ldtilecfg   palette 1 only; every tile's rows and bytes per row; all tiles zeroed
//   tileloadd   rows × colsb bytes from base + row·stride; the rest of the tile zeroed
//               (tileloaddt1 the same: its hint, keep the data out of L1, changes no state)
//   tilestored  rows × colsb bytes to base + row·stride
//   tilezero    the whole tile zeroed
//   tdpbf16ps   per C row m and column n, for each dword k of A's row in order:
//               c += A[m][2k]·B[k][2n], then c += A[m][2k+1]·B[k][2n+1], each a fused
//               multiply-add rounded to nearest even, bf16 inputs' denormals read as zero
//               and f32 denormal results flushed to zero (MXCSR neither read nor written)
//   tdpbusd     c += Σ_{i<4} A[m][4k+i] (u8) · B[k][4n+i] (s8), wrapping s32
//   shapes      C.rows = A.rows, C.colsb = B.colsb, A.colsb/4 = B.rows, else a fault (#UD)
//   tilerelease back to the initial state; a tile instruction there is a fault (#UD)
// A fault aborts with the instruction's name: the tests catch a missing configuration on a
// thread, a tile shape the kernel did not mean, or a read of C's partial sums too early.
// The epilogue is scalar, with the AVX-512 one's order of operations (so its results are
// those of the hardware path's, up to the products' order inside the tile unit).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/ukernel_amx.h"
#include "kernels/dtype.h"

namespace lb::cpu {
namespace {

// One thread's tiles (the hardware's state is per thread too).
struct TileState {
  bool configured = false;
  int rows[8] = {};
  int colsb[8] = {};
  alignas(64) unsigned char data[8][16][64] = {};
};
thread_local TileState tiles;

[[noreturn]] void fault(const char* what) {
  std::fprintf(stderr, "emulated AMX: %s\n", what);
  std::abort();
}

void check(bool ok, const char* what) {
  if (!ok) fault(what);
}

// bf16 → f32 with denormals read as zero; f32 denormals flushed to zero.
float daz_bf16(uint16_t b) {
  if ((b & 0x7f80u) == 0) b &= 0x8000u;
  return bf16_to_f32(b);
}
float ftz(float f) {
  return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f;
}

struct EmuOps {
  template <int T>
  static void load(const void* p, int64_t stride) {
    static_assert(T >= 0 && T < 8, "tmm0-tmm7");
    check(tiles.configured, "tileloadd without a tile configuration");
    std::memset(tiles.data[T], 0, sizeof tiles.data[T]);
    for (int r = 0; r < tiles.rows[T]; ++r)
      std::memcpy(tiles.data[T][r], static_cast<const char*>(p) + r * stride, size_t(tiles.colsb[T]));
  }
  template <int T>
  static void load_once(const void* p, int64_t stride) {  // tileloaddt1: a hint on top of tileloadd
    load<T>(p, stride);
  }
  template <int T>
  static void store(void* p, int64_t stride) {
    static_assert(T >= 0 && T < 8, "tmm0-tmm7");
    check(tiles.configured, "tilestored without a tile configuration");
    for (int r = 0; r < tiles.rows[T]; ++r)
      std::memcpy(static_cast<char*>(p) + r * stride, tiles.data[T][r], size_t(tiles.colsb[T]));
  }
  template <int T>
  static void zero() {
    static_assert(T >= 0 && T < 8, "tmm0-tmm7");
    check(tiles.configured, "tilezero without a tile configuration");
    std::memset(tiles.data[T], 0, sizeof tiles.data[T]);
  }
  static void prefetch(const void*) {}  // a hint: no state of the tiles or of memory
  template <bool Int8, int C, int A, int B>
  static void dp() {
    static_assert(C != A && C != B && A != B, "three distinct tiles");
    const char* name = Int8 ? "tdpbusd" : "tdpbf16ps";
    check(tiles.configured, name);
    check(tiles.rows[C] == tiles.rows[A] && tiles.colsb[C] == tiles.colsb[B] &&
              tiles.colsb[A] / 4 == tiles.rows[B],
          name);
    const int rows = tiles.rows[C], cols = tiles.colsb[C] / 4, depth = tiles.colsb[A] / 4;
    for (int m = 0; m < rows; ++m) {
      unsigned char* crow = tiles.data[C][m];
      const unsigned char* arow = tiles.data[A][m];
      for (int k = 0; k < depth; ++k) {
        const unsigned char* brow = tiles.data[B][k];
        for (int n = 0; n < cols; ++n) {
          if constexpr (Int8) {
            uint32_t acc;
            std::memcpy(&acc, crow + 4 * n, 4);
            for (int i = 0; i < 4; ++i)
              acc += uint32_t(int32_t(arow[4 * k + i]) * int32_t(static_cast<signed char>(brow[4 * n + i])));
            std::memcpy(crow + 4 * n, &acc, 4);
          } else {
            float acc;
            std::memcpy(&acc, crow + 4 * n, 4);
            for (int i = 0; i < 2; ++i) {
              uint16_t a, b;
              std::memcpy(&a, arow + 4 * k + 2 * i, 2);
              std::memcpy(&b, brow + 4 * n + 2 * i, 2);
              acc = ftz(std::fma(daz_bf16(a), daz_bf16(b), acc));
            }
            std::memcpy(crow + 4 * n, &acc, 4);
          }
        }
      }
    }
  }

  template <bool Int8>
  static void finish(const UkArgs& u, const int32_t* t, int r0, int r1) {
    for (int i = r0; i < r1; ++i)
      for (int j = 0; j < u.n; ++j) {
        const int32_t s = t[i * amx::kNR + j];
        float v;
        if constexpr (Int8)
          v = float(s);
        else
          std::memcpy(&v, &s, 4);
        if (u.scale != 1.0f) v *= u.scale;
        if (u.bias_row) v += u.bias_row[i];
        if (u.bias_col) v += u.bias_col[j];
        if (u.relu) v = v > 0.0f ? v : 0.0f;  // as max(v, 0): NaN and -0 give +0
        if (u.out_bf16)
          u.out_bf16[i * u.ldo + j] = f32_to_bf16(v);
        else
          u.c[i * u.ldc + j] = v;
      }
  }
};

}  // namespace

void ukr_bf16_amx_emulated(const UkArgs& u) {
  amx::run<EmuOps, false>(u);
}
void ukr_u8s8_amx_emulated(const UkArgs& u) {
  amx::run<EmuOps, true>(u);
}
void amx_configure_emulated() {
  // Palette 1 as ukernel_amx.cpp configures it: eight tiles of 16 rows × 64 bytes.
  tiles.configured = true;
  for (int i = 0; i < 8; ++i) {
    tiles.rows[i] = amx::kTileRows;
    tiles.colsb[i] = amx::kRowBytes;
  }
  std::memset(tiles.data, 0, sizeof tiles.data);
}
void amx_release_emulated() {
  amx::flush<EmuOps>();
  tiles = TileState();
}

}  // namespace lb::cpu
