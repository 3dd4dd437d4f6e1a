// Verification catches deliberately wrong kernels: unwritten outputs, small and large
// errors, a missing bias, NaN, inputs overwritten, exceptions; it mistrusts mostly-zero
// references; and it passes every CPU backend's correct kernels where cancellation
// leaves an output much smaller than the terms that make it.
#include "kernels/verify.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/case_session.h"
#include "kernels/common.h"
#include "kernels/model.h"
#include "kernels/ops/traits.h"
#include "kernels/registry.h"

namespace lb {
namespace {

enum class Flaw {
  none,
  skip_last,
  nudge,       // the last element of dst + `nudge`
  scale_last,  // the last element of dst × (1 + `nudge`)
  nudge_relu_dst,
  no_bias,  // y without b
  // y - b rounded to dst's storage before b is added back, as cuDNN's unfused path does;
  // declared (Kernel::rounds_before_bias) or not
  round_before_bias,
  round_before_bias_declared,
  // declared as rounding before the bias, and then the bias dropped or added twice
  no_bias_declared,
  double_bias_declared,
  nan,
  scribble_input,
  throws,
  ignore_relu
};

// The reference kernel with one deliberate flaw applied after it runs.
class Flawed final : public Kernel {
 public:
  Flawed(Flaw flaw, Op op, double nudge) : flaw_(flaw), nudge_(nudge), ref_(oracle(op).make()) {}
  std::string supports(const Problem& p) const override { return p.dt == DType::f8 ? "flawed: no f8" : ""; }
  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    problem_ = p;
    Problem q = p;
    if (flaw_ == Flaw::ignore_relu) q.relu = Relu::none;
    ref_->prepare(q, ts, ctx);
  }
  void run(TensorSet& ts) override {
    if (flaw_ == Flaw::throws) throw Error("boom");
    ref_->run(ts);
    Tensor& dst = ts.at(Arg::dst);
    const int64_t last = dst.elements() - 1;
    switch (flaw_) {
      case Flaw::skip_last: {
        Tensor poisoned(dst.storage(), {1});
        poison(poisoned);
        std::memcpy(static_cast<char*>(dst.data()) + last * size_of(dst.storage()), poisoned.data(),
                    size_of(dst.storage()));
        break;
      }
      case Flaw::nudge:
        dst.store(last, dst.load(last) + nudge_);
        break;
      case Flaw::scale_last:
        dst.store(last, dst.load(last) * (1.0 + nudge_));
        break;
      case Flaw::no_bias:
      case Flaw::round_before_bias:
      case Flaw::round_before_bias_declared:
      case Flaw::no_bias_declared:
      case Flaw::double_bias_declared: {
        // y - b rounded to dst's storage (the sum), then b added back (none, once or twice).
        const Tensor& b = ts.at(Arg::bias);
        const double times = flaw_ == Flaw::no_bias || flaw_ == Flaw::no_bias_declared ? 0.0
                             : flaw_ == Flaw::double_bias_declared                     ? 2.0
                                                                                       : 1.0;
        Tensor sum(dst.storage(), {1});
        for (int64_t i = 0; i <= last; ++i) {
          const double bias = b.load(traits(problem_.op()).bias_index(problem_, i));
          sum.store(0, dst.load(i) - bias);
          dst.store(i, sum.load(0) + times * bias);
        }
        break;
      }
      case Flaw::nudge_relu_dst: {
        Tensor& r = ts.at(Arg::relu_dst);
        r.store(0, r.load(0) + nudge_);
        break;
      }
      case Flaw::nan:
        dst.store(0, std::nan(""));
        break;
      case Flaw::scribble_input:
        ts.at(Arg::src).store(0, 0.125);
        break;
      default:
        break;
    }
  }

  bool rounds_before_bias() const override {
    return flaw_ == Flaw::round_before_bias_declared || flaw_ == Flaw::no_bias_declared ||
           flaw_ == Flaw::double_bias_declared;
  }

