// dense.ref.naive — the oracle for fully connected layers.
// y[n][o] = b[o] + sum_i x[n][i] * W[o][i]; x is MB×IC, W is OC×IC, y is MB×OC.
// Every dtype: inputs are read as the values they store, products summed in double.
// Alongside, each output's magnitude Σ_i |x[n][i]·W[o][i]| + |b[o]|, and |y| as the
// part its rounding to dst adds (ref/kernels.h).
#include <cmath>

#include "kernels/ref/common.h"
#include "kernels/ref/kernels.h"

namespace lb::ref {
namespace {

class RefDense final : public Oracle {
 public:
  std::string supports(const Problem&) const override { return {}; }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    p_ = p.dense();
    relu_ = p.relu;
    x_.resize(ts.at(Arg::src).elements());
    w_.resize(ts.at(Arg::wei).elements());
    b_.resize(ts.at(Arg::bias).elements());
    y_.resize(ts.at(Arg::dst).elements());
    magnitude_.resize(y_.size());
    stored_.resize(y_.size());
  }

  void run(TensorSet& ts) override {
    load_all(ts.at(Arg::src), x_);
    load_all(ts.at(Arg::wei), w_);
    load_all(ts.at(Arg::bias), b_);
    const int64_t M = p_.mb, N = p_.oc, K = p_.ic;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = b_[n], magnitude = std::fabs(b_[n]);
        const double* x = &x_[m * K];  // row m of x
        const double* w = &w_[n * K];  // row n of W
        for (int64_t k = 0; k < K; ++k) {
          const double term = x[k] * w[k];
          acc += term;
          magnitude += std::fabs(term);
        }
        y_[m * N + n] = acc;
        magnitude_[m * N + n] = magnitude;
        stored_[m * N + n] = std::fabs(acc);  // rounded once, to dst
      }
    write_output(relu_, ts, y_);
  }

 private:
  Dense p_;
  Relu relu_ = Relu::none;
  std::vector<double> x_, w_, b_;
};

}  // namespace

std::unique_ptr<Kernel> make_dense() {
  return std::make_unique<RefDense>();
}

}  // namespace lb::ref
