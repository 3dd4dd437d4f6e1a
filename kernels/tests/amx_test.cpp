// The cpu backend's AMX path (ukernel_amx.h): on emulated tiles on any host — the whole
// low-precision GEMM (B packed as pack_lowp_b does, A packed per block into tile rows,
// 16×16 tile registers in a 32×32 tile, edge tiles, K slices with partial sums, threads,
// the epilogue: scale, bias per row and column, ReLU, f32 or bf16 output) bit for bit
// against a model of the instructions' arithmetic and within tolerance of a double
// product — and on the real tiles through dense.cpu.default and lstm.cpu.default against
// the reference where the host has AMX (skipped elsewhere, with the reason).
#include <cpuid.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/ukernel_amx.h"
#include "kernels/dtype.h"
#include "kernels/tests/conformance.h"

namespace lb {
namespace {

using cpu::Elem;
using cpu::LowpPath;

bool cpuid_has_amx_tile() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 24 & 1u);
}

// The tile unit's arithmetic as the emulation documents it, per output element and in
// the order of k (zero-padded to the tile depth): f32 fused multiply-adds with denormals
// read and written as zero (bf16), or exact s32 sums (u8·s8); then the epilogue.
float daz_bf16(uint16_t b) {
  if ((b & 0x7f80u) == 0) b &= 0x8000u;
  return bf16_to_f32(b);
}
float ftz(float f) {
  return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f;
}

struct Case {
  int64_t m, n, k;
  int threads;
  bool bias_row, bias_col, relu, bf16_out;
  float scale;  // u8·s8 only
};

struct Operands {
  std::vector<uint16_t> a16, w16;  // bf16: A M×K, W N×K
  std::vector<uint8_t> a8;         // u8 A
  std::vector<int8_t> w8;          // s8 W
  std::vector<float> bias_row, bias_col;
};

Operands make_operands(const Case& c, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  Operands o;
  o.a16.resize(size_t(c.m * c.k));
  o.w16.resize(size_t(c.n * c.k));
  o.a8.resize(size_t(c.m * c.k));
  o.w8.resize(size_t(c.n * c.k));
  for (auto& v : o.a16)
    v = f32_to_bf16(u(rng));
  for (auto& v : o.w16)
    v = f32_to_bf16(u(rng));
  for (auto& v : o.a8)
    v = uint8_t(byte(rng));
  for (auto& v : o.w8)
    v = int8_t(byte(rng) - 128);
  o.bias_row.resize(size_t(c.m));
  o.bias_col.resize(size_t(c.n));
  for (auto* v : {&o.bias_row, &o.bias_col})
    for (float& x : *v)
      x = u(rng);
  return o;
}

float epilogue(float v, const Case& c, const Operands& o, int64_t i, int64_t j, float scale) {
  if (scale != 1.0f) v *= scale;
  if (c.bias_row) v += o.bias_row[i];
  if (c.bias_col) v += o.bias_col[j];
  if (c.relu) v = v > 0.0f ? v : 0.0f;
  return v;
}

// What the tiles give for element (i, j), before any output rounding to bf16.
float model(Elem e, const Case& c, const Operands& o, int64_t i, int64_t j) {
  if (e == Elem::bf16) {
    float acc = 0.0f;
    for (int64_t p = 0; p < round_up(c.k, 32); ++p) {
      const uint16_t a = p < c.k ? o.a16[i * c.k + p] : 0, w = p < c.k ? o.w16[j * c.k + p] : 0;
      acc = ftz(std::fma(daz_bf16(a), daz_bf16(w), acc));
    }
    return epilogue(acc, c, o, i, j, 1.0f);
  }
  int64_t acc = 0;
  for (int64_t p = 0; p < c.k; ++p)
    acc += int64_t(o.a8[i * c.k + p]) * o.w8[j * c.k + p];
  return epilogue(float(int32_t(acc)), c, o, i, j, c.scale);
}

double exact(Elem e, const Case& c, const Operands& o, int64_t i, int64_t j) {
  double acc = 0.0;
  for (int64_t p = 0; p < c.k; ++p)
    acc += e == Elem::bf16 ? double(bf16_to_f32(o.a16[i * c.k + p])) * bf16_to_f32(o.w16[j * c.k + p])
                           : double(o.a8[i * c.k + p]) * o.w8[j * c.k + p];
  if (e == Elem::u8s8) acc *= c.scale;
  if (c.bias_row) acc += o.bias_row[i];
  if (c.bias_col) acc += o.bias_col[j];
  if (c.relu) acc = std::max(acc, 0.0);
  return acc;
}

