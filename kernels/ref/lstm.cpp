// lstm.ref.naive — the oracle for stacked unidirectional LSTMs.
//
// Gate order i, f, g, o (as oneDNN, cuDNN and PyTorch order them). For layer l and
// step t, with x_t = src[t] for l = 0 and x_t = h_t of layer l-1 above that:
//   a = W_x[l] · x_t + W_h[l] · h_{t-1} + b[l]            (4·H values)
//   i = σ(a[0:H])  f = σ(a[H:2H])  g = tanh(a[2H:3H])  o = σ(a[3H:4H])
//   c_t = f ⊙ c_{t-1} + i ⊙ g
//   h_t = o ⊙ tanh(c_t)
// with h_{-1} = src_iter[l], c_{-1} = src_iter_c[l], and dst[t] = h_t of the last layer.
// The ReLU mode applies to dst. One bias per gate (cuDNN's two biases add up to it).
//
// Layouts (T steps, N batch, I input size, H hidden size, L layers), all row-major:
//   src T×N×I; dst T×N×H; src_iter, src_iter_c L×N×H; bias L×4H; wei_iter L×4H×H;
//   wei: layer 0 is 4H×I, then layers 1..L-1 are 4H×H each, stacked.
// States are carried in double between steps; no rounding to the dtype in between.
#include <cmath>

#include "kernels/ref/common.h"
#include "kernels/ref/kernels.h"

namespace lb::ref {
namespace {

double sigmoid(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

class RefLstm final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32, DType::tf32, DType::f16, DType::bf16}); !why.empty())
      return why + ": no quantisation of the LSTM's recurrent state is defined yet";
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    s_ = p.lstm();
    relu_ = p.relu;
    x_.resize(ts.at(Arg::src).elements());
    wx_.resize(ts.at(Arg::wei).elements());
    wh_.resize(ts.at(Arg::wei_iter).elements());
    b_.resize(ts.at(Arg::bias).elements());
    h_.resize(ts.at(Arg::src_iter).elements());
    c_.resize(ts.at(Arg::src_iter_c).elements());
    seq_.resize(s_.t * s_.mb * std::max(s_.ic, s_.hc));
    gates_.resize(4 * s_.hc);
    y_.resize(ts.at(Arg::dst).elements());
  }

  void run(TensorSet& ts) override {
    load_all(ts.at(Arg::src), x_);
    load_all(ts.at(Arg::wei), wx_);
    load_all(ts.at(Arg::wei_iter), wh_);
    load_all(ts.at(Arg::bias), b_);
    load_all(ts.at(Arg::src_iter), h_);
    load_all(ts.at(Arg::src_iter_c), c_);
    const int64_t T = s_.t, N = s_.mb, H = s_.hc, G = 4 * s_.hc;
    std::copy(x_.begin(), x_.end(), seq_.begin());  // layer input sequence, T×N×width
    int64_t width = s_.ic;
    const double* wx = wx_.data();
    for (int64_t l = 0; l < s_.l; ++l) {
      const double* wh = &wh_[l * G * H];  // 4H×H
      const double* b = &b_[l * G];
      double* h = &h_[l * N * H];  // N×H, h_{t-1} then h_t
      double* c = &c_[l * N * H];
      for (int64_t t = 0; t < T; ++t)
        for (int64_t n = 0; n < N; ++n) {
          const double* xt = &seq_[(t * N + n) * width];
          double* hn = &h[n * H];
          for (int64_t j = 0; j < G; ++j) {
            double acc = b[j];
            for (int64_t k = 0; k < width; ++k)
              acc += wx[j * width + k] * xt[k];
            for (int64_t k = 0; k < H; ++k)
              acc += wh[j * H + k] * hn[k];
            gates_[j] = acc;
          }
          for (int64_t j = 0; j < H; ++j) {
            const double i = sigmoid(gates_[j]), f = sigmoid(gates_[H + j]);
            const double g = std::tanh(gates_[2 * H + j]), o = sigmoid(gates_[3 * H + j]);
            double& cj = c[n * H + j];
            cj = f * cj + i * g;
            hn[j] = o * std::tanh(cj);
          }
          std::copy(hn, hn + H, &y_[(t * N + n) * H]);
        }
      wx += G * width;
      width = H;
      std::copy(y_.begin(), y_.end(), seq_.begin());  // this layer's h_t feed the next layer
    }
    write_output(relu_, ts, y_);
  }

 private:
  Lstm s_;
  Relu relu_ = Relu::none;
  std::vector<double> x_, wx_, wh_, b_, h_, c_, seq_, gates_, y_;
};

}  // namespace

std::unique_ptr<Kernel> make_lstm() {
  return std::make_unique<RefLstm>();
}

}  // namespace lb::ref