 private:
  Problem problem_;
  Flaw flaw_;
  double nudge_;
  std::unique_ptr<Kernel> ref_;
};

KernelEntry flawed(Flaw flaw, Op op = Op::dense, double nudge = 0.5) {
  return {{std::string(name(op)) + ".test.flawed", Device::cpu, "ref with a flaw", "f64"},
          [=] { return std::make_unique<Flawed>(flaw, op, nudge); }};
}

const Problem kDense = parse_problem("dense mb=4 ic=64 oc=33 dt=f32 relu=none");

TEST(Verify, CorrectKernelPassesWithARepro) {
  for (const char* line : {"dense mb=4 ic=64 oc=33", "conv2d mb=2 ic=4 ih=7 iw=7 oc=6 kh=3 kw=3 ph=1 g=2",
                           "lstm mb=2 t=3 ic=4 hc=5 l=2 relu=none"}) {
    const Problem p = parse_problem(line);
    const Verdict v = check_kernel(flawed(Flaw::none, p.op()), p, 1);
    EXPECT_EQ(v.status, Status::passed) << line << ": " << v.reason;
    // The reference's own output differs from its exact value by the f32 rounding alone.
    EXPECT_LE(v.max_error, v.tolerance / 2) << line;
    EXPECT_NE(v.repro.find("layerbench check --kernel " + std::string(name(p.op())) +
                           ".test.flawed --problem \"" + print(p) + "\" --seed 1"),
              std::string::npos);
  }
}

TEST(Verify, UnwrittenOutputFails) {
  const Verdict v = check_kernel(flawed(Flaw::skip_last), kDense, 1);
  EXPECT_EQ(v.status, Status::failed);
  EXPECT_EQ(v.reason, "dst: 1 of 132 elements never written (first at index 131)");
}

TEST(Verify, WrongValueFailsAndNamesTheElement) {
  const Verdict v = check_kernel(flawed(Flaw::nudge), kDense, 1);
  EXPECT_EQ(v.status, Status::failed);
  EXPECT_EQ(v.reason.rfind("dst[131] = ", 0), 0u) << v.reason;
  EXPECT_NE(v.reason.find("> allowed"), std::string::npos);
  EXPECT_FALSE(v.repro.empty());
}

TEST(Verify, SmallButRealErrorsFail) {
  // One element off by 1e-4 relative in an f32 product of 16 terms (about 40 times its
  // allowed error: the element is not a cancellation), and a bias left out.
  const Problem p = parse_problem("dense mb=8 ic=16 oc=64 dt=f32 relu=none");
  const Verdict off = check_kernel(flawed(Flaw::scale_last, Op::dense, 1e-4), p, 1);
  EXPECT_EQ(off.status, Status::failed) << off.reason;
  EXPECT_EQ(off.reason.rfind("dst[511] = ", 0), 0u) << off.reason;
  const Verdict no_bias = check_kernel(flawed(Flaw::no_bias), p, 1);
  EXPECT_EQ(no_bias.status, Status::failed) << no_bias.reason;
}

TEST(Verify, RoundingBeforeTheBiasIsAllowedWhereTheKernelDeclaresIt) {
  // The sum rounded to bf16, then the bias added and rounded again: errors of a unit of the
  // sum, beyond the reference's one rounding where y is much smaller than the bias (cuDNN's
  // unfused convolutions in bf16 on the H200: e.g. 0.0024 against 2.2e-5 allowed).
  const Problem p = parse_problem("dense mb=16 ic=128 oc=64 dt=bf16 relu=none");
  const Verdict undeclared = check_kernel(flawed(Flaw::round_before_bias), p, 1);
  EXPECT_EQ(undeclared.status, Status::failed) << undeclared.reason;
  const Verdict declared = check_kernel(flawed(Flaw::round_before_bias_declared), p, 1);
  EXPECT_EQ(declared.status, Status::passed) << declared.reason;
  // The allowance grows by one unit of the output's storage per unit of the sum y - b.
  const TensorSet ts = make_tensors(p);
  const Tensor& out = ts.at(Arg::dst);
  EXPECT_DOUBLE_EQ(allowance(p, out, true).per_sum, unit_roundoff(Storage::bf16));
  EXPECT_DOUBLE_EQ(allowance(p, out, true).per_magnitude, allowance(p, out).per_magnitude);
  EXPECT_DOUBLE_EQ(allowance(p, out).per_sum, 0.0);
}

TEST(Verify, ADeclaredRoundingBeforeTheBiasStillCatchesAWrongBias) {
  // Deep sums in bf16, where an allowance of a unit times the magnitude Σ|x·w| was larger
  // than the bias itself (a dropped bias, off by 0.98, passed against 1.98 allowed at K =
  // 2048; 0.97 against 0.98 at 2304): a kernel that rounds the sum, then drops the bias or
  // adds it twice, fails; one that adds it once passes. AlexNet conv4's depth and more.
  for (const char* line : {"dense mb=8 ic=2048 oc=64 dt=bf16", "dense mb=4 ic=4096 oc=32 dt=f16",
                           "conv2d mb=2 ic=256 ih=6 iw=6 oc=16 kh=3 kw=3 ph=1 dt=bf16"}) {
    const Problem p = parse_problem(line);
    const Verdict right = check_kernel(flawed(Flaw::round_before_bias_declared, p.op()), p, 1);
    EXPECT_EQ(right.status, Status::passed) << line << ": " << right.reason;
    for (Flaw f : {Flaw::no_bias_declared, Flaw::double_bias_declared}) {
      const Verdict wrong = check_kernel(flawed(f, p.op()), p, 1);
      EXPECT_EQ(wrong.status, Status::failed) << line << ": " << wrong.reason;
    }
  }
}

TEST(Verify, FailuresPrintTheDigitsThatDiffer) {
  // A product of one term allows about 7e-7 relative: 1.000004 fails against 1, and the
  // two must not both print as "1", as six significant digits would have them.
  const Problem p = parse_problem("dense mb=1 ic=1 oc=1 dt=f32");
  Tensor got(Storage::f32, {1});
  got.store(0, 1.000004);
  const Verdict v = compare(p, "dst", got, Expected{{1.0}, {1.0}, {1.0}});
  ASSERT_EQ(v.status, Status::failed) << v.reason;
  EXPECT_EQ(
      v.reason.rfind("dst[0] = 1.00000405, expected 1 (magnitude 1): error 4.05311584e-06 > allowed ", 0), 0u)
      << v.reason;
}

TEST(Verify, ToleranceDependsOnDtype) {
  // An error of 2⁻⁹ relative (half a bf16 unit, and the bf16 output's rounding on top)
  // fails f32 and passes bf16.
  Problem p = kDense;
  const Verdict f32 = check_kernel(flawed(Flaw::scale_last, Op::dense, 0x1p-9), p, 1);
  EXPECT_EQ(f32.status, Status::failed) << f32.reason;
  p.dt = DType::bf16;
  const Verdict bf16 = check_kernel(flawed(Flaw::scale_last, Op::dense, 0x1p-9), p, 1);
  EXPECT_EQ(bf16.status, Status::passed) << bf16.reason;
}

TEST(Verify, SeparateReluOutputIsChecked) {
  Problem p = kDense;
  p.relu = Relu::separate;
  const Verdict v = check_kernel(flawed(Flaw::nudge_relu_dst), p, 1);
  EXPECT_EQ(v.status, Status::failed);
  EXPECT_EQ(v.reason.rfind("relu_dst[0]", 0), 0u) << v.reason;
}

TEST(Verify, EveryReluModeIsCheckedAgainstItsOwnReference) {
  // The reference's pre-ReLU output is reused across ReLU modes of the same inputs; a
  // kernel that forgets the ReLU must still fail every mode that has one.
  for (Relu relu : kAllRelus) {
    Problem p = kDense;
    p.relu = relu;
    EXPECT_EQ(check_kernel(flawed(Flaw::none), p, 1).status, Status::passed) << name(relu);
    if (relu == Relu::fused || relu == Relu::inplace) {
      EXPECT_EQ(check_kernel(flawed(Flaw::ignore_relu), p, 1).status, Status::failed) << name(relu);
    }
  }
}

TEST(Verify, NanFails) {
  const Verdict v = check_kernel(flawed(Flaw::nan), kDense, 1);
  EXPECT_EQ(v.status, Status::failed);
  EXPECT_NE(v.reason.find("dst[0] = nan"), std::string::npos) << v.reason;
}

TEST(Verify, ModifiedInputFails) {
  const Verdict v = check_kernel(flawed(Flaw::scribble_input), kDense, 1);
  EXPECT_EQ(v.status, Status::failed);
  EXPECT_EQ(v.reason, "src: the kernel modified an input");
}

TEST(Verify, ThrowingKernelFails) {
  const Verdict v = check_kernel(flawed(Flaw::throws), kDense, 1);
  EXPECT_EQ(v.status, Status::failed);
  EXPECT_EQ(v.reason, "threw: boom");
}

TEST(Verify, UnsupportedIsSkippedWithTheReason) {
  Problem p = kDense;
  p.dt = DType::f8;
  const Verdict v = check_kernel(flawed(Flaw::none), p, 1);
  EXPECT_EQ(v.status, Status::unsupported);
  EXPECT_EQ(v.reason, "test: flawed: no f8");  // the registry names the backend
  const Verdict wrong_op = check_kernel(flawed(Flaw::none, Op::conv2d), kDense, 1);
  EXPECT_EQ(wrong_op.status, Status::unsupported);
}

TEST(Verify, BigProblemsAreCheckedOnSpreadBatchSamples) {
  const Problem p = parse_problem("dense mb=100 ic=64 oc=8");
  const int64_t budget = 64 * 8 * 5;  // the reference may compute five rows
  EXPECT_EQ(verification_samples(p, budget), (std::vector<int64_t>{0, 24, 49, 74, 99}));
  EXPECT_EQ(verification_samples(p, 0).size(), 100u);
  EXPECT_EQ(verification_samples(p, 1).size(), 1u);
  const Verdict ok = check_kernel(flawed(Flaw::none), p, 1, {}, budget);
  EXPECT_EQ(ok.status, Status::passed);
  EXPECT_NE(ok.reason.find("(5 of 100 batch samples)"), std::string::npos) << ok.reason;
  // The last row is always sampled; unwritten elements are found in every row.
  EXPECT_EQ(check_kernel(flawed(Flaw::nudge), p, 1, {}, budget).status, Status::failed);
  EXPECT_EQ(check_kernel(flawed(Flaw::skip_last), p, 1, {}, budget).status, Status::failed);
  const Problem lstm = parse_problem("lstm mb=9 t=3 ic=4 hc=5 l=2");
  const Verdict l = check_kernel(flawed(Flaw::nudge, Op::lstm), lstm, 1, {}, model(lstm).macs / 9 * 2);
  EXPECT_EQ(l.status, Status::failed) << l.reason;
}

TEST(Verify, MostlyZeroReferenceIsMistrusted) {
  Tensor got(Storage::f32, {10});
  Expected expect{Doubles(10, 0.0), Doubles(10, 1.0), Doubles(10, 1.0)};
  expect.value[0] = 1.0;
  for (int i = 0; i < 10; ++i)
    got.store(i, expect.value[i]);
  EXPECT_EQ(compare(kDense, "dst", got, expect).status, Status::mistrusted);
  for (int i = 0; i < 5; ++i)
    expect.value[i] = 1.0 + i;
  for (int i = 0; i < 10; ++i)
    got.store(i, expect.value[i]);
  EXPECT_EQ(compare(kDense, "dst", got, expect).status, Status::passed);
}

TEST(Verify, CancellationIsAllowedForByTheMagnitude) {
  // An output of 1e-7 made of terms summing to 10 in magnitude: an f32 kernel's rounding
  // errors scale with the 10, not with the 1e-7 or the output's rms.
  Tensor got(Storage::f32, {2});
  const Expected expect{{1e-7, 1.0}, {10.0, 1.0}, {1e-7, 1.0}};
  const Allowance a = allowance(kDense, got);
  const double allowed = a.of(10.0, 1e-7);
  EXPECT_GT(allowed, 10 * 0x1p-24);  // at least a unit of the magnitude
  got.store(1, 1.0);
  got.store(0, 1e-7 + allowed / 2);
  EXPECT_EQ(compare(kDense, "dst", got, expect).status, Status::passed);
  got.store(0, 1e-7 + allowed * 2);
  const Verdict v = compare(kDense, "dst", got, expect);
  EXPECT_EQ(v.status, Status::failed);
  EXPECT_NEAR(v.tolerance, allowed, allowed * 1e-12);
  EXPECT_NE(v.reason.find("magnitude 10"), std::string::npos) << v.reason;
}

// Every CPU kernel that supports p passes it, for the given seeds.
void expect_every_cpu_kernel_passes(const std::string& line, const std::vector<uint64_t>& seeds) {
  const Problem p = parse_problem(line);
  int supported = 0;
  for (const KernelEntry& k : registry().kernels()) {
    if (k.info.device != Device::cpu || k.op_name() != name(p.op()) || !k.supports(p).empty()) continue;
    ++supported;
    for (uint64_t seed : seeds) {
      const Verdict v = check_kernel(k, p, seed);
      EXPECT_NE(v.status, Status::failed) << v.repro << "\n" << v.reason;
    }
  }
  EXPECT_GE(supported, 2) << line;  // the reference and at least one other backend
}

TEST(Verify, CancellationDoesNotFailCorrectKernels) {
  // Two cases that the tolerance scaled by |ref| + rms(ref) failed on several backends:
  // error 1.07e-5 against 2.38e-6 at seed 2565, and 1.49e-6 against 1.44e-6.
  expect_every_cpu_kernel_passes(
      "conv2d mb=2 ic=2 ih=3 iw=5 oc=2 kh=3 kw=3 sh=3 sw=2 ph=1 pw=0 dh=2 dw=2 g=2 dt=f32 relu=fused",
      {2565});
  std::vector<uint64_t> seeds(200);
  for (size_t i = 0; i < seeds.size(); ++i)
    seeds[i] = i + 1;
  expect_every_cpu_kernel_passes("dense mb=3 ic=2 oc=2 relu=separate", seeds);
}

TEST(Verify, AllowanceGrowsWithPrecisionLossAndAccumulationLength) {
  auto per_magnitude = [](const char* line) {
    const Problem p = parse_problem(line);
    return allowance(p, make_tensors(p).at(Arg::dst)).per_magnitude;
  };
  auto per_stored = [](const char* line) {
    const Problem p = parse_problem(line);
    return allowance(p, make_tensors(p).at(Arg::dst)).per_stored;
  };
  EXPECT_LT(per_magnitude("dense mb=1 ic=64 oc=1 dt=f32"), per_magnitude("dense mb=1 ic=4096 oc=1 dt=f32"));
  EXPECT_LT(per_magnitude("dense mb=1 ic=64 oc=1 dt=f32"), per_magnitude("dense mb=1 ic=64 oc=1 dt=tf32"));
  EXPECT_LT(per_magnitude("dense mb=1 ic=4096 oc=1 dt=tf32"), per_magnitude("dense mb=1 ic=4096 oc=1 dt=f8"));
  // Narrow inputs are exact for the reference too; a narrow output rounds to its own grid.
  EXPECT_EQ(per_magnitude("dense mb=1 ic=64 oc=1 dt=f32"), per_magnitude("dense mb=1 ic=64 oc=1 dt=bf16"));
  EXPECT_LT(per_stored("dense mb=1 ic=64 oc=1 dt=f32"), per_stored("dense mb=1 ic=64 oc=1 dt=f16"));
  EXPECT_LT(per_stored("dense mb=1 ic=64 oc=1 dt=f16"), per_stored("dense mb=1 ic=64 oc=1 dt=bf16"));
  EXPECT_EQ(per_stored("dense mb=1 ic=64 oc=1 dt=i8"),
            per_stored("dense mb=1 ic=64 oc=1 dt=f32"));  // f32 out
  EXPECT_EQ(accumulation_length(parse_problem("conv2d mb=1 ic=64 ih=8 iw=8 oc=8 kh=3 kw=3 g=4"), Arg::dst),
            16 * 9);
  EXPECT_EQ(accumulation_length(parse_problem("lstm mb=1 t=10 ic=32 hc=16 l=2"), Arg::dst),
            (32 + 16) * 10 * 2);
}

TEST(Fill, SeededNeverZeroAndPoisonIsDetected) {
  for (DType dt : {DType::f32, DType::bf16, DType::i8, DType::f8}) {
    Problem p = kDense;
    p.dt = dt;
    TensorSet a = make_tensors(p), b = make_tensors(p), c = make_tensors(p);
    fill_inputs(a, p, 5);
    fill_inputs(b, p, 5);
    fill_inputs(c, p, 6);
    const Tensor& src = a.at(Arg::src);
    EXPECT_EQ(std::memcmp(src.data(), b.at(Arg::src).data(), src.bytes()), 0) << name(dt);
    EXPECT_NE(std::memcmp(src.data(), c.at(Arg::src).data(), src.bytes()), 0) << name(dt);
    int nonzero = 0;
    for (int64_t i = 0; i < src.elements(); ++i)
      nonzero += src.load(i) != 0.0;
    EXPECT_GT(nonzero, src.elements() * 9 / 10) << name(dt);
    Tensor& dst = a.at(Arg::dst);
    poison(dst);
    EXPECT_TRUE(is_poison(dst, 0));
    dst.store(0, 0.0);
    EXPECT_FALSE(is_poison(dst, 0));
  }
}

TEST(Fill, BiasAndCellStateOnTheGridVendorLibrariesTakeThemIn) {
  // f32 storage, values that the output's type (f8: bf16) holds exactly; f32 problems'
  // values use all of f32's bits.
  auto on_grid = [](const Tensor& t, Storage grid) {
    for (int64_t i = 0; i < t.elements(); ++i)
      if (const float v = t.as<float>()[i]; round_to(grid, v) != v) return false;
    return true;
  };
  for (const char* line : {"dense mb=2 ic=8 oc=300", "lstm mb=2 t=2 ic=8 hc=80 l=1"})
    for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f8}) {
      Problem p = parse_problem(line);
      p.dt = dt;
      if (p.op() == Op::lstm && dt == DType::f8) continue;
      TensorSet ts = make_tensors(p);
      fill_inputs(ts, p, 3);
      std::vector<Arg> args = {Arg::bias};
      if (p.op() == Op::lstm) args.push_back(Arg::src_iter_c);
      for (Arg a : args) {
        EXPECT_EQ(ts.at(a).storage(), Storage::f32);
        const Storage grid = value_grid(dt, a);
        EXPECT_EQ(grid, dt == DType::f16 ? Storage::f16 : dt == DType::f32 ? Storage::f32 : Storage::bf16);
        if (dt == DType::f32)
          EXPECT_FALSE(on_grid(ts.at(a), Storage::bf16)) << line << " " << name(a);
        else
          EXPECT_TRUE(on_grid(ts.at(a), grid)) << line << " " << name(dt) << " " << name(a);
      }
    }
}

