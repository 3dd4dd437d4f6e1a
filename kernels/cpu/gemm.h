// The cpu backend's GEMM, on which dense, conv2d and lstm are built (flame/blis style):
// blocking loops + packing + one small register-blocked micro-kernel per ISA.
//
//   C (M×N, row stride ldc) = A (M×K) · B (K×N)   [+ C] [+ bias] [then max(., 0)]
//
// Operands are given to the driver as micro-panels: A as panels of MR rows, each stored
// k-major ([k][MR]), B as panels of NR columns ([k][NR]); MR×NR is the micro-kernel's tile
// (table in gemm.cpp per ISA). Either operand may be
//   - packed once (weights, in a kernel's prepare()): a Packed, addressed in place, or
//   - packed per call by the driver, block by block, from a strided matrix or by a caller's
//     own packer (conv2d: implicit im2col, no column matrix in memory).
// Loops (one thread's share: a range of N's panels; jc → pc → ic → jr → ir):
//   NC columns of B (L3) → KC deep slice → MC rows of A (L2) → an NR panel of B (L1)
//   → the micro-kernel over MR rows.
// The epilogue (C accumulation for K slices after the first, bias, ReLU) runs in the
// micro-kernel on the last K slice, while the tile is in registers. A block of one row (a
// GEMV) goes to the ISA's row kernel where it has one (AVX2: four B panels per call, four
// streams of the weights in flight).
// Threads split M by whole row panels when each gets several (each packs only its rows of
// A), else N by whole column panels; no barrier per block either way.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/buffer.h"
#include "kernels/cpu/pool.h"

namespace lb::cpu {

struct UkArgs;  // kernels/cpu/ukernel.h

// The instruction sets a micro-kernel exists for, best last.
enum class Isa { scalar, avx2, avx512 };
std::string_view name(Isa isa);
// The ISA the micro-kernels use: the one $LB_CPU_ISA names, else the best this CPU runs
// (CPUID). Progression steps whose id names an ISA (dense.cpu.packed, dense.cpu.avx2)
// keep theirs.
Isa best_isa();
bool isa_supported(Isa isa);
// The ISA $LB_CPU_ISA forces, nullopt when it is unset; throws lb::Error naming the value
// when it is not scalar, avx2, avx512 or amx, or this CPU lacks that ISA. register_cpu()
// asks first, so a bad value stops a command before anything runs. amx (bf16 and int8 on
// AMX tiles, see lowp_path()) gives avx512, the ISA of the f32 micro-kernels under it.
std::optional<Isa> forced_isa();
// The results context's account of $LB_CPU_ISA: "none", or the ISA forced, what it
// applies to and what it cannot force (layerbench_cpu_isa_forced).
std::string isa_context();
// The micro-kernel tile of an ISA for f32.
struct Tile {
  int mr, nr;
};
Tile f32_tile(Isa isa);

// An element (i, k) of a strided matrix is p[i*rs + k*cs].
struct Strided {
  const float* p = nullptr;
  int64_t rs = 0, cs = 0;
};

// A matrix packed once into the micro-panels of one side (A: rows, B: columns):
// panel q holds rows/columns [q·R, q·R+R) (zero-padded past the edge) for all K, k-major.
class Packed {
 public:
  Packed() = default;
  // side_rows: true packs an M×K (A-side) matrix in MR-row panels, false a K×N (B-side)
  // matrix in NR-column panels. `m` is given as rows (A) / columns (B): element
  // (i, k) of the matrix to pack is src.p[i*src.rs + k*src.cs] in both cases.
  Packed(Isa isa, bool side_rows, int64_t n, int64_t k, const Strided& src);
  // Raw access for the driver: bytes of one element and the padded depth.
  const std::byte* panel_bytes(int64_t q, int64_t k0) const;
  int64_t panel_stride_bytes() const { return k_ * r_ * int64_t(elem_bytes_); }
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  size_t bytes() const { return size_t(panels_) * k_ * r_ * elem_bytes_; }

