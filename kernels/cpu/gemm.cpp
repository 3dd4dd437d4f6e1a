// The GEMM driver (loops, packing, threads) and the per-ISA table of micro-kernels and
// block sizes. What each loop keeps where is in gemm.h; the micro-kernels in ukernel_*.cpp.
#include "kernels/cpu/gemm.h"

#include <cpuid.h>
#include <emmintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <type_traits>

#include "kernels/common.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/ukernel.h"
#include "kernels/cpu/ukernel_amx.h"

namespace lb::cpu {

// One micro-kernel and its blocking: MR×NR tile, KG-deep dot products; KC deep slices
// (the B micro-panel KC×NR in L1, or streaming from L2 where that measured faster), MC rows
// of A per block (MC×KC in L2), NC columns of B per block packed per call (KC×NC in L3).
struct Spec {
  int mr, nr, kg;
  int ka;         // A panels' group, and what the depth is padded to: KG, or AMX's tile depth
  size_t ea, eb;  // bytes per element of A and B
  int64_t kc, mc, nc;
  void (*ukr)(const UkArgs&);
  // AMX: run on each thread before its first tile and after its last (tile configuration).
  void (*begin)() = nullptr;
  void (*end)() = nullptr;
  // Where set: a single row of C (m = 1) over up to row_panels B micro-panels in one call.
  void (*row)(const UkArgs&, int64_t bstride) = nullptr;
  int row_panels = 1;
  bool widen_a = false;  // A's u8 packed zero-extended to u16 (ea = 2): AVX2's int8 tile
  int prefetch = 0;      // AMX: UkArgs::prefetch
};

namespace {

constexpr Spec kSpecs[] = {
    // isa scalar: 8×16 portable C++; 16 KB B micro-panel
    {8, 16, 1, 1, 4, 4, 256, 128, 2048, ukr_f32_scalar},
    // avx2: 5×16, 16 KB B micro-panel, 145×256×4 = 145 KB A block
    {5, 16, 1, 1, 4, 4, 256, 145, 2048, ukr_f32_avx2, nullptr, nullptr, ukr_f32_avx2_row, kRowPanelsAvx2},
    // avx512: 14×32. KC = 1024: the B micro-panel (128 KB) and A micro-panel (56 KB) stream
    // from L2 (≈ 13 B per cycle needed of its ~64), and C is read and written once per 1024
    // of depth instead of once per 256 — measured 79 % → 85 % of peak on the 1024³ GEMM.
    // MC = 112: the A block (448 KB) and a B micro-panel share the 1 MB L2.
    {14, 32, 1, 1, 4, 4, 1024, 112, 1024, ukr_f32_avx512, nullptr, nullptr, ukr_f32_avx512_row,
     kRowPanelsAvx512},
};
// Low precision on AVX-512 keep the tile and the bytes of each block: KC counts elements.
// (clang-format would put each of kU8s8's fields on a line of its own.)
// clang-format off
constexpr Spec kBf16 = {14, 32, 2, 2, 2, 2, 2048, 112, 2048, ukr_bf16_avx512};
constexpr Spec kU8s8 = {14, 32, 4, 4, 1, 1, 4096, 112, 2048, ukr_u8s8_avx512, nullptr, nullptr,
                        ukr_u8s8_avx512_row, kRowPanelsAvx512};
// clang-format on
// AMX (ukernel_amx.h): 32×32 tiles, A in 32-row panels of tile rows (32 bf16 / 64 u8 deep),
// B in the same 32-column panels as AVX-512; KC, MC and the prefetch distance from an
// AmxBlocking (gemm.h). Its default, KC = 1024 bytes of depth (512 bf16 / 1024 u8): the B
// micro-panel (32 KB) stays in L1 across the row panels of an A block; MC = 256: the A
// block (256 KB) in L2, within the A buffer of an AVX-512 workspace (448 KB, checked in
// gemm_lowp); no software prefetch. On the 2-core Intel Xeon AMX VM (host-3c0555be,
// 2026-12-06) with the tile loads and epilogue of ukernel_amx.h, on the 1024³ GEMMs at 1
// thread: KC 2048 / 4096 bytes with MC 128 / 64 within that VM's ±15 % noise of the
// default; KC = 512 bytes 1.3-1.5× slower (the partial sums loaded and stored twice as
// often), prefetch=2 1.2-1.3× slower. Old and new tile code alternately, 2 runs each,
// fastest of each:
// bf16 GEMM 1024³ 1.25× / 1.27× faster at 1 / 2 threads (0.79-0.81× → 1.00-1.46× oneDNN),
// int8 1.38× / 1.43× (0.65-0.85× → 0.90-0.96×), 2048³ 1.20-1.28×, dense 64×4096→4096
// 1.08-1.12×, bf16 LSTM 512 batch 64 1.23-1.30×
// (results/cpu-xeon-amx-2core/2026-12-06_amx-tile-loads-epilogue).
constexpr Spec amx_spec(Elem e, AmxBlocking b, void (*ukr)(const UkArgs&), void (*begin)(), void (*end)()) {
  Spec s = e == Elem::bf16 ? Spec{32, 32, 2, 32, 2, 2, b.kc_bytes / 2, b.mc, 2048, ukr, begin, end}
                           : Spec{32, 32, 4, 64, 1, 1, b.kc_bytes, b.mc, 2048, ukr, begin, end};
  s.prefetch = int(b.prefetch);
  return s;
}
// int8 on AVX2 (ukernel_avx2.cpp): 4×16, A widened to u16 pairs as it is packed. KC = 1024
// elements: the B micro-panel (16 KB) in L1; MC = 100: the A block (200 KB) in L2.
// clang-format off
constexpr Spec kU8s8Avx2 = {4, 16, 2, 2, 2, 1, 1024, 100, 2048, ukr_u8s8_avx2, nullptr, nullptr, nullptr, 1,
                            true};
// clang-format on
const Spec& spec_of(Isa isa) {
  return kSpecs[int(isa)];
}
// A workspace's A buffer: an MC×KC block, or one row panel K deep up to K = 8192 (see
// one_slice in drive()).
int64_t a_block_floats(Isa isa) {
  const Spec& s = spec_of(isa);
  return std::max<int64_t>(s.mc * s.kc, s.mr * 8192);
}
Spec spec_of(Elem e, LowpPath path) {
  const bool bf16 = e == Elem::bf16;
  switch (path) {
    case LowpPath::amx:
      return bf16 ? amx_spec(e, amx_blocking(), ukr_bf16_amx, amx_configure, amx_release)
                  : amx_spec(e, amx_blocking(), ukr_u8s8_amx, amx_configure, amx_release);
    case LowpPath::amx_emulated:
      return bf16 ? amx_spec(e, amx_blocking(), ukr_bf16_amx_emulated, amx_configure_emulated,
                             amx_release_emulated)
                  : amx_spec(e, amx_blocking(), ukr_u8s8_amx_emulated, amx_configure_emulated,
                             amx_release_emulated);
    case LowpPath::avx2:
      if (!bf16) return kU8s8Avx2;
      break;  // lowp_path() never gives bf16 this path
    case LowpPath::avx512:
      break;
  }
  return bf16 ? kBf16 : kU8s8;
}

// d[k·R + i] = s[i·rs + k] for i < R, k < kc, with R fixed at compile time.
template <int R, class T>
void transpose_rows_fixed(const T* s, int64_t rs, int64_t kc, T* d) {
  for (int64_t k = 0; k < kc; ++k, d += R)
    for (int i = 0; i < R; ++i)
      d[i] = s[i * rs + k];
}
template <class T>
void transpose_rows(const T* s, int64_t rs, int64_t kc, int r, T* d) {
  switch (r) {
    case 8:
      return transpose_rows_fixed<8>(s, rs, kc, d);
    case 5:
      return transpose_rows_fixed<5>(s, rs, kc, d);
    case 14:
      return transpose_rows_fixed<14>(s, rs, kc, d);
    default:
      for (int64_t k = 0; k < kc; ++k)
        for (int i = 0; i < r; ++i)
          d[k * r + i] = s[i * rs + k];
  }
}

// d[k·r + i] = s[k·cs + i] for i < r, k < kc: a panel whose r rows are contiguous in the
// source (a convolution's pixels), one copy per k, of a size known to the compiler for the
// panel widths that meet it (AVX-512's 32 for pixels as B's columns and 14 as A's rows,
// AVX2's 16 and 5). On the AMD EPYC Zen 3 VM, AVX2, the element loop took 31 % of
// MobileNet's pw2 at 1 thread, the 16-wide copy 17 %: its pointwise layers 1.02-1.19x
// faster. On the AMD EPYC Zen 4 VM, AVX-512, the 32- and 14-wide copies: pw8's packing
// 8.1 % → 3.4 % of its samples, the pointwise layers 0.99-1.11x
// (results/cpu-zen4-2core/2026-12-02_panel-copies).
template <class T>
void copy_panel(const T* s, int64_t cs, int64_t kc, int r, T* d) {
  auto copy = [&]<int R>(std::integral_constant<int, R>) {
    for (int64_t k = 0; k < kc; ++k)
      std::memcpy(d + k * R, s + k * cs, R * sizeof(T));
  };
  switch (r) {
    case 32:
      return copy(std::integral_constant<int, 32>{});
    case 16:
      return copy(std::integral_constant<int, 16>{});
    case 14:
      return copy(std::integral_constant<int, 14>{});
    case 5:
      return copy(std::integral_constant<int, 5>{});
    default:
      for (int64_t k = 0; k < kc; ++k)
        std::memcpy(d + k * r, s + k * cs, size_t(r) * sizeof(T));
  }
}

// One group of one panel: d[i·kg + j] = s0[j·cs + i] for rows i < rows of the `have` (≤ kg)
// depth rows j at s0, s0 + cs, …, the missing ones zero (as D: T, or u8 widened to u16).
// u8 quads and bf16 pairs (a 4-byte word per row i) through interleave_rows (common.h);
// `after`: how many elements each depth row has past the panel's (a later panel's).
template <class T, class D>
void interleave_group(const T* s0, int64_t cs, int have, int rows, int kg, D* dst, int64_t after) {
  if (kg * sizeof(D) != 4) {  // AMX's tile rows (kg 32 bf16 / 64 u8)
    for (int j = 0; j < have; ++j)
      for (int i = 0; i < rows; ++i)
        dst[i * kg + j] = D(s0[j * cs + i]);
    return;
  }
  auto* d = reinterpret_cast<uint32_t*>(dst);
  if constexpr (std::is_same_v<T, float>) {  // f32 has no groups (kg 1): never here
    return;
  } else if constexpr (std::is_same_v<T, D>) {  // u8 quads, bf16 pairs
    const T* depth_rows[4] = {};
    for (int j = 0; j < have; ++j)
      depth_rows[j] = s0 + j * cs;
    interleave_rows(depth_rows, have, rows, d, after);
  } else {  // u8 pairs widened to u16
    for (int i = 0; i < rows; ++i)
      d[i] = uint32_t(s0[i]) | (have == 2 ? uint32_t(s0[cs + i]) << 16 : 0);
  }
}

// The panels of a block whose rows are contiguous across a panel (rs = 1) and whose depth
// rows are cs apart, in groups of kg: group by group, each group across all the block's
// panels, so that the kg depth rows are read front to back once (a convolution's column
// matrix, conv2d_lowp.cpp's A where it takes the GEMM; panel by panel instead, each group's
// rows read 14 elements at a time, the packing took 29 % of an int8 3×3 convolution's time
// on the AMD EPYC Zen 5 VM, 26 % so — before that layer moved to the indirect tile). Panels
// are kc·r elements apart; their padding is already zero.
template <class T, class D>
void interleave_panels(const T* s, int64_t cs, int64_t count, int64_t k_valid, int64_t kc, int r, int kg,
                       D* d) {
  const int64_t panels = ceil_div(count, r), groups = ceil_div(k_valid, int64_t(kg));
  for (int64_t w = 0; w < groups; ++w) {
    const int have = int(std::min<int64_t>(kg, k_valid - w * kg));
    int64_t first = 0;  // the first panel left to the loop below
    if constexpr (sizeof(T) == 1 && sizeof(D) == 2) {
      if (kg == 2 && r == 4 && have == 2) {
        // AVX2's int8 A (4-row panels of u8 pairs widened to u16): 16 pixels, four panels, a
        // step. (Panel by panel, a call per 4 pixels, AlexNet conv1's packing took 31 % of
        // its time on the Zen 5 VM under LB_CPU_ISA=avx2, the layer at 0.75× the speed it had
        // with its pixel rows gathered; this way 1.05× / 1.07× at 1 / 2 threads.)
        const T* s0 = s + w * kg * cs;
        const __m128i zero = _mm_setzero_si128();
        for (; first * 4 + 16 <= count; first += 4) {
          const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + first * 4));
          const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + cs + first * 4));
          const __m128i a0 = _mm_unpacklo_epi8(a, zero), a1 = _mm_unpackhi_epi8(a, zero);
          const __m128i b0 = _mm_unpacklo_epi8(b, zero), b1 = _mm_unpackhi_epi8(b, zero);
          const __m128i quarters[4] = {_mm_unpacklo_epi16(a0, b0), _mm_unpackhi_epi16(a0, b0),
                                       _mm_unpacklo_epi16(a1, b1), _mm_unpackhi_epi16(a1, b1)};
          for (int j = 0; j < 4; ++j)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + ((first + j) * kc + w * kg) * r), quarters[j]);
        }
      }
    }
    for (int64_t q = first; q < panels; ++q) {
      const int rows = int(std::min<int64_t>(r, count - q * r));
      interleave_group(s + w * kg * cs + q * r, cs, have, rows, kg, d + (q * kc + w * kg) * r,
                       count - q * r - rows);
    }
  }
}

