// conv2d.cpu.depthwise against the reference on the shapes that reach the edges of its
// paths (kernels/cpu/conv2d_depthwise.cpp): widths below, at and not a multiple of the
// vector width, planes shorter than a pass, stride 2 with odd widths, padding 0-2, the
// shapes its 3×3 fast paths decline (dilation, other kernel sizes, mixed strides), and
// ReLU fused, in place and separate; on one thread and two. Each runs on the ISA
// best_isa() picks ($LB_CPU_ISA forces one); the test also checks that MobileNet's
// depthwise shapes take the fast path of that ISA.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/data.h"
#include "kernels/tests/conformance.h"

namespace lb {
namespace {

const KernelEntry& depthwise() {
  const KernelEntry* k = registry().find("conv2d.cpu.depthwise");
  if (k == nullptr) throw std::runtime_error("conv2d.cpu.depthwise is not registered");
  return *k;
}

TEST(Depthwise, MatchesTheReferenceAtThePathsEdges) {
  std::vector<std::string> lines;
  // Stride 1: W from 1 to 17 (short rows: Q < 8 with and without the row-before splice;
  // an overlapping last block), H from 1 to 9 (fewer rows than a pass, and every rest).
  for (int w : {1, 3, 4, 5, 7, 8, 9, 13, 16, 17})
    for (int h : {1, 2, 3, 5, 6, 7, 9})
      lines.push_back("conv2d mb=2 ic=3 ih=" + std::to_string(h) + " iw=" + std::to_string(w) +
                      " oc=3 kh=3 kw=3 ph=1 g=3");
  // Stride 2: odd and even widths and heights.
  for (int w : {2, 7, 9, 14, 15, 17, 23, 31, 33})
    for (int h : {1, 3, 4, 7, 9, 14})
      lines.push_back("conv2d mb=2 ic=3 ih=" + std::to_string(h) + " iw=" + std::to_string(w) +
                      " oc=3 kh=3 kw=3 sh=2 ph=1 g=3");
  for (const char* line : {
           // Padding 0 and 2, and unequal.
           "conv2d mb=1 ic=5 ih=13 iw=13 oc=5 kh=3 kw=3 ph=0 g=5",
           "conv2d mb=1 ic=5 ih=13 iw=13 oc=5 kh=3 kw=3 ph=2 g=5",
           "conv2d mb=1 ic=5 ih=13 iw=21 oc=5 kh=3 kw=3 ph=1 pw=2 g=5",
           "conv2d mb=1 ic=5 ih=13 iw=21 oc=5 kh=3 kw=3 ph=2 pw=0 g=5",
           "conv2d mb=1 ic=4 ih=17 iw=23 oc=4 kh=3 kw=3 sh=2 ph=0 g=4",
           "conv2d mb=1 ic=4 ih=17 iw=23 oc=4 kh=3 kw=3 sh=2 ph=2 g=4",
           "conv2d mb=1 ic=4 ih=16 iw=31 oc=4 kh=3 kw=3 sh=2 ph=1 pw=0 g=4",
           "conv2d mb=1 ic=4 ih=16 iw=31 oc=4 kh=3 kw=3 sh=2 ph=1 pw=3 g=4",
           // What the 3×3 fast paths decline: the generic path.
           "conv2d mb=2 ic=6 ih=20 iw=20 oc=6 kh=3 kw=3 dh=2 dw=2 ph=2 g=6",
           "conv2d mb=2 ic=6 ih=20 iw=20 oc=6 kh=5 kw=5 ph=2 g=6",
           "conv2d mb=2 ic=6 ih=20 iw=20 oc=6 kh=3 kw=3 sh=1 sw=2 ph=1 g=6",
           "conv2d mb=2 ic=6 ih=20 iw=20 oc=6 kh=3 kw=3 sh=2 sw=1 ph=1 g=6",
           "conv2d mb=2 ic=6 ih=20 iw=20 oc=6 kh=3 kw=3 sh=3 ph=1 g=6",
           "conv2d mb=2 ic=6 ih=20 iw=20 oc=6 kh=1 kw=1 g=6",
           // ReLU in the store (fused) and after it.
           "conv2d mb=2 ic=5 ih=28 iw=28 oc=5 kh=3 kw=3 ph=1 g=5 relu=fused",
           "conv2d mb=2 ic=5 ih=28 iw=28 oc=5 kh=3 kw=3 sh=2 ph=1 g=5 relu=inplace",
           "conv2d mb=2 ic=5 ih=28 iw=28 oc=5 kh=3 kw=3 ph=1 g=5 relu=separate",
           "conv2d mb=2 ic=5 ih=7 iw=7 oc=5 kh=3 kw=3 ph=1 g=5 relu=fused",
           "conv2d mb=2 ic=5 ih=14 iw=14 oc=5 kh=3 kw=3 sh=2 ph=1 g=5 relu=fused",
       })
    lines.push_back(line);
  for (const std::string& line : lines)
    for (int threads : {1, 2})
      EXPECT_TRUE(check_conforms(depthwise(), parse_problem(line), Context{threads})) << line;
}

// The path prepare() chose, from details() ("avx2, rows_s1").
std::string path_of(const Problem& p) {
  std::unique_ptr<Kernel> k = depthwise().make();
  TensorSet ts = make_tensors(p);
  k->prepare(p, ts, Context{1});
  const std::string details = k->details();
  k->release();
  return details.substr(details.find(", ") + 2);
}

TEST(Depthwise, MobileNetShapesTakeTheFastPaths) {
  const cpu::Isa isa = cpu::best_isa();
  if (isa == cpu::Isa::scalar) GTEST_SKIP() << "scalar: one path";
  int shapes = 0;
  for (const Problem& p : load_suite("cpu_targets")) {
    if (name(p.op()) != std::string_view("conv2d") || !p.conv().depthwise() || p.conv().kh != 3 ||
        p.conv().kw != 3)
      continue;
    const bool s2 = p.conv().sw == 2;
    std::string want;
    if (isa == cpu::Isa::avx2)
      want = s2 ? "rows_s2" : "rows_s1";
    else
      want = p.conv().ow() <= 8 && p.conv().iw <= 16 ? "narrow" : s2 ? "wide_s2" : "wide_s1";
    EXPECT_EQ(path_of(p), want) << print(p);
    ++shapes;
  }
  EXPECT_EQ(shapes, 18) << "MobileNet's nine depthwise 3×3 shapes at batch 1 and 32";
  // Dilation stays on the generic path.
  EXPECT_EQ(path_of(parse_problem("conv2d mb=1 ic=6 ih=20 iw=20 oc=6 kh=3 kw=3 dh=2 dw=2 ph=2 g=6")),
            "generic");
}

}  // namespace
}  // namespace lb
