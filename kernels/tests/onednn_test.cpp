// The onednn backend: what it must cover (every conformance shape in each dtype this CPU
// has optimised kernels for), the reasons it declines with, and what details() and
// scratch_bytes() report. Every onednn kernel against the reference: conformance_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/data.h"
#include "kernels/tests/conformance.h"

namespace lb {
namespace {

// The dtypes oneDNN has optimised kernels for on this CPU; elsewhere they may be declined.
std::vector<DType> required_dtypes() {
  std::vector<DType> dts = {DType::f32};
  if (__builtin_cpu_supports("avx512bf16")) dts.push_back(DType::bf16);
  if (__builtin_cpu_supports("avx512vnni")) dts.push_back(DType::i8);
  return dts;
}

// Some onednn kernel takes every conformance problem in each dtype this CPU has optimised
// kernels for (the conformance test verifies what it takes), but the LSTMs it declines by
// design (see UnsupportedCombinationsAreSkippedWithAReason): i8, and relu=fused; and i8
// pools, adds and softmaxes (our i8 output is f32; oneDNN's writes its input's type), and a
// softmax with relu=fused.
TEST(Onednn, TakesEveryConformanceProblemInTheDtypesThisCpuHas) {
  for (Problem p : load_suite("conformance"))
    for (DType dt : required_dtypes()) {
      if (p.op() == Op::lstm && (dt == DType::i8 || p.relu == Relu::fused)) continue;
      if ((p.op() == Op::pool2d || p.op() == Op::add || p.op() == Op::softmax) && dt == DType::i8) continue;
      if (p.op() == Op::softmax && p.relu == Relu::fused) continue;  // oneDNN 2.6's softmax takes no post-op
      p.dt = dt;
      EXPECT_GT(kernels_taking("onednn", p), 0) << "no onednn kernel takes " << print(p);
    }
}

TEST(Onednn, UnsupportedCombinationsAreSkippedWithAReason) {
  const struct {
    const char* line;
    const char* kernel;
    const char* reason;
  } cases[] = {
      {"dense mb=4 ic=8 oc=8 dt=f8", "dense.onednn.default", "onednn: dt=f8 not supported"},
      {"conv2d mb=1 ic=4 ih=5 iw=5 oc=4 kh=3 kw=3 dt=tf32", "conv2d.onednn.default",
       "onednn: dt=tf32 not supported"},
      {"lstm mb=2 t=3 ic=4 hc=4 dt=i8", "lstm.onednn.default", "onednn: dt=i8 not supported"},
      {"lstm mb=2 t=3 ic=4 hc=4 relu=fused", "lstm.onednn.default", "onednn: relu=fused not supported"},
  };
  for (const auto& c : cases) {
    const KernelEntry* k = registry().find(c.kernel);
    ASSERT_NE(k, nullptr) << c.kernel;
    const Verdict v = check_kernel(*k, parse_problem(c.line), 1);
    EXPECT_EQ(v.status, Status::unsupported) << c.line;
    EXPECT_EQ(v.reason.rfind(c.reason, 0), 0u) << c.line << ": " << v.reason;
  }
}

// oneDNN's LSTM backward adds into dW, dW_h and db: timed runs repeated without rearm()
// between them add up (verification fails); with it, each run is the whole answer. In
// bf16 too, where this CPU has it (its gradients pass under bf16's allowance).
TEST(Onednn, LstmBackwardIsRearmedBetweenRuns) {
  const KernelEntry* k = registry().find("lstm.onednn.default");
  ASSERT_NE(k, nullptr);
  std::vector<std::string> lines = {"lstm mb=3 t=4 ic=6 hc=8 l=2 dir=bwd",
                                    "lstm mb=3 t=4 ic=8 hc=8 dir=train relu=inplace"};
  const std::vector<DType> dts = required_dtypes();
  if (std::find(dts.begin(), dts.end(), DType::bf16) != dts.end())
    lines.push_back("lstm mb=3 t=5 ic=6 hc=8 l=2 dt=bf16 dir=train relu=separate");
  for (const std::string& line : lines)
    for (bool rearm : {true, false}) {
      CaseSession s(*k, parse_problem(line));
      s.allocate(1);
      s.prepare();
      for (int i = 0; i < 3; ++i) {
        if (i > 0 && rearm) s.rearm();
        s.run();
      }
      s.finish();
      const Verdict v = s.verify();
      EXPECT_EQ(v.status == Status::passed, rearm)
          << line << (rearm ? " rearmed: " : " not rearmed: ") << v.reason;
    }
}

TEST(Onednn, ReportsTheImplementationAndItsBuffers) {
  for (const char* id : {"dense.onednn.default", "conv2d.onednn.default"}) {
    const KernelEntry* k = registry().find(id);
    ASSERT_NE(k, nullptr) << id;
    const bool dense = k->op_name() == "dense";
    const Problem p = parse_problem(dense ? "dense mb=4 ic=64 oc=32 relu=separate"
                                          : "conv2d mb=1 ic=16 ih=8 iw=8 oc=16 kh=3 kw=3 ph=1");
    TensorSet ts = make_tensors(p);
    fill_inputs(ts, p, 1);
    auto kernel = k->make();
    for (int round = 0; round < 2; ++round) {  // release() leaves it ready to be prepared again
      kernel->prepare(p, ts, {});
      // e.g. "inner product (W AB16b64a) brgemm:avx512_core; relu separate jit:avx512_core"
      const std::string details = kernel->details();
      EXPECT_NE(details.find(dense ? "inner product" : "convolution"), std::string::npos) << details;
      if (dense) {
        EXPECT_NE(details.find("relu separate"), std::string::npos) << details;
      }
      // Reordered weights or a scratchpad: a kernel holding nothing would be suspicious here.
      EXPECT_GT(kernel->scratch_bytes(), 0u) << details;
      kernel->run(ts);
      kernel->release();
      EXPECT_EQ(kernel->details(), "");
    }
  }
}

}  // namespace
}  // namespace lb
