// The onednn backend against the reference on awkward shapes (sizes 1, 3, 17, 1023, prime
// channel counts, stride 2, dilation 2, negative bottom padding, groups, depthwise, single-step
// and stacked LSTMs with I != H and I = H), in every dtype it claims, on one and two threads;
// unsupported combinations are skipped with a reason; details() and scratch_bytes() report.
#include <gtest/gtest.h>

#include "kernels/verify.h"

namespace lb {
namespace {

const char* const kDense[] = {
    "dense mb=1 ic=1 oc=1",
    "dense mb=3 ic=17 oc=5 relu=fused",
    "dense mb=17 ic=1023 oc=3 relu=separate",
    "dense mb=2 ic=31 oc=1023 relu=inplace",
    "dense mb=1 ic=1023 oc=257 relu=fused",
};

const char* const kConv2d[] = {
    "conv2d mb=1 ic=1 ih=1 iw=1 oc=1 kh=1 kw=1",
    "conv2d mb=1 ic=3 ih=17 iw=17 oc=13 kh=3 kw=3 ph=1",
    "conv2d mb=2 ic=17 ih=15 iw=13 oc=5 kh=3 kw=3 sh=2 ph=1 relu=fused",
    "conv2d mb=1 ic=4 ih=10 iw=10 oc=4 kh=3 kw=3 sh=2",  // bottom/right padding -1
    "conv2d mb=1 ic=8 ih=12 iw=12 oc=7 kh=3 kw=3 ph=2 dh=2 relu=inplace",
    "conv2d mb=1 ic=3 ih=35 iw=35 oc=16 kh=11 kw=11 sh=4 ph=2",
    "conv2d mb=1 ic=6 ih=9 iw=9 oc=9 kh=3 kw=1 sh=1 sw=2 ph=1 pw=0 g=3 relu=separate",
    "conv2d mb=2 ic=13 ih=10 iw=10 oc=13 kh=3 kw=3 ph=1 g=13 relu=fused",
    "conv2d mb=1 ic=17 ih=11 iw=11 oc=17 kh=3 kw=3 sh=2 ph=1 g=17",
    "conv2d mb=2 ic=16 ih=7 iw=7 oc=24 kh=1 kw=1",
};

const char* const kLstm[] = {
    "lstm mb=1 t=1 ic=1 hc=1 l=1",
    "lstm mb=1 t=1 ic=3 hc=5 l=1",
    "lstm mb=3 t=4 ic=17 hc=8 l=3 relu=inplace",  // layer 0, then layers 1-2 as one primitive
    "lstm mb=2 t=5 ic=16 hc=16 l=2 relu=separate",
    "lstm mb=1 t=6 ic=17 hc=37 l=2",
};

// The dtypes oneDNN has optimised kernels for on this CPU; elsewhere they may be skipped.
std::vector<DType> required_dtypes() {
  std::vector<DType> dts = {DType::f32};
  if (__builtin_cpu_supports("avx512bf16")) dts.push_back(DType::bf16);
  if (__builtin_cpu_supports("avx512vnni")) dts.push_back(DType::i8);
  return dts;
}

// Checks every onednn kernel of p's op; returns how many verified it (rather than skipped).
int check_all(const Problem& p, const Context& ctx = {}) {
  int verified = 0;
  for (const KernelEntry& k : registry().kernels()) {
    if (k.backend() != "onednn" || k.op_name() != name(p.op())) continue;
    const Verdict v = check_kernel(k, p, 7, ctx);
    if (v.status == Status::skipped) {
      EXPECT_EQ(v.reason.rfind("onednn: ", 0), 0u) << k.info.id << ": " << v.reason;
      EXPECT_EQ(v.reason.find('\n'), std::string::npos) << v.reason;
      continue;
    }
    EXPECT_TRUE(v.status == Status::passed || v.status == Status::mistrusted)
        << k.info.id << " on " << print(p) << ": " << v.reason << "\n"
        << v.repro;
    ++verified;
  }
  return verified;
}

void check_lines(const std::vector<const char*>& lines, const std::vector<DType>& dtypes,
                 const Context& ctx = {}) {
  for (DType dt : {DType::f32, DType::bf16, DType::i8})
    for (const char* line : lines) {
      Problem p = parse_problem(line);
      p.dt = dt;
      const int verified = check_all(p, ctx);
      const bool required = std::find(dtypes.begin(), dtypes.end(), dt) != dtypes.end();
      if (required) {
        EXPECT_GT(verified, 0) << "no onednn kernel verified " << print(p);
      }
    }
}

TEST(Onednn, DenseMatchesTheReference) {
  check_lines({std::begin(kDense), std::end(kDense)}, required_dtypes());
}

TEST(Onednn, Conv2dMatchesTheReference) {
  check_lines({std::begin(kConv2d), std::end(kConv2d)}, required_dtypes());
}

TEST(Onednn, LstmMatchesTheReference) {
  // i8 LSTMs are declined (no reference quantisation), so only f32 and bf16 are required.
  std::vector<DType> dts = required_dtypes();
  std::erase(dts, DType::i8);
  check_lines({std::begin(kLstm), std::end(kLstm)}, dts);
}

TEST(Onednn, TwoThreadsMatchTheReference) {
  const Context two{2};
  for (const char* line :
       {"dense mb=17 ic=1023 oc=3", "conv2d mb=2 ic=17 ih=15 iw=13 oc=5 kh=3 kw=3 sh=2 ph=1",
        "conv2d mb=2 ic=13 ih=10 iw=10 oc=13 kh=3 kw=3 ph=1 g=13", "lstm mb=3 t=4 ic=17 hc=8 l=3"})
    EXPECT_GT(check_all(parse_problem(line), two), 0) << line;
}

TEST(Onednn, UnsupportedCombinationsAreSkippedWithAReason) {
  const struct {
    const char* line;
    const char* kernel;
    const char* reason;
  } cases[] = {
      {"dense mb=4 ic=8 oc=8 dt=f8", "dense.onednn.default", "onednn: f8 not supported"},
      {"conv2d mb=1 ic=4 ih=5 iw=5 oc=4 kh=3 kw=3 dt=tf32", "conv2d.onednn.default",
       "onednn: tf32 not supported"},
      {"lstm mb=2 t=3 ic=4 hc=4 dt=i8", "lstm.onednn.default", "onednn: i8 lstm not supported"},
      {"lstm mb=2 t=3 ic=4 hc=4 relu=fused", "lstm.onednn.default", "onednn: relu=fused not supported"},
  };
  for (const auto& c : cases) {
    const KernelEntry* k = registry().find(c.kernel);
    ASSERT_NE(k, nullptr) << c.kernel;
    const Verdict v = check_kernel(*k, parse_problem(c.line), 1);
    EXPECT_EQ(v.status, Status::skipped) << c.line;
    EXPECT_EQ(v.reason.rfind(c.reason, 0), 0u) << c.line << ": " << v.reason;
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