// The GEMM on a path, as dense.cpu.default calls it: f32 results (bf16: bf16 results
// when c.bf16_out, with an f32 partial-sum buffer where K takes several slices).
std::vector<float> run(Elem e, LowpPath path, const Case& c, const Operands& o) {
  const bool bf16 = e == Elem::bf16;
  const void* a = bf16 ? static_cast<const void*>(o.a16.data()) : o.a8.data();
  const void* w = bf16 ? static_cast<const void*>(o.w16.data()) : o.w8.data();
  const cpu::Packed b = cpu::pack_lowp_b(e, path, c.n, c.k, w, c.k, 1);
  cpu::Pool pool(c.threads);
  const cpu::Workspace ws(cpu::Isa::avx512, c.threads, true, false);
  const cpu::Epilogue ep{c.bias_row ? o.bias_row.data() : nullptr, c.bias_col ? o.bias_col.data() : nullptr,
                         c.relu, false};
  std::vector<float> out(size_t(c.m * c.n), std::nanf(""));
  if (bf16 && c.bf16_out) {
    std::vector<float> partials(cpu::lowp_needs_partials(e, path, c.k) ? size_t(c.m * c.n) : 0,
                                std::nanf(""));
    std::vector<uint16_t> y(size_t(c.m * c.n), 0x7fc0);
    cpu::gemm_lowp(e, path, c.m, c.n, c.k, a, c.k, b, 1.0f, partials.empty() ? nullptr : partials.data(), c.n,
                   y.data(), c.n, ep, ws, &pool);
    for (size_t i = 0; i < y.size(); ++i)
      out[i] = bf16_to_f32(y[i]);
  } else {
    cpu::gemm_lowp(e, path, c.m, c.n, c.k, a, c.k, b, bf16 ? 1.0f : c.scale, out.data(), c.n, nullptr, 0, ep,
                   ws, &pool);
  }
  return out;
}

std::string describe(Elem e, const Case& c) {
  return std::string(e == Elem::bf16 ? "bf16" : "u8s8") + " " + std::to_string(c.m) + "x" +
         std::to_string(c.n) + "x" + std::to_string(c.k) + " threads=" + std::to_string(c.threads) +
         (c.bias_row ? " bias_row" : "") + (c.bias_col ? " bias_col" : "") + (c.relu ? " relu" : "") +
         (c.bf16_out ? " bf16_out" : "");
}

// Shapes: single elements; exact tile multiples (16, 32, 64 deep); every edge (m, n below,
// between and above 16 and 32; k off the 32 / 64 tile depth); several A blocks (MC = 256)
// and row panels split across threads; K deeper than a slice (KC = 512 bf16 / 1024 u8),
// with and without a single row panel (which takes K in one slice).
const Case kCases[] = {
    {1, 1, 1, 1, false, false, false, false, 1.0f},      {16, 16, 64, 1, false, true, false, false, 0.5f},
    {32, 32, 128, 1, true, true, true, false, 0.031f},   {17, 33, 31, 1, false, true, true, true, 0.007f},
    {33, 17, 65, 2, true, false, false, true, 1.0f},     {15, 47, 100, 1, true, true, false, true, 0.25f},
    {70, 40, 600, 2, false, true, true, false, 0.013f},  {300, 37, 70, 2, true, true, true, true, 0.002f},
    {5, 40, 1100, 1, false, true, false, true, 0.01f},   {64, 96, 2100, 2, true, true, true, true, 0.0007f},
    {40, 64, 1030, 1, false, false, false, false, 1.0f},
};

// Every case on the emulated tiles against the tile arithmetic's model, bit for bit (the
// first three differences of a case reported); `which` names the setting under test.
void expect_model_bits(std::mt19937& rng, const std::string& which) {
  for (Elem e : {Elem::bf16, Elem::u8s8})
    for (const Case& c : kCases) {
      if (e == Elem::u8s8 && c.bf16_out) continue;
      const Operands o = make_operands(c, rng);
      const std::vector<float> got = run(e, LowpPath::amx_emulated, c, o);
      int bad = 0;
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          float want = model(e, c, o, i, j);
          if (c.bf16_out && e == Elem::bf16) want = round_to(Storage::bf16, want);
          const float g = got[size_t(i * c.n + j)];
          if (std::memcmp(&g, &want, 4) != 0 && ++bad <= 3)
            ADD_FAILURE() << describe(e, c) << which << " at " << i << "," << j << ": " << g
                          << " != " << want;
        }
      EXPECT_EQ(bad, 0) << describe(e, c) << which;
    }
}