// Packs rows/columns [i0, i0+count) × depth [k0, k0+kc) of a strided matrix of T into
// micro-panels of R (zero past count and past the matrix's depth k_total), as elements of
// D: T itself, or u8 zero-extended to u16 (AVX2's int8 A panels, ukernel_avx2.cpp).
template <class T, class D = T>
void pack_strided(const T* p, int64_t rs, int64_t cs, int64_t i0, int64_t count, int64_t k0, int64_t kc,
                  int64_t k_total, int r, int kg, D* dst) {
  constexpr bool kWiden = !std::is_same_v<T, D>;
  static_assert(!kWiden || (std::is_same_v<T, uint8_t> && std::is_same_v<D, uint16_t>));
  const int64_t panels = ceil_div(count, r);
  const int64_t k_valid = std::clamp<int64_t>(k_total - k0, 0, kc);
  if (rs == 1 && kg > 1) {
    // Rows contiguous across a panel, each depth row cs apart (a convolution's column
    // matrix): a group's kg depth rows side by side, group by group (interleave_panels).
    for (int64_t q = 0; q < panels; ++q)
      if (q * r + r > count || k_valid < kc)
        std::memset(static_cast<void*>(dst + q * kc * r), 0, size_t(kc) * r * sizeof(D));
    return interleave_panels(p + i0 + k0 * cs, cs, count, k_valid, kc, r, kg, dst);
  }
  for (int64_t q = 0; q < panels; ++q) {
    D* d = dst + q * kc * r;
    const int rows = int(std::min<int64_t>(r, count - q * r));
    if (rows < r || k_valid < kc) std::memset(static_cast<void*>(d), 0, size_t(kc) * r * sizeof(D));
    const T* s = p + (i0 + q * r) * rs + k0 * cs;
    auto element_by_element = [&] {  // any layout: the groups' element order
      for (int i = 0; i < rows; ++i)
        for (int64_t k = 0; k < k_valid; ++k)
          d[(k / kg) * r * kg + i * kg + k % kg] = s[i * rs + k * cs];
    };
    if constexpr (kWiden) {
      if (kg == 2 && cs == 1) {
        // Rows contiguous along k (x of dense, the pixel rows of a convolution): one 32-bit
        // pair per step, no division per element (the element loop below took twice the
        // tile's time on an int8 3×3 convolution with 64 output channels).
        auto* d32 = reinterpret_cast<uint32_t*>(d);
        const int64_t pairs = k_valid / 2;
        for (int i = 0; i < rows; ++i) {
          const T* row = s + i * rs;
          for (int64_t w = 0; w < pairs; ++w)
            d32[w * r + i] = uint32_t(row[2 * w]) | uint32_t(row[2 * w + 1]) << 16;
          if (k_valid % 2) d32[pairs * r + i] = row[2 * pairs];
        }
      } else {
        element_by_element();
      }
    } else if (kg == 1 && cs == 1 && rows == r) {
      // Rows contiguous along k (x of dense): a transpose, k outer so the stores are
      // contiguous; R streams of loads the prefetcher follows.
      transpose_rows(s, rs, k_valid, r, d);
    } else if (kg == 1 && cs == 1) {
      for (int i = 0; i < rows; ++i)
        for (int64_t k = 0; k < k_valid; ++k)
          d[k * r + i] = s[i * rs + k];
    } else if (kg == 1 && rs == 1 && rows == r) {
      copy_panel(s, cs, k_valid, r, d);  // columns contiguous along the panel: r elements per k
    } else if (kg == 1) {
      for (int64_t k = 0; k < k_valid; ++k)
        for (int i = 0; i < rows; ++i)
          d[k * r + i] = s[i * rs + k * cs];
    } else if (cs == 1 && kg * sizeof(T) == 4) {
      // bf16 pairs and u8 quads along contiguous rows: one 4-byte word per group.
      const int64_t words = k_valid / kg, tail = k_valid % kg;
      auto* d32 = reinterpret_cast<uint32_t*>(d);
      for (int i = 0; i < rows; ++i) {
        const T* row = s + i * rs;
        for (int64_t w = 0; w < words; ++w)
          std::memcpy(&d32[w * r + i], row + w * kg, 4);
        if (tail) std::memcpy(&d32[words * r + i], row + words * kg, size_t(tail) * sizeof(T));
      }
    } else if (cs == 1 && kg * sizeof(T) == 64) {
      // AMX tile rows (A panels): a row's kg elements of one step are one 64-byte copy.
      for (int i = 0; i < rows; ++i)
        for (int64_t k = 0; k < k_valid; k += kg)
          std::memcpy(d + (k / kg) * r * kg + i * kg, s + i * rs + k,
                      size_t(std::min<int64_t>(kg, k_valid - k)) * sizeof(T));
    } else {
      element_by_element();
    }
  }
}

