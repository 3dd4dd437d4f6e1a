// AMX micro-kernels: bf16 × bf16 (tdpbf16ps, f32 sums) and u8 × s8 (tdpbusd, s32 sums) on a
// 32×32 C tile held in four tile registers, written once (tile_kernel below) over a policy
// of tile operations: the instructions themselves (ukernel_amx.cpp, compiled with -mamx-*
// and AVX-512 for the epilogue) or a portable emulation of their documented semantics
// (ukernel_amx_emulated.cpp, baseline flags), with which the tests run the whole tile path
// of the GEMM — packing, tile shapes, edges, K slices, epilogue — on any x86-64 host.
//
// Tile registers (palette 1, loaded once per thread per GEMM call, all eight 16 rows × 64 B):
//   tmm0 tmm1   C rows 0-15,  columns 0-15 | 16-31   (16×16 f32 or s32 each)
//   tmm2 tmm3   C rows 16-31, columns 0-15 | 16-31
//   tmm4 tmm5   A rows 0-15 | 16-31, one step deep: 16 rows × 64 B (32 bf16 / 64 u8)
//   tmm6 tmm7   B columns 0-15 | 16-31, one step deep: 16 rows, each a group of KG (2 bf16 /
//               4 u8) for 16 columns — the VNNI layout
// Per step (D = 32 bf16 / 64 u8 deep): 4 tile loads (4 KiB) and 4 tile products; each A tile
// and each B tile feeds two products. Tiles of at most 16 valid rows (columns) skip tmm5
// (tmm7) and the products that need them. Tile registers are not renamed, so a load waits
// for the products that read its register: each operand of the next step is loaded as soon
// as this step's products that read it are issued (A rows 0-15 after the second product, B
// columns 0-15 after the third, the others after the fourth), one or two products before
// it is needed. A, read once per call, is loaded with tileloaddt1 (kept out of L1), so that
// the B micro-panel, read by every call of an A block, stays there.
//
// Operands (depth zero-padded to a multiple of D in both):
//   A: panels of 32 rows packed by the driver per block (gemm.cpp), k-major in steps of D:
//      element (r, k) at [(k/D)·32·D + r·D + k%D]; a step is 2 KiB, tmm4 its first KiB and
//      tmm5 the second, rows 64 B apart.
//   B: the 32-column panels of pack_lowp_b (ukernel.h's grouping, KG = 2 / 4): a group row
//      of the panel is 32 columns × KG = 128 B, so a step is 16 group rows (2 KiB); tmm6
//      reads them from byte 0 and tmm7 from byte 64, rows 128 B apart — B needs no packing
//      of its own.
// C: the tiles start from zero, or on later K slices from the partial sums, which stay in c
// in the accumulators' own type (f32; s32 for u8·s8, over the f32 result until the last
// slice); a full tile loads and stores them straight from c, an edge tile through a 32×32
// buffer. On the last slice the tiles go to the thread's PendingEpilogue buffer, and the
// epilogue (policy's finish: s32 → f32, scale, bias, ReLU, f32 or bf16 store) writes the
// valid m × n during the next call, 8 rows after each of its first steps' products, or at
// the tiles' release (amx_release) for a thread's last tile.
//
// Prediction (Sapphire Rapids, per core): tdpbf16ps is 16×16×32 = 8192 multiply-adds,
// tdpbusd 16×16×64 = 16384, each issued once per 16 cycles: 1024 bf16 FLOP/cycle and 2048
// int8 ops/cycle, 16× and 32× AVX-512's f32 (2 FMA × 16 lanes × 2). A step's 4 products
// take 64 cycles against 4 KiB of tile loads (1 KiB each, 64 B/cycle): from L1 (128 B/cycle)
// the loads hide under the products, so the tile alone can run near the tile unit's peak;
// the B micro-panel (32 KiB: KC = 512 bf16 / 1024 u8 deep × 32 columns) stays in L1 across
// the row panels of an A block and the A micro-panel (32 KiB) streams from L2 at 32 B/cycle.
// Per tile and K slice, 1024 cycles of products against 4 tile loads and 4 stores of the
// partial sums, or on the last slice 4 stores and a 32×32 AVX-512 pass (estimated ~150
// cycles); with the packing of A (one copy of x per call) a large GEMM should reach
// ≈ 80-85 % of the tile peak; small batches stay memory-bound on W as on AVX-512.
// Measured (lb_ukernel_bench, `l2` mode: B in L1, A streamed from a 256-row block, the last
// slice with its epilogue; the 2-core Intel Xeon AMX VM host-3c0555be, family 6 model 207,
// 2026-12-06, three alternating runs of each build, % of the measured one-thread tile peak)
// against the design before (each step's loads just before its products, A by tileloadd,
// the epilogue at the end of each call re-reading u's fields per row), at KC = 256 / 512 /
// 1024 / 2048 bytes: bf16 30-33 → 45, 40-43 → 55-60, 45-48 → 76-77, 55-56 → 64-66 %; int8
// 31-32 → 33-34, 42 → 51-58, 46-47 → 68-71, 56-57 → 61-62 %. Of the gain at the default
// 1024 bytes, tileloaddt1 alone gave ~20 points (A no longer evicts B from L1); the
// epilogue's loops made a call ~15 % / ~25 % shorter at 1024 / 512 bytes, deferring the
// epilogue 5-15 % more. The whole GEMMs: gemm.cpp.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cpu/ukernel.h"