TEST(AmxEmulated, GemmMatchesTheTileArithmeticBitForBit) {
  std::mt19937 rng(11);
  expect_model_bits(rng, "");
}

// Other blockings ($LB_AMX_BLOCKING, for a sweep on an AMX host) give the same bits: K
// slices of one tile row (64 bytes) and of a row panel 2 KB deep, A blocks of one row panel
// and of 96 rows (three panels, so that a block ends inside a thread's share). Prefetching
// is a hint the emulated tiles ignore; here it shows only that asking for it changes nothing.
TEST(AmxEmulated, EveryBlockingGivesTheSameBits) {
  std::mt19937 rng(14);
  for (const cpu::AmxBlocking blocking :
       {cpu::AmxBlocking{64, 32, 0}, cpu::AmxBlocking{192, 96, 2}, cpu::AmxBlocking{2048, 64, 16}}) {
    const cpu::AmxBlockingOverride use(blocking);
    expect_model_bits(rng, " kc_bytes=" + std::to_string(blocking.kc_bytes) +
                               " mc=" + std::to_string(blocking.mc) +
                               " prefetch=" + std::to_string(blocking.prefetch));
  }
}

// $LB_AMX_BLOCKING is checked before use (register_cpu() asks first) and recorded.
TEST(AmxBlocking, EnvironmentIsValidatedAndRecorded) {
  const char* before = std::getenv("LB_AMX_BLOCKING");
  const std::string saved = before ? before : "";
  auto forced_with = [](const char* value) -> std::string {
    setenv("LB_AMX_BLOCKING", value, 1);
    try {
      const std::optional<cpu::AmxBlocking> b = cpu::forced_amx_blocking();
      return b ? std::to_string(b->kc_bytes) + "," + std::to_string(b->mc) + "," + std::to_string(b->prefetch)
               : "none";
    } catch (const Error& e) {
      return e.what();
    }
  };
  EXPECT_EQ(forced_with("kc_bytes=512,mc=128"), "512,128,0");
  EXPECT_EQ(forced_with("mc=64"), "1024,64,0");
  EXPECT_EQ(forced_with("kc_bytes=2048,mc=192"), "2048,192,0");
  EXPECT_EQ(forced_with("prefetch=2,kc_bytes=512"), "512,256,2");
  const std::string syntax = ": expected kc_bytes=N, mc=N and/or prefetch=N, comma-separated";
  EXPECT_EQ(forced_with(""), "LB_AMX_BLOCKING=" + syntax);
  EXPECT_EQ(forced_with("kc=512"), "LB_AMX_BLOCKING=kc=512" + syntax);
  EXPECT_EQ(forced_with("mc=64,"), "LB_AMX_BLOCKING=mc=64," + syntax);
  EXPECT_EQ(forced_with("mc=-32"), "LB_AMX_BLOCKING=mc=-32" + syntax);
  EXPECT_EQ(forced_with("kc_bytes=100"),
            "LB_AMX_BLOCKING=kc_bytes=100: kc_bytes must be a multiple of 64 (a tile row) from 64 to 8192");
  EXPECT_EQ(forced_with("mc=0"),
            "LB_AMX_BLOCKING=mc=0: mc must be a multiple of 32 (a C tile's rows) from 32 to 4096");
  EXPECT_EQ(forced_with("prefetch=17"),
            "LB_AMX_BLOCKING=prefetch=17: prefetch must be 0 (none) to 16 tile steps ahead");
  EXPECT_EQ(forced_with("kc_bytes=2048"),
            "LB_AMX_BLOCKING=kc_bytes=2048: the A block, mc × kc_bytes = 524288 "
            "bytes, exceeds the workspace's A buffer (458752)");
  setenv("LB_AMX_BLOCKING", "kc_bytes=512,mc=128,prefetch=4", 1);
  EXPECT_EQ(cpu::amx_blocking_context(),
            "kc_bytes=512 (256 bf16 / 512 int8 deep), mc=128, prefetch=4, LB_AMX_BLOCKING");
  unsetenv("LB_AMX_BLOCKING");
  EXPECT_EQ(cpu::amx_blocking_context(),
            "kc_bytes=1024 (512 bf16 / 1024 int8 deep), mc=256, prefetch=0, default");
  if (before) setenv("LB_AMX_BLOCKING", saved.c_str(), 1);
}