// One side of a product as the driver sees it.
struct Side {
  const Packed* packed = nullptr;
  const void* p = nullptr;  // strided source (element type by the spec)
  int64_t rs = 0, cs = 0;
  const PackFn* pack = nullptr;
};

Side side_of(const Operand& o) {
  if (o.packed) return {o.packed, nullptr, 0, 0, nullptr};
  if (o.pack) return {nullptr, nullptr, 0, 0, o.pack};
  return {nullptr, o.strided.p, o.strided.rs, o.strided.cs, nullptr};
}

// The micro-panels of [i0, i0+count) × [k0, k0+kc) of one side, in groups of kg: in place
// when packed, else packed into buf. Returns the first panel and sets the stride between
// panels.
const std::byte* panels(const Side& side, int r, int kg, int64_t i0, int64_t count, int64_t k0, int64_t kc,
                        int64_t k_total, size_t elem, std::byte* buf, int64_t& stride, bool widen = false) {
  if (side.packed) {
    stride = side.packed->panel_stride_bytes();
    return side.packed->panel_bytes(i0 / r, k0);
  }
  stride = kc * r * int64_t(elem);
  if (side.pack) {
    (*side.pack)(i0, count, k0, kc, r, reinterpret_cast<float*>(buf));
  } else if (widen) {
    pack_strided(static_cast<const uint8_t*>(side.p), side.rs, side.cs, i0, count, k0, kc, k_total, r, kg,
                 reinterpret_cast<uint16_t*>(buf));
  } else if (elem == 4) {
    pack_strided(static_cast<const float*>(side.p), side.rs, side.cs, i0, count, k0, kc, k_total, r, kg,
                 reinterpret_cast<float*>(buf));
  } else if (elem == 2) {
    pack_strided(static_cast<const uint16_t*>(side.p), side.rs, side.cs, i0, count, k0, kc, k_total, r, kg,
                 reinterpret_cast<uint16_t*>(buf));
  } else {
    pack_strided(static_cast<const uint8_t*>(side.p), side.rs, side.cs, i0, count, k0, kc, k_total, r, kg,
                 reinterpret_cast<uint8_t*>(buf));
  }
  return buf;
}

