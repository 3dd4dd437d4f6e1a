// conv2d.cpu.depthwise against the reference on the shapes that reach the edges of its
// paths (kernels/cpu/conv2d_depthwise.cpp): widths below, at and not a multiple of the
// vector width, planes shorter than a pass, stride 2 with odd widths, padding 0-2, the
// shapes its 3×3 fast paths decline (dilation, other kernel sizes, mixed strides), and
// ReLU fused, in place and separate; on one thread and two. Each runs on the ISA
// best_isa() picks ($LB_CPU_ISA forces one); the test also checks that MobileNet's
// depthwise shapes, and on AVX2 the shapes meant for the channels-as-lanes path (c8), take
// the path of that ISA meant for them.
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

// What prepare() reported in details() ("avx2, rows_s1, y non-temporal").
std::string details_of(const Problem& p) {
  std::unique_ptr<Kernel> k = depthwise().make();
  TensorSet ts = make_tensors(p);
  k->prepare(p, ts, Context{1});
  const std::string details = k->details();
  k->release();
  return details;
}

// The path prepare() chose ("rows_s1").
std::string path_of(const Problem& p) {
  const std::string details = details_of(p);
  const size_t from = details.find(", ") + 2;
  return details.substr(from, details.find(", ", from) - from);
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

// x and y past the caches with whole aligned blocks (Q % 8 = 0): the row-pass paths store y
// non-temporally on AVX2 (fenced before run() returns), with ReLU fused and not.
TEST(Depthwise, MatchesTheReferenceWithNonTemporalStores) {
  for (const char* line : {
           "conv2d mb=2 ic=64 ih=112 iw=112 oc=64 kh=3 kw=3 ph=1 g=64 relu=fused",
           "conv2d mb=4 ic=64 ih=112 iw=112 oc=64 kh=3 kw=3 sh=2 ph=1 g=64",
       }) {
    const Problem p = parse_problem(line);
    if (cpu::best_isa() == cpu::Isa::avx2) {
      EXPECT_NE(details_of(p).find("y non-temporal"), std::string::npos) << line << ": " << details_of(p);
    }
    for (int threads : {1, 2})
      EXPECT_TRUE(check_conforms(depthwise(), p, Context{threads})) << line;
  }
}

// The channels-as-lanes path (c8; AVX2, see pick_variant()): C a multiple of 8 and not (the
// channels past the last group of 8 take the row-pass or generic path), planes narrower
// than 8 (loads past the row, masked in the tensor's last row) and with under 8 outputs
// (stored one at a time), widths not a multiple of 8 (overlapping blocks), planes taller
// than one band (rows carried between bands, a shorter last band) and rows as wide as a
// band (one output row per band), padding 0 to 3, ReLU fused, in place and separate;
// stride 1 and 2; on one thread and two (C = 8 at batch 1 is one unit: one thread idle).
// On AVX2 each shape must take c8; elsewhere they check whatever path the ISA takes.
TEST(Depthwise, MatchesTheReferenceOnTheChannelLanesPath) {
  std::vector<std::string> lines;
  for (int c : {8, 13, 16, 24})
    for (int mb : {1, 2}) {
      const std::string head = "conv2d mb=" + std::to_string(mb) + " ic=" + std::to_string(c) + " ";
      const std::string tail = " oc=" + std::to_string(c) + " kh=3 kw=3 ph=1 g=" + std::to_string(c);
      for (const char* plane : {"ih=1 iw=1", "ih=2 iw=3", "ih=7 iw=7", "ih=5 iw=8", "ih=14 iw=14",
                                "ih=15 iw=9", "ih=28 iw=28", "ih=13 iw=60", "ih=3 iw=250"})
        lines.push_back(head + plane + tail);
      for (const char* plane : {"ih=1 iw=1", "ih=2 iw=3", "ih=7 iw=7", "ih=5 iw=8", "ih=14 iw=14",
                                "ih=15 iw=9", "ih=13 iw=15", "ih=2 iw=97"})
        lines.push_back(head + plane + tail + " sh=2");
    }
  for (const char* line : {
           "conv2d mb=1 ic=16 ih=13 iw=13 oc=16 kh=3 kw=3 ph=0 g=16",
           "conv2d mb=1 ic=16 ih=13 iw=21 oc=16 kh=3 kw=3 ph=2 pw=0 g=16",
           "conv2d mb=1 ic=16 ih=13 iw=15 oc=16 kh=3 kw=3 sh=2 ph=0 g=16",
           "conv2d mb=1 ic=16 ih=12 iw=16 oc=16 kh=3 kw=3 sh=2 ph=1 pw=3 g=16",
           "conv2d mb=1 ic=16 ih=14 iw=14 oc=16 kh=3 kw=3 sh=2 ph=0 g=16",
           "conv2d mb=2 ic=21 ih=14 iw=14 oc=21 kh=3 kw=3 ph=1 g=21 relu=fused",
           "conv2d mb=2 ic=21 ih=14 iw=14 oc=21 kh=3 kw=3 sh=2 ph=1 g=21 relu=fused",
           "conv2d mb=2 ic=16 ih=7 iw=7 oc=16 kh=3 kw=3 ph=1 g=16 relu=inplace",
           "conv2d mb=2 ic=16 ih=28 iw=28 oc=16 kh=3 kw=3 ph=1 g=16 relu=separate",
       })
    lines.push_back(line);
  const bool avx2 = cpu::best_isa() == cpu::Isa::avx2;
  for (const std::string& line : lines) {
    const Problem p = parse_problem(line);
    if (avx2) {
      EXPECT_EQ(path_of(p), "c8") << line;
    }
    for (int threads : {1, 2})
      EXPECT_TRUE(check_conforms(depthwise(), p, Context{threads})) << line;
  }
}

// conv2d.cpu.depthwise_blocked (nChw16c on AVX-512, nChw8c on AVX2 — the ctest
// unit_cpu_forced_avx2 runs this with LB_CPU_ISA=avx2 — converted in prepare() / finish()):
// C a multiple of the lanes and not (a zero-padded last group: 8, 13, 24 on 16 lanes),
// planes with no interior output (every tap column check taken) and with one, widths that
// leave a rest of kStep, padding 0 to 3 (rows of zeros above and below, outputs in the left
// and right padding), ReLU fused, in place and separate; stride 1 and 2; x and y in the
// caches and past them; one thread and two. Where the CPU lacks AVX2 it must decline every one.
TEST(Depthwise, BlockedMatchesTheReference) {
  const KernelEntry* blocked = registry().find("conv2d.cpu.depthwise_blocked");
  ASSERT_NE(blocked, nullptr);
  std::vector<std::string> lines;
  for (int c : {8, 13, 16, 24})
    for (int mb : {1, 2}) {
      const std::string head = "conv2d mb=" + std::to_string(mb) + " ic=" + std::to_string(c) + " ";
      const std::string tail = " oc=" + std::to_string(c) + " kh=3 kw=3 ph=1 g=" + std::to_string(c);
      for (const char* plane :
           {"ih=1 iw=1", "ih=2 iw=3", "ih=7 iw=7", "ih=5 iw=8", "ih=14 iw=14", "ih=15 iw=9", "ih=13 iw=60"})
        for (const char* stride : {"", " sh=2"})
          lines.push_back(head + plane + tail + stride);
    }
  for (const char* line : {
           "conv2d mb=1 ic=16 ih=13 iw=13 oc=16 kh=3 kw=3 ph=0 g=16",
           "conv2d mb=1 ic=16 ih=13 iw=21 oc=16 kh=3 kw=3 ph=2 pw=0 g=16",
           "conv2d mb=1 ic=16 ih=9 iw=11 oc=16 kh=3 kw=3 ph=3 pw=3 g=16",
           "conv2d mb=1 ic=16 ih=13 iw=15 oc=16 kh=3 kw=3 sh=2 ph=0 g=16",
           "conv2d mb=1 ic=16 ih=12 iw=16 oc=16 kh=3 kw=3 sh=2 ph=1 pw=3 g=16",
           "conv2d mb=1 ic=16 ih=14 iw=14 oc=16 kh=3 kw=3 sh=2 ph=0 g=16",
           "conv2d mb=2 ic=21 ih=14 iw=14 oc=21 kh=3 kw=3 ph=1 g=21 relu=fused",
           "conv2d mb=2 ic=21 ih=14 iw=14 oc=21 kh=3 kw=3 sh=2 ph=1 g=21 relu=inplace",
           "conv2d mb=2 ic=13 ih=7 iw=7 oc=13 kh=3 kw=3 ph=1 g=13 relu=separate",
           "conv2d mb=2 ic=16 ih=28 iw=28 oc=16 kh=3 kw=3 sh=2 ph=1 g=16 relu=separate",
           // x and y past the caches (the batch-32 regime), C % 8 ≠ 0 there too.
           "conv2d mb=2 ic=64 ih=112 iw=112 oc=64 kh=3 kw=3 ph=1 g=64 relu=fused",
           "conv2d mb=4 ic=60 ih=112 iw=112 oc=60 kh=3 kw=3 sh=2 ph=1 g=60 relu=separate",
       })
    lines.push_back(line);
  const bool avx2 = cpu::best_isa() != cpu::Isa::scalar;
  for (const std::string& line : lines)
    for (int threads : {1, 2})
      EXPECT_EQ(check_conforms(*blocked, parse_problem(line), Context{threads}), avx2) << line;
  // What it declines, with conv2d.cpu.depthwise taking it instead.
  for (const char* line : {"conv2d mb=1 ic=8 ih=9 iw=9 oc=8 kh=5 kw=5 ph=2 g=8",
                           "conv2d mb=1 ic=8 ih=9 iw=9 oc=8 kh=3 kw=3 dh=2 dw=2 ph=2 g=8",
                           "conv2d mb=1 ic=8 ih=9 iw=9 oc=8 kh=3 kw=3 sh=1 sw=2 ph=1 g=8"})
    EXPECT_FALSE(check_conforms(*blocked, parse_problem(line))) << line;
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
    // AVX2: c8 on the batch-1 planes of at most 28×28 (stride 1) or 14×14 (stride 2).
    const bool c8 = p.conv().mb == 1 && p.conv().ih * p.conv().iw <= (s2 ? 14 * 14 : 28 * 28);
    if (isa == cpu::Isa::avx2)
      want = c8 ? "c8" : s2 ? "rows_s2" : "rows_s1";
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
