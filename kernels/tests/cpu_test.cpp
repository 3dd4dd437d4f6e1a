// The cpu backend: its GEMM driver on every ISA this CPU runs, both operand orientations,
// strided and packed operands, K slices, epilogues; and every cpu kernel against the
// reference on awkward shapes (sizes 1, 3, 17, 1023; strides, padding, dilation, groups,
// depthwise, stacked LSTMs; every ReLU mode) at each dtype it claims, on 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/verify.h"

namespace lb {
namespace {

const char* const kProblems[] = {
    "dense mb=1 ic=1 oc=1",
    "dense mb=3 ic=17 oc=1023 relu=fused",
    "dense mb=17 ic=1023 oc=3 relu=separate",
    "dense mb=14 ic=257 oc=32 relu=inplace",  // exactly one full AVX-512 tile wide and high
    "dense mb=29 ic=1100 oc=70",              // K deeper than one slice, edge tiles both ways
    "dense mb=1 ic=1023 oc=257 relu=fused",
    "conv2d mb=1 ic=1 ih=1 iw=1 oc=1 kh=1 kw=1",
    "conv2d mb=1 ic=3 ih=17 iw=17 oc=13 kh=3 kw=3 ph=1",
    "conv2d mb=2 ic=17 ih=15 iw=13 oc=5 kh=3 kw=3 sh=2 ph=1 relu=fused",
    "conv2d mb=1 ic=8 ih=12 iw=12 oc=7 kh=3 kw=3 ph=2 dh=2 relu=inplace",
    "conv2d mb=1 ic=3 ih=35 iw=35 oc=16 kh=11 kw=11 sh=4 ph=2",
    "conv2d mb=2 ic=5 ih=11 iw=9 oc=7 kh=3 kw=2 sh=2 sw=3 ph=2 pw=1 dh=2 dw=3",
    "conv2d mb=1 ic=6 ih=9 iw=9 oc=9 kh=3 kw=1 sh=1 sw=2 ph=1 pw=0 g=3 relu=separate",
    "conv2d mb=3 ic=16 ih=7 iw=7 oc=24 kh=1 kw=1",
    "conv2d mb=1 ic=64 ih=56 iw=56 oc=64 kh=3 kw=3 ph=1",  // pixel panels cross output rows
    "conv2d mb=2 ic=13 ih=10 iw=10 oc=13 kh=3 kw=3 ph=1 g=13 relu=fused",
    "conv2d mb=1 ic=17 ih=11 iw=11 oc=17 kh=3 kw=3 sh=2 ph=1 g=17",
    "conv2d mb=2 ic=7 ih=11 iw=9 oc=7 kh=3 kw=2 sh=2 sw=3 ph=2 pw=1 dh=2 dw=3 g=7 relu=separate",
    "conv2d mb=1 ic=4 ih=5 iw=5 oc=4 kh=5 kw=5 g=4 relu=inplace",
    "conv2d mb=1 ic=3 ih=1 iw=1023 oc=3 kh=1 kw=3 pw=1 g=3",
    "lstm mb=1 t=1 ic=1 hc=1 l=1",
    "lstm mb=3 t=4 ic=17 hc=8 l=3 relu=fused",
    "lstm mb=2 t=5 ic=16 hc=16 l=2 relu=separate",
    "lstm mb=5 t=3 ic=8 hc=13 l=2 relu=inplace",
    "lstm mb=1 t=6 ic=17 hc=37 l=2",
};

// Checks every cpu kernel of p's op; returns how many verified it (rather than skipped).
int check_all(const Problem& p, const Context& ctx) {
  int verified = 0;
  for (const KernelEntry& k : registry().kernels()) {
    if (k.backend() != "cpu" || k.op_name() != name(p.op())) continue;
    const Verdict v = check_kernel(k, p, 11, ctx);
    if (v.status == Status::skipped) {
      EXPECT_EQ(v.reason.rfind("cpu: ", 0), 0u) << k.info.id << ": " << v.reason;
      continue;
    }
    EXPECT_TRUE(v.status == Status::passed || v.status == Status::mistrusted)
        << k.info.id << " on " << print(p) << " threads=" << ctx.threads << ": " << v.reason << "\n"
        << v.repro;
    ++verified;
  }
  return verified;
}

TEST(Cpu, EveryKernelMatchesTheReference) {
  for (int threads : {1, 2})
    for (const char* line : kProblems) {
      Problem p = parse_problem(line);
      EXPECT_GE(check_all(p, Context{threads}), 1) << "no cpu kernel verified " << line;
      for (DType dt : {DType::bf16, DType::i8}) {
        p.dt = dt;
        check_all(p, Context{threads});
      }
    }
}

TEST(Cpu, LowPrecisionDenseIsVerifiedWhereTheCpuHasIt) {
  Problem p = parse_problem("dense mb=17 ic=1027 oc=45 relu=fused");
  for (DType dt : {DType::bf16, DType::i8}) {
    p.dt = dt;
    const bool has = cpu::elem_supported(dt == DType::bf16 ? cpu::Elem::bf16 : cpu::Elem::u8s8);
    EXPECT_EQ(check_all(p, Context{2}), has ? 1 : 0) << name(dt);
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

TEST(Cpu, GemmDriverOnEveryIsa) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  struct Shape {
    int64_t m, n, k;
  };
  for (cpu::Isa isa : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512}) {
    if (!cpu::isa_supported(isa)) continue;
    for (Shape s :
         {Shape{1, 1, 1}, Shape{3, 17, 1023}, Shape{17, 3, 5}, Shape{15, 33, 600}, Shape{40, 70, 2100}}) {
      std::vector<float> a(size_t(s.m * s.k)), b(size_t(s.k * s.n)), bias_row(size_t(s.m)),
          bias_col(size_t(s.n));
      for (auto* v : {&a, &b, &bias_row, &bias_col})
        for (float& x : *v)
          x = u(rng);
      const std::vector<double> want = product(a, b, s.m, s.n, s.k);
      for (int variant = 0; variant < 4; ++variant) {
        // 0: A strided, B packed (dense)   1: A packed, B strided (conv: weights · columns)
        // 2: both strided, accumulate      3: A packed, B by a packing function, 2 threads
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
        if (variant == 0) {
          pb = cpu::Packed(isa, false, s.n, s.k, cpu::Strided{b.data(), 1, s.n});
          ob.packed = &pb;
        } else if (variant == 3) {
          ob.pack = &pack;
        } else {
          ob.strided = cpu::Strided{b.data(), 1, s.n};
        }
        const bool accumulate = variant == 2, relu = variant == 3;
        std::vector<float> c(size_t(s.m * s.n), accumulate ? 0.5f : std::nanf(""));
        const int threads = variant == 3 ? 2 : 1;
        cpu::Pool pool(threads);
        cpu::Workspace ws(isa, threads);
        const cpu::Epilogue ep{variant == 1 ? bias_row.data() : nullptr,
                               variant == 0 ? bias_col.data() : nullptr, relu, accumulate};
        cpu::gemm_f32(isa, s.m, s.n, s.k, oa, ob, c.data(), s.n, ep, ws, &pool);
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t j = 0; j < s.n; ++j) {
            double w = want[i * s.n + j] + (accumulate ? 0.5 : 0.0);
            if (variant == 0) w += bias_col[j];
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