struct Out {
  float* c;
  int64_t ldc;
  uint16_t* bf16;
  int64_t ldo;
  float scale;
};

// One thread's share: rows [rows.first, rows.last) (whole MR panels) × columns
// [cols.first, cols.last) (whole NR panels).
void drive(const Spec& s, Range rows, int64_t k, const Side& a, const Side& b, const Out& out,
           const Epilogue& ep, std::byte* abuf, size_t abytes, std::byte* bbuf, Range cols) {
  const int64_t kpad = round_up(k, s.ka);
  // A single row panel (small-batch dense, the LSTM's recurrence) does too little work per
  // B element for C's reloads between K slices to matter, while slicing K would read each B
  // panel in KC-deep pieces 32 KB apart: one slice, B read front to back.
  const bool one_slice =
      rows.last - rows.first <= s.mr && b.packed && (a.packed || s.mr * kpad * s.ea <= abytes);
  const int64_t kc_max = one_slice ? kpad : s.kc;
  UkArgs u;
  u.scale = out.scale;
  u.relu = ep.relu;
  u.ldc = out.ldc;
  u.ldo = out.ldo;
  u.prefetch = s.prefetch;
  if (s.begin) s.begin();
  for (int64_t jc = cols.first; jc < cols.last; jc += s.nc) {
    const int64_t nc = std::min(s.nc, cols.last - jc);
    for (int64_t pc = 0; pc < kpad; pc += kc_max) {
      const int64_t kc = std::min(kc_max, kpad - pc);
      int64_t bstride = 0, astride = 0;
      const std::byte* bblk = panels(b, s.nr, s.kg, jc, nc, pc, kc, k, s.eb, bbuf, bstride);
      u.kc = kc;
      u.load_c = pc > 0 || ep.accumulate;
      u.last = pc + kc >= kpad;
      u.stream = ep.stream && u.last && !u.load_c;
      for (int64_t ic = rows.first; ic < rows.last; ic += s.mc) {
        const int64_t mc = std::min(s.mc, rows.last - ic);
        const std::byte* ablk = panels(a, s.mr, s.ka, ic, mc, pc, kc, k, s.ea, abuf, astride, s.widen_a);
        // One row (a GEMV): several B panels per call where the ISA has a row kernel.
        const bool row = s.row && mc == 1;
        const int64_t step = row ? int64_t(s.nr) * s.row_panels : s.nr;
        for (int64_t jr = 0; jr < nc; jr += step) {
          u.b = bblk + (jr / s.nr) * bstride;
          u.n = int(std::min<int64_t>(step, nc - jr));
          u.bias_col = ep.bias_col ? ep.bias_col + jc + jr : nullptr;
          if (row) {
            u.a = ablk;
            u.m = 1;
            u.c = out.c + ic * out.ldc + jc + jr;
            u.out_bf16 = out.bf16 ? out.bf16 + ic * out.ldo + jc + jr : nullptr;  // f32 GEMMs have none
            u.bias_row = ep.bias_row ? ep.bias_row + ic : nullptr;
            s.row(u, bstride);
            continue;
          }
          for (int64_t ir = 0; ir < mc; ir += s.mr) {
            u.a = ablk + (ir / s.mr) * astride;
            u.m = int(std::min<int64_t>(s.mr, mc - ir));
            u.c = out.c ? out.c + (ic + ir) * out.ldc + jc + jr : nullptr;
            u.out_bf16 = out.bf16 ? out.bf16 + (ic + ir) * out.ldo + jc + jr : nullptr;
            u.bias_row = ep.bias_row ? ep.bias_row + ic + ir : nullptr;
            s.ukr(u);
          }
        }
      }
    }
  }
  if (s.end) s.end();
  if (ep.stream) _mm_sfence();  // the non-temporal stores, ordered before the caller reads C
}

