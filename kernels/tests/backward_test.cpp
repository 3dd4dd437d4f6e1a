// Training passes: the arguments each pass derives from the forward's, the reference's
// gradients against central differences of its own forward, the ReLU's mask in every
// mode, and wrong backward kernels that verification must fail.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/case_session.h"
#include "kernels/common.h"
#include "kernels/ops/traits.h"
#include "kernels/ref/kernels.h"
#include "kernels/registry.h"
#include "kernels/verify.h"

namespace lb {
namespace {

std::vector<std::string> names(const std::vector<Arg>& args) {
  std::vector<std::string> out;
  for (Arg a : args)
    out.emplace_back(name(a));
  return out;
}

using Names = std::vector<std::string>;

Problem problem(const std::string& line, Pass pass, Relu relu = Relu::none) {
  Problem p = with_pass(parse_problem(line), pass);
  p.relu = relu;
  return p;
}

TEST(PassArgs, EachPassReadsAndWritesWhatItsGradientsNeed) {
  const std::string dense = "dense mb=4 ic=8 oc=6";
  auto in = [&](Pass pass, Relu relu) { return names(input_args(problem(dense, pass, relu))); };
  auto out = [&](Pass pass, Relu relu) { return names(output_args(problem(dense, pass, relu))); };
  EXPECT_EQ(in(Pass::fwd, Relu::none), (Names{"src", "wei", "bias"}));
  EXPECT_EQ(out(Pass::fwd, Relu::separate), (Names{"dst", "relu_dst"}));
  EXPECT_EQ(in(Pass::fwd_train, Relu::none), in(Pass::fwd, Relu::none));
  // dx = dz·W needs W, not x; dW = dzᵀ·x needs x, not W; neither needs the bias.
  EXPECT_EQ(in(Pass::bwd_d, Relu::none), (Names{"wei", "diff_dst"}));
  EXPECT_EQ(out(Pass::bwd_d, Relu::none), (Names{"diff_src"}));
  EXPECT_EQ(in(Pass::bwd_w, Relu::none), (Names{"src", "diff_dst"}));
  EXPECT_EQ(out(Pass::bwd_w, Relu::none), (Names{"diff_wei", "diff_bias"}));
  EXPECT_EQ(in(Pass::bwd, Relu::none), (Names{"src", "wei", "diff_dst"}));
  EXPECT_EQ(out(Pass::bwd, Relu::none), (Names{"diff_src", "diff_wei", "diff_bias"}));
  // The ReLU's backward: its output for the mask; dz into a buffer of its own, over dy,
  // or applied on the fly.
  EXPECT_EQ(in(Pass::bwd_d, Relu::separate), (Names{"wei", "relu_dst", "diff_relu_dst"}));
  EXPECT_EQ(out(Pass::bwd_d, Relu::separate), (Names{"diff_dst", "diff_src"}));
  EXPECT_EQ(in(Pass::bwd_d, Relu::inplace), (Names{"wei", "dst", "diff_dst"}));
  EXPECT_EQ(out(Pass::bwd_d, Relu::inplace), (Names{"diff_dst", "diff_src"}));
  EXPECT_EQ(in(Pass::bwd_d, Relu::fused), (Names{"wei", "dst", "diff_dst"}));
  EXPECT_EQ(out(Pass::bwd_d, Relu::fused), (Names{"diff_src"}));
  // train: the forward, then the backward with the mask of the dst it wrote.
  EXPECT_EQ(in(Pass::train, Relu::inplace), (Names{"src", "wei", "bias", "diff_dst"}));
  EXPECT_EQ(out(Pass::train, Relu::inplace), (Names{"diff_dst", "dst", "diff_src", "diff_wei", "diff_bias"}));
  EXPECT_EQ(out(Pass::train, Relu::separate),
            (Names{"dst", "relu_dst", "diff_dst", "diff_src", "diff_wei", "diff_bias"}));
  // The LSTM's one backward pass gives all six gradients.
  EXPECT_EQ(
      names(output_args(problem("lstm mb=2 t=3 ic=4 hc=5", Pass::bwd))),
      (Names{"diff_src", "diff_wei", "diff_wei_iter", "diff_bias", "diff_src_iter", "diff_src_iter_c"}));
}

TEST(PassArgs, GradientsHaveTheirPrimalsDimsAndAccumulationLengths) {
  const Problem p = problem("conv2d mb=2 ic=4 ih=9 iw=9 oc=6 kh=3 kw=3 sh=2 ph=1 g=2", Pass::bwd);
  TensorSet ts = make_tensors(p);
  EXPECT_EQ(ts.at(Arg::diff_src).dims(), (Dims{2, 4, 9, 9}));
  EXPECT_EQ(ts.at(Arg::diff_wei).dims(), (Dims{6, 2, 3, 3}));
  EXPECT_EQ(ts.at(Arg::diff_bias).dims(), (Dims{6}));
  EXPECT_EQ(ts.at(Arg::diff_dst).dims(), (Dims{2, 6, 5, 5}));
  EXPECT_EQ(accumulation_length(p, Arg::diff_wei), 2 * 5 * 5);  // every output pixel of every sample
  EXPECT_EQ(accumulation_length(p, Arg::diff_bias), 2 * 5 * 5);
  const Problem d = problem("dense mb=4 ic=8 oc=6", Pass::bwd);
  EXPECT_EQ(accumulation_length(d, Arg::diff_src), 6);
  EXPECT_EQ(accumulation_length(d, Arg::diff_wei), 4);
  EXPECT_EQ(pass_macs(d), 2 * 4 * 8 * 6);
  EXPECT_EQ(pass_macs(with_pass(d, Pass::train)), 3 * 4 * 8 * 6);
  // Integer and f8 problems have no gradients; the reference says so.
  Problem i8 = d;
  i8.dt = DType::i8;
  EXPECT_NE(oracle(Op::dense).supports(i8).find("no gradients"), std::string::npos);
}

// Runs the reference on ts; returns it, whose expected() stays.
std::unique_ptr<ref::Oracle> run_ref(const Problem& p, TensorSet& ts) {
  std::unique_ptr<Kernel> kernel = oracle(p.op()).make();
  kernel->prepare(p, ts, {});
  kernel->run(ts);
  kernel->finish(ts);
  auto* o = dynamic_cast<ref::Oracle*>(kernel.get());
  if (!o) throw Error("not an oracle");
  kernel.release();
  return std::unique_ptr<ref::Oracle>(o);
}

// L = Σ dy·y for the forward of p on `fwd` (inputs src, wei, bias) with dy = `dy`.
double loss(const Problem& p, TensorSet& fwd, const std::vector<double>& dy) {
  const std::unique_ptr<ref::Oracle> o = run_ref(with_pass(p, Pass::fwd), fwd);
  double l = 0;
  for (size_t i = 0; i < dy.size(); ++i)
    l += dy[i] * o->exact()[i];
  return l;
}

TEST(RefBackward, GradientsAreTheForwardsCentralDifferences) {
  // Dense and conv2d are linear in each input, so a central difference is exact up to the
  // rounding of doubles whatever the step: every gradient element must agree closely.
  for (const char* line : {"dense mb=3 ic=5 oc=4", "conv2d mb=2 ic=3 ih=5 iw=5 oc=4 kh=3 kw=3 ph=1",
                           "conv2d mb=2 ic=4 ih=7 iw=6 oc=6 kh=3 kw=2 sh=2 ph=1 pw=0 g=2",
                           "conv2d mb=1 ic=3 ih=7 iw=7 oc=3 kh=3 kw=3 ph=2 dh=2 dw=2 g=3",
                           "conv2d mb=2 ic=2 ih=6 iw=6 oc=4 kh=1 kw=1 sh=2"}) {
    const Problem p = problem(line, Pass::bwd);
    TensorSet bwd = make_tensors(p);
    fill_inputs(bwd, p, 7);
    const Problem f = with_pass(p, Pass::fwd);
    TensorSet fwd = make_tensors(f);
    fill_inputs(fwd, f, 7);  // the same src and wei (a fill depends on the seed and argument only)
    ASSERT_EQ(digest(fwd.at(Arg::src)), digest(bwd.at(Arg::src))) << line;
    const std::unique_ptr<ref::Oracle> o = run_ref(p, bwd);
    std::vector<double> dy(bwd.at(Arg::diff_dst).elements());
    for (size_t i = 0; i < dy.size(); ++i)
      dy[i] = bwd.at(Arg::diff_dst).load(int64_t(i));
    for (Arg a : {Arg::src, Arg::wei, Arg::bias}) {
      const Expected& g = o->expected(diff_of(a));
      Tensor& t = fwd.at(a);
      ASSERT_EQ(int64_t(g.value.size()), t.elements()) << line << " " << name(a);
      for (int64_t i = 0; i < t.elements(); ++i) {
        const double v = t.load(i);
        t.store(i, v + 0.25);
        const double up = t.load(i), l_up = loss(p, fwd, dy);
        t.store(i, v - 0.25);
        const double down = t.load(i), l_down = loss(p, fwd, dy);
        t.store(i, v);
        const double difference = (l_up - l_down) / (up - down);
        EXPECT_NEAR(g.value[i], difference, 1e-9 * (1 + g.magnitude[i]))
            << line << " " << name(a) << "[" << i << "]";
        EXPECT_GE(g.magnitude[i], std::fabs(g.value[i])) << line << " " << name(a) << "[" << i << "]";
      }
    }
    // What the reference wrote is what it expects, rounded to the storage.
    for (Arg a : output_args(p))
      for (int64_t i = 0; i < bwd.at(a).elements(); ++i)
        EXPECT_EQ(bwd.at(a).load(i), double(float(o->expected(a).value[i]))) << line << " " << name(a);
  }
}

TEST(RefBackward, TheLstmsGradientsAreItsForwardsCentralDifferences) {
  // The LSTM is smooth, not linear: a small step, whose central difference is within
  // about step² of the derivative; the values stay on f32's grid near ±1, so the step taken
  // is read back from the tensor.
  constexpr double kStep = 0x1p-10;
  for (const char* line : {"lstm mb=2 t=3 ic=3 hc=4", "lstm mb=2 t=3 ic=3 hc=2 l=2"}) {
    const Problem p = problem(line, Pass::bwd);
    TensorSet bwd = make_tensors(p);
    fill_inputs(bwd, p, 7);
    const Problem f = with_pass(p, Pass::fwd);
    TensorSet fwd = make_tensors(f);
    fill_inputs(fwd, f, 7);
    const std::unique_ptr<ref::Oracle> o = run_ref(p, bwd);
    std::vector<double> dy(bwd.at(Arg::diff_dst).elements());
    for (size_t i = 0; i < dy.size(); ++i)
      dy[i] = bwd.at(Arg::diff_dst).load(int64_t(i));
    for (Arg a : {Arg::src, Arg::wei, Arg::wei_iter, Arg::bias, Arg::src_iter, Arg::src_iter_c}) {
      const Expected& g = o->expected(diff_of(a));
      Tensor& t = fwd.at(a);
      ASSERT_EQ(int64_t(g.value.size()), t.elements()) << line << " " << name(a);
      for (int64_t i = 0; i < t.elements(); ++i) {
        const double v = t.load(i);
        t.store(i, v + kStep);
        const double up = t.load(i), l_up = loss(p, fwd, dy);
        t.store(i, v - kStep);
        const double down = t.load(i), l_down = loss(p, fwd, dy);
        t.store(i, v);
        const double difference = (l_up - l_down) / (up - down);
        EXPECT_NEAR(g.value[i], difference, 1e-5 * (1 + std::fabs(difference)))
            << line << " " << name(a) << "[" << i << "]";
        EXPECT_GE(g.magnitude[i], std::fabs(g.value[i])) << line << " " << name(a) << "[" << i << "]";
      }
    }
    for (Arg a : output_args(p))
      for (int64_t i = 0; i < bwd.at(a).elements(); ++i)
        EXPECT_EQ(bwd.at(a).load(i), double(float(o->expected(a).value[i]))) << line << " " << name(a);
  }
}

TEST(RefBackward, TheReluMaskIsTheOutputsSignInEveryMode) {
  // Every mode computes the gradients of relu=none with dz = dy where the ReLU's output is
  // > 0, else 0; separate writes dz to diff_dst, inplace over it.
  const std::string line = "conv2d mb=2 ic=3 ih=6 iw=6 oc=4 kh=3 kw=3 ph=1";
  for (Relu relu : {Relu::separate, Relu::inplace, Relu::fused}) {
    const Problem p = problem(line, Pass::bwd, relu);
    TensorSet ts = make_tensors(p);
    fill_inputs(ts, p, 3);
    const Tensor& mask = ts.at(relu == Relu::separate ? Arg::relu_dst : Arg::dst);
    const Tensor& dy = ts.at(relu == Relu::separate ? Arg::diff_relu_dst : Arg::diff_dst);
    int64_t zeros = 0;
    for (int64_t i = 0; i < mask.elements(); ++i)
      zeros += mask.load(i) == 0;
    EXPECT_GT(zeros, mask.elements() / 4) << "a ReLU's output has exact zeros";
    // relu=none on dz, by hand.
    const Problem none = problem(line, Pass::bwd);
    TensorSet masked = make_tensors(none);
    fill_inputs(masked, none, 3);
    std::vector<double> dz(dy.elements());
    for (int64_t i = 0; i < dy.elements(); ++i) {
      dz[i] = mask.load(i) > 0 ? dy.load(i) : 0.0;
      masked.at(Arg::diff_dst).store(i, dz[i]);
    }
    const std::unique_ptr<ref::Oracle> got = run_ref(p, ts), want = run_ref(none, masked);
    for (Arg a : {Arg::diff_src, Arg::diff_wei, Arg::diff_bias})
      EXPECT_EQ(got->expected(a).value, want->expected(a).value) << name(relu) << " " << name(a);
    if (relu != Relu::fused) {
      for (int64_t i = 0; i < dy.elements(); ++i)
        ASSERT_EQ(ts.at(Arg::diff_dst).load(i), dz[i]) << name(relu) << " dz[" << i << "]";
    }
  }
}

// A backward kernel with one planted bug: the reference, then the bug.
enum class Bug {
  none,
  mask_missing,
  wei_transposed,
  bias_dropped,
  accumulates,
  not_in_place,
  cell_grad_dropped,
  wei_grad_off  // diff_wei 1/16 too large
};

class Planted final : public Kernel {
 public:
  explicit Planted(Bug bug) : bug_(bug) {}
  std::string supports(const Problem&) const override { return {}; }
  void prepare(const Problem& p, TensorSet&, const Context&) override { p_ = p; }
  void run(TensorSet& ts) override {
    // diff_wei as the kernel found it: what an accumulating kernel adds to.
    std::vector<double> before;
    if (ts.has(Arg::diff_wei))
      for (int64_t i = 0; i < ts.at(Arg::diff_wei).elements(); ++i)
        before.push_back(ts.at(Arg::diff_wei).load(i));
    Problem q = p_;
    if (bug_ == Bug::mask_missing) q.relu = Relu::none;  // the gradient passes where y <= 0
    std::vector<double> dy;
    if (bug_ == Bug::not_in_place)
      for (int64_t i = 0; i < ts.at(Arg::diff_dst).elements(); ++i)
        dy.push_back(ts.at(Arg::diff_dst).load(i));
    run_ref(q, ts);
    if (bug_ == Bug::not_in_place)  // dz computed but not written over dy
      for (size_t i = 0; i < dy.size(); ++i)
        ts.at(Arg::diff_dst).store(int64_t(i), dy[i]);
    if (bug_ == Bug::bias_dropped)
      for (int64_t i = 0; i < ts.at(Arg::diff_bias).elements(); ++i)
        ts.at(Arg::diff_bias).store(i, 0.0);
    if (bug_ == Bug::cell_grad_dropped)  // the LSTM's dc_{-1}: the gradient of the initial cell state
      for (int64_t i = 0; i < ts.at(Arg::diff_src_iter_c).elements(); ++i)
        ts.at(Arg::diff_src_iter_c).store(i, 0.0);
    if (bug_ == Bug::wei_grad_off)
      for (int64_t i = 0; i < ts.at(Arg::diff_wei).elements(); ++i)
        ts.at(Arg::diff_wei).store(i, ts.at(Arg::diff_wei).load(i) * (1.0 + 1.0 / 16));
    if (bug_ == Bug::accumulates)
      for (size_t i = 0; i < before.size(); ++i)
        ts.at(Arg::diff_wei).store(int64_t(i), ts.at(Arg::diff_wei).load(int64_t(i)) + before[i]);
    if (bug_ == Bug::wei_transposed) {  // dx = dz·Wᵀ on a square W: dx[m][i] = Σ_o dz[m][o]·W[i][o]
      const Dense& d = p_.dense();
      const Tensor &w = ts.at(Arg::wei), &dz = ts.at(Arg::diff_dst);
      for (int64_t m = 0; m < d.mb; ++m)
        for (int64_t i = 0; i < d.ic; ++i) {
          double acc = 0;
          for (int64_t o = 0; o < d.oc; ++o)
            acc += dz.load(m * d.oc + o) * w.load(i * d.ic + o);
          ts.at(Arg::diff_src).store(m * d.ic + i, acc);
        }
    }
  }