TEST(Registry, IdsAreCheckedAndTheRefBackendCoversEveryOp) {
  Registry r;
  auto make = [] { return std::unique_ptr<Kernel>(); };
  EXPECT_THROW(r.add({"dense.ref", Device::cpu, "", ""}, make), Error);
  EXPECT_THROW(r.add({"dense..x", Device::cpu, "", ""}, make), Error);
  EXPECT_THROW(r.add({"dense.a.b.c", Device::cpu, "", ""}, make), Error);
  EXPECT_THROW(r.add({"matmul.ref.x", Device::cpu, "", ""}, make), Error);
  r.add({"conv2d.mine.v1", Device::cpu, "", ""}, make);
  EXPECT_THROW(r.add({"conv2d.mine.v1", Device::cpu, "", ""}, make), Error);
  EXPECT_EQ(r.kernels()[0].op_name(), "conv2d");
  EXPECT_EQ(r.kernels()[0].backend(), "mine");
  for (Op op : kAllOps)
    EXPECT_EQ(oracle(op).op_name(), name(op));
  // Passes: checked once against the op's (an LSTM has no bwd_d), none at all refused.
  EXPECT_THROW(r.add({.id = "lstm.mine.v1", .passes = {Pass::fwd, Pass::bwd_d}}, make), Error);
  EXPECT_THROW(r.add({.id = "dense.mine.none", .passes = {}}, make), Error);
  r.add({.id = "lstm.mine.v2", .passes = {Pass::fwd, Pass::bwd}}, make);
}