void run_split(const Spec& s, int64_t m, int64_t n, int64_t k, const Side& a, const Side& b, const Out& out,
               const Epilogue& ep, const Workspace& ws, Pool* pool) {
  if (m <= 0 || n <= 0) return;
  // Threads split M when each gets a few row panels (each packs only its rows of A; B is
  // shared through L3), else N (each packs its own columns of B; A is packed by all). A B
  // packed per call (convolution pixels) would then be packed by every thread: N is split
  // instead when it gives each thread a few column panels.
  // Rows only where they share out about as evenly as columns: a thread's largest share of
  // whole panels, in C elements, at most 3 % above the column split's (dense 64 × 4096 on 2
  // AVX2 threads: 7 and 6 of its 5-row panels, 35 rows against 32; half the column panels
  // each instead). Splitting N has every thread pack the same A, a few % of the work where M
  // is that small. AVX-512's 14-row panels give 64 rows too few per thread for a row split
  // at all; its 1024³ GEMM splits rows either way (518 against 512). Predicted for dense
  // 64 × 4096 → 4096 at 2 threads: ≤ 1.09× faster on AVX2. Measured on the 2-core AMD EPYC
  // Zen 3 VM, old and new builds alternately, 7 runs, median of each case's fastest
  // repetition: 1.04× (64 × 1024 → 1024: 1.05×; controls already split one way, batch 16 and
  // 1024³, 0.96× and 1.03×): within that host's noise.
  auto largest_share = [](int64_t extent, int grain, int threads) {
    return std::min(extent, ceil_div(ceil_div(extent, int64_t(grain)), int64_t(threads)) * grain);
  };
  const int threads = pool ? pool->size() : 1;
  const bool even_rows =
      largest_share(m, s.mr, threads) * n * 100 <= largest_share(n, s.nr, threads) * m * 103;
  const bool by_rows = threads > 1 && m >= int64_t(threads) * 4 * s.mr && even_rows &&
                       (b.packed || n < int64_t(threads) * 4 * s.nr);
  auto body = [&](int tid, int) {  // the pool runs `threads` of them
    const Range rows = by_rows ? split(m, s.mr, tid, threads) : Range{0, m};
    const Range cols = by_rows ? Range{0, n} : split(n, s.nr, tid, threads);
    drive(s, rows, k, a, b, out, ep, reinterpret_cast<std::byte*>(ws.a(tid)), ws.a_bytes(),
          reinterpret_cast<std::byte*>(ws.b(tid)), cols);
  };
  if (pool)
    pool->run(body);
  else
    body(0, 1);
}

}  // namespace

std::string_view name(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
  }
  return "?";
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return true;
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }
  return false;
}

namespace {

// CPUID.(EAX=7, ECX=0):EDX bits 24, 22 and 25.
struct AmxCpuid {
  bool tile = false, bf16 = false, int8 = false;
};
AmxCpuid amx_cpuid() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return {};
  return {(d >> 24 & 1u) != 0, (d >> 22 & 1u) != 0, (d >> 25 & 1u) != 0};
}

// Linux hands a process the tile data state (XTILEDATA, 8 KB per thread's saved state)
// only on request, arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), Linux 5.16 on;
// without it the first tile instruction faults. Asked once per process, for all its
// threads: empty when granted, else the refusal's errno text.
const std::string& xtiledata_refusal() {
  static const std::string why = []() -> std::string {
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0) return {};
    const int err = errno;
    return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")";
  }();
  return why;
}