 private:
  Bug bug_;
  Problem p_;
};

TEST(RefBackward, PlantedWrongBackwardKernelsFail) {
  Registry r;
  const std::vector<Pass> every(std::begin(kAllPasses), std::end(kAllPasses));
  for (auto [id, bug] : {std::pair{"dense.planted.none", Bug::none},
                         {"conv2d.planted.none", Bug::none},
                         {"dense.planted.mask_missing", Bug::mask_missing},
                         {"dense.planted.wei_transposed", Bug::wei_transposed},
                         {"conv2d.planted.bias_dropped", Bug::bias_dropped},
                         {"conv2d.planted.accumulates", Bug::accumulates},
                         {"dense.planted.not_in_place", Bug::not_in_place}})
    r.add({.id = id, .idea = "planted", .accumulation = "f64", .passes = every},
          [bug] { return std::make_unique<Planted>(bug); });
  const KernelEntry *correct = r.find("dense.planted.none"), *correct_conv = r.find("conv2d.planted.none"),
                    *mask = r.find("dense.planted.mask_missing"),
                    *transposed = r.find("dense.planted.wei_transposed"),
                    *bias = r.find("conv2d.planted.bias_dropped"),
                    *accumulates = r.find("conv2d.planted.accumulates"),
                    *not_in_place = r.find("dense.planted.not_in_place");
  const std::string dense = "dense mb=8 ic=16 oc=16", conv = "conv2d mb=4 ic=4 ih=6 iw=6 oc=8 kh=3 kw=3 ph=1";

  // The reference's own answers pass, in every pass and mode, on the whole batch and on
  // samples of it (budgets of one sample and one output channel, and of three).
  for (Pass pass : every)
    for (Relu relu : kAllRelus)
      for (auto [k, line] : {std::pair{correct, dense}, std::pair{correct_conv, conv}}) {
        const Problem p = problem(line, pass, relu);
        const int64_t per_sample = traits(p.op()).macs(p) / p.batch();
        for (int64_t budget : {kDefaultReferenceMacs, int64_t(1), 3 * per_sample}) {
          const Verdict v = check_kernel(*k, p, 5, {}, budget);
          EXPECT_EQ(v.status, Status::passed) << print(p) << " budget " << budget << ": " << v.reason;
        }
      }
  auto fails = [](const KernelEntry* k, const Problem& p, const std::string& says) {
    const Verdict v = check_kernel(*k, p, 5);
    EXPECT_EQ(v.status, Status::failed) << k->info.id << " " << print(p) << ": " << v.reason;
    EXPECT_NE(v.reason.find(says), std::string::npos) << k->info.id << ": " << v.reason;
  };
  fails(mask, problem(dense, Pass::bwd_d, Relu::fused), "diff_src");
  fails(mask, problem(dense, Pass::bwd, Relu::fused), "diff_");
  fails(mask, problem(dense, Pass::train, Relu::fused), "");  // its forward has no ReLU either
  fails(mask, problem(dense, Pass::bwd_w, Relu::fused), "diff_wei");
  fails(transposed, problem(dense, Pass::bwd_d), "diff_src");
  fails(bias, problem(conv, Pass::bwd_w), "diff_bias");
  fails(bias, problem(conv, Pass::train, Relu::inplace), "diff_bias");
  fails(accumulates, problem(conv, Pass::bwd_w), "diff_wei");
  fails(not_in_place, problem(dense, Pass::bwd_d, Relu::inplace), "diff_dst");
  fails(not_in_place, problem(dense, Pass::train, Relu::inplace), "diff_dst");

  // The LSTM's one pass back through time, its six gradients on the whole batch.
  const std::vector<Pass> lstm_passes = traits(Op::lstm).passes;
  for (auto [id, bug] : {std::pair{"lstm.planted.none", Bug::none},
                         {"lstm.planted.mask_missing", Bug::mask_missing},
                         {"lstm.planted.bias_dropped", Bug::bias_dropped},
                         {"lstm.planted.accumulates", Bug::accumulates},
                         {"lstm.planted.cell_grad_dropped", Bug::cell_grad_dropped},
                         {"lstm.planted.wei_grad_off", Bug::wei_grad_off}})
    r.add({.id = id, .idea = "planted", .accumulation = "f64", .passes = lstm_passes},
          [bug] { return std::make_unique<Planted>(bug); });
  // In bf16 the gradients are allowed a unit of bf16 per unit of their bound (the gates'
  // gradients as GEMM operands, kernels/verify.cpp): the same bugs still fail there, and so
  // does a weight gradient 1/16 off.
  for (const std::string lstm : {"lstm mb=3 t=4 ic=5 hc=6 l=2", "lstm mb=3 t=4 ic=5 hc=6 l=2 dt=bf16"}) {
    for (Pass pass : {Pass::bwd, Pass::train})
      for (Relu relu : kAllRelus) {
        const Problem p = problem(lstm, pass, relu);
        const Verdict v = check_kernel(*r.find("lstm.planted.none"), p, 5);
        EXPECT_EQ(v.status, Status::passed) << print(p) << ": " << v.reason;
      }
    fails(r.find("lstm.planted.mask_missing"), problem(lstm, Pass::bwd, Relu::fused), "diff_");
    fails(r.find("lstm.planted.bias_dropped"), problem(lstm, Pass::bwd), "diff_bias");
    fails(r.find("lstm.planted.accumulates"), problem(lstm, Pass::train, Relu::inplace), "diff_wei");
    fails(r.find("lstm.planted.cell_grad_dropped"), problem(lstm, Pass::bwd), "diff_src_iter_c");
    fails(r.find("lstm.planted.wei_grad_off"), problem(lstm, Pass::bwd), "diff_wei");
  }
}

}  // namespace
}  // namespace lb
