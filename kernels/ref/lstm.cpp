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
//
// Backward through time (dir=bwd; train runs the forward first and takes the ReLU's mask
// from its own dst), with dz the gradient of dst before the ReLU (ref/common.h) arriving
// at the last layer's h_t. Per layer from the last down, per step from the last back,
// with dh_next = dc_next = 0 after the last step:
//   dh = up_t + dh_next                   (up: dz, or the layer above's gradient of its input)
//   do = dh·tanh(c_t)    dc = dc_next + dh·o·(1 - tanh² c_t)
//   di = dc·g    df = dc·c_{t-1}    dg = dc·i    dc_next = dc·f
//   da = (di·i(1-i), df·f(1-f), dg·(1-g²), do·o(1-o))             (4·H values)
//   dW_x[l] += da ⊗ x_t    dW_h[l] += da ⊗ h_{t-1}    db[l] += da
//   dx_t = W_x[l]ᵀ·da (diff_src, or the layer below's up_t)    dh_next = W_h[l]ᵀ·da
// and diff_src_iter[l], diff_src_iter_c[l] are dh_next, dc_next after step 0. The forward
// is recomputed in double from the inputs, its gates, cells and h kept for every step.
// Bounds as in the forward: each elementwise value carries δ, first order in the errors of
// its operands (the forward's δ of the gates and c included) plus its own rounding; a dot
// product's δ is Σ|terms| + sqrt(Σ carried²); stored() is |value|, rounded once.
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
    problem_ = p;
    s_ = p.lstm();
    relu_ = p.relu;
    size_expected(p, ts);
    record_ = runs_backward(p.pass);
    const int64_t T = s_.t, N = s_.mb, H = s_.hc, L = s_.l;
    if (record_) {
      act_.resize(L * T * N * 4 * H);
      dact_.resize(act_.size());
      cell_.resize(L * T * N * H);
      dcell_.resize(cell_.size());
      hid_.resize(cell_.size());
      dhid_.resize(cell_.size());
      dz_.resize(T * N * H);
      up_.resize(T * N * H);
      dup_.resize(up_.size());
      down_.resize(T * N * std::max(s_.ic, H));
      ddown_.resize(down_.size());
      dhn_.resize(N * H);
      ddhn_.resize(N * H);
      dcn_.resize(N * H);
      ddcn_.resize(N * H);
      da_.resize(4 * H);
      dda_.resize(4 * H);
      next_.resize(H);
      dnext_.resize(H);
      wx_sq_.resize(expected_[int(Arg::diff_wei)].value.size());
      wh_sq_.resize(expected_[int(Arg::diff_wei_iter)].value.size());
      b_sq_.resize(expected_[int(Arg::diff_bias)].value.size());
    }
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
    y_.resize(T * N * H);  // the last layer's h, also where a backward pass has no dst
    magnitude_.resize(y_.size());
    stored_.resize(y_.size());
  }

  void run(TensorSet& ts) override {
    forward(ts);
    if (runs_forward(problem_.pass)) write_output(relu_, ts, y_);
    if (record_) backward(ts);
  }

 private:
  void forward(TensorSet& ts) {
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
            if (record_) {
              const int64_t q = (l * T + t) * N + n;
              const double acts[4] = {i, f, g, o};
              const double bounds[4] = {dgates_[j].arith / 4 + i, dgates_[H + j].arith / 4 + f,
                                        dgates_[2 * H + j].arith + std::fabs(g),
                                        dgates_[3 * H + j].arith / 4 + o};
              for (int gate = 0; gate < 4; ++gate) {
                act_[q * G + gate * H + j] = acts[gate];
                dact_[q * G + gate * H + j] = bounds[gate];
              }
              cell_[q * H + j] = c[n * H + j];
              dcell_[q * H + j] = dc[n * H + j].arith;
              hid_[q * H + j] = hn[j];
              dhid_[q * H + j] = dhn[j].arith;
            }
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
  }

  // Backward through time (header), after forward() kept every step.
  void backward(TensorSet& ts) {
    relu_backward(relu_, ts, dz_, expected_[int(Arg::diff_dst)]);
    load_all(ts.at(Arg::src_iter), h_);  // forward() carried them on
    load_all(ts.at(Arg::src_iter_c), c_);
    const int64_t T = s_.t, N = s_.mb, H = s_.hc, G = 4 * s_.hc, L = s_.l;
    Expected &dx = expected_[int(Arg::diff_src)], &dwx = expected_[int(Arg::diff_wei)];
    Expected &dwh = expected_[int(Arg::diff_wei_iter)], &db = expected_[int(Arg::diff_bias)];
    Expected &dh0 = expected_[int(Arg::diff_src_iter)], &dc0 = expected_[int(Arg::diff_src_iter_c)];
    for (Expected* e : {&dwx, &dwh, &db})
      clear(*e);
    std::fill(wx_sq_.begin(), wx_sq_.end(), 0.0);
    std::fill(wh_sq_.begin(), wh_sq_.end(), 0.0);
    std::fill(b_sq_.begin(), b_sq_.end(), 0.0);
    std::copy(dz_.begin(), dz_.end(), up_.begin());  // dz's values are exact (masked copies)
    std::fill(dup_.begin(), dup_.end(), 0.0);
    // A dot product's value and bound: Σ terms, Σ|terms| + sqrt(Σ carried²).
    struct Dot {
      double value = 0, magnitude = 0, carried = 0;
      void add(double u, double du, double v, double dv) {
        value += u * v;
        magnitude += std::fabs(u * v);
        carried += (u * dv) * (u * dv) + (v * du) * (v * du);
      }
      double bound() const { return magnitude + std::sqrt(carried); }
    };
    // σ'(v) = v(1 - v) from the gate's value v, tanh'(v) = 1 - v², each with its bound.
    auto sigmoid_slope = [](double v, double dv, double& slope, double& dslope) {
      slope = v * (1 - v);
      dslope = std::fabs(1 - 2 * v) * dv + std::fabs(slope);
    };
    for (int64_t l = L - 1; l >= 0; --l) {
      const int64_t width = l == 0 ? s_.ic : H;
      const int64_t wx_at = l == 0 ? 0 : G * s_.ic + (l - 1) * G * H;
      const double* wx = &wx_[wx_at];
      const double* wh = &wh_[l * G * H];
      std::fill(dhn_.begin(), dhn_.end(), 0.0);
      std::fill(ddhn_.begin(), ddhn_.end(), 0.0);
      std::fill(dcn_.begin(), dcn_.end(), 0.0);
      std::fill(ddcn_.begin(), ddcn_.end(), 0.0);
      for (int64_t t = T - 1; t >= 0; --t)
        for (int64_t n = 0; n < N; ++n) {
          const int64_t q = (l * T + t) * N + n, prev = q - N;  // this step's record, the one before
          // The layer's input at t and h_{t-1}, with their forward bounds.
          auto input = [&](int64_t k, double& dv) {
            if (l == 0) {
              dv = 0;
              return x_[(t * N + n) * s_.ic + k];
            }
            const int64_t below = ((l - 1) * T + t) * N + n;
            dv = dhid_[below * H + k];
            return hid_[below * H + k];
          };
          auto h_prev = [&](int64_t k, double& dv) {
            dv = t > 0 ? dhid_[prev * H + k] : 0.0;
            return t > 0 ? hid_[prev * H + k] : h_[(l * N + n) * H + k];
          };
          for (int64_t j = 0; j < H; ++j) {
            const double* a = &act_[q * G];
            const double* da_bound = &dact_[q * G];
            const double i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j];
            const double di_f = da_bound[j], df_f = da_bound[H + j], dg_f = da_bound[2 * H + j],
                         do_f = da_bound[3 * H + j];
            const double c = cell_[q * H + j], dc_f = dcell_[q * H + j];
            const double c_prev = t > 0 ? cell_[prev * H + j] : c_[(l * N + n) * H + j];
            const double dc_prev_f = t > 0 ? dcell_[prev * H + j] : 0.0;
            const double tc = std::tanh(c), dtc_f = dc_f + std::fabs(tc);
            const double dh = up_[(t * N + n) * H + j] + dhn_[n * H + j];
            const double ddh = dup_[(t * N + n) * H + j] + ddhn_[n * H + j] + std::fabs(dh);
            const double d_o = dh * tc, dd_o = std::fabs(tc) * ddh + std::fabs(dh) * dtc_f + std::fabs(d_o);
            const double dtc = dh * o, ddtc = o * ddh + std::fabs(dh) * do_f + std::fabs(dtc);
            const double sc = 1 - tc * tc, dsc = 2 * std::fabs(tc) * dtc_f + std::fabs(sc);
            const double dc = dcn_[n * H + j] + dtc * sc;
            const double ddc = ddcn_[n * H + j] + std::fabs(sc) * ddtc + std::fabs(dtc) * dsc + std::fabs(dc);
            const double di = dc * g, ddi = std::fabs(g) * ddc + std::fabs(dc) * dg_f + std::fabs(di);
            const double df = dc * c_prev,
                         ddf = std::fabs(c_prev) * ddc + std::fabs(dc) * dc_prev_f + std::fabs(df);
            const double dg = dc * i, ddg = i * ddc + std::fabs(dc) * di_f + std::fabs(dg);
            dcn_[n * H + j] = dc * f;
            ddcn_[n * H + j] = f * ddc + std::fabs(dc) * df_f + std::fabs(dc * f);
            double si, dsi, sf, dsf, so, dso;
            sigmoid_slope(i, di_f, si, dsi);
            sigmoid_slope(f, df_f, sf, dsf);
            sigmoid_slope(o, do_f, so, dso);
            const double sg = 1 - g * g, dsg = 2 * std::fabs(g) * dg_f + std::fabs(sg);
            const double grads[4] = {di, df, dg, d_o}, dgrads[4] = {ddi, ddf, ddg, dd_o};
            const double slopes[4] = {si, sf, sg, so}, dslopes[4] = {dsi, dsf, dsg, dso};
            for (int gate = 0; gate < 4; ++gate) {
              const double v = grads[gate] * slopes[gate];
              da_[gate * H + j] = v;
              dda_[gate * H + j] = std::fabs(slopes[gate]) * dgrads[gate] +
                                   std::fabs(grads[gate]) * dslopes[gate] + std::fabs(v);
            }
          }
          // Parameter gradients, summed over steps and samples.
          for (int64_t r = 0; r < G; ++r) {
            const double d = da_[r], dd = dda_[r];
            db.value[l * G + r] += d;
            db.magnitude[l * G + r] += std::fabs(d);
            b_sq_[l * G + r] += dd * dd;
            for (int64_t k = 0; k < width; ++k) {
              double dv;
              const double v = input(k, dv);
              const int64_t at = wx_at + r * width + k;
              dwx.value[at] += d * v;
              dwx.magnitude[at] += std::fabs(d * v);
              wx_sq_[at] += (v * dd) * (v * dd) + (d * dv) * (d * dv);
            }
            for (int64_t k = 0; k < H; ++k) {
              double dv;
              const double v = h_prev(k, dv);
              const int64_t at = (l * G + r) * H + k;
              dwh.value[at] += d * v;
              dwh.magnitude[at] += std::fabs(d * v);
              wh_sq_[at] += (v * dd) * (v * dd) + (d * dv) * (d * dv);
            }
          }
          // The gradients of the layer's input at t and of h_{t-1}.
          for (int64_t k = 0; k < width; ++k) {
            Dot dot;
            for (int64_t r = 0; r < G; ++r)
              dot.add(wx[r * width + k], 0.0, da_[r], dda_[r]);
            down_[(t * N + n) * width + k] = dot.value;
            ddown_[(t * N + n) * width + k] = dot.bound();
          }
          for (int64_t k = 0; k < H; ++k) {
            Dot dot;
            for (int64_t r = 0; r < G; ++r)
              dot.add(wh[r * H + k], 0.0, da_[r], dda_[r]);
            next_[k] = dot.value;
            dnext_[k] = dot.bound();
          }
          std::copy(next_.begin(), next_.end(), dhn_.begin() + n * H);
          std::copy(dnext_.begin(), dnext_.end(), ddhn_.begin() + n * H);
        }
      for (int64_t k = 0; k < N * H; ++k) {
        dh0.value[l * N * H + k] = dhn_[k];
        dh0.magnitude[l * N * H + k] = ddhn_[k];
        dc0.value[l * N * H + k] = dcn_[k];
        dc0.magnitude[l * N * H + k] = ddcn_[k];
      }
      if (l > 0) {  // the layer below's arriving gradient
        std::copy(down_.begin(), down_.begin() + T * N * H, up_.begin());
        std::copy(ddown_.begin(), ddown_.begin() + T * N * H, dup_.begin());
      } else {
        std::copy(down_.begin(), down_.begin() + T * N * s_.ic, dx.value.begin());
        std::copy(ddown_.begin(), ddown_.begin() + T * N * s_.ic, dx.magnitude.begin());
      }
    }
    for (size_t k = 0; k < wx_sq_.size(); ++k)
      dwx.magnitude[k] += std::sqrt(wx_sq_[k]);
    for (size_t k = 0; k < wh_sq_.size(); ++k)
      dwh.magnitude[k] += std::sqrt(wh_sq_[k]);
    for (size_t k = 0; k < b_sq_.size(); ++k)
      db.magnitude[k] += std::sqrt(b_sq_[k]);
    const Arg written[] = {Arg::diff_src,  Arg::diff_wei,      Arg::diff_wei_iter,
                           Arg::diff_bias, Arg::diff_src_iter, Arg::diff_src_iter_c};
    for (Arg a : written) {
      Expected& e = expected_[int(a)];
      for (size_t k = 0; k < e.value.size(); ++k)
        e.stored[k] = std::fabs(e.value[k]);
      store_all(e.value, ts.at(a));
    }
  }

  Problem problem_;
  Lstm s_;
  Relu relu_ = Relu::none;
  bool record_ = false;  // a backward pass: forward() keeps every step
  Doubles x_, wx_, wh_, b_, h_, c_, seq_, gates_;
  std::vector<Bound> dh_, dc_, dseq_, dgates_;  // the error bounds of h_, c_, seq_, gates_
  // Kept by forward() for the backward, per layer, step and sample: the gates' values after
  // their functions, c_t and h_t, each with its arithmetic bound (the d-prefixed twin).
  Doubles act_, dact_, cell_, dcell_, hid_, dhid_;
  // The backward's: dz; the gradient arriving at the layer's h sequence and the one it
  // sends down; dh_next and dc_next per sample; one step's da and dh_next; the sums of
  // squared carried errors of the parameter gradients. Each value array with its bound.
  Doubles dz_, up_, dup_, down_, ddown_, dhn_, ddhn_, dcn_, ddcn_, da_, dda_, next_, dnext_;
  Doubles wx_sq_, wh_sq_, b_sq_;
};

}  // namespace

std::unique_ptr<Kernel> make_lstm() {
  return std::make_unique<RefLstm>();
}

}  // namespace lb::ref
