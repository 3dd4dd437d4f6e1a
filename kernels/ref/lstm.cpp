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
//
// Magnitude and stored (ref/kernels.h). A kernel's rounding errors enter at every step
// and are carried on by the state, so the reference follows each value v with bounds on
// the error a correct kernel may have in it, first order in the rounding units, of two
// kinds that verification multiplies by different units: δv, from the arithmetic (unit
// ε: the accumulation's), and σv, from storing h in dst's format and reading it back
// (unit: that format's, 2⁻⁸ for bf16). Per value, for δ:
//   δa = |b| + Σ|W·x| + Σ|W_h·h|              this step's dot product, as in dense.cpp
//        + sqrt(Σ (W·δx)² + Σ (W_h·δh)²)       earlier errors carried through the weights
//   δi = δa_i/4 + i   (σ is 1/4-Lipschitz; + i: σ's own rounding)   δf, δo likewise
//   δg = δa_g + |g|   (tanh is 1-Lipschitz)
//   δc_t = f·δc_{t-1} + |c_{t-1}|·δf + |g|·δi + i·δg + |f·c_{t-1}| + |i·g|
//   δh_t = |tanh c_t|·δo + o·(δc_t + |tanh c_t|) + |h_t|
// and σ the same with the step's own roundings left out (no |b| + Σ|W·x| + ..., no + i,
// + |g|, ...) but for the last + |h_t|, h's rounding to its storage. Both are 0 for the
// given inputs and initial states; layer l > 0 reads layer l-1's h_t with its bounds;
// magnitude() and stored() are δh and σh of the last layer. The carried errors add in
// quadrature, as independent errors do (the √K of the accumulation assumes the same):
// the worst case, Σ|W_h|·δh, is sound but multiplies the bound each step by about
// 0.4·Σ_k |W_h[j][k]| ≈ H/(5·√(I+H)) (weights uniform in ±1/√(I+H); σ' ≤ 1/4 and gate
// values near 1/2 give the 0.4) — 3 at I = H = 512, so exponentially in T, passing
// anything after a few steps — while the errors themselves do not grow.
#include <cmath>

#include "kernels/ref/common.h"
#include "kernels/ref/kernels.h"

