// The GEMM driver (loops, packing, threads) and the per-ISA table of micro-kernels and
// block sizes. What each loop keeps where is in gemm.h; the micro-kernels in ukernel_*.cpp.
#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>

#include "kernels/common.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/ukernel.h"

namespace lb::cpu {

// One micro-kernel and its blocking: MR×NR tile, KG-deep dot products; KC deep slices
// (the B micro-panel KC×NR in L1, or streaming from L2 where that measured faster), MC rows
// of A per block (MC×KC in L2), NC columns of B per block packed per call (KC×NC in L3).
struct Spec {
  int mr, nr, kg;
  size_t ea, eb;  // bytes per element of A and B
  int64_t kc, mc, nc;
  void (*ukr)(const UkArgs&);
};

namespace {

constexpr Spec kSpecs[] = {
    // isa scalar: 8×16 portable C++; 16 KB B micro-panel
    {8, 16, 1, 4, 4, 256, 128, 2048, ukr_f32_scalar},
    // avx2: 5×16, 16 KB B micro-panel, 145×256×4 = 145 KB A block
    {5, 16, 1, 4, 4, 256, 145, 2048, ukr_f32_avx2},
    // avx512: 14×32. KC = 1024: the B micro-panel (128 KB) and A micro-panel (56 KB) stream
    // from L2 (≈ 13 B per cycle needed of its ~64), and C is read and written once per 1024
    // of depth instead of once per 256 — measured 79 % → 85 % of peak on the 1024³ GEMM.
    // MC = 112: the A block (448 KB) and a B micro-panel share the 1 MB L2.
    {14, 32, 1, 4, 4, 1024, 112, 1024, ukr_f32_avx512},
};
// Low precision on AVX-512 keep the tile and the bytes of each block: KC counts elements.
constexpr Spec kBf16 = {14, 32, 2, 2, 2, 2048, 112, 2048, ukr_bf16_avx512};
constexpr Spec kU8s8 = {14, 32, 4, 1, 1, 4096, 112, 2048, ukr_u8s8_avx512};

const Spec& spec_of(Isa isa) {
  return kSpecs[int(isa)];
}
const Spec& spec_of(Elem e) {
  return e == Elem::bf16 ? kBf16 : kU8s8;
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

// Packs rows/columns [i0, i0+count) × depth [k0, k0+kc) of a strided matrix of T into
// micro-panels of R (zero past count and past the matrix's depth k_total).
template <class T>
void pack_strided(const T* p, int64_t rs, int64_t cs, int64_t i0, int64_t count, int64_t k0, int64_t kc,
                  int64_t k_total, int r, int kg, T* dst) {
  const int64_t panels = ceil_div(count, r);
  const int64_t k_valid = std::clamp<int64_t>(k_total - k0, 0, kc);
  for (int64_t q = 0; q < panels; ++q) {
    T* d = dst + q * kc * r;
    const int rows = int(std::min<int64_t>(r, count - q * r));
    if (rows < r || k_valid < kc) std::memset(static_cast<void*>(d), 0, size_t(kc) * r * sizeof(T));
    const T* s = p + (i0 + q * r) * rs + k0 * cs;
    if (kg == 1 && cs == 1 && rows == r) {
      // Rows contiguous along k (x of dense): a transpose, k outer so the stores are
      // contiguous; R streams of loads the prefetcher follows.
      transpose_rows(s, rs, k_valid, r, d);
    } else if (kg == 1 && cs == 1) {
      for (int i = 0; i < rows; ++i)
        for (int64_t k = 0; k < k_valid; ++k)
          d[k * r + i] = s[i * rs + k];
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
    } else {
      for (int i = 0; i < rows; ++i)
        for (int64_t k = 0; k < k_valid; ++k)
          d[(k / kg) * r * kg + i * kg + k % kg] = s[i * rs + k * cs];
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

// The micro-panels of [i0, i0+count) × [k0, k0+kc) of one side: in place when packed,
// else packed into buf. Returns the first panel and sets the stride between panels.
const std::byte* panels(const Spec& s, const Side& side, int r, int64_t i0, int64_t count, int64_t k0,
                        int64_t kc, int64_t k_total, size_t elem, std::byte* buf, int64_t& stride) {
  if (side.packed) {
    stride = side.packed->panel_stride_bytes();
    return side.packed->panel_bytes(i0 / r, k0);
  }
  stride = kc * r * int64_t(elem);
  if (side.pack) {
    (*side.pack)(i0, count, k0, kc, r, reinterpret_cast<float*>(buf));
  } else if (elem == 4) {
    pack_strided(static_cast<const float*>(side.p), side.rs, side.cs, i0, count, k0, kc, k_total, r, s.kg,
                 reinterpret_cast<float*>(buf));
  } else if (elem == 2) {
    pack_strided(static_cast<const uint16_t*>(side.p), side.rs, side.cs, i0, count, k0, kc, k_total, r, s.kg,
                 reinterpret_cast<uint16_t*>(buf));
  } else {
    pack_strided(static_cast<const uint8_t*>(side.p), side.rs, side.cs, i0, count, k0, kc, k_total, r, s.kg,
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
  const int64_t kpad = round_up(k, s.kg);
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
  for (int64_t jc = cols.first; jc < cols.last; jc += s.nc) {
    const int64_t nc = std::min(s.nc, cols.last - jc);
    for (int64_t pc = 0; pc < kpad; pc += kc_max) {
      const int64_t kc = std::min(kc_max, kpad - pc);
      int64_t bstride = 0, astride = 0;
      const std::byte* bblk = panels(s, b, s.nr, jc, nc, pc, kc, k, s.eb, bbuf, bstride);
      u.kc = kc;
      u.load_c = pc > 0 || ep.accumulate;
      u.last = pc + kc >= kpad;
      for (int64_t ic = rows.first; ic < rows.last; ic += s.mc) {
        const int64_t mc = std::min(s.mc, rows.last - ic);
        const std::byte* ablk = panels(s, a, s.mr, ic, mc, pc, kc, k, s.ea, abuf, astride);
        for (int64_t jr = 0; jr < nc; jr += s.nr) {
          u.b = bblk + (jr / s.nr) * bstride;
          u.n = int(std::min<int64_t>(s.nr, nc - jr));
          u.bias_col = ep.bias_col ? ep.bias_col + jc + jr : nullptr;
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
}

void run_split(const Spec& s, int64_t m, int64_t n, int64_t k, const Side& a, const Side& b, const Out& out,
               const Epilogue& ep, const Workspace& ws, Pool* pool) {
  if (m <= 0 || n <= 0) return;
  // Threads split M when each gets a few row panels (each packs only its rows of A; B is
  // shared through L3), else N (each packs its own columns of B; A is packed by all).
  auto body = [&](int tid, int threads) {
    const bool by_rows = threads > 1 && m >= int64_t(threads) * 4 * s.mr;
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

std::string elem_reason(Elem e) {
  const char* what =
      e == Elem::bf16 ? "bf16 needs AVX512_BF16 (vdpbf16ps)" : "int8 needs AVX512_VNNI (vpdpbusd)";
  switch (e) {
    case Elem::f32:
      return {};
    case Elem::bf16:
    case Elem::u8s8:
      if (!isa_supported(Isa::avx512) ||
          !(e == Elem::bf16 ? __builtin_cpu_supports("avx512bf16") : __builtin_cpu_supports("avx512vnni")))
        return std::string(what) + ", which this CPU lacks";
      // Its micro-kernel is AVX-512 only: a lesser forced ISA leaves the dtype out
      // rather than running it at AVX-512 anyway, as a machine without AVX-512 would.
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
  const char* env = std::getenv("LB_CPU_ISA");
  if (!env) return std::nullopt;
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (name(isa) != env) continue;
    if (!isa_supported(isa))
      throw Error("LB_CPU_ISA=" + std::string(env) + ": this CPU has no " + std::string(env));
    return isa;
  }
  throw Error("LB_CPU_ISA=" + std::string(env) + ": expected one of scalar avx2 avx512");
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
  const std::optional<Isa> forced = forced_isa();
  if (!forced) return "none";
  std::string out =
      std::string(name(*forced)) + " (f32 micro-kernels of dense, conv2d, lstm and depthwise conv2d";
  if (*forced != Isa::avx512) out += "; bf16 and int8, AVX-512 only, are unsupported";
  return out + "; not forced: dense.cpu.packed and dense.cpu.avx2, whose ISA is their id, onednn and eigen)";
}

Tile f32_tile(Isa isa) {
  return {spec_of(isa).mr, spec_of(isa).nr};
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
  static Packed make(Elem e, int64_t n, int64_t k, const void* w, int64_t rs, int64_t cs) {
    const Spec& s = spec_of(e);
    Packed p;
    p.r_ = s.nr;
    p.n_ = n;
    p.k_ = round_up(k, s.kg);
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

Packed pack_lowp_b(Elem e, int64_t n, int64_t k, const void* w, int64_t rs, int64_t cs) {
  return PackedAccess::make(e, n, k, w, rs, cs);
}

Workspace::Workspace(Isa isa, int threads, bool pack_a, bool pack_b, int64_t max_k) {
  // The largest block any spec of this ISA packs, in bytes (low precision keeps f32's bytes).
  const Spec& s = spec_of(isa);
  // A: an MC×KC block, or one row panel K deep up to K = 8192 (see one_slice in drive()).
  a_floats_ = pack_a ? std::max<int64_t>(s.mc * s.kc, s.mr * 8192) : 0;
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

bool lowp_needs_partials(Elem e, int64_t k) {
  return round_up(k, spec_of(e).kg) > spec_of(e).kc;
}

void gemm_lowp(Elem e, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, const Packed& b,
               float scale, float* c, int64_t ldc, uint16_t* out_bf16, int64_t ldo, const Epilogue& ep,
               const Workspace& ws, Pool* pool) {
  if (ep.accumulate) throw Error("gemm_lowp: accumulate is not supported");
  const Side sa{nullptr, a, lda, 1, nullptr};
  const Side sb{&b, nullptr, 0, 0, nullptr};
  run_split(spec_of(e), m, n, k, sa, sb, Out{c, ldc, out_bf16, ldo, scale}, ep, ws, pool);
}

}  // namespace lb::cpu