// Independent of the model: the double-precision product, within f32 accumulation's error
// (bf16 operands are exact in f32; u8·s8 sums are exact) and the output's rounding.
TEST(AmxEmulated, GemmAgreesWithTheDoubleProduct) {
  std::mt19937 rng(12);
  for (Elem e : {Elem::bf16, Elem::u8s8})
    for (const Case& c : kCases) {
      if (e == Elem::u8s8 && c.bf16_out) continue;
      const Operands o = make_operands(c, rng);
      const std::vector<float> got = run(e, LowpPath::amx_emulated, c, o);
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          const double want = exact(e, c, o, i, j);
          double tol =
              e == Elem::bf16 ? 1e-5 * (std::sqrt(double(c.k)) + 1.0) : 1e-6 * (std::abs(want) + 1.0);
          if (c.bf16_out) tol += std::abs(want) * 0x1p-8;
          ASSERT_NEAR(got[size_t(i * c.n + j)], want, tol) << describe(e, c) << " at " << i << "," << j;
        }
    }
}

// Where this host has AVX-512's bf16 / VNNI kernels: the same GEMMs on them. u8·s8 in one
// K slice on both paths (K ≤ 1024) is the same exact sum and the same epilogue: equal bits.
TEST(AmxEmulated, GemmAgreesWithTheAvx512Path) {
  std::mt19937 rng(13);
  int compared = 0;
  for (Elem e : {Elem::bf16, Elem::u8s8}) {
    if (!cpu::isa_supported(cpu::Isa::avx512) ||
        !(e == Elem::bf16 ? __builtin_cpu_supports("avx512bf16") : __builtin_cpu_supports("avx512vnni")))
      continue;
    for (const Case& c : kCases) {
      if (e == Elem::u8s8 && c.bf16_out) continue;
      const Operands o = make_operands(c, rng);
      const std::vector<float> amx = run(e, LowpPath::amx_emulated, c, o);
      const std::vector<float> avx = run(e, LowpPath::avx512, c, o);
      ++compared;
      for (size_t i = 0; i < amx.size(); ++i) {
        if (e == Elem::u8s8 && c.k <= 1024)
          ASSERT_EQ(std::memcmp(&amx[i], &avx[i], 4), 0) << describe(e, c) << " at " << i;
        else
          ASSERT_NEAR(amx[i], avx[i], 2e-5 * (std::sqrt(double(c.k)) + 1.0) + std::abs(avx[i]) * 0x1p-7)
              << describe(e, c) << " at " << i;
      }
    }
  }
  if (!compared) GTEST_SKIP() << "no AVX-512 bf16 / VNNI on this CPU to compare with";
}

// dense.cpu.default on the emulated tiles, against the reference with the project's
// tolerances: the kernel's own packing of W, partial-sum buffer, int8 scale and ReLU modes.
TEST(AmxEmulated, DenseConformsOnEmulatedTiles) {
  const KernelEntry* dense = registry().find("dense.cpu.default");
  ASSERT_NE(dense, nullptr);
  const cpu::LowpPathOverride emulated(LowpPath::amx_emulated);
  for (const char* line :
       {"dense mb=17 ic=1027 oc=45 relu=fused", "dense mb=1 ic=64 oc=1", "dense mb=33 ic=31 oc=17",
        "dense mb=70 ic=600 oc=40 relu=inplace", "dense mb=40 ic=1100 oc=33 relu=separate"}) {
    Problem p = parse_problem(line);
    for (DType dt : {DType::bf16, DType::i8}) {
      p.dt = dt;
      for (int threads : {1, 2})
        EXPECT_TRUE(check_conforms(*dense, p, Context{threads})) << print(p);
    }
  }
}