// $LB_CPU_ISA, validated: the ISA of the f32 micro-kernels and whether it named amx.
struct Forced {
  Isa isa;
  bool amx;
};
std::optional<Forced> forced_choice() {
  const char* env = std::getenv("LB_CPU_ISA");
  if (!env) return std::nullopt;
  if (std::string_view(env) == "amx") {
    for (Elem e : {Elem::bf16, Elem::u8s8})
      if (const std::string why = amx_reason(e); !why.empty()) throw Error("LB_CPU_ISA=amx: " + why);
    return Forced{Isa::avx512, true};  // AMX has no f32 products: f32 stays on AVX-512
  }
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (name(isa) != env) continue;
    if (!isa_supported(isa))
      throw Error("LB_CPU_ISA=" + std::string(env) + ": this CPU has no " + std::string(env));
    return Forced{isa, false};
  }
  throw Error("LB_CPU_ISA=" + std::string(env) + ": expected one of scalar avx2 avx512 amx");
}

}  // namespace

std::string amx_reason(Elem e) {
  if (e == Elem::f32) return "AMX has no f32 products";
  const AmxCpuid id = amx_cpuid();
  if (!id.tile) return "no AMX: CPUID lacks amx_tile";
  if (e == Elem::bf16 && !id.bf16) return "no AMX: CPUID lacks amx_bf16";
  if (e == Elem::u8s8 && !id.int8) return "no AMX: CPUID lacks amx_int8";
  if (!isa_supported(Isa::avx512) || !__builtin_cpu_supports("avx512bf16"))
    return "AMX's epilogue needs AVX-512 with AVX512_BF16, which this CPU lacks";
  if (const std::string& why = xtiledata_refusal(); !why.empty())
    return "Linux refused XTILEDATA permission: " + why;
  return {};
}

namespace {
std::atomic<int> lowp_path_override{-1};  // a LowpPath while a LowpPathOverride is alive
}  // namespace

LowpPathOverride::LowpPathOverride(LowpPath path) {
  lowp_path_override = int(path);
}
LowpPathOverride::~LowpPathOverride() {
  lowp_path_override = -1;
}

std::optional<AmxBlocking> forced_amx_blocking() {
  const char* env = std::getenv("LB_AMX_BLOCKING");
  if (!env) return std::nullopt;
  const std::string_view value = env;
  auto bad = [&](const std::string& why) {
    return Error("LB_AMX_BLOCKING=" + std::string(value) + ": " + why);
  };
  const std::string syntax = "expected kc_bytes=N, mc=N and/or prefetch=N, comma-separated";
  AmxBlocking b;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t end = std::min(value.find(',', start), value.size());
    const std::string_view item = value.substr(start, end - start);
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq), number = eq == item.npos ? "" : item.substr(eq + 1);
    if ((key != "kc_bytes" && key != "mc" && key != "prefetch") || number.empty() || number.size() > 6 ||
        number.find_first_not_of("0123456789") != number.npos)
      throw bad(syntax);
    (key == "mc" ? b.mc : key == "prefetch" ? b.prefetch : b.kc_bytes) = std::stoll(std::string(number));
    start = end + 1;
  }
  if (b.kc_bytes < 64 || b.kc_bytes > 8192 || b.kc_bytes % 64)
    throw bad("kc_bytes must be a multiple of 64 (a tile row) from 64 to 8192");
  if (b.mc < 32 || b.mc > 4096 || b.mc % 32)
    throw bad("mc must be a multiple of 32 (a C tile's rows) from 32 to 4096");
  if (b.prefetch > 16) throw bad("prefetch must be 0 (none) to 16 tile steps ahead");
  const int64_t room = a_block_floats(Isa::avx512) * int64_t(sizeof(float));
  if (b.mc * b.kc_bytes > room)
    throw bad("the A block, mc × kc_bytes = " + std::to_string(b.mc * b.kc_bytes) +
              " bytes, exceeds the workspace's A buffer (" + std::to_string(room) + ")");
  return b;
}

namespace {
// An AmxBlockingOverride's blocking while one is alive (kc_bytes 0: none).
std::atomic<int64_t> blocking_override_kc{0}, blocking_override_mc{0}, blocking_override_prefetch{0};
}  // namespace

AmxBlockingOverride::AmxBlockingOverride(AmxBlocking b) {
  blocking_override_mc = b.mc;
  blocking_override_prefetch = b.prefetch;
  blocking_override_kc = b.kc_bytes;
}
AmxBlockingOverride::~AmxBlockingOverride() {
  blocking_override_kc = 0;
}

AmxBlocking amx_blocking() {
  if (const int64_t kc = blocking_override_kc; kc > 0)
    return {kc, blocking_override_mc, blocking_override_prefetch};
  // An invalid $LB_AMX_BLOCKING throws here every time, but register_cpu() refused it first.
  static const AmxBlocking from_env = forced_amx_blocking().value_or(AmxBlocking{});
  return from_env;
}

std::string amx_blocking_context() {
  const std::optional<AmxBlocking> forced = forced_amx_blocking();
  const AmxBlocking b = forced.value_or(AmxBlocking{});
  return "kc_bytes=" + std::to_string(b.kc_bytes) + " (" + std::to_string(b.kc_bytes / 2) + " bf16 / " +
         std::to_string(b.kc_bytes) + " int8 deep), mc=" + std::to_string(b.mc) +
         ", prefetch=" + std::to_string(b.prefetch) + (forced ? ", LB_AMX_BLOCKING" : ", default");
}

LowpPath lowp_path(Elem e) {
  if (const int forced = lowp_path_override;
      forced >= 0 && e != Elem::f32 && !(LowpPath(forced) == LowpPath::avx2 && e == Elem::bf16))
    return LowpPath(forced);
  // Read once, as best_isa() is.
  static const bool amx[2] = {amx_reason(Elem::bf16).empty(), amx_reason(Elem::u8s8).empty()};
  static const bool forced_below_amx = [] {
    const std::optional<Forced> f = forced_choice();
    return f && !f->amx;
  }();
  // int8 without AVX-512 VNNI (or with a lesser ISA forced): AVX2's tile where there is AVX2.
  static const bool int8_on_avx2 =
      best_isa() == Isa::avx2 || (best_isa() == Isa::avx512 && !__builtin_cpu_supports("avx512vnni"));
  if (e == Elem::f32) return LowpPath::avx512;
  if (!forced_below_amx && amx[e == Elem::bf16 ? 0 : 1]) return LowpPath::amx;
  return e == Elem::u8s8 && int8_on_avx2 ? LowpPath::avx2 : LowpPath::avx512;
}