 private:
  int64_t n_ = 0, k_ = 0, r_ = 0, panels_ = 0;  // k_: depth padded to the element's group
  size_t elem_bytes_ = 4;
  AlignedBuffer<std::byte> data_;
  friend struct PackedAccess;
};

// Packs the micro-panels of rows/columns [i0, i0+count) for k in [k0, k0+kc) into dst:
// panel p at dst + p*kc*R, element (i0 + p*R + r, k0 + k) at [k*R + r]; rows past `count`
// in the last panel must be written as zeros (B side) — A-side rows past `count` are
// never read.
// A reference: the packer must outlive the GEMM call (name the lambda, then point at it).
using PackFn = FunctionRef<void(int64_t i0, int64_t count, int64_t k0, int64_t kc, int r, float* dst)>;

// One operand: exactly one of packed / strided / pack is set.
struct Operand {
  const Packed* packed = nullptr;
  Strided strided;
  const PackFn* pack = nullptr;
};

struct Epilogue {
  const float* bias_row = nullptr;  // bias[i] added to row i of C (conv: per K channel)
  const float* bias_col = nullptr;  // bias[j] added to column j of C (dense: per output)
  bool relu = false;
  bool accumulate = false;  // C += A·B instead of C = A·B
  // C is far larger than the caches: where the driver writes it once (K in one slice), full
  // tiles go straight to memory (non-temporal stores; AVX2 and AVX-512 f32), no read for
  // ownership.
  bool stream = false;
};

// Packing buffers for gemm_f32: one A block and one B block per thread, allocated once
// (a kernel holds one from prepare() on and reports bytes() as its scratch).
class Workspace {
 public:
  Workspace() = default;
  // pack_a / pack_b: whether the driver will pack that side per call (a side that is
  // always given as a Packed needs no buffer); max_k: the deepest K it will be used for
  // (a shallower K needs a smaller B block).
  Workspace(Isa isa, int threads, bool pack_a = true, bool pack_b = true, int64_t max_k = INT64_MAX);
  float* a(int tid) const;
  float* b(int tid) const;
  size_t bytes() const { return data_.bytes(); }
  size_t a_bytes() const { return size_t(a_floats_) * sizeof(float); }

