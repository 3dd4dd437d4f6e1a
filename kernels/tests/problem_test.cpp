// Problem lines: canonical round trips, defaults, derived shapes and every documented error.
#include "kernels/problem.h"

#include <gtest/gtest.h>

#include <random>

#include "kernels/common.h"
#include "kernels/ops/traits.h"

namespace lb {
namespace {

std::string error_of(const std::string& line) {
  try {
    parse_problem(line);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Problem, CanonicalLinesRoundTrip) {
  for (const char* line : {
           "dense mb=32 ic=4096 oc=4096 dt=f32 relu=none",
           "dense mb=1 ic=1 oc=1 dt=i8 relu=separate name=fc8",
           "conv2d mb=32 ic=64 ih=56 iw=56 oc=64 kh=3 kw=3 sh=1 ph=1 g=1 dt=f32 relu=fused",
           "conv2d mb=1 ic=6 ih=9 iw=9 oc=9 kh=3 kw=1 sh=1 sw=2 ph=1 pw=0 g=3 dt=bf16 relu=inplace",
           "conv2d mb=1 ic=8 ih=12 iw=12 oc=8 kh=3 kw=3 sh=1 ph=2 dh=2 g=1 dt=f16 relu=none",
           "conv2d mb=1 ic=8 ih=12 iw=12 oc=8 kh=3 kw=3 sh=1 ph=2 dh=2 dw=1 g=8 dt=tf32 relu=none",
           "lstm mb=64 t=50 ic=512 hc=512 l=2 dt=bf16 relu=none",
           "dense mb=64 ic=4096 oc=4096 dt=f32 relu=inplace dir=bwd_w",
           "conv2d mb=2 ic=8 ih=9 iw=9 oc=8 kh=3 kw=3 sh=1 ph=1 g=8 dt=bf16 relu=none dir=train name=dw1",
           "lstm mb=2 t=3 ic=4 hc=5 l=1 dt=f32 relu=none dir=bwd",
       }) {
    const Problem p = parse_problem(line);
    EXPECT_EQ(print(p), line);
    EXPECT_EQ(parse_problem(print(p)), p);
  }
}

TEST(Problem, KeysInAnyOrderAndDefaults) {
  const Problem p = parse_problem("conv2d  kw=3 kh=3 oc=16 iw=10 ih=10 ic=8 mb=2   ph=1");
  const Conv2d& c = p.conv();
  EXPECT_EQ(c.sh, 1);
  EXPECT_EQ(c.sw, 1);
  EXPECT_EQ(c.pw, 1);  // defaults to ph
  EXPECT_EQ(c.dh, 1);
  EXPECT_EQ(c.dw, 1);
  EXPECT_EQ(c.g, 1);
  EXPECT_EQ(p.dt, DType::f32);
  EXPECT_EQ(p.relu, Relu::none);
  EXPECT_EQ(print(p), "conv2d mb=2 ic=8 ih=10 iw=10 oc=16 kh=3 kw=3 sh=1 ph=1 g=1 dt=f32 relu=none");
  EXPECT_EQ(parse_problem("lstm mb=1 t=2 ic=3 hc=4").lstm().l, 1);
}

// dir= is benchdnn's pass; fwd, the default, is not printed, so forward lines (and the
// case names and results files made from them) read as before; every other pass is.
TEST(Problem, PassIsPrintedWhenNotTheForward) {
  const Problem fwd = parse_problem("dense mb=2 ic=3 oc=4 dir=fwd");
  EXPECT_EQ(fwd.pass, Pass::fwd);
  EXPECT_EQ(print(fwd), "dense mb=2 ic=3 oc=4 dt=f32 relu=none");
  EXPECT_EQ(fwd, parse_problem("dense mb=2 ic=3 oc=4"));
  for (Pass pass : kAllPasses) {
    const Problem p = with_pass(fwd, pass);
    EXPECT_EQ(p.pass, pass);
    EXPECT_EQ(parse_problem(print(p)), p) << print(p);
    EXPECT_EQ(print(p).find(" dir=") != std::string::npos, pass != Pass::fwd) << print(p);
    EXPECT_EQ(short_name(p), short_name(fwd));  // the pass goes into case names separately
  }
  EXPECT_NE(parse_problem("dense mb=2 ic=3 oc=4 dir=bwd_d"), fwd);
  // An LSTM has no separate data or weight gradient: the problem line says so, with_pass too.
  for (const char* pass : {"bwd_d", "bwd_w"}) {
    const std::string line = std::string("lstm mb=1 t=2 ic=3 hc=4 dir=") + pass;
    EXPECT_EQ(error_of(line), std::string("lstm: dir=") + pass +
                                  ": an LSTM's data and weight gradients come out of one pass back through "
                                  "time; use dir=bwd");
  }
  EXPECT_THROW(with_pass(parse_problem("lstm mb=1 t=2 ic=3 hc=4"), Pass::bwd_w), Error);
  EXPECT_EQ(with_batch(parse_problem("conv2d mb=1 ic=4 ih=5 iw=5 oc=4 kh=3 kw=3 dir=bwd_d"), 7).pass,
            Pass::bwd_d);
  EXPECT_EQ(parse_pass("fwd_train"), Pass::fwd_train);
  EXPECT_THROW(parse_pass("backward"), Error);
}

TEST(Problem, RandomProblemsRoundTrip) {
  std::mt19937 rng(7);
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int i = 0; i < 2000; ++i) {
    Problem p;
    p.dt = kAllDTypes[pick(0, 5)];
    p.relu = kAllRelus[pick(0, 3)];
    p.pass = kAllPasses[pick(0, 5)];
    if (pick(0, 1)) p.name = "layer_" + std::to_string(i);
    switch (pick(0, 2)) {
      case 0:
        p.shape = Dense{pick(1, 64), pick(1, 300), pick(1, 300)};
        break;
      case 1: {
        Conv2d c;
        c.g = pick(1, 4);
        c.mb = pick(1, 4);
        c.ic = c.g * pick(1, 8);
        c.oc = c.g * pick(1, 8);
        c.kh = pick(1, 5);
        c.kw = pick(1, 5);
        c.sh = pick(1, 3);
        c.sw = pick(1, 3);
        c.ph = pick(0, 2);
        c.pw = pick(0, 2);
        c.dh = pick(1, 2);
        c.dw = pick(1, 2);
        c.ih = (c.kh - 1) * c.dh + 1 + pick(0, 20);
        c.iw = (c.kw - 1) * c.dw + 1 + pick(0, 20);
        p.shape = c;
        break;
      }
      default:
        p.shape = Lstm{pick(1, 64), pick(1, 50), pick(1, 300), pick(1, 300), pick(1, 3)};
    }
    if (p.op() == Op::lstm && (p.pass == Pass::bwd_d || p.pass == Pass::bwd_w)) p.pass = Pass::bwd;
    const std::string line = print(p);
    ASSERT_EQ(parse_problem(line), p) << line;
    ASSERT_EQ(print(parse_problem(line)), line);
  }
}

TEST(Problem, DerivedShapes) {
  const Problem c = parse_problem("conv2d mb=1 ic=3 ih=224 iw=224 oc=64 kh=11 kw=11 sh=4 ph=2");
  EXPECT_EQ(output_dims(c), (std::vector<int64_t>{1, 64, 55, 55}));
  const Problem d = parse_problem("conv2d mb=1 ic=8 ih=12 iw=12 oc=8 kh=3 kw=3 ph=2 dh=2");
  EXPECT_EQ(output_dims(d), (std::vector<int64_t>{1, 8, 12, 12}));
  EXPECT_TRUE(parse_problem("conv2d mb=1 ic=32 ih=8 iw=8 oc=32 kh=3 kw=3 g=32").conv().depthwise());
  EXPECT_FALSE(parse_problem("conv2d mb=1 ic=32 ih=8 iw=8 oc=64 kh=3 kw=3 g=32").conv().depthwise());
  EXPECT_EQ(output_dims(parse_problem("dense mb=5 ic=7 oc=3")), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(output_dims(parse_problem("lstm mb=4 t=9 ic=7 hc=3 l=2")), (std::vector<int64_t>{9, 4, 3}));
  EXPECT_EQ(with_batch(parse_problem("dense mb=5 ic=7 oc=3"), 64).batch(), 64);
  EXPECT_EQ(short_name(parse_problem("dense mb=5 ic=7 oc=3 relu=fused")), "mb5ic7oc3");
  EXPECT_EQ(short_name(parse_problem("dense mb=5 ic=7 oc=3 name=fc6")), "fc6");
}

TEST(Problem, WithBatchChecksWhatAProblemLineChecks) {
  const Problem c = parse_problem("conv2d mb=1 ic=6 ih=9 iw=9 oc=9 kh=3 kw=1 sw=2 ph=1 pw=0 g=3 name=c1");
  EXPECT_EQ(with_batch(c, 5),
            parse_problem("conv2d mb=5 ic=6 ih=9 iw=9 oc=9 kh=3 kw=1 sw=2 ph=1 pw=0 g=3 name=c1"));
  // It once set mb unchecked: `analyze LINE --batch 9223372036854775807` then overflowed
  // model()'s int64 MACs (UBSan, in the sanitizer build of the CLI).
  auto error_of_batch = [](const std::string& line, int64_t mb) -> std::string {
    try {
      with_batch(parse_problem(line), mb);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(error_of_batch("dense mb=1 ic=4096 oc=4096", INT64_MAX),
            "dense: mb=9223372036854775807: must be <= 2147483647");
  EXPECT_EQ(error_of_batch("dense mb=1 ic=4096 oc=4096", 0), "dense: mb=0: must be >= 1");
  EXPECT_EQ(error_of_batch("dense mb=1 ic=16777216 oc=16777216", 32768),
            "dense: problem too large (more than 2^62 elements or MACs)");
}

TEST(Problem, ErrorsNameTheTokenAndWhatWasExpected) {
  EXPECT_EQ(error_of("conv2d mb=1 ic=3 ih=8 iw=8 oc=4 kh=0 kw=3"), "conv2d: kh=0: must be >= 1");
  EXPECT_EQ(error_of("conv2d mb=1 ic=3 ih=8 iw=8 oc=4 kh=3 kw=3 ph=-1"), "conv2d: ph=-1: must be >= 0");
  EXPECT_EQ(error_of("dense mb=abc ic=1 oc=1"), "dense: mb=abc: expected an integer");
  EXPECT_EQ(error_of("dense mb=1.5 ic=1 oc=1"), "dense: mb=1.5: expected an integer");
  EXPECT_EQ(error_of("dense mb= ic=1 oc=1"), "dense: mb=: expected an integer");
  EXPECT_EQ(error_of("dense mb=99999999999999999999 ic=1 oc=1"),
            "dense: mb=99999999999999999999: must be <= 2147483647");
  EXPECT_EQ(error_of("dense mb=2147483648 ic=1 oc=1"), "dense: mb=2147483648: must be <= 2147483647");
  EXPECT_EQ(error_of("dense ic=1 oc=1"), "dense: missing mb= (required: mb ic oc)");
  EXPECT_EQ(error_of("dense mb=1 ic=1 oc=1 kh=3"),
            "dense: 'kh=3': unknown key; expected one of mb ic oc dt relu name");
  EXPECT_EQ(error_of("dense mb=1 mb=2 ic=1 oc=1"), "dense: mb=2: mb given twice");
  EXPECT_EQ(error_of("dense mb=1 ic=1 oc=1 dt=f33"),
            "dense: dt=f33: expected one of f32 tf32 f16 bf16 i8 f8");
  EXPECT_EQ(error_of("dense mb=1 ic=1 oc=1 relu=yes"),
            "dense: relu=yes: expected one of none separate inplace fused relu6");
  EXPECT_EQ(error_of("dense mb=1 ic=1 oc=1 name=a/b"),
            "dense: name=a/b: expected letters, digits, '_', '.' or '-'");
  EXPECT_EQ(error_of("dense mb=1 ic=1 oc"), "dense: 'oc': expected key=value");
  EXPECT_EQ(error_of("matmul m=1"),
            "'matmul': unknown op; expected dense, conv2d, lstm, pool2d, add or softmax");
  EXPECT_EQ(error_of("   "), "empty problem line; expected '<op> key=value ...'");
  EXPECT_EQ(error_of("conv2d mb=1 ic=6 ih=8 iw=8 oc=4 kh=3 kw=3 g=4"),
            "conv2d: g=4: must divide ic=6 and oc=4");
  EXPECT_EQ(error_of("conv2d mb=1 ic=3 ih=4 iw=8 oc=4 kh=3 kw=3 dh=2"),
            "conv2d: kh=3: dilated filter (5) is larger than the padded input (ih + 2*ph = 4)");
  EXPECT_EQ(error_of("dense mb=2147483647 ic=2147483647 oc=2147483647"),
            "dense: problem too large (more than 2^62 elements or MACs)");
  EXPECT_EQ(error_of("lstm mb=1 t=0 ic=1 hc=1"), "lstm: t=0: must be >= 1");
}

// Every size product is checked before anything computes it: each argument's elements
// (whose bytes would overflow int64 at 2^61) as well as the MACs.
TEST(Problem, EveryTensorIsBounded) {
  EXPECT_EQ(error_of("dense mb=2147483647 ic=2147483647 oc=1"),
            "dense: problem too large: src has 2^62.0 elements, more than 2^48");
  EXPECT_EQ(error_of("dense mb=1 ic=2147483647 oc=2147483647"),
            "dense: problem too large: wei has 2^62.0 elements, more than 2^48");
  EXPECT_EQ(error_of("conv2d mb=1 ic=1 ih=1 iw=1 oc=2147483647 kh=1 kw=2147483647 pw=1073741823"),
            "conv2d: problem too large: wei has 2^62.0 elements, more than 2^48");
  EXPECT_EQ(error_of("lstm mb=1 t=1 ic=2147483647 hc=2147483647"),
            "lstm: problem too large (more than 2^62 elements or MACs)");
  // A stride that hides a huge padding from the output's size.
  EXPECT_EQ(
      error_of("conv2d mb=1 ic=1 ih=1 iw=1 oc=1 kh=1 kw=1 sh=2147483647 ph=1073741823"),
      "conv2d: ph=1073741823 pw=1073741823: the padded input has 2^62.0 elements per sample, more than 2^48");
  // The crash: a batch the parser takes, 2^41 elements of i8 (2 TiB).
  const Problem big = parse_problem("conv2d mb=2147483647 ic=16 ih=8 iw=8 oc=16 kh=3 kw=3 ph=1 dt=i8");
  EXPECT_EQ(big.batch(), 2147483647);
  EXPECT_EQ(output_dims(big), (std::vector<int64_t>{2147483647, 16, 8, 8}));
}

// Each op's traits agree with themselves: its probes are problems of that op that
// round-trip, and every argument's batch axis lies within its dims and holds mb.
TEST(OpTraits, ProbesAndBatchAxesAgree) {
  for (Op op : kAllOps) {
    const OpTraits& t = traits(op);
    EXPECT_EQ(t.op, op);
    EXPECT_EQ(t.name, name(op));
    EXPECT_FALSE(t.probes.empty()) << t.name;
    for (std::string_view line : t.probes) {
      const Problem p = parse_problem(line);
      EXPECT_EQ(p.op(), op) << line;
      EXPECT_EQ(parse_problem(print(p)), p) << line;
      std::vector<ArgSpec> args = t.inputs;
      args.push_back(t.output);
      for (const ArgSpec& a : args) {
        if (a.batch_axis < 0) continue;
        const std::vector<int64_t> dims = a.dims(p);
        ASSERT_LT(size_t(a.batch_axis), dims.size()) << line << " " << name(a.arg);
        EXPECT_EQ(dims[a.batch_axis], p.batch()) << line << " " << name(a.arg);
      }
    }
  }
}

}  // namespace
}  // namespace lb
