// Backend `cuda` (our own kernels, cuda/own/) on a GPU: every kernel verified against the
// reference on small problems whose sizes are not tile multiples (1, 3, 17, 1023, partial
// K-tiles, image borders) in every ReLU mode, plus exact tile multiples. A kernel must
// check (not skip) every problem it is meant for; elsewhere it may only decline, with a
// one-line reason (check_conforms(), kernels/tests/conformance.h).
// Exit 77 (ctest: SKIPPED) where no GPU is usable (gpu_test_main.cpp) — these tests never
// pass without having run.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "kernels/tests/conformance.h"

namespace lb {
namespace {

std::vector<const KernelEntry*> own_kernels(Op op) {
  std::vector<const KernelEntry*> out;
  for (const auto& k : registry().kernels())
    if (k.backend() == "cuda" && k.op_name() == name(op)) out.push_back(&k);
  return out;
}

// Whether kernel `id` is meant to handle p (then it must check it, not skip it).
using Meant = std::function<bool(const std::string& id, const Problem& p)>;

void check_op(Op op, const std::vector<const char*>& lines, const std::vector<DType>& dtypes,
              const Meant& meant) {
  const auto kernels = own_kernels(op);
  ASSERT_FALSE(kernels.empty()) << "no " << name(op) << " kernel of backend cuda registered";
  for (const KernelEntry* k : kernels) {
    int checked = 0;
    for (const char* line : lines)
      for (DType dt : dtypes) {
        Problem p = parse_problem(line);
        p.dt = dt;
        const bool computed = check_conforms(*k, p);
        if (meant(k->info.id, p)) {
          EXPECT_TRUE(computed) << k->info.id << " declined " << print(p);
        }
        checked += computed;
      }
    EXPECT_GT(checked, 0) << k->info.id << " checked nothing";
  }
}

TEST(OwnCudaKernels, AllRegistered) {
  for (const char* id :
       {"dense.cuda.01_naive", "dense.cuda.02_coalesced", "dense.cuda.03_smem", "dense.cuda.04_reg1d",
        "dense.cuda.05_reg2d", "dense.cuda.06_vec", "dense.cuda.07_warptile", "dense.cuda.08_mma",
        "conv2d.cuda.implicit_gemm", "conv2d.cuda.depthwise", "lstm.cuda.default"})
    EXPECT_NE(registry().find(id), nullptr) << id;
}

TEST(OwnCudaKernels, Dense) {
  check_op(Op::dense,
           {"dense mb=1 ic=1 oc=1", "dense mb=3 ic=17 oc=1023 relu=separate",
            "dense mb=17 ic=1023 oc=3 relu=fused", "dense mb=1023 ic=3 oc=17 relu=inplace",
            "dense mb=17 ic=1024 oc=1023 relu=fused", "dense mb=130 ic=136 oc=260",
            "dense mb=256 ic=512 oc=256 relu=inplace", "dense mb=1 ic=8 oc=3 relu=fused",
            "dense mb=33 ic=200 oc=17 relu=separate", "dense mb=5 ic=20 oc=9 relu=fused"},
           {DType::f32, DType::f16, DType::bf16}, [](const std::string& id, const Problem& p) {
             if (id == "dense.cuda.08_mma") return p.dt != DType::f32 && p.dense().ic % 8 == 0;
             return p.dt == DType::f32;
           });
}

TEST(OwnCudaKernels, Conv2d) {
  check_op(Op::conv2d,
           {"conv2d mb=1 ic=1 ih=1 iw=1 oc=1 kh=1 kw=1",
            "conv2d mb=3 ic=17 ih=17 iw=17 oc=3 kh=3 kw=3 ph=1 relu=fused",
            "conv2d mb=2 ic=3 ih=33 iw=35 oc=17 kh=5 kw=3 sh=2 sw=1 ph=2 pw=1 dw=2 relu=separate",
            "conv2d mb=2 ic=17 ih=7 iw=9 oc=1023 kh=1 kw=1 relu=inplace",
            "conv2d mb=3 ic=6 ih=7 iw=7 oc=9 kh=1 kw=1 g=3 relu=fused",
            "conv2d mb=1 ic=8 ih=12 iw=12 oc=8 kh=3 kw=3 ph=2 dh=2",
            "conv2d mb=2 ic=64 ih=20 iw=20 oc=130 kh=3 kw=3 ph=1",
            "conv2d mb=2 ic=17 ih=33 iw=35 oc=17 kh=3 kw=3 sh=2 ph=1 g=17 relu=fused",
            "conv2d mb=1 ic=3 ih=1 iw=1023 oc=3 kh=1 kw=3 pw=1 g=3",
            "conv2d mb=1 ic=8 ih=17 iw=17 oc=8 kh=5 kw=5 ph=4 dh=2 g=8 relu=separate",
            "conv2d mb=3 ic=32 ih=40 iw=70 oc=32 kh=3 kw=3 ph=1 g=32 relu=inplace"},
           {DType::f32}, [](const std::string& id, const Problem& p) {
             if (id == "conv2d.cuda.depthwise") return p.conv().depthwise();
             return true;
           });
}

TEST(OwnCudaKernels, Lstm) {
  check_op(Op::lstm,
           {"lstm mb=1 t=1 ic=3 hc=5", "lstm mb=3 t=4 ic=17 hc=8 l=2 relu=separate",
            "lstm mb=5 t=7 ic=16 hc=16 l=3 relu=inplace", "lstm mb=17 t=3 ic=1023 hc=17 relu=fused",
            "lstm mb=33 t=2 ic=64 hc=130 l=2 relu=fused", "lstm mb=1 t=5 ic=1 hc=1023"},
           {DType::f32}, [](const std::string&, const Problem&) { return true; });
}

}  // namespace
}  // namespace lb