 private:
  int64_t a_floats_ = 0, b_floats_ = 0;
  AlignedBuffer<float> data_;
};

// C = A·B with the epilogue, on all of `pool`'s threads (nullptr: the caller alone); `ws`
// must have been made for at least that many threads. The ISA must be the one the Packed
// operands and the workspace were made for.
void gemm_f32(Isa isa, int64_t m, int64_t n, int64_t k, const Operand& a, const Operand& b, float* c,
              int64_t ldc, const Epilogue& ep, const Workspace& ws, Pool* pool);

// The same on the calling thread only, as thread `tid`'s share of the work is done: for
// callers that split work across the pool themselves (conv2d: one image per thread).
void gemm_f32_serial(Isa isa, int64_t m, int64_t n, int64_t k, const Operand& a, const Operand& b, float* c,
                     int64_t ldc, const Epilogue& ep, const Workspace& ws, int tid);

// Low precision (AVX-512 or AMX; int8 also AVX2): bf16 × bf16 with f32 accumulation
// (vdpbf16ps, tdpbf16ps) and u8 × s8 with s32 accumulation (vpdpbusd, tdpbusd, vpmaddwd). The element kind of
// a packed operand.
enum class Elem { f32, bf16, u8s8 };

// The code a low-precision GEMM runs on: AVX-512's 14×32 register tiles, AMX's 32×32 tiles
// (ukernel_amx.h), or those AMX tiles emulated in portable C++ from the instructions'
// documented semantics — for tests of the tile path on any host; lowp_path() never picks it.
// AVX2 has int8 only (4×16 tiles of vpmaddwd on widened operands, ukernel_avx2.cpp), where
// AVX-512 VNNI is absent or LB_CPU_ISA=avx2 forces it.
enum class LowpPath { avx512, amx, amx_emulated, avx2 };
std::string_view name(LowpPath path);  // "avx512", "amx", "amx (emulated)", "avx2"
// Empty when AMX runs an element kind here: CPUID has amx_tile and amx_bf16 / amx_int8,
// the epilogue's AVX-512 (F, BW, VL, DQ, BF16) is there, and Linux granted this process
// the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA, asked once); else
// why not ("no AMX: CPUID lacks amx_tile", "Linux refused XTILEDATA permission: ...").
std::string amx_reason(Elem e);
// The path this process's low-precision GEMMs take: amx where amx_reason() is empty and
// $LB_CPU_ISA is unset or amx, else avx512 (LB_CPU_ISA=avx512 keeps AMX hosts on it) —
// for int8, avx2 where the ISA chosen is AVX2 or an AVX-512 without VNNI.
LowpPath lowp_path(Elem e);
// For tests: while one is alive, lowp_path() answers `path` for both element kinds (avx2:
// int8 only), so that
// dense.cpu.default runs on the emulated tiles against the reference on any host (the LSTM
// cell of bf16 still needs AVX-512). One at a time; not for use while kernels run.
class LowpPathOverride {
 public:
  explicit LowpPathOverride(LowpPath path);
  ~LowpPathOverride();
  LowpPathOverride(const LowpPathOverride&) = delete;
  LowpPathOverride& operator=(const LowpPathOverride&) = delete;
};
// Empty when the micro-kernel of an element kind runs: this CPU has AMX for it (above) or
// the AVX-512 instructions (avx512_bf16 / avx512_vnni), and $LB_CPU_ISA does not force an
// ISA below AVX-512; else the reason, as a kernel's supports() gives it.
std::string elem_reason(Elem e);
bool elem_supported(Elem e);
// The C tile of a low-precision path (AVX-512 keeps f32's 14×32; AMX 32×32; AVX2 4×16).
Tile lowp_tile(LowpPath path);
// "vdpbf16ps", "tdpbf16ps (emulated)", ...: the instruction a path multiplies with.
std::string_view lowp_instruction(Elem e, LowpPath path);

// The AMX GEMM's blocking (gemm.cpp's table has the reasons for the default): KC, the depth
// of one K slice as bytes of a row of A (512 bf16 or 1024 int8 elements by default), MC,
// the rows of one A block, and how many tile steps ahead the micro-kernel prefetches its A
// and B micro-panels into L1 (ukernel_amx.h; 0, the default: none, the hardware's
// prefetchers alone). $LB_AMX_BLOCKING ("kc_bytes=512,mc=128,prefetch=2", any keys)
// replaces it for a whole process, so that on an AMX host blockings are compared by
// measurement, one run of the benchmark each (the context records which ran:
// layerbench_amx_blocking). It applies to the emulated tiles too, where tests check any
// (prefetching, a hint, is nothing there).
struct AmxBlocking {
  int64_t kc_bytes = 1024;
  int64_t mc = 256;
  int64_t prefetch = 0;
};
// $LB_AMX_BLOCKING checked: kc_bytes a multiple of 64 (a tile row) up to 8192, mc a
// multiple of 32 (a C tile's rows) up to 4096, the A block, mc × kc_bytes, within an
// AVX-512 workspace's A buffer (which every low-precision caller packs into), prefetch 0 to
// 16; nullopt where unset; else throws lb::Error naming the value. register_cpu() asks
// before anything runs.
std::optional<AmxBlocking> forced_amx_blocking();
// What the AMX paths use now: a test's override, else $LB_AMX_BLOCKING, else the default.
AmxBlocking amx_blocking();
// The results context's account: "kc_bytes=1024 (512 bf16 / 1024 int8 deep), mc=256,
// prefetch=0, default" (or "..., LB_AMX_BLOCKING").
std::string amx_blocking_context();
// For tests: while one is alive, amx_blocking() answers `b`. One at a time; not while
// kernels run (a kernel's prepare() sizes its buffers for the blocking of the moment).
class AmxBlockingOverride {
 public:
  explicit AmxBlockingOverride(AmxBlocking b);
  ~AmxBlockingOverride();
  AmxBlockingOverride(const AmxBlockingOverride&) = delete;
  AmxBlockingOverride& operator=(const AmxBlockingOverride&) = delete;
};

// A micro-kernel as the driver calls it (its entry in gemm.cpp's table), for code that
// times or tests one alone (bench/ukernel): MR×NR tile; A panels k-major in groups of ka
// (KG, or AMX's tile depth: 32 bf16 / 64 u8), B panels in groups of kg (ukernel.h); bytes
// per element of A and B; the default K slice (elements); begin / end, where set, run on
// a thread before its first call and after its last (AMX's tile configuration).
struct MicroKernel {
  int mr = 0, nr = 0, kg = 1, ka = 1;
  size_t ea = 4, eb = 4;
  int64_t kc = 0;
  void (*ukr)(const UkArgs&) = nullptr;
  void (*begin)() = nullptr;
  void (*end)() = nullptr;
};
MicroKernel micro_kernel(Isa isa);                // f32
MicroKernel micro_kernel(Elem e, LowpPath path);  // bf16 / u8s8 on that path

// A weight matrix packed for a low-precision GEMM as the B operand: element (j, k) of
// W (N×K, bf16 or s8 storage) is w[j*rs + k*cs]. The same 32-column panels serve AVX-512
// and AMX; AMX pads the depth to its tile's (32 bf16 / 64 u8), AVX2 has 16-column panels
// of s8 pairs: a Packed is for one path.
Packed pack_lowp_b(Elem e, int64_t n, int64_t k, const void* w, int64_t rs, int64_t cs);
Packed pack_lowp_b(Elem e, LowpPath path, int64_t n, int64_t k, const void* w, int64_t rs, int64_t cs);

// A low-precision A operand (bf16 or u8 storage): element (i, k) at p[i·rs + k·cs].
struct LowpStrided {
  const void* p = nullptr;
  int64_t rs = 0, cs = 1;
};

// C = scale · A·B + epilogue, A row-major M×K (bf16 or u8 storage, row stride lda), B from
// pack_lowp_b. bf16: the result is written as bf16 to out_bf16 (row stride ldo) and `c` is
// an f32 M×N scratch for partial sums (needed only when K is deeper than one slice,
// lowp_needs_partials()) — or, with out_bf16 null, the result is f32 in c; u8s8: the
// result is f32 in c. ep.accumulate is not supported. The path is lowp_path(e), or the one
// given, which b must have been packed for; ws is an AVX-512 workspace (Isa::avx512).
void gemm_lowp(Elem e, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, const Packed& b,
               float scale, float* c, int64_t ldc, uint16_t* out_bf16, int64_t ldo, const Epilogue& ep,
               const Workspace& ws, Pool* pool);
void gemm_lowp(Elem e, LowpPath path, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
               const Packed& b, float scale, float* c, int64_t ldc, uint16_t* out_bf16, int64_t ldo,
               const Epilogue& ep, const Workspace& ws, Pool* pool);
// The same with A strided either way (a convolution's column matrix: pixels contiguous,
// rs = 1, each depth row cs apart).
void gemm_lowp(Elem e, LowpPath path, int64_t m, int64_t n, int64_t k, const LowpStrided& a, const Packed& b,
               float scale, float* c, int64_t ldc, uint16_t* out_bf16, int64_t ldo, const Epilogue& ep,
               const Workspace& ws, Pool* pool);
bool lowp_needs_partials(Elem e, int64_t k);
bool lowp_needs_partials(Elem e, LowpPath path, int64_t k);

}  // namespace lb::cpu
