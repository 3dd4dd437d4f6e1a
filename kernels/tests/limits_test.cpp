// Problems at the edge of what the parser takes, through every kernel's supports(): each
// answers without a signal, and a library that cannot take a size says so. The same
// lines seed the fuzz target kernels/tests/fuzz/fuzz_supports.cpp.
#include <gtest/gtest.h>

#include <string>

#include "kernels/model.h"
#include "kernels/ops/traits.h"
#include "kernels/problem.h"
#include "kernels/registry.h"

namespace lb {
namespace {

constexpr const char* kEdgeLines[] = {
    // The SIGFPE in conv2d.onednn.default: an x of 2^41 elements.
    "conv2d mb=2147483647 ic=16 ih=8 iw=8 oc=16 kh=3 kw=3 ph=1 dt=i8",
    "conv2d mb=2147483647 ic=16 ih=8 iw=8 oc=16 kh=3 kw=3 ph=1 dt=f32",
    "dense mb=16777216 ic=16777216 oc=1 dt=i8",
    "dense mb=2147483647 ic=8 oc=8 dt=bf16",
    "lstm mb=2147483647 t=1 ic=8 hc=8 dt=f32",
    // A column matrix of 2^52 elements from a 1×1 input (Eigen's im2col).
    "conv2d mb=1 ic=1 ih=1 iw=1 oc=1 kh=8192 kw=8192 ph=8192 dt=f32",
};

TEST(Limits, EveryKernelAnswersAtTheEdges) {
  for (const char* line : kEdgeLines) {
    const Problem p = parse_problem(line);
    model(p);
    for (const KernelEntry& k : registry().kernels())
      EXPECT_NO_THROW(k.supports(p)) << k.info.id << " on " << line;
  }
}

TEST(Limits, LargestArgument) {
  const LargestArg a =
      largest_arg(parse_problem("conv2d mb=2147483647 ic=16 ih=8 iw=8 oc=16 kh=3 kw=3 ph=1"));
  EXPECT_EQ(a.arg, Arg::src);
  EXPECT_EQ(power_of_two(a.elements), "2^41.0");
  EXPECT_EQ(largest_arg(parse_problem("dense mb=2 ic=3 oc=5")).arg, Arg::wei);
}

#ifdef LB_HAVE_ONEDNN
TEST(Limits, OnednnDeclinesTensorsOver32BitCounts) {
  const Problem p = parse_problem(kEdgeLines[0]);
  for (const char* id : {"conv2d.onednn.default", "conv2d.onednn.nchw", "conv2d.onednn.blocked"}) {
    const KernelEntry* k = registry().find(id);
    ASSERT_NE(k, nullptr) << id;
    EXPECT_EQ(k->supports(p),
              "onednn: src has 2^41.0 elements; oneDNN 2.6's CPU kernels count their work in 32-bit ints (at "
              "most 2^31 - 1)");
  }
  // A filter side past 1024: oneDNN 2.6 took minutes planning it on an AVX-512 host.
  for (const char* id : {"conv2d.onednn.default", "conv2d.onednn.nchw", "conv2d.onednn.blocked"})
    EXPECT_EQ(registry().find(id)->supports(parse_problem(kEdgeLines[5])),
              "onednn: a 8192x8192 filter: oneDNN 2.6 takes minutes to plan a side past 1024 on AVX-512 "
              "hosts, so it is not asked");
  EXPECT_EQ(registry()
                .find("conv2d.onednn.default")
                ->supports(parse_problem("conv2d mb=1 ic=1 ih=1024 iw=4 oc=1 kh=1024 kw=3 ph=0 pw=1 dt=f32")),
            "");
  // Just under the bound is the library's to judge, as before.
  const Problem fits = parse_problem("dense mb=1 ic=1024 oc=1024");
  EXPECT_EQ(registry().find("dense.onednn.default")->supports(fits), "");
}
#endif

#ifdef LB_HAVE_EIGEN
TEST(Limits, EigenDeclinesAColumnMatrixBeyondBounds) {
  const std::string why = registry().find("conv2d.eigen.im2col")->supports(parse_problem(kEdgeLines[5]));
  EXPECT_EQ(why, "eigen: the im2col matrix would have 2^52.0 elements (more than 2^48)");
}
#endif

}  // namespace
}  // namespace lb
