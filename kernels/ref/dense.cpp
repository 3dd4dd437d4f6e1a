// dense.ref.naive — the oracle for fully connected layers.
// y[n][o] = b[o] + sum_i x[n][i] * W[o][i]; x is MB×IC, W is OC×IC, y is MB×OC.
// Every dtype: inputs are read as the values they store, products summed in double.
// Alongside, each output's magnitude Σ_i |x[n][i]·W[o][i]| + |b[o]|, and |y| as the
// part its rounding to dst adds (ref/kernels.h).
//
// Backward, with dz the gradient of y before the ReLU (ref/common.h, relu_backward):
//   dx[n][i] = sum_o dz[n][o] * W[o][i]        (bwd_d: dz · W)
//   dW[o][i] = sum_n dz[n][o] * x[n][i]        (bwd_w: dzᵀ · x)
//   db[o]    = sum_n dz[n][o]
// each with its magnitude, the sum of the terms' absolute values.
#include <cmath>

#include "kernels/ref/common.h"
#include "kernels/ref/kernels.h"

namespace lb::ref {
namespace {

class RefDense final : public Oracle {
 public:
  std::string supports(const Problem& p) const override { return training_dtypes(p); }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    problem_ = p;
    p_ = p.dense();
    relu_ = p.relu;
    x_.resize(p_.mb * p_.ic);
    w_.resize(p_.oc * p_.ic);
    b_.resize(p_.oc);
    dz_.resize(p_.mb * p_.oc);
    size_expected(p, ts);
  }

  void run(TensorSet& ts) override {
    if (runs_forward(problem_.pass)) forward(ts);
    if (runs_backward(problem_.pass)) backward(ts);
  }

 private:
  void forward(TensorSet& ts) {
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

  void backward(TensorSet& ts) {
    relu_backward(relu_, ts, dz_, expected_[int(Arg::diff_dst)]);
    const int64_t M = p_.mb, N = p_.oc, K = p_.ic;
    if (computes_data_grads(problem_.pass)) {
      load_all(ts.at(Arg::wei), w_);
      Expected& dx = expected_[int(Arg::diff_src)];
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) {
          double acc = 0, magnitude = 0;
          for (int64_t n = 0; n < N; ++n) {
            const double term = dz_[m * N + n] * w_[n * K + k];
            acc += term;
            magnitude += std::fabs(term);
          }
          dx.value[m * K + k] = acc;
          dx.magnitude[m * K + k] = magnitude;
          dx.stored[m * K + k] = std::fabs(acc);
        }
      store_all(dx.value, ts.at(Arg::diff_src));
    }
    if (computes_weight_grads(problem_.pass)) {
      load_all(ts.at(Arg::src), x_);
      Expected &dw = expected_[int(Arg::diff_wei)], &db = expected_[int(Arg::diff_bias)];
      for (int64_t n = 0; n < N; ++n) {
        if (!computes_row(n)) continue;
        double bias = 0, bias_magnitude = 0;
        for (int64_t m = 0; m < M; ++m) {
          bias += dz_[m * N + n];
          bias_magnitude += std::fabs(dz_[m * N + n]);
        }
        db.value[n] = bias;
        db.magnitude[n] = bias_magnitude;
        db.stored[n] = std::fabs(bias);
        for (int64_t k = 0; k < K; ++k) {
          double acc = 0, magnitude = 0;
          for (int64_t m = 0; m < M; ++m) {
            const double term = dz_[m * N + n] * x_[m * K + k];
            acc += term;
            magnitude += std::fabs(term);
          }
          dw.value[n * K + k] = acc;
          dw.magnitude[n * K + k] = magnitude;
          dw.stored[n * K + k] = std::fabs(acc);
        }
      }
      store_all(dw.value, ts.at(Arg::diff_wei));
      store_all(db.value, ts.at(Arg::diff_bias));
    }
  }

  Problem problem_;
  Dense p_;
  Relu relu_ = Relu::none;
  Doubles x_, w_, b_, dz_;
};

}  // namespace

std::unique_ptr<Kernel> make_dense() {
  return std::make_unique<RefDense>();
}

}  // namespace lb::ref
