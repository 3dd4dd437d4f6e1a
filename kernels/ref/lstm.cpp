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
//
// Loop order (the values are the same, each sum in the order written above): a step's
// samples side by side, so that the weights are read once per step; the dot products with
// their k (forward: of the transposed weights) innermost, vectorised; the parameter
// gradients after a layer's steps, a few rows at a time. 5x faster than per sample (a
// 1024-unit, 16-sample, 25-step backward checked against itself: 61 -> 12 s, Zen 5 VM).
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
      daq_.resize(T * N * 4 * H);
      ddaq_.resize(daq_.size());
      mag_k_.resize(N * std::max(s_.ic, H));
      car_k_.resize(mag_k_.size());
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
    gates_.resize(s_.mb * 4 * s_.hc);  // one step's, every sample's
    dgates_.resize(gates_.size());
    mag_.resize(gates_.size());
    car_arith_.resize(gates_.size());
    car_stored_.resize(gates_.size());
    wxt_.resize(wx_.size());
    wht_.resize(wh_.size());
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
    for (int64_t l = 0, at = 0; l < s_.l; ++l) {  // W_x[l] (4H×width) as width×4H, W_h[l] as H×4H
      const int64_t width = l == 0 ? s_.ic : H;
      transpose(&wx_[at], G, width, &wxt_[at]);
      transpose(&wh_[l * G * H], G, H, &wht_[l * G * H]);
      at += G * width;
    }
    std::copy(x_.begin(), x_.end(), seq_.begin());   // layer input sequence, T×N×width
    std::fill(dseq_.begin(), dseq_.end(), Bound{});  // the given input is exact
    std::fill(dh_.begin(), dh_.end(), Bound{});      // so are the initial states
    std::fill(dc_.begin(), dc_.end(), Bound{});
    int64_t width = s_.ic, wxt_at = 0;
    for (int64_t l = 0; l < s_.l; ++l) {
      const double* b = &b_[l * G];
      double* h = &h_[l * N * H];  // N×H, h_{t-1} then h_t
      double* c = &c_[l * N * H];
      Bound* dh = &dh_[l * N * H];  // their error bounds
      Bound* dc = &dc_[l * N * H];
      for (int64_t t = 0; t < T; ++t) {
        // a = b + W_x·x_t + W_h·h_{t-1} for every sample, its magnitude and the sums of squares
        // of the carried errors, each gate's sum in the order of k (add_products).
        for (int64_t n = 0; n < N; ++n)
          for (int64_t j = 0; j < G; ++j) {
            gates_[n * G + j] = b[j];
            mag_[n * G + j] = std::fabs(b[j]);
            car_arith_[n * G + j] = car_stored_[n * G + j] = 0.0;
          }
        add_products(&wxt_[wxt_at], width, &seq_[t * N * width], &dseq_[t * N * width]);
        add_products(&wht_[l * H * G], H, h, dh);
        for (int64_t j = 0; j < N * G; ++j)
          dgates_[j] = {mag_[j] + std::sqrt(car_arith_[j]), std::sqrt(car_stored_[j])};
        for (int64_t n = 0; n < N; ++n) {
          double* hn = &h[n * H];
          Bound* dhn = &dh[n * H];
          const double* gates = &gates_[n * G];
          const Bound* dgates = &dgates_[n * G];
          for (int64_t j = 0; j < H; ++j) {
            const double i = sigmoid(gates[j]), f = sigmoid(gates[H + j]);
            const double g = std::tanh(gates[2 * H + j]), o = sigmoid(gates[3 * H + j]);
            const double c_prev = c[n * H + j];
            c[n * H + j] = f * c_prev + i * g;
            const double tc = std::tanh(c[n * H + j]);
            hn[j] = o * tc;
            // own = 1: the arithmetic bound, which adds this cell's own roundings; 0: the
            // storage bound, which only carries what comes in (header).
            auto cell = [&](double Bound::*kind, double own) {
              const double di = dgates[j].*kind / 4 + own * i, df = dgates[H + j].*kind / 4 + own * f;
              const double dg = dgates[2 * H + j].*kind + own * std::fabs(g);
              const double d_o = dgates[3 * H + j].*kind / 4 + own * o;
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
              const double bounds[4] = {dgates[j].arith / 4 + i, dgates[H + j].arith / 4 + f,
                                        dgates[2 * H + j].arith + std::fabs(g),
                                        dgates[3 * H + j].arith / 4 + o};
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
      }
      wxt_at += G * width;
      width = H;
      // This layer's h_t, with their bounds, feed the next layer.
      std::copy(y_.begin(), y_.end(), seq_.begin());
      for (size_t i = 0; i < y_.size(); ++i)
        dseq_[i] = {magnitude_[i], stored_[i]};
    }
  }

  // rows×cols row-major `m` into cols×rows `out`.
  static void transpose(const double* m, int64_t rows, int64_t cols, double* out) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[c * rows + r] = m[r * cols + c];
  }

  // For every sample n: gates_, mag_, car_arith_, car_stored_ (N×4H) += the products of
  // `wt` (k×4H, a transposed weight) with the sample's k values (v, N×k) and their bounds
  // (dv); an exact value (both bounds 0) carries nothing. Each sum in the order of k; k
  // outer, so that the gates' sums run side by side (vectorised), and the samples inner,
  // a block of gates at a time, so that the weights are read once per step.
  void add_products(const double* wt, int64_t k_count, const double* v, const Bound* dv) {
    const int64_t G = 4 * s_.hc, N = s_.mb;
    constexpr int64_t kGates = 256;
    for (int64_t j0 = 0; j0 < G; j0 += kGates) {
      const int64_t j1 = std::min(j0 + kGates, G);
      for (int64_t k = 0; k < k_count; ++k) {
        const double* w = &wt[k * G];
        for (int64_t n = 0; n < N; ++n) {
          add_terms(v[n * k_count + k], w + j0, j1 - j0, &gates_[n * G + j0], &mag_[n * G + j0]);
          const double da = dv[n * k_count + k].arith, ds = dv[n * k_count + k].stored;
          if (da == 0.0 && ds == 0.0) continue;
          double* __restrict ca = &car_arith_[n * G];
          double* __restrict cs = &car_stored_[n * G];
          for (int64_t j = j0; j < j1; ++j) {
            ca[j] += (w[j] * da) * (w[j] * da);
            cs[j] += (w[j] * ds) * (w[j] * ds);
          }
        }
      }
    }
  }

  // A dot product's value and bound, Σ terms and Σ|terms| + sqrt(Σ carried²), for every
  // sample n and k < k_count: value[n][k] = Σ_r w[r][k]·da[n][r] over the 4H rows of w
  // (4H×k_count) in the order of r, the carried error of each term w·dda (the weight is
  // exact). r outer so that the k run side by side (vectorised), the samples inner, a
  // block of k at a time, so that the weights are read once per step.
  void transposed_products(const double* w, int64_t k_count, const double* da, const double* dda,
                           double* value, double* bound) {
    const int64_t G = 4 * s_.hc, N = s_.mb;
    constexpr int64_t kColumns = 256;
    std::fill(value, value + N * k_count, 0.0);
    std::fill(mag_k_.begin(), mag_k_.begin() + N * k_count, 0.0);
    std::fill(car_k_.begin(), car_k_.begin() + N * k_count, 0.0);
    for (int64_t k0 = 0; k0 < k_count; k0 += kColumns) {
      const int64_t k1 = std::min(k0 + kColumns, k_count);
      for (int64_t r = 0; r < G; ++r) {
        const double* row = &w[r * k_count];
        for (int64_t n = 0; n < N; ++n) {
          const double d = da[n * G + r], dd = dda[n * G + r];
          add_terms(d, row + k0, k1 - k0, &value[n * k_count + k0], &mag_k_[n * k_count + k0]);
          double* __restrict car = &car_k_[n * k_count];
          for (int64_t k = k0; k < k1; ++k)
            car[k] += (row[k] * dd) * (row[k] * dd);
        }
      }
    }
    for (int64_t k = 0; k < N * k_count; ++k)
      bound[k] = mag_k_[k] + std::sqrt(car_k_[k]);
  }

  // One row of a parameter gradient += d·v over the n values v (bounds dv, none when null):
  // its value, magnitude and sum of squared carried errors (v·dd)² + (d·dv)².
  static void add_outer(double d, double dd, const double* __restrict v, const double* __restrict dv,
                        int64_t n, double* __restrict value, double* __restrict magnitude,
                        double* __restrict sq) {
    add_terms(d, v, n, value, magnitude);
    if (dv)
      for (int64_t k = 0; k < n; ++k)
        sq[k] += (v[k] * dd) * (v[k] * dd) + (d * dv[k]) * (d * dv[k]);
    else
      for (int64_t k = 0; k < n; ++k)
        sq[k] += (v[k] * dd) * (v[k] * dd);
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
      for (int64_t t = T - 1; t >= 0; --t) {
        double* da_all = &daq_[t * N * G];  // this step's da of every sample, and its bound
        double* dda_all = &ddaq_[t * N * G];
        for (int64_t n = 0; n < N; ++n) {
          const int64_t q = (l * T + t) * N + n, prev = q - N;  // this step's record, the one before
          double* da = &da_all[n * G];
          double* dda = &dda_all[n * G];
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
              da[gate * H + j] = v;
              dda[gate * H + j] = std::fabs(slopes[gate]) * dgrads[gate] +
                                  std::fabs(grads[gate]) * dslopes[gate] + std::fabs(v);
            }
          }
          // Kept for the parameter gradients, summed after the layer's steps.
        }
        // The gradients of the layer's input at t and of h_{t-1} (dh_next), every sample's.
        transposed_products(wx, width, da_all, dda_all, &down_[t * N * width], &ddown_[t * N * width]);
        transposed_products(wh, H, da_all, dda_all, dhn_.data(), ddhn_.data());
      }
      // dW_x[l] += da ⊗ x_t, dW_h[l] += da ⊗ h_{t-1}, db[l] += da over the steps (the last
      // first) and samples: each sum in that order, a few rows at a time so that the rows'
      // sums stay in cache while the steps pass.
      constexpr int64_t kRows = 8;
      for (int64_t r0 = 0; r0 < G; r0 += kRows)
        for (int64_t t = T - 1; t >= 0; --t)
          for (int64_t n = 0; n < N; ++n) {
            const int64_t q = (l * T + t) * N + n, prev = q - N, below = q - T * N;
            const double* d = &daq_[(t * N + n) * G];
            const double* dd = &ddaq_[(t * N + n) * G];
            const double* in = l == 0 ? &x_[(t * N + n) * s_.ic] : &hid_[below * H];
            const double* din = l == 0 ? nullptr : &dhid_[below * H];
            const double* hp = t > 0 ? &hid_[prev * H] : &h_[(l * N + n) * H];
            const double* dhp = t > 0 ? &dhid_[prev * H] : nullptr;
            for (int64_t r = r0; r < std::min(r0 + kRows, G); ++r) {
              db.value[l * G + r] += d[r];
              db.magnitude[l * G + r] += std::fabs(d[r]);
              b_sq_[l * G + r] += dd[r] * dd[r];
              const int64_t at = wx_at + r * width, at_h = (l * G + r) * H;
              add_outer(d[r], dd[r], in, din, width, &dwx.value[at], &dwx.magnitude[at], &wx_sq_[at]);
              add_outer(d[r], dd[r], hp, dhp, H, &dwh.value[at_h], &dwh.magnitude[at_h], &wh_sq_[at_h]);
            }
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
  Doubles wxt_, wht_;                           // wx_ and wh_ transposed per layer (add_products)
  Doubles mag_, car_arith_, car_stored_;        // the gates' magnitudes and carried sums of squares
  std::vector<Bound> dh_, dc_, dseq_, dgates_;  // the error bounds of h_, c_, seq_, gates_
  // Kept by forward() for the backward, per layer, step and sample: the gates' values after
  // their functions, c_t and h_t, each with its arithmetic bound (the d-prefixed twin).
  Doubles act_, dact_, cell_, dcell_, hid_, dhid_;
  // The backward's: dz; the gradient arriving at the layer's h sequence and the one it
  // sends down; dh_next and dc_next per sample; the sums of squared carried errors of the
  // parameter gradients. Each value array with its bound.
  Doubles dz_, up_, dup_, down_, ddown_, dhn_, ddhn_, dcn_, ddcn_;
  Doubles wx_sq_, wh_sq_, b_sq_;
  Doubles daq_, ddaq_;     // da and its bound for every step and sample of the layer (T×N×4H)
  Doubles mag_k_, car_k_;  // transposed_products()'s sums per k
};

}  // namespace

std::unique_ptr<Kernel> make_lstm() {
  return std::make_unique<RefLstm>();
}

}  // namespace lb::ref
