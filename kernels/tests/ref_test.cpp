// The reference kernels on tiny cases worked by hand, every ReLU mode, the stacked
// LSTM against two single-layer runs, and the magnitudes verification reads from them.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/common.h"
#include "kernels/ref/kernels.h"
#include "kernels/registry.h"

namespace lb {
namespace {

void set(TensorSet& ts, Arg a, const std::vector<double>& values) {
  Tensor& t = ts.at(a);
  ASSERT_EQ(t.elements(), int64_t(values.size())) << name(a);
  for (size_t i = 0; i < values.size(); ++i)
    t.store(int64_t(i), values[i]);
}

std::vector<double> get(const TensorSet& ts, Arg a) {
  const Tensor& t = ts.at(a);
  std::vector<double> out(t.elements());
  for (int64_t i = 0; i < t.elements(); ++i)
    out[i] = t.load(i);
  return out;
}

// Runs reference `id` on ts; returns the kernel, whose exact() and magnitude() stay.
std::unique_ptr<ref::Oracle> run(const std::string& id, const Problem& p, TensorSet& ts) {
  const KernelEntry* k = registry().find(id);
  if (!k || !k->supports(p).empty()) throw Error(id + " does not run " + print(p));
  std::unique_ptr<Kernel> kernel = k->make();
  kernel->prepare(p, ts, {});
  kernel->run(ts);
  kernel->finish(ts);
  kernel->release();
  auto* oracle = dynamic_cast<ref::Oracle*>(kernel.get());
  if (!oracle) throw Error(id + " is not a ref::Oracle");
  kernel.release();
  return std::unique_ptr<ref::Oracle>(oracle);
}

TEST(RefDense, HandComputedInEveryReluMode) {
  // x = [[1, 2, 3], [-1, 0.5, 2]], W = [[1, 0, -1], [0.5, 0.5, 0.5]], b = [0.25, -1]
  // y = x·Wᵀ + b = [[1 - 3 + 0.25, 0.5·6 - 1], [-1 - 2 + 0.25, 0.5·1.5 - 1]]
  const std::vector<double> y = {-1.75, 2.0, -2.75, -0.25};
  const std::vector<double> r = {0.0, 2.0, 0.0, 0.0};
  for (Relu relu : kAllRelus) {
    Problem p = parse_problem("dense mb=2 ic=3 oc=2");
    p.relu = relu;
    TensorSet ts = make_tensors(p);
    set(ts, Arg::src, {1, 2, 3, -1, 0.5, 2});
    set(ts, Arg::wei, {1, 0, -1, 0.5, 0.5, 0.5});
    set(ts, Arg::bias, {0.25, -1});
    const std::unique_ptr<ref::Oracle> k = run("dense.ref.naive", p, ts);
    const bool relu_on_dst = relu == Relu::inplace || relu == Relu::fused;
    EXPECT_EQ(get(ts, Arg::dst), relu_on_dst ? r : y) << name(relu);
    // exact() is before ReLU; magnitude() sums |x·w| and |b|: |1| + |-3| + 0.25, 0.5 + 1 + 1.5 + 1, ...
    EXPECT_EQ(k->exact(), Doubles(y.begin(), y.end())) << name(relu);
    EXPECT_EQ(k->magnitude(), (Doubles{4.25, 4.0, 3.25, 2.75})) << name(relu);
    EXPECT_EQ(k->stored(), (Doubles{1.75, 2.0, 2.75, 0.25})) << name(relu);  // |y|
    EXPECT_EQ(ts.has(Arg::relu_dst), relu == Relu::separate);
    if (relu == Relu::separate) {
      EXPECT_EQ(get(ts, Arg::relu_dst), r);
    }
  }
}

TEST(RefConv2d, DepthwiseHandComputed) {
  // Two channels, each with its own 2×2 filter, 3×3 input, no padding: 2×2 outputs.
  const Problem p = parse_problem("conv2d mb=1 ic=2 ih=3 iw=3 oc=2 kh=2 kw=2 g=2");
  TensorSet ts = make_tensors(p);
  set(ts, Arg::src,
      {1, 2, 3, 4, 5, 6, 7, 8, 9,    // channel 0
       1, 0, 2, 0, 3, 0, 4, 0, 5});  // channel 1
  set(ts, Arg::wei,
      {1, 0, 0, -1,  // channel 0: x[p][q] - x[p+1][q+1]
       1, 2, 3, 4});
  set(ts, Arg::bias, {1, 0.5});
  const std::unique_ptr<ref::Oracle> k = run("conv2d.ref.naive", p, ts);
  // channel 0: 1-5, 2-6, 4-8, 5-9 = -4 each, +1.
  // channel 1: 1+0+0+12 = 13, 0+4+9+0 = 13, 0+6+12+0 = 18, 3+0+0+20 = 23, +0.5.
  EXPECT_EQ(get(ts, Arg::dst), (std::vector<double>{-3, -3, -3, -3, 13.5, 13.5, 18.5, 23.5}));
  // Magnitudes: channel 0 cancels (1+5+1, 2+6+1, 4+8+1, 5+9+1); channel 1 has no negative term.
  EXPECT_EQ(k->magnitude(), (Doubles{7, 9, 13, 15, 13.5, 13.5, 18.5, 23.5}));
}

TEST(RefConv2d, StrideAndPaddingHandComputed) {
  // 3×3 input 1..9, 3×3 filter of ones, pad 1, stride 2: each output sums the 2×2
  // corner of the image its window covers.
  const Problem p = parse_problem("conv2d mb=1 ic=1 ih=3 iw=3 oc=1 kh=3 kw=3 sh=2 ph=1");
  TensorSet ts = make_tensors(p);
  set(ts, Arg::src, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  set(ts, Arg::wei, std::vector<double>(9, 1.0));
  set(ts, Arg::bias, {0});
  run("conv2d.ref.naive", p, ts);
  EXPECT_EQ(get(ts, Arg::dst), (std::vector<double>{12, 16, 24, 28}));
}

TEST(RefConv2d, DilationHandComputed) {
  // x[i][j] = 5i + j on 5×5; a 2×2 filter dilated by 2 reads x[p][q], x[p][q+2],
  // x[p+2][q], x[p+2][q+2] with weights 1, 10, 100, 1000.
  const Problem p = parse_problem("conv2d mb=1 ic=1 ih=5 iw=5 oc=1 kh=2 kw=2 dh=2");
  TensorSet ts = make_tensors(p);
  std::vector<double> x(25);
  for (int i = 0; i < 25; ++i)
    x[i] = i;
  set(ts, Arg::src, x);
  set(ts, Arg::wei, {1, 10, 100, 1000});
  set(ts, Arg::bias, {0});
  run("conv2d.ref.naive", p, ts);
  const std::vector<double> y = get(ts, Arg::dst);
  ASSERT_EQ(y.size(), 9u);                             // 3×3
  EXPECT_EQ(y[0], 0 + 10 * 2 + 100 * 10 + 1000 * 12);  // p = 0, q = 0
  EXPECT_EQ(y[1 * 3 + 2], 7 + 10 * 9 + 100 * 17 + 1000 * 19);
}

TEST(RefConv2d, GroupsAreIndependentConvolutions) {
  // A g=2 convolution equals two g=1 convolutions on the halves of the channels.
  const Problem grouped = parse_problem("conv2d mb=2 ic=4 ih=5 iw=5 oc=6 kh=3 kw=3 ph=1 g=2");
  TensorSet ts = make_tensors(grouped);
  fill_inputs(ts, grouped, 3);
  run("conv2d.ref.naive", grouped, ts);
  const Problem half = parse_problem("conv2d mb=2 ic=2 ih=5 iw=5 oc=3 kh=3 kw=3 ph=1");
  for (int g = 0; g < 2; ++g) {
    TensorSet h = make_tensors(half);
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 2 * 25; ++i)
        h.at(Arg::src).store(n * 50 + i, ts.at(Arg::src).load(n * 100 + g * 50 + i));
    for (int i = 0; i < 3 * 2 * 9; ++i)
      h.at(Arg::wei).store(i, ts.at(Arg::wei).load(g * 54 + i));
    for (int i = 0; i < 3; ++i)
      h.at(Arg::bias).store(i, ts.at(Arg::bias).load(g * 3 + i));
    run("conv2d.ref.naive", half, h);
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 3 * 25; ++i)
        EXPECT_EQ(h.at(Arg::dst).load(n * 75 + i), ts.at(Arg::dst).load(n * 150 + g * 75 + i));
  }
}

TEST(RefLstm, OneStepHandComputed) {
  // I = H = 1, one step. Gates i, f, g, o:
  //   a_i = 0.5·1 + 0.1·0.5 + 0   = 0.55  -> i = σ(0.55) = 0.634136
  //   a_f = -0.5·1 + 0.2·0.5 + 0.5 = 0.10 -> f = σ(0.10) = 0.524979
  //   a_g = 1.0·1 + 0.3·0.5 - 0.5 = 0.65  -> g = tanh(0.65) = 0.571670
  //   a_o = 0.25·1 + 0.4·0.5 + 0  = 0.45  -> o = σ(0.45) = 0.610639
  //   c = f·(-1) + i·g = -0.162463,  h = o·tanh(c) = -0.0983425
  const Problem p = parse_problem("lstm mb=1 t=1 ic=1 hc=1");
  TensorSet ts = make_tensors(p);
  set(ts, Arg::src, {1.0});
  set(ts, Arg::wei, {0.5, -0.5, 1.0, 0.25});
  set(ts, Arg::wei_iter, {0.1, 0.2, 0.3, 0.4});
  set(ts, Arg::bias, {0.0, 0.5, -0.5, 0.0});
  set(ts, Arg::src_iter, {0.5});
  set(ts, Arg::src_iter_c, {-1.0});
  const std::unique_ptr<ref::Oracle> k = run("lstm.ref.naive", p, ts);
  EXPECT_NEAR(get(ts, Arg::dst)[0], -0.09834252495717613, 1e-7);  // f32 output
  EXPECT_NEAR(k->exact()[0], -0.09834252495717613, 1e-8);         // of the f32-stored inputs
  // The bound of lstm.cpp's header, by hand: δa = |b| + |W·x| + |W_h·h| = 0.55, 1.1, 1.65,
  // 0.45; δi = δa_i/4 + i = 0.771636, δf = 0.799979, δg = δa_g + |g| = 2.22167,
  // δo = 0.723139; δc = |c₀|·δf + |g|·δi + i·δg + |f·c₀| + |i·g| = 3.537436;
  // δh = |tanh c|·δo + o·(δc + |tanh c|) + |h| = 2.473242.
  EXPECT_NEAR(k->magnitude()[0], 2.4732424554765164, 1e-7);
  // Nothing stored comes in at the first step: σh is h's own rounding, |h|.
  EXPECT_NEAR(k->stored()[0], 0.09834252495717613, 1e-8);
}

TEST(RefLstm, MagnitudeIsFiniteAndCoversTheValue) {
  const Problem p = parse_problem("lstm mb=2 t=5 ic=3 hc=4 l=2");
  TensorSet ts = make_tensors(p);
  fill_inputs(ts, p, 7);
  const std::unique_ptr<ref::Oracle> k = run("lstm.ref.naive", p, ts);
  ASSERT_EQ(k->magnitude().size(), k->exact().size());
  for (size_t i = 0; i < k->exact().size(); ++i) {
    EXPECT_TRUE(std::isfinite(k->magnitude()[i])) << i;
    EXPECT_GE(k->magnitude()[i], std::fabs(k->exact()[i])) << i;  // at least h's own rounding
  }
}

TEST(RefLstm, TwoLayersEqualTwoSingleLayerRuns) {
  const Problem two = parse_problem("lstm mb=3 t=4 ic=5 hc=6 l=2");
  TensorSet ts = make_tensors(two);
  fill_inputs(ts, two, 11);
  const std::unique_ptr<ref::Oracle> stacked = run("lstm.ref.naive", two, ts);
  Doubles second_magnitude, second_stored;  // of the single-layer run of layer 2

  const int64_t G = 24, H = 6, I = 5, N = 3;
  auto layer = [&](const Problem& p, int l, const std::vector<double>& src) {
    TensorSet one = make_tensors(p);
    set(one, Arg::src, src);
    const int64_t width = l == 0 ? I : H, offset = l == 0 ? 0 : G * I;
    for (int64_t i = 0; i < G * width; ++i)
      one.at(Arg::wei).store(i, ts.at(Arg::wei).load(offset + i));
    for (int64_t i = 0; i < G * H; ++i)
      one.at(Arg::wei_iter).store(i, ts.at(Arg::wei_iter).load(l * G * H + i));
    for (int64_t i = 0; i < G; ++i)
      one.at(Arg::bias).store(i, ts.at(Arg::bias).load(l * G + i));
    for (int64_t i = 0; i < N * H; ++i) {
      one.at(Arg::src_iter).store(i, ts.at(Arg::src_iter).load(l * N * H + i));
      one.at(Arg::src_iter_c).store(i, ts.at(Arg::src_iter_c).load(l * N * H + i));
    }
    const std::unique_ptr<ref::Oracle> k = run("lstm.ref.naive", p, one);
    second_magnitude = k->magnitude();
    second_stored = k->stored();
    return get(one, Arg::dst);
  };
  const std::vector<double> h1 = layer(parse_problem("lstm mb=3 t=4 ic=5 hc=6"), 0, get(ts, Arg::src));
  const std::vector<double> h2 = layer(parse_problem("lstm mb=3 t=4 ic=6 hc=6"), 1, h1);
  const std::vector<double> y = get(ts, Arg::dst);
  ASSERT_EQ(y.size(), h2.size());
  // Single-layer runs round layer 1's output to f32 before layer 2 reads it.
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_NEAR(y[i], h2[i], 1e-6);
  // The single run reads layer 1's output as exact; the stacked one carries its errors in.
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_GT(stacked->magnitude()[i], second_magnitude[i]) << i;
    EXPECT_GT(stacked->stored()[i], second_stored[i]) << i;
  }
}

}  // namespace
}  // namespace lb