std::string_view name(LowpPath path) {
  switch (path) {
    case LowpPath::avx512:
      return "avx512";
    case LowpPath::amx:
      return "amx";
    case LowpPath::amx_emulated:
      return "amx (emulated)";
    case LowpPath::avx2:
      return "avx2";
  }
  return "?";
}

Tile lowp_tile(LowpPath path) {
  if (path == LowpPath::avx2) return {kU8s8Avx2.mr, kU8s8Avx2.nr};
  return path == LowpPath::avx512 ? f32_tile(Isa::avx512) : Tile{amx::kMR, amx::kNR};
}

std::string_view lowp_instruction(Elem e, LowpPath path) {
  const bool bf16 = e == Elem::bf16;
  switch (path) {
    case LowpPath::amx:
      return bf16 ? "tdpbf16ps" : "tdpbusd";
    case LowpPath::amx_emulated:
      return bf16 ? "tdpbf16ps (emulated)" : "tdpbusd (emulated)";
    case LowpPath::avx2:
      return "vpmaddwd";
    case LowpPath::avx512:
      break;
  }
  return bf16 ? "vdpbf16ps" : "vpdpbusd";
}

std::string elem_reason(Elem e) {
  const char* what = e == Elem::bf16 ? "bf16 needs AVX512_BF16 (vdpbf16ps)"
                                     : "int8 needs AVX512_VNNI (vpdpbusd) or AVX2 (vpmaddwd)";
  switch (e) {
    case Elem::f32:
      return {};
    case Elem::bf16:
    case Elem::u8s8:
      if (lowp_path(e) != LowpPath::avx512) return {};
      const bool avx512 = isa_supported(Isa::avx512);
      const bool cpu_has = e == Elem::bf16
                               ? avx512 && __builtin_cpu_supports("avx512bf16")
                               : (avx512 && __builtin_cpu_supports("avx512vnni")) || isa_supported(Isa::avx2);
      if (!cpu_has) return std::string(what) + ", which this CPU lacks";
      // The CPU has a micro-kernel for it, but not at the ISA forced: the dtype is left out
      // rather than run above it, as a machine without that ISA would.
      if (best_isa() != Isa::avx512)
        return std::string(what) + "; LB_CPU_ISA=" + std::string(name(best_isa())) + " forces a lesser ISA";
      return {};
  }
  return "unknown element kind";
}

bool elem_supported(Elem e) {
  return elem_reason(e).empty();
}

std::optional<Isa> forced_isa() {
  const std::optional<Forced> f = forced_choice();
  if (!f) return std::nullopt;
  return f->isa;
}

Isa best_isa() {
  // An invalid $LB_CPU_ISA throws here too (a static's initialiser that throws is tried
  // again next time), though register_cpu() has refused it before any kernel ran.
  static const Isa best = [] {
    if (const std::optional<Isa> forced = forced_isa()) return *forced;
    return isa_supported(Isa::avx512) ? Isa::avx512 : isa_supported(Isa::avx2) ? Isa::avx2 : Isa::scalar;
  }();
  return best;
}

std::string isa_context() {
  const std::optional<Forced> forced = forced_choice();
  if (!forced) return "none";
  if (forced->amx)
    return "amx (bf16 and int8 micro-kernels of dense, conv2d and lstm on AMX tiles; f32 micro-kernels of "
           "dense, conv2d, lstm and depthwise conv2d on avx512; not forced: dense.cpu.packed and "
           "dense.cpu.avx2, whose ISA is their id, onednn and eigen)";
  std::string out =
      std::string(name(forced->isa)) + " (f32 micro-kernels of dense, conv2d, lstm and depthwise conv2d";
  if (forced->isa == Isa::avx2)
    out += "; int8 on avx2 (vpmaddwd); bf16, AVX-512 or AMX only, is unsupported";
  else if (forced->isa != Isa::avx512)
    out += "; bf16 and int8, AVX-512, AMX or (int8) AVX2 only, are unsupported";
  else if (amx_cpuid().tile)
    out += "; bf16 and int8 on AVX-512, not AMX";
  return out + "; not forced: dense.cpu.packed and dense.cpu.avx2, whose ISA is their id, onednn and eigen)";
}

Tile f32_tile(Isa isa) {
  return {spec_of(isa).mr, spec_of(isa).nr};
}

namespace {
MicroKernel described(const Spec& s) {
  return {s.mr, s.nr, s.kg, s.ka, s.ea, s.eb, s.kc, s.ukr, s.begin, s.end};
}
}  // namespace

MicroKernel micro_kernel(Isa isa) {
  return described(spec_of(isa));
}
MicroKernel micro_kernel(Elem e, LowpPath path) {
  return described(spec_of(e, path));
}

Packed::Packed(Isa isa, bool side_rows, int64_t n, int64_t k, const Strided& src) {
  const Spec& s = spec_of(isa);
  r_ = side_rows ? s.mr : s.nr;
  n_ = n;
  k_ = k;
  elem_bytes_ = 4;
  panels_ = ceil_div(n, r_);
  data_ = AlignedBuffer<std::byte>(bytes());
  pack_strided(src.p, src.rs, src.cs, 0, n, 0, k, k, int(r_), 1, reinterpret_cast<float*>(data_.data()));
}