// conv2d.cpu.default's bf16 and int8 path (im2col + the low-precision GEMM) on the emulated
// tiles: strides, padding, dilation, groups, 1×1, a depth of two bf16 K slices (partial
// sums), the ReLU modes, batch below and above the threads.
TEST(AmxEmulated, ConvConformsOnEmulatedTiles) {
  const KernelEntry* conv = registry().find("conv2d.cpu.default");
  ASSERT_NE(conv, nullptr);
  const cpu::LowpPathOverride emulated(LowpPath::amx_emulated);
  for (const char* line : {"conv2d mb=2 ic=17 ih=15 iw=13 oc=5 kh=3 kw=3 sh=2 ph=1 relu=fused",
                           "conv2d mb=2 ic=5 ih=11 iw=9 oc=7 kh=3 kw=2 sh=2 sw=3 ph=2 pw=1 dh=2 dw=3",
                           "conv2d mb=1 ic=6 ih=9 iw=9 oc=9 kh=3 kw=1 sw=2 ph=1 g=3 relu=separate",
                           "conv2d mb=3 ic=16 ih=7 iw=7 oc=40 kh=1 kw=1 relu=inplace",
                           "conv2d mb=1 ic=130 ih=9 iw=9 oc=20 kh=3 kw=3 ph=1"}) {
    Problem p = parse_problem(line);
    for (DType dt : {DType::bf16, DType::i8}) {
      p.dt = dt;
      for (int threads : {1, 2})
        EXPECT_TRUE(check_conforms(*conv, p, Context{threads})) << print(p);
    }
  }
}

// The emulation faults as the hardware does on a tile instruction before ldtilecfg: the
// GEMM tests above pass only if every thread configures its tiles before its first tile.
TEST(AmxEmulatedDeathTest, TileInstructionWithoutConfigurationFaults) {
  alignas(64) uint16_t a[32 * 32] = {}, b[32 * 32] = {};
  float c[32 * 32] = {};
  cpu::UkArgs u;
  u.kc = 32;
  u.a = a;
  u.b = b;
  u.c = c;
  u.ldc = 32;
  u.m = u.n = 32;
  u.last = true;
  EXPECT_DEATH(cpu::ukr_bf16_amx_emulated(u), "without a tile configuration");
}

// AMX's availability follows CPUID and Linux's permission; the path follows it.
TEST(Amx, PathFollowsAvailability) {
  if (!cpuid_has_amx_tile()) {
    EXPECT_EQ(cpu::amx_reason(Elem::bf16), "no AMX: CPUID lacks amx_tile");
    EXPECT_EQ(cpu::amx_reason(Elem::u8s8), "no AMX: CPUID lacks amx_tile");
  }
  EXPECT_EQ(cpu::amx_reason(Elem::f32), "AMX has no f32 products");
  const char* forced = std::getenv("LB_CPU_ISA");
  const bool may = !forced || std::string(forced) == "amx";
  for (Elem e : {Elem::bf16, Elem::u8s8})
    EXPECT_EQ(cpu::lowp_path(e) == LowpPath::amx, may && cpu::amx_reason(e).empty());
}

// The real tiles through the kernels, against the reference.
TEST(Amx, DenseAndLstmOnTheTiles) {
  std::vector<Problem> dense_problems, lstm_problems;
  for (const char* line :
       {"dense mb=17 ic=1027 oc=45 relu=fused", "dense mb=1 ic=64 oc=1", "dense mb=64 ic=600 oc=70",
        "dense mb=300 ic=2100 oc=96 relu=fused", "dense mb=33 ic=31 oc=17"})
    dense_problems.push_back(parse_problem(line));
  for (const char* line : {"lstm mb=3 t=4 ic=17 hc=8 l=3 relu=fused", "lstm mb=40 t=3 ic=70 hc=37 l=2"})
    lstm_problems.push_back(parse_problem(line));
  for (Elem e : {Elem::bf16, Elem::u8s8})
    if (const std::string why = cpu::amx_reason(e); !why.empty()) GTEST_SKIP() << why;
  if (cpu::lowp_path(Elem::bf16) != LowpPath::amx) GTEST_SKIP() << "LB_CPU_ISA keeps bf16 and int8 off AMX";
  const KernelEntry* dense = registry().find("dense.cpu.default");
  const KernelEntry* lstm = registry().find("lstm.cpu.default");
  ASSERT_NE(dense, nullptr);
  ASSERT_NE(lstm, nullptr);
  for (Problem p : dense_problems)
    for (DType dt : {DType::bf16, DType::i8}) {
      p.dt = dt;
      for (int threads : {1, 2})
        EXPECT_TRUE(check_conforms(*dense, p, Context{threads})) << print(p);
    }
  for (Problem p : lstm_problems) {
    p.dt = DType::bf16;
    EXPECT_TRUE(check_conforms(*lstm, p, Context{2})) << print(p);
  }
}

}  // namespace
}  // namespace lb
