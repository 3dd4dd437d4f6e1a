// add.ref.naive and softmax.ref.naive — the oracles for the element-wise ops, in double:
//   add:      y = x + x₁; its magnitude |x| + |x₁| (the one rounding of a float sum is at
//             most a unit of that).
//   softmax:  y_c = exp(x_c - m) / Σ_k exp(x_k - m), m = max_k x_k, over the channels at
//             each position (kernels/ops/softmax.h); its magnitude y·(4 + |x - m|): a float
//             kernel's exponent x - m is rounded by up to u·|x - m|, a relative error of
//             exp(), and exp() itself, the division and each term of the sum (whose length
//             the allowance's √K counts) err by a few units of y.
// The stored value of both is |y|.
#include <cmath>

#include "kernels/ref/common.h"
#include "kernels/ref/kernels.h"

namespace lb::ref {
namespace {

class RefAdd final : public Oracle {
 public:
  std::string supports(const Problem&) const override { return {}; }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    relu_ = p.relu;
    x_.resize(ts.at(Arg::src).elements());
    x1_.resize(ts.at(Arg::src_1).elements());
    size_expected(p, ts);
  }

  void run(TensorSet& ts) override {
    load_all(ts.at(Arg::src), x_);
    load_all(ts.at(Arg::src_1), x1_);
    for (size_t i = 0; i < x_.size(); ++i) {
      y_[i] = x_[i] + x1_[i];
      magnitude_[i] = std::fabs(x_[i]) + std::fabs(x1_[i]);
      stored_[i] = std::fabs(y_[i]);
    }
    write_output(relu_, ts, y_);
  }

 private:
  Relu relu_ = Relu::none;
  Doubles x_, x1_;
};

class RefSoftmax final : public Oracle {
 public:
  std::string supports(const Problem&) const override { return {}; }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    s_ = p.softmax();
    relu_ = p.relu;
    x_.resize(ts.at(Arg::src).elements());
    size_expected(p, ts);
  }

  void run(TensorSet& ts) override {
    load_all(ts.at(Arg::src), x_);
    const int64_t C = s_.ic, inner = s_.ih * s_.iw;
    for (int64_t n = 0; n < s_.mb; ++n)
      for (int64_t at = 0; at < inner; ++at) {
        const int64_t base = n * C * inner + at;
        double top = -INFINITY, sum = 0.0;
        for (int64_t c = 0; c < C; ++c)
          top = std::max(top, x_[base + c * inner]);
        for (int64_t c = 0; c < C; ++c)
          sum += std::exp(x_[base + c * inner] - top);
        for (int64_t c = 0; c < C; ++c) {
          const int64_t i = base + c * inner;
          y_[i] = std::exp(x_[i] - top) / sum;
          magnitude_[i] = y_[i] * (4.0 + (top - x_[i]));
          stored_[i] = y_[i];
        }
      }
    write_output(relu_, ts, y_);
  }

 private:
  Softmax s_;
  Relu relu_ = Relu::none;
  Doubles x_;
};

}  // namespace

std::unique_ptr<Kernel> make_add() {
  return std::make_unique<RefAdd>();
}

std::unique_ptr<Kernel> make_softmax() {
  return std::make_unique<RefSoftmax>();
}

}  // namespace lb::ref