struct PackedAccess {
  static Packed make(Elem e, LowpPath path, int64_t n, int64_t k, const void* w, int64_t rs, int64_t cs) {
    const Spec s = spec_of(e, path);
    Packed p;
    p.r_ = s.nr;
    p.n_ = n;
    p.k_ = round_up(k, s.ka);
    p.elem_bytes_ = s.eb;
    p.panels_ = ceil_div(n, p.r_);
    p.data_ = AlignedBuffer<std::byte>(p.bytes());
    if (e == Elem::bf16)
      pack_strided(static_cast<const uint16_t*>(w), rs, cs, 0, n, 0, p.k_, k, s.nr, s.kg,
                   reinterpret_cast<uint16_t*>(p.data_.data()));
    else
      pack_strided(static_cast<const uint8_t*>(w), rs, cs, 0, n, 0, p.k_, k, s.nr, s.kg,
                   reinterpret_cast<uint8_t*>(p.data_.data()));
    return p;
  }
};

const std::byte* Packed::panel_bytes(int64_t q, int64_t k0) const {
  return data_.data() + (q * k_ + k0) * r_ * int64_t(elem_bytes_);
}

Packed pack_lowp_b(Elem e, LowpPath path, int64_t n, int64_t k, const void* w, int64_t rs, int64_t cs) {
  return PackedAccess::make(e, path, n, k, w, rs, cs);
}
Packed pack_lowp_b(Elem e, int64_t n, int64_t k, const void* w, int64_t rs, int64_t cs) {
  return pack_lowp_b(e, lowp_path(e), n, k, w, rs, cs);
}

Workspace::Workspace(Isa isa, int threads, bool pack_a, bool pack_b, int64_t max_k) {
  // The largest block any spec of this ISA packs, in bytes (low precision keeps f32's bytes).
  const Spec& s = spec_of(isa);
  a_floats_ = pack_a ? a_block_floats(isa) : 0;
  b_floats_ = pack_b ? s.nc * (max_k >= s.kc ? s.kc : round_up(std::max<int64_t>(max_k, 1), s.kg)) : 0;
  const int64_t per_thread = a_floats_ + b_floats_;
  if (per_thread) data_ = AlignedBuffer<float>(size_t(std::max(threads, 1) * per_thread));
}

float* Workspace::a(int tid) const {
  return a_floats_ ? data_.data() + tid * (a_floats_ + b_floats_) : nullptr;
}
float* Workspace::b(int tid) const {
  return b_floats_ ? data_.data() + tid * (a_floats_ + b_floats_) + a_floats_ : nullptr;
}

void gemm_f32(Isa isa, int64_t m, int64_t n, int64_t k, const Operand& a, const Operand& b, float* c,
              int64_t ldc, const Epilogue& ep, const Workspace& ws, Pool* pool) {
  run_split(spec_of(isa), m, n, k, side_of(a), side_of(b), Out{c, ldc, nullptr, 0, 1.0f}, ep, ws, pool);
}

void gemm_f32_serial(Isa isa, int64_t m, int64_t n, int64_t k, const Operand& a, const Operand& b, float* c,
                     int64_t ldc, const Epilogue& ep, const Workspace& ws, int tid) {
  if (m <= 0 || n <= 0) return;
  drive(spec_of(isa), Range{0, m}, k, side_of(a), side_of(b), Out{c, ldc, nullptr, 0, 1.0f}, ep,
        reinterpret_cast<std::byte*>(ws.a(tid)), ws.a_bytes(), reinterpret_cast<std::byte*>(ws.b(tid)),
        Range{0, n});
}

bool lowp_needs_partials(Elem e, LowpPath path, int64_t k) {
  const Spec s = spec_of(e, path);
  return round_up(k, s.ka) > s.kc;
}
bool lowp_needs_partials(Elem e, int64_t k) {
  return lowp_needs_partials(e, lowp_path(e), k);
}

void gemm_lowp(Elem e, LowpPath path, int64_t m, int64_t n, int64_t k, const LowpStrided& a, const Packed& b,
               float scale, float* c, int64_t ldc, uint16_t* out_bf16, int64_t ldo, const Epilogue& ep,
               const Workspace& ws, Pool* pool) {
  if (ep.accumulate) throw Error("gemm_lowp: accumulate is not supported");
  const Spec s = spec_of(e, path);
  if (b.k() != round_up(k, s.ka)) throw Error("gemm_lowp: B was packed for another path or depth");
  if (size_t(s.mc * s.kc) * s.ea > ws.a_bytes())
    throw Error("gemm_lowp: the workspace's A block is too small");
  const Side sa{nullptr, a.p, a.rs, a.cs, nullptr};
  const Side sb{&b, nullptr, 0, 0, nullptr};
  run_split(s, m, n, k, sa, sb, Out{c, ldc, out_bf16, ldo, scale}, ep, ws, pool);
}
void gemm_lowp(Elem e, LowpPath path, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
               const Packed& b, float scale, float* c, int64_t ldc, uint16_t* out_bf16, int64_t ldo,
               const Epilogue& ep, const Workspace& ws, Pool* pool) {
  gemm_lowp(e, path, m, n, k, LowpStrided{a, lda, 1}, b, scale, c, ldc, out_bf16, ldo, ep, ws, pool);
}
void gemm_lowp(Elem e, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, const Packed& b,
               float scale, float* c, int64_t ldc, uint16_t* out_bf16, int64_t ldo, const Epilogue& ep,
               const Workspace& ws, Pool* pool) {
  gemm_lowp(e, lowp_path(e), m, n, k, a, lda, b, scale, c, ldc, out_bf16, ldo, ep, ws, pool);
}

}  // namespace lb::cpu
