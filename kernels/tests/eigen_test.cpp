// The eigen backend against the reference on awkward shapes (sizes 1, 3, 17, 1023, prime
// channel counts, stride 2, dilation 2, negative bottom padding, groups, depthwise with
// stride and dilation, single-step and stacked LSTMs, every ReLU mode), f32 on one and two
// threads; every other dtype is skipped with a reason; scratch_bytes() reports its buffers.
#include <gtest/gtest.h>

#include "kernels/verify.h"

namespace lb {
namespace {

const char* const kProblems[] = {
    "dense mb=1 ic=1 oc=1",
    "dense mb=3 ic=17 oc=5 relu=fused",
    "dense mb=17 ic=1023 oc=3 relu=separate",
    "dense mb=2 ic=31 oc=1023 relu=inplace",
    "dense mb=1 ic=1023 oc=257 relu=fused",  // the matrix-vector path, rows split across threads
    "conv2d mb=1 ic=1 ih=1 iw=1 oc=1 kh=1 kw=1",
    "conv2d mb=1 ic=3 ih=17 iw=17 oc=13 kh=3 kw=3 ph=1",
    "conv2d mb=2 ic=17 ih=15 iw=13 oc=5 kh=3 kw=3 sh=2 ph=1 relu=fused",
    "conv2d mb=1 ic=4 ih=10 iw=10 oc=4 kh=3 kw=3 sh=2",  // the last row and column are never read
    "conv2d mb=1 ic=8 ih=12 iw=12 oc=7 kh=3 kw=3 ph=2 dh=2 relu=inplace",
    "conv2d mb=1 ic=3 ih=35 iw=35 oc=16 kh=11 kw=11 sh=4 ph=2",
    "conv2d mb=2 ic=5 ih=11 iw=9 oc=7 kh=3 kw=2 sh=2 sw=3 ph=2 pw=1 dh=2 dw=3",
    "conv2d mb=1 ic=6 ih=9 iw=9 oc=9 kh=3 kw=1 sh=1 sw=2 ph=1 pw=0 g=3 relu=separate",
    "conv2d mb=2 ic=16 ih=7 iw=7 oc=24 kh=1 kw=1",
    "conv2d mb=2 ic=13 ih=10 iw=10 oc=13 kh=3 kw=3 ph=1 g=13 relu=fused",
    "conv2d mb=1 ic=17 ih=11 iw=11 oc=17 kh=3 kw=3 sh=2 ph=1 g=17",
    "conv2d mb=2 ic=7 ih=11 iw=9 oc=7 kh=3 kw=2 sh=2 sw=3 ph=2 pw=1 dh=2 dw=3 g=7 relu=separate",
    "conv2d mb=1 ic=4 ih=5 iw=5 oc=4 kh=5 kw=5 g=4 relu=inplace",
    "lstm mb=1 t=1 ic=1 hc=1 l=1",
    "lstm mb=1 t=1 ic=3 hc=5 l=1",
    "lstm mb=3 t=4 ic=17 hc=8 l=3 relu=fused",
    "lstm mb=2 t=5 ic=16 hc=16 l=2 relu=separate",
    "lstm mb=5 t=3 ic=8 hc=13 l=2 relu=inplace",
    "lstm mb=1 t=6 ic=17 hc=37 l=2 relu=fused",  // N = 1: matrix-vector recurrence
};

// Checks every eigen kernel of p's op; returns how many verified it (rather than skipped).
int check_all(const Problem& p, const Context& ctx = {}) {
  int verified = 0;
  for (const KernelEntry& k : registry().kernels()) {
    if (k.backend() != "eigen" || k.op_name() != name(p.op())) continue;
    const Verdict v = check_kernel(k, p, 7, ctx);
    if (v.status == Status::skipped) {
      EXPECT_EQ(v.reason.rfind("eigen: ", 0), 0u) << k.info.id << ": " << v.reason;
      continue;
    }
    EXPECT_TRUE(v.status == Status::passed || v.status == Status::mistrusted)
        << k.info.id << " on " << print(p) << ": " << v.reason << "\n"
        << v.repro;
    ++verified;
  }
  return verified;
}

TEST(Eigen, MatchesTheReference) {
  for (const char* line : kProblems)
    EXPECT_EQ(check_all(parse_problem(line)), 1) << "not exactly one eigen kernel verified " << line;
}

TEST(Eigen, TwoThreadsMatchTheReference) {
  for (const char* line : kProblems)
    EXPECT_EQ(check_all(parse_problem(line), Context{2}), 1) << line;
}

TEST(Eigen, OtherDtypesAreSkippedWithAReason) {
  for (const char* line : {"dense mb=4 ic=8 oc=8", "conv2d mb=1 ic=4 ih=5 iw=5 oc=4 kh=3 kw=3",
                           "conv2d mb=1 ic=4 ih=5 iw=5 oc=4 kh=3 kw=3 g=4", "lstm mb=2 t=3 ic=4 hc=4"})
    for (DType dt : {DType::tf32, DType::f16, DType::bf16, DType::i8, DType::f8}) {
      Problem p = parse_problem(line);
      p.dt = dt;
      for (const KernelEntry& k : registry().kernels()) {
        if (k.backend() != "eigen" || k.op_name() != name(p.op())) continue;
        const Verdict v = check_kernel(k, p, 1);
        EXPECT_EQ(v.status, Status::skipped) << k.info.id << " " << print(p);
        EXPECT_EQ(v.reason.rfind("eigen: " + std::string(name(dt)) + " not supported", 0), 0u) << v.reason;
      }
    }
}

TEST(Eigen, HoldsItsBuffersAfterPrepare) {
  const Problem p = parse_problem("conv2d mb=1 ic=16 ih=8 iw=8 oc=16 kh=3 kw=3 ph=1");
  const KernelEntry* k = registry().find("conv2d.eigen.im2col");
  ASSERT_NE(k, nullptr);
  TensorSet ts = make_tensors(p);
  fill_inputs(ts, p, 1);
  auto kernel = k->make();
  kernel->prepare(p, ts, {});
  // At least the im2col buffer, 16·3·3 × 8·8 floats, plus Eigen's cached packing buffers.
  EXPECT_GT(kernel->scratch_bytes(), size_t(16 * 9 * 64 * 4));
  kernel->release();
  EXPECT_EQ(kernel->scratch_bytes(), 0u);
}

}  // namespace
}  // namespace lb