namespace lb::ref {
namespace {

double sigmoid(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

// The two error bounds of a value (header): from arithmetic, and from h's storage.
struct Bound {
  double arith = 0.0, stored = 0.0;
};

class RefLstm final : public Oracle {
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
    dh_.resize(h_.size());
    dc_.resize(c_.size());
    seq_.resize(s_.t * s_.mb * std::max(s_.ic, s_.hc));
    dseq_.resize(seq_.size());
    gates_.resize(4 * s_.hc);
    dgates_.resize(gates_.size());
    y_.resize(ts.at(Arg::dst).elements());
    magnitude_.resize(y_.size());
    stored_.resize(y_.size());
  }

  void run(TensorSet& ts) override {
    load_all(ts.at(Arg::src), x_);
    load_all(ts.at(Arg::wei), wx_);
    load_all(ts.at(Arg::wei_iter), wh_);
    load_all(ts.at(Arg::bias), b_);
    load_all(ts.at(Arg::src_iter), h_);
    load_all(ts.at(Arg::src_iter_c), c_);
    const int64_t T = s_.t, N = s_.mb, H = s_.hc, G = 4 * s_.hc;
    std::copy(x_.begin(), x_.end(), seq_.begin());   // layer input sequence, T×N×width
    std::fill(dseq_.begin(), dseq_.end(), Bound{});  // the given input is exact
    std::fill(dh_.begin(), dh_.end(), Bound{});      // so are the initial states
    std::fill(dc_.begin(), dc_.end(), Bound{});
    int64_t width = s_.ic;
    const double* wx = wx_.data();
    for (int64_t l = 0; l < s_.l; ++l) {
      const double* wh = &wh_[l * G * H];  // 4H×H
      const double* b = &b_[l * G];
      double* h = &h_[l * N * H];  // N×H, h_{t-1} then h_t
      double* c = &c_[l * N * H];
      Bound* dh = &dh_[l * N * H];  // their error bounds
      Bound* dc = &dc_[l * N * H];
      for (int64_t t = 0; t < T; ++t)
        for (int64_t n = 0; n < N; ++n) {
          const double* xt = &seq_[(t * N + n) * width];
          const Bound* dxt = &dseq_[(t * N + n) * width];
          double* hn = &h[n * H];
          Bound* dhn = &dh[n * H];
          for (int64_t j = 0; j < G; ++j) {
            double acc = b[j], magnitude = std::fabs(b[j]);
            Bound carried;  // sums of squares
            auto add = [&](double w, double v, const Bound& dv) {
              acc += w * v;
              magnitude += std::fabs(w * v);
              carried.arith += (w * dv.arith) * (w * dv.arith);
              carried.stored += (w * dv.stored) * (w * dv.stored);
            };
            for (int64_t k = 0; k < width; ++k)
              add(wx[j * width + k], xt[k], dxt[k]);
            for (int64_t k = 0; k < H; ++k)
              add(wh[j * H + k], hn[k], dhn[k]);
            gates_[j] = acc;
            dgates_[j] = {magnitude + std::sqrt(carried.arith), std::sqrt(carried.stored)};
          }
          for (int64_t j = 0; j < H; ++j) {
            const double i = sigmoid(gates_[j]), f = sigmoid(gates_[H + j]);
            const double g = std::tanh(gates_[2 * H + j]), o = sigmoid(gates_[3 * H + j]);
            const double c_prev = c[n * H + j];
            c[n * H + j] = f * c_prev + i * g;
            const double tc = std::tanh(c[n * H + j]);
            hn[j] = o * tc;
            // own = 1: the arithmetic bound, which adds this cell's own roundings; 0: the
            // storage bound, which only carries what comes in (header).
            auto cell = [&](double Bound::*kind, double own) {
              const double di = dgates_[j].*kind / 4 + own * i, df = dgates_[H + j].*kind / 4 + own * f;
              const double dg = dgates_[2 * H + j].*kind + own * std::fabs(g);
              const double d_o = dgates_[3 * H + j].*kind / 4 + own * o;
              double& dcj = dc[n * H + j].*kind;
              dcj = f * dcj + std::fabs(c_prev) * df + std::fabs(g) * di + i * dg +
                    own * (std::fabs(f * c_prev) + std::fabs(i * g));
              dhn[j].*kind = std::fabs(tc) * d_o + o * (dcj + own * std::fabs(tc)) + std::fabs(hn[j]);
            };
            cell(&Bound::arith, 1.0);
            cell(&Bound::stored, 0.0);
          }
          for (int64_t j = 0; j < H; ++j) {
            y_[(t * N + n) * H + j] = hn[j];
            magnitude_[(t * N + n) * H + j] = dhn[j].arith;
            stored_[(t * N + n) * H + j] = dhn[j].stored;
          }
        }
      wx += G * width;
      width = H;
      // This layer's h_t, with their bounds, feed the next layer.
      std::copy(y_.begin(), y_.end(), seq_.begin());
      for (size_t i = 0; i < y_.size(); ++i)
        dseq_[i] = {magnitude_[i], stored_[i]};
    }
    write_output(relu_, ts, y_);
  }

 private:
  Lstm s_;
  Relu relu_ = Relu::none;
  Doubles x_, wx_, wh_, b_, h_, c_, seq_, gates_;
  std::vector<Bound> dh_, dc_, dseq_, dgates_;  // the error bounds of h_, c_, seq_, gates_
};

}  // namespace

std::unique_ptr<Kernel> make_lstm() {
  return std::make_unique<RefLstm>();
}

}  // namespace lb::ref