// A problem of a pass the kernel does not compute is declined by the registry, naming the
// pass and the kernel's (every kernel computes the forward only, until it says otherwise),
// before the kernel itself is asked.
TEST(Registry, APassTheKernelLacksIsDeclinedWithItsName) {
  for (const KernelEntry& k : registry().kernels()) {
    ASSERT_FALSE(k.info.passes.empty()) << k.info.id;
    const std::string line(traits(parse_op(k.op_name())).probes.at(0));  // the op's first probe
    for (Pass pass : kAllPasses) {
      const Problem p = parse_problem(line);
      if (std::find(traits(p.op()).passes.begin(), traits(p.op()).passes.end(), pass) ==
          traits(p.op()).passes.end())
        continue;
      const std::string why = k.supports(with_pass(p, pass));
      const bool computes =
          std::find(k.info.passes.begin(), k.info.passes.end(), pass) != k.info.passes.end();
      if (!computes)
        EXPECT_EQ(why.find(std::string(k.backend()) + ": dir=" + std::string(name(pass)) + " not computed ("),
                  0u)
            << k.info.id << ": " << why;
      else
        EXPECT_EQ(why.find("not computed"), std::string::npos) << k.info.id << ": " << why;
    }
  }
}

}  // namespace
}  // namespace lb
