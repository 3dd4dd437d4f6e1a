// The cpu backend: its GEMM driver on every ISA this CPU runs, both operand orientations,
// strided and packed operands, K slices, epilogues; its thread pool; and what it must cover
// (some kernel for every f32 shape; bf16 and int8 dense where the CPU has them). Every cpu
// kernel against the reference: conformance_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/cpu/gemm.h"
#include "kernels/data.h"
#include "kernels/tests/conformance.h"

namespace lb {
namespace {

// Some cpu kernel takes every f32 problem of the conformance suite, which the conformance
// test then verifies: the backend covers every op and shape in f32 on any x86-64 CPU —
// relu=relu6 where its store has the clip (pool2d, add; not yet the GEMM's and the
// convolutions' epilogues).
TEST(Cpu, SomeKernelTakesEveryF32ConformanceProblem) {
  for (const Problem& p : load_suite("conformance"))
    if (p.relu != Relu::relu6 || p.op() == Op::pool2d || p.op() == Op::add)
      EXPECT_GE(kernels_taking("cpu", p), 1) << "no cpu kernel takes " << print(p);
}

TEST(Cpu, LowPrecisionDenseIsVerifiedWhereTheCpuHasIt) {
  const KernelEntry* k = registry().find("dense.cpu.default");
  ASSERT_NE(k, nullptr);
  Problem p = parse_problem("dense mb=17 ic=1027 oc=45 relu=fused");
  for (DType dt : {DType::bf16, DType::i8}) {
    p.dt = dt;
    const bool has = cpu::elem_supported(dt == DType::bf16 ? cpu::Elem::bf16 : cpu::Elem::u8s8);
    EXPECT_EQ(check_conforms(*k, p, Context{2}), has) << name(dt);
  }
}

// int8 on the AVX2 tile (4×16, vpmaddwd on widened operands), wherever the CPU has AVX2
// (the path of int8 on hosts without AVX-512 VNNI; forced here on those with it): dense
// and convolution against the reference — rows and columns past whole tiles, an odd depth
// (the last pair half zero), two K slices (depth past 1024), pointwise and strided 3×3
// convolutions, every ReLU mode, 1 and 2 threads.
TEST(Cpu, Int8OnTheAvx2TileConforms) {
  if (!cpu::isa_supported(cpu::Isa::avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  const cpu::LowpPathOverride avx2(cpu::LowpPath::avx2);
  ASSERT_EQ(cpu::lowp_path(cpu::Elem::u8s8), cpu::LowpPath::avx2);
  ASSERT_NE(cpu::lowp_path(cpu::Elem::bf16), cpu::LowpPath::avx2);  // AVX2 has no bf16 tile
  const KernelEntry* dense = registry().find("dense.cpu.default");
  const KernelEntry* conv = registry().find("conv2d.cpu.default");
  ASSERT_NE(dense, nullptr);
  ASSERT_NE(conv, nullptr);
  for (const char* line : {"dense mb=17 ic=1027 oc=45 relu=fused", "dense mb=1 ic=64 oc=1",
                           "dense mb=33 ic=31 oc=17 relu=separate", "dense mb=70 ic=2100 oc=40 relu=inplace",
                           "conv2d mb=2 ic=17 ih=15 iw=13 oc=5 kh=3 kw=3 sh=2 ph=1 relu=fused",
                           "conv2d mb=1 ic=6 ih=9 iw=9 oc=9 kh=3 kw=1 sw=2 ph=1 g=3 relu=separate",
                           "conv2d mb=3 ic=16 ih=7 iw=7 oc=40 kh=1 kw=1 relu=inplace",
                           "conv2d mb=1 ic=130 ih=9 iw=9 oc=20 kh=3 kw=3 ph=1"}) {
    Problem p = parse_problem(line);
    p.dt = DType::i8;
    const KernelEntry& k = p.op() == Op::dense ? *dense : *conv;
    for (int threads : {1, 2})
      EXPECT_TRUE(check_conforms(k, p, Context{threads})) << print(p);
  }
}

// A pointwise layer whose output is streamed past the caches (MobileNet's pw2: 32 deep,
// 3.2 MB out; conv2d.cpp's stream rule), in the ReLU modes that stream and one that does
// not, on 1 and 2 threads.
TEST(Cpu, StreamedPointwiseConforms) {
  const KernelEntry* k = registry().find("conv2d.cpu.default");
  ASSERT_NE(k, nullptr);
  for (const char* relu : {"none", "fused", "inplace"})
    for (int threads : {1, 2}) {
      const Problem p =
          parse_problem(std::string("conv2d mb=1 ic=32 ih=112 iw=112 oc=64 kh=1 kw=1 relu=") + relu);
      EXPECT_TRUE(check_conforms(*k, p, Context{threads})) << relu << " threads " << threads;
    }
}

// C = A·B (+ bias, ReLU) in double, A M×K and B K×N row-major.
std::vector<double> product(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t n,
                            int64_t k) {
  std::vector<double> c(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        c[i * n + j] += double(a[i * k + p]) * b[p * n + j];
  return c;
}

// $LB_CPU_ISA names an ISA this CPU has, or the command stops: an unknown name or one
// the CPU lacks is an error naming the value (register_cpu() asks before anything runs).
TEST(Cpu, ForcedIsaIsValidated) {
  const char* before = std::getenv("LB_CPU_ISA");
  const std::string saved = before ? before : "";
  auto forced_with = [](const char* value) -> std::string {
    setenv("LB_CPU_ISA", value, 1);
    try {
      const std::optional<cpu::Isa> isa = cpu::forced_isa();
      return isa ? std::string(cpu::name(*isa)) : "none";
    } catch (const Error& e) {
      return e.what();
    }
  };
  EXPECT_EQ(forced_with("scalar"), "scalar");
  EXPECT_EQ(forced_with("bogus"), "LB_CPU_ISA=bogus: expected one of scalar avx2 avx512 amx");
  EXPECT_EQ(forced_with("AVX2"), "LB_CPU_ISA=AVX2: expected one of scalar avx2 avx512 amx");
  EXPECT_EQ(forced_with(""), "LB_CPU_ISA=: expected one of scalar avx2 avx512 amx");
  if (!cpu::isa_supported(cpu::Isa::avx512)) {
    EXPECT_EQ(forced_with("avx512"), "LB_CPU_ISA=avx512: this CPU has no avx512");
  }
  // amx: accepted where AMX runs (f32 stays on avx512), else an error with why.
  const std::string why = cpu::amx_reason(cpu::Elem::bf16) + cpu::amx_reason(cpu::Elem::u8s8);
  if (why.empty()) {
    EXPECT_EQ(forced_with("amx"), "avx512");
    setenv("LB_CPU_ISA", "amx", 1);
    EXPECT_NE(cpu::isa_context().find("AMX tiles"), std::string::npos) << cpu::isa_context();
  } else {
    EXPECT_EQ(forced_with("amx").rfind("LB_CPU_ISA=amx: ", 0), 0u) << forced_with("amx");
  }
  unsetenv("LB_CPU_ISA");
  EXPECT_FALSE(cpu::forced_isa());
  EXPECT_EQ(cpu::isa_context(), "none");
  if (before) setenv("LB_CPU_ISA", saved.c_str(), 1);
}

TEST(Cpu, GemmDriverOnEveryIsa) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  struct Shape {
    int64_t m, n, k;
  };
  for (cpu::Isa isa : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512}) {
    if (!cpu::isa_supported(isa)) continue;
    for (Shape s :
         {Shape{1, 1, 1}, Shape{3, 17, 1023}, Shape{17, 3, 5}, Shape{15, 33, 600}, Shape{40, 70, 2100},
          // one row: the row kernels (AVX2 16, AVX-512 32 columns a panel), 1-4 panels a call
          Shape{1, 150, 700}, Shape{1, 64, 33}, Shape{1, 90, 50},
          Shape{7, 48, 300},       // 48 columns: an edge panel of exactly 16 in AVX-512's 32-wide ones
          Shape{64, 256, 300}}) {  // 2 threads: AVX2's 13 row panels share out worse than columns
      std::vector<float> a(size_t(s.m * s.k)), b(size_t(s.k * s.n)), bias_row(size_t(s.m)),
          bias_col(size_t(s.n));
      for (auto* v : {&a, &b, &bias_row, &bias_col})
        for (float& x : *v)
          x = u(rng);
      const std::vector<double> want = product(a, b, s.m, s.n, s.k);
      for (int variant = 0; variant < 5; ++variant) {
        // 0: A strided, B packed (dense)   1: A packed, B strided (conv: weights · columns)
        // 2: both strided, accumulate      3: A packed, B by a packing function, 2 threads
        // 4: as 0 on 2 threads (rows or columns, whichever shares out more evenly)
        const bool dense = variant == 0 || variant == 4;
        cpu::Operand oa, ob;
        cpu::Packed pa, pb;
        auto packer = [&](int64_t j0, int64_t count, int64_t k0, int64_t kc, int r, float* dst) {
          for (int64_t q = 0; q * r < count; ++q)
            for (int64_t p = 0; p < kc; ++p)
              for (int i = 0; i < r; ++i) {
                const int64_t j = j0 + q * r + i;
                dst[(q * kc + p) * r + i] = q * r + i < count && k0 + p < s.k ? b[(k0 + p) * s.n + j] : 0.0f;
              }
        };
        const cpu::PackFn pack = packer;
        if (variant == 1 || variant == 3) {
          pa = cpu::Packed(isa, true, s.m, s.k, cpu::Strided{a.data(), s.k, 1});
          oa.packed = &pa;
        } else {
          oa.strided = cpu::Strided{a.data(), s.k, 1};
        }
        if (dense) {
          pb = cpu::Packed(isa, false, s.n, s.k, cpu::Strided{b.data(), 1, s.n});
          ob.packed = &pb;
        } else if (variant == 3) {
          ob.pack = &pack;
        } else {
          ob.strided = cpu::Strided{b.data(), 1, s.n};
        }
        const bool accumulate = variant == 2, relu = variant == 3;
        std::vector<float> c(size_t(s.m * s.n), accumulate ? 0.5f : std::nanf(""));
        const int threads = variant >= 3 ? 2 : 1;
        cpu::Pool pool(threads);
        cpu::Workspace ws(isa, threads);
        const cpu::Epilogue ep{variant == 1 ? bias_row.data() : nullptr, dense ? bias_col.data() : nullptr,
                               relu, accumulate};
        cpu::gemm_f32(isa, s.m, s.n, s.k, oa, ob, c.data(), s.n, ep, ws, &pool);
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t j = 0; j < s.n; ++j) {
            double w = want[i * s.n + j] + (accumulate ? 0.5 : 0.0);
            if (dense) w += bias_col[j];
            if (variant == 1) w += bias_row[i];
            if (relu) w = std::max(w, 0.0);
            ASSERT_NEAR(c[i * s.n + j], w, 1e-5 * (std::sqrt(double(s.k)) + 1.0))
                << name(isa) << " variant " << variant << " " << s.m << "x" << s.n << "x" << s.k << " at "
                << i << "," << j;
          }
      }
    }
  }
}

// Packing is plain C++ whatever the tile's ISA, so every ISA's panel layout is checked on any
// host, also where its micro-kernel cannot run: B panels of NR columns (AVX-512 32, AVX2 16),
// k-major, zero past the last column, from both source layouts (columns contiguous, as a
// convolution's pixels, and rows contiguous). 48 columns leave AVX-512 an edge panel of
// exactly 16, the case a 16-wide copy into a 32-wide panel would get wrong.
TEST(Cpu, PackedPanelsFollowTheDocumentedLayoutOnEveryIsa) {
  for (cpu::Isa isa : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512}) {
    const int64_t r = cpu::f32_tile(isa).nr;
    for (int64_t n : {int64_t(1), int64_t(16), int64_t(48), int64_t(70)}) {
      const int64_t k = 37;
      std::vector<float> b(size_t(k * n));  // K×N, element (k, j) = k·1000 + j + 1
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j)
          b[size_t(p * n + j)] = float(p * 1000 + j + 1);
      std::vector<float> bt(b.size());  // the same matrix with its rows contiguous along k
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j)
          bt[size_t(j * k + p)] = b[size_t(p * n + j)];
      for (bool pixels_contiguous : {true, false}) {
        const cpu::Packed packed = pixels_contiguous
                                       ? cpu::Packed(isa, false, n, k, cpu::Strided{b.data(), 1, n})
                                       : cpu::Packed(isa, false, n, k, cpu::Strided{bt.data(), k, 1});
        ASSERT_EQ(packed.panel_stride_bytes(), k * r * int64_t(sizeof(float)));
        for (int64_t q = 0; q * r < n; ++q) {
          const auto* d = reinterpret_cast<const float*>(packed.panel_bytes(q, 0));
          for (int64_t p = 0; p < k; ++p)
            for (int64_t i = 0; i < r; ++i) {
              const int64_t j = q * r + i;
              ASSERT_EQ(d[p * r + i], j < n ? b[size_t(p * n + j)] : 0.0f)
                  << name(isa) << " n=" << n << (pixels_contiguous ? " columns" : " rows")
                  << " contiguous: panel " << q << " k " << p << " lane " << i;
            }
        }
      }
    }
  }
}

TEST(Cpu, PoolRunsEveryThreadOnceAndSplitCoversTheRange) {
  cpu::Pool pool(3);
  for (int round = 0; round < 100; ++round) {
    std::vector<int> seen(3, 0);
    std::vector<int64_t> covered(1000, 0);
    pool.run([&](int tid, int n) {
      ++seen[size_t(tid)];
      const cpu::Range r = cpu::split(1000, 16, tid, n);
      for (int64_t i = r.first; i < r.last; ++i)
        ++covered[size_t(i)];
    });
    for (int s : seen)
      ASSERT_EQ(s, 1);
    for (int64_t c : covered)
      ASSERT_EQ(c, 1);
  }
}

}  // namespace
}  // namespace lb