namespace lb::cpu {

// The instructions: need amx_tile + amx_bf16 / amx_int8, AVX-512 (F, BW, BF16) for the
// epilogue, and Linux's permission for XTILEDATA (gemm.cpp asks for it before any use).
void ukr_bf16_amx(const UkArgs& u);
void ukr_u8s8_amx(const UkArgs& u);
void amx_configure();  // ldtilecfg: palette 1, eight tiles of 16 rows × 64 B
void amx_release();    // tilerelease: the tiles back to their initial state
// The same on emulated tiles (per thread), any host.
void ukr_bf16_amx_emulated(const UkArgs& u);
void ukr_u8s8_amx_emulated(const UkArgs& u);
void amx_configure_emulated();
void amx_release_emulated();

namespace amx {

constexpr int kMR = 32;                      // rows of a C tile: two tile registers
constexpr int kNR = 32;                      // columns: two tile registers
constexpr int kTileRows = 16;                // rows of one tile register
constexpr int kRowBytes = 64;                // bytes of one tile row
constexpr int64_t kStepBytes = 2 * 16 * 64;  // one step of an A or B panel
constexpr int64_t kBRowBytes = kNR * 4;      // a group row of a B panel: 32 columns × 4 B
static_assert(kStepBytes == 16 * kBRowBytes, "a B step is 16 group rows");

// A tile whose last K slice is done, its sums (f32 or s32) waiting in t for the epilogue,
// which the next tile's call runs a few rows per step between its products (the AVX-512
// epilogue then overlaps the tile unit's work instead of waiting for it to drain), and
// flush() runs for the last tile of a thread's share (amx_release). One per thread and
// per policy; u's pointers (c, out_bf16, biases) stay valid until the release.
struct PendingEpilogue {
  UkArgs u;
  // The waiting tile's epilogue (null: no tile waits) and the rows of u it has finished.
  void (*finish)(const UkArgs& u, const int32_t* t, int r0, int r1) = nullptr;
  int done = 0;
  alignas(64) int32_t t[kMR * kNR];
  // Rows [done, done + rows) of the waiting tile through its epilogue.
  void finish_rows(int rows) {
    if (!finish) return;
    const int r1 = done + rows < u.m ? done + rows : u.m;
    finish(u, t, done, r1);
    done = r1;
    if (done == u.m) finish = nullptr;
  }
};
// Rows of the waiting tile finished after each step's first products.
constexpr int kEpilogueRowsPerStep = 8;
// This thread's waiting tile for the tile operations Ops (one per policy: the hardware's
// and the emulated tiles' are apart).
template <class Ops>
PendingEpilogue& pending_epilogue() {
  thread_local PendingEpilogue p;
  return p;
}

// The micro-kernel, over a policy Ops of static members (tile numbers are template
// arguments, as the instructions take them as immediates):
//   load<T>(p, stride) load_once<T>(p, stride) (tileloaddt1) zero<T>() store<T>(p, stride)
//   dp<Int8, C, A, B>() (tdpbusd or tdpbf16ps), prefetch(p) (one line into L1, a hint),
//   and finish<Int8>(u, t, r0, r1) (rows [r0, r1) of the last slice's epilogue from the
//   32×32 buffer t).
// The tile operations must order themselves with the memory they read and write (the
// buffer t is written by plain stores and read by a tile load).
// Every function here is a template over Ops, which each file defines in an anonymous
// namespace: the instantiations are local to the file compiled for their ISA, so the
// linker never merges the AMX build's copy into the portable one.
template <class Ops, bool Int8, int RT, int CT>
void tile_kernel(const UkArgs& u) {
  static_assert(RT >= 1 && RT <= 2 && CT >= 1 && CT <= 2, "one or two tile rows and columns");
  constexpr int64_t kTStride = kNR * 4;  // bytes between rows of the buffer t
  alignas(64) int32_t t[kMR * kNR];      // f32 or s32 sums of an edge or last tile
  const bool full = u.m == kTileRows * RT && u.n == kTileRows * CT;
  const int64_t cstride = u.ldc * int64_t(sizeof(float));
  char* c = reinterpret_cast<char*>(u.c);
  if (!u.load_c) {
    Ops::template zero<0>();
    if constexpr (CT == 2) Ops::template zero<1>();
    if constexpr (RT == 2) Ops::template zero<2>();
    if constexpr (RT == 2 && CT == 2) Ops::template zero<3>();
  } else {
    // The partial sums of the earlier slices: an edge tile's valid part, zero-padded.
    const char* src = c;
    int64_t stride = cstride;
    if (!full) {
      std::memset(t, 0, sizeof t);
      for (int i = 0; i < u.m; ++i)
        std::memcpy(t + i * kNR, c + i * cstride, size_t(u.n) * 4);
      src = reinterpret_cast<const char*>(t);
      stride = kTStride;
    }
    Ops::template load<0>(src, stride);
    if constexpr (CT == 2) Ops::template load<1>(src + 64, stride);
    if constexpr (RT == 2) Ops::template load<2>(src + 16 * stride, stride);
    if constexpr (RT == 2 && CT == 2) Ops::template load<3>(src + 16 * stride + 64, stride);
  }
  const char* a = static_cast<const char*>(u.a);
  const char* b = static_cast<const char*>(u.b);
  const int64_t steps = u.kc / (Int8 ? 64 : 32);
  // Prefetching (u.prefetch steps ahead): each step's 2 KiB of A and of B, one line at a
  // time; past the slice's end it reaches the A block's next row panel (the next call's A)
  // and whatever follows the B micro-panel, harmless for a hint.
  const int64_t ahead = u.prefetch * kStepBytes;
  PendingEpilogue& pending = pending_epilogue<Ops>();
  // Operand tiles are loaded a step ahead, each as soon as the products of this step that
  // read it are issued (tile registers are not renamed: a load waits for the products
  // reading its register), so that a load has one or two products' time to land before
  // the product that needs it: A rows 0-15 after the second product, B columns 0-15 after
  // the third, the rest after the fourth.
  if (steps > 0) {
    Ops::template load_once<4>(a, kRowBytes);
    Ops::template load<6>(b, kBRowBytes);
    if constexpr (CT == 2) Ops::template load<7>(b + 64, kBRowBytes);
    if constexpr (RT == 2) Ops::template load_once<5>(a + kStepBytes / 2, kRowBytes);
  }
  for (int64_t s = 0; s < steps; ++s, a += kStepBytes, b += kStepBytes) {
    if (ahead)
#pragma GCC unroll 32  // 64 prefetches in a row, not a loop's 200 instructions per step
      for (int64_t line = 0; line < kStepBytes; line += 64) {
        Ops::prefetch(a + ahead + line);
        Ops::prefetch(b + ahead + line);
      }
    const bool more = s + 1 < steps;
    const char* an = a + kStepBytes;
    const char* bn = b + kStepBytes;
    Ops::template dp<Int8, 0, 4, 6>();
    if constexpr (CT == 2) Ops::template dp<Int8, 1, 4, 7>();
    pending.finish_rows(kEpilogueRowsPerStep);
    if (more) Ops::template load_once<4>(an, kRowBytes);
    if constexpr (RT == 2) {
      Ops::template dp<Int8, 2, 5, 6>();
      if (more) Ops::template load<6>(bn, kBRowBytes);
      if constexpr (CT == 2) Ops::template dp<Int8, 3, 5, 7>();
      if (more) Ops::template load_once<5>(an + kStepBytes / 2, kRowBytes);
    } else {
      if (more) Ops::template load<6>(bn, kBRowBytes);
    }
    if constexpr (CT == 2)
      if (more) Ops::template load<7>(bn + 64, kBRowBytes);
  }
  pending.finish_rows(kMR);  // what a short slice left of the waiting tile, before t is reused
  // Partial sums of a full tile go straight back to c; a last slice's into the pending
  // buffer, its epilogue left to the next call (or the release); an edge tile's through t.
  char* dst = reinterpret_cast<char*>(u.last ? pending.t : t);
  int64_t stride = kTStride;
  if (full && !u.last) dst = c, stride = cstride;
  Ops::template store<0>(dst, stride);
  if constexpr (CT == 2) Ops::template store<1>(dst + 64, stride);
  if constexpr (RT == 2) Ops::template store<2>(dst + 16 * stride, stride);
  if constexpr (RT == 2 && CT == 2) Ops::template store<3>(dst + 16 * stride + 64, stride);
  if (u.last) {
    pending.u = u;
    pending.done = 0;
    pending.finish = [](const UkArgs& w, const int32_t* sums, int r0, int r1) {
      Ops::template finish<Int8>(w, sums, r0, r1);
    };
    return;
  }
  if (!full)
    for (int i = 0; i < u.m; ++i)
      std::memcpy(c + i * cstride, t + i * kNR, size_t(u.n) * 4);
}

// The waiting tile's epilogue, all of it (before the tiles are released).
template <class Ops>
void flush() {
  pending_epilogue<Ops>().finish_rows(kMR);
}

// The tile for u's m and n: one or two tile rows and columns.
template <class Ops, bool Int8>
void run(const UkArgs& u) {
  if (u.m > kTileRows)
    return u.n > kTileRows ? tile_kernel<Ops, Int8, 2, 2>(u) : tile_kernel<Ops, Int8, 2, 1>(u);
  return u.n > kTileRows ? tile_kernel<Ops, Int8, 1, 2>(u) : tile_kernel<Ops, Int8, 1, 1>(u);
}

}  // namespace amx
}  // namespace lb::cpu
