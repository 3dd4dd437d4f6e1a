// The eigen backend: what it must cover (every conformance shape in f32, by exactly one
// kernel), the reason it declines every other dtype with, and what scratch_bytes() reports.
// Every eigen kernel against the reference: conformance_test.cpp.
#include <gtest/gtest.h>

#include "kernels/data.h"
#include "kernels/tests/conformance.h"

namespace lb {
namespace {

// Exactly one eigen kernel takes every f32 problem of the conformance suite (which the
// conformance test then verifies): im2col and depthwise split conv2d between them. Not
// relu=relu6, which no Eigen kernel declares (they clip at 0 only).
TEST(Eigen, ExactlyOneKernelTakesEveryF32ConformanceProblem) {
  for (const Problem& p : load_suite("conformance"))
    EXPECT_EQ(kernels_taking("eigen", p), p.relu == Relu::relu6 ? 0 : 1) << print(p);
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
        EXPECT_EQ(v.status, Status::unsupported) << k.info.id << " " << print(p);
        EXPECT_EQ(v.reason.rfind("eigen: dt=" + std::string(name(dt)) + " not supported", 0), 0u) << v.reason;
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
